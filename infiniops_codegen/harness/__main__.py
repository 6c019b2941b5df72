"""Run the correctness harness over a whole build, crash-isolated.

    python -m infiniops_codegen.harness --build-dir build-all --skips tests/skips.yaml
        [--ops a,b] [--report F] [--devices cpu,cuda]

Each op runs in a worker process; when PyTorch (or the op) kills the worker,
that op is recorded as crashed and a new worker continues with the next op.
Prints the counts (ops by status; op x dtype cases passed, failed and skipped,
each skip with its reason; checked calls and unchecked layout variants by
reason; excluded ops by reason) and writes a JSON report. Two skip lists
apply: the tool's (infiniops_codegen/data/harness_skips.yaml: PyTorch's own
bugs and limitations, what the harness cannot sample), always, and the
project's (`--skips`), counted apart. Ops they exclude as a whole are not
sampled and count as "excluded" (see docs/coverage.md). Exits 1 when an op
failed, crashed, raised in the worker ("error") or has no valid sample in any
dtype without an entry in a skip list ("nosample"). `infiniops-codegen check`
runs the same on the project's build. The default build
is also covered by `python -m pytest` (tests/test_harness.py), which counts
the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ..model import manifest
from . import report, skips

WORKER = "infiniops_codegen.harness.worker"


def _run_worker(
    build_dir: Path,
    names: list[str],
    results: dict,
    timeout: float,
    device: str = "cpu",
    skip_file: Path | None = None,
) -> None:
    """Feed op names to one worker until it dies or finishes."""
    env = dict(
        os.environ,
        INFINIOPS_BUILD_DIR=str(build_dir),
        INFINIOPS_HARNESS_DEVICE=device,
        INFINIOPS_HARNESS_SKIPS=str(skip_file.resolve()) if skip_file else "",
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
        "--skips",
        type=Path,
        default=None,
        metavar="FILE",
        help="the project's skip file, whose 'harness:' entries apply besides "
        "the tool's list of PyTorch's own bugs and limitations (always "
        "applied); without it only the tool's list applies",
    )
    parser.add_argument(
        "--devices",
        default="cpu",
        help="comma-separated torch devices the samples are made on (cpu, cuda)",
    )
    args = parser.parse_args(argv)
    try:
        names = list(manifest.of_build(args.build_dir).names)
        skips.load_skips(args.skips)  # a broken skip file fails here, once
    except (manifest.ManifestError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.skips is None:
        print("note: no --skips file: only the tool's list of skips applies")
    if args.ops:
        wanted = set(args.ops.split(","))
        names = [n for n in names if n in wanted]
    results: dict = {}
    start = time.perf_counter()
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    for device in devices:  # results keyed "op" (one device) or "op@device"
        done: dict = {}
        while len(done) < len(names):
            _run_worker(args.build_dir, names, done, 600, device, args.skips)
        for n in names:
            results[n if len(devices) == 1 else f"{n}@{device}"] = done[n]
    counts = report.summarize(results)
    seconds = round(time.perf_counter() - start, 1)
    path = args.report or (args.build_dir / "harness-report.json")
    data = {"counts": counts, "results": results, "seconds": seconds}
    path.write_text(json.dumps(data, indent=1, sort_keys=True))
    for line in report.summary_lines(counts):
        print(line)
    print(f"report: {path} ({seconds} s)")
    bad = {s: n for s, n in counts["ops_by_status"].items() if s in report.BAD}
    if bad:
        for name, r in sorted(results.items()):
            if r["status"] in report.BAD:
                detail = r.get("error") or next(
                    (c["failures"][0] for c in r["cases"] if c.get("failures")), ""
                )
                if r["status"] == "nosample":
                    detail = report.NO_SAMPLE_OP
                print(f"  {r['status']}: {name}: {detail[:300]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
