"""Harness skips: the `harness:` section of a skip file.

Two lists apply: the tool's (TOOL_FILE, package data: PyTorch's own bugs and
limitations and what the harness cannot sample, the same for every project),
always; and the project's skip file, given by the caller (`--skips`; this
repository's is tests/skips.yaml), which holds only the project's choices.
Each Skip says which list it came from, so that the counts keep them apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..base.locations import PACKAGE_DIR
from ..base.torch_release import applies

# The tool's list, shipped with the package.
TOOL_FILE = PACKAGE_DIR / "data" / "harness_skips.yaml"
TOOL, PROJECT = "tool", "project"  # Skip.source

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
    source: str = PROJECT  # TOOL or PROJECT: the list it came from

    def matches(self, op, dtype: str | None) -> bool:
        """dtype None: whether it matches every dtype of the op."""
        if self.dtypes and (dtype is None or dtype not in self.dtypes):
            return False
        if self.op is not None:
            return self.op in (op.name, op.aten)
        return self.tag is not None and self.tag in op.tags


def harness_skips(path: Path | None, torch: str | None = None) -> list[Skip]:
    """What the harness applies: the tool's list, then the project's skip
    file (None: the project has none)."""
    return load_skips(TOOL_FILE, torch, TOOL) + load_skips(path, torch)


def load_skips(
    path: Path | None, torch: str | None = None, source: str = PROJECT
) -> list[Skip]:
    """The `harness:` entries of one skip file (None: no skips) that apply to
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
                    source,
                )
            )
    return skips


def exclusion(skips: list[Skip], op) -> Skip | None:
    """The entry that excludes the whole op (every dtype, every layout), if
    one does: such an op is not sampled at all (PyTorch may even crash on
    samples)."""
    for s in skips:
        if not s.variants and not s.reference and s.matches(op, None):
            return s
    return None


def exclusion_reason(skips: list[Skip], op) -> str | None:
    s = exclusion(skips, op)
    return s.reason if s else None


def case_skip(skips: list[Skip], op, dtype: str) -> Skip | None:
    """The entry that skips the whole op x dtype case, if one does."""
    for s in skips:
        if not s.variants and not s.reference and s.matches(op, dtype):
            return s
    return None


def skip_reason(skips: list[Skip], op, dtype: str) -> str | None:
    """Why the whole op x dtype case is skipped, if it is."""
    s = case_skip(skips, op, dtype)
    return s.reason if s else None


def skipped_variants(skips: list[Skip], op, dtype: str) -> dict[str, str]:
    """The layout variants not run, each with the list that skips it (TOOL
    or PROJECT; the first entry's)."""
    found: dict[str, str] = {}
    for s in skips:
        if s.variants and not s.reference and s.matches(op, dtype):
            for v in s.variants:
                found.setdefault(v, s.source)
    return found


def out_reference_variants(skips: list[Skip], op, dtype: str, every=()) -> tuple:
    """The layout variants (`every` when an entry names none) on which the op
    is compared with PyTorch's out= overload only (`reference: out`)."""
    return tuple(
        v
        for s in skips
        if s.reference == "out" and s.matches(op, dtype)
        for v in (s.variants or every)
    )
