"""scripts/sim_host_overhead.py runs (docs/performance.md, "Host overhead on a
device"): its checks pass (results in normal mode; no copy, no fallback run
and the expected path in null mode) and it prints a row for every op, device
and size. No timing is checked: performance targets are not unit tests."""

from __future__ import annotations

import pytest

import subprocess
import sys

from runtime_conftest_helpers import REPO, subprocess_env
from test_sim_runtime import sim_build  # noqa: F401  (the fixture: builds when missing)

pytestmark = pytest.mark.own_build("the default set built for cpu,sim (build-sim/)")

SCRIPT = REPO / "scripts" / "sim_host_overhead.py"
OPS = ("add", "mul", "abs", "sub", "rms_norm")


def test_the_script_checks_and_prints_a_row_per_case(sim_build):  # noqa: F811
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--build-dir", str(sim_build)],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-2000:]
    rows = {
        tuple(cell.strip() for cell in line.split("|")[1:4])
        for line in proc.stdout.splitlines()
        if line.startswith(("| sim |", "| cpu |"))
    }
    wanted = {(d, op, n) for d in ("sim", "cpu") for op in OPS for n in ("1", "64")}
    assert rows == wanted, proc.stdout
    assert "calibration:" in proc.stdout
