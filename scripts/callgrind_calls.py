"""Instructions per call of a few eager calls of a build (callgrind, through
torch.utils.benchmark's Timer.collect_callgrind, denoised): the figures of
docs/compile.md#cost and docs/observability.md#cost, before and after a
change.

    python scripts/callgrind_calls.py BUILD_DIR [TOOL_DIR] [--observe WHAT]

TOOL_DIR: the checkout whose infiniops_codegen loads the build (default:
the installed one); a worktree of the earlier commit for its build. Each
count is of one iteration of the Timer's loop (the Python loop included),
over 8-element tensors, one intra-op thread. --observe: the same calls
while the library counts them (stats), traces them into /dev/null (trace),
or both (stats,trace).
"""

from __future__ import annotations

import sys

from torch.utils.benchmark import Timer

CASES = {
    "add out= (native)": "ops.add(x, y, out=z)",
    "abs out= (lane)": "ops.abs(x, out=z)",
    "sub out= (lane)": "ops.sub(x, y, out=z)",
    "add (no out)": "ops.add(x, y)",
    "rms_norm out= (native)": "ops.rms_norm(a, w, 1e-6, out=o)",
    "add out= float64 (fallback)": "ops.add(xd, yd, out=zd)",
}
NUMBER = 2000


def main(argv: list[str]) -> int:
    observe = ""
    if "--observe" in argv:
        at = argv.index("--observe")
        observe = argv[at + 1]
        del argv[at : at + 2]
    build = argv[0]
    tool = argv[1] if len(argv) > 1 else None
    start = ""
    if "stats" in observe:
        start += "ops.reset_stats()\n"
    if "trace" in observe:
        start += "ops._observe_trace('/dev/null')\n"
    setup = f"""
import sys, torch
if {tool!r}:
    sys.path.insert(0, {tool!r})
from infiniops_codegen.runtime import load
ops = load({build!r})
torch.set_num_threads(1)
x = torch.randn(8); y = torch.randn(8); z = torch.empty(8)
a = torch.randn(8, 6); w = torch.randn(6); o = torch.empty(8, 6)
xd = x.double(); yd = y.double(); zd = z.double()
{start}"""
    for name, stmt in CASES.items():
        counts = Timer(stmt, setup=setup).collect_callgrind(number=NUMBER)
        print(f"{name}: {counts.counts(denoise=True) / NUMBER:.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
