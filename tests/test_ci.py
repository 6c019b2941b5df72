"""The CI scripts' helpers (.ci/lib.sh): the README's command blocks that
.ci/run runs as written, steps that fail the run on any failing command of
an && list, the table of every step with its lane, and lanes in the
background."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _bash(script: str, cwd: Path = REPO):
    """`script` in bash with .ci/lib.sh sourced, from `cwd` (the checkout, or
    a copy of its .ci where the test writes its own README)."""
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; source .ci/lib.sh; {script}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


@pytest.fixture
def ci_copy(tmp_path) -> Path:
    """A directory holding a copy of the checkout's .ci/ and nothing else."""
    shutil.copytree(REPO / ".ci", tmp_path / ".ci")
    return tmp_path


def test_the_readme_blocks_are_the_quickstart():
    venv = _bash("readme_block venv")
    quickstart = _bash("readme_block quickstart")
    assert venv.returncode == 0 and quickstart.returncode == 0, venv.stderr
    assert venv.stdout.splitlines() == [
        "python3 -m venv .venv && source .venv/bin/activate"
    ]
    install, tests = quickstart.stdout.splitlines()
    assert (
        install.startswith("pip install torch==")
        and "infiniops-codegen build" in install
    )
    assert tests.startswith("python -m pytest")
    # .ci/run runs them from the README, not from a copy of its own
    run = (REPO / ".ci" / "run").read_text()
    assert "readme_block venv" in run and "readme_block quickstart" in run
    assert "pip install torch" not in run
    # (its own pytest step runs only what the suite deselects: -m own_build)
    commands = [line.strip() for line in run.splitlines()]
    assert tests not in commands and install not in commands
    runs = [c for c in commands if c.startswith("python -m pytest")]
    assert runs == ["python -m pytest -q -m own_build"], runs


def test_a_missing_block_fails_with_its_markers(ci_copy):
    (ci_copy / "README.md").write_text("# no blocks\n")
    done = _bash("readme_block quickstart", cwd=ci_copy)
    assert done.returncode == 1
    assert "<!-- ci: quickstart -->" in done.stderr and done.stdout == ""


def test_a_failing_command_of_an_and_list_fails_its_step(ci_copy):
    done = _bash(
        'CI_TOP=1; CI_CALIBRATION=("calibration: test")\n'
        'step "passes" run_line "true && true"\n'
        'step "fails first" run_line "false && echo not reached"\n'
        'echo "after the failed step"',
        cwd=ci_copy,
    )
    assert done.returncode == 1
    assert "-- passes: 0 min 0" in done.stdout
    assert "not reached" not in done.stdout.splitlines()  # only its "$ ..." echo
    assert "after the failed step" not in done.stdout
    assert "FAILED: fails first (exit 1)" in done.stderr
    # the table of every step so far, on stderr with the failure
    table = done.stderr[done.stderr.index("== CI steps") :]
    assert "passes" in table and "ok" in table
    assert "fails first" in table and "FAILED (1)" in table
    assert "calibration: test" in table


def test_lanes_run_beside_the_main_steps_and_share_the_table(ci_copy):
    done = _bash(
        "CI_CALIBRATION=()\n"
        'lane_start side "in a lane" bash -c "echo from the lane; sleep 1"\n'
        'step "in the main lane" true\n'
        "lane_wait side\n"
        'lane_start broken "a failing lane" false\n'
        "status=0; lane_wait broken || status=$?\n"
        'echo "broken lane: $status"\n'
        "ci_table",
        cwd=ci_copy,
    )
    assert done.returncode == 0, done.stderr
    assert "[side] from the lane" in done.stdout
    assert "broken lane: 1" in done.stdout
    rows = {
        line.split()[1]: line
        for line in done.stdout.splitlines()
        if line[:6].strip().count(":") == 1 and len(line.split()) > 2
    }
    assert "in a lane" in rows["side"] and "ok" in rows["side"]
    assert "a failing lane" in rows["broken"] and "FAILED (1)" in rows["broken"]
    assert "in the main lane" in rows["main"]


def test_the_calibration_line_names_the_reference_and_the_cores():
    done = _bash(f"ci_calibration {sys.executable}")
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith('calibration: python -c "sum(range(10**8))" ')
    assert line.endswith(f"nproc {os.cpu_count()}")
