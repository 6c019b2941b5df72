"""Correctness harness: every op in the built module's manifest, for each
dtype PyTorch's CPU kernel supports, on contiguous, transposed, step-sliced,
expanded, 0-dim, zero-size and broadcast inputs, on the handle-reuse and the
from_blob paths, against PyTorch's out= overload and its functional form.

The default build is tested by `python -m pytest`; another build (e.g. the
full set) with `INFINIOPS_BUILD_DIR=build-all python -m pytest tests/test_harness.py`.
"""

import functools
import json
import os
from pathlib import Path

import pytest

from infiniops_codegen.harness import run, samples, skips

ROOT = Path(__file__).resolve().parent.parent
STATS = {
    "ops": set(),
    "cases": 0,
    "passed": 0,
    "skipped": 0,
    "calls": 0,
    "skipped_variants": 0,
}


def _manifest() -> dict:
    build = Path(os.environ.get("INFINIOPS_BUILD_DIR") or ROOT / "build")
    path = build / "manifest.json"
    if not path.is_file():
        path = ROOT / "generated" / "manifest.json"
    return json.loads(path.read_text())


@functools.lru_cache(maxsize=None)
def _cases():
    """(op, dtype, plan) for every dtype PyTorch supports on a found plan."""
    cases = []
    for op in samples.entries(_manifest()):
        found = False
        for dtype in run.DTYPES:
            plan = run.find_plan(op, run.DTYPES[dtype])
            if plan is not None:
                found = True
                cases.append((op, dtype, plan))
        if not found:
            cases.append((op, None, None))
    return cases


def _id(case):
    op, dtype, _ = case
    return f"{op.name}-{dtype or 'nosample'}"


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_op_matches_pytorch(ops, case):
    op, dtype, plan = case
    STATS["ops"].add(op.name)
    STATS["cases"] += 1
    if dtype is None and skips.exclusion_reason(_SKIPS, op):
        STATS["skipped"] += 1
        pytest.skip(f"{op.name}: {skips.exclusion_reason(_SKIPS, op)}")
    assert dtype is not None, (
        f"{op.name}: no generated sample is valid for PyTorch's reference in any "
        "dtype; add 'hints' (shapes, argument values) to its spec"
    )
    reason = skips.skip_reason(_SKIPS, op, dtype)
    if reason:
        STATS["skipped"] += 1
        pytest.skip(f"{op.name} [{dtype}]: {reason} (tests/skips.yaml)")
    outcome = run.check(ops, op, dtype, plan, skips.skipped_variants(_SKIPS, op, dtype))
    STATS["calls"] += len(outcome.checked)
    STATS["skipped_variants"] += len(outcome.skipped)
    assert not outcome.failures, f"{op.name} [{dtype}]:\n" + "\n".join(outcome.failures)
    assert outcome.checked, f"{op.name} [{dtype}]: no variant could be checked"
    STATS["passed"] += 1


_SKIPS = skips.load_skips()
