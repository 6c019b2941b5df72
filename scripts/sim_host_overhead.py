"""Host-side cost per call on a device: `ops.<op>(..., out=)` against
`torch.<op>(..., out=)` on tensors of the simulated accelerator `sim`, in its
no-work mode, with the same pairs on CPU tensors for reference
(docs/performance.md, "Host overhead on a device").

With the simulator's kernels and its fallback's copies and page protection in
play, a tiny `torch.add(out=)` on `sim` costs mostly the simulator. In null
mode (`torch.sim.null_kernels()`) a native launch returns at once and the
device's boxed fallback returns the aliased arguments of an out= op without
a copy, so what is left is the host's cost of the call: Python argument
handling, the binding or torch's argument parser, the dispatcher, the device
guard, the launch.

Ops and paths on `sim`: add, mul and rms_norm have native sim kernels (ours
launches one; torch goes through the dispatcher to the device's fallback);
abs and sub have none (ours takes the handle path into the dispatcher and the
device's fallback, as torch does). torch has no out= for rms_norm: its
reference is `torch.nn.functional.rms_norm(...)` without out= (it allocates
its output and, on `sim`, decomposes into six ATen ops), so that ratio is
not like for like.

Before timing the script checks, and fails loudly otherwise: in normal mode
every variant's result (ours and torch's, on both devices); in null mode that
no variant copies a byte or runs the fallback (`torch.sim.stats()`), and that
ours took the expected path (`ops.stats()`).

Timing: one process, 1 torch thread, the garbage collector off; per round
each (device, op, size) case times a batch of CALLS calls of ours and of
torch's, in alternating order from round to round; per-call medians over the
rounds, and the ratio ours/torch paired within each round (median, with its
quartiles).

    python scripts/sim_host_overhead.py [--build-dir build-sim] [--rounds 15]
        [--calls 2000] [--quick]

The module must be a `--platform cpu,sim` build of the default op set
(`infiniops-codegen build --platform cpu,sim --build-dir build-sim`).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

import torch
import torch.nn.functional as F

import infiniops_codegen.sim  # noqa: F401  (registers torch.sim; before load)
from infiniops_codegen.runtime import load

REPO = Path(__file__).resolve().parents[1]
OPS = ("add", "mul", "abs", "sub", "rms_norm")
# Ours on each device, as ops.stats() reports it (implementation, path);
# None: not checked (the CPU paths are docs/performance.md's subject).
EXPECTED_PATH = {
    "sim": {
        "add": ("native", "handle"),
        "mul": ("native", "handle"),
        "rms_norm": ("native", "handle"),
        "abs": ("torch", "handle+dispatcher"),
        "sub": ("torch", "handle+dispatcher"),
    },
    "cpu": None,
}
COPIES = ("device_to_host_copies", "host_to_device_copies", "device_to_device_copies")


def make_case(ops, op: str, device: str, n: int) -> dict:
    """Tensors, the two calls (same Python spelling where torch has out=),
    and the expected value of the output."""
    side = {1: 1, 64: 8}.get(n) or int(n**0.5)
    shape = (side, side) if side * side == n else (1, n)
    g = torch.Generator().manual_seed(n)
    a = torch.randn(shape, generator=g) - 0.5
    b = torch.randn(shape, generator=g)
    w = torch.randn(shape[-1:], generator=g)
    ns = {
        "x": a.to(device),
        "y": b.to(device),
        "w": w.to(device),
        "o": torch.empty(shape, device=device),
        "shape": shape[-1:],
    }
    if op in ("add", "mul", "sub"):
        stmt = "f(x, y, out=o)"
        ours_ns, torch_ns = {"f": getattr(ops, op)}, {"f": getattr(torch, op)}
        expected = getattr(torch, op)(a, b)
        torch_call = f"torch.{op}(x, y, out=o)"
    elif op == "abs":
        stmt = "f(x, out=o)"
        ours_ns, torch_ns = {"f": ops.abs}, {"f": torch.abs}
        expected = torch.abs(a)
        torch_call = "torch.abs(x, out=o)"
    else:
        stmt = None
        ours_ns = {"f": ops.rms_norm}
        torch_ns = {"f": F.rms_norm}
        expected = F.rms_norm(a, shape[-1:], w, 1e-6)
        torch_call = "F.rms_norm(x, shape, w, 1e-6) (no out=)"
    ours_stmt = stmt or "f(x, w, 1e-6, out=o)"
    torch_stmt = stmt or "f(x, shape, w, 1e-6)"
    return {
        "op": op,
        "device": device,
        "n": n,
        "expected": expected,
        "torch_call": torch_call,
        "ours": timeit.Timer(ours_stmt, globals={**ns, **ours_ns}),
        "torch": timeit.Timer(torch_stmt, globals={**ns, **torch_ns}),
        "ns": ns,
    }


def fail(message: str) -> None:
    sys.exit(f"sim_host_overhead: FAILED: {message}")


def check_results(case: dict) -> None:
    """Normal mode: both variants compute the right value."""
    ns = case["ns"]
    for variant in ("ours", "torch"):
        ns["o"].fill_(float("nan"))
        if case["op"] == "rms_norm" and variant == "torch":
            result = F.rms_norm(ns["x"], ns["shape"], ns["w"], 1e-6)
        else:
            case[variant].timeit(number=1)
            result = ns["o"]
        torch.sim.synchronize()
        got = result.cpu()
        if not torch.allclose(got, case["expected"], rtol=1e-5, atol=1e-5):
            fail(
                f"{variant} {case['op']} on {case['device']} (n={case['n']}): wrong result"
            )


def check_null_mode(ops, case: dict) -> tuple[str, str]:
    """Null mode: no copy, no fallback run, and ours takes the expected path.
    Returns ours' (implementation, path)."""
    sim = torch.sim
    taken = set()
    for variant in ("ours", "torch"):
        sim.synchronize()
        sim.reset_stats()
        ops.reset_stats()
        case[variant].timeit(number=10)
        sim.synchronize()
        counted = ops.stats()
        ops.reset_stats(False)
        stats = sim.stats()
        moved = {k: stats[k] for k in COPIES + ("fallback_runs",) if stats[k]}
        if case["device"] == "sim" and moved:
            fail(f"{variant} {case['op']} on sim in null mode: {moved}")
        if variant == "ours":
            taken = {(k.implementation, k.path) for k in counted if k.op == case["op"]}
        elif counted:
            fail(f"torch's {case['op']} was counted by ops.stats(): {counted}")
    expected = (EXPECTED_PATH[case["device"]] or {}).get(case["op"])
    if len(taken) != 1 or (expected and taken != {expected}):
        fail(f"ours {case['op']} on {case['device']}: path {taken}, wanted {expected}")
    return next(iter(taken))


def time_cases(cases: list[dict], rounds: int, calls: int) -> None:
    for case in cases:
        case["times"] = {"ours": [], "torch": []}
    gc.disable()
    try:
        for r in range(rounds):
            for case in cases:
                order = ("ours", "torch") if r % 2 == 0 else ("torch", "ours")
                for variant in order:
                    timer = case[variant]
                    timer.timeit(number=1)  # its data and code in cache
                    seconds = timer.timeit(number=calls)
                    case["times"][variant].append(seconds / calls * 1e6)
                torch.sim.synchronize()
    finally:
        gc.enable()


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def calibration() -> str:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "sum(range(10**8))"], check=True)
    seconds = time.perf_counter() - start

    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else "?"

    status = git("status", "--porcelain").splitlines()
    changed = [line for line in status if not line.startswith("??")]
    tree = f"modified ({len(changed)} files)" if changed else "unmodified"
    tree += f", {len(status) - len(changed)} untracked"
    load_avg = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return (
        f'calibration: `python -c "sum(range(10**8))"` {seconds:.2f} s; '
        f"python {platform.python_version()}, torch {torch.__version__}, "
        f"nproc {len(os.sched_getaffinity(0))}, load {load_avg}; "
        f"commit {git('rev-parse', '--short', 'HEAD')}, tree {tree}"
    )


def table(cases: list[dict]) -> str:
    lines = [
        "| device | op | elements | ours: path | ours µs | torch | torch µs "
        "| ours/torch [quartiles] |",
        "|---|---|---:|---|---:|---|---:|---|",
    ]
    for c in cases:
        ours, ref = c["times"]["ours"], c["times"]["torch"]
        ratios = [o / t for o, t in zip(ours, ref)]
        q1, q3 = quartiles(ratios)
        ratio = f"{statistics.median(ratios):.2f} [{q1:.2f}, {q3:.2f}]"
        if c["op"] == "rms_norm":  # not like for like: torch has no out=
            ratio = f"({ratio})"
        lines.append(
            f"| {c['device']} | {c['op']} | {c['n']} | {'/'.join(c['path'])} "
            f"| {statistics.median(ours):.2f} | `{c['torch_call']}` "
            f"| {statistics.median(ref):.2f} "
            f"| {ratio} |"
        )
    lines.append(
        "\nrms_norm: torch has no out=; `F.rms_norm` allocates its output and,"
        " on sim, decomposes into six ATen ops with a device allocation each."
        " Its ratio (in parentheses) is not like for like."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--build-dir",
        default=os.environ.get("INFINIOPS_SIM_BUILD_DIR") or str(REPO / "build-sim"),
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sizes", default="1,64")
    parser.add_argument(
        "--quick", action="store_true", help="3 rounds of 20 calls (a smoke test)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.calls = 3, 20
    torch.set_num_threads(1)
    ops = load(args.build_dir)
    sizes = [int(s) for s in args.sizes.split(",")]
    cases = [
        make_case(ops, op, device, n)
        for device in ("sim", "cpu")
        for op in OPS
        for n in sizes
    ]
    for case in cases:
        check_results(case)
    torch.sim.set_null_kernels(True)
    try:
        for case in cases:
            case["path"] = check_null_mode(ops, case)
        time_cases(cases, args.rounds, args.calls)
    finally:
        torch.sim.set_null_kernels(False)
    print(
        f"Per call, median of {args.rounds} rounds x {args.calls} calls, "
        "1 torch thread, sim in null mode (host cost only); float32\n"
    )
    print(table(cases))
    print()
    print(calibration())
    return 0


if __name__ == "__main__":
    sys.exit(main())
