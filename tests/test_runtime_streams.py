"""`stream=` on the built module (CPU build): every op accepts it; None (or
absent) is the device's current stream; CPU tensors have no streams, so any
other value is refused with a clear error before anything runs."""

from __future__ import annotations

import pytest
import torch


class FakeCudaStream:
    """Shaped like torch.cuda.Stream: the raw handle in .cuda_stream."""

    cuda_stream = 0x1234


def test_stream_none_is_the_current_stream(ops):
    x, out = torch.randn(4), torch.empty(4)
    assert ops.add(x, x, out=out, stream=None) is out
    torch.testing.assert_close(out, x + x)
    assert ops.abs(x, out=out, stream=None, implementation="torch") is out


@pytest.mark.parametrize("stream", [0, 7, FakeCudaStream()])
@pytest.mark.parametrize("impl", ["default", "native", "torch"])
def test_a_stream_on_cpu_tensors_is_a_value_error(ops, stream, impl):
    x, out = torch.randn(4), torch.zeros(4)
    with pytest.raises(ValueError, match=r"add\(\): stream= .* cpu"):
        ops.add(x, x, out=out, stream=stream, implementation=impl)
    assert torch.equal(out, torch.zeros(4)), "nothing may run"


def test_a_stream_of_the_wrong_type_is_a_type_error(ops):
    x = torch.randn(4)
    with pytest.raises(TypeError, match=r"abs\(\): argument 'stream' .*cuda_stream"):
        ops.abs(x, out=torch.empty(4), stream="cuda:0")
    with pytest.raises(TypeError, match="stream"):
        ops.abs(x, out=torch.empty(4), stream=True)


def test_ops_of_tensor_lists_take_stream_none(ops):
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    out = torch.empty(4, 3)
    assert ops.cat([a, b], out=out, stream=None) is out
    torch.testing.assert_close(out, torch.cat([a, b]))
