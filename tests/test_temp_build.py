"""Builds a small spec set in a temporary directory (one build, shared):

- the harness must fail on a wrong wrapper: a test-only spec whose fallback
  swaps two arguments is reported, while a correct op in the same build passes;
- ops of the full set the default build lacks behave as torch's and pass the
  harness: `_native_batch_norm_legit` (two overloads under one name, the
  first op's outputs named out, save_mean, save_invstd) and `split_copy`
  (its schema returns nothing);
- adding one op recompiles only the shard it lands in (plus the small
  aggregate dispatch/bindings TUs), read from Ninja's log.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen.model import manifest

pytestmark = pytest.mark.own_build(
    "a build of its own: a small spec set, in a temporary directory"
)

SPEC = """
ops:
  - sub.out
  - abs.out
  - signature: "swapped_sub(Tensor input, Tensor other, *, Tensor(a!) out) -> Tensor(a!)"
    uses: [sub]
    reference: "torch.sub(input, other)"
    fallback: |
      at::sub_out(out, other, input);  // deliberately swapped
  - aten: _native_batch_norm_legit.out
    hints: {shapes: {input: [2, 3, 8, 8], weight: [3], bias: [3], running_mean: [3], running_var: [3]}, training: [true]}
  - aten: _native_batch_norm_legit.no_stats_out
    hints: {shapes: {input: [2, 3, 8, 8], weight: [3], bias: [3]}, training: [true]}
  - split_copy.Tensor_out
"""

ROOT = Path(__file__).resolve().parent.parent


def _build(specs: Path, build: Path) -> None:
    """`infiniops-codegen build` in a fresh interpreter (the session may
    already hold the default module)."""
    proc = subprocess.run(
        [sys.executable, "-m", "infiniops_codegen.cli", "build", "--specs", str(specs)]
        + ["--build-dir", str(build), "--no-smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.fixture(scope="module")
def broken_build(tmp_path_factory):
    base = tmp_path_factory.mktemp("broken")
    specs = base / "specs"
    specs.mkdir()
    (specs / "ops.yaml").write_text(SPEC)
    # One op per shard on average: several shards, so stability is visible.
    (specs / "settings.yaml").write_text("settings:\n  shard_size: 1\n")
    build = base / "build"
    _build(specs, build)
    return build


def _harness(build: Path, op_name: str) -> dict:
    """Run the harness on one op in a subprocess, with what
    tests/skips.yaml says of it; returns its findings."""
    code = f"""
import json, sys, torch
from pathlib import Path
from infiniops_codegen.runtime import load
from infiniops_codegen import manifest
from infiniops_codegen.harness import run, skips
m = load({str(build)!r})
op = manifest.of_build({str(build)!r}).op({op_name!r})
listed = skips.harness_skips(Path("tests/skips.yaml"))
plan = run.find_plan(op, torch.float32)
outcome = run.check(
    m, op, "float32", plan, skips.skipped_variants(listed, op, "float32"),
    skips.out_reference_variants(listed, op, "float32", run.VARIANTS),
)
print(json.dumps({{"checked": len(outcome.checked), "failures": outcome.failures}}))
"""
    return json.loads(_python(code))


def _python(code: str) -> str:
    """The last line `python -c code` prints (the build's module is loaded
    in a fresh interpreter: the session may hold the default one)."""
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def test_swapped_arguments_fail_the_harness(broken_build):
    found = _harness(broken_build, "swapped_sub")
    assert found["failures"], "the harness accepted a wrapper with swapped arguments"
    assert any("Mismatched elements" in f for f in found["failures"])


def test_correct_op_in_the_same_build_passes(broken_build):
    found = _harness(broken_build, "sub")
    assert found["failures"] == []
    assert found["checked"] > 0


@pytest.mark.parametrize(
    "op_name", ["_native_batch_norm_legit", "_native_batch_norm_legit_no_stats"]
)
def test_ops_of_the_full_set_pass_the_harness(broken_build, op_name):
    found = _harness(broken_build, op_name)
    assert found["failures"] == []
    assert found["checked"] > 0


def test_an_op_whose_schema_returns_nothing_returns_none(broken_build):
    """split_copy.Tensor_out returns nothing (`-> ()`): ours returns None
    as torch.ops.aten's out= overload does, and the harness holds it to
    that (it checks what each call returns)."""
    code = """
import torch
from infiniops_codegen.runtime import load
m = load(BUILD)
x = torch.randn(4, 6)
ours, theirs = [torch.empty(2, 6), torch.empty(2, 6)], [torch.empty(2, 6), torch.empty(2, 6)]
got = m.split_copy(x, 2, out=ours)
want = torch.ops.aten.split_copy.Tensor_out(x, 2, out=theirs)
assert got is None and want is None, (got, want)
assert all(torch.equal(a, b) for a, b in zip(ours, theirs))
print("ok")
""".replace("BUILD", repr(str(broken_build)))
    assert _python(code) == "ok"
    found = _harness(broken_build, "split_copy")
    assert found["failures"] == [] and found["checked"] > 0


def test_outputs_named_out_take_their_own_keywords(broken_build):
    """ops._native_batch_norm_legit has torch's two signatures (out= a
    TensorList[3]); the op serving the first names its outputs out,
    save_mean, save_invstd. Its own call (out= one tensor, the others by
    name), which its docstring and stub declare, works as torch's out=
    tuple does; what is neither raises torch's TypeError."""
    code = """
import torch
from infiniops_codegen.runtime import load
m = load(BUILD)
x, w, b = torch.randn(2, 3, 8, 8), torch.randn(3), torch.randn(3)
args = lambda: (x, w, b, torch.zeros(3), torch.ones(3), True, 0.1, 1e-5)
want = torch.ops.aten._native_batch_norm_legit(*args())
outs = [torch.empty(0) for _ in range(3)]
got = m._native_batch_norm_legit(*args(), out=outs[0], save_mean=outs[1], save_invstd=outs[2])
assert all(g is o for g, o in zip(got, outs)) and len(got) == 3
assert all(torch.allclose(o, w_) for o, w_ in zip(outs, want))
tup = tuple(torch.empty(0) for _ in range(3))
got = m._native_batch_norm_legit(*args(), out=tup)
assert all(g is o for g, o in zip(got, tup))
assert all(torch.allclose(o, w_) for o, w_ in zip(tup, want))
no_stats = [torch.empty(0) for _ in range(3)]
m._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5, out=no_stats[0], save_mean=no_stats[1], save_invstd=no_stats[2])
want = torch.ops.aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5)
assert all(torch.allclose(o, w_) for o, w_ in zip(no_stats, want))
for bad in (1.5, "out"):
    for f in (m._native_batch_norm_legit, torch._native_batch_norm_legit):
        try:
            f(*args(), out=bad)
        except TypeError:
            continue
        raise AssertionError(f"{f} took out={bad!r}")
print("ok")
""".replace("BUILD", repr(str(broken_build)))
    assert _python(code) == "ok"


def test_selection_build_leaves_committed_generated_alone(broken_build):
    assert "swapped_sub" not in manifest.generated().names
    assert (broken_build / "generated" / "manifest.json").is_file()


def _ninja_entries(build: Path) -> list[str]:
    lines = (build / ".ninja_log").read_text().splitlines()
    return [l.split("\t")[3] for l in lines if not l.startswith("#")]


def test_adding_an_op_recompiles_only_its_shard(broken_build):
    shards_before = manifest.of_build(broken_build).shard_count
    seen = len(_ninja_entries(broken_build))
    specs = broken_build.parent / "specs"
    with (specs / "ops.yaml").open("a") as f:
        f.write("  - neg.out\n")
    _build(specs, broken_build)
    built = manifest.of_build(broken_build)
    assert built.shard_count == shards_before
    neg_shard = built.op("neg").shard
    rebuilt = [e for e in _ninja_entries(broken_build)[seen:] if e.endswith(".o")]
    shards = [e for e in rebuilt if "/shard_" in e]
    assert len(shards) == 1, rebuilt
    assert shards[0].endswith(f"shard_{neg_shard:03d}.cpp.o"), rebuilt
    others = [e for e in rebuilt if e not in shards]
    # ... and the aggregates: dispatch, bindings, the dispatcher registration
    aggregates = (
        "/ops.cpp.o",
        "/bindings.cpp.o",
        "infiniops_registration.dir/Unity/unity_0_cxx.cxx.o",
    )
    assert all(e.endswith(aggregates) for e in others), others
