"""Host-compiler path of the platforms whose vendor compiler must not compile
the torch bridge (MetaX, Moore: `host_compiled_bridge` in platforms.yaml).

A fake vendor compiler (tests/fake_vendor_cxx.sh: records its command line,
then runs g++) is configured as the platform's kernel compiler. The build
compiles the platform's kernels and the torch-free dispatch and bindings;
the recorded invocations and compile_commands.json must show the kernel
sources going through the vendor compiler and only them, while the bridge
and wrappers are compiled by the host compiler, the bridge at -O3.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infiniops_codegen.toolchain.builder import BuildConfig
from infiniops_codegen.base.locations import SUPPORT_DIR

pytestmark = pytest.mark.own_build(
    "other platform sets: projects built for vendor compilers"
)

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "fake_vendor_cxx.sh"

SPEC = """
ops:
  - {aten: add.out, native: [metax, moore]}
  - {aten: mul.out, native: [cpu]}
  - abs.out
"""
# A kernel in plain C++ (the fake compiler is g++): declines every call, so
# the op falls back to PyTorch; it must match generated/native_kernels.h.
KERNEL = """
#include "native_kernels.h"

namespace infini::ops::native::{platform} {{
KernelResult add(const Tensor&, const Tensor&, const Scalar&, Tensor&, Stream) {{ return false; }}
}}  // namespace infini::ops::native::{platform}
"""
EXTENSION = {"metax": "maca", "moore": "mu"}


def _run(cmd, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, errors="replace", **kwargs
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def _configure(base: Path, platform: str, cxx: str | None = None):
    """Generate the spec and configure a build of cpu + platform with the fake
    vendor compiler; returns (build dir, kernel source, completed configure)."""
    specs, generated, kernels = base / "specs", base / "generated", base / "kernels"
    for d in (specs, kernels):
        d.mkdir(parents=True, exist_ok=True)
    (specs / "ops.yaml").write_text(SPEC)
    kernel = kernels / f"add.{EXTENSION[platform]}"
    kernel.write_text(KERNEL.format(platform=platform))
    _run(
        [sys.executable, "-m", "infiniops_codegen.cli", "generate"]
        + ["--specs", str(specs), "--out", str(generated)]
    )
    build = base / "build"
    config = BuildConfig(
        build_dir=build,
        generated_dir=generated,
        kernel_root=ROOT / "cpp" / "kernels",  # this project's cpu kernel of mul
        ccache=False,
        platforms=("cpu", platform),
        compile_only=True,  # the vendor torch build is not here to link
        kernel_compilers=((platform, str(FAKE)),),
        extra_cmake_args=(
            f"-DINFINI_OPS_{platform.upper()}_KERNEL_DIR={kernels}",
            *([f"-DCMAKE_CXX_COMPILER={cxx}"] if cxx else []),
        ),
    )
    cmd = ["cmake", "-S", str(SUPPORT_DIR), "-B", str(build), "-G", "Ninja"]
    proc = subprocess.run(
        cmd + config.cmake_args(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        errors="replace",
        env=_env(base),
    )
    return build, kernel, proc


def _env(base: Path) -> dict[str, str]:
    import os

    return {**os.environ, "FAKE_VENDOR_LOG": str(base / "vendor.log")}


@pytest.fixture(scope="module", params=["metax", "moore"])
def vendor_build(request, tmp_path_factory):
    platform = request.param
    base = tmp_path_factory.mktemp(platform)
    start = time.perf_counter()
    build, kernel, proc = _configure(base, platform)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # The vendor's kernels plus the torch-free dispatch and bindings: the
    # bridge and wrappers need the vendor's torch build to compile (their
    # commands are checked in compile_commands.json).
    _run(
        [
            "ninja",
            "-C",
            str(build),
            f"infiniops_kernels_{platform}",
            "infiniops_dispatch",
            "infiniops_bindings",
        ],
        env=_env(base),
    )
    print(f"{platform} fake-vendor build: {time.perf_counter() - start:.1f} s")
    log = (base / "vendor.log").read_text().splitlines()
    return platform, build, kernel, log


def _commands(build: Path) -> list[tuple[Path, list[str]]]:
    entries = json.loads((build / "compile_commands.json").read_text())
    return [(Path(e["file"]).resolve(), shlex.split(e["command"])) for e in entries]


KINDS = {
    "infiniops_bridge": "bridge",
    "infiniops_aten": "bridge",
    "infiniops_wrappers": "wrapper",
    "infiniops_dispatch": "dispatch",
    "infiniops_bindings": "dispatch",
    "infiniops_registration": "dispatch",
    "infiniops_kernels_cpu": "cpu kernel",
}


def _kind(command: list[str]) -> str:
    """Which object library a compile command belongs to (from its -o)."""
    output = command[command.index("-o") + 1]
    target = output.split("CMakeFiles/", 1)[1].split(".dir/", 1)[0]
    return KINDS.get(target, "vendor kernel")


def test_vendor_compiler_compiled_exactly_the_kernel_sources(vendor_build):
    platform, build, kernel, log = vendor_build
    assert log, "the fake vendor compiler was never run"
    for line in log:
        args = shlex.split(line)
        sources = [
            a for a in args if a.endswith((".cpp", ".cc", ".cu", ".mu", ".maca"))
        ]
        assert sources == [str(kernel)], line
        assert f"-DWITH_{platform.upper()}" in args and "-fPIC" in args, line
    # ... and the host compiler built the dispatch and bindings objects.
    objects = {p.name for p in (build / "CMakeFiles").glob("infiniops_*.dir/**/*.o")}
    assert {"ops.cpp.o", "bindings.cpp.o", f"add.{EXTENSION[platform]}.o"} <= objects


def test_compile_commands_keep_torch_code_on_the_host_compiler(vendor_build):
    platform, build, kernel, log = vendor_build
    cxx = (build / "CMakeCache.txt").read_text().split("CMAKE_CXX_COMPILER:")[1]
    cxx = cxx.split("=", 1)[1].splitlines()[0]
    by_kind: dict[str, list[tuple[Path, list[str]]]] = {}
    for path, command in _commands(build):
        by_kind.setdefault(_kind(command), []).append((path, command))
    assert [p for p, _ in by_kind["vendor kernel"]] == [kernel.resolve()]
    for path, command in by_kind["vendor kernel"]:
        assert command[0] == str(FAKE), command
        assert not any("torch/include" in a for a in command), command
    for kind in ("bridge", "wrapper", "dispatch", "cpu kernel"):
        assert by_kind.get(kind), kind
        for path, command in by_kind[kind]:
            assert command[0] == cxx and command[0] != str(FAKE), (path, command)
    for path, command in by_kind["bridge"]:
        levels = [a for a in command if a.startswith("-O")]
        assert levels[-1] == "-O3", (path, levels)


def test_vendor_compiler_as_cxx_compiler_is_refused(tmp_path):
    build, _, proc = _configure(tmp_path, "metax", cxx=str(FAKE))
    assert proc.returncode != 0
    text = " ".join((proc.stdout + proc.stderr).split())  # CMake wraps lines
    assert "must be compiled by the host C++ compiler" in text, text[-3000:]
