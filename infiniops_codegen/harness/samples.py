"""Argument samples for the correctness harness, derived from the manifest
(an op's `manifest.Op`: its arguments' kinds, names and the spec's hints).

A *plan* gives every argument a value: tensors as `TensorSpec` placeholders
(shape + what the values mean), everything else as a Python value. Candidate
plans come from small rules keyed on each argument kind's sample rule
(`arg_kinds.Sample`) and on argument names, overridden by
the `hints` of the op's spec; the PyTorch reference is the oracle that says
which candidate is valid.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

from ..schema.arg_kinds import Sample, Tensors
from ..model.manifest import Argument, Op

DATA, INDEX, MASK = "data", "index", "mask"
SPD = "spd"  # data, symmetric positive definite in the last two dims
CASE_DTYPE = "<case dtype>"  # a ScalarType argument takes the case's dtype
BASE_SHAPE = (4, 6)
INDEX_BOUND = 4  # index values lie in [0, 4): valid along every base dim


LITERAL = "literal"  # the values a `tensors` hint gives


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    role: str = DATA  # data (in the case's dtype), index (int64) or mask (bool)
    # LITERAL: a `tensors` hint, [values] or {value: [values], dtype: name}
    literal: object = field(default=None, compare=False)


# -- attribute values -----------------------------------------------------

_INT_BY_NAME = {
    "dim": 1,
    "dim0": 0,
    "dim1": 1,
    "k": 2,
    "diagonal": 0,
    "reduction": 1,
    "groups": 1,
    "split_size": 2,
    "chunks": 2,
    "start": 0,
    "length": 2,
    "N": 2,
    "C": 3,
    "HxW": 4,
    "group": 1,
    "num_classes": 6,
    "padding_idx": -1,
    "shifts": 1,
}
_INT_LIST_BY_NAME = {
    "dim": [1],
    "dims": [0],
    "kernel_size": [2, 2],
    "stride": [1, 1],
    "padding": [0, 0],
    "dilation": [1, 1],
    "output_size": [2, 2],
    "size": [4, 6],
    "shape": [4, 6],
    "normalized_shape": [6],
    "shifts": [1],
    "repeats": [2, 1],
}
_FLOAT_BY_NAME = {
    "eps": 1e-5,
    "p": 2.0,
    "negative_slope": 0.01,
    "beta": 1.0,
    "alpha": 1.0,
    "lambd": 0.5,
    "threshold": 0.5,
    "momentum": 0.1,
}
_SCALAR_BY_NAME = {
    "min": -0.5,
    "max": 0.5,
    "min_val": -0.5,
    "max_val": 0.5,
    "exponent": 2,
    "value": 0.5,
    "threshold": 0.5,
    "beta": 1,
    "alpha": 1,
}


def _attribute(arg: Argument, shape: tuple[int, ...]):
    """The default value of a non-tensor argument for a sample."""
    if arg.has_default:
        return arg.default
    sample, name, ndim = arg.kind.sample, arg.name, len(shape)
    if sample is Sample.INT:
        value = _INT_BY_NAME.get(name, 1)
        return min(value, ndim - 1) if name in ("dim", "dim1") and ndim else value
    if sample is Sample.INT_LIST:
        return _int_list(name, _fixed_size(arg.aten_type), shape)
    if sample is Sample.FLOAT:
        return _FLOAT_BY_NAME.get(name, 0.5)
    if sample is Sample.SCALAR:
        return _SCALAR_BY_NAME.get(name, 2)
    if sample is Sample.SCALAR_LIST:
        return [1, 2]
    if sample is Sample.FALSE:
        return False
    if sample is Sample.TRUE_ARRAY:
        return [True] * _array_size(arg.aten_type)
    if sample is Sample.REDUCTION:
        return "none"
    if sample is Sample.CASE_DTYPE:
        return CASE_DTYPE
    return None  # Sample.NONE, and a tensor kind in an attribute's role


def _array_size(aten_type: str) -> int:
    return _fixed_size(aten_type) or 1


def _fixed_size(aten_type: str) -> int | None:
    """N of `int[N]`, `SymInt[N]?`, `bool[N]`; None for unsized lists."""
    digits = "".join(c for c in aten_type if c.isdigit())
    return int(digits) if digits else None


def _int_list(name: str, size: int | None, shape: tuple[int, ...]) -> list[int]:
    """A list argument; a fixed-size one (kernel_size: int[3]) gets N values,
    and sizes of the input (input_size: SymInt[4]) the sample's shape."""
    if name in ("input_size", "input_sizes", "self_sizes") and (
        size is None or size == len(shape)
    ):
        return list(shape)
    value = list(_INT_LIST_BY_NAME.get(name, [1]))
    if size is None or len(value) == size:
        return value
    return (value[:1] * size) if value else [1] * size


# -- tensor plans -----------------------------------------------------------

_INDEX_NAMES = ("index", "indices", "indices_or_sections", "target_lengths")
_MATMUL_SHAPES = {
    # name -> shape in the "matmul" plan (self/input is (4, 6))
    "mat2": (6, 5),
    "mat1": (4, 6),
    "vec": (6,),
    "vec2": (6,),
    "weight": (5, 6),
    "bias": (5,),
    "batch1": (2, 4, 6),
    "batch2": (2, 6, 5),
}


def _role_of(arg: Argument) -> str:
    if arg.name in _INDEX_NAMES or arg.name.endswith("indices"):
        return INDEX
    if "mask" in arg.name or arg.name == "condition":  # where's condition
        return MASK
    return DATA


def _tensor_value(arg: Argument, shape: tuple[int, ...], shapes: dict):
    spec = TensorSpec(tuple(shapes.get(arg.python_name, shape)), _role_of(arg))
    sample = arg.kind.sample
    if sample is Sample.TENSOR:
        return spec
    if sample is Sample.TENSOR_OR_NONE:
        return spec if arg.python_name in shapes or not arg.has_default else None
    if sample is Sample.TENSOR_PAIR:
        return [spec, spec]
    if sample is Sample.INDEX_LIST:
        return [TensorSpec((INDEX_BOUND,), INDEX)]
    raise ValueError(f"{arg.name}: {arg.kind.name} is not a tensor kind")


def _shape_plans(op: Op) -> list[dict]:
    """Candidate tensor shapes: {python_name: shape} overrides plus a base shape."""
    hinted = {k: tuple(v) for k, v in (op.hints.get("shapes") or {}).items()}
    if hinted or op.hints.get("tensors"):
        # Hinted tensors are the sample, the others take the base shape: no
        # search (on some invalid inputs PyTorch corrupts memory, not raises).
        return [(BASE_SHAPE, hinted)]
    plans = [(BASE_SHAPE, {})]
    names = {a.name for a in op.inputs}
    if names & set(_MATMUL_SHAPES):
        matmul = {
            a.python_name: _MATMUL_SHAPES[a.name]
            for a in op.inputs
            if a.name in _MATMUL_SHAPES
        }
        if "batch1" in names:
            plans.insert(0, ((2, 4, 5), matmul))
        else:
            plans.insert(0, ((4, 5), matmul))
            plans.append((BASE_SHAPE, {k: v for k, v in matmul.items() if k == "mat2"}))
    plans += [((2, 3, 8, 8), {}), ((6,), {}), ((2, 4, 6), {}), ((10, 6), {})]
    # 1-d and 3-d spatial ops (N, C, L) / (N, C, D, H, W); square matrices.
    plans += [((2, 3, 8), {}), ((2, 3, 4, 4, 4), {}), ((4, 4), {}), ((2, 4, 4), {})]
    tensors = [a for a in op.inputs if a.role == "input"]
    if len(tensors) > 1:  # a scalar-like second operand (value, other, lr, ...)
        rest = {a.python_name: () for a in tensors[1:]}
        plans.append((BASE_SHAPE, rest))
    plans.append(((), {}))
    index_1d = {a.python_name: (3,) for a in op.inputs if _role_of(a) == INDEX}
    if index_1d:
        plans += [(shape, {**extra, **index_1d}) for shape, extra in list(plans)]
    return [(shape, {**extra, **hinted}) for shape, extra in plans]


def candidate_plans(op: Op) -> list[dict]:
    """Argument plans to try, best guess first: schema name -> value."""
    result = []
    by_py = {a.python_name: a for a in op.inputs}
    for shape, shapes in _shape_plans(op):
        plan = {}
        for arg in op.inputs:
            if arg.role == "input":
                plan[arg.name] = _tensor_value(arg, shape, shapes)
            else:
                plan[arg.name] = _attribute(arg, shape)
        for py_name, literal in (op.hints.get("tensors") or {}).items():
            arg = by_py[py_name]
            if arg.kind.tensors is Tensors.LIST:  # one literal per list element
                plan[arg.name] = [_literal(one) for one in literal]
            else:
                plan[arg.name] = _literal(literal)
        result.append(hinted_plans(op, plan)[0])  # validate with hinted values
    # Last resort for linear algebra: symmetric positive definite matrices.
    for plan in list(result):
        if any(_square(v) for v in plan.values()):
            result.append(map_tensors(plan, _as_spd))
    return result


def _literal(value) -> TensorSpec:
    values = value["value"] if isinstance(value, dict) else value
    shape = []
    while isinstance(values, list):
        shape.append(len(values))
        values = values[0] if values else None
    return TensorSpec(tuple(shape), LITERAL, value)


def _square(value) -> bool:
    return (
        isinstance(value, TensorSpec)
        and value.role == DATA
        and len(value.shape) >= 2
        and value.shape[-1] == value.shape[-2]
    )


def _as_spd(spec: TensorSpec) -> TensorSpec:
    return replace(spec, role=SPD) if _square(spec) else spec


def hinted_plans(op: Op, plan: dict) -> list[dict]:
    """The valid base plan, once per combination of hinted argument values."""
    by_py = {a.python_name: a.name for a in op.inputs}
    keys = [k for k in op.hints if k in by_py]
    if not keys:
        return [plan]
    combos = itertools.product(*(op.hints[k] for k in keys))
    return [{**plan, **{by_py[k]: v for k, v in zip(keys, combo)}} for combo in combos]


def map_tensors(plan: dict, fn) -> dict:
    """Apply fn to every TensorSpec in the plan (lists included)."""

    def one(v):
        if isinstance(v, TensorSpec):
            return fn(v)
        if isinstance(v, list) and v and all(isinstance(x, TensorSpec) for x in v):
            return [fn(x) for x in v]
        return v

    return {k: one(v) for k, v in plan.items()}


def reshaped(plan: dict, shape_fn) -> dict:
    return map_tensors(plan, lambda spec: replace(spec, shape=shape_fn(spec)))
