"""Run the correctness harness over a whole build, crash-isolated.

    python -m infiniops_codegen.harness --build-dir build-all [--ops a,b] [--report F]
        [--devices cpu,cuda]

Each op runs in a worker process; when PyTorch (or the op) kills the worker,
that op is recorded as crashed and a new worker continues with the next op.
Prints the counts (ops, cases, passed, skipped, failed, crashed) and writes a
JSON report. Ops that tests/skips.yaml excludes as a whole are not
sampled and count as "excluded" (see docs/coverage.md). The default build is also covered by `python -m pytest`
(tests/test_harness.py), which uses the same checks in-process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

WORKER = "infiniops_codegen.harness.worker"


def _run_worker(
    build_dir: Path,
    names: list[str],
    results: dict,
    timeout: float,
    device: str = "cpu",
) -> None:
    """Feed op names to one worker until it dies or finishes."""
    env = dict(
        os.environ, INFINIOPS_BUILD_DIR=str(build_dir), INFINIOPS_HARNESS_DEVICE=device
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", WORKER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdin and proc.stdout
    try:
        for name in names:
            if name in results:
                continue
            proc.stdin.write(name + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:  # the worker died on this op
                results[name] = {"status": "crashed", "cases": []}
                return
            results[name] = json.loads(line)
    finally:
        proc.kill()
        proc.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infiniops_codegen.harness")
    parser.add_argument("--build-dir", type=Path, default=Path("build"))
    parser.add_argument("--ops", default=None, help="comma-separated op names")
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument(
        "--devices",
        default="cpu",
        help="comma-separated torch devices the samples are made on (cpu, cuda)",
    )
    args = parser.parse_args(argv)
    manifest = json.loads((args.build_dir / "manifest.json").read_text())
    names = [op["name"] for op in manifest["ops"]]
    if args.ops:
        wanted = set(args.ops.split(","))
        names = [n for n in names if n in wanted]
    results: dict = {}
    start = time.perf_counter()
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    for device in devices:  # results keyed "op" (one device) or "op@device"
        done: dict = {}
        while len(done) < len(names):
            _run_worker(args.build_dir, names, done, 600, device)
        for n in names:
            results[n if len(devices) == 1 else f"{n}@{device}"] = done[n]
    counts = {"ops": len(names), "cases": 0, "passed": 0, "skipped": 0, "failed": 0}
    by_status: dict[str, list[str]] = {}
    for name, r in results.items():
        by_status.setdefault(r["status"], []).append(name)
        for case in r["cases"]:
            counts["cases"] += 1
            counts[case["status"]] += 1
    report = {
        "counts": counts,
        "ops_by_status": {k: sorted(v) for k, v in sorted(by_status.items())},
        "results": results,
        "seconds": round(time.perf_counter() - start, 1),
    }
    path = args.report or (args.build_dir / "harness-report.json")
    path.write_text(json.dumps(report, indent=1, sort_keys=True))
    share = 100.0 * counts["skipped"] / max(1, counts["cases"])
    print(
        f"harness: {counts['ops']} ops, {counts['cases']} op x dtype cases, "
        f"{counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['skipped']} skipped ({share:.1f}%); ops: "
        + ", ".join(f"{len(v)} {k}" for k, v in sorted(by_status.items()))
        + f"; report: {path} ({report['seconds']} s)"
    )
    return 0 if counts["failed"] == 0 and "crashed" not in by_status else 1


if __name__ == "__main__":
    sys.exit(main())
