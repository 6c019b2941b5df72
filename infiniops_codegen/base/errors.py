"""Spec problems, each tied to a place in a file people can jump to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class SpecError:
    path: str  # as shown to the user, e.g. "op_specs/llm.yaml"
    line: int  # 1-based
    col: int  # 1-based
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"


class SpecErrors(Exception):
    """All problems found in one run; raised once loading has finished."""

    def __init__(self, errors: list[SpecError]):
        self.errors = sorted(set(errors))
        super().__init__("\n".join(str(e) for e in self.errors))
