"""The torch internals that differ between the supported releases
(support/cpp/torch/torch_compat.h, docs/torch-releases.md), each checked on
whichever release is installed: as torch behaves on it."""

from __future__ import annotations

import torch


class Logged(torch.Tensor):
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def _redispatch_calls(func, x: torch.Tensor) -> tuple[int, int]:
    """__torch_function__ calls of func(x, out=...) redispatched (skipping
    one hop), then of a plain call after it (the flag must be consumed)."""
    Logged.calls = 0
    out = torch.empty(3)
    torch.overrides.redispatch_function(func, (Logged,), (x,), {"out": out})
    skipped = Logged.calls
    func(x, out=out)
    return skipped, Logged.calls - skipped


def test_skip_one_hop_torch_function_as_torch(ops):
    """torch 2.13 added torch._C._skip_one_hop_torch_function (what
    torch.overrides.redispatch_function uses): the next __torch_function__
    check says no, once. The bridge consumes the flag there
    (compat::consume_skip_next_torch_function); 2.11 and 2.12 have no such
    flag, and nothing to consume."""
    x = torch.randn(3).as_subclass(Logged)
    if not hasattr(torch._C, "_skip_one_hop_torch_function"):
        assert not hasattr(torch.overrides, "redispatch_function")
        assert torch.__version__ < "2.13"
        ops.abs(x, out=torch.empty(3))
        assert Logged.calls == 1
        return
    assert _redispatch_calls(torch.abs, x) == (0, 1)
    assert _redispatch_calls(ops.abs, x) == (0, 1)
