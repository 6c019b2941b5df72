"""Harness skips: the `harness:` section of a skip file.

The file is always given by the caller: the project's one list of skips is
tests/skips.yaml, which the tests pass and `python -m infiniops_codegen.harness
--skips tests/skips.yaml` reads; the package itself reads no file of tests/.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..torch_release import applies

KEYS = ("op", "ops", "tag", "dtypes", "variants", "reference", "torch", "reason")
# `reference: out`: skip nothing, but compare with PyTorch's out= overload
# only, not with the functional form (which is no reference there).
REFERENCES = ("out",)


@dataclass(frozen=True)
class Skip:
    reason: str
    op: str | None = None  # public name or ATen overload
    tag: str | None = None  # an ATen tag, e.g. nondeterministic_seeded
    dtypes: tuple[str, ...] = ()  # empty: every dtype
    variants: tuple[str, ...] = ()  # empty: the whole case; else only these layouts
    reference: str | None = None  # "out": a narrowed comparison, not a skip

    def matches(self, op, dtype: str | None) -> bool:
        """dtype None: whether it matches every dtype of the op."""
        if self.dtypes and (dtype is None or dtype not in self.dtypes):
            return False
        if self.op is not None:
            return self.op in (op.name, op.aten)
        return self.tag is not None and self.tag in op.tags


def load_skips(path: Path | None, torch: str | None = None) -> list[Skip]:
    """The `harness:` entries of a skip file (None: no skips) that apply to
    the torch release `torch` (default: the installed one). Entries name one
    op (`op`), several with one reason (`ops`) or a tag; `torch: ">=2.14"`
    limits one to a range of releases."""
    if path is None:
        return []
    data = (yaml.safe_load(Path(path).read_text()) or {}).get("harness") or []
    skips = []
    for entry in data:
        if isinstance(entry, dict) and not applies(entry, str(path), torch):
            continue
        reason = (entry.get("reason") or "").strip()
        unknown = sorted(set(entry) - set(KEYS))
        names = [entry["op"]] if entry.get("op") else list(entry.get("ops") or ())
        reference = entry.get("reference")
        if (
            unknown
            or not reason
            or not (names or entry.get("tag"))
            or reference not in (None,) + REFERENCES
        ):
            raise ValueError(
                f"{path}: every skip needs 'op', 'ops' or 'tag' and a 'reason'"
                f" (keys: {', '.join(KEYS)}; reference: {', '.join(REFERENCES)}):"
                f" {entry}"
            )
        for name in names or [None]:
            skips.append(
                Skip(
                    reason,
                    name,
                    entry.get("tag"),
                    tuple(entry.get("dtypes") or ()),
                    tuple(entry.get("variants") or ()),
                    reference,
                )
            )
    return skips


def exclusion_reason(skips: list[Skip], op) -> str | None:
    """Why the whole op is excluded (every dtype, every layout), if it is:
    such an op is not sampled at all (PyTorch may even crash on samples)."""
    for s in skips:
        if not s.variants and not s.reference and s.matches(op, None):
            return s.reason
    return None


def skip_reason(skips: list[Skip], op, dtype: str) -> str | None:
    """Why the whole op x dtype case is skipped, if it is."""
    for s in skips:
        if not s.variants and not s.reference and s.matches(op, dtype):
            return s.reason
    return None


def skipped_variants(skips: list[Skip], op, dtype: str) -> tuple[str, ...]:
    return tuple(
        v
        for s in skips
        if s.variants and not s.reference and s.matches(op, dtype)
        for v in s.variants
    )


def out_reference_variants(skips: list[Skip], op, dtype: str, every=()) -> tuple:
    """The layout variants (`every` when an entry names none) on which the op
    is compared with PyTorch's out= overload only (`reference: out`)."""
    return tuple(
        v
        for s in skips
        if s.reference == "out" and s.matches(op, dtype)
        for v in (s.variants or every)
    )
