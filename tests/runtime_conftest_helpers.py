"""Helpers of the runtime tests (tests/test_runtime_*.py).

The runtime tests exercise the *built* module `infiniops`: the `ops` fixture
(tests/conftest.py) loads it from the build directory and builds it first with
`python -m infiniops_codegen.cli build` when no module is there, so
`python -m pytest` works on a fresh clone after the install command.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# A full build takes a few minutes on a 2-core machine; give it ample time.
BUILD_TIMEOUT_S = 3600


def build_dir() -> Path:
    """Where the module is loaded from: $INFINIOPS_BUILD_DIR or build/."""
    return Path(os.environ.get("INFINIOPS_BUILD_DIR") or REPO / "build")


def manifest():
    """The manifest of the module under test (the build's; generated/'s
    before anything is built), as `infiniops_codegen.model.manifest.Manifest`."""
    from infiniops_codegen.model import manifest as reader

    if (build_dir() / "manifest.json").is_file():
        return reader.of_build(build_dir())
    return reader.generated()


def subprocess_env() -> dict[str, str]:
    """The environment for child interpreters: the repo importable, and torch's
    lib dir *not* on LD_LIBRARY_PATH (the module must find it by RPATH)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO), env.get("PYTHONPATH")])
    )
    if env.get("LD_LIBRARY_PATH"):
        kept = [p for p in env["LD_LIBRARY_PATH"].split(":") if "torch" not in p]
        env["LD_LIBRARY_PATH"] = ":".join(kept)
    return env


def load_or_build():
    """Import the built module, building the default op set first if the build
    directory holds none, or one built against another torch than the
    installed one (a venv of another release on the same checkout)."""
    from infiniops_codegen.base import torch_build
    from infiniops_codegen.base.locations import TORCH_RECORD, find_module
    from infiniops_codegen.runtime import load

    directory = build_dir()
    with _build_lock(directory):
        built = torch_build.read_record(directory / TORCH_RECORD)
        if find_module(directory) is None or built != torch_build.installed():
            _build_default_set(directory)
    return load(directory)


@contextlib.contextmanager
def _build_lock(directory: Path):
    """Held while one test process checks and builds `directory`: pytest-xdist's
    workers each load the module, and only the first may build it."""
    import fcntl
    import hashlib
    import tempfile

    digest = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"infiniops-test-build-{digest}.lock"
    with open(path, "w") as lock:  # closing it releases the lock
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _build_default_set(directory: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "infiniops_codegen.cli",
        "build",
        "--build-dir",
        str(directory),
    ]
    proc = subprocess.run(
        cmd,
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"building the module failed ({shlex.join(cmd)}, exit "
            f"{proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )


@contextlib.contextmanager
def handle_reuse(module, enabled: bool):
    """Switch the fallback between handle reuse and the from_blob path; always
    restores the previous setting (it is process-global)."""
    previous = module.handle_reuse()
    module.set_handle_reuse(enabled)
    try:
        yield
    finally:
        module.set_handle_reuse(previous)


_OPT_FLAG = re.compile(r"(?:^|\s)(-O(?:[0-9]|s|z|g|fast)?)(?=\s|$)")


def opt_flags(command: str) -> list[str]:
    """Every -O flag of a compiler command line, in order (GCC takes the last)."""
    return _OPT_FLAG.findall(command)
