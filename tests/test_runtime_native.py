"""Native CPU kernels against the PyTorch fallback, and `implementation=`.

`implementation="native"` succeeds only when a native kernel ran (it raises
NotImplementedError otherwise), so each comparison below really compares the
hand-written kernel with ATen.
"""

from __future__ import annotations

import pytest
import torch

DTYPES = {
    torch.float32: 1e-5,
    torch.float16: 1e-3,
    torch.bfloat16: 1.6e-2,
}
LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")


def make(layout: str, shape: tuple[int, int], dtype, gen, scale: float = 1.0):
    """A 2-D tensor of dtype with the given layout (the view is taken after the
    dtype conversion, which would otherwise make it contiguous)."""

    def base(*size):
        return (torch.randn(*size, generator=gen) * scale).to(dtype)

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
    assert t.shape == shape and t.dtype == dtype
    assert (layout == "contiguous") == t.is_contiguous()
    return t


def compare(run, outs, dtype):
    """run(outs, impl) with native and with torch into fresh copies of outs
    (same layout); the results must agree within the dtype's tolerance."""
    tol = DTYPES[dtype]
    native = [torch.empty_strided(o.shape, o.stride(), dtype=o.dtype) for o in outs]
    fallback = [torch.empty_strided(o.shape, o.stride(), dtype=o.dtype) for o in outs]
    run(native, "native")
    run(fallback, "torch")
    for n, f in zip(native, fallback):
        assert n.dtype == f.dtype == dtype
        # Relative tolerance; values are O(1), so the same absolute
        # tolerance only matters where a result cancels to near zero.
        torch.testing.assert_close(n, f, rtol=tol, atol=tol)


def out_like(shape, dtype, transposed=False):
    if transposed:
        return torch.empty(shape[::-1], dtype=dtype).t()
    return torch.empty(shape, dtype=dtype)


@pytest.mark.parametrize("out_t", [False, True], ids=["out", "out_t"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_add_with_alpha(ops, dtype, layout, out_t):
    gen = torch.Generator().manual_seed(11)
    a, b = make(layout, (6, 7), dtype, gen), make(layout, (6, 7), dtype, gen)

    def run(outs, impl):
        ops.add(a, b, alpha=0.5, out=outs[0], implementation=impl)

    compare(run, [out_like((6, 7), dtype, out_t)], dtype)


@pytest.mark.parametrize(
    "other_shape", [(7,), (6, 1), (1, 7), ()], ids=["row", "col", "1xN", "scalar"]
)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_add_broadcasting(ops, dtype, other_shape):
    gen = torch.Generator().manual_seed(12)
    a = make("sliced", (6, 7), dtype, gen)
    b = torch.randn(other_shape, generator=gen).to(dtype)

    def run(outs, impl):
        ops.add(a, b, alpha=-3, out=outs[0], implementation=impl)

    compare(run, [out_like((6, 7), dtype)], dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_mul(ops, dtype, layout):
    gen = torch.Generator().manual_seed(13)
    a = make(layout, (5, 9), dtype, gen)
    b = make("contiguous", (1, 9), dtype, gen)  # broadcast along rows

    def run(outs, impl):
        ops.mul(a, b, out=outs[0], implementation=impl)

    compare(run, [out_like((5, 9), dtype, layout == "transposed")], dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_silu(ops, dtype, layout):
    gen = torch.Generator().manual_seed(14)
    x = make(layout, (5, 9), dtype, gen, scale=4)

    def run(outs, impl):
        ops.silu(x, out=outs[0], implementation=impl)

    compare(run, [out_like((5, 9), dtype)], dtype)


@pytest.mark.parametrize("weight", ["contiguous", "strided"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rms_norm(ops, dtype, layout, weight):
    gen = torch.Generator().manual_seed(15)
    x = make(layout, (4, 16), dtype, gen)
    w = torch.randn(32 if weight == "strided" else 16, generator=gen).to(dtype)
    if weight == "strided":
        w = w[::2]

    def run(outs, impl):
        ops.rms_norm(x, w, 1e-5, out=outs[0], implementation=impl)

    compare(run, [out_like((4, 16), dtype)], dtype)


def test_rms_norm_matches_the_formula(ops):
    x = torch.randn(3, 8, dtype=torch.float64).float()
    w = torch.rand(8)
    out = torch.empty(3, 8)
    ops.rms_norm(x, w, 1e-6, out=out, implementation="native")
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_silu_and_mul(ops, dtype, layout):
    gen = torch.Generator().manual_seed(16)
    x = make(layout, (4, 16), dtype, gen, scale=3)

    def run(outs, impl):
        ops.silu_and_mul(x, out=outs[0], implementation=impl)

    compare(run, [out_like((4, 8), dtype)], dtype)
    # And the definition itself.
    out = torch.empty(4, 8, dtype=dtype)
    ops.silu_and_mul(x, out=out, implementation="native")
    want = torch.nn.functional.silu(x[:, :8].float()) * x[:, 8:].float()
    tol = DTYPES[dtype]
    torch.testing.assert_close(out.float(), want, rtol=2 * tol, atol=2 * tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_default_equals_native_for_supported_dtypes(ops, dtype):
    gen = torch.Generator().manual_seed(17)
    a, b = torch.randn(33, generator=gen).to(dtype), torch.randn(33).to(dtype)
    default, native = torch.empty(33, dtype=dtype), torch.empty(33, dtype=dtype)
    ops.add(a, b, alpha=2, out=default)
    ops.add(a, b, alpha=2, out=native, implementation="native")
    assert torch.equal(default, native)


# --- implementation= -----------------------------------------------------------


def test_native_on_op_without_kernel_raises(ops):
    x = torch.randn(4)
    with pytest.raises(NotImplementedError, match="abs"):
        ops.abs(x, out=torch.empty(4), implementation="native")
    out = torch.empty(4)
    ops.abs(x, out=out, implementation="torch")
    assert torch.equal(out, x.abs())


def test_native_with_unsupported_dtype_raises_but_default_falls_back(ops):
    a = torch.arange(6, dtype=torch.int32)
    b = torch.full((6,), 5, dtype=torch.int32)
    out = torch.empty(6, dtype=torch.int32)
    with pytest.raises(NotImplementedError, match="int32"):
        ops.add(a, b, out=out, implementation="native")
    assert ops.add(a, b, alpha=2, out=out) is out
    assert torch.equal(out, torch.add(a, b, alpha=2))
    ops.add(a, b, out=out, implementation="torch")
    assert torch.equal(out, a + b)


def test_native_with_float64_raises(ops):
    a = torch.randn(3, dtype=torch.float64)
    with pytest.raises(NotImplementedError):
        ops.silu(a, out=torch.empty_like(a), implementation="native")


@pytest.mark.parametrize("bad", ["bogus", "Native", ""])
def test_unknown_implementation_raises_value_error(ops, bad):
    x = torch.randn(3)
    with pytest.raises(ValueError, match="implementation"):
        ops.add(x, x, out=torch.empty(3), implementation=bad)


def test_implementation_must_be_a_string(ops):
    x = torch.randn(3)
    with pytest.raises(TypeError, match="implementation"):
        ops.add(x, x, out=torch.empty(3), implementation=1)


def test_implementations_listing(ops):
    impls = ops.implementations()
    assert impls["add"]["cpu"] == ["native", "torch"]
    assert impls["abs"]["cpu"] == ["torch"]
    for name in ("add", "mul", "silu", "rms_norm", "silu_and_mul"):
        assert impls[name]["cpu"] == ["native", "torch"], name
    assert all(v["cpu"][-1] == "torch" for v in impls.values())
    assert "cpu" in ops.platforms()
    # Every listed op is callable.
    assert all(callable(getattr(ops, name)) for name in impls)


@pytest.mark.parametrize("implementation", ["default", "torch"])
def test_partially_overlapping_out_matches_torch(ops, implementation):
    """An out that overlaps an input without being it: the native kernel must
    not write element by element over data it still reads (it leaves such
    calls to PyTorch, which defines the result)."""
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(18))
    want, got = x.clone(), x.clone()
    try:
        torch.add(want[:, :-1], want[:, 1:], out=want[:, 1:])
    except RuntimeError:
        with pytest.raises(RuntimeError):
            ops.add(
                got[:, :-1], got[:, 1:], out=got[:, 1:], implementation=implementation
            )
        return
    ops.add(got[:, :-1], got[:, 1:], out=got[:, 1:], implementation=implementation)
    assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_exact_alias_in_place_native(ops, dtype):
    x = torch.randn(5, 7).to(dtype)
    want = torch.add(x, x, alpha=2)
    assert ops.add(x, x, alpha=2, out=x, implementation="native") is x
    torch.testing.assert_close(x, want, rtol=DTYPES[dtype], atol=DTYPES[dtype])
