"""Stream and native-kernel checks on cuda, run by scripts/gpu_check.sh:

    python scripts/gpu/smoke.py BUILD_DIR

- the nvidia platform is built and add, rms_norm, silu_and_mul have native
  kernels on it, which match PyTorch (float32, float16, bfloat16);
- stream=: None runs on the current stream; a torch.cuda.Stream (or its raw
  handle) runs the op on that stream, for the native kernel and the PyTorch
  fallback alike, and leaves the current stream as it was.
"""

from __future__ import annotations

import sys

import torch

from infiniops_codegen.runtime import load


def main(build_dir: str) -> None:
    ops = load(build_dir)
    assert "nvidia" in ops.platforms(), ops.platforms()
    impls = ops.implementations()
    for name in ("add", "rms_norm", "silu_and_mul"):
        assert impls[name]["nvidia"] == ["native", "torch"], (name, impls[name])
    dev = torch.device("cuda")
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        tol = {"atol": 1e-2, "rtol": 1e-2} if dtype != torch.float32 else {}
        x = torch.randn(64, 256, device=dev, dtype=dtype)
        y = torch.randn(64, 256, device=dev, dtype=dtype)
        w = torch.randn(256, device=dev, dtype=dtype)
        for impl in ("native", "torch"):
            out = torch.empty_like(x)
            ops.add(x, y, alpha=0.5, out=out, implementation=impl)
            torch.testing.assert_close(out, x + 0.5 * y, **tol)
            ops.rms_norm(x, w, 1e-6, out=out, implementation=impl)
            ref = torch.nn.functional.rms_norm(x.float(), (256,), w.float(), 1e-6)
            torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)
            half = torch.empty(64, 128, device=dev, dtype=dtype)
            ops.silu_and_mul(x, out=half, implementation=impl)
            ref = torch.nn.functional.silu(x[:, :128].float()) * x[:, 128:].float()
            torch.testing.assert_close(half.float(), ref, atol=2e-2, rtol=2e-2)
    print("native kernels match PyTorch on cuda (float32, float16, bfloat16)")

    before = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    x = torch.randn(1 << 20, device=dev)
    for impl in ("native", "torch"):
        for stream in (side, side.cuda_stream):
            out = torch.empty_like(x)
            side.wait_stream(torch.cuda.current_stream())
            ops.add(x, x, out=out, stream=stream, implementation=impl)
            assert torch.cuda.current_stream() == before, "the guard must restore"
            side.synchronize()
            torch.testing.assert_close(out, 2 * x)
    out = torch.empty_like(x)
    ops.add(x, x, out=out, stream=None, implementation="torch")
    torch.testing.assert_close(out, 2 * x)
    # On a side stream as the current one, stream=None follows it.
    with torch.cuda.stream(side):
        ops.add(x, x, out=out, stream=None, implementation="native")
    side.synchronize()
    torch.testing.assert_close(out, 2 * x)
    print("stream= honoured on cuda (native and torch implementations)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build-plat-gpu")
