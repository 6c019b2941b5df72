"""Writing rendered files, and comparing them with what is on disk.

The generator owns exactly the files whose first line carries the marker;
it rewrites only changed files (so mtimes, and builds, stay put) and removes
owned files it no longer produces. Anything else in the directory is left
alone.

The manifest records a hash of every other file it generated ("files",
render.content_hash). An owned file whose content no longer matches its
recorded hash was edited by hand after generation: writing over it (or
removing it) would lose that work, so `write` refuses unless forced.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..base.locations import MANIFEST
from ..base.locations import shown as _shown
from ..model.manifest import recorded_hashes
from .sources import MARKER, content_hash


@dataclass
class Comparison:
    stale: list[str] = field(default_factory=list)  # differs from rendering
    missing: list[str] = field(default_factory=list)  # rendered, not on disk
    extra: list[str] = field(default_factory=list)  # owned, no longer rendered
    unchanged: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)  # a path we produce, not ours
    # stale or extra files whose content is not what was generated (the hash
    # the on-disk manifest recorded): edited by hand since
    edited: list[str] = field(default_factory=list)

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
    recorded = recorded_hashes(out_dir) if result.stale or result.extra else {}
    result.edited = [
        rel
        for rel in sorted(result.stale + result.extra)
        if rel != MANIFEST and rel in recorded and _hash(out_dir / rel) != recorded[rel]
    ]
    return result


def _hash(path: Path) -> str | None:
    try:
        return content_hash(path.read_bytes())
    except OSError:
        return None


def write(files: dict[str, str], out_dir: Path, force: bool = False) -> Comparison:
    """Bring out_dir in line with `files`; returns what was changed.

    Raises, writing nothing, ForeignFileError when a file the generator
    would produce exists without the marker (it is someone else's), and
    HandEditedError when a generated file it would rewrite or remove was
    edited by hand since (unless force: the edit is then discarded)."""
    result = compare(files, out_dir)
    if result.foreign:
        raise ForeignFileError(out_dir, result.foreign)
    if result.edited and not force:
        raise HandEditedError(out_dir, result.edited)
    changed = result.stale + result.missing
    for rel in changed:
        path = out_dir / rel
        if path.exists() and rel in result.missing:
            raise FileExistsError(f"{path} exists but is not readable text")
    # The manifest last: were a run cut short, a file still holding its old
    # content must not look edited against hashes of the new one.
    for rel in [r for r in changed if r != MANIFEST]:
        _write(out_dir / rel, files[rel])
    for rel in result.extra:
        (out_dir / rel).unlink()
        _prune_empty_dirs((out_dir / rel).parent, out_dir)
    if MANIFEST in changed:
        _write(out_dir / MANIFEST, files[MANIFEST])
    return result


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class ForeignFileError(Exception):
    """A file the generator will not overwrite: it lacks the marker line.
    (HandEditedError, a generated file edited by hand, is one too.)"""

    def __init__(self, out_dir: Path, paths: list[str]):
        self.out_dir = out_dir
        self.paths = paths
        names = ", ".join(str(out_dir / p) for p in paths)
        super().__init__(
            f"{names}: exists without the '{MARKER}' line, so it is not the "
            "generator's to overwrite; move it away or delete it"
        )


class HandEditedError(ForeignFileError):
    """Generated files edited by hand since they were generated (their
    content differs from the hash the manifest recorded)."""

    def __init__(self, out_dir: Path, paths: list[str]):
        self.out_dir = out_dir
        self.paths = paths
        Exception.__init__(self, self.describe(_shown(out_dir)))

    def describe(self, shown_dir: str, specs: str = "the op specs") -> str:
        """The message, naming the files as shown_dir/<path>."""
        names = ", ".join(f"{shown_dir}/{p}" for p in self.paths)
        was = "was" if len(self.paths) == 1 else "were"
        return (
            f"{names} {was} edited by hand after generation, and generating "
            "would overwrite the edit: generated files are rewritten from the specs "
            f"and templates, so put the change in {specs} or the templates, or "
            "pass --force to discard the edit"
        )


def _prune_empty_dirs(directory: Path, stop: Path) -> None:
    while directory != stop and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def diff_lines(files: dict[str, str], out_dir: Path, rel: str, shown: str) -> list[str]:
    """The unified diff from the file on disk to what would be generated,
    one line each (with its newline), naming the file as `shown`."""
    current = _read(out_dir / rel) or ""
    lines = difflib.unified_diff(
        current.splitlines(keepends=True),
        files.get(rel, "").splitlines(keepends=True),
        fromfile=f"{shown} (on disk)",
        tofile=f"{shown} (generated)",
        n=2,
    )
    return [line if line.endswith("\n") else line + "\n" for line in lines]
