"""torch.library.opcheck on a build's dispatcher ops (docs/compile.md), over
the correctness harness's samples: each op's functional overload with its
floating inputs requiring grad (where the op has any), and its out= overload
on the outputs torch's own call makes.

    python -m infiniops_codegen.harness.opcheck --build-dir build \
        [--ops a,b] [--skips tests/skips.yaml]

Prints one line per op that fails or does not apply, then the counts. The
ops are checked in a child process; a check that crashes it is counted (not
applicable where torch's own operator crashed, else failed) and a new child
goes on after that op (--in-process: no child).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from ..model.manifest import Op, of_build
from .run import expected, find_plan
from .samples import TensorSpec  # noqa: F401 - the plans' placeholders
from .values import materialize, sentinel_outs

TESTS = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_dynamic",
)


@dataclass(frozen=True)
class Result:
    op: str
    overload: str
    status: str  # "passed", "failed", "not applicable"
    reason: str = ""


def _overload(namespace: str, qualified: str):
    base, _, name = qualified.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), base), name or "default")


def _sample(op: Op):
    """(kwargs of the functional overload, outputs for the out= one) or a
    reason there is none."""
    for dtype in (torch.float64, torch.float32, torch.int64, torch.bool):
        plan = find_plan(op, dtype)
        if plan is not None:
            args = materialize(plan, dtype, "contiguous", seed=0)
            results = expected(op, dict(args))
            return args, sentinel_outs(results, False) if results else None
    return None, None


_DOMAINS = (
    lambda v: v.abs() + 0.5,  # log, sqrt, pow
    lambda v: torch.sigmoid(v) * 0.8 + 0.1,  # asin, acos, atanh, erfinv
    lambda v: v.abs() + 1.5,  # acosh
)


def _flat(result) -> list:
    """The tensors of a result (nested tuples and lists: Tensor[] returns)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _flat(r)]
    return []


def functional_of(namespace: str, op: Op):
    return _overload(namespace, op.dispatcher["functional"])


def _in_domain(functional, inputs: dict) -> dict:
    """The floating inputs moved into the op's domain: the first of the
    domains on which torch's result has no NaN (never equal to itself in
    opcheck's comparisons)."""
    for domain in _DOMAINS:
        moved = {
            k: domain(v) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in inputs.items()
        }
        try:
            result = functional(**moved)
        except Exception:  # noqa: BLE001 - the next domain, or the sample as it is
            continue
        tensors = _flat(result)
        if not any(t.is_floating_point() and t.isnan().any() for t in tensors):
            return moved
    return inputs


def _differentiates(op, kwargs: dict) -> bool:
    """Torch has a derivative for these inputs (its own twin raises
    otherwise: floor_divide, scatter's reduce, backward ops, ...)."""
    try:
        result = op(**kwargs)
        tensors = _flat(result)
        total = sum(
            r.sum() for r in tensors if r.is_floating_point() and r.requires_grad
        )
        if isinstance(total, torch.Tensor):
            total.backward()
        return True
    except RuntimeError:
        return False


def _with_grad(args: dict) -> dict:
    """The floating-point tensor inputs as leaves that require grad."""

    def one(v):
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return v.detach().clone().requires_grad_()
        return v

    return {k: one(v) for k, v in args.items()}


def check_op(namespace: str, op: Op) -> list[Result]:
    """Both overloads of one op; an error of the check itself (a sample
    torch's own functional form cannot evaluate, ...) is a failure."""
    try:
        return _check_op(namespace, op)
    except Exception as e:  # noqa: BLE001 - reported, one op at a time
        text = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        return [Result(op.name, "*", "failed", text)]


def _check_op(namespace: str, op: Op) -> list[Result]:
    if op.dispatcher.get("functional") is None:
        return [_out_only(namespace, op)]
    return _both(namespace, op)


def _out_only(namespace: str, op: Op) -> Result:
    """An op whose ATen twin has no functional overload with its arguments:
    its out= overload alone."""
    d = op.dispatcher
    args, outs = _sample(op)
    if args is None or outs is None:
        return Result(op.name, d["out"], "not applicable", "no sample torch accepts")
    kwargs = {a.name: args[a.name] for a in op.inputs}
    kwargs.update({a.name: o for a, o in zip(op.out_args, outs)})
    tests = tuple(t for t in TESTS if t != "test_autograd_registration")
    twin = _overload("aten", op.aten) if op.aten else None
    return _run(op.name, d["out"], _overload(namespace, d["out"]), kwargs, tests, twin)


def _both(namespace: str, op: Op) -> list[Result]:
    d = op.dispatcher
    args, outs = _sample(op)
    if args is None:
        return [Result(op.name, "*", "not applicable", "no sample torch accepts")]
    # Positive floating inputs: in the domain of log, sqrt, pow (NaN is
    # never equal to NaN in opcheck's comparisons).
    inputs = _in_domain(
        functional_of(namespace, op), {a.name: args[a.name] for a in op.inputs}
    )
    results = []
    functional = _overload(namespace, d["functional"])
    differentiable = _with_grad(inputs)
    grad = any(
        isinstance(v, torch.Tensor) and v.requires_grad for v in differentiable.values()
    ) and _differentiates(functional, differentiable)
    tests = (
        TESTS if grad else tuple(t for t in TESTS if t != "test_autograd_registration")
    )
    twin = d.get("aten_functional")
    results.append(
        _run(
            op.name,
            d["functional"],
            functional,
            differentiable if grad else inputs,
            tests,
            _overload("aten", twin) if twin else None,
        )
    )
    if outs is None:
        reason = "torch's call makes no outputs to compare"
        results.append(Result(op.name, d["out"], "not applicable", reason))
        return results
    out_kwargs = dict(inputs)
    out_kwargs.update({a.name: o for a, o in zip(op.out_args, outs)})
    out_op = _overload(namespace, d["out"])
    out_tests = tuple(t for t in TESTS if t != "test_autograd_registration")
    twin = _overload("aten", op.aten) if op.aten else None
    results.append(_run(op.name, d["out"], out_op, out_kwargs, out_tests, twin))
    return results


def _failures(op, kwargs: dict, tests) -> dict[str, str]:
    try:
        report = torch.library.opcheck(
            op, (), kwargs, test_utils=tests, raise_exception=False
        )
    except Exception as e:  # noqa: BLE001 - reported, one op at a time
        return {"opcheck": f"{type(e).__name__}: {e}"}
    return {t: str(r) for t, r in report.items() if r != "SUCCESS"}


# Called with "op" and the op's name before each op is checked, and with
# "twin" and ATen's overload before torch's own operator is checked the same
# way: what a crashed child was doing (main's isolation).
_on_stage = lambda stage, name: None  # noqa: E731


# overload ("add.out") -> {test: reason}: the skips file's opcheck entries.
_skips: dict[str, dict[str, str]] = {}
# The correctness harness's skips of whole ops (every dtype and layout): ops
# with no reference torch can compute, whose sample search can crash the
# process in torch's own kernel (_nnpack_spatial_convolution: SIGFPE).
_op_skips: list = []


def load_skips(path) -> None:
    import yaml
    from pathlib import Path

    from .skips import load_skips as harness_skips

    _op_skips[:] = [
        s for s in harness_skips(Path(path)) if not s.variants and s.reference is None
    ]
    _skips.clear()
    data = (yaml.safe_load(Path(path).read_text()) or {}).get("opcheck") or []
    for entry in data:
        for overload in entry["overloads"]:
            for test in entry["tests"]:
                _skips.setdefault(overload, {})[test] = entry["reason"]


def _run(name: str, overload: str, op, kwargs: dict, tests, twin) -> Result:
    skipped = _skips.get(overload, {})
    if skipped:
        tests = tuple(t for t in tests if t not in skipped)
    failed = _failures(op, kwargs, tests)
    if skipped and not failed:
        reason = "; ".join(f"{t}: {r}" for t, r in skipped.items())
        return Result(name, overload, "not applicable", reason)
    if not failed:
        return Result(name, overload, "passed")
    text = "; ".join(f"{t}: {r}".splitlines()[0][:300] for t, r in failed.items())
    # The same tests on ATen's twin with the same arguments: where torch's
    # own operator fails them too, the failure is torch's (its schema, its
    # fake kernel), not the registration's.
    if twin is not None:
        _on_stage("twin", str(twin))
    if (
        twin is not None
        and failed.keys() <= _failures(twin, _copies(kwargs), tests).keys()
    ):
        reason = f"torch's own {twin} fails these too: {text}"
        return Result(name, overload, "not applicable", reason)
    return Result(name, overload, "failed", text)


def _copies(kwargs: dict) -> dict:
    def one(v):
        if isinstance(v, torch.Tensor):
            return v.detach().clone().requires_grad_(v.requires_grad)
        return v

    return {k: one(v) for k, v in kwargs.items()}


def gradcheck_op(namespace: str, op: Op) -> Result:
    """torch.autograd.gradcheck of the functional overload on float64
    samples, every floating input differentiated; an error of the check
    itself is a failure."""
    try:
        return _gradcheck_op(namespace, op)
    except Exception as e:  # noqa: BLE001 - reported, one op at a time
        text = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        return Result(op.name, op.dispatcher.get("functional") or "*", "failed", text)


def _gradcheck_op(namespace: str, op: Op) -> Result:
    d = op.dispatcher
    overload = d["functional"]
    if overload is None:
        return Result(op.name, d["out"], "not applicable", "no functional overload")
    if "nondeterministic_seeded" in op.tags:
        return Result(op.name, overload, "not applicable", "random outputs")
    plan = find_plan(op, torch.float64)
    if plan is None:
        return Result(op.name, overload, "not applicable", "no float64 sample")
    functional = functional_of(namespace, op)
    args = materialize(plan, torch.float64, "contiguous", seed=0)
    inputs = _in_domain(functional, {a.name: args[a.name] for a in op.inputs})
    names = [
        k
        for k, v in inputs.items()
        if isinstance(v, torch.Tensor) and v.is_floating_point()
    ]
    if not names:
        return Result(op.name, overload, "not applicable", "no floating input")
    while True:
        differentiable = _with_grad({k: v for k, v in inputs.items() if k in names})
        differentiable.update({k: v for k, v in inputs.items() if k not in names})
        try:
            result = functional(**differentiable)
            break
        except RuntimeError as e:
            # "not differentiable with respect to argument 'target'": the
            # others still are.
            match = re.search(r"with respect to argument '(\w+)'", str(e))
            if match and match.group(1) in names and len(names) > 1:
                names.remove(match.group(1))
                continue
            reason = f"torch has no derivative here: {e}".splitlines()[0][:200]
            return Result(op.name, overload, "not applicable", reason)
    results = _flat(result)
    if not any(isinstance(r, torch.Tensor) and r.requires_grad for r in results):
        return Result(op.name, overload, "not applicable", "no differentiable output")

    def call(*tensors):
        kwargs = dict(inputs)
        kwargs.update(zip(names, tensors))
        out = functional(**kwargs)
        return tuple(o for o in _flat(out) if o.is_floating_point())

    leaves = tuple(differentiable[k] for k in names)
    error = _gradcheck(call, leaves)
    if error is None:
        return Result(op.name, overload, "passed")
    if "not implemented" in error or "is not differentiable" in error:
        reason = f"torch has no derivative here: {error}"[:200]
        return Result(op.name, overload, "not applicable", reason)
    # The same check of ATen's twin: where torch's own derivative fails it
    # on this sample (duplicate scatter indices, ...), the failure is torch's.
    twin = d.get("aten_functional")
    if twin is not None:
        aten = _overload("aten", twin)

        def aten_call(*tensors):
            kwargs = dict(inputs)
            kwargs.update(zip(names, tensors))
            out = aten(**kwargs)
            return tuple(o for o in _flat(out) if o.is_floating_point())

        _on_stage("twin", str(aten))
        if _gradcheck(aten_call, tuple(_copies(differentiable)[k] for k in names)):
            reason = f"torch's own {aten} fails it too: {error}"[:300]
            return Result(op.name, overload, "not applicable", reason)
    return Result(op.name, overload, "failed", error[:300])


def _gradcheck(call, leaves) -> str | None:
    """gradcheck's first error line; None when it passes."""
    try:
        torch.autograd.gradcheck(call, leaves, check_undefined_grad=False)
    except RuntimeError as e:
        return str(e).splitlines()[0]
    return None


def check(
    build_dir: str, names: list[str] | None = None, gradcheck: bool = False
) -> list[Result]:
    return list(iter_check(build_dir, names, gradcheck))


def iter_check(build_dir: str, names: list[str] | None = None, gradcheck: bool = False):
    """check()'s results, op by op, as they come."""
    from ..runtime import load

    module = load(build_dir)
    manifest = of_build(build_dir)
    getattr(torch.ops, module.__name__).__getattr__  # noqa: B018
    from ..runtime.torch_ops import library

    library(module.__name__).ensure()
    for op in manifest.ops:
        if names and op.name not in names:
            continue
        # dtype None: only skips of every dtype match.
        skip = next((s for s in _op_skips if s.matches(op, None)), None)
        if skip is not None:
            yield Result(op.name, "*", "not applicable", f"harness skip: {skip.reason}")
            continue
        _on_stage("op", op.name)
        if gradcheck:
            yield gradcheck_op(module.__name__, op)
        else:
            yield from check_op(module.__name__, op)


def _child(options, names: list[str] | None) -> int:
    """Checks the ops, writing each stage and result to options.child_log as
    a JSON line, flushed: what the parent reads when the process crashed."""
    global _on_stage
    log = open(options.child_log, "a")

    def write(record):
        log.write(json.dumps(record) + "\n")
        log.flush()

    _on_stage = lambda stage, name: write({stage: name})  # noqa: E731
    for r in iter_check(options.build_dir, names, options.gradcheck):
        write({"result": [r.op, r.overload, r.status, r.reason]})
    write({"done": True})
    return 0


def _isolated(argv: list[str], names: list[str]) -> list[Result]:
    """The ops checked in a child process, in order. A check that crashes the
    process (torch's own operator can: aten._amp_foreach_non_finite_check_and
    _unscale.out under test_aot_dispatch_dynamic is a segmentation fault with
    PyTorch alone) is counted, and a new child goes on after that op: not
    applicable where torch's own twin was being checked, else failed."""
    results: list[Result] = []
    remaining = list(names)
    while remaining:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "log.jsonl"
            command = [sys.executable, "-m", "infiniops_codegen.harness.opcheck", *argv]
            command += ["--ops", ",".join(remaining), "--child-log", str(log)]
            code = subprocess.run(command).returncode
            records = [json.loads(line) for line in log.read_text().splitlines()]
        started = [r["op"] for r in records if "op" in r]
        for r in records:
            if "result" in r:
                results.append(Result(*r["result"]))
        if records and "done" in records[-1]:
            break
        if not started:
            raise RuntimeError(f"the opcheck child exited with {code} before any op")
        crashed = started[-1]
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
        last = records[-1]
        if "twin" in last:
            reason = f"torch's own {last['twin']} crashes the process ({how}) under the same check"
            results.append(Result(crashed, "*", "not applicable", reason))
        else:
            results.append(
                Result(crashed, "*", "failed", f"crashed the process ({how})")
            )
        remaining = remaining[remaining.index(crashed) + 1 :]
    return results


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m infiniops_codegen.harness.opcheck")
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--ops", default="")
    parser.add_argument("--skips", default=None)
    parser.add_argument(
        "--gradcheck",
        action="store_true",
        help="torch.autograd.gradcheck of each functional overload instead",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="check every op in this process (a crash of a check ends the run)",
    )
    parser.add_argument("--child-log", default=None, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.skips:
        load_skips(options.skips)
    names = [n for n in options.ops.split(",") if n] or None
    if options.child_log:
        return _child(options, names)
    if options.in_process:
        results = check(options.build_dir, names, options.gradcheck)
    else:
        if names is None:
            names = [op.name for op in of_build(options.build_dir).ops]
        passed = [a for a in argv if not a.startswith("--ops")]
        if "--ops" in argv:
            at = argv.index("--ops")
            passed = argv[:at] + argv[at + 2 :]
        results = _isolated(passed, names)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
        if r.status != "passed":
            print(f"{r.op} {r.overload}: {r.status}: {r.reason}")
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 1 if counts.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
