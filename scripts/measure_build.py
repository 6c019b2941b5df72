"""Measure the build figures quoted in docs/building.md.

    python scripts/measure_build.py [--ops all] [--build-dir build-measure]
    python scripts/measure_build.py --time-report shard_003 [--build-dir build]

The first form builds exactly what `infiniops-codegen build` builds (the same
BuildRequest), clean and with ccache off, with GNU time in front of every
compiler process (its peak RSS and seconds are recorded); then a no-op build,
and (for the default set) an edit of one op's spec followed by generate +
build.  The second re-runs one TU's compile command from an existing build's
compile_commands.json with -ftime-report and prints GCC's phases.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from infiniops_codegen.toolchain import builder

ROOT = Path(__file__).resolve().parent.parent
TIME_FORMAT = "%M %e %C"


def quiet(*args) -> None:
    pass


def request(args, log: Path) -> builder.BuildRequest:
    launcher = ("/usr/bin/time", "-f", TIME_FORMAT, "-a", "-o", str(log))
    return builder.BuildRequest(
        build_dir=args.build_dir,
        ops=args.ops,
        opt_level=args.opt_level,
        ccache=False,
        smoke=False,
        compiler_launcher=launcher,
    )


def timed_build(args, log: Path) -> float:
    # The same launcher every time: another one would reconfigure and rebuild.
    start = time.perf_counter()
    builder.build(request(args, log), echo=quiet)
    return time.perf_counter() - start


def generate_and_build(args, log: Path) -> float:
    start = time.perf_counter()
    generate(args)
    return time.perf_counter() - start + timed_build(args, log)


def generate(args) -> None:
    cmd = [sys.executable, "-m", "infiniops_codegen.cli", "generate"]
    if args.ops:
        cmd += ["--ops", args.ops, "--build-dir", str(args.build_dir)]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def steps(log: Path) -> list[tuple[float, float, str]]:
    """(peak MiB, seconds, source) per compiler process."""
    out = []
    for line in log.read_text().splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0].isdigit():
            words = parts[2].split()
            target = words[words.index("-c") + 1] if "-c" in words else "?"
            out.append((int(parts[0]) / 1024, float(parts[1]), target))
    return out


def clean_build(args) -> None:
    shutil.rmtree(args.build_dir, ignore_errors=True)
    args.build_dir.mkdir(parents=True)
    log = args.build_dir / "compiler-time.log"
    # Generate first, so the timed build starts from sources already written
    # (for the default set they are the committed generated/).
    generate(args)
    clean = timed_build(args, log)
    procs = steps(log)
    by_rss = sorted(procs, reverse=True)
    by_time = sorted(procs, key=lambda p: -p[1])
    print(f"clean build (configure + compile + link): {clean:.1f} s wall")
    print(
        f"compiler processes: {len(procs)}, {sum(p[1] for p in procs):.1f} s in all; "
        f"largest peak RSS {by_rss[0][0]:.0f} MiB ({Path(by_rss[0][2]).name})"
    )
    print("longest steps:")
    for mib, sec, target in by_time[:8]:
        print(f"  {sec:6.1f} s {mib:7.0f} MiB  {Path(target).name}")
    shards = sorted(p[1] for p in procs if Path(p[2]).name.startswith("shard_"))
    if shards:
        print(
            f"shards: {len(shards)}, median {shards[len(shards) // 2]:.1f} s, "
            f"longest {shards[-1]:.1f} s, {sum(shards):.1f} s in all"
        )
    noop = generate_and_build(args, log)
    print(f"no-op generate + build: {noop:.2f} s")
    if not args.ops:
        spec = ROOT / "op_specs" / "llm.yaml"
        original = spec.read_text()
        try:
            spec.write_text(
                original.replace(
                    "  - neg.out\n", "  - {aten: neg.out, rename: {self: x}}\n"
                )
            )
            edit = generate_and_build(args, log)
            print(f"edit one op's spec, then generate + build: {edit:.1f} s")
        finally:
            spec.write_text(original)
            generate(args)


# " phase parsing : usr ( %) sys ( %) wall ( %) mem ( %)": name and wall.
PHASE = re.compile(r"^ (.+?)\s*:.*?(\d+\.\d+)\s*\(\s*\d+%\)\s+\d+\s*[kM]?\s*\(")


def time_report(args) -> None:
    """GCC's -ftime-report of one TU, with its compile command from the build."""
    commands = json.loads((args.build_dir / "compile_commands.json").read_text())
    name = args.time_report
    match = [c for c in commands if Path(c["file"]).stem == name]
    if not match:
        sys.exit(f"{name}: no such TU in {args.build_dir}/compile_commands.json")
    entry = match[0]
    argv = shlex.split(entry["command"])
    # compile_commands.json holds the compiler's command (no launcher).
    with tempfile.TemporaryDirectory() as tmp:
        argv[argv.index("-o") + 1] = str(Path(tmp) / f"{name}.o")
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M", *argv, "-ftime-report"],
            cwd=entry["directory"],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(proc.stderr[-3000:])
    phases = []
    for line in proc.stderr.splitlines():
        m = PHASE.match(line)
        if m and not m.group(1).startswith("TOTAL"):
            phases.append((float(m.group(2)), m.group(1)))
    peak = int(proc.stderr.strip().splitlines()[-1]) / 1024
    print(f"{name}: {wall:.2f} s wall, peak RSS {peak:.0f} MiB")
    for sec, phase in sorted(phases, reverse=True)[: args.top]:
        print(f"  {sec:6.2f} s  {phase}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", default=None)
    parser.add_argument("--opt-level", default="3")
    parser.add_argument("--build-dir", type=Path, default=None)
    parser.add_argument("--time-report", metavar="TU", default=None)
    parser.add_argument("--top", type=int, default=14)
    args = parser.parse_args()
    default_dir = "build" if args.time_report else "build-measure"
    args.build_dir = (args.build_dir or ROOT / default_dir).resolve()
    if args.time_report:
        time_report(args)
    else:
        clean_build(args)


if __name__ == "__main__":
    main()
