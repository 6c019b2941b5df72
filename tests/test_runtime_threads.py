"""Calls from many Python threads at once (the GIL is released inside every
op): shared inputs, separate outputs, results equal to a serial run.

(That a long op lets other threads run is tests/test_runtime_api.py's
test_gil_is_released_while_an_op_runs.)
"""

from __future__ import annotations

import threading
import time

import pytest
import torch

THREADS = 8
CALLS_PER_THREAD = 1_000
LARGE = 1 << 16


def _inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 24, generator=g)
    return {
        "x": x,
        "y": torch.randn(16, 24, generator=g),
        "xt": torch.randn(24, 16, generator=g).t(),  # strided
        "w": torch.randn(24, 8, generator=g),
        "h": torch.randn(16, 24, generator=g).to(torch.bfloat16),
        "v": torch.randn(40, generator=g),
        # Above the element count under which borrowing ops keep the GIL
        # (cpp/torch/call.h: kKeepGilBelowElements), so these calls overlap.
        "big": torch.randn(LARGE, generator=g),
        "big2": torch.randn(LARGE, generator=g),
    }


# name -> (call(ops, inputs, outs, implementation), {out name: (shape, dtype)})
CALLS = {
    "add_native": (
        lambda m, t, o, impl: m.add(
            t["x"], t["y"], alpha=0.5, out=o["out"], implementation=impl
        ),
        {"out": ((16, 24), torch.float32)},
    ),
    "mul_bf16": (
        lambda m, t, o, impl: m.mul(t["h"], t["h"], out=o["out"], implementation=impl),
        {"out": ((16, 24), torch.bfloat16)},
    ),
    "sub_strided": (
        lambda m, t, o, impl: m.sub(t["x"], t["xt"], out=o["out"], implementation=impl),
        {"out": ((16, 24), torch.float32)},
    ),
    "mm": (
        lambda m, t, o, impl: m.mm(t["x"], t["w"], out=o["out"], implementation=impl),
        {"out": ((16, 8), torch.float32)},
    ),
    "softmax": (
        lambda m, t, o, impl: m.softmax(t["x"], -1, out=o["out"], implementation=impl),
        {"out": ((16, 24), torch.float32)},
    ),
    "sum_dims": (
        lambda m, t, o, impl: m.sum(
            t["x"], [0], True, out=o["out"], implementation=impl
        ),
        {"out": ((1, 24), torch.float32)},
    ),
    "cat": (
        lambda m, t, o, impl: m.cat(
            [t["x"], t["y"]], 1, out=o["out"], implementation=impl
        ),
        {"out": ((16, 48), torch.float32)},
    ),
    "topk": (
        lambda m, t, o, impl: m.topk(
            t["v"], 5, values=o["values"], indices=o["indices"], implementation=impl
        ),
        {"values": ((5,), torch.float32), "indices": ((5,), torch.int64)},
    ),
    "sin_large": (
        lambda m, t, o, impl: m.sin(t["big"], out=o["out"], implementation=impl),
        {"out": ((LARGE,), torch.float32)},
    ),
    "add_large": (
        lambda m, t, o, impl: m.add(
            t["big"], t["big2"], out=o["out"], implementation=impl
        ),
        {"out": ((LARGE,), torch.float32)},
    ),
    "silu_and_mul": (
        lambda m, t, o, impl: m.silu_and_mul(t["x"], out=o["out"], implementation=impl),
        {"out": ((16, 12), torch.float32)},
    ),
}
NAMES = sorted(CALLS)
IMPLEMENTATIONS = ("default", "torch")


def _outs(name):
    return {
        k: torch.empty(shape, dtype=dtype)
        for k, (shape, dtype) in CALLS[name][1].items()
    }


def _expected(ops, inputs):
    """Each (call, implementation) once, serially."""
    expected = {}
    for name in NAMES:
        for impl in IMPLEMENTATIONS:
            outs = _outs(name)
            CALLS[name][0](ops, inputs, outs, impl)
            expected[name, impl] = outs
    return expected


@pytest.mark.parametrize(
    "reuse, pool",
    [(True, True), (False, True), (False, False)],
    ids=["reuse", "from_blob", "from_blob_fresh"],
)
def test_threads_on_shared_inputs_match_a_serial_run(ops, reuse, pool):
    """8 threads x 1,000 calls on the same input tensors, each thread with its
    own outputs, cycling through ops and implementations: every output equals
    the serial run's, bit for bit, and the inputs are unchanged. On the
    from_blob path, each thread's wrapper pool re-binds its wrappers (or,
    without the pool, makes fresh ones)."""
    from runtime_conftest_helpers import handle_reuse

    inputs = _inputs()
    snapshot = {k: v.clone() for k, v in inputs.items()}
    pools: dict[int, dict] = {}
    ops.set_wrapper_pool(pool)
    with handle_reuse(ops, reuse):
        expected = _expected(ops, inputs)
        errors: list[str] = []
        done = [0] * THREADS
        barrier = threading.Barrier(THREADS)

        def work(k: int) -> None:
            outs = {name: _outs(name) for name in NAMES}  # this thread's own
            ops._debug_wrapper_pool(True)  # this thread's counts from here
            barrier.wait()  # start together
            try:
                for i in range(CALLS_PER_THREAD):
                    name = NAMES[(i + k) % len(NAMES)]
                    impl = IMPLEMENTATIONS[(i // len(NAMES) + k) % 2]
                    mine = outs[name]
                    for t in mine.values():
                        t.fill_(-1)  # a stale result would not pass
                    CALLS[name][0](ops, inputs, mine, impl)
                    for key, want in expected[name, impl].items():
                        if not torch.equal(mine[key], want):
                            errors.append(f"thread {k} call {i}: {name} ({impl}) {key}")
                    done[k] += 1
                pools[k] = ops._debug_wrapper_pool(False)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"thread {k}: {type(e).__name__}: {e}")

        threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ops.set_wrapper_pool(True)
    assert errors == [], errors[:10]
    assert done == [CALLS_PER_THREAD] * THREADS
    for k, v in inputs.items():
        assert torch.equal(v, snapshot[k]), f"input {k} was modified"
    for k, stats in pools.items():
        if reuse:  # handles: no wrapper at all
            assert stats["rebound"] == stats["fresh"] == 0, (k, stats)
        elif pool:  # re-bound in the steady state: at most a few fresh ones
            assert stats["rebound"] > 10 * stats["fresh"] > 0, (k, stats)
        else:
            assert stats["rebound"] == 0 and stats["fresh"] > 0, (k, stats)


def test_large_calls_run_concurrently(ops):
    """Calls above the GIL-keeping threshold release the GIL: calls of
    different threads overlap in time (with the GIL held they could not,
    except across Python's thread switch interval, a few times at most)."""
    threads, calls = 4, 25
    inputs = _inputs()
    spans: list[list[tuple[float, float]]] = [[] for _ in range(threads)]
    errors: list[str] = []
    barrier = threading.Barrier(threads)
    want = {"sin_large": inputs["big"].sin(), "mm": inputs["x"] @ inputs["w"]}

    def work(k: int) -> None:
        out = torch.empty(LARGE)
        barrier.wait()
        try:
            for _ in range(calls):
                start = time.perf_counter()
                ops.sin(inputs["big"], out=out)
                spans[k].append((start, time.perf_counter()))
                if not torch.equal(out, want["sin_large"]):
                    errors.append(f"thread {k}: wrong result")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {k}: {type(e).__name__}: {e}")

    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == [], errors[:5]
    overlapping = 0
    for k in range(threads):
        for start, end in spans[k]:
            if any(
                s < end and start < e
                for j in range(threads)
                if j != k
                for s, e in spans[j]
            ):
                overlapping += 1
    total = threads * calls
    assert overlapping >= total // 4, (
        f"only {overlapping} of {total} large calls overlapped another thread's: "
        "the GIL seems held during them"
    )
