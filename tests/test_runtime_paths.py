"""The two fallback paths of the built module against real PyTorch.

Reuse path: the fallback hands ATen the at::Tensor each Python tensor arrived
with. from_blob path (`set_handle_reuse(False)`): it rebuilds every at::Tensor
from data pointer, sizes and strides. Both must compute exactly what
`torch.<op>(..., out=)` computes, whatever the input and output layouts; only
the reuse path can resize an out of the wrong shape.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable

import pytest
import torch

from runtime_conftest_helpers import handle_reuse

F32 = torch.float32
I64 = torch.int64

# --- Layouts -------------------------------------------------------------------

IN_LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")
OUT_LAYOUTS = ("contiguous", "strided", "transposed")


def make(layout: str, shape: tuple[int, int], gen, kind: str = "float"):
    """A 2-D tensor of `shape` with the given memory layout."""

    def base(*size):
        t = torch.randn(*size, generator=gen)
        return t > 0 if kind == "bool" else t

    rows, cols = shape
    if layout == "contiguous":
        t = base(rows, cols)
    elif layout == "transposed":
        t = base(cols, rows).t()
    elif layout == "sliced":
        t = base(rows + 1, 2 * cols)[1:, ::2]  # with a storage offset
    elif layout == "expanded":
        t = base(1, cols).expand(rows, cols)
    else:
        raise AssertionError(layout)
    assert t.shape == shape
    assert (layout == "contiguous") == t.is_contiguous()
    return t


def empty_out(layout: str, shape: tuple[int, ...], dtype):
    """An out tensor of the right shape: contiguous, or strided in the last
    dim, or (2-D) transposed."""
    if layout == "contiguous" or len(shape) == 0:
        return torch.empty(shape, dtype=dtype)
    if layout == "transposed" and len(shape) == 2:
        return torch.empty(shape[::-1], dtype=dtype).t()
    return torch.empty(*shape[:-1], 2 * shape[-1], dtype=dtype)[..., ::2]


# --- Op cases ------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    inputs: Callable  # (layout, gen) -> tuple of inputs
    outs: tuple  # ((shape, dtype), ...)
    ours: Callable  # (module, inputs, outs) -> result
    ref: Callable  # (inputs, outs) -> None


def _one(layout, gen):
    return (make(layout, (4, 5), gen),)


def _two(layout, gen):
    return make(layout, (4, 5), gen), make(layout, (4, 5), gen)


T = "torch"  # force the fallback: native kernels never touch the handle

CASES = {
    "add": Case(
        _two,
        (((4, 5), F32),),
        lambda m, a, o: m.add(*a, alpha=2, out=o[0], implementation=T),
        lambda a, o: torch.add(*a, alpha=2, out=o[0]),
    ),
    "mul": Case(
        _two,
        (((4, 5), F32),),
        lambda m, a, o: m.mul(*a, out=o[0], implementation=T),
        lambda a, o: torch.mul(*a, out=o[0]),
    ),
    "abs": Case(
        _one,
        (((4, 5), F32),),
        lambda m, a, o: m.abs(*a, out=o[0]),
        lambda a, o: torch.abs(*a, out=o[0]),
    ),
    "sum_dim1": Case(
        _one,
        (((4,), F32),),
        lambda m, a, o: m.sum(*a, [1], out=o[0]),
        lambda a, o: torch.sum(*a, [1], out=o[0]),
    ),
    "sum_dim0_keepdim": Case(
        _one,
        (((1, 5), F32),),
        lambda m, a, o: m.sum(*a, -2, True, out=o[0]),
        lambda a, o: torch.sum(*a, -2, True, out=o[0]),
    ),
    "mm": Case(
        lambda layout, gen: (make(layout, (4, 5), gen), make(layout, (5, 3), gen)),
        (((4, 3), F32),),
        lambda m, a, o: m.mm(*a, out=o[0]),
        lambda a, o: torch.mm(*a, out=o[0]),
    ),
    "topk": Case(
        _one,
        (((4, 2), F32), ((4, 2), I64)),
        lambda m, a, o: m.topk(*a, 2, 1, values=o[0], indices=o[1]),
        lambda a, o: torch.topk(*a, 2, 1, out=(o[0], o[1])),
    ),
    "cat_dim0": Case(
        _two,
        (((8, 5), F32),),
        lambda m, a, o: m.cat(list(a), 0, out=o[0]),
        lambda a, o: torch.cat(list(a), 0, out=o[0]),
    ),
    "cat_dim1": Case(
        _two,
        (((4, 10), F32),),
        lambda m, a, o: m.cat(a, dim=1, out=o[0]),
        lambda a, o: torch.cat(a, dim=1, out=o[0]),
    ),
    "clamp": Case(
        _one,
        (((4, 5), F32),),
        lambda m, a, o: m.clamp(*a, -0.5, max=0.5, out=o[0]),
        lambda a, o: torch.clamp(*a, -0.5, max=0.5, out=o[0]),
    ),
    "softmax": Case(
        _one,
        (((4, 5), F32),),
        lambda m, a, o: m.softmax(*a, 1, out=o[0]),
        lambda a, o: torch.softmax(*a, 1, out=o[0]),
    ),
    "where": Case(
        lambda layout, gen: (make(layout, (4, 5), gen, "bool"),) + _two(layout, gen),
        (((4, 5), F32),),
        lambda m, a, o: m.where(*a, out=o[0]),
        lambda a, o: torch.where(*a, out=o[0]),
    ),
}


def _fresh_outs(case: Case, layout: str):
    return [empty_out(layout, shape, dtype) for shape, dtype in case.outs]


@pytest.mark.parametrize("out_layout", OUT_LAYOUTS)
@pytest.mark.parametrize("in_layout", IN_LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_reuse_and_from_blob_match_torch(ops, name, in_layout, out_layout):
    case = CASES[name]
    gen = torch.Generator().manual_seed(1234)
    inputs = case.inputs(in_layout, gen)
    before = [t.clone() for t in inputs]

    expected = _fresh_outs(case, out_layout)
    case.ref(inputs, expected)

    for reuse in (True, False):
        outs = _fresh_outs(case, out_layout)
        geometry = [(o.data_ptr(), o.shape, o.stride()) for o in outs]
        with handle_reuse(ops, reuse):
            assert ops.handle_reuse() is reuse
            result = case.ours(ops, inputs, outs)
        path = "reuse" if reuse else "from_blob"
        # The outs are returned themselves (a tuple for several).
        if len(outs) == 1:
            assert result is outs[0], path
        else:
            assert isinstance(result, tuple) and len(result) == len(outs), path
            assert all(r is o for r, o in zip(result, outs)), path
        # Written in place: same memory, shape and strides as given.
        assert [(o.data_ptr(), o.shape, o.stride()) for o in outs] == geometry, path
        for k, (got, want) in enumerate(zip(outs, expected)):
            assert got.dtype == want.dtype, (path, k)
            assert torch.equal(got, want), (path, k, got, want)
    for t, b in zip(inputs, before):
        assert torch.equal(t, b), "an input was modified"


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "from_blob"])
def test_in_place_out_aliasing_an_input(ops, reuse, layout):
    gen = torch.Generator().manual_seed(7)
    x, y = make(layout, (4, 5), gen), make(layout, (4, 5), gen)
    want = torch.add(x.clone(), y, alpha=3)
    with handle_reuse(ops, reuse):
        result = ops.add(x, y, alpha=3, out=x, implementation="torch")
    assert result is x
    assert torch.equal(x, want)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.add(x[:-1], torch.ones(32), out=x[1:], implementation="torch"),
        lambda m, x: m.exp(x[:-1], out=x[1:]),
    ],
    ids=["add", "exp"],
)
@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "from_blob"])
def test_partial_overlap_of_output_and_input_is_refused(ops, reuse, call):
    """PyTorch refuses an output that partly overlaps an input; from_blob
    tensors have separate storages, so ATen cannot see it: the bridge must."""
    x = torch.arange(33, dtype=torch.float32)
    before = x.clone()
    with (
        handle_reuse(ops, reuse),
        pytest.raises(RuntimeError, match="single memory location"),
    ):
        call(ops, x)
    assert torch.equal(x, before)


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "from_blob"])
def test_zero_size_tensors(ops, reuse):
    a, b, out = torch.empty(0, 5), torch.empty(0, 5), torch.empty(0, 5)
    with handle_reuse(ops, reuse):
        assert ops.add(a, b, out=out, implementation="torch") is out
    assert out.shape == (0, 5)


def test_from_blob_setting_is_global_and_restorable(ops):
    assert ops.handle_reuse() is True
    ops.set_handle_reuse(False)
    try:
        assert ops.handle_reuse() is False
    finally:
        ops.set_handle_reuse(True)
    assert ops.handle_reuse() is True
    with pytest.raises(TypeError):
        ops.set_handle_reuse(1)
    assert ops.handle_reuse() is True


# --- Resizing a wrong-shaped out -------------------------------------------------

NONE, MEAN, SUM = 0, 1, 2


def _mse_inputs():
    gen = torch.Generator().manual_seed(3)
    return torch.randn(3, 4, generator=gen), torch.randn(3, 4, generator=gen)


@pytest.mark.parametrize("reduction", [MEAN, SUM], ids=["mean", "sum"])
def test_reuse_path_resizes_empty_out_like_torch(ops, reduction):
    a, b = _mse_inputs()
    want = torch.empty(0)
    torch._C._nn.mse_loss(a, b, reduction, out=want)
    assert want.shape == ()

    out = torch.empty(0)
    assert ops.mse_loss(a, b, reduction, out=out) is out
    assert out.shape == want.shape == ()
    assert torch.equal(out, want)
    diff2 = (a - b) ** 2
    value = diff2.mean() if reduction == MEAN else diff2.sum()
    torch.testing.assert_close(out, value)


@pytest.mark.parametrize("implementation", ["default", "torch"])
def test_reuse_path_resizes_empty_add_out(ops, implementation):
    a, b = _mse_inputs()
    out = torch.empty(0)
    assert ops.add(a, b, out=out, implementation=implementation) is out
    assert out.shape == (3, 4)
    assert torch.equal(out, torch.add(a, b))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, a, b, o: m.mse_loss(a, b, MEAN, out=o),
        lambda m, a, b, o: m.mse_loss(a, b, SUM, out=o),
        lambda m, a, b, o: m.add(a, b, out=o),
        lambda m, a, b, o: m.add(a, b, out=o, implementation="torch"),
    ],
    ids=["mse_mean", "mse_sum", "add", "add_torch"],
)
def test_from_blob_path_refuses_to_resize(ops, call):
    a, b = _mse_inputs()
    out = torch.empty(0)
    with handle_reuse(ops, False):
        with pytest.raises(RuntimeError, match="cannot be resized") as info:
            call(ops, a, b, out)
    assert "out" in str(info.value)
    assert out.shape == (0,), "the caller's out must be left as it was"
    # The interpreter survives and the module keeps working.
    out = torch.empty(0)
    call(ops, a, b, out)
    assert out.numel() > 0


def test_from_blob_path_refuses_to_resize_nonempty_out(ops):
    a, b = _mse_inputs()
    out = torch.full((5,), 7.0)
    with handle_reuse(ops, False):
        with pytest.raises(RuntimeError, match="resiz"):
            ops.mse_loss(a, b, MEAN, out=out)
    assert out.shape == (5,)


def test_from_blob_path_with_right_shaped_out_works(ops):
    a, b = _mse_inputs()
    out, want = torch.empty(3, 4), torch.empty(3, 4)
    torch._C._nn.mse_loss(a, b, NONE, out=want)
    with handle_reuse(ops, False):
        assert ops.mse_loss(a, b, NONE, out=out) is out
    assert torch.equal(out, want)


def test_from_blob_path_mse_mean_into_a_right_shaped_out(ops):
    """ATen's mse_loss.out with a reduction first writes the elementwise loss
    into `out` (resizing it on the way) and then reduces back to (). The
    from_blob tensor's storage may grow through the allocator; the result,
    which then lives in new memory, is copied back into the caller's out."""
    a, b = _mse_inputs()
    for reuse in (False, True):
        out = torch.empty(())
        ptr = out.data_ptr()
        with handle_reuse(ops, reuse):
            ops.mse_loss(a, b, MEAN, out=out)
        torch.testing.assert_close(out, ((a - b) ** 2).mean())
        assert out.data_ptr() == ptr or reuse


# --- Metadata beyond sizes and strides ------------------------------------------


def test_many_dims_beyond_inline_storage(ops):
    """Dims keep 8 sizes inline; more must still work on both paths."""
    x = torch.randn([2] * 10).transpose(0, 9)
    for reuse in (True, False):
        out = torch.empty([2] * 10)
        with handle_reuse(ops, reuse):
            ops.abs(x, out=out)
        assert torch.equal(out, x.abs()), reuse


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "from_blob"])
def test_conjugate_view_input(ops, reuse):
    """`x.conj()` is a lazy view (conj bit set, same memory). The fallback must
    compute with the conjugate, or refuse; never silently use the raw data."""
    gen = torch.Generator().manual_seed(5)
    c = torch.randn(6, dtype=torch.complex64, generator=gen)
    d = torch.randn(6, dtype=torch.complex64, generator=gen)
    assert c.conj().is_conj()
    want = torch.add(c.conj(), d)
    out = torch.empty(6, dtype=torch.complex64)
    with handle_reuse(ops, reuse):
        try:
            ops.add(c.conj(), d, out=out)
        except (RuntimeError, TypeError, NotImplementedError):
            assert not reuse, "the reuse path has the at::Tensor: it must work"
            return
    assert torch.equal(out, want), "conj bit ignored: silently wrong result"


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "from_blob"])
@pytest.mark.parametrize("implementation", ["default", "native", "torch"])
def test_negative_view_input(ops, implementation, reuse):
    """`x.conj().imag` is a float32 view with the negative bit set (public API).
    Native kernels and the from_blob path read raw memory: they must take the
    bit into account or refuse, never return the un-negated values."""
    c = torch.randn(
        6, dtype=torch.complex64, generator=torch.Generator().manual_seed(6)
    )
    neg = c.conj().imag
    assert neg.is_neg() and neg.dtype == torch.float32
    y = torch.randn(6)
    want = torch.add(neg, y)
    out = torch.empty(6)
    with handle_reuse(ops, reuse):
        try:
            ops.add(neg, y, out=out, implementation=implementation)
        except NotImplementedError:
            assert implementation == "native", "default must fall back"
            return
        except RuntimeError:
            assert not reuse and implementation != "native"
            return
    assert torch.equal(out, want), "neg bit ignored: silently wrong result"


# --- What a from_blob rebuild must keep of the caller's tensors -------------------


@contextlib.contextmanager
def switches(module, *, reuse=True, lane=True, direct=True, pool=True):
    """The module's process-wide path switches for a block, restored after."""
    names = ("handle_reuse", "lane", "direct_mode", "wrapper_pool")
    previous = [getattr(module, n)() for n in names]
    for name, value in zip(names, (reuse, lane, direct, pool)):
        getattr(module, "set_" + name)(value)
    try:
        yield
    finally:
        for name, value in zip(names, previous):
            getattr(module, "set_" + name)(value)


H = torch.float16
# Python numbers given for tensors: a 0-dim "wrapped number" that type
# promotion ranks like a Python scalar. Each call's result dtype (and so its
# value) changes if the number becomes a plain 0-dim double or int64 tensor.
NUMBER_CALLS = {
    "mul_number_first": lambda m, o, **k: m.mul(
        1.5, torch.tensor(3.082, dtype=H), out=o, **k
    ),
    "mul_number_second": lambda m, o, **k: m.mul(
        torch.tensor(3.082, dtype=H), 1.5, out=o, **k
    ),
    "add_int8_wraps": lambda m, o, **k: m.add(
        torch.tensor(100, dtype=torch.int8), 200, out=o, **k
    ),
    "sub_alpha": lambda m, o, **k: m.sub(
        torch.tensor(0.1, dtype=H), 0.3, alpha=3, out=o, **k
    ),
}


@pytest.mark.parametrize("implementation", ["default", "torch"])
@pytest.mark.parametrize(
    "path",
    [
        dict(),
        dict(lane=False),
        dict(lane=False, direct=False),
        dict(reuse=False),
        dict(reuse=False, direct=False),
        dict(reuse=False, pool=False),
    ],
    ids=[
        "lane",
        "reuse",
        "reuse_dispatcher",
        "from_blob",
        "from_blob_dispatcher",
        "from_blob_fresh",
    ],
)
@pytest.mark.parametrize("call", sorted(NUMBER_CALLS))
def test_python_number_for_a_tensor_stays_a_wrapped_number(
    ops, call, path, implementation
):
    """The from_blob path rebuilt the number's 0-dim tensor without its
    wrapped-number mark: `mul(1.5, float16 0-dim)` then computed in float64
    (4.6230 where torch gives 4.625), `add(int8 0-dim, 200)` in int64."""
    fn = NUMBER_CALLS[call]
    want = torch.tensor(7.0)
    fn(torch, want)
    got = torch.tensor(7.0)
    with switches(ops, **path):
        assert fn(ops, got, implementation=implementation) is got
    assert torch.equal(got, want), (got, want)
    # Without out=: the result's dtype is torch's too.
    want_dtype = fn(torch, None).dtype
    with switches(ops, **path):
        assert fn(ops, None, implementation=implementation).dtype == want_dtype


@pytest.mark.parametrize("pool", [True, False], ids=["pool", "fresh"])
@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "from_blob"])
@pytest.mark.parametrize(
    "call",
    [
        # Float bitwise_and is NotImplementedError in ATen's kernel; the
        # broadcast check comes first and raises RuntimeError.
        lambda m, x: m.bitwise_and(x, torch.empty(0), out=x),
        lambda m, x: m.add(x, torch.ones(3), out=x),
        lambda m, x: m.mul(torch.ones(2, 1), x, out=x),
    ],
    ids=["bitwise_and_float", "add", "mul"],
)
def test_in_place_out_is_not_resized(ops, call, reuse, pool):
    """An out that is one of the inputs is never resized by ATen (torch:
    "output with shape [] doesn't match the broadcast shape"). On the from_blob
    path the out and the input were two wrappers, so ATen took the out for a
    fresh output, resized it, and failed later (the float bitwise_and kernel's
    NotImplementedError) or with the from_blob path's own error."""
    with pytest.raises(RuntimeError) as theirs:
        call(torch, torch.tensor(-0.0))
    assert type(theirs.value) is RuntimeError
    x = torch.tensor(-0.0)
    with switches(ops, reuse=reuse, pool=pool):
        with pytest.raises(
            RuntimeError, match="doesn't match the broadcast shape"
        ) as ours:
            call(ops, x)
    assert type(ours.value) is RuntimeError, ours.value
    assert x.shape == () and x._version == 0


@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "from_blob"])
def test_in_place_out_is_one_tensor_for_aten(ops, reuse):
    """In place on the from_blob path: one at::Tensor for the out and the
    input it is, computed and counted (version) as torch does; the pool keeps
    its wrappers."""
    x, y = torch.randn(4, 5), torch.randn(5)
    want = x.clone().add_(y, alpha=2)
    with switches(ops, reuse=reuse):
        ops._debug_wrapper_pool(True)
        for _ in range(3):
            x.copy_(want - 2 * y)
            before = x._version
            assert ops.add(x, y, alpha=2, out=x, implementation="torch") is x
            assert torch.equal(x, want)
            assert x._version == before + 1
        stats = ops._debug_wrapper_pool(False)
    if not reuse:
        assert stats["fresh"] <= 3 and stats["rebound"] >= 6, stats
