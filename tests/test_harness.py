"""Correctness harness: every op in the built module's manifest, for each
dtype PyTorch's CPU kernel supports, on contiguous, transposed, step-sliced,
expanded, 0-dim, zero-size and broadcast inputs, on the lane, handle-reuse,
from_blob and dispatcher paths, against PyTorch's out= overload and its functional form;
outputs start filled with sentinels, inputs the op writes are compared too.

One test per op x dtype. A dtype that tests/skips.yaml skips, or in which
PyTorch's reference rejects every candidate sample, is a skipped test with its
reason; an op without a sample in any dtype (and no entry in the skip file)
fails. The end of the run prints the same counts as
`python -m infiniops_codegen.harness` (infiniops_codegen/harness/report.py).

The default build is tested by `python -m pytest`; another build (e.g. the
full set) with `INFINIOPS_BUILD_DIR=build-all python -m pytest tests/test_harness.py`.
"""

import functools
from pathlib import Path

import pytest

from infiniops_codegen.harness import report, run, skips

ROOT = Path(__file__).resolve().parent.parent
# op name -> result as report.summarize takes it (filled by the tests that ran)
RESULTS: dict[str, dict] = {}
NOSAMPLE = "nosample"  # the dtype of an op's one case when no dtype has a sample
_SKIPS = skips.harness_skips(ROOT / "tests" / "skips.yaml")


def _manifest():
    from runtime_conftest_helpers import manifest

    return manifest()


@functools.lru_cache(maxsize=None)
def _cases():
    """(op, dtype, plan, skipped case) for every op x dtype; dtype None for an
    op the skip file excludes, NOSAMPLE for an op without a sample in any
    dtype and no entry in the skip file."""
    cases = []
    for op in _manifest().ops:
        if skips.exclusion_reason(_SKIPS, op):
            cases.append((op, None, None, None))
            continue
        found = [(d, *report.plan_or_skip(op, d, _SKIPS)) for d in run.DTYPES]
        skipped = [case for _, plan, case in found if plan is None]
        if len(skipped) == len(found) and report.op_status(skipped) == NOSAMPLE:
            cases.append((op, NOSAMPLE, None, None))
            continue
        cases += [(op, d, plan, skipped) for d, plan, skipped in found]
    return cases


def _id(case):
    op, dtype, _, _ = case
    return f"{op.name}-{dtype or 'excluded'}"


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_op_matches_pytorch(ops, case):
    op, dtype, plan, outcome = case
    result = RESULTS.setdefault(op.name, {"status": "", "cases": []})
    if dtype is None:
        result.update(status="excluded", reason=skips.exclusion_reason(_SKIPS, op))
        pytest.skip(f"{op.name}: {result['reason']} (tests/skips.yaml)")
    if dtype == NOSAMPLE:
        result["status"] = NOSAMPLE
        pytest.fail(f"{op.name}: {report.NO_SAMPLE_OP} (tests/skips.yaml)")
    if outcome is None:
        outcome = report.checked_case(ops, op, dtype, plan, _SKIPS)
    result["cases"].append(outcome)
    result["status"] = report.op_status(result["cases"])
    if outcome["status"] == "skipped":
        pytest.skip(f"{op.name} [{dtype}]: {outcome['reason']}")
    assert outcome["status"] == "passed", f"{op.name} [{dtype}]:\n" + "\n".join(
        outcome["failures"]
    )


def summary_lines() -> list[str]:
    """The harness counts of the tests that ran (tests/conftest.py prints them)."""
    if not RESULTS:
        return []
    w = run.FROM_BLOB_WRAPPERS
    return report.summary_lines(report.summarize(RESULTS)) + [
        f"  from_blob runs: {w['rebound']} wrappers re-bound, {w['fresh']} made "
        f"fresh, {w['dropped']} not kept"
    ]
