"""Reference counting across the binding: no leaked or dropped references.

The bridge turns each Python tensor into a core Tensor whose source handle
owns one reference of the at::Tensor's TensorImpl; the handle must be
released when the call ends, on success and on error, on both paths.
"""

from __future__ import annotations

import gc
import sys
import weakref

import pytest
import torch

from runtime_conftest_helpers import handle_reuse

CALLS = 10_000


def _counts(tensors):
    # getrefcount(t) counts its own argument; that is the same every time.
    return [(sys.getrefcount(t), t._use_count()) for t in tensors]


def _add(m, impl):
    a, b, out = torch.randn(3, 4), torch.randn(4), torch.empty(3, 4)
    return (a, b, out), lambda: m.add(a, b, alpha=2, out=out, implementation=impl)


def _mse(m, impl):
    # Mean needs a resizable out (ATen writes the elementwise loss into it
    # first): only the reuse path has one, so from_blob gets reduction none.
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    reduction = 1 if m.handle_reuse() else 0
    out = torch.empty(()) if reduction else torch.empty(3, 4)
    return (a, b, out), lambda: m.mse_loss(
        a, b, reduction, out=out, implementation=impl
    )


def _topk(m, impl):
    x = torch.randn(4, 6)
    values, indices = torch.empty(4, 2), torch.empty(4, 2, dtype=torch.int64)
    return (x, values, indices), lambda: m.topk(
        x, 2, values=values, indices=indices, implementation=impl
    )


def _cat(m, impl):
    a, b, out = torch.randn(2, 3), torch.randn(2, 3), torch.empty(4, 3)
    items = [a, b]
    return (a, b, out), lambda: m.cat(items, out=out, implementation=impl)


CALLERS = {"add": _add, "mse_loss": _mse, "topk": _topk, "cat": _cat}


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "from_blob"])
@pytest.mark.parametrize(
    "name,impl",
    [
        ("add", "default"),  # float32: the native kernel
        ("add", "torch"),
        ("mse_loss", "default"),
        ("topk", "default"),
        ("cat", "default"),
    ],
)
def test_counts_return_to_initial_after_many_calls(ops, name, impl, reuse):
    with handle_reuse(ops, reuse):
        tensors, call = CALLERS[name](ops, impl)
        call()  # warm up (first-call caches, interned names)
        initial = _counts(tensors)
        for _ in range(CALLS):
            call()
        assert _counts(tensors) == initial
        # Holding the returned value holds only the Python object, which
        # gives its reference back when released.
        result = call()
        del result
        assert _counts(tensors) == initial


def test_failing_calls_release_everything(ops):
    a, b, out = torch.randn(3), torch.randn(4), torch.empty(3)
    ops.add(a, a, out=out)
    initial = _counts((a, b, out))
    for reuse in (True, False):
        with handle_reuse(ops, reuse):
            for _ in range(2_000):
                with pytest.raises(RuntimeError):
                    ops.add(a, b, out=out)  # shape mismatch, raised by ATen
                with pytest.raises(TypeError):
                    ops.add(a, [1.0], out=out)  # second tensor fails to convert
                with pytest.raises(NotImplementedError):
                    ops.abs(a, out=out, implementation="native")
    assert _counts((a, b, out)) == initial


def test_module_keeps_no_reference_to_arguments(ops):
    a, b, out = torch.randn(8), torch.randn(8), torch.empty(8)
    refs = [weakref.ref(t) for t in (a, b, out)]
    for impl in ("default", "torch"):
        ops.add(a, b, out=out, implementation=impl)
    ops.cat([a, b], out=torch.empty(16))
    del a, b, out
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_results_stay_valid_after_inputs_go_out_of_scope(ops):
    results = []
    for i in range(300):
        a = torch.full((64,), float(i))
        b = torch.arange(64, dtype=torch.float32)
        impl = "torch" if i % 2 else "default"
        results.append(ops.add(a, b, out=torch.empty(64), implementation=impl))
        del a, b
        if i % 50 == 0:
            gc.collect()
            # Reuse freed memory so stale pointers would show.
            torch.full((64,), -1.0).add_(1)
    gc.collect()
    garbage = [torch.full((64,), 123.0) for _ in range(100)]
    for i, r in enumerate(results):
        assert r.shape == (64,)
        assert torch.equal(r, float(i) + torch.arange(64, dtype=torch.float32)), i
    assert len(garbage) == 100


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.no_sanitizer(
    reason="measures RSS: ASan's quarantine holds freed memory (256 MiB by default)"
)
def test_no_memory_growth_over_many_calls_with_fresh_tensors(ops):
    def burst(n):
        for _ in range(n):
            a = torch.empty(2048)  # 8 KiB each: a leak would be obvious
            out = torch.empty(2048)
            ops.add(a, a, out=out, implementation="torch")
            ops.topk(a, 1, values=torch.empty(1), indices=torch.empty(1).long())

    burst(2_000)  # warm up the allocator
    gc.collect()
    before = _rss_bytes()
    burst(20_000)  # leaking the tensors would cost > 600 MiB
    gc.collect()
    grown = _rss_bytes() - before
    assert grown < 64 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB"


@pytest.mark.no_sanitizer(
    reason="measures RSS: ASan's quarantine holds freed memory (256 MiB by default)"
)
def test_rss_after_100k_calls_within_5_percent_of_after_1k(ops):
    """Small calls of every kind (native kernel, fallback, two outputs, a
    tensor list, both paths, failing calls, fresh and reused tensors): the
    process's RSS after 100,000 calls is within 5% of its RSS after the
    first 1,000."""
    a, b, out = torch.randn(4, 4), torch.randn(4, 4), torch.empty(4, 4)
    values, indices = torch.empty(2), torch.empty(2, dtype=torch.int64)
    row = torch.empty(4, 1)

    def fresh_add():
        x = torch.randn(4, 4)
        ops.add(x, x, out=torch.empty(4, 4))

    calls = [
        lambda: ops.add(a, b, out=out),  # native
        lambda: ops.add(a, b, alpha=2, out=out, implementation="torch"),
        lambda: ops.topk(a[0], 2, values=values, indices=indices),
        lambda: ops.cat([a, b], out=torch.empty(8, 4)),
        lambda: ops.sum(a, [1], True, out=row),  # an int list
        fresh_add,
    ]

    bad = torch.randn(3, 3)
    raised = {TypeError: 0, RuntimeError: 0}

    def failing():
        for kind, call in (
            (TypeError, lambda: ops.add(a, [1.0], out=out)),
            (RuntimeError, lambda: ops.mm(a, bad, out=out)),  # raised by ATen
        ):
            try:
                call()
            except kind:
                raised[kind] += 1

    def burst(n: int) -> None:
        for i in range(n // 10):
            reuse = i % 2 == 0
            ops.set_handle_reuse(reuse)
            for call in calls:
                call()
            failing()  # 2 calls
            calls[0]()
            calls[1]()
        ops.set_handle_reuse(True)

    burst(1_000)
    gc.collect()
    after_1k = _rss_bytes()
    burst(99_000)
    gc.collect()
    after_100k = _rss_bytes()
    assert raised == {TypeError: 10_000, RuntimeError: 10_000}
    growth = (after_100k - after_1k) / after_1k
    assert growth <= 0.05, (
        f"RSS {after_1k / 2**20:.1f} MiB after 1,000 calls, "
        f"{after_100k / 2**20:.1f} MiB after 100,000 (+{100 * growth:.1f}%)"
    )
