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

    def text(self) -> str:
        return f"{self.name}({', '.join(self.parameters)}) -> {self.returns}"


def _parameter(a: Argument) -> str:
    text = f"{a.py_name}: {a.py_type}"
    return f"{text} = {a.default.py_repr}" if a.default else text


def python_signature(op: Op) -> PythonSignature:
    """Positional parameters, then keyword-only ones (outputs included),
    then the keywords every op takes (implementation=, stream=)."""
    parameters = [_parameter(a) for a in op.positional] + ["*"]
    parameters += [_parameter(a) for a in op.keyword_only]
    parameters += [f"{name}: {rest}" for name, rest in module_api.CALL_KEYWORDS]
    return PythonSignature(op.name, tuple(parameters), op.py_return)
