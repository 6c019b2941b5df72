"""Direct kernel mode: plain CPU tensors call at::cpu::<op>_out without the
dispatcher; anything the dispatcher would treat specially still goes
through it. (Numerical agreement of both modes is covered by the harness,
which runs every case with direct mode on and off.)"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append(str(func))
        return func(*args, **(kwargs or {}))


def test_direct_mode_is_on_by_default_and_switchable(ops):
    assert ops.direct_mode() is True
    ops.set_direct_mode(False)
    try:
        assert ops.direct_mode() is False
    finally:
        ops.set_direct_mode(True)


def test_manifest_marks_direct_ops(ops):
    from pathlib import Path

    from infiniops_codegen.model import manifest

    built = manifest.of_build(Path(ops.__file__).parent)
    direct = {op.name for op in built.ops if op.direct_cpu}
    assert {"abs", "add", "mm", "sum"} <= direct
    assert "rms_norm" not in direct  # composites have no ATen CPU entry


def test_a_dispatch_mode_still_sees_the_call(ops):
    x, out = torch.randn(8), torch.empty(8)
    with Recorder() as rec:
        ops.abs(x, out=out)
    assert "aten.abs.out" in rec.calls
    torch.testing.assert_close(out, x.abs())


def test_direct_call_bumps_the_out_version_like_the_dispatcher(ops):
    x = torch.randn(8)
    for direct in (True, False):
        ops.set_direct_mode(direct)
        try:
            out = torch.empty(8)
            before = out._version
            ops.abs(x, out=out)
            assert out._version == before + 1
        finally:
            ops.set_direct_mode(True)


def test_autocast_context_falls_back_to_the_dispatcher(ops):
    a, b = torch.randn(4, 6), torch.randn(6, 5)
    expected = torch.empty(4, 5)
    torch.mm(a, b, out=expected)
    out = torch.empty(4, 5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch_out = torch.empty(4, 5)
        torch.mm(a, b, out=torch_out)
        ops.mm(a, b, out=out)
    torch.testing.assert_close(out, torch_out)


def test_inference_tensors_take_the_dispatcher(ops):
    with torch.inference_mode():
        x, out = torch.randn(8), torch.empty(8)
        ops.abs(x, out=out)
    torch.testing.assert_close(out, x.abs())
