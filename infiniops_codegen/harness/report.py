"""One op's results as plain data, and the counts of a whole run.

Used by the crash-isolated runner (`python -m infiniops_codegen.harness`) and
by the test suite (tests/test_harness.py), so both count the same way:
nothing is left out of the counts, and nothing that was not checked counts as
passed.

An op's result: {"status": ..., "cases": [case, ...]} (+ "reason" when
excluded, "error" when the worker raised). A case (one op x dtype):
{"dtype", "status": passed | failed | skipped, "reason" (skipped),
"checked" (calls), "failures", "variants_skipped": {reason: count}}.
"""

from __future__ import annotations

from collections import Counter

from . import skips

NO_SAMPLE = (
    "no sample in this dtype: PyTorch's reference rejects every candidate"
    " (no kernel for the dtype, or no valid arguments found)"
)
# Why an op is "nosample" (no dtype has a sample, no skip entry), with the fix.
NO_SAMPLE_OP = (
    "no generated sample is valid for PyTorch's reference in any dtype; add "
    "'hints' (shapes, argument values) to its spec, or an entry with the "
    "reason to the skip file"
)
DTYPE_UNUSED = (
    "no tensor of the sample has this dtype (the op or its hints fix every"
    " dtype): the case would only repeat another dtype's"
)
# A skipped case's reason starts with the list that skips it: the project's
# skip file, or the tool's list of PyTorch's and the harness's limits.
FILE_PREFIX = "skip file: "
TOOL_PREFIX = "tool's list: "
PREFIXES = {skips.PROJECT: FILE_PREFIX, skips.TOOL: TOOL_PREFIX}
# Op statuses that make `python -m infiniops_codegen.harness` exit non-zero.
BAD = ("failed", "crashed", "error", "nosample")


def excluded(op, skip_list) -> dict | None:
    """The result of an op the skip file excludes as a whole (not sampled:
    PyTorch may even crash on samples), else None."""
    entry = skips.exclusion(skip_list, op)
    if entry:
        return {
            "status": "excluded",
            "reason": entry.reason,
            "by": entry.source,
            "cases": [],
        }
    return None


def file_skip(op, dtype: str, skip_list) -> dict | None:
    """The skipped case of a dtype a skip list skips, else None."""
    entry = skips.case_skip(skip_list, op, dtype)
    if entry:
        reason = PREFIXES[entry.source] + entry.reason
        return {"dtype": dtype, "status": "skipped", "reason": reason}
    return None


def no_sample(dtype: str) -> dict:
    return {"dtype": dtype, "status": "skipped", "reason": NO_SAMPLE}


def plan_or_skip(op, dtype: str, skip_list) -> tuple[dict | None, dict | None]:
    """(plan, None) for a case to run, else (None, the skipped case): skipped
    by the file, without a sample, or not exercising the dtype."""
    from . import run

    case = file_skip(op, dtype, skip_list)
    if case:
        return None, case
    plan = run.find_plan(op, run.DTYPES[dtype])
    if plan is None:
        return None, no_sample(dtype)
    if not run.exercises_dtype(op, plan, run.DTYPES[dtype]):
        return None, {"dtype": dtype, "status": "skipped", "reason": DTYPE_UNUSED}
    return plan, None


def checked_case(module, op, dtype: str, plan: dict, skip_list) -> dict:
    """Run every variant x path of one op x dtype."""
    from . import run  # torch: not needed to summarize a report

    outcome = run.check(
        module,
        op,
        dtype,
        plan,
        skips.skipped_variants(skip_list, op, dtype),
        skips.out_reference_variants(skip_list, op, dtype, run.VARIANTS),
    )
    return {
        "dtype": dtype,
        "status": "failed" if outcome.failures or not outcome.checked else "passed",
        "checked": len(outcome.checked),
        "failures": [f[:500] for f in outcome.failures[:3]]
        or ([] if outcome.checked else ["no variant could be checked"]),
        "variants_skipped": dict(Counter(reason for _, reason in outcome.skipped)),
        "notes": dict(Counter(reason for _, reason in outcome.notes)),
    }


def check_op(module, op, skip_list) -> dict:
    """Every dtype of one op: skipped by the file, without a sample, or run."""
    from . import run

    result = excluded(op, skip_list)
    if result:
        return result
    cases = []
    for dtype in run.DTYPES:
        plan, case = plan_or_skip(op, dtype, skip_list)
        cases.append(case or checked_case(module, op, dtype, plan, skip_list))
    return {"status": op_status(cases), "cases": cases}


def op_status(cases: list[dict]) -> str:
    """failed if any case failed; passed if any passed; skipped if every case
    was skipped and a skip list skipped at least one; else nosample (no
    dtype has a sample, and no skip list says anything about the op)."""
    statuses = {c["status"] for c in cases}
    if "failed" in statuses:
        return "failed"
    if "passed" in statuses:
        return "passed"
    if any(c.get("reason", "").startswith(tuple(PREFIXES.values())) for c in cases):
        return "skipped"
    return "nosample"


def summarize(results: dict) -> dict:
    """Counts of a run: ops by status, cases by status, skipped cases, checked
    calls and skipped layout variants by reason, excluded ops by reason."""
    ops: Counter = Counter()
    cases: Counter = Counter()
    case_reasons: Counter = Counter()
    variant_reasons: Counter = Counter()
    notes: Counter = Counter()
    excluded_reasons: Counter = Counter()
    excluded_by: Counter = Counter()
    skipped_by: Counter = Counter()
    calls = 0
    for r in results.values():
        ops[r["status"]] += 1
        if r["status"] == "excluded":
            excluded_reasons[r.get("reason", "")] += 1
            excluded_by[r.get("by", skips.PROJECT)] += 1
        for case in r["cases"]:
            cases[case["status"]] += 1
            if case["status"] == "skipped":
                case_reasons[case.get("reason", "")] += 1
                skipped_by[_skipped_by(case.get("reason", ""))] += 1
            calls += case.get("checked", 0)
            for reason, n in (case.get("variants_skipped") or {}).items():
                variant_reasons[reason] += n
            for reason, n in (case.get("notes") or {}).items():
                notes[reason] += n
    return {
        "ops": len(results),
        "ops_by_status": dict(sorted(ops.items())),
        "cases": sum(cases.values()),
        "cases_by_status": dict(sorted(cases.items())),
        "cases_skipped_by_reason": dict(case_reasons.most_common()),
        "checked_calls": calls,
        "variants_skipped_by_reason": dict(variant_reasons.most_common()),
        "notes": dict(notes.most_common()),
        "excluded_by_reason": dict(excluded_reasons.most_common()),
        # the tool's list, the project's skip file, or neither (no sample, a
        # dtype the case does not exercise)
        "cases_skipped_by": dict(sorted(skipped_by.items())),
        "excluded_by": dict(sorted(excluded_by.items())),
    }


def _skipped_by(reason: str) -> str:
    for source, prefix in PREFIXES.items():
        if reason.startswith(prefix):
            return source
    return "harness"


def _short(text: str, width: int = 110) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def summary_lines(counts: dict) -> list[str]:
    """The printed summary: every op, case and variant is in one count."""
    by = counts["ops_by_status"]
    order = ("passed", "skipped", "excluded", "failed", "crashed", "error")
    names = [s for s in order if s in by] + [s for s in sorted(by) if s not in order]
    cases = counts["cases_by_status"]
    lines = [
        f"harness: {counts['ops']} ops: "
        + ", ".join(f"{by[s]} {s}" for s in names)
        + (
            f" (bad: {', '.join(s for s in BAD if by.get(s))})"
            if any(by.get(s) for s in BAD)
            else ""
        ),
        f"  op x dtype cases: {counts['cases']}: {cases.get('passed', 0)} passed, "
        f"{cases.get('failed', 0)} failed, {cases.get('skipped', 0)} skipped"
        + _by(counts.get("cases_skipped_by", {})),
    ]
    for reason, n in counts["cases_skipped_by_reason"].items():
        lines.append(f"    skipped {n:6}  {_short(reason)}")
    skipped_variants = sum(counts["variants_skipped_by_reason"].values())
    lines.append(
        f"  layout variants: {counts['checked_calls']} calls checked "
        f"(variant x path), {skipped_variants} variants not checked"
    )
    for reason, n in counts["variants_skipped_by_reason"].items():
        lines.append(f"    not checked {n:6}  {_short(reason)}")
    for reason, n in counts.get("notes", {}).items():
        lines.append(f"    narrowed {n:6}  {_short(reason)}")
    if counts["excluded_by_reason"]:
        lines.append(
            f"  ops excluded by a skip list: {by.get('excluded', 0)}"
            + _by(counts.get("excluded_by", {}))
        )
        for reason, n in counts["excluded_by_reason"].items():
            lines.append(f"    excluded {n:4}  {_short(reason)}")
    return lines


# How the summary names where skips came from (the tool's list and the
# project's skip file are counted apart: a project's count is its choices).
_SOURCES = {
    skips.TOOL: "by the tool's list",
    skips.PROJECT: "by the project's skip file",
    "harness": "without a sample or exercising no tensor of the dtype",
}


def _by(counts: dict) -> str:
    parts = [f"{counts[s]} {what}" for s, what in _SOURCES.items() if counts.get(s)]
    return f" ({', '.join(parts)})" if parts else ""
