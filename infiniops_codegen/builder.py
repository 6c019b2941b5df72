"""`infiniops-codegen build`: configure CMake with Ninja and compile.

The generated sources are refreshed first (only changed files are written,
so Ninja recompiles only what changed); a compile error is reported with the
shard and the ops it holds, and the compiler's first error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .pipeline import REPO_ROOT
from .platforms import load_platforms

OPT_LEVELS = ("0", "1", "2", "3", "s")
MODULE_NAME = "infiniops"
_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] ")


class BuildError(Exception):
    """A failed configure or compile; the message is for people."""


@dataclass(frozen=True)
class BuildConfig:
    build_dir: Path
    generated_dir: Path
    opt_level: str = "3"
    jobs: int = os.cpu_count() or 1
    ccache: bool = True
    extra_cmake_args: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ("cpu",)  # names from data/platforms.yaml
    compile_only: bool = False  # objects only: no module, no smoke check
    kernel_compilers: tuple[tuple[str, str], ...] = ()  # (platform, compiler)

    def cmake_args(self) -> list[str]:
        args = [
            f"-DINFINI_OPS_TORCH_OPT_LEVEL={self.opt_level}",
            f"-DINFINI_OPS_GENERATED_DIR={self.generated_dir.resolve()}",
            f"-DPython_EXECUTABLE={sys.executable}",
        ]
        launcher = shutil.which("ccache") if self.ccache else None
        if launcher:
            # Without this sloppiness ccache refuses TUs that use the PCH.
            sloppiness = "pch_defines,time_macros,include_file_mtime,include_file_ctime"
            launcher = f"env;CCACHE_SLOPPINESS={sloppiness};{launcher}"
        args.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher or ''}")
        for p in load_platforms():
            args.append(f"-D{p.flag}={'ON' if p.name in self.platforms else 'OFF'}")
        for name, compiler in self.kernel_compilers:
            args.append(f"-DINFINI_OPS_{name.upper()}_COMPILER={compiler}")
        args.append(f"-DINFINI_OPS_COMPILE_ONLY={'ON' if self.compile_only else 'OFF'}")
        return args + list(self.extra_cmake_args)


def require_tools() -> None:
    missing = [tool for tool in ("cmake", "ninja") if shutil.which(tool) is None]
    if missing:
        raise BuildError(
            f"{' and '.join(missing)} not found on PATH; install them "
            "(e.g. 'apt-get install cmake ninja-build' or 'pip install cmake ninja')"
        )


def configure(config: BuildConfig, echo) -> None:
    """Run CMake unless the build dir was configured with the same arguments
    (CMake costs seconds; Ninja itself re-runs it when CMakeLists changes)."""
    args = config.cmake_args()
    stamp = config.build_dir / ".infiniops-configure.json"
    cache = config.build_dir / "CMakeCache.txt"
    if cache.is_file() and stamp.is_file():
        try:
            if json.loads(stamp.read_text()) == args:
                return
        except ValueError:
            pass
    config.build_dir.mkdir(parents=True, exist_ok=True)
    echo(f"configuring {config.build_dir} (-O{config.opt_level})")
    cmd = ["cmake", "-S", str(REPO_ROOT), "-B", str(config.build_dir), "-G", "Ninja"]
    proc = subprocess.run(cmd + args, capture_output=True, text=True)
    if proc.returncode != 0:
        stamp.unlink(missing_ok=True)
        raise BuildError("CMake configure failed:\n" + _cmake_error(proc))
    stamp.write_text(json.dumps(args))


def _cmake_error(proc: subprocess.CompletedProcess) -> str:
    text = (proc.stderr or "") + (proc.stdout or "")
    lines = [l for l in text.splitlines() if l.strip()]
    start = next((i for i, l in enumerate(lines) if "CMake Error" in l), 0)
    return "\n".join(lines[start : start + 12])


def compile_all(config: BuildConfig, echo, shard_ops: dict[str, list[str]]) -> int:
    """Run Ninja with progress lines; returns the number of steps run."""
    # -k 0: keep going, so one build reports every shard that fails.
    cmd = ["ninja", "-C", str(config.build_dir), f"-j{config.jobs}", "-k", "0"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output: list[str] = []
    steps = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        output.append(line)
        m = _PROGRESS.match(line)
        if m:
            steps = int(m.group(2))
            echo(f"[{m.group(1)}/{m.group(2)}] {_short_step(line[m.end():])}")
    if proc.wait() != 0:
        raise BuildError(_compile_error(output, shard_ops))
    return steps


def _short_step(text: str) -> str:
    """'Building CXX object CMakeFiles/x.dir/generated/a.cpp.o' -> 'compile a.cpp'."""
    m = re.match(r"Building (?:CXX|CUDA|VENDORCXX) object .*?\.dir/(.*)\.o$", text)
    if m:
        return f"compile {m.group(1)}"
    return text


def _compile_error(output: list[str], shard_ops: dict[str, list[str]]) -> str:
    """Every failed step, each with its ops and the compiler's first error."""
    failed = [i for i, l in enumerate(output) if l.startswith("FAILED:")]
    if not failed:
        return "the build failed:\n" + "\n".join(output[-20:])
    parts = []
    for n, i in enumerate(failed):
        end = failed[n + 1] if n + 1 < len(failed) else len(output)
        block = output[i:end]
        where = _failed_target(output[i], shard_ops)
        first = next((k for k, l in enumerate(block) if ": error:" in l), None)
        detail = block[first : first + 6] if first is not None else block[1:8]
        parts.append(where + ":\n" + "\n".join(detail))
    summary = f"{len(failed)} build step(s) failed"
    return summary + "\n" + "\n".join(parts)


def _failed_target(line: str, shard_ops: dict[str, list[str]]) -> str:
    for shard, ops in shard_ops.items():
        if shard in line:
            return f"{shard} failed to compile (ops: {', '.join(ops)})"
    m = re.search(r"(\S+\.(?:cpp|cc|cu|maca|mu|mlu))\.o", line)
    return f"{m.group(1) if m else line} failed to compile"


def find_module(build_dir: Path) -> Path | None:
    found = sorted(build_dir.glob(f"{MODULE_NAME}.*.so")) + sorted(
        build_dir.glob(f"{MODULE_NAME}.*.pyd")
    )
    return found[0] if found else None


def smoke_check(build_dir: Path, op_count: int) -> str:
    """Import the module in a fresh interpreter and call one op."""
    code = (
        "import sys, torch\n"
        "from infiniops_codegen.runtime import load\n"
        f"m = load({str(build_dir)!r})\n"
        f"assert len(m.implementations()) == {op_count}, len(m.implementations())\n"
        "if hasattr(m, 'add'):\n"
        "    x = torch.arange(6.0).reshape(2, 3); out = torch.empty(2, 3)\n"
        "    m.add(x, x.t().contiguous().t(), alpha=2, out=out)\n"
        "    torch.testing.assert_close(out, x + 2 * x)\n"
        "    print('add ok;', end=' ')\n"
        "print(len(m.implementations()), 'ops importable')\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise BuildError("smoke check failed:\n" + (proc.stderr or proc.stdout)[-2000:])
    return proc.stdout.strip()
