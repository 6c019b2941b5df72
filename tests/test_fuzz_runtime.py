"""Fuzzing the built module against PyTorch, in a child process.

tests/fuzz_runtime_worker.py draws random calls of 35 ops (shapes, strides,
dtypes, Nones, scalars, wrong types, bad outs, one misuse at a time) and
checks each against PyTorch: the same result, or the same exception type.
It runs in a subprocess so that a segfault or an abort fails this test with
the call that caused it instead of killing pytest.

INFINIOPS_FUZZ_SEED (one seed, or several separated by spaces or commas:
a test each, which pytest-xdist runs side by side) and
INFINIOPS_FUZZ_EXAMPLES (examples per op) change the run; the defaults are
fixed so that CI is reproducible.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from runtime_conftest_helpers import REPO, build_dir, subprocess_env

WORKER = REPO / "tests" / "fuzz_runtime_worker.py"
SEEDS = [
    int(seed)
    for seed in os.environ.get("INFINIOPS_FUZZ_SEED", "20261202")
    .replace(",", " ")
    .split()
]
EXAMPLES_PER_OP = int(os.environ.get("INFINIOPS_FUZZ_EXAMPLES", "100"))
# Scales with the examples: under ASan on a busy 2-core machine a worker
# took 1.1 s per example per op (200: 221 s), a plain build a third of that.
TIMEOUT_S = 3 * max(EXAMPLES_PER_OP, 100)
MIN_CALLS = 4000
MIN_OPS = 20

# Seed -> the counts of its run, read by pytest_terminal_summary
# (tests/conftest.py).
STATS: dict[int, dict] = {}


def run_worker(cmd: list[str], timeout: float = TIMEOUT_S) -> dict:
    """Run a fuzz worker; its summary, or pytest.fail with the last case it
    started when it crashed, hung or printed no summary."""
    try:
        proc = subprocess.run(
            cmd,
            cwd=REPO,
            env=subprocess_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        stdout = (e.stdout or b"").decode(errors="replace")
        stderr = (e.stderr or b"").decode(errors="replace")
        code = f"timeout after {timeout} s"
    lines = stdout.splitlines()
    summary = next((ln for ln in reversed(lines) if ln.startswith("SUMMARY ")), None)
    if summary is None:
        cases = [ln for ln in lines if ln.startswith("CASE ")]
        last = cases[-1][5:] if cases else "(before the first case)"
        signal = f" (signal {-code})" if isinstance(code, int) and code < 0 else ""
        pytest.fail(
            f"the fuzz worker died{signal}, exit {code}, during:\n  {last}\n"
            f"reproduce: {shlex.join(cmd)}\n{_stderr_excerpt(stderr)}",
            pytrace=False,
        )
    return json.loads(summary[len("SUMMARY ") :])


# The first line of a sanitizer's report (a worker under a sanitized build).
_REPORT = re.compile(
    r"^.*(ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer).*$", re.M
)


def _stderr_excerpt(stderr: str) -> str:
    """A sanitizer's report from its first line (its tail would show only
    the allocation stacks), else the tail of stderr."""
    m = _REPORT.search(stderr)
    if m:
        return (
            f"--- stderr, from the sanitizer's report ---\n{stderr[m.start():][:8000]}"
        )
    return f"--- stderr (tail) ---\n{stderr[-3000:]}"


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: f"seed{seed}")
def test_fuzzed_calls_match_pytorch(ops, seed):
    """At least 4,000 calls of at least 20 ops: each matches PyTorch's result
    or raises PyTorch's exception type; no crash, inputs left unchanged."""
    cmd = [
        sys.executable,
        str(WORKER),
        str(build_dir()),
        str(seed),
        str(EXAMPLES_PER_OP),
    ]
    summary = run_worker(cmd)
    stats = STATS[seed] = {
        "calls": summary["calls"],
        "examples": summary["examples"],
        "ops": summary["ops"],
        "seconds": summary["seconds"],
    }
    failures = summary["failures"]
    assert not failures, (
        f"{len(failures)} ops differ from PyTorch (seed {seed}; reproduce: "
        f"{shlex.join(cmd)} OP):\n\n" + "\n\n".join(failures.values())
    )
    assert summary["ops"] >= MIN_OPS
    if EXAMPLES_PER_OP >= 100:
        assert summary["calls"] >= MIN_CALLS, summary["calls"]
    # The from_blob calls ran mostly on re-bound wrappers, some fresh, and
    # some wrappers were not kept (an output ATen resized or restrided, ...).
    pool = stats["wrapper_pool"] = summary["wrapper_pool"]
    assert pool["rebound"] > pool["fresh"] > 0, pool


@pytest.mark.no_sanitizer(
    reason="expects signal 11: under ASan the child reports the SEGV and exits 1"
)
def test_a_crash_in_the_worker_names_the_case():
    """The crash detection itself: a child that segfaults after announcing a
    case makes the test fail with that case, not take pytest down."""
    code = (
        "import ctypes\n"
        "print('CASE abs misuse=- implementation=1', flush=True)\n"
        "ctypes.string_at(0)\n"
    )
    with pytest.raises(pytest.fail.Exception) as info:
        run_worker([sys.executable, "-c", code], timeout=60)
    message = str(info.value)
    assert "signal 11" in message and "abs misuse=- implementation=1" in message
