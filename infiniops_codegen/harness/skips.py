"""The one data file of harness skips (tests/harness_skips.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

SKIPS_FILE = Path(__file__).resolve().parents[2] / "tests" / "harness_skips.yaml"


@dataclass(frozen=True)
class Skip:
    reason: str
    op: str | None = None  # public name or ATen overload
    tag: str | None = None  # an ATen tag, e.g. nondeterministic_seeded
    dtypes: tuple[str, ...] = ()  # empty: every dtype
    variants: tuple[str, ...] = ()  # empty: the whole case; else only these layouts

    def matches(self, op, dtype: str) -> bool:
        if self.dtypes and dtype not in self.dtypes:
            return False
        if self.op is not None:
            return self.op in (op.name, op.aten)
        return self.tag is not None and self.tag in op.tags


def load_skips(path: Path = SKIPS_FILE) -> list[Skip]:
    data = yaml.safe_load(path.read_text()) or []
    skips = []
    for entry in data:
        reason = (entry.get("reason") or "").strip()
        if not reason or not (entry.get("op") or entry.get("tag")):
            raise ValueError(
                f"{path}: every skip needs 'op' or 'tag' and a 'reason': {entry}"
            )
        skips.append(
            Skip(
                reason,
                entry.get("op"),
                entry.get("tag"),
                tuple(entry.get("dtypes") or ()),
                tuple(entry.get("variants") or ()),
            )
        )
    return skips


def skip_reason(skips: list[Skip], op, dtype: str) -> str | None:
    """Why the whole op x dtype case is skipped, if it is."""
    for s in skips:
        if not s.variants and s.matches(op, dtype):
            return s.reason
    return None


def skipped_variants(skips: list[Skip], op, dtype: str) -> tuple[str, ...]:
    return tuple(
        v for s in skips if s.variants and s.matches(op, dtype) for v in s.variants
    )
