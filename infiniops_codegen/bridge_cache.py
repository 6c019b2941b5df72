"""A cache of the torch bridge's objects and the precompiled header, shared by
build directories and projects (docs/design/bridge-cache.md).

The bridge (support/cpp/torch) names no op: its object code depends only on
its sources, the dtype and platform tables, the compiler, the flags, torch
and Python. An entry is keyed by a hash of exactly those, taken from the
compile commands themselves so that a new flag cannot be left out of the key.

Work in progress: the key, lookup and publish; nothing calls them yet.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from . import schema_db

# Bumped when an entry's layout or the key's document changes: old entries
# then simply miss.
FORMAT = 1
SUPPORT_CPP = Path(__file__).resolve().parent / "support" / "cpp"
# What the bridge and the precompiled header include of the tool's C++.
SOURCE_DIRS = ("torch", "core", "runtime")
# The generated headers they include (rendered from the tool's data tables).
TABLES = ("dtype_table.h", "platform_table.h", "torch_tables.h")
KEY_FILE = "key.json"
# Placeholders for the only per-project paths of the compile commands.
BUILD_DIR = "<build>"
GENERATED_DIR = "<generated>"
# An unfinished entry older than this was left by a killed build.
STALE_TMP_S = 24 * 3600


def cache_root() -> Path:
    """Where entries live: beside the tool's other caches."""
    return schema_db.cache_dir() / "bridge"


@dataclass(frozen=True)
class Inputs:
    """What determines the cached objects' code, as a build knows it."""

    commands: tuple[str, ...]  # compile commands of the cached TUs
    build_dir: Path
    generated_dir: Path
    compiler: str  # CMAKE_CXX_COMPILER
    torch_record: str  # text of CMakeFiles/torch-build.json


def normalise_command(command: str, build_dir: Path, generated_dir: Path) -> str:
    """command with the build and generated directories as placeholders: they
    differ per project, and what is read from them is hashed by content."""
    # The generated dir first: it is usually inside the build dir.
    for path, name in ((generated_dir, GENERATED_DIR), (build_dir, BUILD_DIR)):
        for spelling in dict.fromkeys((str(path), str(path.resolve()))):
            command = command.replace(spelling, name)
    return command


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def source_digests(support_cpp: Path = SUPPORT_CPP) -> dict[str, str]:
    """Relative path -> SHA-256 of each of the tool's C++ files the cached
    TUs can include (rather than the version string, which stays the same
    between commits)."""
    result = {}
    for sub in SOURCE_DIRS:
        for path in sorted((support_cpp / sub).rglob("*")):
            if path.is_file():
                rel = path.relative_to(support_cpp).as_posix()
                result[rel] = _digest(path.read_bytes())
    return result


def compiler_identity(compiler: str) -> dict[str, str]:
    """The compiler as its object code depends on it: its version and target,
    and its binary's size and mtime (a rebuild of the same version)."""
    path = shutil.which(compiler) or compiler
    real = os.path.realpath(path)
    proc = subprocess.run(
        [path, "-dumpfullversion", "-dumpmachine"],
        capture_output=True,
        text=True,
        check=False,
    )
    st = os.stat(real)
    return {
        "path": real,
        "version": proc.stdout.strip(),
        "binary": f"{st.st_size}:{st.st_mtime_ns}",
    }


def document(inputs: Inputs, support_cpp: Path = SUPPORT_CPP) -> dict:
    """What the key hashes (kept in the entry, to tell why two keys differ)."""
    return {
        "format": FORMAT,
        "commands": [
            normalise_command(c, inputs.build_dir, inputs.generated_dir)
            for c in inputs.commands
        ],
        "sources": source_digests(support_cpp),
        "tables": {
            name: _digest((inputs.generated_dir / name).read_bytes()) for name in TABLES
        },
        "compiler": compiler_identity(inputs.compiler),
        "torch": inputs.torch_record,
    }


def key(doc: dict) -> str:
    """The entry's name: a hash of the canonical JSON of doc."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return _digest(text.encode())[:32]


def lookup(root: Path, name: str) -> Path | None:
    """The complete entry `name`, or None. An entry whose files do not have
    the sizes it recorded (a hand edit, a damaged disk) is removed."""
    entry = root / name
    try:
        recorded = json.loads((entry / KEY_FILE).read_text())["files"]
    except (OSError, ValueError, KeyError):
        return None
    for file, size in recorded.items():
        try:
            ok = (entry / file).stat().st_size == size
        except OSError:
            ok = False
        if not ok:
            shutil.rmtree(entry, ignore_errors=True)
            return None
    os.utime(entry)  # the newest used are kept when trimming
    return entry


def publish(root: Path, name: str, doc: dict, files: dict[str, Path]) -> Path | None:
    """Copy files (entry name -> path) into the entry `name`; its path, or
    None when another build holds the entry's lock (it is filling it: this one
    need not wait). The entry appears complete or not at all: it is filled in
    a private directory renamed into place."""
    root.mkdir(parents=True, exist_ok=True)
    done = lookup(root, name)
    if done is not None:
        return done
    lock = open(root / f"{name}.lock", "w")
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        done = lookup(root, name)  # filled while this one waited for the lock
        if done is not None:
            return done
        _remove_stale(root)
        tmp = root / f"tmp-{os.getpid()}-{name}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        sizes = {}
        for entry_name, src in sorted(files.items()):
            # A copy, not a hard link: the compiler and the assembler
            # truncate an existing output in place, which would change the
            # entry when the build directory rebuilds its own objects.
            shutil.copy2(src, tmp / entry_name)
            sizes[entry_name] = (tmp / entry_name).stat().st_size
        (tmp / KEY_FILE).write_text(json.dumps({**doc, "files": sizes}, indent=1))
        try:
            os.rename(tmp, root / name)
        except OSError as e:
            # Only a build without the lock (a crashed one's leftovers) could
            # have put it there: keep the one that is there.
            shutil.rmtree(tmp, ignore_errors=True)
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
        return lookup(root, name)
    finally:
        lock.close()  # releases the flock


def _remove_stale(root: Path) -> None:
    """Unfinished entries of builds that were killed while filling them."""
    now = time.time()
    for tmp in root.glob("tmp-*"):
        try:
            if now - tmp.stat().st_mtime > STALE_TMP_S:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass
