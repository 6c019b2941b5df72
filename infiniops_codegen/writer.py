"""Writing rendered files, and comparing them with what is on disk.

The generator owns exactly the files whose first line carries the marker;
it rewrites only changed files (so mtimes, and builds, stay put) and removes
owned files it no longer produces. Anything else in the directory is left
alone.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from .render import MARKER


@dataclass
class Comparison:
    stale: list[str] = field(default_factory=list)  # differs from rendering
    missing: list[str] = field(default_factory=list)  # rendered, not on disk
    extra: list[str] = field(default_factory=list)  # owned, no longer rendered
    unchanged: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)  # a path we produce, not ours

    @property
    def clean(self) -> bool:
        return not (self.stale or self.missing or self.extra or self.foreign)


def is_owned(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as f:
            return MARKER in f.readline()
    except OSError:
        return False


def owned_files(out_dir: Path) -> list[str]:
    if not out_dir.is_dir():
        return []
    found = []
    for root, dirs, files in os.walk(out_dir):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            if is_owned(path):
                found.append(path.relative_to(out_dir).as_posix())
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def compare(files: dict[str, str], out_dir: Path) -> Comparison:
    result = Comparison()
    for rel, content in files.items():
        current = _read(out_dir / rel)
        if current is None:
            result.missing.append(rel)
        elif current != content:
            if is_owned(out_dir / rel):
                result.stale.append(rel)
            else:
                result.foreign.append(rel)
        else:
            result.unchanged.append(rel)
    result.extra = [rel for rel in owned_files(out_dir) if rel not in files]
    return result


def write(files: dict[str, str], out_dir: Path) -> Comparison:
    """Bring out_dir in line with `files`; returns what was changed.

    Raises ForeignFileError, writing nothing, when a file the generator
    would produce exists without the marker: it is someone else's."""
    result = compare(files, out_dir)
    if result.foreign:
        raise ForeignFileError(out_dir, result.foreign)
    for rel in result.stale + result.missing:
        path = out_dir / rel
        if path.exists() and rel in result.missing:
            raise FileExistsError(f"{path} exists but is not readable text")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(files[rel], encoding="utf-8")
        os.replace(tmp, path)
    for rel in result.extra:
        (out_dir / rel).unlink()
        _prune_empty_dirs((out_dir / rel).parent, out_dir)
    return result


class ForeignFileError(Exception):
    def __init__(self, out_dir: Path, paths: list[str]):
        self.paths = paths
        names = ", ".join(str(out_dir / p) for p in paths)
        super().__init__(
            f"{names}: exists without the '{MARKER}' line, so it is not the "
            "generator's to overwrite; move it away or delete it"
        )


def _prune_empty_dirs(directory: Path, stop: Path) -> None:
    while directory != stop and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def unified_diff(
    files: dict[str, str], out_dir: Path, rel: str, limit: int = 40
) -> str:
    """A short diff from the file on disk to what would be generated."""
    current = _read(out_dir / rel) or ""
    lines = list(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            files.get(rel, "").splitlines(keepends=True),
            fromfile=f"{rel} (on disk)",
            tofile=f"{rel} (generated)",
            n=2,
        )
    )
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
