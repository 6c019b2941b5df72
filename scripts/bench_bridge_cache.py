"""Time first builds with and without a bridge cache entry, interleaved
(docs/design/bridge-cache.md, section 4): each round builds one fresh
directory per arm, alternating, so that drift falls on both arms; prints the
median, min and max of the command's wall time and of Ninja's.

    python scripts/bench_bridge_cache.py ENTRY [--rounds 3] [--ops abs,add]

ENTRY: a bridge cache entry directory (until the build fills the cache
itself, one made by hand with bridge_cache.publish from a built directory).
Run with no ccache (or CCACHE_DISABLE=1), as the targets are stated.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _ninja_wall(build_dir: Path) -> float:
    ends = [
        int(line.split("\t")[1])
        for line in (build_dir / ".ninja_log").read_text().splitlines()[1:]
    ]
    return max(ends) / 1000


def _one(build_dir: Path, ops: str | None, entry: str | None) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "infiniops_codegen.cli", "build"]
    cmd += ["--build-dir", str(build_dir)]
    if ops:
        cmd += ["--ops", ops]
    if entry:
        cmd += ["--cmake-arg", f"INFINI_OPS_BRIDGE_ENTRY={entry}"]
    env = dict(os.environ, PYTHONPATH=str(REPO), CCACHE_DISABLE="1")
    start = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)
    return time.perf_counter() - start, _ninja_wall(build_dir)


def _summary(name: str, runs: list[tuple[float, float]]) -> str:
    def stat(values):
        return f"{statistics.median(values):5.1f} ({min(values):.1f}-{max(values):.1f})"

    walls, ninjas = zip(*runs)
    return f"{name:10} wall {stat(walls)} s   ninja {stat(ninjas)} s   n={len(runs)}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("entry")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ops", default="abs,add", help="'' for the default set")
    args = parser.parse_args()
    results: dict[str, list] = {"cached": [], "uncached": []}
    with tempfile.TemporaryDirectory(prefix="bench-bridge-") as tmp:
        for r in range(args.rounds):
            for arm, entry in (("cached", args.entry), ("uncached", None)):
                build_dir = Path(tmp) / f"{arm}-{r}"
                results[arm].append(_one(build_dir, args.ops or None, entry))
                print(f"round {r} {arm}: {results[arm][-1][0]:.1f} s", flush=True)
                shutil.rmtree(build_dir)
    for arm, runs in results.items():
        print(_summary(arm, runs))


if __name__ == "__main__":
    main()
