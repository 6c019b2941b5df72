"""Running one op × dtype through every layout variant, on both tensor paths,
against PyTorch's out= overload and its functional form."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import torch

from . import values
from ..schema.arg_kinds import Tensors
from ..model.manifest import Op
from .samples import candidate_plans, hinted_plans

# the tensors of a case (re-exported: run.materialize, run.sentinel_outs, ...)
from .values import (
    NotApplicable,
    fill_sentinel,
    materialize,
    sentinel_outs,
)  # noqa: F401

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
# lane: the default switches at one intra-op thread, where every op with
# single tensors takes the lane (cpp/torch/lane.h) for these small samples;
# reuse: handle reuse and direct kernel mode with the lane off (the general
# path); from_blob: no handle; dispatcher: direct mode off (the lane on, at
# the default thread count).
PATHS = ("lane", "reuse", "from_blob", "dispatcher")
LANE_THREADS = 1  # the lane path's intra-op threads (its reference's too)


@contextmanager
def intra_op_threads(count: int):
    """torch's intra-op thread count for the block; restored after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


# The from_blob runs' at::Tensor wrappers (the calling thread's wrapper
# pool, aten_convert.h), summed over the runs: re-bound from earlier calls,
# made fresh, and given back but not kept (ATen kept or resized them, ...).
FROM_BLOB_WRAPPERS = {"rebound": 0, "fresh": 0, "dropped": 0}


@contextmanager
def path_switches(module, path: str):
    """The module's runtime switches (and torch's intra-op threads) of one
    of PATHS for the duration of the block; restored after."""
    previous = module.handle_reuse(), module.direct_mode(), module.lane()
    threads = torch.get_num_threads()
    module.set_handle_reuse(path != "from_blob")
    module.set_direct_mode(path != "dispatcher")
    module.set_lane(path != "reuse")
    if path == "lane":
        torch.set_num_threads(LANE_THREADS)
    pool = module._debug_wrapper_pool(False) if path == "from_blob" else None
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        module.set_handle_reuse(previous[0])
        module.set_direct_mode(previous[1])
        module.set_lane(previous[2])
        if pool is not None:
            after = module._debug_wrapper_pool(False)
            for key in FROM_BLOB_WRAPPERS:
                FROM_BLOB_WRAPPERS[key] += after[key] - pool[key]


# A from_blob call checked for its documented RuntimeError: PyTorch's own
# out= call resized or restrided an output, which a from_blob output cannot
# follow (docs/architecture.md, "Output check"). Counted in Outcome.notes.
FROM_BLOB_RESIZE = (
    "from_blob path checked for its documented RuntimeError"
    " (ATen resizes or restrides this output)"
)
# Why a layout variant was not checked (Outcome.skipped, the summary).
SKIPPED_BY_FILE = "listed in the skip file"
SKIPPED_BY_TOOL = "listed in the tool's list (PyTorch's or the harness's limits)"
SKIPPED_BY = {"project": SKIPPED_BY_FILE, "tool": SKIPPED_BY_TOOL}
REFERENCE_REJECTS = "PyTorch's reference raises on this layout variant"
NOT_APPLICABLE = "the layout variant does not apply"
# A variant that a skip list (`reference: out`, the tool's or the project's)
# compares with PyTorch's out= overload only, outputs and mutated inputs:
# the functional form is no reference there. Counted in Outcome.notes.
OUT_ONLY = (
    "compared with PyTorch's out= overload only"
    " (a skip list: the functional form is no reference there)"
)


@dataclass
class Outcome:
    checked: list[str] = field(default_factory=list)  # "sample i variant/path"
    failures: list[str] = field(default_factory=list)
    # (label, reason): variants not checked; reason is one of SKIPPED_BY_FILE,
    # REFERENCE_REJECTS, NOT_APPLICABLE followed by ": detail" where known.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # (label, reason): checks narrowed on checked variants (OUT_ONLY,
    # FROM_BLOB_RESIZE).
    notes: list[tuple[str, str]] = field(default_factory=list)


# Ops whose result values PyTorch does not define: uninitialised memory
# (empty*, new_empty*) and random draws (the schema's nondeterministic_seeded
# tag: a native kernel, another device or another generator draws other
# values). They are compared by what is defined: shape, dtype, device, the
# out's strides, every element written (no sentinel left where PyTorch's own
# call left none) and, for the common random ops, the range of the values.
# Counted in Outcome.notes.
VALUES_UNDEFINED = (
    "values undefined by PyTorch (uninitialised or random): compared by shape,"
    " dtype, device, strides and range, not by value"
)
UNINITIALISED = ("empty", "new_empty")


def values_undefined(op: Op) -> bool:
    base = (op.aten or op.name).split(".")[0]
    return "nondeterministic_seeded" in op.tags or base.startswith(UNINITIALISED)


def _defined(op: Op, actual, wanted, what: str, strides: bool = False) -> None:
    """What PyTorch defines of a result whose values it does not define."""
    if isinstance(wanted, (list, tuple)):
        assert len(actual) == len(wanted), f"output list length differs from {what}"
        for a, w in zip(actual, wanted):
            _defined(op, a, w, what, strides)
        return
    got = (tuple(actual.shape), actual.dtype, actual.device)
    want = (tuple(wanted.shape), wanted.dtype, wanted.device)
    assert got == want, f"(shape, dtype, device) {got} differs from {what}'s {want}"
    if strides:
        assert (
            actual.stride() == wanted.stride()
        ), f"strides {actual.stride()} differ from {what}'s {wanted.stride()}"
    base = (op.aten or op.name).split(".")[0]
    if base.startswith(UNINITIALISED) or actual.numel() == 0:
        return
    if actual.is_floating_point():
        nan = int(torch.isnan(actual).sum())
        assert nan <= int(torch.isnan(wanted).sum()), (
            f"{nan} elements are NaN (the sentinel: left unwritten?) where {what} "
            "has fewer"
        )
    if base in ("rand", "rand_like") and actual.is_floating_point():
        low, high = float(actual.min()), float(actual.max())
        assert 0 <= low and high <= 1, f"values in [{low}, {high}], not in [0, 1)"
    if base.startswith("bernoulli") and not actual.is_complex():
        assert bool(((actual == 0) | (actual == 1)).all()), "values not in {0, 1}"


# -- calling ------------------------------------------------------------------


class BrokenReference(Exception):
    """A composite's reference expression that cannot run on any sample: a
    name it reads is not in scope, or torch has no such attribute. The spec
    is wrong, not the sample, so this is no 'PyTorch rejects the sample'."""

    def __init__(self, op: Op, error: Exception):
        where = op.source + (f":{op.reference_line}" if op.reference_line else "")
        super().__init__(
            f"{where}: the reference of {op.name} raises {type(error).__name__}: "
            f"{error} (reference: {op.reference})"
        )


def _broken(error: Exception) -> bool:
    """Whether an error of a reference expression is the expression's own:
    a NameError or SyntaxError, or a name torch (or a submodule) lacks."""
    if isinstance(error, (NameError, SyntaxError)):
        return True
    owner = getattr(error, "obj", None)
    return isinstance(error, AttributeError) and (
        owner is torch or getattr(owner, "__name__", "").startswith("torch.")
    )


def _evaluate_reference(op: Op, args: dict):
    try:
        return eval(op.reference, {"torch": torch}, dict(args))  # noqa: S307
    except Exception as e:  # noqa: BLE001 - sorted: the spec's or the sample's
        if _broken(e):
            raise BrokenReference(op, e) from None
        raise


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


def _reseed(op: Op) -> None:
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


def fresh(op: Op, args: dict) -> dict:
    """args with private copies of the inputs the op mutates, so that every
    call starts from the same state."""
    if not op.mutable_inputs:
        return args
    return {k: _copy(v) if k in op.mutable_inputs else v for k, v in args.items()}


def expected(op: Op, args: dict) -> list:
    """The functional form (or a composite's reference expression): the
    outputs only (see expected_with_states)."""
    return expected_with_states(op, args)[0]


def expected_with_states(op: Op, args: dict) -> tuple[list, dict]:
    """(outputs, new states) of the functional form. For an op that mutates
    inputs the functional form (`_fused_adam`, `..._functional`) returns the
    outputs, then the new state of each mutated input in schema order; the
    states are {} when its results do not have that shape."""
    _reseed(op)
    # Factory functions (randn, arange, ...) make their results on the
    # harness's device; PyTorch's own call only, never around the library's.
    on_device = torch.device(values.DEVICE) if values.DEVICE != "cpu" else nullcontext()
    with on_device:
        if op.composite:
            return _as_list(_evaluate_reference(op, args)), {}
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
    if len(op.out_args) == 1 and op.out_args[0].kind.tensors is Tensors.LIST:
        return [list(result)], {}  # one out= argument that is a list of tensors
    return _as_list(result), {}


def _hidden_generators(op: Op) -> dict:
    """`Generator?` arguments without a default (rand.generator_out, ...) are
    hidden from our API and passed as None; PyTorch needs them spelled out."""
    return {
        a.name: None
        for a in op.arguments
        if a.role == "hidden"
        and not a.has_default
        and a.aten_type.startswith("Generator")
    }


def reference_out(op: Op, args: dict, outs: list) -> list:
    """PyTorch's own out= overload, called from Python (composites have none:
    their reference expression stands for both forms)."""
    if op.composite:
        return expected(op, args)
    _torch_out_call(op, args, outs)
    return outs


def _torch_out_call(op: Op, args: dict, outs: list):
    """torch.ops.aten.<op>.<out overload>(...): what it returns."""
    kwargs = {a.name: args[a.name] for a in op.inputs}
    kwargs.update(_hidden_generators(op))
    kwargs.update({a.name: o for a, o in zip(op.out_args, outs)})
    _reseed(op)
    return _overload(op.aten)(**kwargs)


def returned_outs(result, outs: list):
    """What a call returned, each tensor in it named by its place among the
    call's outs (`outs[i]`, `outs[i][j]` of a Tensor[] out=): None (schemas
    that return nothing, `-> ()`), "outs[0]", or a tuple of such. Two calls
    return alike when these are equal."""
    if result is None:
        return None
    if isinstance(result, (list, tuple)):  # torch.return_types.* are tuples
        return tuple(returned_outs(r, outs) for r in result)
    for i, out in enumerate(outs):
        if result is out:
            return f"outs[{i}]"
        if isinstance(out, (list, tuple)):
            for j, item in enumerate(out):
                if result is item:
                    return f"outs[{i}][{j}]"
    if isinstance(result, torch.Tensor):
        return "a tensor that is none of its outs"
    return type(result).__name__


def reference_returns(op: Op, args: dict, outs: list):
    """PyTorch's out= call on outs, and what it returns as returned_outs
    gives it; a composite's call returns its out (a tuple of several)."""
    if op.composite:
        result = reference_out(op, args, outs)
        return result, returned_outs(outs[0] if len(outs) == 1 else tuple(outs), outs)
    return outs, returned_outs(_torch_out_call(op, args, outs), outs)


def ours(module, op: Op, args: dict, outs: list):
    positional = [args[a.name] for a in op.inputs if not a.keyword_only]
    kwargs = {a.python_name: args[a.name] for a in op.inputs if a.keyword_only}
    kwargs.update({a.python_name: o for a, o in zip(op.out_args, outs)})
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


def _labelled(actual, wanted, dtype, what: str) -> None:
    try:
        _close(actual, wanted, dtype)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


# -- one op and dtype --------------------------------------------------------


def find_plan(op: Op, dtype: torch.dtype) -> dict | None:
    """The first candidate plan PyTorch accepts for this dtype, with every
    combination of its hinted values. Only PyTorch's rejections move on to the
    next candidate: an error of the harness's own (making samples or
    sentinels) propagates, so it cannot pass for "no sample"."""
    for plan in candidate_plans(op):
        if all(_accepted(op, s, dtype) for s in hinted_plans(op, plan)):
            return plan
    return None


def _accepted(op: Op, sample: dict, dtype: torch.dtype) -> bool:
    args = materialize(sample, dtype, "contiguous", seed=0)
    try:
        results = expected(op, fresh(op, args))
    except BrokenReference:
        raise  # the spec's error, whatever the sample
    except Exception:  # noqa: BLE001 - PyTorch rejects the sample
        return False
    if results:
        outs = sentinel_outs(results, False)
    else:  # no functional form: PyTorch's out= overload is the only judge
        outs = _guess_outs(op, args)
    try:
        reference_out(op, fresh(op, args), outs)
    except Exception:  # noqa: BLE001
        return False
    return True


def exercises_dtype(op: Op, plan: dict, dtype: torch.dtype) -> bool:
    """Whether any tensor of the case's first contiguous sample (an input, or
    an output of the reference) has the case's dtype. Where none has (a
    factory op's output dtype, hinted literals with fixed dtypes), the case
    only repeats another dtype's and is not counted as one."""
    args = materialize(hinted_plans(op, plan)[0], dtype, "contiguous", seed=0)
    results = expected(op, fresh(op, args))
    if not results:
        results = reference_out(op, fresh(op, args), _guess_outs(op, args))
    return any(t.dtype == dtype for t in _flat(list(args.values()) + results))


def check(
    module, op: Op, dtype_name: str, plan: dict, skip_variants=(), out_only=()
) -> Outcome:
    """Every variant × path of one op and dtype; failures are collected.
    skip_variants are not run (a mapping gives each the list that skips
    it, a key of SKIPPED_BY; else the project's), out_only variants are compared with
    PyTorch's out= overload only (both from the skip lists)."""
    dtype = DTYPES[dtype_name]
    outcome = Outcome()
    if not isinstance(skip_variants, dict):
        skip_variants = dict.fromkeys(skip_variants, "project")
    # skips.skipped_variants gives each variant its list: "tool" or "project"
    skip_variants = {v: SKIPPED_BY.get(s, s) for v, s in skip_variants.items()}
    for sample_index, sample in enumerate(hinted_plans(op, plan)):
        for variant in VARIANTS:
            if variant in skip_variants:
                label = f"sample {sample_index} {variant}"
                outcome.skipped.append((label, skip_variants[variant]))
                continue
            _check_variant(
                module, op, dtype, sample, sample_index, variant, outcome, out_only
            )
    return outcome


@dataclass
class _Reference:
    """PyTorch's side of one layout variant: the functional form's outputs
    and new states, and PyTorch's out= call on its own copies."""

    wanted: list
    states: dict
    args: dict  # PyTorch's out= call's arguments (mutated inputs written)
    outs: list  # what its out= call wrote (a composite's reference result)
    restrided: bool  # ATen resized or restrided an output
    returns: object  # what its out= call returned (returned_outs)


def _reference(op: Op, args: dict, variant: str) -> _Reference:
    wanted, states = expected_with_states(op, fresh(op, args))
    if not wanted:  # no functional form: PyTorch's out= result is the reference
        wanted = reference_out(op, fresh(op, args), _guess_outs(op, args))
    if not _laid_out(args, wanted, variant):
        raise NotApplicable("no tensor of the sample has a dimension to lay out")
    ref_args = fresh(op, args)
    # PyTorch's out= call gets outputs of the same layout as ours
    ref_outs = sentinel_outs(wanted, variant == "transposed")
    before = _geometry(ref_outs)
    ref, returns = reference_returns(op, ref_args, ref_outs)
    restrided = _geometry(ref_outs) != before
    return _Reference(wanted, states, ref_args, ref, restrided, returns)


def _reference_on(path: str, base: _Reference, op: Op, args: dict, variant: str):
    """The reference of one path, computed as that path computes: the lane
    runs at LANE_THREADS intra-op threads, and some ATen kernels round
    differently at another thread count (MKL's FFT applies the 1/n of
    norm="backward" inverse transforms in another way at one thread than at
    several: torch.fft.ifft alone differs by one float32 ulp between
    torch.set_num_threads(1) and (2)). Comparing such a path with a
    reference made at other thread counts compares two thread counts, not
    ours with PyTorch."""
    if path != "lane" or torch.get_num_threads() == LANE_THREADS:
        return base
    with intra_op_threads(LANE_THREADS):
        return _reference(op, args, variant)


def _check_variant(
    module, op, dtype, plan, sample_index, variant, outcome, out_only=()
):
    label = f"sample {sample_index} {variant}"
    try:
        args = materialize(plan, dtype, variant, seed=sample_index + 1)
        base = _reference(op, args, variant)
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
    functional = variant not in out_only
    undefined = values_undefined(op)
    if not functional:
        outcome.notes.append((label, OUT_ONLY))
    for path in PATHS:
        outs = sentinel_outs(base.wanted, variant == "transposed")
        try:
            reference = _reference_on(path, base, op, args, variant)
            wanted, states, ref = reference.wanted, reference.states, reference.outs
            with path_switches(module, path):
                our_args = fresh(op, args)
                if path == "from_blob" and reference.restrided:
                    _expect_from_blob_error(module, op, our_args, outs)
                    outcome.checked.append(f"{label}/{path}")
                    outcome.notes.append((f"{label}/{path}", FROM_BLOB_RESIZE))
                    continue
                returned = ours(module, op, our_args, outs)
                got = outs
                if undefined:
                    _defined(op, got, ref, "PyTorch's out= overload", strides=True)
                    if functional:
                        _defined(op, got, wanted, "the functional form")
                    outcome.notes.append((f"{label}/{path}", VALUES_UNDEFINED))
                else:
                    _labelled(got, ref, dtype, "differs from PyTorch's out= overload")
                if functional and not undefined:
                    _labelled(got, wanted, dtype, "differs from the functional form")
                for name in op.mutable_inputs if not undefined else ():
                    what = f"mutated input '{name}' differs from"
                    _labelled(
                        our_args[name],
                        reference.args[name],
                        dtype,
                        what + " the out= call",
                    )
                    if functional and name in states:
                        _labelled(
                            our_args[name],
                            states[name],
                            dtype,
                            what + " the functional form",
                        )
                # What the call returns, as PyTorch's out= call returns it:
                # its outs themselves, or None where the schema returns
                # nothing (`-> ()`: _foreach_*, split_copy, _fused_adam).
                got_returns = returned_outs(returned, outs)
                assert got_returns == reference.returns, (
                    f"the call returned {got_returns!r} where PyTorch's out= "
                    f"call returns {reference.returns!r}"
                )
                outcome.checked.append(f"{label}/{path}")
        except Exception as e:  # noqa: BLE001 - reported with the case
            outcome.failures.append(f"{label}/{path}: {type(e).__name__}: {e}")


def _flat(values) -> list:
    flat = []
    for v in values:
        if isinstance(v, (list, tuple)):
            flat += _flat(v)
        elif isinstance(v, torch.Tensor):
            flat.append(v)
    return flat


def _laid_out(args: dict, wanted: list, variant: str) -> bool:
    """Whether a layout variant gave any input (or, transposed, any output)
    another layout than the contiguous one: else it would only repeat the
    contiguous variant, and is counted as not applicable instead."""
    if variant not in ("transposed", "sliced", "expanded"):
        return True
    if any(not t.is_contiguous() for t in _flat(args.values())):
        return True
    outs = _flat(sentinel_outs(wanted, True)) if variant == "transposed" else []
    return any(not t.is_contiguous() for t in outs)


def _geometry(outs) -> list:
    return [
        _geometry(o) if isinstance(o, (list, tuple)) else (o.shape, o.stride())
        for o in outs
    ]


def _expect_from_blob_error(module, op, args, outs) -> None:
    """ATen resizes or restrides an output of this call (PyTorch's out= call
    did): a from_blob output cannot follow, and must raise RuntimeError
    naming the from_blob path rather than leave the caller's tensor stale."""
    try:
        ours(module, op, args, outs)
    except RuntimeError as e:
        if "from_blob" not in str(e):
            raise
        return
    raise AssertionError(
        "ATen resizes or restrides an output of this call, which the from_blob "
        "path cannot follow, but the call did not raise"
    )


def _guess_outs(op: Op, args: dict) -> list:
    like = next((v for v in args.values() if isinstance(v, torch.Tensor)), None)
    dtype = like.dtype if like is not None else torch.get_default_dtype()
    device = like.device if like is not None else values.DEVICE
    return [torch.empty(0, dtype=dtype, device=device) for _ in op.out_args]
