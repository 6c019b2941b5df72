"""PyTorch's side of a configuration: the expected results, the reference
call `torch.<op>(..., out=)` that is timed, and how results are compared.
Used by the workers and by the derivation of configurations (derive.py)."""

from __future__ import annotations

from ..model.manifest import Op
from . import calls

# Random ops draw from the default generator: seeded alike before every call
# whose result is compared.
RANDOM_SEED = 20261202


def aten_overload(name: str):
    import torch

    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def reseed(op: Op) -> None:
    if "nondeterministic_seeded" in op.tags:
        import torch

        torch.manual_seed(RANDOM_SEED)


def _as_list(result) -> list:
    import torch

    return [result] if isinstance(result, torch.Tensor) else list(result)


def _composite_function(op: Op):
    """The composite's reference expression as a function of its inputs."""
    names = [a.name for a in op.inputs]
    source = f"lambda {', '.join(names)}: {op.reference}"
    import torch

    return eval(source, {"torch": torch})  # noqa: S307 (the op's own spec)


def expected(op: Op, values: dict) -> list:
    """The results the out= call must write: the functional ATen overload's
    (a composite's reference expression), outputs only."""
    reseed(op)
    if op.composite:
        fn = _composite_function(op)
        result = calls.every_input(fn, op, values)()
    else:
        if not op.functional:
            raise LookupError(f"{op.name}: no functional overload to compare with")
        result = calls.functional(aten_overload(op.functional), op, values)()
    n = len(op.out_args)
    return _as_list(result)[:n]


def _candidates(op: Op):
    """(label, callable, call builder), best first: the public Python
    function, then torch._C._nn, then the aten overload itself."""
    import torch

    base = op.aten.split(".")[0]
    found = []
    for prefix, namespace in (("torch", torch), ("torch._C._nn", torch._C._nn)):
        fn = getattr(namespace, base, None)
        if callable(fn):
            found.append((f"{prefix}.{base}", fn, calls.torch_style))
    found.append(
        (
            f"torch.ops.aten.{op.aten}",
            aten_overload(op.aten),
            calls.aten_style,
        )
    )
    return found


def _composite_call(op: Op, values: dict, outputs: list):
    """A composite has no out= in PyTorch: its reference expression, then a
    copy into the output (what a PyTorch user would write)."""
    fn = _composite_function(op)
    (out,) = outputs

    def call(*args):
        return out.copy_(fn(*args))

    label = f"{op.reference} + out.copy_()"
    return calls.every_input(call, op, values), label


def reference_call(op: Op, values: dict, outputs: list, want: list, restore):
    """(the call timed as the reference, its label): the first candidate that
    runs and writes `want`. restore() resets mutated inputs and the seed."""
    if op.composite:
        call, label = _composite_call(op, values, outputs)
        restore()
        call()
        if not all(same(o, e) for o, e in zip(outputs, want)):
            raise RuntimeError(f"{label}: result differs from the reference")
        return call, label
    errors = []
    for label, fn, build in _candidates(op):
        call = build(fn, op, values, outputs)
        restore()
        try:
            call()
        except (TypeError, RuntimeError) as e:
            errors.append(f"{label}: {str(e).splitlines()[0]}")
            continue
        if all(same(o, e) for o, e in zip(outputs, want)):
            return call, label
        errors.append(f"{label}: result differs from the functional op")
    raise RuntimeError("no reference call works: " + "; ".join(errors))


def sentinel_fill(t) -> None:
    """Fill an output so that a call that writes nothing is caught: NaN for
    floating tensors, the dtype's largest value for integers, True for bool."""
    import torch

    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def same(got, want) -> bool:
    import torch

    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if got.dtype == torch.bool or not got.is_floating_point():
        return bool(torch.equal(got, want))
    tol = 1e-4 if got.dtype in (torch.float32, torch.float64) else 2e-2
    return bool(
        torch.allclose(got.float(), want.float(), rtol=tol, atol=tol, equal_nan=True)
    )
