"""What the torch check adds to `import infiniops` (docs/torch-releases.md):
the build's package infiniops/ (which loads the module through
runtime.load, after comparing the build's torch with the installed one)
against loading the extension module directly, torch imported first, each
in a fresh interpreter, interleaved; medians of the import alone.

    python scripts/measure_import.py [BUILD_DIR] [ROUNDS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

THROUGH_PACKAGE = """
import sys, time, torch
sys.path.insert(0, {build!r})
t = time.perf_counter()
import infiniops
print(time.perf_counter() - t)
"""
DIRECT = """
import glob, importlib.machinery, importlib.util, sys, time, torch
path = glob.glob({build!r} + "/infiniops.*.so")[0]
t = time.perf_counter()
loader = importlib.machinery.ExtensionFileLoader("infiniops", path)
spec = importlib.util.spec_from_file_location("infiniops", path, loader=loader)
module = importlib.util.module_from_spec(spec)
sys.modules["infiniops"] = module
loader.exec_module(module)
print(time.perf_counter() - t)
"""


def main(argv: list[str]) -> int:
    build = str(Path(argv[0] if argv else REPO / "build").resolve())
    rounds = int(argv[1]) if len(argv) > 1 else 25
    times: dict[str, list[float]] = {"through the package": [], "direct": []}
    for _ in range(rounds):
        for name, code in (
            ("through the package", THROUGH_PACKAGE),
            ("direct", DIRECT),
        ):
            proc = subprocess.run(
                [sys.executable, "-c", code.format(build=build)],
                capture_output=True,
                text=True,
                check=True,
                cwd=REPO,
            )
            times[name].append(float(proc.stdout.split()[-1]) * 1e3)
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, ms in medians.items():
        print(f"{name}: {ms:.2f} ms")
    print(f"the check: {medians['through the package'] - medians['direct']:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
