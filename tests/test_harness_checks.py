"""The correctness harness checked on its own: that it finds what it must find.

No build is needed except for the command-line test at the end: fake modules
stand in for the built one (a correct one that calls PyTorch's out= overload,
and broken ones), on ops of the default manifest and of a few ATen overloads
generated from a temporary spec directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
import yaml

from infiniops_codegen.model import manifest
from infiniops_codegen.harness import report, run, samples, skips
from infiniops_codegen.render.pipeline import generate
from infiniops_codegen.schema.db import load_schema_db

ROOT = Path(__file__).resolve().parent.parent
ALL_HINTS = yaml.safe_load((ROOT / "op_specs/all/hints.yaml").read_text())["hints"]
SKIPS = skips.harness_skips(ROOT / "tests" / "skips.yaml")
ADAM_STATES = ("grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # resize / degrees-of-freedom warnings
        yield


def _default_ops() -> dict[str, manifest.Op]:
    return manifest.generated().by_name()


def _aten_ops(tmp_path: Path, *overloads: str) -> dict[str, manifest.Op]:
    """Manifest entries of ATen overloads the default specs do not have, with
    their hints from op_specs/all/hints.yaml, from a temporary spec dir."""
    specs = tmp_path / "specs"
    specs.mkdir()
    entries = [
        {"aten": n, "hints": ALL_HINTS[n]} if n in ALL_HINTS else n for n in overloads
    ]
    (specs / "ops.yaml").write_text(yaml.safe_dump({"ops": entries}))
    data = json.loads(generate(specs).files["manifest.json"])
    return manifest.from_data(data).by_name()


def returns_as_torch(op, outs):
    """What the module returns: None where the schema returns nothing
    (`-> ()`), else the out (a tuple of several)."""
    if op.schema.replace(" ", "").endswith("->()"):
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


class FakeModule:
    """Stands in for the built module: every op calls impl(op, args, outs)
    with the schema names of its arguments, and returns what
    returns(op, outs) gives."""

    def __init__(self, ops, impl, returns=returns_as_torch):
        self._ops = {op.name: op for op in ops}
        self._impl = impl
        self._returns = returns
        self._switches = {"reuse": True, "direct": True, "lane": True}

    def handle_reuse(self):
        return self._switches["reuse"]

    def set_handle_reuse(self, value):
        self._switches["reuse"] = value

    def direct_mode(self):
        return self._switches["direct"]

    def set_direct_mode(self, value):
        self._switches["direct"] = value

    def lane(self):
        return self._switches["lane"]

    def set_lane(self, value):
        self._switches["lane"] = value

    def _debug_wrapper_pool(self, clear):
        # No from_blob wrappers here: the harness counts nothing.
        return {"rebound": 0, "fresh": 0, "kept": 0, "dropped": 0, "pooled": 0}

    def __getattr__(self, name):
        op = self._ops[name]

        def call(*positional, **kwargs):
            by_py = {a.python_name: a for a in op.visible}
            outs = [kwargs.pop(a.python_name) for a in op.out_args]
            args = dict(
                zip((a.name for a in op.inputs if not a.keyword_only), positional)
            )
            args.update({by_py[k].name: v for k, v in kwargs.items()})
            self._impl(op, args, outs)
            return self._returns(op, outs)

        return call


def correct(op, args, outs):
    run.reference_out(op, args, outs)


def writes_nothing(op, args, outs):
    pass


def forgets_states(op, args, outs):
    """Writes the outputs right but leaves the inputs the op mutates alone."""
    run.reference_out(op, run.fresh(op, args), outs)


def _check(impl, op, dtype, returns=returns_as_torch):
    """run.check with a fake module, with what tests/skips.yaml says."""
    plan = run.find_plan(op, run.DTYPES[dtype])
    assert plan is not None, f"{op.name} [{dtype}]: no sample"
    skipped = skips.skipped_variants(SKIPS, op, dtype)
    out_only = skips.out_reference_variants(SKIPS, op, dtype, run.VARIANTS)
    module = FakeModule([op], impl, returns)
    return run.check(module, op, dtype, plan, skipped, out_only)


def _accounted(op, plan, outcome) -> None:
    """Every sample x layout variant is checked (on every path), failed or
    counted as skipped with a reason: nothing is dropped."""
    seen = {}
    for label in outcome.checked + [f.split(":")[0] for f in outcome.failures]:
        seen.setdefault(label.split("/")[0], set()).add(label.split("/")[-1])
    for label, reason in outcome.skipped:
        assert reason, label
        assert label not in seen, f"{label} both checked and skipped"
        seen[label] = set(run.PATHS)
    wanted = {
        f"sample {i} {v}"
        for i in range(len(samples.hinted_plans(op, plan)))
        for v in run.VARIANTS
    }
    assert set(seen) == wanted
    assert all(paths == set(run.PATHS) for paths in seen.values()), seen


# -- mutated inputs ---------------------------------------------------------


def test_fused_adam_mutated_inputs_are_detected(tmp_path):
    ops = _aten_ops(tmp_path, "_fused_adam.out", "add.out")
    adam = ops["_fused_adam"]
    # The manifest's type text carries no alias annotation ("Tensor[]"): its
    # `mutable` comes from torchgen's alias information (is_write).
    assert all("!" not in a.aten_type for a in adam.arguments)
    assert adam.mutable_inputs == ADAM_STATES
    schema = load_schema_db().out_overloads["_fused_adam.out"]
    assert ADAM_STATES == tuple(
        a.name for a in schema.args if a.is_write and not a.is_out
    )
    assert ops["add"].mutable_inputs == ()
    assert _default_ops()["rms_norm"].mutable_inputs == ()  # a composite
    # Every call gets its own copies of exactly those inputs.
    plan = run.find_plan(adam, torch.float32)
    args = run.materialize(plan, torch.float32, "contiguous", seed=1)
    copied = run.fresh(adam, args)
    for name, value in args.items():
        if name in ADAM_STATES:
            assert all(
                c is not v and torch.equal(c, v) for c, v in zip(copied[name], value)
            )
        else:
            assert copied[name] is value


def test_a_wrapper_that_forgets_a_mutated_input_fails(tmp_path):
    op = _aten_ops(tmp_path, "_native_batch_norm_legit.out")["_native_batch_norm_legit"]
    assert op.mutable_inputs == ("running_mean", "running_var")
    assert not _check(correct, op, "float32").failures
    outcome = _check(forgets_states, op, "float32")
    assert any("mutated input 'running_mean'" in f for f in outcome.failures)


def test_state_conflicts_with_the_functional_form_fail_unless_listed(tmp_path):
    """PyTorch's _fused_adam.out leaves exp_avgs & co. as they were (its
    functional form returns new states). Unlisted, that is a failure; with
    its `reference: out` entry in tests/skips.yaml ours is held to the out=
    overload, and every narrowed variant is counted."""
    op = _aten_ops(tmp_path, "_fused_adam.out")["_fused_adam"]
    plan = run.find_plan(op, torch.float32)
    unlisted = run.check(FakeModule([op], correct), op, "float32", plan)
    assert any(
        "mutated input 'exp_avgs' differs from the functional form" in f
        for f in unlisted.failures
    )
    listed = _check(correct, op, "float32")
    assert listed.checked and not listed.failures
    assert listed.notes and {reason for _, reason in listed.notes} == {run.OUT_ONLY}
    # A wrapper that writes nothing still fails on the outputs.
    assert _check(writes_nothing, op, "float32").failures


# -- what a call returns -------------------------------------------------------


@pytest.mark.parametrize(
    "overload, name",
    [
        ("split_copy.Tensor_out", "split_copy"),  # a Tensor[] out=
        ("_foreach_add.List_out", "_foreach_add_List"),
        ("_fused_sgd.out", "_fused_sgd"),  # writes its inputs too
    ],
)
def test_an_op_whose_schema_returns_nothing_returns_none(tmp_path, overload, name):
    """Their schemas return nothing (`-> ()`): PyTorch's out= call returns
    None, and the module's call must too; returning the outs fails."""
    op = _aten_ops(tmp_path, overload)[name]
    plan = run.find_plan(op, torch.float32)
    args = run.materialize(plan, torch.float32, "contiguous", seed=1)
    outs = run.sentinel_outs(run.expected(op, run.fresh(op, args)), False)
    assert run.reference_returns(op, run.fresh(op, args), outs)[1] is None
    good = _check(correct, op, "float32")
    assert good.checked and not good.failures, good.failures[:2]
    bad = _check(correct, op, "float32", returns=lambda op, outs: outs[0])
    wrong = "the call returned ('outs[0][0]',"
    assert bad.failures and all(
        wrong in f and "where PyTorch's out= call returns None" in f
        for f in bad.failures
    ), bad.failures[:2]


@pytest.mark.parametrize(
    "name, returns, wrong",
    [
        ("abs", lambda op, outs: None, "returned None where PyTorch's out= call "),
        ("max", lambda op, outs: (outs[1], outs[0]), "('outs[1]', 'outs[0]')"),
        ("max", lambda op, outs: tuple(o.clone() for o in outs), "none of its outs"),
    ],
)
def test_a_call_that_does_not_return_its_outs_fails(name, returns, wrong):
    """Where PyTorch's out= call returns its outs (the outs themselves, in
    order), the module's call must return them too."""
    op = _default_ops()[name]
    bad = _check(correct, op, "float32", returns)
    assert bad.failures and all(wrong in f for f in bad.failures), bad.failures[:2]


# -- the lane path's thread count ----------------------------------------------


def test_the_lane_path_is_compared_at_its_thread_count(monkeypatch):
    """The lane path runs at one intra-op thread: its reference is made at
    one thread too, the other paths' at torch's thread count."""
    op = _default_ops()["abs"]
    at = {"reference": set(), "ours": set()}
    reference = run.reference_returns

    def spy(*args):
        at["reference"].add(torch.get_num_threads())
        return reference(*args)

    def impl(op, args, outs):
        at["ours"].add(torch.get_num_threads())
        correct(op, args, outs)

    monkeypatch.setattr(run, "reference_returns", spy)
    with run.intra_op_threads(2):
        outcome = _check(impl, op, "float32")
    assert outcome.checked and not outcome.failures
    assert at["ours"] == at["reference"] == {1, 2}


def test_inverse_ffts_pass_on_the_lane_path(tmp_path):
    """fft_ifft (norm="backward", a 1/n scale) computed by PyTorch itself on
    every path: MKL's result at one thread differs from its result at two by
    an ulp (torch.fft.ifft alone, set_num_threads(1) vs (2), on this
    project's machines), and complex outputs are compared exactly; compared
    with a reference at the path's own thread count, it passes."""
    op = _aten_ops(tmp_path, "fft_ifft.out")["fft_ifft"]
    with run.intra_op_threads(2):
        outcome = _check(correct, op, "float32")
    assert outcome.checked and not outcome.failures, outcome.failures[:2]


# -- sentinels ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name, dtype",
    [
        ("abs", "float32"),  # float output
        ("abs", "int64"),  # integer output
        ("isnan", "float32"),  # bool output
        ("argmax", "float32"),  # int64 output of a float op
        ("max", "float32"),  # values and indices
        ("where", "bool"),
        ("sort_values", "float16"),
    ],
)
def test_a_wrapper_that_writes_nothing_fails(name, dtype):
    op = _default_ops()[name]
    good = _check(correct, op, dtype)
    assert good.checked and not good.failures, good.failures[:2]
    bad = _check(writes_nothing, op, dtype)
    assert bad.failures
    # What still passes writes no element at all (zero-size variants).
    assert all(" zero_size/" in label for label in bad.checked), bad.checked


def test_sentinel_differs_from_the_reference_everywhere():
    nan = float("nan")
    wanted = torch.tensor([1.0, nan, float(torch.finfo(torch.float32).max)])
    out = run.fill_sentinel(torch.empty(3), wanted)
    assert torch.isnan(out[0]) and not torch.isnan(out[1]) and torch.isnan(out[2])
    for dtype in (torch.int32, torch.int64, torch.int16, torch.uint8, torch.uint64):
        info = torch.iinfo(dtype)
        wanted = torch.tensor([0, 1, info.min, info.max], dtype=dtype)
        out = run.fill_sentinel(torch.empty_like(wanted), wanted)
        assert not torch.eq(out, wanted).any(), (dtype, out)
        assert set(out.tolist()) <= {info.min, info.max}
    wanted = torch.tensor([True, False])
    assert torch.equal(
        run.fill_sentinel(torch.empty(2, dtype=torch.bool), wanted), ~wanted
    )
    transposed = run.sentinel_outs([torch.ones(3, 4)], non_contiguous=True)[0]
    assert not transposed.is_contiguous() and torch.isnan(transposed).all()


# -- nothing dropped -----------------------------------------------------------


@pytest.mark.parametrize("name", ["abs", "mm", "add", "cat", "sum"])
def test_every_variant_is_checked_or_counted(name):
    op = _default_ops()[name]
    plan = run.find_plan(op, torch.float32)
    outcome = run.check(FakeModule([op], correct), op, "float32", plan)
    _accounted(op, plan, outcome)


def test_variants_the_reference_rejects_are_counted():
    ops = _default_ops()
    mm = ops["mm"]
    plan = run.find_plan(mm, torch.float32)
    outcome = run.check(FakeModule([mm], correct), mm, "float32", plan)
    assert ("sample 0 zero_dim", run.REFERENCE_REJECTS) in outcome.skipped
    abs_ = ops["abs"]
    plan = run.find_plan(abs_, torch.float32)
    outcome = run.check(FakeModule([abs_], correct), abs_, "float32", plan, ("sliced",))
    assert (
        "sample 0 broadcast",
        f"{run.NOT_APPLICABLE}: not a binary op",
    ) in outcome.skipped
    assert ("sample 0 sliced", run.SKIPPED_BY_FILE) in outcome.skipped


def test_where_is_tested_in_every_dtype():
    op = _default_ops()["where"]
    for dtype in run.DTYPES.values():
        plan = run.find_plan(op, dtype)
        assert plan is not None, dtype
        args = run.materialize(plan, dtype, "contiguous", seed=1)
        assert args["condition"].dtype == torch.bool
        assert args["self"].dtype == dtype


def test_a_case_that_does_not_use_its_dtype_is_skipped(tmp_path):
    """zeros.out writes float32 (the functional form's default) whatever the
    case's dtype: only its float32 case is one."""
    op = _aten_ops(tmp_path, "zeros.out")["zeros"]
    assert report.plan_or_skip(op, "float32", SKIPS)[0] is not None
    plan, case = report.plan_or_skip(op, "int64", SKIPS)
    assert plan is None and case["reason"] == report.DTYPE_UNUSED
    abs_ = _default_ops()["abs"]
    assert all(
        run.exercises_dtype(abs_, run.find_plan(abs_, dt), dt)
        for dt in run.DTYPES.values()
        if run.find_plan(abs_, dt)
    )


def test_counts_keep_skips_apart_from_passes():
    passed = {"dtype": "float32", "status": "passed", "checked": 3}
    no_sample = report.no_sample("bool")
    by_file = {
        "dtype": "int32",
        "status": "skipped",
        "reason": report.FILE_PREFIX + "x",
    }
    failed = {"dtype": "int64", "status": "failed", "failures": ["f"]}
    assert report.op_status([passed, no_sample]) == "passed"
    assert report.op_status([by_file, no_sample]) == "skipped"
    assert report.op_status([no_sample, no_sample]) == "nosample"
    assert report.op_status([passed, failed]) == "failed"
    counts = report.summarize(
        {
            "a": {"status": "passed", "cases": [passed, no_sample]},
            "b": {"status": "skipped", "cases": [by_file]},
            "c": {"status": "excluded", "reason": "r", "cases": []},
        }
    )
    assert counts["ops_by_status"] == {"excluded": 1, "passed": 1, "skipped": 1}
    assert counts["cases_by_status"] == {"passed": 1, "skipped": 2}
    assert counts["cases_skipped_by_reason"] == {
        report.NO_SAMPLE: 1,
        by_file["reason"]: 1,
    }
    text = "\n".join(report.summary_lines(counts))
    assert "1 passed, 1 skipped, 1 excluded" in text and report.NO_SAMPLE[:60] in text


# -- the command ---------------------------------------------------------------


def _harness(build: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "infiniops_codegen.harness", "--build-dir", str(build)]
        + list(args),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
    )


def test_the_command_fails_on_an_op_without_a_sample(ops, tmp_path):
    """`abs` passes (exit 0); `add` hinted with shapes that do not broadcast
    has no sample in any dtype and no skip entry (exit 1)."""
    build = tmp_path / "build"
    build.mkdir()
    module = Path(ops.__file__)
    (build / module.name).symlink_to(module)
    manifest = json.loads((module.parent / "manifest.json").read_text())
    manifest["ops"] = [op for op in manifest["ops"] if op["name"] in ("abs", "add")]
    for op in manifest["ops"]:
        if op["name"] == "add":
            op["hints"] = {"shapes": {"input": [3], "other": [5]}}
    (build / "manifest.json").write_text(json.dumps(manifest))
    good = _harness(build, "--ops", "abs")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "1 ops: 1 passed" in good.stdout
    bad = _harness(build)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "2 ops: 1 passed, 1 nosample" in bad.stdout
    assert f"nosample: add: {report.NO_SAMPLE_OP}" in bad.stdout  # not empty


def test_the_command_reports_a_broken_reference_where_it_is(ops, tmp_path):
    """A composite whose reference reads an unknown name: 'error' with the
    NameError and the spec's file:line, not 'nosample' with no reason."""
    build = tmp_path / "build"
    build.mkdir()
    module = Path(ops.__file__)
    (build / module.name).symlink_to(module)
    manifest = json.loads((module.parent / "manifest.json").read_text())
    manifest["ops"] = [op for op in manifest["ops"] if op["name"] == "rms_norm"]
    (op,) = manifest["ops"]
    op["reference"] = op["reference"].replace("(input,", "(inpt,", 1)
    (build / "manifest.json").write_text(json.dumps(manifest))
    bad = _harness(build)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "1 ops: 1 error" in bad.stdout, bad.stdout
    assert (
        f"error: rms_norm: BrokenReference: {op['source']}:{op['reference_line']}: "
        "the reference of rms_norm raises NameError: name 'inpt' is not defined"
    ) in bad.stdout, bad.stdout


# -- a composite's reference that cannot run -------------------------------------


@pytest.mark.parametrize(
    "reference, raised",
    [
        # the typo: a name that is no argument
        (
            "torch.nn.functional.rms_norm(inpt, (input.shape[-1],), weight, eps)",
            "NameError: name 'inpt' is not defined",
        ),
        # a function torch does not have
        (
            "torch.nn.functional.rms_nrom(input, (input.shape[-1],), weight, eps)",
            "AttributeError: module 'torch.nn.functional' has no attribute 'rms_nrom'",
        ),
    ],
)
def test_a_broken_reference_is_an_error_at_its_spec_line(reference, raised):
    """Not 'no sample' (PyTorch rejecting every candidate): the spec's error,
    with the file and line of the reference. (The generator refuses a name
    that is no argument; a manifest may still carry one, and torch's names
    are only known when the expression runs.)"""
    import dataclasses

    op = dataclasses.replace(_default_ops()["rms_norm"], reference=reference)
    spec = (ROOT / op.source).read_text().splitlines()
    assert "reference:" in spec[op.reference_line - 1]  # the manifest's line
    with pytest.raises(run.BrokenReference) as caught:
        report.plan_or_skip(op, "float32", SKIPS)
    assert str(caught.value) == (
        f"{op.source}:{op.reference_line}: the reference of rms_norm raises "
        f"{raised} (reference: {reference})"
    )


def test_a_reference_that_rejects_a_sample_is_not_broken():
    """PyTorch's own errors on a candidate still only move to the next one."""
    import dataclasses

    op = _default_ops()["rms_norm"]
    bad = dataclasses.replace(op, reference="torch.ones(2, 3) @ torch.ones(2, 3)")
    assert run.find_plan(bad, torch.float32) is None  # RuntimeError: nosample
    assert run.find_plan(op, torch.float32) is not None
