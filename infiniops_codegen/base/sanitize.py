"""Sanitized builds: `infiniops-codegen build --sanitize address,undefined`
(or `thread`), and how to run Python under one.

The CMake project compiles and links every TU the host compiler builds with
the sanitizers (INFINI_OPS_SANITIZE). The interpreter itself is not
instrumented, so the module loads only into a process that preloads the
sanitizer runtimes: `run_env()` finds them through the compiler and gives the
environment (LD_PRELOAD and the options). The build writes it into the build
directory twice: `sanitize.json` (read by `runtime.load`, which refuses to
load the module without the runtimes instead of letting the process abort)
and `python-sanitized`, a script that runs this interpreter under it.

Standard library only (runtime.load reads the record).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .locations import DATA_DIR, SANITIZE_RECORD

SANITIZERS = ("address", "undefined", "thread")
RECORD = SANITIZE_RECORD  # in a sanitized build directory
SCRIPT = "python-sanitized"  # likewise: runs Python under the sanitizers

# The runtime each sanitizer needs, as GCC names it, in preload order: ASan's
# must come first in the process (it checks), and the runtime that intercepts
# malloc and the threads (ASan's or TSan's) goes before UBSan's.
_RUNTIMES = {
    "address": "libasan.so",
    "thread": "libtsan.so",
    "undefined": "libubsan.so",
}
# A symbol of each runtime that must be preloaded (present in the process when
# it is). UBSan's loads with the module as its dependency just as well; it is
# preloaded only so that every sanitized build runs the same way.
_RUNTIME_SYMBOLS = {"address": "__asan_init", "thread": "__tsan_init"}
# Reports whose every frame is inside libtorch, libpython or ld.so, each with
# its reason; shipped with the tool, the same for every project.
SUPPRESSIONS_DIR = DATA_DIR / "sanitizers"
_SUPPRESSION_FILES = {
    "address": "asan.supp",
    "undefined": "ubsan.supp",
    "thread": "tsan.supp",
}


def parse(value: str) -> tuple[str, ...]:
    """--sanitize's value (names separated by commas) as a tuple in a fixed
    order; ValueError with a message for people when it cannot be built."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in SANITIZERS]
    if unknown or not names:
        raise ValueError(
            f"'{value}' is not a list of sanitizers: use address, undefined, "
            "thread, separated by commas (e.g. --sanitize address,undefined)"
        )
    if "address" in names and "thread" in names:
        raise ValueError(
            "address and thread cannot be combined (the compiler refuses it): "
            "build one, e.g. --sanitize address,undefined, and the other in "
            "another --build-dir with --sanitize thread"
        )
    return tuple(s for s in SANITIZERS if s in names)


def runtime_library(cxx: str, sanitizer: str) -> Path | None:
    """The shared runtime of `sanitizer` that `cxx` links (GCC's
    -print-file-name), its soname's path; None when the compiler knows none."""
    name = _RUNTIMES[sanitizer]
    try:
        out = subprocess.run(
            [cxx, f"-print-file-name={name}"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return None
    path = Path(out)
    if not path.is_absolute() or not path.exists():
        return None  # the compiler echoes the bare name when it has none
    # gcc's libasan.so links to the soname (libasan.so.8): what the module
    # names, and what `ldd` would show.
    if path.is_symlink():
        target = Path(os.readlink(path))
        path = (path.parent / target) if not target.is_absolute() else target
    return Path(os.path.normpath(path))


@dataclass(frozen=True)
class RunEnv:
    """How to run Python under a sanitized build."""

    sanitizers: tuple[str, ...]
    preload: tuple[Path, ...]  # LD_PRELOAD, in order
    missing: tuple[str, ...]  # runtimes the compiler did not name
    options: dict[str, str] = field(default_factory=dict)  # *SAN_OPTIONS, ...
    python: str = sys.executable

    def env(self) -> dict[str, str]:
        """The variables to add to the environment."""
        env = {"LD_PRELOAD": ":".join(str(p) for p in self.preload)}
        env.update(self.options)
        return env

    def command(self, *args: str) -> str:
        """The shell line that runs this interpreter under the sanitizers."""
        words = ["env"] + [f"{k}={v}" for k, v in self.env().items()]
        return shlex.join(words + [self.python, *args])

    def record(self) -> dict:
        return {
            "sanitizers": list(self.sanitizers),
            "preload": [str(p) for p in self.preload],
            "missing": list(self.missing),
            "env": self.env(),
            "python": self.python,
        }


def _options(sanitizers: tuple[str, ...]) -> dict[str, str]:
    def join(items: list[tuple[str, str]], sanitizer: str) -> str:
        supp = SUPPRESSIONS_DIR / _SUPPRESSION_FILES[sanitizer]
        if supp.is_file():
            items.append(("suppressions", str(supp)))
        return ":".join(f"{k}={v}" for k, v in items)

    options = {}
    if "address" in sanitizers:
        # detect_leaks=0: torch's and Python's caches are never freed at exit;
        # every run would end in leak reports of theirs.
        options["ASAN_OPTIONS"] = join(
            [("detect_leaks", "0"), ("halt_on_error", "1")], "address"
        )
        # Python objects from malloc, not from Python's own arenas: ASan then
        # sees a freed list item or tensor object too, not only freed C++.
        options["PYTHONMALLOC"] = "malloc"
    if "undefined" in sanitizers:
        options["UBSAN_OPTIONS"] = join(
            [("halt_on_error", "1"), ("print_stacktrace", "1")], "undefined"
        )
    if "thread" in sanitizers:
        options["TSAN_OPTIONS"] = join(
            [("halt_on_error", "1"), ("second_deadlock_stack", "1")], "thread"
        )
    return options


def run_env(sanitizers: tuple[str, ...], cxx: str) -> RunEnv:
    """The environment that runs Python under a build sanitized with
    `sanitizers` by the C++ compiler `cxx`."""
    found, missing = [], []
    for s in (s for s in _RUNTIMES if s in sanitizers):
        lib = runtime_library(cxx, s)
        if lib is None:
            missing.append(_RUNTIMES[s])
        else:
            found.append(lib)
    return RunEnv(
        sanitizers=sanitizers,
        preload=tuple(found),
        missing=tuple(missing),
        options=_options(sanitizers),
    )


def write(build_dir: Path, env: RunEnv | None) -> None:
    """Record how to run Python under the build (remove the record of an
    earlier sanitized build when env is None)."""
    record, script = build_dir / RECORD, build_dir / SCRIPT
    if env is None:
        record.unlink(missing_ok=True)
        script.unlink(missing_ok=True)
        return
    record.write_text(json.dumps(env.record(), indent=1) + "\n")
    lines = [
        "#!/bin/sh",
        "# Runs Python under this build's sanitizers (infiniops-codegen build",
        "# --sanitize); arguments go to the interpreter. Options already in the",
        "# environment come after these, so they win (e.g. ASAN_OPTIONS=log_path=...).",
    ]
    for name, value in env.env().items():
        if name == "LD_PRELOAD" or name.endswith("_OPTIONS"):  # lists: append
            lines.append(f'{name}={shlex.quote(value)}"${{{name}:+:${name}}}"')
        else:  # a value of the caller's replaces it
            lines.append(f'{name}="${{{name}:-{value}}}"')
    lines.append("export " + " ".join(env.env()))
    lines.append(f'exec {shlex.quote(env.python)} "$@"')
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)


def read(build_dir: Path) -> dict | None:
    """The record of a sanitized build directory; None for any other."""
    try:
        return json.loads((Path(build_dir) / RECORD).read_text())
    except (OSError, ValueError):
        return None


def missing_runtimes(record: dict) -> list[str]:
    """The sanitizers of `record` whose runtime this process has not loaded
    (loading the module would abort the process)."""
    import ctypes

    process = ctypes.CDLL(None)
    return [
        s
        for s in record.get("sanitizers", [])
        if s in _RUNTIME_SYMBOLS and not hasattr(process, _RUNTIME_SYMBOLS[s])
    ]
