"""The covering selection (`--ops covering`): a small part of an op set that
takes every path the whole set takes through the generator, the bridge and
the harness, so that a secondary build (a sanitizer's, another torch
release's) proves what a build of the whole set would, in a fraction of
its compile and test time.

What a path is, as features of the model (pure functions of it):
- each op's facts that choose a template branch or a piece of the bridge:
  its booleans (composite, lane, no_out, direct_cpu, ...), which optional
  facts it has, how many of a thing (outputs, lists, hidden arguments);
- each argument's kind, role and C++/Python types (the converter the bridge
  instantiates for it, its default's type, its lane reference);
- each native kernel and each composite body: code of its own, so every op
  that has one is in;
- its registration with the dispatcher (the accessor that reads each
  argument, typed or ATen functional, shared functional overloads);
- the module's functions: direct or overloaded, the parameter checks of
  overload resolution, overloads served without out= or by none.

`select()` picks ops greedily until the union of their features is the whole
set's, then builds the selection and checks it with the same functions
(`features()` of both), adding the ops of any feature it lost (a function's
overloads come in together). `tests/test_covering.py` compares the two
feature sets and, beyond the model, the lines of the templates and of the
model's code that rendering runs.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable
from enum import Enum

from ..model.ops import Argument, Op, OpSet
from ..model.overloads import PyFunction
from .python_signature import covers, python_signature
from .torch_library import DispatcherOp, dispatcher_ops

# Op fields and properties that identify the op, or are text made from its
# names: not a path (a different value takes the same code).
_OP_IDENTITY = frozenset(
    {
        "name",
        "aten",
        "source",
        "schema",
        "headers",
        "aten_function",
        "cpp_order",
        "fallback_body",
        "hints",
        "hints_dict",
        "shard",
        "reference",
        "reference_line",
        "fallback_line",
        "extension",
        "native_line",
        "native_col",
        "functional",
        "functional_schema",
        "functional_tags",
        "tags",
        "arguments",
        "native",
        "functional_call",
        "output_like",
    }
)
# Of an argument, the same: its names and its schema's spelling (whose
# alias annotations and sizes the types below already say).
_ARG_IDENTITY = frozenset({"name", "py_name", "aten_type", "default", "hidden_value"})
# ATen tags that change what a call or the harness does (the rest are
# labels the registration copies as they are).
_PATH_TAGS = frozenset(
    {"nondeterministic_seeded", "inplace_view", "dynamic_output_shape"}
)


def bucket(value) -> str:
    """A value as the feature it stands for: a truth value as itself, a
    count as 0, 1 or many, anything else present or not."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "none"
    if isinstance(value, int):
        return str(value) if value in (0, 1) else "many"
    if isinstance(value, (tuple, list, frozenset, set, dict)):
        return "empty" if not value else "one" if len(value) == 1 else "many"
    return "set"


def _public(cls) -> list[str]:
    """The dataclass fields and properties of cls, by name."""
    names = [f.name for f in dataclasses.fields(cls)]
    names += [n for n, v in inspect.getmembers(cls) if isinstance(v, property)]
    return sorted(n for n in set(names) if not n.startswith("_"))


def _reflect(obj, names: Iterable[str], prefix: str) -> set[str]:
    result = set()
    for name in names:
        try:
            value = getattr(obj, name)
        except Exception as e:  # a property that refuses this op is a path too
            result.add(f"{prefix}.{name}:raises {type(e).__name__}")
            continue
        if isinstance(value, Enum):
            result.add(f"{prefix}.{name}={value.value}")
        elif isinstance(value, str) and name in _CATEGORY_STRINGS:
            result.add(f"{prefix}.{name}={value}")
        else:
            result.add(f"{prefix}.{name}:{bucket(value)}")
    return result


# Strings that name a category, not an op: the C++ and Python types an
# argument crosses the library as, and the bridge's reference on the lane.
_CATEGORY_STRINGS = frozenset(
    {"aten_cpp_type", "core_type", "py_type", "converter", "lane_ref"}
)


def argument_features(arg: Argument) -> set[str]:
    if arg.kind is None:  # hidden: passed as its value, never converted
        return {f"hidden:{arg.aten_cpp_type}:default={arg.schema_default}"}
    prefix = f"arg[{arg.role.value}:{arg.kind.name}]"
    names = [n for n in _public(Argument) if n not in _ARG_IDENTITY | {"kind"}]
    result = _reflect(arg, names, prefix)
    result.add(prefix)
    if arg.default is not None:
        value = arg.default.value
        kind = type(value).__name__ if not isinstance(value, list) else "list"
        empty = ":empty" if isinstance(value, list) and not value else ""
        result.add(f"{prefix}.default:{kind}{empty}")
    return result


def op_features(op: Op) -> set[str]:
    """What one op's generated code and its calls take, apart from the
    function it serves and its registration."""
    names = [n for n in _public(Op) if n not in _OP_IDENTITY]
    result = _reflect(op, names, "op")
    for arg in op.arguments:
        result |= argument_features(arg)
    for impl in op.native:
        # A kernel is code of its own: every one is a path.
        result.add(f"native kernel:{impl.platform}:{op.name}")
        result.add(f"native:{impl.platform}:dtypes {bucket(impl.dtypes)}")
        result.add(f"native:{impl.platform}:up_to {bucket(impl.up_to)}")
    if op.composite:  # and so is a composite's body
        result.add(f"composite body:{op.name}")
    if op.functional_call is not None:
        result |= _reflect(
            op.functional_call,
            [f.name for f in dataclasses.fields(op.functional_call)],
            "functional_call",
        )
    result.add(f"output_like:{bucket(op.output_like)}")
    result |= {f"tag:{t}" for t in op.tags if t in _PATH_TAGS}
    return result


def registration_features(d: DispatcherOp) -> set[str]:
    """How torch_library.cpp registers the op and reads its boxed stack."""
    result = {
        f"dispatcher.{name}:{bucket(getattr(d, name))}"
        for name in (
            "typed_functional",
            "differentiable",
            "aten_functional",
            "functional_schema",
            "outputs",
            "hidden",
            "out_tags",
        )
    }
    for arg in d.op.visible:
        result.add(f"dispatcher.read:{d.read(arg).split('=', 1)[1].split('(')[0]}")
    return result


def function_features(f: PyFunction) -> set[str]:
    """ops.<name>: its binding, direct or choosing among overloads."""
    result = {
        f"function.overloads:{bucket(f.overloads)}",
        f"function.direct:{bucket(f.direct is not None)}",
        f"function.ops:{bucket(f.ops)}",
    }
    for o in f.overloads:
        if o.op is None:
            result.add("overload:served by no op")
            continue
        how = "out=" if o.aten == o.op.aten else "without out="
        result.add(f"overload:served {how}, numbers as tensors {o.numbers_as_tensors}")
        if f.direct is None:  # the parameters overload resolution checks
            for p in o.params:
                flags = [
                    k
                    for k in ("allow_none", "has_default", "kwarg_only")
                    if getattr(p, k)
                ]
                sized = f"[{bucket(p.size)}]" if p.size else ""
                result.add(f"overload param:{p.match}{sized}:{','.join(flags)}")
    # The stub's @overloads: which signature an earlier one covers, and why not.
    stub = [python_signature(o.op, f.name) for o in f.overloads if o.op is not None]
    for k, later in enumerate(stub):
        result |= {f"stub:{covers(earlier, later)}" for earlier in stub[:k]}
    return result


def features(opset: OpSet) -> dict[str, frozenset[str]]:
    """Feature -> the units that have it (each unit the ops that must come
    in together to take it: one op, or every op serving a function)."""
    found: dict[str, set[frozenset[str]]] = {}

    def add(feature: str, unit: frozenset[str]) -> None:
        found.setdefault(feature, set()).add(unit)

    shared = _shared_functionals(opset)
    for d in dispatcher_ops(opset.ops, opset.names.name):
        unit = frozenset({d.op.name})
        for feature in op_features(d.op) | registration_features(d):
            add(feature, unit)
        if d.op.name in shared:  # registered once for two ops
            add("dispatcher.functional shared by two ops", shared[d.op.name])
    for f in opset.functions:
        unit = frozenset(op.name for op in f.ops)
        for feature in function_features(f):
            add(feature, unit)
    return {feature: frozenset(units) for feature, units in found.items()}


def _shared_functionals(opset: OpSet) -> dict[str, frozenset[str]]:
    """Op name -> the ops whose out= overloads share its ATen functional
    twin (the registration makes it once)."""
    by_schema: dict[str, set[str]] = {}
    for op in opset.ops:
        if op.functional_schema is not None:
            key = op.functional_schema.split("(", 1)[0]
            by_schema.setdefault(key, set()).add(op.name)
    return {
        name: frozenset(group)
        for group in by_schema.values()
        if len(group) > 1
        for name in group
    }


def select(
    opset: OpSet,
    build: Callable[[tuple[str, ...]], OpSet],
    required: Iterable[str] = (),
) -> tuple[str, ...]:
    """The names of a covering selection of opset (its ops' names, sorted):
    every feature of opset is a feature of build(names). `required` ops are
    in it whatever their features."""
    target = features(opset)
    chosen = set(required)
    have = _covered(target, chosen)
    units = sorted({u for us in target.values() for u in us}, key=_order)
    gains = {u: {f for f, us in target.items() if u in us} for u in units}
    while len(have) < len(target):
        # Most new features per op it adds; ties to the first in _order.
        best, score = None, 0.0
        for unit in units:
            if not unit <= chosen:
                gain = len(gains[unit] - have) / len(unit - chosen)
                if gain > score:
                    best, score = unit, gain
        chosen |= best
        have = _covered(target, chosen)
    # The selection built: what its model says it takes, with any feature
    # the greedy count could not see (a function's overloads served by
    # fewer ops) made up by the smallest unit that has it.
    for _ in range(len(target)):
        missing = sorted(set(target) - set(features(build(tuple(sorted(chosen))))))
        if not missing:
            return tuple(sorted(chosen))
        for feature in missing:
            chosen |= min(target[feature], key=_order)
    raise AssertionError(f"no covering selection: still missing {missing}")


def _covered(target: dict[str, frozenset[str]], chosen: set[str]) -> set[str]:
    return {f for f, units in target.items() if any(u <= chosen for u in units)}


def _order(unit: frozenset[str]) -> tuple:
    return (len(unit), sorted(unit))
