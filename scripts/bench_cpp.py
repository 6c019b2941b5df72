"""The C++ benchmark of the from_blob path (benchmarks/cpp/from_blob_bench.cpp)
against an installed build, as a C++ caller links it.

    python scripts/bench_cpp.py [--build-dir build] [--work DIR] [-- ARGS...]

Installs the build directory into WORK/prefix (cmake --install), configures
and builds benchmarks/cpp there with find_package(InfiniOps), runs the
wrapper pool's checks, then the benchmark (ARGS are its own: --rounds N,
--calls N), and prints its table (Markdown, docs/performance.md). The tree's
commit is printed with it, marked when the tree has changes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, default=REPO / "build")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("bench_args", nargs="*")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="infiniops-bench-cpp-"))
    prefix, binary = work / "prefix", work / "build"
    run(["cmake", "--install", str(args.build_dir), "--prefix", str(prefix)])
    run(
        ["cmake", "-S", str(REPO / "benchmarks" / "cpp"), "-B", str(binary)]
        + ["-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}"]
    )
    run(["ninja", "-C", str(binary)])
    checks = run([str(binary / "wrapper_pool_check")]).stdout.strip().splitlines()
    print(f"wrapper pool checks: {checks[-1]}")
    commit = run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]).stdout
    dirty = run(["git", "-C", str(REPO), "status", "--porcelain"]).stdout.strip()
    print(f"commit {commit.strip()}{' (modified tree)' if dirty else ''}\n")
    bench = subprocess.run(
        [str(binary / "from_blob_bench"), *args.bench_args],
        capture_output=True,
        text=True,
    )
    print(bench.stdout)
    if bench.returncode != 0:
        sys.exit(bench.stderr[-3000:])


if __name__ == "__main__":
    main()
