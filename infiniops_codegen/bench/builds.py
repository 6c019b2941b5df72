"""The before and after builds the bench times: checked, built when missing.

Builds go through `python -m infiniops_codegen.cli build` in a child process.
The before build is the bench's own: it is (re)built when it lacks ops (then
with the union of what it has and what is needed, so a narrow run never
shrinks it), has another optimisation level, or is older than the sources
(an incremental build; when that fails, the existing module is used with a
warning). The after build is only built when it holds no module at
all (then with the default op set, as the runtime tests do); otherwise it is
used as it is, and configurations of ops it lacks are skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..builder import find_module
from ..pipeline import REPO_ROOT


class BuildFailed(Exception):
    pass


@dataclass(frozen=True)
class BuildInfo:
    build_dir: Path
    opt_level: str  # as configured ("?" when unknown)
    ops: frozenset[str]
    module: Path

    def manifest(self) -> dict:
        return json.loads((self.build_dir / "manifest.json").read_text())


def _opt_level(build_dir: Path) -> str:
    try:
        args = json.loads((build_dir / ".infiniops-configure.json").read_text())
    except (OSError, ValueError):
        return "?"
    for a in args:
        if a.startswith("-DINFINI_OPS_TORCH_OPT_LEVEL="):
            return a.split("=", 1)[1]
    return "?"


def inspect(build_dir: Path) -> BuildInfo | None:
    module = find_module(build_dir)
    manifest = build_dir / "manifest.json"
    if module is None or not manifest.is_file():
        return None
    ops = frozenset(o["name"] for o in json.loads(manifest.read_text())["ops"])
    return BuildInfo(build_dir, _opt_level(build_dir), ops, module)


def _build(build_dir: Path, opt_level: str, ops: list[str] | None, echo) -> None:
    cmd = [sys.executable, "-m", "infiniops_codegen.cli", "build"]
    cmd += ["--opt-level", opt_level, "--build-dir", str(build_dir)]
    if ops is not None:
        cmd += ["--ops", ",".join(sorted(ops)), "--no-smoke"]
    what = f"{len(ops)} ops" if ops is not None else "the default op set"
    echo(f"building {build_dir} (-O{opt_level}, {what}); this takes minutes")
    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        echo(f"  {line.rstrip()}")
        tail = (tail + [line.rstrip()])[-40:]
    if proc.wait() != 0:
        raise BuildFailed(f"building {build_dir} failed:\n" + "\n".join(tail))


SOURCE_GLOBS = (
    "cpp/**/*",
    "templates/*",
    "op_specs/*.yaml",
    "CMakeLists.txt",
    "infiniops_codegen/*.py",
)


def newest_source() -> float:
    """The latest modification time among what a build is made from."""
    return max(
        (p.stat().st_mtime for g in SOURCE_GLOBS for p in REPO_ROOT.glob(g)),
        default=0.0,
    )


# What the compiled module is made of (generated/ follows op_specs/ and the
# templates; `build` regenerates it first): a module older than one of these
# is stale, and a no-op `build` after a change elsewhere leaves it as it is.
MODULE_INPUTS = ("cpp/**/*", "generated/**/*", "cmake/**/*", "CMakeLists.txt")


def stale_inputs(module: Path) -> list[str]:
    """Module inputs modified after the module was built."""
    built = module.stat().st_mtime
    return sorted(
        str(p.relative_to(REPO_ROOT))
        for g in MODULE_INPUTS
        for p in REPO_ROOT.glob(g)
        if p.is_file() and p.stat().st_mtime > built
    )


def ensure_before(build_dir: Path, opt_level: str, ops: set[str], echo) -> BuildInfo:
    info = inspect(build_dir)
    wanted = set(ops) | (set(info.ops) if info is not None else set())
    if info is not None and ops <= info.ops and info.opt_level == opt_level:
        if info.module.stat().st_mtime >= newest_source():
            return info
        echo(f"{build_dir} is older than the sources: updating it")
        try:
            _build(build_dir, opt_level, sorted(wanted), echo)
        except BuildFailed as e:
            echo(f"warning: {e}\nwarning: timing the existing {build_dir} module")
        return inspect(build_dir) or info
    _build(build_dir, opt_level, sorted(wanted), echo)
    info = inspect(build_dir)
    if info is None:
        raise BuildFailed(f"{build_dir} holds no module after building")
    return info


def ensure_after(build_dir: Path, echo) -> BuildInfo:
    info = inspect(build_dir)
    if info is None:
        _build(build_dir, "3", None, echo)
        info = inspect(build_dir)
        if info is None:
            raise BuildFailed(f"{build_dir} holds no module after building")
    elif info.opt_level not in ("3", "?"):
        echo(f"note: {build_dir} was built at -O{info.opt_level}, not -O3")
    return info
