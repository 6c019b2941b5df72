"""The Python signature of an op, as the type stub declares it.

One rendering of the model: templates/module.pyi.j2 lays out these
parameters, and the manifest records the same text (`python_signature`,
which `infiniops-codegen list --op` shows), so the two cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import module_api
from .model import Argument, Op


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

    def text_signature(self) -> str:
        """The first line of the builtin's docstring, before a "--" line:
        CPython gives it to inspect.signature() and help() as the function's
        signature. `$module, /` is the module the function is bound to."""
        return f"{self.name}($module, /, {', '.join(self.plain)})"


def _parameter(a: Argument) -> str:
    text = f"{a.py_name}: {a.py_type}"
    return f"{text} = {a.default.py_repr}" if a.default else text


def _plain(a: Argument) -> str:
    return f"{a.py_name}={a.default.py_repr}" if a.default else a.py_name


def python_signature(op: Op) -> PythonSignature:
    """Positional parameters, then keyword-only ones (outputs included),
    then the keywords every op takes (implementation=, stream=)."""
    parameters = [_parameter(a) for a in op.positional] + ["*"]
    parameters += [_parameter(a) for a in op.keyword_only]
    parameters += [f"{name}: {rest}" for name, rest in module_api.CALL_KEYWORDS]
    plain = [_plain(a) for a in op.positional] + ["*"]
    plain += [_plain(a) for a in op.keyword_only]
    plain += [
        f"{name}={module_api.CALL_DEFAULTS[name]}"
        for name, _ in module_api.CALL_KEYWORDS
    ]
    return PythonSignature(op.name, tuple(parameters), op.py_return, tuple(plain))
