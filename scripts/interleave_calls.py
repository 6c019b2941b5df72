"""Per-call times of several builds, interleaved: the calls of
scripts/callgrind_calls.py (8-element tensors, one intra-op thread) timed in
one process per build and round, the builds taking turns in every round
(every other round in reverse order), so that a drift of the machine's speed falls on all of them alike.

    python scripts/interleave_calls.py ROUNDS LABEL=BUILD_DIR[:TOOL_DIR] ...

TOOL_DIR: the checkout whose infiniops_codegen loads that build (default:
the installed one), e.g. a worktree of the earlier commit for its build.
Prints each call's median over the rounds (of each round's median of
blocked_autorange) per build, and each build's ratio to the first.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from callgrind_calls import CASES  # noqa: E402

CHILD = """
import json, sys, torch
tool = {tool!r}
if tool:
    sys.path.insert(0, tool)
from torch.utils.benchmark import Timer
from infiniops_codegen.runtime import load
ops = load({build!r})
torch.set_num_threads(1)
x = torch.randn(8); y = torch.randn(8); z = torch.empty(8)
a = torch.randn(8, 6); w = torch.randn(6); o = torch.empty(8, 6)
xd = x.double(); yd = y.double(); zd = z.double()
found = {{}}
for name, stmt in {cases!r}.items():
    m = Timer(stmt, globals=globals()).blocked_autorange(min_run_time=0.3)
    found[name] = m.median
print(json.dumps(found))
"""


def main(argv: list[str]) -> int:
    rounds = int(argv[0])
    builds = {}
    for pair in argv[1:]:
        label, _, rest = pair.partition("=")
        build, _, tool = rest.partition(":")
        builds[label] = (str(Path(build).resolve()), tool and str(Path(tool).resolve()))
    times = {label: {name: [] for name in CASES} for label in builds}
    for r in range(rounds):
        # Every other round in reverse: neither build always goes first.
        order = list(builds.items())
        for label, (build, tool) in order if r % 2 == 0 else order[::-1]:
            code = CHILD.format(tool=tool, build=build, cases=CASES)
            done = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True
            )
            if done.returncode:
                sys.exit(f"{label}: {done.stderr}")
            for name, seconds in json.loads(done.stdout.splitlines()[-1]).items():
                times[label][name].append(seconds)
        print(f"round {r + 1} of {rounds} done", file=sys.stderr, flush=True)
    first = next(iter(builds))
    labels = list(builds)
    print(
        f"{'call':32s}" + "".join(f"{l:>12s}" for l in labels) + "  ratio to " + first
    )
    for name in CASES:
        medians = [statistics.median(times[l][name]) * 1e9 for l in labels]
        ratios = " ".join(f"{m / medians[0]:.3f}" for m in medians[1:])
        print(f"{name:32s}" + "".join(f"{m:10.0f}ns" for m in medians) + f"  {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
