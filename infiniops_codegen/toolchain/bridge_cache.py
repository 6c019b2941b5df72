"""A cache of the torch bridge's objects and the precompiled header, shared by
build directories and projects (docs/design/bridge-cache.md).

The bridge (support/cpp/torch) names no op: its object code depends only on
its sources, the dtype and platform tables, the compiler, the flags, torch
and Python. An entry is keyed by a hash of exactly those, taken from the
compile commands themselves so that a new flag cannot be left out of the key.

`infiniops-codegen build` (builder.py) uses it: after configuring, it computes
the key from the build directory's compile_commands.json (of_build), looks the
entry up and, on a hit, configures the directory to link the entry's objects
(CMake's INFINI_OPS_BRIDGE_ENTRY); on a miss it builds them in-tree and
publishes them once the build succeeded.
"""

from __future__ import annotations

import errno
import shlex
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..base.locations import SUPPORT_DIR, cache_dir, cmake_cache

# Bumped when an entry's layout or the key's document changes: old entries
# then simply miss.
FORMAT = 1
SUPPORT_CPP = SUPPORT_DIR / "cpp"
# What the bridge and the precompiled header include of the tool's C++.
SOURCE_DIRS = ("torch", "core", "runtime")
# The generated headers they include (rendered from the tool's data tables).
TABLES = ("dtype_table.h", "platform_table.h", "torch_tables.h")
KEY_FILE = "key.json"
# Placeholders for the only per-project paths of the compile commands.
BUILD_DIR = "@build@"
GENERATED_DIR = "@generated@"
# A wheel's build (support/CMakeLists.txt: INFINI_OPS_WHEEL) maps the paths
# its objects would keep to fixed ones (-ffile-prefix-map=OLD=NEW): the old
# paths are not in the objects, and the site-packages that torch and the
# tool come from (a build environment of its own per `pip wheel`) are known
# by content (the torch record and version.py, the tool's source digests).
MAPPED = "@mapped@"
SITE = "@site@"
PREFIX_MAPS = ("-ffile-prefix-map=", "-fdebug-prefix-map=", "-fmacro-prefix-map=")
# An unfinished entry older than this was left by a killed build.
STALE_TMP_S = 24 * 3600


# The targets whose objects an entry holds (support/CMakeLists.txt).
TARGETS = ("infiniops_aten", "infiniops_bridge")
# Environment: the cache's directory (default: beside the tool's other
# caches), a non-empty value that bypasses it (as --no-cache), and how many
# entries are kept.
DIR_ENV = "INFINIOPS_BRIDGE_CACHE_DIR"
BYPASS_ENV = "INFINIOPS_NO_BRIDGE_CACHE"
KEEP_ENV = "INFINIOPS_BRIDGE_CACHE_KEEP"
KEEP = 4  # entries are ~272 MB each with GCC's precompiled header


def cache_root() -> Path:
    """Where entries live: $INFINIOPS_BRIDGE_CACHE_DIR, else bridge/ beside
    the tool's other caches ($INFINIOPS_CODEGEN_CACHE, $XDG_CACHE_HOME/
    infiniops-codegen or ~/.cache/infiniops-codegen)."""
    env = os.environ.get(DIR_ENV)
    return Path(env) if env else cache_dir() / "bridge"


def bypassed_by_env() -> bool:
    return bool(os.environ.get(BYPASS_ENV))


def keep() -> int:
    """How many entries trim() keeps ($INFINIOPS_BRIDGE_CACHE_KEEP, >= 1)."""
    try:
        return max(1, int(os.environ.get(KEEP_ENV, KEEP)))
    except ValueError:
        return KEEP


@dataclass(frozen=True)
class Inputs:
    """What determines the cached objects' code, as a build knows it."""

    commands: tuple[str, ...]  # compile commands of the cached TUs
    build_dir: Path
    generated_dir: Path
    compiler: str  # CMAKE_CXX_COMPILER
    torch_record: str  # text of CMakeFiles/torch-build.json
    # Name -> fingerprint of other inputs: the build directory's own sources
    # of the cached TUs (the unity file, the PCH's header), torch's
    # version.py, Python's patchlevel.h.
    extra: tuple[tuple[str, str], ...] = ()
    # The site-packages torch is in, where the commands map it away (a
    # wheel's build): a placeholder in the key.
    site: Path | None = None


def normalise_command(
    command: str, build_dir: Path, generated_dir: Path, site: Path | None = None
) -> str:
    """command with the build and generated directories as placeholders: they
    differ per project, and what is read from them is hashed by content.

    Only whole arguments are replaced (the generated directory itself, paths
    under the build directory's CMakeFiles/), never a prefix of another path:
    a torch installed under a build directory stays literal. A prefix map's
    old path is a placeholder too (the objects keep the new one), and so is
    `site` wherever it appears, given only where the commands map it (a
    wheel's build: see MAPPED)."""
    spellings = []
    for path, name in ((generated_dir, GENERATED_DIR), (build_dir, BUILD_DIR)):
        for spelling in dict.fromkeys((str(path), str(Path(path).resolve()))):
            spellings.append((spelling, name))

    def one(arg: str) -> str:
        for flag in PREFIX_MAPS:
            if arg.startswith(flag):
                return f"{flag}{MAPPED}={arg.rpartition('=')[2]}"
        for flag in ("-I", "-isystem", "-iquote", ""):
            if not arg.startswith(flag):
                continue
            value = arg[len(flag) :]
            for spelling, name in spellings:
                if name == GENERATED_DIR and value == spelling:
                    return flag + name
                if name == BUILD_DIR and value.startswith(spelling + "/CMakeFiles/"):
                    return flag + name + value[len(spelling) :]
        return _site(arg, site)

    return shlex.join(one(arg) for arg in shlex.split(command))


def _site(text: str, site: Path | None) -> str:
    if site is None:
        return text
    for spelling in dict.fromkeys((str(site), str(Path(site).resolve()))):
        text = text.replace(spelling + "/", SITE + "/")
    return text


def mapped_site(commands, torch_dir: str | None) -> Path | None:
    """The site-packages holding torch (Torch_DIR is its
    torch/share/cmake/Torch) when some command maps it away
    (-ffile-prefix-map=<site>/=...), else None."""
    if not torch_dir:
        return None
    site = Path(torch_dir).parents[3]
    wanted = {
        f"{flag}{spelling}/="
        for flag in PREFIX_MAPS
        for spelling in (str(site), str(site.resolve()))
    }
    for command in commands:
        for arg in shlex.split(command):
            if any(arg.startswith(w) for w in wanted):
                return site
    return None


def _normalise_text(
    text: str, build_dir: Path, generated_dir: Path, site: Path | None = None
) -> str:
    """A file's text (CMake's unity file, the PCH's header) or path with the
    project's directories (and a mapped site-packages) as placeholders. Only
    absolute spellings are replaced, as CMake writes them: a relative one
    ("build-all") is also a substring of the absolute path, which it would
    corrupt (and the key of the same build would then depend on how
    --build-dir was spelled)."""
    for path, name in ((generated_dir, GENERATED_DIR), (build_dir, BUILD_DIR)):
        for spelling in dict.fromkeys(
            (str(Path(path).absolute()), str(Path(path).resolve()))
        ):
            text = text.replace(spelling + "/", name + "/")
    return _site(text, site)


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
            normalise_command(c, inputs.build_dir, inputs.generated_dir, inputs.site)
            for c in inputs.commands
        ],
        "sources": source_digests(support_cpp),
        "tables": {
            name: _digest((inputs.generated_dir / name).read_bytes()) for name in TABLES
        },
        "compiler": compiler_identity(inputs.compiler),
        "torch": inputs.torch_record,
        "extra": dict(inputs.extra),
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
    try:
        os.utime(entry)  # the newest used are kept when trimming
    except OSError:
        pass  # a read-only cache is still usable
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


# --- Reading a configured build directory --------------------------------------


@dataclass(frozen=True)
class Cached:
    """The cached TUs of a configured build directory: the key's inputs and
    the files an entry gets (entry name -> path in the build directory)."""

    inputs: Inputs
    files: dict[str, Path]


def _output(args: list[str]) -> str | None:
    for i, arg in enumerate(args[:-1]):
        if arg == "-o":
            return args[i + 1]
    return None


def _strip_launcher(args: list[str], compiler: str) -> list[str]:
    """args from the compiler on: a launcher (ccache, distcc) before it does
    not change the object code."""
    real = os.path.realpath(shutil.which(compiler) or compiler)
    for i, arg in enumerate(args):
        if os.path.realpath(shutil.which(arg) or arg) == real:
            return args[i:]
    return args


def _fingerprint(path: Path, normalise=None) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return "missing"
    if normalise is not None:
        data = normalise(data.decode(errors="surrogateescape")).encode(
            errors="surrogateescape"
        )
    return _digest(data)


def of_build(build_dir: Path, generated_dir: Path) -> Cached | None:
    """The cached TUs' inputs, read from a configured build directory's
    compile_commands.json and CMake cache; None when it has none of them (an
    older layout, a failed configure)."""
    build_dir = Path(build_dir)
    cmake = cmake_cache(build_dir)
    compiler = cmake.get("CMAKE_CXX_COMPILER")
    try:
        entries = json.loads((build_dir / "compile_commands.json").read_text())
        torch_record = (build_dir / "CMakeFiles" / "torch-build.json").read_text()
    except (OSError, ValueError):
        return None
    if not compiler:
        return None
    site = mapped_site(
        [
            e["command"] if "command" in e else shlex.join(e["arguments"])
            for e in entries
        ],
        cmake.get("Torch_DIR"),
    )
    norm = lambda text: _normalise_text(text, build_dir, generated_dir, site)
    commands, files, extra = [], {}, {}
    dirs = tuple(f"CMakeFiles/{t}.dir/" for t in TARGETS)
    for e in entries:
        args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
        out = _output(args)
        if out is None or not out.startswith(dirs):
            continue
        args = _strip_launcher(args, compiler)
        commands.append(shlex.join(args))
        source = Path(e["file"])
        if source.is_relative_to(build_dir) or source.resolve().is_relative_to(
            build_dir.resolve()
        ):  # CMake's unity file, the PCH's source
            extra[norm(str(source))] = _fingerprint(source, norm)
        obj = Path(e["directory"]) / out
        if obj.suffix == ".pch":
            # Clang's PCH checks its headers' paths and mtimes when loaded:
            # not shared (CMake builds it in-tree for the shards).
            continue
        files[obj.name] = obj
        if obj.name.endswith(".hxx.gch"):  # GCC's PCH: its header beside it
            header = obj.with_name(obj.name[: -len(".gch")])
            files[header.name] = header
            extra[norm(str(header))] = _fingerprint(header, norm)
    if not commands:
        return None
    # torch's and Python's headers: their install paths are in the commands;
    # a reinstall of another build at the same path changes these.
    torch_dir = cmake.get("Torch_DIR")
    if torch_dir:
        version_py = Path(torch_dir).parents[2] / "version.py"
        extra["torch/version.py"] = _fingerprint(version_py)
    for arg in " ".join(commands).split():
        if arg.startswith("/") and (Path(arg) / "patchlevel.h").is_file():
            extra["python/patchlevel.h"] = _fingerprint(Path(arg) / "patchlevel.h")
    inputs = Inputs(
        commands=tuple(sorted(commands)),
        build_dir=build_dir,
        generated_dir=Path(generated_dir),
        compiler=compiler,
        torch_record=torch_record,
        extra=tuple(sorted(extra.items())),
        site=site,
    )
    return Cached(inputs, files)


# --- Keeping the cache small ------------------------------------------------------


def entries(root: Path) -> list[Path]:
    """Complete entries, newest used first."""
    try:
        found = [p for p in root.iterdir() if (p / KEY_FILE).is_file()]
    except OSError:
        return []

    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(found, key=mtime, reverse=True)


def trim(
    root: Path, keep_n: int | None = None, spare: Path | None = None
) -> list[Path]:
    """Remove all but the keep_n newest used entries (and never `spare`, the
    entry just published or used); returns those removed. An entry goes by a
    rename first, so no build ever sees half of one."""
    keep_n = keep() if keep_n is None else keep_n
    removed = []
    kept = 0
    for entry in entries(root):
        if spare is not None and entry == spare:
            continue
        kept += 1
        if kept < keep_n or (spare is None and kept == keep_n):
            continue
        trash = root / f"tmp-trash-{os.getpid()}-{entry.name}"
        try:
            os.rename(entry, trash)
        except OSError:
            continue  # another build removed it first
        shutil.rmtree(trash, ignore_errors=True)
        removed.append(entry)
    return removed
