"""Child process of tests/test_runtime_allocations.py (run with the counting
allocator preloaded): counts heap allocations of N calls of our op and of N
calls of the floor (a bare binding calling the same at::<op>_out), and prints
one JSON line per case."""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

import torch

from infiniops_codegen.bench import floor
from infiniops_codegen.runtime import load

CALLS = 1000


def cases(m, f):
    """(name, our call, floor call, our options); tiny tensors: the layer's
    own cost, not the kernel's, is what is counted."""
    x, y, o = torch.rand(2, 3) + 0.5, torch.rand(2, 3) + 0.5, torch.empty(2, 3)
    a, b, c = torch.rand(2, 4), torch.rand(4, 3), torch.empty(2, 3)
    s = torch.empty(2)
    cat_out = torch.empty(4, 3)
    ln = (torch.empty(2, 3), torch.empty(2, 1), torch.empty(2, 1))
    w = torch.rand(3)
    return [
        ("exp", lambda: m.exp(x, out=o), lambda: f.exp(x, o)),
        ("abs", lambda: m.abs(x, out=o), lambda: f.abs(x, o)),
        ("sub", lambda: m.sub(x, y, alpha=2, out=o), lambda: f.sub(x, y, 2, o)),
        (
            "add[torch]",
            lambda: m.add(x, y, out=o, implementation="torch"),
            lambda: f.add(x, y, 1, o),
        ),
        ("clamp", lambda: m.clamp(x, 0.6, 1.2, out=o), lambda: f.clamp(x, 0.6, 1.2, o)),
        ("mm", lambda: m.mm(a, b, out=c), lambda: f.mm(a, b, c)),
        ("sum", lambda: m.sum(x, [1], out=s), lambda: f.sum(x, [1], False, None, s)),
        (
            "cat",
            lambda: m.cat([x, y], 0, out=cat_out),
            lambda: f.cat([x, y], 0, cat_out),
        ),
        (
            "native_layer_norm",
            lambda: m.native_layer_norm(
                x, [3], w, w, 1e-5, out0=ln[0], out1=ln[1], out2=ln[2]
            ),
            lambda: f.native_layer_norm(x, [3], w, w, 1e-5, *ln),
        ),
    ]


def count(counter, call) -> int:
    for _ in range(50):  # warm up: first-call caches, interned names
        call()
    counter.alloc_counter_start()
    for _ in range(CALLS):
        call()
    return counter.alloc_counter_stop()


def main() -> None:
    build_dir, floor_dir, shim = sys.argv[1:4]
    torch.set_num_threads(1)
    counter = ctypes.CDLL(shim)
    counter.alloc_counter_stop.restype = ctypes.c_long
    m = load(build_dir)
    manifest = json.loads((Path(build_dir) / "manifest.json").read_text())
    entries = {o["name"]: o for o in manifest["ops"]}
    names = [
        "exp",
        "abs",
        "sub",
        "add",
        "clamp",
        "mm",
        "sum",
        "cat",
        "native_layer_norm",
    ]
    path, _ = floor.build(
        [entries[n] for n in names], Path(floor_dir), echo=lambda *a: None
    )
    f = floor.load(path)
    # The counter must see allocations at all, or equal counts mean nothing.
    counter.alloc_counter_start()
    ctypes.create_string_buffer(1 << 20)
    assert counter.alloc_counter_stop() >= 1, "the counting allocator is not active"
    # Direct mode off: both call the same at::<op>_out through the dispatcher,
    # so any difference is the library's own layer. (In direct mode ATen's
    # at::cpu:: entry points allocate differently from the dispatcher's for
    # some ops, e.g. sum: not our layer, and not the same ATen call.)
    m.set_direct_mode(False)
    for name, ours, theirs in cases(m, f):
        n_ours, n_floor = count(counter, ours), count(counter, theirs)
        print(json.dumps({"op": name, "ours": n_ours, "floor": n_floor}), flush=True)
    m.set_direct_mode(True)
    # A native kernel has no ATen call to match: it must allocate nothing.
    x, y, o = torch.rand(2, 3), torch.rand(2, 3), torch.empty(2, 3)
    n = count(counter, lambda: m.add(x, y, out=o, implementation="native"))
    print(json.dumps({"op": "add[native]", "ours": n, "floor": 0}), flush=True)


if __name__ == "__main__":
    main()
