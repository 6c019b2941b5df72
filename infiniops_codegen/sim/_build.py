"""Builds the sim backend's CMake project into the tool's cache.

An entry is keyed by the sim sources, torch (version and location: the
libraries' RPATH names torch's lib dir), Python's extension ABI and the
compiler. Parallel processes (pytest-xdist workers) build once: the first
takes a file lock, builds in a temporary directory and publishes the
installed tree with a rename, so an entry is either absent or complete.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from ..base.locations import cache_dir

# Bumped when the layout of an entry changes.
FORMAT = 1
SOURCE_DIR = Path(__file__).resolve().parent
# Entries kept in the cache (others: older sources or other torch installs).
KEEP = 4
# What the build reads; Python files (this one included) do not change it.
SOURCE_GLOBS = ("CMakeLists.txt", "cmake/*", "include/**/*.h", "csrc/*")


class BuildError(ImportError):
    """The sim backend could not be built (the message has the build log)."""


def _torch_dirs() -> tuple[Path, Path]:
    """torch's package dir and its CMake prefix, without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise BuildError("the sim backend needs torch, which is not installed")
    root = Path(spec.origin).parent
    return root, root / "share" / "cmake"


def _torch_version(root: Path) -> str:
    text = (root / "version.py").read_text()
    for line in text.splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("'\"")
    return "unknown"


def _compiler() -> tuple[str, str]:
    """The C++ compiler CMake will pick ($CXX, else c++) and its version."""
    cxx = os.environ.get("CXX") or "c++"
    path = shutil.which(cxx.split()[0]) or cxx
    try:
        version = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=60
        ).stdout.splitlines()[:1]
    except (OSError, subprocess.SubprocessError):
        version = []
    return path, version[0] if version else ""


def sources() -> list[Path]:
    files: set[Path] = set()
    for pattern in SOURCE_GLOBS:
        files.update(p for p in SOURCE_DIR.glob(pattern) if p.is_file())
    return sorted(files)


def key() -> str:
    root, _ = _torch_dirs()
    h = hashlib.sha256()
    for part in (
        str(FORMAT),
        _torch_version(root),
        str(root),
        sys.version,
        sysconfig.get_config_var("EXT_SUFFIX") or "",
        *_compiler(),
    ):
        h.update(part.encode() + b"\0")
    for path in sources():
        h.update(str(path.relative_to(SOURCE_DIR)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def cache_root() -> Path:
    return cache_dir() / "sim"


def _run(cmd: list[str], log: list[str], cwd: Path) -> None:
    proc = subprocess.run(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    log.append("$ " + " ".join(cmd) + "\n" + proc.stdout)
    if proc.returncode != 0:
        text = "".join(log)
        raise BuildError(
            "building the sim backend failed (exit status "
            f"{proc.returncode}); the last lines of its log:\n{text[-6000:]}"
        )


def _build_into(prefix: Path, work: Path) -> None:
    _, torch_cmake = _torch_dirs()
    build = work / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    log: list[str] = []
    _run(
        [
            "cmake",
            *generator,
            "-S",
            str(SOURCE_DIR),
            "-B",
            str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_PREFIX_PATH={torch_cmake}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DCMAKE_INSTALL_PREFIX={prefix}",
        ],
        log,
        work,
    )
    _run(["cmake", "--build", str(build), "--parallel"], log, work)
    _run(["cmake", "--install", str(build)], log, work)


def ensure_built(verbose: bool = False) -> Path:
    """The installed prefix of the current sources, built if missing."""
    entry = cache_root() / key()
    if (entry / "lib").is_dir():
        return entry
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.parent / f"{entry.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (entry / "lib").is_dir():  # another process built it meanwhile
            return entry
        if verbose:
            print(f"building the sim backend into {entry}", file=sys.stderr)
        work = Path(tempfile.mkdtemp(prefix=f"tmp-{entry.name}-", dir=entry.parent))
        try:
            _build_into(work / "prefix", work)
            try:
                os.rename(work / "prefix", entry)
            except OSError:
                if not (entry / "lib").is_dir():
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        _trim(entry)
    return entry


def _trim(current: Path) -> None:
    """Removes all but the KEEP newest entries (a process that loaded a
    removed one keeps its mapped libraries)."""
    entries = [
        p
        for p in current.parent.iterdir()
        if p.is_dir() and not p.name.startswith("tmp-") and p != current
    ]
    entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP - 1 :]:
        # Its lock file stays: a process may hold it.
        shutil.rmtree(old, ignore_errors=True)
