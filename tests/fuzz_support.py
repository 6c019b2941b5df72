"""What the fuzz workers (tests/*_fuzz_worker.py) share: one op's examples
under hypothesis, seeded, every failure reported with its example."""

from __future__ import annotations

import traceback
from typing import Callable

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st


def run_examples(example: Callable, seed_value: int, examples: int) -> str | None:
    """Runs example(data) for `examples` draws of seed `seed_value`
    (shrinking a failure); the failure, with its falsifying example, or
    None."""

    @seed(seed_value)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(st.data())
    def check(data):
        example(data)

    try:
        check()
    except Exception as e:  # noqa: BLE001 - reported with the example
        notes = "\n".join(dict.fromkeys(getattr(e, "__notes__", [])))
        return "".join(traceback.format_exception_only(type(e), e)) + notes
    return None
