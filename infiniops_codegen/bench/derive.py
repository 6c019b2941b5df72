"""Configurations for ops the table (configs.py) does not cover, derived from
the correctness harness's samples (infiniops_codegen/harness/samples.py).

The harness proposes candidate argument plans per op (shapes around [4, 6],
index and mask tensors, attribute values by name, the spec's hints); the
first plan for which PyTorch's functional op and its out= overload both run
is the op's configuration, in each dtype of DTYPES that works (the first only
with --quick; integer and bool dtypes when no floating one does). These are
small tensors: they join the tiny family, labelled "sample".
"""

from __future__ import annotations

from ..harness import samples as S
from ..model.manifest import Op
from . import calls, reference
from .cases import CASE_DTYPE, Config, TensorArg, key_numel, materialise

DTYPES = ("float32", "bfloat16", "float16")
OTHER_DTYPES = ("int64", "bool", "float64")

_FILL = {S.DATA: "randn", S.INDEX: "index", S.MASK: "mask", S.SPD: "spd"}


class NotDerivable(Exception):
    """No sample plan of the harness works for this op."""


def _arg(value):
    if isinstance(value, S.TensorSpec):
        if value.role == S.LITERAL:
            return TensorArg(value.shape, "literal", "float32", 1, value.literal)
        fill = _FILL[value.role]
        dtype = {"index": "int64", "mask": "bool"}.get(fill)
        return TensorArg(value.shape, fill, dtype, S.INDEX_BOUND)
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, S.TensorSpec) for v in value)
    ):
        return [_arg(v) for v in value]
    if value == S.CASE_DTYPE:
        return CASE_DTYPE
    return value


def _with_dtype(value, dtype: str):
    if isinstance(value, TensorArg):
        if value.dtype is None or value.fill == "literal":
            return TensorArg(value.shape, value.fill, dtype, value.high, value.literal)
        return value
    if isinstance(value, list):
        return [_with_dtype(v, dtype) for v in value]
    return value


def _config(op: Op, plan: dict, dtype: str) -> Config:
    args = {k: _with_dtype(_arg(v), dtype) for k, v in plan.items()}
    probe = Config("", "tiny", op.name, "sample", 0, dtype, args, "samples")
    size = key_numel(probe, op)
    return Config(
        f"tiny/{op.name}[sample]/{size}/{dtype}",
        "tiny",
        op.name,
        "sample",
        size,
        dtype,
        args,
        "samples",
    )


def _works(config: Config, op: Op) -> str | None:
    """None when PyTorch runs the configuration (functional and out=), else
    why not."""
    import torch

    try:
        values = materialise(config)
        want = reference.expected(op, values)
        outputs = [torch.empty_like(w) for w in want]
        if not outputs or not all(isinstance(w, torch.Tensor) for w in want):
            return "its results are not tensors"
        if not op.composite:
            calls.aten_style(reference.aten_overload(op.aten), op, values, outputs)()
    except Exception as e:  # PyTorch rejects the sample: try the next one
        text = str(e).strip().splitlines()
        return f"{type(e).__name__}: {text[0] if text else ''}"
    return None


def derive(op: Op, quick: bool) -> list[Config]:
    """The op's configurations from the harness's samples; NotDerivable when
    no candidate plan works in any dtype."""
    reasons = []
    for plan in S.candidate_plans(op):
        for group in (DTYPES, OTHER_DTYPES):
            found = []
            for dtype in group:
                config = _config(op, plan, dtype)
                why = _works(config, op)
                if why is None:
                    found.append(config)
                    if quick:
                        return found
                else:
                    reasons.append(f"{dtype}: {why}")
            if found:
                return found
    last = reasons[-1] if reasons else "the harness has no sample plan"
    raise NotDerivable(f"{op.name}: no sample of the harness runs in PyTorch ({last})")
