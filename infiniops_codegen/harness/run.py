"""Running one op × dtype through every layout variant, on both tensor paths,
against PyTorch's out= overload and its functional form."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .samples import CASE_DTYPE, DATA, INDEX, INDEX_BOUND, MASK, SPD, OpEntry
from .samples import LITERAL, TensorSpec
from .samples import candidate_plans, hinted_plans, map_tensors, reshaped

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}
VARIANTS = (
    "contiguous",
    "transposed",
    "sliced",
    "expanded",
    "zero_dim",
    "zero_size",
    "broadcast",
)
# reuse: handle reuse, direct kernel mode (the default); from_blob: no handle;
# dispatcher: handle reuse with direct mode off.
PATHS = ("reuse", "from_blob", "dispatcher")


class NotApplicable(Exception):
    """The layout variant does not exist for this op (a unary op has no
    broadcast operand, ...): counted as skipped, never as checked."""


# Why a layout variant was not checked (Outcome.skipped, the summary).
SKIPPED_BY_FILE = "listed in tests/skips.yaml"
REFERENCE_REJECTS = "PyTorch's reference raises on this layout variant"
NOT_APPLICABLE = "the layout variant does not apply"


@dataclass
class Outcome:
    checked: list[str] = field(default_factory=list)  # "sample i variant/path"
    failures: list[str] = field(default_factory=list)
    # (label, reason): variants not checked; reason is one of SKIPPED_BY_FILE,
    # REFERENCE_REJECTS, NOT_APPLICABLE followed by ": detail" where known.
    skipped: list[tuple[str, str]] = field(default_factory=list)


# -- materialising ----------------------------------------------------------


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
        wide = torch.empty(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
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
    return map_tensors(plan, lambda spec: _layout(_values(spec, dtype, gen), variant))


# -- calling ------------------------------------------------------------------


def _overload(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _as_list(result) -> list:
    if isinstance(result, torch.Tensor):
        return [result]
    return list(result)


# Random ops draw from PyTorch's default generator, which our call shares:
# seeding it the same way before every call makes their results comparable.
RANDOM_SEED = 20261202


def _reseed(op: OpEntry) -> None:
    if "nondeterministic_seeded" in op.tags:
        torch.manual_seed(RANDOM_SEED)


def _copy(value):
    """A copy with the same layout (for inputs an op mutates)."""
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(
            value.size(), value.stride(), dtype=value.dtype, device=value.device
        ).copy_(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    return value


def fresh(op: OpEntry, args: dict) -> dict:
    """args with private copies of the inputs the op mutates, so that every
    call starts from the same state."""
    if not op.mutable_inputs:
        return args
    return {k: _copy(v) if k in op.mutable_inputs else v for k, v in args.items()}


def expected(op: OpEntry, args: dict) -> list:
    """The functional form (or a composite's reference expression): the
    outputs only (see expected_with_states)."""
    return expected_with_states(op, args)[0]


def expected_with_states(op: OpEntry, args: dict) -> tuple[list, dict]:
    """(outputs, new states) of the functional form. For an op that mutates
    inputs the functional form (`_fused_adam`, `..._functional`) returns the
    outputs, then the new state of each mutated input in schema order; the
    states are {} when its results do not have that shape."""
    _reseed(op)
    if op.composite:
        result = eval(op.reference, {"torch": torch}, dict(args))  # noqa: S307
        return _as_list(result), {}
    if op.functional is None:
        return [], {}
    kwargs = {a.name: args[a.name] for a in op.inputs}
    kwargs.update(_hidden_generators(op))
    result = _overload(op.functional)(**kwargs)
    if op.mutable_inputs:
        results, count = _as_list(result), len(op.out_args)
        states = {}
        if len(results) == count + len(op.mutable_inputs):
            states = dict(zip(op.mutable_inputs, results[count:]))
        return results[:count], states
    if len(op.out_args) == 1 and op.out_args[0].kind == "tensor_list":
        return [list(result)], {}  # one out= argument that is a list of tensors
    return _as_list(result), {}


def fill_sentinel(out: torch.Tensor, wanted: torch.Tensor) -> torch.Tensor:
    """Fill an output with values no correct call leaves there: NaN for
    floating dtypes, the most negative integer for integer dtypes, the
    negation of the reference for bool. Where the reference itself holds that
    value (a NaN, the minimum) the sentinel is the largest finite value or
    integer instead, so every element of a wrapper that writes nothing differs
    from the reference."""
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
        out.fill_(float("nan"))
        if same:
            out.masked_fill_(torch.isnan(wanted), torch.finfo(out.dtype).max)
        return out
    info = torch.iinfo(out.dtype)
    out.fill_(info.min)
    if same:
        out.masked_fill_(wanted == info.min, info.max)
    return out


def sentinel_outs(results: list, non_contiguous: bool) -> list:
    """Outputs shaped like the reference results, filled by fill_sentinel
    (transposed in memory when non_contiguous)."""
    outs = []
    for r in results:
        if isinstance(r, (list, tuple)):
            outs.append([fill_sentinel(torch.empty_like(x), x) for x in r])
        elif non_contiguous and r.dim() >= 2:
            out = torch.empty_like(r.transpose(-1, -2)).transpose(-1, -2)
            outs.append(fill_sentinel(out, r))
        else:
            outs.append(fill_sentinel(torch.empty_like(r), r))
    return outs


def _hidden_generators(op: OpEntry) -> dict:
    """`Generator?` arguments without a default (rand.generator_out, ...) are
    hidden from our API and passed as None; PyTorch needs them spelled out."""
    return {
        a.name: None
        for a in op.args
        if a.role == "hidden"
        and not a.has_default
        and a.aten_type.startswith("Generator")
    }


def reference_out(op: OpEntry, args: dict, outs: list) -> list:
    """PyTorch's own out= overload, called from Python (composites have none:
    their reference expression stands for both forms)."""
    if op.composite:
        return expected(op, args)
    kwargs = {a.name: args[a.name] for a in op.inputs}
    kwargs.update(_hidden_generators(op))
    kwargs.update({a.name: o for a, o in zip(op.out_args, outs)})
    _reseed(op)
    _overload(op.aten)(**kwargs)
    return outs


def ours(module, op: OpEntry, args: dict, outs: list):
    positional = [args[a.name] for a in op.inputs if not a.keyword_only]
    kwargs = {a.py_name: args[a.name] for a in op.inputs if a.keyword_only}
    kwargs.update({a.py_name: o for a, o in zip(op.out_args, outs)})
    _reseed(op)
    return getattr(module, op.name)(*positional, **kwargs)


def tolerance(dtype: torch.dtype) -> dict:
    if dtype in (torch.float16,):
        return {"rtol": 2e-3, "atol": 2e-3}
    if dtype == torch.bfloat16:
        return {"rtol": 2e-2, "atol": 2e-2}
    if dtype == torch.float32:
        return {"rtol": 1e-5, "atol": 1e-5}
    if dtype == torch.float64:
        return {"rtol": 1e-7, "atol": 1e-7}
    return {"rtol": 0, "atol": 0}  # integers, bool and indices: exact


def _close(actual, wanted, dtype) -> None:
    if isinstance(wanted, (list, tuple)):
        assert len(actual) == len(wanted), "output list length differs"
        for a, w in zip(actual, wanted):
            _close(a, w, dtype)
        return
    tol = tolerance(wanted.dtype if wanted.is_floating_point() else torch.int64)
    torch.testing.assert_close(actual, wanted, equal_nan=True, **tol)


# -- one op and dtype --------------------------------------------------------


def find_plan(op: OpEntry, dtype: torch.dtype) -> dict | None:
    """The first candidate plan PyTorch accepts for this dtype, with every
    combination of its hinted values."""
    for plan in candidate_plans(op):
        try:
            for sample in hinted_plans(op, plan):
                args = materialize(sample, dtype, "contiguous", seed=0)
                results = expected(op, fresh(op, args))
                if results:
                    reference_out(op, fresh(op, args), sentinel_outs(results, False))
            return plan
        except Exception:  # noqa: BLE001 - any rejection means "try the next"
            continue
    return None


def check(
    module, op: OpEntry, dtype_name: str, plan: dict, skip_variants=()
) -> Outcome:
    """Every variant × path of one op and dtype; failures are collected."""
    dtype = DTYPES[dtype_name]
    outcome = Outcome()
    for sample_index, sample in enumerate(hinted_plans(op, plan)):
        for variant in VARIANTS:
            if variant in skip_variants:
                label = f"sample {sample_index} {variant}"
                outcome.skipped.append((label, SKIPPED_BY_FILE))
                continue
            _check_variant(module, op, dtype, sample, sample_index, variant, outcome)
    return outcome


def _check_variant(module, op, dtype, plan, sample_index, variant, outcome):
    label = f"sample {sample_index} {variant}"
    try:
        args = materialize(plan, dtype, variant, seed=sample_index + 1)
        wanted, states = expected_with_states(op, fresh(op, args))
        if not wanted:  # no functional form: PyTorch's out= result is the reference
            wanted = reference_out(op, fresh(op, args), _guess_outs(op, args))
        ref_args = fresh(op, args)
        ref = reference_out(op, ref_args, sentinel_outs(wanted, False))
    except NotApplicable as e:
        outcome.skipped.append((label, f"{NOT_APPLICABLE}: {e}"))
        return
    except Exception as e:  # noqa: BLE001 - PyTorch rejects this variant
        if variant == "contiguous":
            outcome.failures.append(
                f"{label}: the reference rejects the base sample: "
                f"{type(e).__name__}: {str(e)[:200]}"
            )
        else:
            outcome.skipped.append((label, REFERENCE_REJECTS))
        return
    for path in PATHS:
        outs = sentinel_outs(wanted, variant == "transposed")
        previous = module.handle_reuse(), module.direct_mode()
        module.set_handle_reuse(path != "from_blob")
        module.set_direct_mode(path != "dispatcher")
        try:
            our_args = fresh(op, args)
            returned = ours(module, op, our_args, outs)
            got = outs
            _close(got, ref, dtype)
            _close(got, wanted, dtype)
            for name in op.mutable_inputs:  # the new states, as PyTorch's
                try:
                    _close(our_args[name], ref_args[name], dtype)
                    if name in states:
                        _close(our_args[name], states[name], dtype)
                except AssertionError as e:
                    raise AssertionError(f"mutated input '{name}': {e}") from None
            single = outs[0] if len(outs) == 1 else tuple(outs)
            if len(outs) == 1:
                assert returned is single, "the call did not return its out"
            outcome.checked.append(f"{label}/{path}")
        except Exception as e:  # noqa: BLE001 - reported with the case
            outcome.failures.append(f"{label}/{path}: {type(e).__name__}: {e}")
        finally:
            module.set_handle_reuse(previous[0])
            module.set_direct_mode(previous[1])


def _guess_outs(op: OpEntry, args: dict) -> list:
    like = next(v for v in args.values() if isinstance(v, torch.Tensor))
    return [torch.empty(0, dtype=like.dtype) for _ in op.out_args]
