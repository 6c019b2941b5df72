"""The NVIDIA compile path, without a GPU: `build --platform cpu,nvidia
--compile-only` of a few ops compiles the native CUDA kernels with nvcc and
the bridge, dispatch and generated wrappers (stream guard included) for the
nvidia platform against the c10/cuda headers of the torch wheel. Objects
only: libtorch_cuda is not in the CPU wheel.

Skips (tests/skips.yaml) only where nvcc is absent; where it is
present, any object that fails to compile fails the test.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from environment_skips import requires

ROOT = Path(__file__).resolve().parent.parent
OPS = ("add", "rms_norm", "silu_and_mul")

pytestmark = [
    requires("nvcc"),
    pytest.mark.own_build("another platform set: cpu,nvidia, compile-only"),
]


@pytest.fixture(scope="module")
def nvidia_build(tmp_path_factory):
    build = tmp_path_factory.mktemp("nvidia") / "build"
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "infiniops_codegen.cli",
            "build",
            "--platform",
            "cpu,nvidia",
            "--compile-only",
            "--ops",
            ",".join(OPS),
            "--build-dir",
            str(build),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    print(f"nvidia compile-only build: {time.perf_counter() - start:.1f} s")
    return build


def _objects(build: Path) -> dict[str, Path]:
    """Source file name -> its object, for every object the build made."""
    return {
        p.name.removesuffix(".o"): p
        for p in (build / "CMakeFiles").glob("infiniops_*.dir/**/*.o")
    }


def _commands(build: Path) -> dict[str, list[str]]:
    entries = json.loads((build / "compile_commands.json").read_text())
    return {Path(e["file"]).name: shlex.split(e["command"]) for e in entries}


def _undefined(obj: Path) -> str:
    return subprocess.run(
        ["nm", "-C", "--undefined-only", str(obj)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_native_cuda_kernels_compile_with_nvcc(nvidia_build):
    objects = _objects(nvidia_build)
    commands = _commands(nvidia_build)
    for op in OPS:
        assert f"{op}.cu" in objects, sorted(objects)
        command = commands[f"{op}.cu"]
        assert Path(command[0]).name == "nvcc", command
        assert "-DWITH_NVIDIA" in command and "-std=c++20" in command


def test_wrappers_and_bridge_compile_for_nvidia(nvidia_build):
    objects = _objects(nvidia_build)
    commands = _commands(nvidia_build)
    for source in (
        "stream_guards.cpp",
        "ops.cpp",
        "bindings.cpp",
        "aten_convert.cpp",
        # the Python-facing bridge (cpp/torch/*.cpp but aten_convert): one
        # unity translation unit
        "unity_python_cxx.cxx",
    ):
        assert source in objects, sorted(objects)
        assert "-DWITH_NVIDIA" in commands[source], source
    assert any(name.startswith("shard_") for name in objects)
    # The stream guard really is in the wrappers: CUDAStreamGuard's calls
    # into libc10_cuda, and the current stream for the native kernels.
    streams = _undefined(objects["stream_guards.cpp"])
    assert "c10::cuda::getCurrentCUDAStream" in streams
    assert "c10::cuda::" in streams
    # Dispatch calls each native CUDA kernel with a stream.
    dispatch = _undefined(objects["ops.cpp"])
    for op in OPS:
        assert f"infini::ops::native::nvidia::{op}(" in dispatch, op
    assert "infini::ops::torch_fallback::nvidia::current_stream" in dispatch


def test_bridge_stays_at_O3(nvidia_build):
    commands = _commands(nvidia_build)
    for source in ("aten_convert.cpp", "unity_python_cxx.cxx"):
        levels = [f for f in commands[source] if f.startswith("-O")]
        assert levels and levels[-1] == "-O3", (source, levels)


def test_compile_only_links_no_module(nvidia_build):
    assert not list(nvidia_build.glob("infiniops.*.so"))


def _preflight(tmp_path, tools, **extra_env):
    """scripts/gpu_check.sh's preflight with PATH holding only `tools` (each
    linked from this machine's) and the system's directories: no
    infiniops-codegen executable, as on the GPU machine's image."""
    import os
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # A script, not a link: a venv's python linked elsewhere loses its venv.
    python3 = bin_dir / "python3"
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python3.chmod(0o755)
    for tool in tools:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "GPU_CHECK_PREFLIGHT_ONLY": "1",
        **extra_env,
    }
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_gpu_check_runs_the_tool_from_the_tree(tmp_path):
    run = _preflight(tmp_path, ["nvcc"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"infiniops_codegen from {ROOT}" in run.stdout
    assert "tested with torch" in run.stdout  # --version, from the tree
    assert "preflight passed" in run.stdout


def test_gpu_check_names_a_missing_tool(tmp_path):
    run = _preflight(tmp_path, ["nvcc"], GPU_CHECK_PYTHON="python3.missing")
    assert run.returncode == 1
    assert "gpu_check: missing: python3.missing (not on PATH)" in run.stderr
