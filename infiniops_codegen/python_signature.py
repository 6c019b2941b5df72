"""The Python signature of an op, as the type stub declares it.

One rendering of the model: templates/module.pyi.j2 lays out these
parameters, and the manifest records the same text (`python_signature`,
which `infiniops-codegen list --op` shows), so the two cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import module_api
from .model import Argument, Op, OpSet


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


def _parameter(a: Argument, no_out: bool) -> str:
    if a.is_output and no_out:  # left out: allocated and returned
        return f"{a.py_name}: {a.py_type} | None = None"
    text = f"{a.py_name}: {a.py_type}"
    return f"{text} = {a.default.py_repr}" if a.default else text


def _plain(a: Argument, no_out: bool) -> str:
    if a.is_output and no_out:
        return f"{a.py_name}=None"
    return f"{a.py_name}={a.default.py_repr}" if a.default else a.py_name


def python_signature(op: Op) -> PythonSignature:
    """Positional parameters, then keyword-only ones (outputs included),
    then the keywords every op takes (implementation=, stream=)."""
    no_out = op.no_out
    parameters = [_parameter(a, no_out) for a in op.positional] + ["*"]
    parameters += [_parameter(a, no_out) for a in op.keyword_only]
    parameters += [f"{name}: {rest}" for name, rest in module_api.CALL_KEYWORDS]
    plain = [_plain(a, no_out) for a in op.positional] + ["*"]
    plain += [_plain(a, no_out) for a in op.keyword_only]
    plain += [
        f"{name}={module_api.CALL_DEFAULTS[name]}"
        for name, _ in module_api.CALL_KEYWORDS
    ]
    return PythonSignature(op.name, tuple(parameters), op.py_return, tuple(plain))


def _doc(op: Op, name: str) -> str:
    return python_signature(op).text_signature(name) + "\n--\n\n" + op.schema


def method_entries(opset: OpSet) -> tuple[tuple[str, str, str], ...]:
    """(Python name, C++ function, docstring) of each op entry of the
    module's method table: every torch-like function (overloads.py), then
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
