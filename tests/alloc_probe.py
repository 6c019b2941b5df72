"""Child process of tests/test_runtime_allocations.py, run with the counting
allocator (alloc_counter.c) preloaded: counts the heap allocations of N calls
of our op on each call path and of N calls of that path's floor (the bench's
floor extension: a bare binding doing the same work), and prints one JSON
line per case.

The calls are the bench's own (infiniops_codegen.bench.calls, paths): the
after build forced onto the path exactly as the bench forces it, the floor
called positionally, each from a loop that itself allocates nothing per call.
Run once as is (pymalloc: the C/C++ heap, plus Python objects over 512 bytes)
and once with PYTHONMALLOC=malloc (every Python object allocation too); the
test takes the difference as the Python allocator's calls.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import sys
from pathlib import Path

import torch

from infiniops_codegen.model import manifest
from infiniops_codegen.bench import calls, floor, paths
from infiniops_codegen.runtime import load

CALLS = 1000

# op -> argument values by schema name (small tensors: the layer's own cost,
# not the kernel's, is what is counted). Kept in step with test_bench.FLOOR_OPS
# so that both tests share one compiled floor.
OPS = [
    "exp",
    "abs",
    "sub",
    "add",
    "clamp",
    "mm",
    "sum",
    "cat",
    "topk",
    "native_layer_norm",
    "mul",
    "silu",
    "rms_norm",
]


def values() -> dict[str, dict]:
    x, y = torch.rand(2, 3) + 0.5, torch.rand(2, 3) + 0.5
    a, b = torch.rand(2, 4), torch.rand(4, 3)
    w = torch.rand(3)
    return {
        "exp": {"self": x},
        "abs": {"self": x},
        "sub": {"self": x, "other": y, "alpha": 2},
        "add": {"self": x, "other": y},
        "clamp": {"self": x, "min": 0.6, "max": 1.2},
        "mm": {"self": a, "mat2": b},
        "sum": {"self": x, "dim": [1]},
        "cat": {"tensors": [x, y], "dim": 0},
        "topk": {"self": x, "k": 2, "dim": 1},
        "native_layer_norm": {
            "input": x,
            "normalized_shape": [3],
            "weight": w,
            "bias": w,
            "eps": 1e-5,
        },
        "mul": {"self": x, "other": y},
        "silu": {"self": x},
        "rms_norm": {"input": x, "weight": w, "eps": 1e-6},
    }


def outputs_of(entry: manifest.Op, args: dict) -> list:
    from infiniops_codegen.bench import reference

    return [torch.empty_like(r) for r in reference.expected(entry, args)]


def count(counter, loop) -> int:
    loop(50)  # warm up: first-call caches, interned names
    counter.alloc_counter_start()
    loop(CALLS)
    return counter.alloc_counter_stop()


def main() -> None:
    build_dir, floor_dir, shim = sys.argv[1:4]
    torch.set_num_threads(1)
    gc.disable()  # no collection inside a counted loop
    counter = ctypes.CDLL(shim)
    counter.alloc_counter_stop.restype = ctypes.c_long
    m = load(build_dir)
    entries = manifest.of_build(build_dir).by_name()
    path, _ = floor.build(
        [entries[n] for n in OPS], Path(floor_dir), echo=lambda *a: None
    )
    f = floor.load(path)

    # The counter must see allocations, and with PYTHONMALLOC=malloc the
    # Python objects too, or equal counts mean nothing.
    counter.alloc_counter_start()
    ctypes.create_string_buffer(1 << 20)
    assert counter.alloc_counter_stop() >= 1, "the counting allocator is not active"
    objects = count(counter, calls.timed_loop(calls.Call(list, ((0, 1, 2),), ())))
    print(
        json.dumps(
            {
                "case": "python objects",
                "pythonmalloc": os.environ.get("PYTHONMALLOC", ""),
                "count": objects,
            }
        ),
        flush=True,
    )

    for name, args in values().items():
        entry = entries[name]
        outputs = outputs_of(entry, args)
        dtype = "float32"
        first = next(v for v in args.values() if isinstance(v, (torch.Tensor, list)))
        numel = (first[0] if isinstance(first, list) else first).numel()
        default = paths.default_path(entry, dtype, numel)
        flat = [x for v in args.values() for x in (v if isinstance(v, list) else [v])]
        tensors = len(outputs) + sum(isinstance(x, torch.Tensor) for x in flat)
        for p in paths.applicable(entry, dtype):
            setting = paths.setting(p, default)
            ours = calls.ours(
                getattr(m, name), entry, args, outputs, setting.implementation
            )
            floor_fn = getattr(f, floor.function_name(p, name), None)
            m.set_handle_reuse(setting.handle_reuse)
            m.set_direct_mode(setting.direct_mode)
            row = {
                "case": f"{name}/{p}",
                "op": name,
                "path": p,
                "inner": paths.from_blob_inner(entry),
                "tensors": tensors,
                "ours": count(counter, calls.timed_loop(ours)),
            }
            if floor_fn is not None:
                low = calls.floor(floor_fn, entry, args, outputs)
                row["floor"] = count(counter, calls.timed_loop(low))
            print(json.dumps(row), flush=True)
            if p == "from_blob":
                # The same without the wrapper pool: fresh wrappers per call.
                m.set_wrapper_pool(False)
                fresh = {**row, "case": f"{name}/from_blob_fresh", "path": p}
                fresh.pop("floor", None)
                fresh["ours"] = count(counter, calls.timed_loop(ours))
                m.set_wrapper_pool(True)
                print(json.dumps(fresh), flush=True)
    m.set_handle_reuse(True)
    m.set_direct_mode(True)


if __name__ == "__main__":
    main()
