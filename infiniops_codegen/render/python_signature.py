"""The Python signature of an op, as the type stub declares it.

One rendering of the model: templates/module.pyi.j2 lays out these
parameters, and the manifest records the same text (`python_signature`,
which `infiniops-codegen list --op` shows), so the two cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import module_api
from ..model.ops import Argument, Op, OpSet


@dataclass(frozen=True)
class PythonSignature:
    name: str
    parameters: tuple[str, ...]  # "name: type = default"; "*" before keyword-only
    returns: str
    # The same parameters as CPython's text signature of a builtin takes
    # them: no annotations ("name=default").
    plain: tuple[str, ...] = ()

    def text(self) -> str:
        return f"{self.name}({', '.join(self.parameters)}) -> {self.returns}"

    def text_signature(self, name: str | None = None) -> str:
        """The first line of the builtin's docstring, before a "--" line:
        CPython gives it to inspect.signature() and help() as the function's
        signature. `$module, /` is the module the function is bound to;
        name: the function's, where it is not the op's."""
        return f"{name or self.name}($module, /, {', '.join(self.plain)})"


def _annotation(op: Op, a: Argument) -> str:
    outs = op.outputs
    if a.is_output and len(outs) > 1 and a.py_name == "out":
        # out= also takes all the outputs at once (max_pool2d_with_indices).
        return f"{a.py_type} | {_outs_tuple(op)}"
    if op.numbers_as_tensors and a.is_tensor and not a.is_output:
        return f"{a.py_type} | Number"  # torch takes a Python number here
    return a.py_type


def _outs_tuple(op: Op) -> str:
    return "tuple[" + ", ".join(a.py_type for a in op.outputs) + "]"


def _parameter(op: Op, a: Argument) -> str:
    text = f"{a.py_name}: {_annotation(op, a)}"
    if a.is_output and op.no_out:  # left out: allocated and returned
        return f"{text} | None = None"
    return f"{text} = {a.default.py_repr}" if a.default else text


def _plain(op: Op, a: Argument) -> str:
    if a.is_output and op.no_out:
        return f"{a.py_name}=None"
    return f"{a.py_name}={a.default.py_repr}" if a.default else a.py_name


def python_signature(op: Op, name: str | None = None) -> PythonSignature:
    """Positional parameters, then keyword-only ones (outputs included;
    several outputs also as one `out=` tuple), then the keywords every op
    takes (implementation=, stream=). name: the function's, where not the
    op's."""
    keyword_only = list(op.keyword_only)
    parameters = [_parameter(op, a) for a in op.positional] + ["*"]
    parameters += [_parameter(op, a) for a in keyword_only]
    plain = [_plain(op, a) for a in op.positional] + ["*"]
    plain += [_plain(op, a) for a in keyword_only]
    names = {a.py_name for a in op.python_params}
    if len(op.outputs) > 1 and "out" not in names:
        parameters.append(f"out: {_outs_tuple(op)} | None = None")
        plain.append("out=None")
    parameters += [f"{key}: {rest}" for key, rest in module_api.CALL_KEYWORDS]
    plain += [
        f"{key}={module_api.CALL_DEFAULTS[key]}" for key, _ in module_api.CALL_KEYWORDS
    ]
    return PythonSignature(
        name or op.name, tuple(parameters), op.py_return, tuple(plain)
    )


def _doc(op: Op, name: str) -> str:
    return python_signature(op).text_signature(name) + "\n--\n\n" + op.schema


def method_entries(opset: OpSet) -> tuple[tuple[str, str, str], ...]:
    """(Python name, C++ function, docstring) of each op entry of the
    module's method table: every torch-like function (model/overloads.py), then
    every op under its own name where no function took it. A function with
    several signatures shows its first served one's as its signature and
    lists them all, in the order they are tried."""
    entries = {}
    for f in opset.functions:
        if f.direct is not None:
            entries[f.name] = (f"py_{f.direct.name}", _doc(f.direct, f.name))
            continue
        first = f.ops[0]
        lines = [
            f"  {o.text}" + (f"  [{o.op.name}]" if o.op else "  [not in this build]")
            for o in f.overloads
        ]
        doc = (
            python_signature(first).text_signature(f.name)
            + "\n--\n\ntorch's signatures, tried in this order [op serving it]:\n"
            + "\n".join(lines)
        )
        entries[f.name] = (f"pyf_{f.name}", doc)
    for op in opset.ops:
        entries.setdefault(op.name, (f"py_{op.name}", _doc(op, op.name)))
    return tuple((name, cpp, doc) for name, (cpp, doc) in sorted(entries.items()))


def stub_entries(opset: OpSet) -> tuple[tuple[PythonSignature, ...], ...]:
    """The .pyi declarations: each function's signatures (several are
    @overload-ed; those not in the build left out, since calls of them
    fail), then each op under its own name where no function took it."""
    entries = {}
    for f in opset.functions:
        entries[f.name] = _distinct(
            [python_signature(o.op, f.name) for o in f.overloads if o.op is not None]
        )
    for op in opset.ops:
        entries.setdefault(op.name, (python_signature(op),))
    return tuple(sigs for _, sigs in sorted(entries.items()))


def _parts(parameter: str) -> tuple[str, frozenset[str], bool]:
    """("name", the annotation's union members, whether it has a default)."""
    head, _, default = parameter.partition(" = ")
    name, _, annotation = head.partition(": ")
    members = frozenset(m.strip() for m in annotation.split("|"))
    return name, members, bool(default)


def covers(a: PythonSignature, b: PythonSignature) -> str:
    """Whether every call b's parameters accept, a's accept too (same
    positional names, each a wider or equal type; a type checker never picks
    b): "covers", or why not."""
    if a.returns != b.returns:
        return "other return"
    split = lambda s: (s.parameters[: s.parameters.index("*")], s.parameters)
    (a_pos, a_all), (b_pos, b_all) = split(a), split(b)
    if [_parts(p)[0] for p in a_pos] != [_parts(p)[0] for p in b_pos]:
        return "other positional names"
    a_params = {n: (m, d) for n, m, d in map(_parts, a_all) if n != "*"}
    for name, members, default in map(_parts, b_all):
        if name == "*":
            continue
        if name not in a_params:
            return "a parameter it lacks"
        a_members, a_default = a_params[name]
        if not members <= a_members or (default and not a_default):
            return "a wider parameter"
    return "covers"


def _distinct(signatures: list[PythonSignature]) -> tuple[PythonSignature, ...]:
    """The stub's overloads: each signature but those an earlier one covers
    (a type checker rejects an overload it can never pick)."""
    kept: list[PythonSignature] = []
    for sig in signatures:
        if not any(covers(k, sig) == "covers" for k in kept):
            kept.append(sig)
    return tuple(kept)
