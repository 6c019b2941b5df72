"""What a CUDA build of torch needs from the machine to configure.

torch's CMake package, in a CUDA build of torch (the PyPI default: `+cu130`),
looks for the CUDA toolkit and picks GPU architectures
(TorchConfig -> Caffe2Config -> public/cuda.cmake). On a machine without a
GPU, or with an `nvcc` first on PATH that is a wrapper script outside the
toolkit, both fail inside torch's CMake:

- its toolkit search (CMake's old FindCUDA) takes the toolkit root from the
  directory of the `nvcc` first on PATH: a wrapper in /usr/local/bin gives
  /usr/local, and the configure stops with "Could NOT find CUDA";
- without TORCH_CUDA_ARCH_LIST it compiles and runs a CUDA program to ask the
  GPUs their architecture, under the project's C++20, which CMake 3.25 cannot
  ask of nvcc 13 (`requires the language dialect "CUDA20"`).

support/CMakeLists.txt runs this file (as a script: it needs only the
standard library) before find_package(Torch), on a fresh configure. It
writes CMake code that sets what the user did not: the real toolkit root
(CUDA_TOOLKIT_ROOT_DIR, read by FindCUDA; CUDAToolkit_ROOT; the toolkit's
nvcc as CMAKE_CUDA_COMPILER) and TORCH_CUDA_ARCH_LIST (the GPUs' own
architectures, or NO_GPU_ARCH_LIST where no GPU answers), and says so in one
status line; or it exits 1 with a message naming the variable to set. With
the CPU wheel it sets nothing. It never imports torch (seconds for a CUDA
build). docs/building.md, "CUDA builds of torch".

    python cuda_toolkit.py --torch-dir DIR --write FILE [--given NAME,...]
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
from typing import Callable, Mapping

# Variables a user sets to name the toolkit, in the order they are read.
ROOT_VARIABLES = ("CUDAToolkit_ROOT", "CUDA_HOME", "CUDA_PATH")
# Where toolkits are installed when nothing names one.
STANDARD_ROOTS = ("/usr/local/cuda", "/usr/local/cuda-*", "/opt/cuda")
# Where no GPU answers: one architecture that every CUDA 12 and 13 nvcc
# compiles (Ampere, sm_80), with PTX so the kernels still load on any newer
# GPU. Only the native CUDA kernels of --platform nvidia use it.
NO_GPU_ARCH_LIST = "8.0+PTX"
# The configure's status line starts so (builder.py shows it).
STATUS = "infiniops cuda: "


class ToolkitError(Exception):
    """No usable CUDA toolkit for a CUDA build of torch; the message names
    the variable to set."""


@dataclass(frozen=True)
class TorchBuild:
    version: str  # torch.__version__, e.g. "2.11.0+cu130"
    cuda: str | None  # torch.version.cuda ("13.0"); None: a CPU build


@dataclass(frozen=True)
class Toolkit:
    root: Path
    version: str | None  # "13.0.88" from its version.json, when it has one
    how: str  # how it was found, for people


@dataclass(frozen=True)
class ArchList:
    value: str  # TORCH_CUDA_ARCH_LIST
    how: str


def torch_build(torch_dir: Path) -> TorchBuild | None:
    """A torch's version and CUDA version, from torch_dir/version.py (read,
    not imported: importing a CUDA build of torch costs seconds). None
    without one (no torch there, or a C++-only libtorch)."""
    try:
        text = (Path(torch_dir) / "version.py").read_text()
    except OSError:
        return None
    version = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    cuda = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return TorchBuild(
        version=version.group(1) if version else "?",
        cuda=cuda.group(1) if cuda else None,
    )


def is_toolkit(root: Path) -> bool:
    """root holds a CUDA toolkit: its nvcc and its runtime headers."""
    root = Path(root)
    return (root / "bin" / "nvcc").is_file() and (
        root / "include" / "cuda_runtime.h"
    ).is_file()


def toolkit_version(root: Path) -> str | None:
    """The toolkit's version: from its version.json (a full install), else
    from include/cuda.h's CUDA_VERSION (major.minor only)."""
    try:
        data = json.loads((Path(root) / "version.json").read_text())
        return str(data["cuda"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        header = (Path(root) / "include" / "cuda.h").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"^#define CUDA_VERSION (\d+)", header, re.M)
    if not m:
        return None
    number = int(m.group(1))
    return f"{number // 1000}.{number % 1000 // 10}"


def nvcc_top(nvcc: str) -> Path | None:
    """Where an nvcc (or a script that runs one) says its toolkit is: its
    dry run prints the toolkit's bin directory as `_HERE_=`."""
    try:
        proc = subprocess.run(
            [nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"^#\$ _HERE_=(.+)$", proc.stdout + proc.stderr, re.M)
    return Path(m.group(1).strip()).parent if m else None


def find_toolkit(
    env: Mapping[str, str],
    which: Callable[[str], str | None] = shutil.which,
    ask_nvcc: Callable[[str], Path | None] = nvcc_top,
    standard_roots: tuple[str, ...] | None = None,
) -> Toolkit:
    """The CUDA toolkit to configure with: the one a variable of
    ROOT_VARIABLES names (it must be one), else the one of the nvcc first on
    PATH (through symbolic links and wrapper scripts), else the first of
    standard_roots (default STANDARD_ROOTS). ToolkitError naming the
    variable to set otherwise."""
    if standard_roots is None:
        standard_roots = STANDARD_ROOTS
    for name in ROOT_VARIABLES:
        value = env.get(name)
        if value:
            if not is_toolkit(Path(value)):
                raise ToolkitError(
                    f"{name}={value} is not a CUDA toolkit (no bin/nvcc and "
                    f"include/cuda_runtime.h there): set {name} to the toolkit's "
                    "root (the directory holding bin/nvcc)"
                )
            return _toolkit(Path(value), name)
    nvcc = which("nvcc")
    if nvcc:
        real = Path(nvcc).resolve()
        if is_toolkit(real.parent.parent):
            return _toolkit(real.parent.parent, f"nvcc on PATH ({nvcc})")
        top = ask_nvcc(nvcc)
        if top is not None and is_toolkit(top):
            return _toolkit(
                top.resolve(), f"nvcc on PATH ({nvcc}, which runs {top}/bin/nvcc)"
            )
    for pattern in standard_roots:
        for root in _newest_first(pattern):
            if is_toolkit(root):
                return _toolkit(root, f"found in {pattern}")
    where = f"the nvcc on PATH ({nvcc}) is not in one" if nvcc else "no nvcc on PATH"
    raise ToolkitError(
        f"no CUDA toolkit found ({where}; none in {', '.join(standard_roots)}): "
        "install the CUDA toolkit, or set CUDAToolkit_ROOT to its root "
        "(the directory holding bin/nvcc)"
    )


def _toolkit(root: Path, how: str) -> Toolkit:
    return Toolkit(root=root, version=toolkit_version(root), how=how)


def _newest_first(pattern: str) -> list[Path]:
    """The directories a glob pattern names, highest version first."""
    if "*" not in pattern:
        return [Path(pattern)]
    found = [Path(p) for p in Path("/").glob(pattern.lstrip("/"))]

    def key(path: Path) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path.name))

    return sorted(found, key=key, reverse=True)


def gpu_architectures(
    which: Callable[[str], str | None] = shutil.which,
) -> list[str]:
    """The compute capabilities of this machine's GPUs ("9.0", ...), from
    nvidia-smi; empty when it is absent or no GPU answers."""
    smi = which("nvidia-smi")
    if not smi:
        return []
    try:
        proc = subprocess.run(
            [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if proc.returncode != 0:
        return []
    found = re.findall(r"^\s*(\d+\.\d+)\s*$", proc.stdout, re.M)
    return list(dict.fromkeys(found))


def arch_list(gpus: list[str]) -> ArchList:
    """TORCH_CUDA_ARCH_LIST for this machine's GPUs, or NO_GPU_ARCH_LIST."""
    if gpus:
        return ArchList(";".join(gpus), "the GPUs of this machine (nvidia-smi)")
    return ArchList(NO_GPU_ARCH_LIST, "no GPU here")


@dataclass(frozen=True)
class Settings:
    """What `settings` found: the values to set, None where the user set
    one."""

    torch: TorchBuild
    toolkit: Toolkit | None  # None: the user named it (-D...)
    arch: ArchList | None  # None: the user set TORCH_CUDA_ARCH_LIST
    compiler: Path | None  # CMAKE_CUDA_COMPILER; None: the user's (CUDACXX, -D)

    def describe(self) -> str:
        parts = [f"torch {self.torch.version} is a CUDA {self.torch.cuda} build"]
        if self.toolkit is not None:
            version = f" {self.toolkit.version}" if self.toolkit.version else ""
            parts.append(
                f"CUDA toolkit{version} at {self.toolkit.root} ({self.toolkit.how})"
            )
            if not _same_release(self.toolkit.version, self.torch.cuda):
                # Only native CUDA kernels are compiled with the toolkit; the
                # rest of the build uses torch's own CUDA runtime, if any.
                parts.append(
                    f"torch was built with CUDA {self.torch.cuda}: native CUDA "
                    "kernels (--platform nvidia) are compiled with the toolkit's"
                )
        if self.arch is not None:
            parts.append(
                f"TORCH_CUDA_ARCH_LIST={self.arch.value} ({self.arch.how}; "
                "set TORCH_CUDA_ARCH_LIST to choose)"
            )
        return "; ".join(parts)


def _same_release(toolkit: str | None, cuda: str | None) -> bool:
    """The toolkit is torch's CUDA release (major.minor), or unknown."""
    if toolkit is None or cuda is None:
        return True
    return toolkit.split(".")[:2] == cuda.split(".")[:2]


def settings(
    env: Mapping[str, str],
    given: set[str],
    torch: TorchBuild | None,
    which: Callable[[str], str | None] = shutil.which,
    ask_nvcc: Callable[[str], Path | None] = nvcc_top,
    gpus: Callable[[], list[str]] | None = None,
) -> Settings | None:
    """What a configure against this torch needs (None for a CPU build, or
    no torch). given: the CMake variables already set (-D, or a configure
    before): those are not looked for. ToolkitError when no toolkit is
    found."""
    if torch is None or torch.cuda is None:
        return None
    toolkit = None
    if not given & {"CUDA_TOOLKIT_ROOT_DIR", "CUDAToolkit_ROOT"}:
        toolkit = find_toolkit(env, which, ask_nvcc)
    arch = None
    if "TORCH_CUDA_ARCH_LIST" not in given and not env.get("TORCH_CUDA_ARCH_LIST"):
        arch = arch_list(gpus() if gpus is not None else gpu_architectures(which))
    compiler = None
    if toolkit is not None and "CMAKE_CUDA_COMPILER" not in given:
        if not env.get("CUDACXX"):
            # Else CMake takes the nvcc first on PATH, and torch's CMake stops
            # when its version differs from the toolkit's.
            compiler = toolkit.root / "bin" / "nvcc"
    return Settings(torch=torch, toolkit=toolkit, arch=arch, compiler=compiler)


def _quoted(value: str) -> str:
    """value as a quoted CMake argument."""
    for char in ("\\", '"', "$"):
        value = value.replace(char, "\\" + char)
    return f'"{value}"'


def render_cmake(found: Settings | None) -> str:
    """The CMake code that sets what `settings` found (cache entries: a
    later configure of the same build directory keeps them)."""
    if found is None:
        return "# a CPU build of torch: nothing to set\n"
    if found.toolkit is None and found.arch is None:
        return "# everything set already (-D, or an earlier configure)\n"
    lines = []
    if found.toolkit is not None:
        root = _quoted(str(found.toolkit.root))
        lines += [
            f'set(CUDA_TOOLKIT_ROOT_DIR {root} CACHE PATH "CUDA toolkit (cuda_toolkit.py)")',
            f"set(CUDAToolkit_ROOT {root})",
        ]
    if found.compiler is not None:
        lines.append(
            f"set(CMAKE_CUDA_COMPILER {_quoted(str(found.compiler))} CACHE FILEPATH "
            '"nvcc of the CUDA toolkit (cuda_toolkit.py)")'
        )
    if found.arch is not None:
        lines.append(
            f"set(TORCH_CUDA_ARCH_LIST {_quoted(found.arch.value)} CACHE STRING "
            '"GPU architectures (cuda_toolkit.py)")'
        )
    lines.append(f"message(STATUS {_quoted(STATUS + found.describe())})")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch-dir", type=Path, required=True)
    parser.add_argument("--write", type=Path, required=True)
    parser.add_argument("--given", default="", help="CMake variables already set")
    args = parser.parse_args(argv)
    torch = torch_build(args.torch_dir)
    given = {n for n in re.split(r"[,;]", args.given) if n}
    try:
        found = settings(os.environ, given, torch)
    except ToolkitError as e:
        print(
            f"torch {torch.version} is a CUDA {torch.cuda} build, and its CMake "
            f"package needs the CUDA toolkit: {e}",
            file=sys.stderr,
        )
        return 1
    args.write.write_text(render_cmake(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
