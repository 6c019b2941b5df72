"""Measure the build figures quoted in docs/building.md.

    python scripts/measure_build.py [--ops all] [--build-dir build-measure]

Clean build (ccache off) with GNU time as the compiler launcher, so every
compiler process's peak RSS is recorded; then a no-op build, and (for the
default set) an edit of one op's spec followed by generate + build.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", default=None)
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build-measure")
    args = parser.parse_args()
    build = args.build_dir.resolve()
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    log = build / "compiler-time.log"
    # Configure with GNU time in front of every compiler call.
    gen_dir = ROOT / "generated" if not args.ops else build / "generated"
    if args.ops:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "infiniops_codegen.cli",
                "generate",
                "--ops",
                args.ops,
                "--out",
                str(gen_dir),
            ],
            cwd=ROOT,
            check=True,
        )
    else:
        subprocess.run(
            [sys.executable, "-m", "infiniops_codegen.cli", "generate"],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    start = time.perf_counter()
    subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build),
            "-G",
            "Ninja",
            f"-DINFINI_OPS_GENERATED_DIR={gen_dir}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DCMAKE_CXX_COMPILER_LAUNCHER=/usr/bin/time;-f;%M %e %C;-a;-o;{log}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(["ninja", "-C", str(build)], check=True, stdout=subprocess.DEVNULL)
    clean = time.perf_counter() - start
    peaks = []
    for line in log.read_text().splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0].isdigit():
            words = parts[2].split()
            target = words[words.index("-c") + 1] if "-c" in words else "?"
            peaks.append((int(parts[0]) / 1024, float(parts[1]), target))
    peaks.sort(reverse=True)
    print(f"clean build (configure + compile + link): {clean:.1f} s wall")
    print(
        f"compiler processes: {len(peaks)}; peak RSS of the largest: "
        f"{peaks[0][0]:.0f} MiB ({Path(peaks[0][2]).name}, {peaks[0][1]:.1f} s)"
    )
    for mib, sec, target in peaks[:5]:
        print(f"  {mib:7.0f} MiB {sec:6.1f} s  {Path(target).name}")
    generate = [sys.executable, "-m", "infiniops_codegen.cli", "generate"]
    if args.ops:
        generate += ["--ops", args.ops, "--out", str(gen_dir)]
    ninja = ["ninja", "-C", str(build)]
    noop = run(generate) + run(ninja)
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
            edit = run(generate) + run(ninja)
            print(f"edit one op's spec, then generate + build: {edit:.1f} s")
        finally:
            spec.write_text(original)
            run(generate)


if __name__ == "__main__":
    main()
