"""A native op whose kernel source is missing (issue 41, point 3): `build`
and a project's wheel (its CMake configure step) stop before CMake or Ninja
runs, with one line naming the op, the platform, the file to write and the
spec's `native:` to change otherwise (kernel_sources.unbuildable). Before,
a fresh directory got CMake's `.../neg.{cc}' does not exist` and one that
had built `ninja: error: rebuilding 'build.ninja': cannot make progress`.

The fresh cases need no compiler; the directory that built before is an
`own_build` test in tests/test_check_fuzz.py, on the project it builds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen.toolchain.wheel import _platforms

SPECS = {"ops.yaml": "ops:\n  - abs.out\n  - {aten: neg.out, native: [cpu]}\n"}
NEG_KERNEL = """\
#include "native_kernels.h"

namespace infini::ops::native::cpu {

// Declines every call: the fallback computes it.
KernelResult neg(const Tensor& self, Tensor& out) { return false; }

}  // namespace infini::ops::native::cpu
"""
# `native: [cpu]` is at line 3, column 29 of op_specs/ops.yaml.
MESSAGE = (
    "op_specs/ops.yaml:3:29: neg has a native cpu kernel, but its source "
    "cpp/kernels/cpu/neg.cc does not exist: write it (docs/adding-an-op.md), "
    "or remove cpu from neg's 'native' to build the op without it"
)


def _build(runner, helpers, root: Path, build_dir: Path, *more: str):
    return helpers.invoke(
        runner,
        "--project",
        root,
        "build",
        "--build-dir",
        build_dir,
        "--no-smoke",
        "--no-cache",
        "-j",
        "2",
        *more,
    )


def test_build_in_a_fresh_directory_names_the_missing_source(tmp_path, runner, helpers):
    root = helpers.project(tmp_path / "proj", SPECS)
    build_dir = tmp_path / "fresh"
    result = _build(runner, helpers, root, build_dir)
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[-1] == f"error: {MESSAGE}"
    assert "CMake" not in result.output and "ninja" not in result.output
    # Nothing was configured: the check runs before CMake.
    assert not (build_dir / "CMakeCache.txt").exists()


def test_a_platform_not_built_needs_no_source(tmp_path, runner, helpers):
    """An nvidia kernel missing does not stop a CPU build: only the build's
    platforms are checked (the same op's cpu kernel is there)."""
    specs = {"ops.yaml": "ops:\n  - {aten: neg.out, native: [cpu, nvidia]}\n"}
    root = helpers.project(tmp_path / "proj", specs, {"cpu/neg.cc": NEG_KERNEL})
    from infiniops_codegen.toolchain import builder
    from infiniops_codegen.opspec import extensions
    from infiniops_codegen.render import pipeline
    from infiniops_codegen.base import project as projects

    proj = projects.load(root)
    projects.use(proj)
    opset = pipeline.load_opset(proj.specs)
    cpu = builder.BuildRequest(project=proj, platforms=("cpu",))
    builder.require_kernel_sources(opset, cpu, ())  # no error
    both = builder.BuildRequest(project=proj, platforms=("cpu", "nvidia"))
    with pytest.raises(builder.BuildError) as caught:
        builder.require_kernel_sources(opset, both, extensions.load_all(()))
    assert str(caught.value) == (
        "op_specs/ops.yaml:2:29: neg has a native nvidia kernel, but its source "
        "cpp/kernels/nvidia/neg.cu does not exist: write it "
        "(docs/adding-an-op.md), or remove nvidia from neg's 'native' to build "
        "the op without it"
    )


def _generate_step(root: Path, build_dir: Path, with_flags: str):
    """The wheel's CMake configure step, as support/CMakeLists.txt runs it."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "infiniops_codegen.build_backend",
            "generate",
            "--project",
            str(root),
            "--build-dir",
            str(build_dir),
            "--write",
            str(build_dir / "infiniops-project.cmake"),
            "--with",
            with_flags,
        ],
        capture_output=True,
        text=True,
        cwd=root,
    )


def test_the_wheel_build_stops_with_the_same_message(tmp_path, helpers):
    root = helpers.project(tmp_path / "proj", SPECS)
    build_dir = tmp_path / "wheel-build"
    build_dir.mkdir()
    proc = _generate_step(root, build_dir, "")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr == f"infiniops-codegen: {MESSAGE}\n"
    assert not (build_dir / "infiniops-project.cmake").exists()
    # WITH_CPU=OFF (some other platform built): cpu's kernels are not needed.
    proc = _generate_step(root, build_dir, "WITH_CPU=OFF,WITH_SIM=ON")
    assert proc.returncode == 0, proc.stderr
    assert (build_dir / "infiniops-project.cmake").is_file()


def test_the_wheel_step_takes_the_platforms_cmake_gives():
    assert _platforms("") == ("cpu",)
    assert _platforms("WITH_CPU=OFF,WITH_SIM=ON") == ("sim",)
    assert _platforms("WITH_NVIDIA=ON") == ("cpu", "nvidia")
