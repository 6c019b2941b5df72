"""The NVIDIA platform linked and loaded, without a GPU: a module built with
`build --platform cpu,nvidia` against a CUDA build of torch (in CI: the
torch 2.14.1 job of .ci/releases.sh, whose build is that one and whose
harness and CPU tests run on it) imports in a fresh interpreter whether or
not torch was imported first, also where no GPU answers (nothing touches the
CUDA driver while it loads), has the nvidia platform, and puts one CUDA
runtime into the process: the one torch itself loads, never a second from
the toolkit.

INFINIOPS_NVIDIA_BUILD_DIR names the build (.ci/releases.sh sets it);
without it the tests are a skip of tests/skips.yaml with its reason (the
CPU wheel has no libtorch_cuda to link; tests/test_platform_nvidia.py
compiles the same sources there without linking).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from environment_skips import requires
from runtime_conftest_helpers import subprocess_env

pytestmark = requires("nvidia_build")

# Prints what the process loaded: the module's platforms, whether torch sees
# a GPU, and every CUDA runtime library mapped into the process.
REPORT = """
import json, os
def cuda_runtimes():
    with open("/proc/self/maps") as maps:
        found = {line.split()[-1] for line in maps if "/libcudart" in line}
    return sorted(os.path.realpath(p) for p in found)
"""


def _run(code: str, cwd: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", REPORT + code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=subprocess_env(),
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def build() -> Path:
    return Path(os.environ["INFINIOPS_NVIDIA_BUILD_DIR"]).resolve()


@pytest.fixture(scope="module")
def torchs_runtime(build) -> list[str]:
    """The CUDA runtime torch alone loads."""
    found = _run(
        "import torch\nprint(json.dumps({'cudart': cuda_runtimes()}))", build.parent
    )
    assert len(found["cudart"]) == 1, found
    return found["cudart"]


def test_the_build_is_linked_against_a_cuda_build_of_torch(build):
    from infiniops_codegen.base import torch_build
    from infiniops_codegen.base.locations import TORCH_RECORD, find_module

    assert find_module(build) is not None, f"no module in {build}"
    record = torch_build.read_record(build / TORCH_RECORD)
    assert record is not None and record.cuda, record
    assert record == torch_build.installed()


@pytest.mark.parametrize("first", ["torch", "the module"])
def test_imports_with_torchs_cuda_runtime_only(build, torchs_runtime, first):
    code = f"""
import sys
sys.path.insert(0, {str(build)!r})
if {first == "torch"}:
    import torch
import infiniops
import torch
a, b = torch.ones(3), torch.full((3,), 2.0)
out = torch.empty(3)
infiniops.add(a, b, out=out)
print(json.dumps({{
    "platforms": list(infiniops.platforms()),
    "gpu": torch.cuda.is_available(),
    "sum": out.tolist(),
    "cudart": cuda_runtimes(),
}}))
"""
    found = _run(code, build.parent)
    assert "nvidia" in found["platforms"], found
    assert found["sum"] == [3.0, 3.0, 3.0]
    assert found["cudart"] == torchs_runtime, (
        f"with {first} imported first the process holds {found['cudart']}, "
        f"torch alone {torchs_runtime}"
    )
