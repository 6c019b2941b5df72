"""Per-call time of a few eager calls with nothing observing, while counting
(ops.reset_stats()) and while tracing into /dev/null: one process, the three
modes interleaved round by round, medians (docs/observability.md#cost).

    python scripts/measure_observe.py BUILD_DIR [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
import timeit

import torch

from infiniops_codegen.runtime import load

CALLS = 2000


def main(argv: list[str]) -> int:
    ops = load(argv[0])
    rounds = int(argv[1]) if len(argv) > 1 else 15
    torch.set_num_threads(1)
    x, y, z = torch.randn(8), torch.randn(8), torch.empty(8)
    a, w, o = torch.randn(8, 6), torch.randn(6), torch.empty(8, 6)
    xd, yd, zd = x.double(), y.double(), z.double()
    cases = {
        "add out= (native)": lambda: ops.add(x, y, out=z),
        "abs out= (lane)": lambda: ops.abs(x, out=z),
        "add (no out)": lambda: ops.add(x, y),
        "rms_norm out= (native)": lambda: ops.rms_norm(a, w, 1e-6, out=o),
        "add out= float64 (fallback)": lambda: ops.add(xd, yd, out=zd),
    }

    def off():
        ops.reset_stats(False)

    def stats():
        ops.reset_stats(True)

    def trace():
        ops._observe_trace("/dev/null")

    def untrace():
        ops._observe_end_trace()

    modes = {"off": (off, off), "stats": (stats, off), "trace": (trace, untrace)}
    times = {(c, m): [] for c in cases for m in modes}
    for _ in range(rounds):
        for case, call in cases.items():
            for mode, (start, stop) in modes.items():
                start()
                call()
                times[(case, mode)].append(
                    timeit.timeit(call, number=CALLS) / CALLS * 1e9
                )
                stop()
    print(f"| call | off | counting | tracing |\n|---|---:|---:|---:|")
    for case in cases:
        med = {m: statistics.median(times[(case, m)]) for m in modes}
        print(
            f"| {case} | {med['off']:.0f} ns | {med['stats']:.0f} ns "
            f"(+{med['stats'] - med['off']:.0f}) | {med['trace']:.0f} ns "
            f"(+{med['trace'] - med['off']:.0f}) |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
