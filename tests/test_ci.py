"""The CI scripts' helpers (.ci/lib.sh): the README's command blocks that
.ci/run runs as written, steps that fail the run on any failing command of
an && list, the table of every step with its lane, and lanes in the
background."""

from __future__ import annotations

import os
import re
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


# --- the budget (.ci/budget) -------------------------------------------------------


def _budget() -> dict[str, tuple[str, float]]:
    """id -> (lane, minutes) of .ci/budget."""
    lines = (REPO / ".ci" / "budget").read_text().splitlines()
    rows = [line.split() for line in lines if line.strip() and not line.startswith("#")]
    return {ident: (lane, float(minutes)) for ident, lane, minutes in rows}


def test_the_budget_fits_20_minutes_on_a_1_s_day():
    budget = _budget()
    _, run = budget.pop("run")
    serial = sum(m for lane, m in budget.values() if lane == "serial")
    lanes: dict[str, float] = {}
    for lane, minutes in budget.values():
        if lane != "serial":
            lanes[lane] = lanes.get(lane, 0.0) + minutes
    assert set(lanes) == {"main", "side"}, lanes
    assert serial + max(lanes.values()) <= run <= 20, (serial, lanes)
    # the README's test command: 5 minutes at most
    assert budget["suite"] == ("serial", 5.0) or budget["suite"][1] < 5


def _budgeted_steps() -> set[str]:
    """The ids the CI scripts give `step --budget`: literal ones, and a
    release job's (release-<torch>) for each job of releases.sh's default
    list."""
    found = set()
    for script in (REPO / ".ci").iterdir():
        text = script.read_text()
        found |= set(re.findall(r"--budget ([a-z0-9][a-z0-9.-]*)", text))
        default = re.search(r'^DEFAULT_JOBS="([^"]*)"', text, re.M)
        if default:
            found |= {f"release-{job.split(':')[1]}" for job in default[1].split()}
    return found


def test_every_budgeted_step_has_a_line_and_every_line_a_step():
    assert _budgeted_steps() == set(_budget()) - {"run"}


def test_a_step_prints_its_budget_scaled_and_marks_it_over(ci_copy):
    (ci_copy / ".ci" / "budget").write_text(
        "run - 20\nquick serial 0.5\nslow serial 0.001\n"
    )
    done = _bash(
        "CI_CALIBRATION_S=2; CI_CALIBRATION=('calibration: test')\n"
        'step --budget quick "a quick step" true\n'
        'step --budget slow "a slow step" sleep 2\n'
        "ci_table",
        cwd=ci_copy,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # 0.5 min at a 2 s calibration: one minute
    assert (
        "-- a quick step: 0 min 00 s, 0 CPU-s; budget 0.5 min x 2 = 1 min 00 s\n" in out
    )
    assert re.search(
        r"-- a slow step: 0 min 0[23] s, 0 CPU-s; budget 0.001 min x 2 = 0 min 00 s, OVER",
        out,
    )
    table = out[out.index("== CI steps") :]
    quick = next(line for line in table.splitlines() if "a quick step" in line)
    slow = next(line for line in table.splitlines() if "a slow step" in line)
    assert "1 min 00 s" in quick and quick.endswith("ok")
    assert slow.endswith("ok, OVER budget")
    assert "the whole run" in table and "20 min 00 s" not in table  # 20 x 2 s
    assert "40 min 00 s" in table


def test_a_step_naming_no_budget_line_fails(ci_copy):
    (ci_copy / ".ci" / "budget").write_text("run - 20\n")
    done = _bash('step --budget nowhere "a step" true', cwd=ci_copy)
    assert done.returncode == 1
    assert "no budget 'nowhere'" in done.stderr


def test_a_lanes_cpu_seconds_are_its_own_not_a_main_steps(ci_copy):
    """The lane is no child of the main shell, so the CPU it burns while a
    main step runs is not counted in that step (bash adds a reaped child's
    CPU to the shell's)."""
    burn = f"{sys.executable} -c 'sum(range(4 * 10**7))'"
    done = _bash(
        "CI_CALIBRATION=()\n"
        f'lane_start side "a busy lane" {burn}\n'
        f'step "the main step" bash -c "while [ ! -s $CI_STEPS_FILE.lane.side ]; do sleep 0.2; done"\n'
        "lane_wait side\n"
        "ci_table",
        cwd=ci_copy,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()]
    lane = next(r for r in rows if r[-1] == "ok" and "busy" in r)
    main = next(r for r in rows if r[-1] == "ok" and "main" in r and "step" in r)
    assert int(lane[-2]) >= 1, lane  # its own CPU seconds, in its own row
    assert int(main[-2]) == 0, main


def test_the_longest_first_files_exist():
    """tests/conftest.py's order of the suite's longest files names files
    that are there (a renamed one would silently lose its place)."""
    sys.path.insert(0, str(REPO / "tests"))
    import conftest

    missing = [f for f in conftest.LONGEST_FIRST if not (REPO / "tests" / f).is_file()]
    assert missing == []


def test_ci_calibrate_sets_the_scale_in_this_shell():
    done = _bash(
        f'ci_calibrate {sys.executable}; echo "$CI_CALIBRATION_S|$CI_CALIBRATION_LINE"'
    )
    assert done.returncode == 0, done.stderr
    seconds, line = done.stdout.strip().split("|")
    assert float(seconds) > 0 and f" {seconds} s " in line
