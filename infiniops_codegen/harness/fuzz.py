"""The native-kernel fuzzer: property-based cases (hypothesis) for each op of
a build that has a native kernel on the device, each checked against
PyTorch's own call on an identical copy of its memory.

A case draws a dtype (each the kernel claims, each it must decline, mixed
input dtypes), shapes (the op's sample with its sizes redrawn: one element,
zero-size, broadcast, large), each input's layout (contiguous, transposed,
step-sliced with an offset, expanded) and the out (none, contiguous,
transposed, step-sliced into a wider buffer, exactly an input, partly
overlapping an input, empty to resize, another dtype). Its tensors are views
of buffers filled with sentinels around them, made three times alike:

- PyTorch's out= overload (a composite: its reference, copied into out) on
  the first copy is the answer; where it raises, ours must raise too;
- the default call on the second: every buffer (outputs, inputs, the gaps
  between a view's elements) as PyTorch's, with the dtype's tolerance
  (run.tolerance); the op's native run counter says whether the kernel ran;
- implementation="native" on the third: it either computes what PyTorch
  computes, or declines (NotImplementedError) leaving every buffer as it was;
  it never runs a dtype the spec does not claim, never declines a call the
  default call ran natively, and never accepts a call PyTorch rejects.

Each claimed dtype must be taken by the kernel in at least one case. Cases
are derandomized (the same every run) and bounded (`examples`, `seconds`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from ..model import manifest as manifests
from ..model.manifest import Op
from . import run, values
from .samples import CASE_DTYPE, DATA, TensorSpec

OUT_MODES = (
    "none",
    "contiguous",
    "transposed",
    "sliced",
    "alias",
    "partial",
    "resize",
    "other_dtype",
)
# A composite's reference is its expression copied into out: only the outs
# whose meaning does not depend on an ATen out= kernel (resizing, casting,
# overlap checks) are drawn for it.
COMPOSITE_OUT_MODES = ("none", "contiguous", "transposed", "sliced", "alias")
LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")
SHAPES = ("small", "one", "zero", "large", "broadcast")
LARGE = 70_000  # elements of a "large" case: beyond every default size limit
# Values where a kernel goes wrong first, mixed into floating inputs.
SPECIAL = (-2.5, -1.0, -0.0, 0.0, 0.5, 3.0, float("nan"), float("inf"), -math.inf)


@dataclass
class OpResult:
    op: str
    cases: int = 0
    native_ran: dict = field(default_factory=dict)  # dtype -> cases it computed
    declined: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "failed" if self.failures else "passed"


def native_ops(manifest, platform: str, names=None) -> list[Op]:
    return [
        op
        for op in manifest.ops
        if op.implementations.native_dtypes(platform)
        and (names is None or op.name in names)
    ]


# -- a case's memory ------------------------------------------------------------


@dataclass(frozen=True)
class View:
    buffer: int  # index into the case's buffers
    size: tuple
    stride: tuple
    offset: int = 0


@dataclass
class Case:
    """Everything of one case but the memory itself: made alike on demand."""

    buffers: list  # CPU tensors: the initial contents
    inputs: dict  # argument name -> View or a plain value
    outs: list | None  # View per out argument; None: no out=
    text: str = ""

    def make(self, device: str):
        bufs = [b.clone().to(device) for b in self.buffers]
        view = lambda v: bufs[v.buffer].as_strided(v.size, v.stride, v.offset)
        args = {
            k: view(v) if isinstance(v, View) else v for k, v in self.inputs.items()
        }
        outs = None if self.outs is None else [view(v) for v in self.outs]
        return bufs, args, outs


def _contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _values(shape, dtype, gen) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=gen)
        flat = t.view(-1)
        n = min(len(SPECIAL), flat.numel())
        if n and torch.rand((), generator=gen) < 0.5:
            flat[:n] = torch.tensor(SPECIAL[:n])
        return t.to(dtype)
    return torch.randint(-5, 6, shape, generator=gen).to(dtype)


def _place(buffers, t: torch.Tensor, layout: str, dtype) -> View:
    """t's values in a new buffer laid out as `layout` (sentinels around)."""
    shape = tuple(t.shape)
    if layout == "transposed" and len(shape) >= 2:
        swapped = shape[:-2] + (shape[-1], shape[-2])
        buf = t.transpose(-1, -2).contiguous().reshape(-1)
        stride = list(_contiguous_strides(swapped))
        stride[-1], stride[-2] = stride[-2], stride[-1]
        buffers.append(buf)
        return View(len(buffers) - 1, shape, tuple(stride))
    if layout == "sliced" and len(shape) >= 1:
        wide = shape[:-1] + (2 * shape[-1] + 1,)
        buf = torch.full(wide, values.sentinel(dtype), dtype=dtype)
        buf[..., 1::2] = t
        stride = list(_contiguous_strides(wide))
        stride[-1] *= 2
        buffers.append(buf.reshape(-1))
        return View(len(buffers) - 1, shape, tuple(stride), 1)
    if layout == "expanded" and len(shape) >= 1 and shape[0] > 1:
        row = t[:1].contiguous().reshape(-1)
        buffers.append(row)
        stride = (0,) + _contiguous_strides(shape[1:])
        return View(len(buffers) - 1, shape, stride)
    buffers.append(t.contiguous().reshape(-1).clone())
    return View(len(buffers) - 1, shape, _contiguous_strides(shape))


# -- drawing cases (hypothesis) --------------------------------------------------


def _resize(plan: dict, draw, st, kind: str) -> dict:
    """The op's sample plan with its data tensors' sizes redrawn, equal sizes
    kept equal (a weight of the last dim stays so)."""
    specs = {k: v for k, v in plan.items() if isinstance(v, TensorSpec)}
    sizes = sorted({n for s in specs.values() for n in s.shape})
    if kind == "one":
        new = {n: 1 for n in sizes}
    else:
        new = {n: draw(st.integers(1, 9)) for n in sizes}
        if kind == "zero" and sizes:
            new[draw(st.sampled_from(sizes))] = 0
        if kind == "large" and sizes:
            big = draw(st.sampled_from(sizes))
            rest = math.prod(new[n] for n in sizes if n != big) or 1
            new[big] = max(LARGE // rest, 1) + draw(st.integers(0, 7))
    rank = max((len(s.shape) for s in specs.values()), default=0)
    lead = draw(st.integers(1, 3)) if kind == "small" and draw(st.booleans()) else 0
    resized = {}
    for k, s in specs.items():
        shape = tuple(new[n] for n in s.shape)
        if lead and s.role == DATA and len(shape) == rank:
            shape = (lead,) + shape
        resized[k] = TensorSpec(shape, s.role, s.literal)
    data = [k for k, s in resized.items() if s.role == DATA and s.shape]
    if kind == "broadcast" and len(data) >= 2:
        k = draw(st.sampled_from(data))
        shape = resized[k].shape
        ones = draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
        shape = tuple(1 if one else n for one, n in zip(ones, shape))
        shape = shape[draw(st.integers(0, len(shape) - 1)) :]
        resized[k] = TensorSpec(shape, DATA)
    return {**plan, **resized}


def _strategy(op: Op, plan: dict, dtypes: list, platform_dtypes: tuple):
    from hypothesis import strategies as st

    modes = COMPOSITE_OUT_MODES if op.composite else OUT_MODES

    @st.composite
    def case(draw):
        dtype = draw(st.sampled_from(dtypes))
        kind = draw(st.sampled_from(SHAPES))
        sized = _resize(plan, draw, st, kind)
        data = [
            k for k, v in sized.items() if isinstance(v, TensorSpec) and v.role == DATA
        ]
        mixed = len(data) > 1 and draw(st.integers(0, 7)) == 0  # another dtype
        layouts = {
            k: draw(st.sampled_from(LAYOUTS))
            for k, v in sized.items()
            if isinstance(v, TensorSpec)
        }
        mode = draw(st.sampled_from(modes))
        seed = draw(st.integers(0, 2**16))
        return dict(
            dtype=dtype,
            kind=kind,
            plan=sized,
            mixed=mixed,
            layouts=layouts,
            out=mode,
            seed=seed,
        )

    return case()


def build_case(op: Op, drawn: dict, device: str) -> Case | None:
    """The drawn case's memory; None where it cannot be laid out (the
    reference's output shape is needed for the out and PyTorch rejects the
    inputs: the case then has out=None, where ours must raise as PyTorch)."""
    dtype = run.DTYPES[drawn["dtype"]]
    gen = torch.Generator().manual_seed(drawn["seed"])
    buffers: list = []
    inputs: dict = {}
    tensors = []
    for k, v in drawn["plan"].items():
        if not isinstance(v, TensorSpec):
            inputs[k] = dtype if v == CASE_DTYPE else v
            continue
        t_dtype = dtype if v.role == DATA else None
        if v.role == DATA and drawn["mixed"] and tensors:
            t_dtype = torch.float32 if dtype != torch.float32 else torch.float16
        if t_dtype is None:  # index and mask tensors: the harness's values
            t = values.materialize({k: v}, dtype, "contiguous", drawn["seed"])[k]
        else:
            t = _values(v.shape, t_dtype, gen)
        inputs[k] = _place(buffers, t, drawn["layouts"][k], t.dtype)
        tensors.append(k)
    text = (
        f"{op.name}: dtype {drawn['dtype']}{' (mixed)' if drawn['mixed'] else ''}, "
        f"{drawn['kind']} shapes "
        + ", ".join(
            f"{k} {list(v.size)} {drawn['layouts'][k]}"
            for k, v in inputs.items()
            if isinstance(v, View)
        )
        + f", out {drawn['out']}, seed {drawn['seed']}"
    )
    case = Case(buffers, inputs, None, text)
    if drawn["out"] == "none":
        return case
    # the result's geometry, from PyTorch's functional form on a copy
    try:
        _, args, _ = case.make("cpu")
        results = run.expected(op, args) if len(op.out_args) else []
    except Exception:  # noqa: BLE001 - PyTorch rejects the inputs
        results = None
    if not results or any(not isinstance(r, torch.Tensor) for r in results):
        case.outs = None
        case.text += " (PyTorch rejects the inputs: called without out=)"
        return case
    case.outs = [_out(case, op, r, drawn["out"], i) for i, r in enumerate(results)]
    return case


def _out(case: Case, op: Op, result: torch.Tensor, mode: str, index: int) -> View:
    buffers = case.buffers
    shape, dtype = tuple(result.shape), result.dtype
    fill = torch.full(shape, values.sentinel(dtype), dtype=dtype)
    first = next(
        (v for v in case.inputs.values() if isinstance(v, View)),
        None,
    )
    if mode in ("alias", "partial") and index == 0 and first is not None:
        base = buffers[first.buffer]
        if tuple(first.size) == shape and base.dtype == dtype:
            if mode == "alias":
                return first
            # the same geometry one element further on: partly the input
            grown = torch.cat([base, base[-1:]]) if base.numel() else base
            buffers[first.buffer] = grown
            return View(first.buffer, first.size, first.stride, first.offset + 1)
    if mode == "resize":
        buffers.append(torch.empty(0, dtype=dtype))
        return View(len(buffers) - 1, (0,), (1,))
    if mode == "other_dtype" and dtype.is_floating_point:
        other = torch.float64 if dtype != torch.float64 else torch.float32
        return _place(buffers, fill.to(other), "contiguous", other)
    layout = mode if mode in ("transposed", "sliced") else "contiguous"
    return _place(buffers, fill, layout, dtype)


# -- calling ------------------------------------------------------------------


def _torch_call(op: Op, args: dict, outs):
    """PyTorch's answer on this copy: its out= overload (a composite's
    reference copied into out), or its functional form without out."""
    if outs is None:
        return run.expected(op, args)
    if op.composite:
        results = run.expected(op, args)
        for o, r in zip(outs, results):
            o.copy_(r)
        return outs
    run._torch_out_call(op, args, outs)
    return outs


def _our_call(module, op: Op, args: dict, outs, implementation: str):
    positional = [args[a.name] for a in op.inputs if not a.keyword_only]
    kwargs = {a.python_name: args[a.name] for a in op.inputs if a.keyword_only}
    if outs is not None:
        kwargs.update({a.python_name: o for a, o in zip(op.out_args, outs)})
    result = getattr(module, op.name)(
        *positional, implementation=implementation, **kwargs
    )
    if outs is not None:
        return outs
    return [result] if isinstance(result, torch.Tensor) else list(result)


def _native_runs(module, name: str) -> int:
    return sum(
        n
        for (op, impl, _path), n in module.stats().items()
        if op == name and impl == "native"
    )


def _same(actual: list, wanted: list, what: str, exact: bool = False) -> None:
    assert len(actual) == len(
        wanted
    ), f"{what}: {len(actual)} tensors, not {len(wanted)}"
    for i, (a, w) in enumerate(zip(actual, wanted)):
        a, w = a.cpu(), w.cpu()
        tol = {"rtol": 0, "atol": 0} if exact else run.tolerance(w.dtype)
        try:
            torch.testing.assert_close(a, w, equal_nan=True, **tol)
        except AssertionError as e:
            raise AssertionError(f"{what} (tensor {i}): {e}") from None


def check_case(module, op: Op, case: Case, device: str, claimed: tuple) -> dict:
    """One case; raises AssertionError saying what is wrong. Returns
    {"native": the native call computed, "default_native": the default call
    ran the native kernel}."""
    pristine = [b.clone() for b in case.buffers]
    # PyTorch
    bufs, args, outs = case.make(device)
    try:
        wanted = _torch_call(op, args, outs)
        torch_error = None
    except Exception as e:  # noqa: BLE001 - ours must raise as well
        torch_error, wanted = e, None
    torch_bufs = bufs
    # ours, the default implementation
    bufs, args, outs = case.make(device)
    module.reset_stats()
    try:
        got = _our_call(module, op, args, outs, "default")
        ours_error = None
    except Exception as e:  # noqa: BLE001
        ours_error, got = e, None
    default_native = _native_runs(module, op.name) > 0
    module.reset_stats(False)
    if torch_error is None:
        assert ours_error is None, (
            f"the default call raised {type(ours_error).__name__}: "
            f"{str(ours_error)[:200]} where PyTorch computes"
        )
        how = "the native kernel" if default_native else "the fallback"
        _same(got, wanted, f"the default call ({how}) differs from PyTorch")
        if outs is not None:
            _same(bufs, torch_bufs, f"memory after the default call ({how})")
    else:
        assert ours_error is not None, (
            f"the default call computed where PyTorch raises "
            f"{type(torch_error).__name__}: {str(torch_error)[:200]}"
        )
    # ours, the native kernel only
    bufs, args, outs = case.make(device)
    try:
        got = _our_call(module, op, args, outs, "native")
        declined = None
    except NotImplementedError as e:
        declined, got = e, None
    except Exception as e:  # noqa: BLE001
        assert torch_error is not None, (
            f"implementation='native' raised {type(e).__name__}: {str(e)[:200]} "
            "where PyTorch computes (a kernel declines with NotImplementedError)"
        )
        return {"native": False, "default_native": default_native}
    dtypes = {
        str(t.dtype).removeprefix("torch.")
        for t in list(args.values()) + (outs or [])
        if isinstance(t, torch.Tensor)
    }
    if declined is None:
        assert torch_error is None, (
            "the native kernel computed a call PyTorch rejects "
            f"({type(torch_error).__name__}: {str(torch_error)[:200]})"
        )
        assert dtypes <= set(claimed), (
            f"the native kernel ran for dtypes {sorted(dtypes)}, "
            f"but the spec claims only {list(claimed)}"
        )
        _same(got, wanted, "the native kernel differs from PyTorch")
        if outs is not None:
            _same(bufs, torch_bufs, "memory after the native kernel")
        return {"native": True, "default_native": default_native}
    assert not default_native, (
        f"the default call ran the native kernel, implementation='native' "
        f"declined: {str(declined)[:200]}"
    )
    _same(
        [b.cpu() for b in bufs],
        pristine,
        "the declining kernel left memory changed (out or an input)",
        exact=True,
    )
    return {"native": False, "default_native": default_native}


# -- an op, a build -------------------------------------------------------------


def fuzz_op(
    module,
    op: Op,
    device: str = "cpu",
    platform: str = "cpu",
    examples: int = 100,
    deadline: float | None = None,
) -> OpResult:
    """Fixed base cases (each dtype, contiguous), then `examples` drawn ones
    (fewer when `deadline`, a time.monotonic() value, passes first). A failing
    drawn case is shrunk by hypothesis to a small one, which is reported."""
    from hypothesis import HealthCheck, given, settings

    result = OpResult(op.name)
    claimed = op.implementations.native_dtypes(platform)
    plan = run.find_plan(op, torch.float32)
    if plan is None:
        result.failures.append(
            f"{op.name}: no sample: PyTorch's reference rejects every candidate"
        )
        return result
    dtypes = list(claimed) + [d for d in run.DTYPES if d not in claimed]

    def one(drawn: dict) -> None:
        case = build_case(op, drawn, device)
        try:
            seen = check_case(module, op, case, device, claimed)
        except AssertionError as e:
            raise AssertionError(f"{case.text}: {e}") from None
        result.cases += 1
        if seen["native"]:
            key = drawn["dtype"]
            result.native_ran[key] = result.native_ran.get(key, 0) + 1
        else:
            result.declined += 1

    for dtype in dtypes:  # the base cases: each dtype once, plainly laid out
        base = dict(
            dtype=dtype,
            kind="plain",
            plan=plan,
            mixed=False,
            layouts={k: "contiguous" for k in plan},
            out="contiguous",
            seed=0,
        )
        try:
            one(base)
        except AssertionError as e:
            result.failures.append(str(e)[:1500])
            return result
    failing: list[str] = []

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
        report_multiple_bugs=False,
    )
    @given(_strategy(op, plan, dtypes, claimed))
    def drawn_cases(drawn):
        if deadline is not None and time.monotonic() > deadline:
            return
        try:
            one(drawn)
        except AssertionError as e:
            failing[:] = [str(e)[:1500]]
            raise

    try:
        drawn_cases()
    except AssertionError:
        result.failures.append(failing[-1] if failing else "a drawn case failed")
    except Exception as e:  # noqa: BLE001 - the fuzzer's own error, reported
        if failing:  # hypothesis's Flaky and the like: the failure behind it
            e = AssertionError(failing[-1])
        result.failures.append(f"{op.name}: {type(e).__name__}: {e}"[:1500])
    for dtype in claimed:
        if not result.native_ran.get(dtype) and not result.failures:
            result.failures.append(
                f"{op.name}: the native kernel claims {dtype} but declined "
                f"every one of its cases"
            )
    return result


def fuzz_build(
    build_dir,
    names=None,
    device: str = "cpu",
    examples: int = 100,
    seconds: float | None = None,
    echo=print,
) -> list[OpResult]:
    """Every op of the build with a native kernel on the device's platform."""
    import warnings

    from ..base import platforms
    from ..runtime import load

    # PyTorch's deprecation warnings (an out resized) are the cases' point
    warnings.filterwarnings("ignore")

    platforms.import_torch_module(device)
    platform = platforms.by_torch_device(device)
    platform_name = platform.name if platform else device
    module = load(build_dir)
    manifest = manifests.of_build(build_dir)
    ops = native_ops(manifest, platform_name, names)
    values.DEVICE = device
    deadline = None if seconds is None else time.monotonic() + seconds
    results = []
    for op in ops:
        start = time.monotonic()
        r = fuzz_op(module, op, device, platform_name, examples, deadline)
        results.append(r)
        ran = ", ".join(f"{d} {n}" for d, n in sorted(r.native_ran.items()))
        echo(
            f"  {r.status}: {op.name}: {r.cases} cases, native computed "
            f"{sum(r.native_ran.values())} ({ran or 'none'}), declined "
            f"{r.declined} ({time.monotonic() - start:.1f} s)"
        )
        for f in r.failures:
            echo(f"    {f}")
    return results


def main(argv=None) -> int:
    """`python -m infiniops_codegen.harness.fuzz --build-dir B [--ops a,b]
    [--device cpu] [--examples N] [--seconds S]`: run by `infiniops-codegen
    check --fuzz` in a process of its own (a kernel that crashes ends only
    it). Exits 1 when an op failed."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m infiniops_codegen.harness.fuzz")
    parser.add_argument("--build-dir", type=Path, required=True)
    parser.add_argument("--ops", default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=None)
    args = parser.parse_args(argv)
    names = set(args.ops.split(",")) if args.ops else None
    results = fuzz_build(
        args.build_dir, names, args.device, args.examples, args.seconds
    )
    failed = [r.op for r in results if r.failures]
    print(
        f"fuzz: {len(results)} ops with a native kernel on {args.device}: "
        f"{len(results) - len(failed)} passed, {len(failed)} failed"
        + (f" ({', '.join(failed)})" if failed else "")
        + f"; {sum(r.cases for r in results)} cases"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
