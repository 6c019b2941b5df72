"""Ranges of torch releases: the one the tool is tested with, and those
that skip and hint entries are limited to.

The tested range is stated once, in the package metadata (pyproject.toml's
`dependencies` and `requires-python`); `supported()` reads it back, from the
source tree when the tool runs from one, else from the installed metadata.
`infiniops-codegen --version` shows it (docs/torch-releases.md).

Standard library only (the harness reads skip files with it).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .locations import PACKAGE_DIR
from .torch_build import release

PACKAGE = "infiniops-codegen"  # the distribution whose metadata states the range
_CLAUSE = re.compile(r"^(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+)*)(\.\*)?$")


@dataclass(frozen=True)
class Range:
    """A range of releases as pip writes one (`>=2.11,<2.16`, `==2.14.*`,
    `!=2.14.0`): clauses joined by commas, all of which must hold. Only the
    release numbers count (`2.14.1+cu130` is 2.14.1)."""

    text: str
    clauses: tuple[tuple[str, tuple[int, ...], bool], ...]  # (op, release, .*)

    def __contains__(self, version: object) -> bool:
        have = release(version) if isinstance(version, str) else tuple(version)
        return all(_holds(op, have, want, star) for op, want, star in self.clauses)

    def __str__(self) -> str:
        return self.text

    def spelled(self) -> str:
        """`>=2.11,<2.16` as `2.11 to 2.15` where it is such a range of
        minor releases; the text itself otherwise."""
        ops = {op: want for op, want, star in self.clauses if not star}
        low, high = ops.get(">="), ops.get("<")
        if len(self.clauses) == 2 and low and high and len(high) == 2 and high[1]:
            last = (high[0], high[1] - 1)
            return f"{_dotted(low)} to {_dotted(last)}"
        return self.text


def _dotted(numbers: tuple[int, ...]) -> str:
    return ".".join(str(n) for n in numbers)


def _holds(op: str, have: tuple[int, ...], want: tuple[int, ...], star: bool) -> bool:
    if star:  # ==2.14.*: the release starts with 2.14
        same = have[: len(want)] == want
        return same if op == "==" else not same
    width = max(len(have), len(want))
    a = have + (0,) * (width - len(have))
    b = want + (0,) * (width - len(want))
    return {
        ">=": a >= b,
        "<=": a <= b,
        ">": a > b,
        "<": a < b,
        "==": a == b,
        "!=": a != b,
    }[op]


def parse_range(text: object) -> Range:
    """A range from its text; ValueError saying what a range looks like."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            f"a range of torch releases must be a string such as '>=2.14' or "
            f"'>=2.11,<2.14', got {text!r}"
        )
    clauses = []
    for part in text.split(","):
        m = _CLAUSE.match(part.strip())
        if m is None or (m.group(3) and m.group(1) not in ("==", "!=")):
            raise ValueError(
                f"'{text}' is not a range of torch releases: use clauses such as "
                "'>=2.14', '<2.15', '==2.14.*', '!=2.14.0', joined by commas"
            )
        numbers = tuple(int(n) for n in m.group(2).split("."))
        clauses.append((m.group(1), numbers, bool(m.group(3))))
    return Range(",".join(p.strip() for p in text.split(",")), tuple(clauses))


def applies(entry: dict, where: str, version: str | None = None) -> bool:
    """Whether a skip file entry applies to `version` (default: the installed
    torch's): its `torch` key, a range of releases, holds it; an entry
    without one applies to every release. ValueError naming `where` when
    the range is not one."""
    if entry.get("torch") is None:
        return True
    try:
        limit = parse_range(entry["torch"])
    except ValueError as e:
        raise ValueError(f"{where}: {e}: {entry}") from None
    if version is None:
        from .torch_build import installed

        found = installed()
        if found is None:
            return True
        version = found.version
    return version in limit


# -- the tested range --------------------------------------------------------------


@dataclass(frozen=True)
class Supported:
    """The releases the tool is tested with, as its package metadata states."""

    torch: Range
    python: Range
    source: str  # where it was read: "pyproject.toml" or "package metadata"


def supported() -> Supported:
    """The tested torch and Python ranges: pyproject.toml's when the tool
    runs from its source tree (a checkout, an editable install), else the
    installed distribution's metadata (generated from that file)."""
    pyproject = PACKAGE_DIR.parent / "pyproject.toml"
    project = _source_project(pyproject)
    if project is not None:
        requires = project.get("dependencies") or []
        python = project.get("requires-python") or ""
        source = "pyproject.toml"
    else:
        import importlib.metadata

        meta = importlib.metadata.metadata(PACKAGE)
        requires = importlib.metadata.requires(PACKAGE) or []
        python = meta.get("Requires-Python") or ""
        source = "package metadata"
    torch = next(
        (
            m.group(1)
            for r in requires
            if (m := re.match(r"^torch\s*([<>=!~][^;]*)", r))
        ),
        "",
    )
    return Supported(parse_range(_sorted(torch)), parse_range(_sorted(python)), source)


def _sorted(specifier: str) -> str:
    """Lower bounds first (metadata may list `<2.16,>=2.11`)."""
    parts = [p.strip() for p in specifier.split(",") if p.strip()]
    return ",".join(sorted(parts, key=lambda p: not p.startswith(">")))


def _source_project(pyproject: Path) -> dict | None:
    """The [project] table of the tool's own pyproject.toml beside the
    package, None when the package is not run from its source tree."""
    if not pyproject.is_file():
        return None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the 3.10 dependency of pyproject.toml
        import tomli as tomllib
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project")
    except (OSError, ValueError):
        return None
    return (
        project
        if isinstance(project, dict) and project.get("name") == PACKAGE
        else None
    )
