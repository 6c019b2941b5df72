"""Time builds with a warm bridge cache, a cold one and none, interleaved
(docs/design/bridge-cache.md, section 4; figures in docs/building.md): each
round runs every arm of a scenario once, in turn, so that drift falls on all
arms; prints the median, min and max of the command's wall time and of
Ninja's (from .ninja_log), and the load average before each run.

    python scripts/bench_bridge_cache.py [--rounds 5] [--scenarios new,default,extension]

Scenarios:
  new        a new 2-op project (`build --ops abs,add`, fresh build dir):
             warm cache / cold cache (empty, the build publishes) / --no-cache
  default    the default set, fresh build dir: warm cache / --no-cache
  extension  `--extension` added, then removed, in a built 2-op directory
             (one per arm, built before the rounds): warm cache / --no-cache

The cache lives in a temporary directory ($INFINIOPS_BRIDGE_CACHE_DIR), never
the user's; ccache is off (CCACHE_DISABLE=1 and --no-ccache), as the targets
are stated. --json FILE writes every run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _log_lines(build_dir: Path) -> set[str]:
    try:
        text = (build_dir / ".ninja_log").read_text()
    except OSError:
        return set()
    return {l for l in text.splitlines() if l and not l.startswith("#")}


def _ninja_wall(before: set[str], after: set[str]) -> float:
    """The last step's end (Ninja's times count from its start) of the steps
    this run logged: the lines not there before (Ninja may rewrite the log
    between runs, so an offset would not do)."""
    ends = [int(l.split("\t")[1]) for l in after - before]
    return max(ends, default=0) / 1000


def _build(build_dir: Path, cache: Path, extra: list[str], ops: str | None) -> dict:
    cmd = [sys.executable, "-m", "infiniops_codegen.cli", "build", "--no-ccache"]
    cmd += ["--build-dir", str(build_dir)]
    if ops:
        cmd += ["--ops", ops]
    cmd += extra
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        CCACHE_DISABLE="1",
        INFINIOPS_BRIDGE_CACHE_DIR=str(cache),
    )
    env.pop("INFINIOPS_NO_BRIDGE_CACHE", None)
    load = os.getloadavg()[0]
    log_before = _log_lines(build_dir)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        )
    status = next(
        (l for l in proc.stdout.splitlines() if l.startswith("bridge cache:")), ""
    )
    ninja = _ninja_wall(log_before, _log_lines(build_dir))
    return {"wall": wall, "ninja": ninja, "load": load, "status": status}


def _stat(values: list[float]) -> str:
    return f"{statistics.median(values):5.1f} ({min(values):.1f}-{max(values):.1f})"


def _summary(name: str, runs: list[dict]) -> str:
    return (
        f"{name:28} wall {_stat([r['wall'] for r in runs])} s   "
        f"ninja {_stat([r['ninja'] for r in runs])} s   n={len(runs)}   "
        f"load {_stat([r['load'] for r in runs])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scenarios", default="new,default,extension")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--extension", type=Path, help="default: a one-op extension")
    args = parser.parse_args()
    scenarios = args.scenarios.split(",")
    results: dict[str, list[dict]] = {}

    def record(name: str, run: dict) -> None:
        results.setdefault(name, []).append(run)
        print(
            f"  {name}: {run['wall']:.1f} s, ninja {run['ninja']:.1f} s, "
            f"load {run['load']:.2f} ({run['status'][:40]})",
            flush=True,
        )
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))

    with tempfile.TemporaryDirectory(prefix="bench-bridge-") as tmp:
        tmp = Path(tmp)
        warm = tmp / "warm-cache"
        ext = args.extension
        if ext is None:
            ext = tmp / "ext"
            (ext / "op_specs").mkdir(parents=True)
            (ext / "infiniops-extension.yaml").write_text("name: bench_ext\n")
            (ext / "op_specs" / "demo.yaml").write_text("ops:\n  - signbit.out\n")
        print("warming the cache (not timed)", flush=True)
        _build(tmp / "warmup", warm, [], "abs,add")
        shutil.rmtree(tmp / "warmup")
        ext_dirs = {}
        if "extension" in scenarios:
            for arm, extra in (("warm", []), ("no-cache", ["--no-cache"])):
                d = tmp / f"ext-{arm}"
                _build(d, warm, extra, "abs,add")
                ext_dirs[arm] = (d, extra)
        for r in range(args.rounds):
            print(f"round {r}", flush=True)
            if "new" in scenarios:
                for arm in ("warm", "cold", "no-cache"):
                    d = tmp / f"new-{arm}-{r}"
                    cache = warm
                    extra = ["--no-cache"] if arm == "no-cache" else []
                    if arm == "cold":
                        cache = tmp / f"cold-cache-{r}"
                    record(f"new 2-op, {arm}", _build(d, cache, extra, "abs,add"))
                    shutil.rmtree(d)
                    if arm == "cold":
                        shutil.rmtree(cache)
            if "default" in scenarios:
                for arm in ("warm", "no-cache"):
                    d = tmp / f"default-{arm}-{r}"
                    extra = ["--no-cache"] if arm == "no-cache" else []
                    record(f"default set, {arm}", _build(d, warm, extra, None))
                    shutil.rmtree(d)
            if "extension" in scenarios:
                for arm, (d, extra) in ext_dirs.items():
                    add = _build(d, warm, extra + ["--extension", str(ext)], "abs,add")
                    record(f"--extension added, {arm}", add)
                    record(
                        f"--extension removed, {arm}", _build(d, warm, extra, "abs,add")
                    )
    print()
    for name, runs in results.items():
        print(_summary(name, runs))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
