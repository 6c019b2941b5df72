"""Where a native CPU kernel stops beating the library's own direct ATen call:
median over 9 interleaved rounds of (native time / implementation="torch"
time) per op, dtype and size, one intra-op thread (below 1: native faster).
The per-dtype limits in op_specs/llm.yaml (`native: {cpu: {dtype: N}}`) are
the largest size measured at 0.95 or below.

    python scripts/native_crossover.py [BUILD_DIR]
"""

import statistics
import sys
import time

import torch

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "build")
import infiniops as ops  # noqa: E402

SIZES = (1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def per_call(f, n: int) -> float:
    t = time.perf_counter_ns()
    for _ in range(n):
        f()
    return (time.perf_counter_ns() - t) / n


def main() -> None:
    torch.set_num_threads(1)
    for name, arity in (("add", 2), ("mul", 2), ("silu", 1)):
        fn = getattr(ops, name)
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            row = []
            for size in SIZES:
                args = [torch.randn(size).to(dtype) for _ in range(arity)]
                out = torch.empty(size, dtype=dtype)
                native = lambda: fn(
                    *args, out=out, implementation="native"
                )  # noqa: E731
                direct = lambda: fn(
                    *args, out=out, implementation="torch"
                )  # noqa: E731
                n = max(20, int(2e5 / (size + 200)))
                ratios = [per_call(native, n) / per_call(direct, n) for _ in range(9)]
                row.append(f"{size}:{statistics.median(ratios):.2f}")
            print(name, str(dtype).removeprefix("torch."), " ".join(row), flush=True)


if __name__ == "__main__":
    main()
