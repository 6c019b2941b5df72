"""The module's Python functions as torch's: one per name, its overloads in
the order torch's argument parser tries them.

`ops.pow` stands for `torch.pow`: every signature torch's Python API has
for the name, in torchgen's order (schema_db.python_overloads), each served
by the op of the build whose out= overload torch pairs with it, or whose
functional twin it is (`sum(Tensor input, *, ScalarType? dtype=None)` is
served by `sum.out`'s op, called without out=). A signature no op of the
build serves stays in the list, so a call that torch would resolve to it
fails naming it instead of reaching a later overload torch would not pick.
A composite, which torch does not have, is a function of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .ops import Argument, Op
from ..schema.db import SchemaDB
from ..schema.records import PyOverload, PyParam


@dataclass(frozen=True)
class Overload:
    """One signature of a module function."""

    text: str  # as torch spells it, for errors and docs
    params: tuple[PyParam, ...]  # what the argument parser checks
    op: Op | None  # the op serving it; None: not in this build
    aten: str  # the ATen overload it stands for (out= or functional)
    numbers_as_tensors: bool = False
    # op None: what would serve it, or why no build can (for its error)
    remedy: str = ""

    @property
    def num_positional(self) -> int:
        return sum(1 for p in self.params if not p.kwarg_only)


@dataclass(frozen=True)
class PyFunction:
    """`ops.<name>`: one op's binding, or the overloads tried in order."""

    name: str
    overloads: tuple[Overload, ...]

    @property
    def ops(self) -> tuple[Op, ...]:
        return tuple(o.op for o in self.overloads if o.op is not None)

    @property
    def direct(self) -> Op | None:
        """The op whose binding is the function itself: a single signature,
        served by an op (no choice to make, so nothing to try)."""
        if len(self.overloads) == 1:
            return self.overloads[0].op
        return None


def python_functions(ops: tuple[Op, ...] | list[Op], db: SchemaDB) -> tuple:
    """The module's torch-like functions, sorted by name: one per torch
    Python name that some op serves, and one per composite."""
    by_out = {op.aten: op for op in ops if op.aten}
    by_functional = {op.functional: op for op in ops if op.functional}
    # the out= overload of each functional one (torch pairs only some)
    twins = {s.functional: a for a, s in db.out_overloads.items() if s.functional}
    functions = []
    for name, overloads in db.python_overloads.items():
        members = tuple(_member(o, by_out, by_functional, twins) for o in overloads)
        if any(m.op is not None for m in members):
            functions.append(PyFunction(name, members))
    for op in ops:
        if op.composite:
            functions.append(PyFunction(op.name, (_own(op),)))
    return tuple(sorted(functions, key=lambda f: f.name))


def _member(o: PyOverload, by_out: dict, by_functional: dict, twins: dict) -> Overload:
    if o.out is not None:
        op = by_out.get(o.out)
    else:
        # torch binds the functional alone (its out= twin has no binding):
        # an op whose functional it is serves it without out=.
        op = by_functional.get(o.functional)
        if op is not None and op.functional_call is None:
            op = None
    params = _own_out(op, o.params) + _own_outputs(op, o.params)
    remedy = _remedy(o, twins) if op is None else ""
    return Overload(
        o.text, params, op, o.out or o.functional, o.numbers_as_tensors, remedy
    )


def _remedy(o: PyOverload, twins: dict[str, str]) -> str:
    """What serves a signature no op of the build serves: the out= overload
    to add to the specs, or why no build can (torch 2.11 and 2.12 list
    dimension names among torch.sum's signatures, ...)."""
    if any(p.match in ("Dimname", "DimnameList") for p in o.params):
        return (
            "no build can serve it: dimension names (named tensors) are not expressible"
        )
    out = o.out or twins.get(o.functional)
    if out is None:
        return f"no build can serve it: torch has no out= overload of {o.functional}"
    return f"add '{out}' to the specs or build with --ops all"


def _own_out(op: Op | None, params: tuple[PyParam, ...]) -> tuple[PyParam, ...]:
    """torch's params, its out= tuple also taking the op's first output
    where the op names that output `out` (`_native_batch_norm_legit.out`:
    out, save_mean, save_invstd): the op's own call passes `out=` one tensor
    and its other outputs by name, which torch's `TensorList[3] out` alone
    would refuse."""
    if op is None or len(op.outputs) < 2 or op.outputs[0].py_name != "out":
        return params
    return tuple(
        (
            replace(p, match="TensorOrTensorList")
            if p.name == "out" and p.match == "TensorList"
            else p
        )
        for p in params
    )


def _own_outputs(op: Op | None, params: tuple[PyParam, ...]) -> tuple[PyParam, ...]:
    """The op's own output keywords where torch's signature lacks them:
    `max=`, `max_values=` besides torch's out= tuple, and out= where torch
    binds the functional alone (`sum(x, out=o)`, which torch refuses, is
    sum.out's call). Calls of an op's own name keep working under a
    function of that name; torch's own calls resolve as before."""
    if op is None:
        return ()
    names = {p.name for p in params}
    extra = tuple(
        PyParam(a.py_name, "Tensor", allow_none=True, has_default=True, kwarg_only=True)
        for a in op.outputs
        if a.py_name not in names
    )
    if len(op.outputs) > 1 and "out" not in names | {a.py_name for a in op.outputs}:
        extra += (
            PyParam(
                "out",
                "TensorList",
                size=len(op.outputs),
                allow_none=True,
                has_default=True,
                kwarg_only=True,
            ),
        )
    return extra


def _own(op: Op) -> Overload:
    """A composite's one signature: its spec's, out= optional."""
    params = tuple(_param(a) for a in op.python_params)
    text = op.schema.split(" ->", 1)[0].replace("(a!)", "")
    return Overload(text, params, op, op.name)


def _param(a: Argument) -> PyParam:
    from ..schema.arg_kinds import Tensors

    kind = a.kind
    if kind.tensors is Tensors.LIST:
        match = "TensorList"
    elif kind.tensors is Tensors.ONE:
        match = "Tensor"
    else:
        match = _KIND_MATCH.get(kind.family, "Any")
        if match == "Int" and a.symint:
            match = "SymInt"
        if kind.is_list:
            match = {
                "Int": "IntList",
                "SymInt": "SymIntList",
                "Float": "FloatList",
                "Bool": "BoolList",
            }.get(match, "Any")
    return PyParam(
        name=a.py_name,
        match=match,
        size=a.size or 0,
        allow_none=kind.optional,
        has_default=a.default is not None or a.is_output,
        kwarg_only=a.kwarg_only,
    )


_KIND_MATCH = {
    "Scalar": "Scalar",
    "int": "Int",
    "float": "Float",
    "bool": "Bool",
    "str": "Str",
    "ScalarType": "Dtype",
}
