"""The tensors of one case: sample values in a layout variant, and outputs
filled with sentinels (values no correct call leaves there)."""

from __future__ import annotations

import torch

from .samples import CASE_DTYPE, DATA, INDEX, INDEX_BOUND, MASK, SPD
from .samples import LITERAL, TensorSpec
from .samples import map_tensors, reshaped

# The torch device samples are made on (the harness command's --devices; its
# worker sets it). Never torch.set_default_device: that is a
# TorchFunctionMode, and under a mode every call of the library goes to the
# mode, as PyTorch's own calls do, so nothing of the library would be tested.
DEVICE = "cpu"


class NotApplicable(Exception):
    """The layout variant does not exist for this op (a unary op has no
    broadcast operand, ...): counted as skipped, never as checked."""


def _values(spec: TensorSpec, dtype: torch.dtype, gen: torch.Generator):
    shape = spec.shape
    if spec.role == LITERAL:
        return _literal_values(spec.literal, dtype)
    if spec.role == INDEX:
        return torch.randint(0, INDEX_BOUND, shape, generator=gen, dtype=torch.int64)
    if spec.role == MASK:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if spec.role == SPD and dtype.is_floating_point:
        a = torch.randn(shape, generator=gen, dtype=torch.float64)
        eye = torch.eye(shape[-1], dtype=torch.float64)
        return (a @ a.mT / shape[-1] + eye).to(dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=torch.float32).to(dtype)
    values = torch.randint(-5, 6, shape, generator=gen, dtype=torch.int64)
    return torch.where(values == 0, torch.ones_like(values), values).to(dtype)


def _literal_values(literal, dtype: torch.dtype) -> torch.Tensor:
    """A `tensors` hint: ints stay int64 and bools bool, floats take the
    case's floating dtype (float32 for an integer case); {value, dtype} fixes it."""
    if isinstance(literal, dict):
        return torch.tensor(literal["value"], dtype=getattr(torch, literal["dtype"]))
    t = torch.tensor(literal)
    if t.is_floating_point():
        return t.to(dtype if dtype.is_floating_point else torch.float32)
    return t


def _layout(t: torch.Tensor, variant: str) -> torch.Tensor:
    """Same values, another memory layout."""
    if variant == "transposed" and t.dim() >= 2:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if variant == "sliced" and t.dim() >= 1:
        wide = torch.empty(
            *t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device
        )
        view = wide[..., ::2]
        view.copy_(t)
        return view
    if variant == "expanded" and t.dim() >= 1 and t.shape[0] > 1:
        return t[:1].expand_as(t)  # stride 0; the values of row 0
    return t


def _variant_plan(plan: dict, variant: str) -> dict:
    if variant == "zero_dim":
        return reshaped(plan, lambda s: () if s.role == DATA else s.shape)
    if variant in ("zero_size", "broadcast") and any(
        isinstance(v, TensorSpec) and v.role == SPD for v in plan.values()
    ):
        raise NotApplicable("positive definite matrices keep their shape")
    if variant == "zero_size":
        return reshaped(plan, lambda s: (0,) + s.shape[1:] if s.shape else s.shape)
    if variant == "broadcast":
        data = [
            k for k, v in plan.items() if isinstance(v, TensorSpec) and v.role == DATA
        ]
        if len(data) < 2 or not plan[data[1]].shape:
            raise NotApplicable("not a binary op")
        last = plan[data[1]].shape[-1:]
        return {**plan, data[1]: TensorSpec(last, DATA)}
    return plan


def materialize(plan: dict, dtype: torch.dtype, variant: str, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    plan = _variant_plan(plan, variant)
    plan = {k: dtype if v == CASE_DTYPE else v for k, v in plan.items()}
    return map_tensors(
        plan, lambda spec: _layout(_values(spec, dtype, gen).to(DEVICE), variant)
    )


# -- outputs ----------------------------------------------------------------


def sentinel(dtype: torch.dtype) -> float | int | bool | complex:
    """The value no correct call leaves in an output of dtype (fill_sentinel's
    first choice): NaN for floating and complex dtypes, the most negative
    integer for signed integer dtypes, the largest for unsigned ones (their
    smallest, 0, is a value a kernel writes), True for bool."""
    if dtype == torch.bool:
        return True
    if dtype.is_complex:
        return complex(float("nan"), float("nan"))
    if dtype.is_floating_point:
        return float("nan")
    info = torch.iinfo(dtype)
    return info.min if info.min < 0 else info.max


def fill_sentinel(out: torch.Tensor, wanted: torch.Tensor) -> torch.Tensor:
    """Fill an output with values no correct call leaves there: NaN for
    floating dtypes, the most negative integer for signed integer dtypes (the
    largest for unsigned ones), the negation of the reference for bool. Where
    the reference itself holds that value (a NaN, the extreme) the sentinel is
    another extreme (the largest finite float, the other end of the integer
    range), so every element of a wrapper that writes nothing differs from the
    reference."""
    if out.numel() == 0:
        return out
    if out.dtype == torch.bool:
        if wanted.dtype == torch.bool and wanted.shape == out.shape:
            return out.copy_(wanted.logical_not())
        return out.fill_(True)
    if out.dtype.is_complex:
        return out.fill_(complex(float("nan"), float("nan")))
    same = wanted.dtype == out.dtype and wanted.shape == out.shape
    if out.dtype.is_floating_point:
        value, other = float("nan"), torch.finfo(out.dtype).max
        hit = torch.isnan(wanted) if same else None
    else:
        info = torch.iinfo(out.dtype)
        value, other = (info.min, info.max) if info.min < 0 else (info.max, info.min)
        hit = wanted == value if same else None
    out.fill_(value)
    if hit is not None and bool(hit.any()):
        # torch.where: masked_fill_ has no kernel for uint16/32/64
        other_t = torch.full_like(out, other)
        out.copy_(torch.where(hit, other_t, out))
    return out


def sentinel_outs(results: list, non_contiguous: bool) -> list:
    """Outputs shaped like the reference results, filled by fill_sentinel
    (transposed in memory when non_contiguous)."""
    outs = []
    for r in results:
        if isinstance(r, (list, tuple)):
            outs.append([fill_sentinel(torch.empty_like(x), x) for x in r])
        elif non_contiguous and r.dim() >= 2:
            # contiguous_format: empty_like would keep the transposed strides,
            # and the transpose back would be contiguous again
            out = torch.empty_like(
                r.transpose(-1, -2), memory_format=torch.contiguous_format
            ).transpose(-1, -2)
            outs.append(fill_sentinel(out, r))
        else:
            outs.append(fill_sentinel(torch.empty_like(r), r))
    return outs
