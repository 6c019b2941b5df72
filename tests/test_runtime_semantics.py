"""PyTorch's out= contract on every path (DESIGN.md, "The contract of an out=
call"): version counters, __torch_function__ subclasses and modes, dispatch
modes (a logging mode, FakeTensorMode), meta tensors, torch.func.vmap,
forward-AD duals and the profiler, for every op of the build, each compared
with PyTorch's own call of the same overload on the same sample (the
correctness harness's first sample of the op).

Each test loops over all ops and reports every mismatch at once, with the
number of ops checked; an op a rule cannot apply to is counted with the
reason (never skipped silently).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from infiniops_codegen.harness import run as harness
from runtime_conftest_helpers import manifest

ROOT = Path(__file__).resolve().parent.parent
# One dtype per op: the first PyTorch's CPU kernel accepts.
DTYPES = ("float32", "int64", "bool")


@dataclass
class Sample:
    op: object  # infiniops_codegen.model.manifest.Op
    dtype: torch.dtype
    args: dict  # schema name -> value
    like: list  # PyTorch's outputs for args (templates for fresh outputs)


@functools.lru_cache(maxsize=None)
def _samples() -> tuple[list[Sample], list[str]]:
    found, missing = [], []
    for op in manifest().ops:
        for name in DTYPES:
            dtype = harness.DTYPES[name]
            plan = harness.find_plan(op, dtype)
            if plan is None:
                continue
            sample = next(iter(harness.hinted_plans(op, plan)))
            args = harness.materialize(sample, dtype, "contiguous", seed=1)
            wanted = harness.expected(op, harness.fresh(op, args))
            if not wanted:
                wanted = harness.reference_out(
                    op, harness.fresh(op, args), harness._guess_outs(op, args)
                )
            found.append(Sample(op, dtype, args, wanted))
            break
        else:
            missing.append(op.name)
    return found, missing


@pytest.fixture(scope="module")
def samples(ops):
    found, missing = _samples()
    # The harness reports ops without a sample (and fails on them unless the
    # skip file names them); here they cannot be checked either.
    print(f"\nsemantics: {len(found)} ops with a sample; without one: {missing}")
    assert found, "no op has a sample"
    return found


def _outs(sample: Sample) -> list:
    return harness.sentinel_outs(sample.like, False)


def _call(module, sample: Sample, args: dict, outs: list, **extra):
    """ops.<name>(...) with the harness's argument spelling."""
    op = sample.op
    positional = [args[a.name] for a in op.inputs if not a.keyword_only]
    kwargs = {a.python_name: args[a.name] for a in op.inputs if a.keyword_only}
    kwargs.update({a.python_name: o for a, o in zip(op.out_args, outs)})
    kwargs.update(extra)
    harness._reseed(op)
    return getattr(module, op.name)(*positional, **kwargs)


def _reference(sample: Sample, args: dict, outs: list):
    """torch.ops.aten.<overload>(..., out=); a composite's reference
    expression (it has no out= form)."""
    return harness.reference_out(sample.op, args, outs)


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)


def _map(value, f):
    if isinstance(value, torch.Tensor):
        return f(value)
    if isinstance(value, dict):
        return {k: _map(v, f) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, f) for v in value)
    return value


def _report(what: str, checked: int, failures: list[str], na: Counter | None = None):
    lines = [f"{what}: {checked} ops checked"]
    for reason, n in sorted((na or Counter()).items()):
        lines.append(f"  not applicable ({reason}): {n}")
    print("\n" + "\n".join(lines))
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:40])


# --- 1. version counters -------------------------------------------------------


def _versions(sample: Sample, args: dict, outs: list) -> list[int]:
    mutated = [args[name] for name in sample.op.mutable_inputs]
    return [t._version for t in _tensors([outs, mutated])]


def test_every_output_bumps_its_version_as_pytorch_does(ops, samples):
    """For every op, every implementation implementations() lists and every
    tensor path, each output (and each input the op mutates) records as many
    writes as PyTorch's own out= call records."""
    failures = []
    combos = 0
    for sample in samples:
        op = sample.op
        if op.composite:
            # No out= overload in PyTorch: the contract of an out= call, one
            # write per output.
            expected = [1] * len(list(_tensors(_outs(sample))))
        else:
            args, outs = harness.fresh(op, sample.args), _outs(sample)
            before = _versions(sample, args, outs)
            _reference(sample, args, outs)
            expected = [b - a for a, b in zip(before, _versions(sample, args, outs))]
        for impl in ops.implementations()[op.name]["cpu"]:
            for path in harness.PATHS:
                args, outs = harness.fresh(op, sample.args), _outs(sample)
                before = _versions(sample, args, outs)
                try:
                    with harness.path_switches(ops, path):
                        _call(ops, sample, args, outs, implementation=impl)
                except Exception as e:  # noqa: BLE001 - reported
                    failures.append(f"{op.name} {impl}/{path}: {type(e).__name__}: {e}")
                    continue
                got = [b - a for a, b in zip(before, _versions(sample, args, outs))]
                combos += 1
                if got != expected:
                    failures.append(
                        f"{op.name} {impl}/{path}: versions moved by {got}, "
                        f"PyTorch's by {expected}"
                    )
    print(f"\nversion counters: {combos} op x implementation x path calls")
    _report("version counters", len(samples), failures)


def test_stale_saved_tensor_is_refused_after_a_native_add(ops):
    """The issue's example: a native kernel writing a tensor autograd saved
    must make backward raise, as torch.add(out=) does."""
    x = torch.randn(4)
    for impl in ("native", "torch", "default"):
        w = torch.randn(4, requires_grad=True)
        o = torch.empty(4)
        c = (w * o).sum()
        ops.add(x, x, out=o, implementation=impl)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            c.backward()


# --- 2. __torch_function__ -------------------------------------------------------


def _expected_function(module, op):
    if op.composite:
        return getattr(module, op.name)
    return harness._overload(op.aten)


class Logged(torch.Tensor):
    calls: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(func)
        return super().__torch_function__(func, types, args, kwargs or {})


class RecordingMode(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(func)
        return func(*args, **(kwargs or {}))


def _close(got: list, want: list, dtype) -> None:
    harness._close(got, want, dtype)


def test_torch_function_subclass_is_consulted(ops, samples):
    """A subclass overriding __torch_function__ in any tensor argument gets
    the call (with torch.ops.aten.<overload>, or the module's own function
    for a composite), and its default handling computes PyTorch's result."""
    failures = []
    for sample in samples:
        op = sample.op
        want_outs = sample.like  # PyTorch's result for this sample
        args = _map(harness.fresh(op, sample.args), lambda t: t.as_subclass(Logged))
        outs = _outs(sample)
        Logged.calls = []
        try:
            _call(ops, sample, args, outs)
        except Exception as e:  # noqa: BLE001 - reported
            failures.append(f"{op.name}: {type(e).__name__}: {e}")
            continue
        expected = _expected_function(ops, op)
        if Logged.calls[:1] != [expected]:
            failures.append(f"{op.name}: __torch_function__ saw {Logged.calls[:3]}")
            continue
        try:
            _close(outs, want_outs, sample.dtype)
        except AssertionError as e:
            failures.append(f"{op.name}: result differs: {e}")
    _report("__torch_function__ subclass", len(samples), failures)


def test_torch_function_mode_sees_every_call(ops, samples):
    failures = []
    for sample in samples:
        op = sample.op
        want_outs = sample.like  # PyTorch's result for this sample
        args, outs = harness.fresh(op, sample.args), _outs(sample)
        try:
            with RecordingMode() as mode:
                _call(ops, sample, args, outs)
        except Exception as e:  # noqa: BLE001 - reported
            failures.append(f"{op.name}: {type(e).__name__}: {e}")
            continue
        if mode.seen != [_expected_function(ops, op)]:
            failures.append(f"{op.name}: the mode saw {mode.seen}")
            continue
        try:
            _close(outs, want_outs, sample.dtype)
        except AssertionError as e:
            failures.append(f"{op.name}: result differs: {e}")
    _report("TorchFunctionMode", len(samples), failures)


def test_plain_tensors_do_not_reach_torch_function(ops):
    """Subclasses that opt out (torch._C._disabled_torch_function_impl) and
    DisableTorchFunctionSubclass leave the call to the library."""

    class OptedOut(torch.Tensor):
        __torch_function__ = torch._C._disabled_torch_function_impl

    x = torch.randn(4)
    out = torch.empty(4)
    ops.exp(x.as_subclass(OptedOut), out=out)
    torch.testing.assert_close(out, x.exp())
    Logged.calls = []
    with torch._C.DisableTorchFunctionSubclass():
        ops.exp(x.as_subclass(Logged), out=out)
    assert Logged.calls == []


# --- 3. dispatch modes, fake and meta tensors, vmap, duals -----------------------


class LoggingMode(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_dispatch_mode_sees_the_aten_call(ops, samples):
    """Under a TorchDispatchMode every call reaches ATen's dispatcher with
    the original tensors (no native kernel, no direct kernel, no from_blob):
    the mode sees what it sees for PyTorch's own call."""
    failures = []
    for sample in samples:
        op = sample.op
        seen = {}
        for who in ("torch", "ours"):
            args, outs = harness.fresh(op, sample.args), _outs(sample)
            with LoggingMode() as mode:
                try:
                    if who == "torch":
                        _reference(sample, args, outs)
                    else:
                        _call(ops, sample, args, outs)
                except Exception as e:  # noqa: BLE001 - compared
                    mode.seen.append(f"raised {type(e).__name__}")
            seen[who] = mode.seen
        if op.composite:
            # The reference is functional; ours must show its ATen calls.
            if not seen["ours"] or any(s.startswith("raised") for s in seen["ours"]):
                failures.append(f"{op.name}: the mode saw {seen['ours']}")
        elif seen["ours"] != seen["torch"]:
            failures.append(f"{op.name}: ours {seen['ours']}, torch {seen['torch']}")
    _report("TorchDispatchMode", len(samples), failures)


def _outcome(fn):
    """('ok', outputs) or ('raised', exception type), with the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", fn())
        except Exception as e:  # noqa: BLE001 - compared
            result = ("raised", type(e))
    return result, [str(w.message) for w in caught]


def _meta_of(outs) -> list:
    return [(tuple(t.shape), t.dtype, t.device.type) for t in _tensors(outs)]


# ATen warnings that the reference, torch.ops.aten.<overload>(..., out=),
# prints to stderr rather than raising as a Python warning (torch.ops has no
# Python warning handler); torch's public function raises them, as ours do
# (torch.scatter(x, 0, i, src, reduce="add") warns this in Python).
ATEN_STDERR_WARNINGS = (
    "The reduce argument of torch.scatter with Tensor src is deprecated",
)


def _compare_contexts(ops, samples, name, make, run, compare_values):
    """For each op: `make(sample)` gives (args, outs, context) twice (torch,
    ours); both calls run inside their context and must end alike: the same
    exception type, or outputs of the same shape, dtype and device (and
    values when compare_values)."""
    failures = []
    for sample in samples:
        op = sample.op
        results = {}
        for who in ("torch", "ours"):
            args, outs, context = make(sample)

            def go(args=args, outs=outs, who=who, context=context):
                with context:
                    if who == "torch":
                        ret = _reference(sample, args, outs)
                    else:
                        _call(ops, sample, args, outs)
                        ret = outs
                    return run(ret)

            results[who] = _outcome(go)
        (mine, my_warnings), (theirs, their_warnings) = (
            results["ours"],
            results["torch"],
        )
        leaked = [w for w in my_warnings if "data pointer" in w or "data_ptr" in w]
        if leaked:
            failures.append(f"{op.name}: read a data pointer: {leaked[0][:120]}")
        extra = [
            w
            for w in my_warnings
            if w not in their_warnings and not w.startswith(ATEN_STDERR_WARNINGS)
        ]
        if extra and not op.composite:
            failures.append(
                f"{op.name}: warned where PyTorch did not: {extra[0][:120]}"
            )
        if op.composite:
            # No out= form in PyTorch: ours must work or raise a Python error.
            if mine[0] == "raised" and not issubclass(mine[1], Exception):
                failures.append(f"{op.name}: raised {mine[1]}")
            continue
        if mine[0] != theirs[0] or (mine[0] == "raised" and mine[1] is not theirs[1]):
            failures.append(f"{op.name}: ours {mine}, torch {theirs}")
        elif mine[0] == "ok":
            if _meta_of(mine[1]) != _meta_of(theirs[1]):
                failures.append(
                    f"{op.name}: ours {_meta_of(mine[1])}, torch {_meta_of(theirs[1])}"
                )
            elif compare_values:
                try:
                    _close(
                        list(_tensors(mine[1])), list(_tensors(theirs[1])), sample.dtype
                    )
                except AssertionError as e:
                    failures.append(f"{op.name}: values differ: {e}")
    _report(name, len(samples), failures)


def test_fake_tensor_mode(ops, samples):
    """Inside FakeTensorMode with fake tensors: fake outputs of PyTorch's
    shapes (or PyTorch's exception), and no data pointer read: every fake
    tensor is set to raise on one (PyTorch only warns, once, on stderr)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    previous = torch.is_warn_always_enabled()
    torch.set_warn_always(True)

    def fake_of(mode):
        def fake(t):
            f = mode.from_tensor(t)
            torch._C._set_throw_on_mutable_data_ptr(f)
            return f

        return fake

    def make(sample):
        mode = FakeTensorMode(allow_non_fake_inputs=False)
        args = _map(harness.fresh(sample.op, sample.args), fake_of(mode))
        return args, _map(_outs(sample), fake_of(mode)), mode

    def run(ret):
        from torch._subclasses.fake_tensor import FakeTensor

        outs = list(_tensors(ret))
        assert all(isinstance(t, FakeTensor) for t in outs), "a real output"
        return outs

    try:
        _compare_contexts(ops, samples, "FakeTensorMode", make, run, False)
    finally:
        torch.set_warn_always(previous)


def test_meta_tensors(ops, samples):
    def make(sample):
        meta = lambda t: t.to("meta")  # noqa: E731
        args = _map(harness.fresh(sample.op, sample.args), meta)
        return args, _map(_outs(sample), meta), contextlib.nullcontext()

    _compare_contexts(ops, samples, "meta tensors", make, list, False)


def _first_input(sample: Sample, accept) -> str | None:
    """The name of the first single-tensor input that accept() takes."""
    for a in sample.op.inputs:
        value = sample.args[a.name]
        if isinstance(value, torch.Tensor) and accept(value):
            return a.name
    return None


def test_vmap_works_or_raises_as_pytorch(ops, samples):
    """torch.func.vmap over the first tensor input (a batch of 3 copies)."""
    failures = []
    na = Counter()
    for sample in samples:
        op = sample.op
        first = _first_input(sample, lambda t: True)
        if first is None:
            na["no single tensor input to batch"] += 1
            continue
        batch = torch.stack([sample.args[first]] * 3)
        results = {}
        for who in ("torch", "ours"):

            def f(x, who=who):
                args = {**harness.fresh(op, sample.args), first: x}
                outs = _outs(sample)
                if who == "torch":
                    return tuple(_tensors(_reference(sample, args, outs)))
                _call(ops, sample, args, outs)
                return tuple(_tensors(outs))

            results[who] = _outcome(lambda f=f: torch.func.vmap(f)(batch))[0]
        mine, theirs = results["ours"], results["torch"]
        if op.composite:
            if mine[0] == "raised" and mine[1] is not RuntimeError:
                failures.append(f"{op.name}: raised {mine[1].__name__}")
        elif mine[0] != theirs[0] or (mine[0] == "raised" and mine[1] is not theirs[1]):
            failures.append(f"{op.name}: ours {mine}, torch {theirs}")
        elif mine[0] == "ok":
            try:
                _close(list(mine[1]), list(theirs[1]), sample.dtype)
            except AssertionError as e:
                failures.append(f"{op.name}: values differ: {e}")
    _report("vmap", len(samples) - sum(na.values()), failures, na)


def test_forward_ad_duals_behave_as_in_pytorch(ops, samples):
    """A forward-AD dual input: PyTorch's out= overloads raise (their
    autograd kernel does); the library must not compute on the primal."""
    failures = []
    na = Counter()
    for sample in samples:
        op = sample.op
        first = _first_input(sample, torch.Tensor.is_floating_point)
        if first is None:
            na["no floating-point tensor input"] += 1
            continue
        results = {}
        for who in ("torch", "ours"):

            def go(who=who):
                with fwAD.dual_level():
                    args = harness.fresh(op, sample.args)
                    primal = args[first]
                    args[first] = fwAD.make_dual(primal, torch.ones_like(primal))
                    outs = _outs(sample)
                    if who == "torch":
                        _reference(sample, args, outs)
                    else:
                        _call(ops, sample, args, outs)
                    return outs

            results[who] = _outcome(go)[0]
        mine, theirs = results["ours"], results["torch"]
        if op.composite:
            expected = ("raised", NotImplementedError)
            if mine != expected:
                failures.append(f"{op.name}: ours {mine}, expected {expected}")
        elif mine[0] != theirs[0] or (mine[0] == "raised" and mine[1] is not theirs[1]):
            failures.append(f"{op.name}: ours {mine}, torch {theirs}")
    _report("forward-AD duals", len(samples) - sum(na.values()), failures, na)


# --- 4. the profiler ----------------------------------------------------------------


def _names_under(events, marker: str) -> list[str]:
    names = []

    def walk(e):
        for child in e.cpu_children:
            names.append(child.name)
            walk(child)

    for e in events:
        if e.name == marker:
            walk(e)
    return sorted(names)


def test_profiler_records_the_aten_op(ops, samples):
    """Under torch.profiler, each call of ours records the ATen ops PyTorch's
    own call records (composites: their own name), on every implementation
    and path."""
    from torch.autograd.profiler import record_function
    from torch.profiler import ProfilerActivity, profile

    cases = []
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for k, sample in enumerate(samples):
            op = sample.op
            if not op.composite:
                with record_function(f"case{k}:torch"):
                    _reference(sample, harness.fresh(op, sample.args), _outs(sample))
            for impl in ops.implementations()[op.name]["cpu"]:
                for path in harness.PATHS:
                    marker = f"case{k}:{impl}/{path}"
                    with harness.path_switches(ops, path), record_function(marker):
                        args = harness.fresh(op, sample.args)
                        _call(ops, sample, args, _outs(sample), implementation=impl)
                    cases.append((k, sample, marker))
    events = prof.events()
    failures = []
    for k, sample, marker in cases:
        got = _names_under(events, marker)
        if sample.op.composite:
            top = f"infiniops::{sample.op.name}"
            if not got or got.count(top) != 1:
                failures.append(f"{marker} {sample.op.name}: recorded {got}")
        else:
            want = _names_under(events, f"case{k}:torch")
            if got != want:
                failures.append(
                    f"{marker} {sample.op.name}: recorded {got}, torch {want}"
                )
    _report("profiler", len(samples), failures)


# --- 5. messages ---------------------------------------------------------------


def test_from_blob_wrong_shaped_out_raises_without_a_false_warning(ops):
    x = torch.randn(4)
    out = torch.zeros(3)
    ops.set_handle_reuse(False)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError, match=r"has shape \[3\] but the result"):
                ops.exp(x, out=out)
    finally:
        ops.set_handle_reuse(True)
    assert [str(w.message) for w in caught if "resized" in str(w.message)] == []
    assert torch.equal(out, torch.zeros(3)), "out was written"


def test_native_with_a_wrong_shaped_out_names_the_shapes(ops):
    x = torch.randn(4)
    with pytest.raises(NotImplementedError) as info:
        ops.add(x, x, out=torch.empty(3), implementation="native")
    message = str(info.value)
    assert "out's shape is not the broadcast shape of the inputs" in message
    assert "out: float32 [3]" in message and "input: float32 [4]" in message


def test_native_on_a_fake_tensor_says_why(ops):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.randn(4)
        with pytest.raises(NotImplementedError, match="framework mode"):
            ops.add(x, x, out=torch.empty(4), implementation="native")


def test_from_blob_restrided_out_names_the_strides(ops):
    """ATen writes adaptive_avg_pool2d's result with its own strides, which a
    from_blob output cannot take: the error says the strides differ (the
    shapes are equal)."""
    x = torch.randn(2, 3, 4, 4)
    out = torch.empty(2, 3, 2, 2).transpose(-1, -2)
    ops.set_handle_reuse(False)
    try:
        with pytest.raises(RuntimeError, match=r"has strides \[12, 4, 1, 2\] but ATen"):
            ops.adaptive_avg_pool2d(x, [2, 2], out=out)
    finally:
        ops.set_handle_reuse(True)
