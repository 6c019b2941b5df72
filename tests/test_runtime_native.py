"""Native CPU kernels against the PyTorch fallback, and `implementation=`.

`implementation="native"` succeeds only when a native kernel ran (it raises
NotImplementedError otherwise), so each comparison below really compares the
hand-written kernel with ATen.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from runtime_conftest_helpers import REPO, build_dir, subprocess_env

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


def assert_same_bits(ours, theirs, what=""):
    """The same bits element by element (+0 and -0 differ); a NaN only has to
    be a NaN (which input's payload a NaN result carries is the instruction's
    choice, not the formula's)."""
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, what
    ours, theirs = ours.contiguous().flatten(), theirs.contiguous().flatten()
    nan = theirs.isnan()
    assert torch.equal(ours.isnan(), nan), f"{what}: NaNs differ"
    as_int = {2: torch.int16, 4: torch.int32}[ours.element_size()]
    differ = (ours.view(as_int) != theirs.view(as_int)) & ~nan
    if differ.any():
        k = int(differ.nonzero()[0])
        raise AssertionError(
            f"{what}: {int(differ.sum())} of {ours.numel()} elements differ, first "
            f"[{k}]: ours {ours[k].item()!r}, torch {theirs[k].item()!r}"
        )


REDUCED = (torch.float16, torch.bfloat16)


def torch_loops_agree(dtype, alpha) -> bool:
    """Whether PyTorch's vectorized and scalar add loops compute the same
    thing for every element: always for float32; for float16 and bfloat16
    only where alpha * other is exact in the dtype (alpha 1, -1, 0 or not
    finite). Elsewhere the native kernel takes only tensors of under 16
    elements (too small for any vector loop)."""
    return (
        dtype not in REDUCED
        or alpha in (0, 1, -1)
        or alpha != alpha
        or abs(alpha) == float("inf")
    )


def add_like_torch(ops, a, b, alpha, out):
    """ops.add with implementation='native' into `out` and torch.add into a
    fresh tensor of out's layout; the two must hold the same bits. Where the
    kernel leaves the call to PyTorch (see torch_loops_agree), 'native'
    raises and the default path computes torch's result."""
    want = torch.empty_strided(out.shape, out.stride(), dtype=out.dtype)
    torch.add(a, b, alpha=alpha, out=want)
    if torch_loops_agree(out.dtype, alpha) or out.numel() < 16:
        assert ops.add(a, b, alpha=alpha, out=out, implementation="native") is out
    else:
        with pytest.raises(NotImplementedError, match="alpha other than 1, -1 or 0"):
            ops.add(a, b, alpha=alpha, out=out, implementation="native")
        assert ops.add(a, b, alpha=alpha, out=out) is out
    assert_same_bits(out, want, f"add alpha={alpha!r} {out.dtype}")


@pytest.mark.parametrize("alpha", [1, -1, 0.5, -1.5], ids=str)
@pytest.mark.parametrize("out_t", [False, True], ids=["out", "out_t"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_add_with_alpha(ops, dtype, layout, out_t, alpha):
    gen = torch.Generator().manual_seed(11)
    a, b = make(layout, (6, 7), dtype, gen), make(layout, (6, 7), dtype, gen)
    add_like_torch(ops, a, b, alpha, out_like((6, 7), dtype, out_t))
    # Under 16 elements every alpha is the kernel's (PyTorch's scalar loop).
    add_like_torch(ops, a[:2], b[:2], alpha, out_like((2, 7), dtype, out_t))


@pytest.mark.parametrize("alpha", [-1, -3], ids=str)
@pytest.mark.parametrize(
    "other_shape", [(7,), (6, 1), (1, 7), ()], ids=["row", "col", "1xN", "scalar"]
)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_add_broadcasting(ops, dtype, other_shape, alpha):
    gen = torch.Generator().manual_seed(12)
    a = make("sliced", (6, 7), dtype, gen)
    b = torch.randn(other_shape, generator=gen).to(dtype)
    add_like_torch(ops, a, b, alpha, out_like((6, 7), dtype))
    # The first 2 x 5 elements: under 16, so any alpha is the kernel's.
    if b.dim() == 2:
        small = b[: 2 if b.shape[0] == 6 else 1, :5]
    else:
        small = b[:5] if b.dim() else b
    add_like_torch(ops, a[:2, :5], small, alpha, out_like((2, 5), dtype))


def test_add_float16_alpha_is_held_in_float16(ops):
    """The reported case: PyTorch converts alpha to float16 and rounds
    alpha * other to float16 before the sum (its scalar loop); the kernel
    computed in float with one rounding and was one float16 step off."""
    a = torch.tensor(1.3223, dtype=torch.float16)
    b = torch.tensor(0.7847, dtype=torch.float16)
    out = torch.empty((), dtype=torch.float16)
    ops.add(a, b, alpha=-1.5, out=out, implementation="native")
    assert out.item() == torch.add(a, b, alpha=-1.5).item() == 0.1455078125


def _all_values(dtype, gen):
    """Every float16 or bfloat16 bit pattern (infinities, NaNs, subnormals,
    both zeros) in a random order; for float32 as many random bit patterns
    and ordinary values."""
    if dtype in REDUCED:
        bits = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16)
        return bits[torch.randperm(bits.numel(), generator=gen)].view(dtype)
    bits = torch.randint(
        -(1 << 31), 1 << 31, (1 << 15,), generator=gen, dtype=torch.int64
    )
    patterns = bits.to(torch.int32).view(torch.float32)
    return torch.cat([patterns, torch.randn(1 << 15, generator=gen) * 10])


SWEEP_ALPHAS = [
    1,
    -1,
    0,
    -0.0,
    2,
    0.5,
    -1.5,
    0.1,
    3,
    1 / 3,
    1e-3,
    100,
    -7,
    3001,  # an int that float16 and bfloat16 round
    float("inf"),
    float("nan"),
]


@pytest.mark.parametrize("alpha", SWEEP_ALPHAS, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_add_bit_for_bit_sweep(ops, dtype, alpha):
    """Every input value against torch.add, bit for bit: whole tensors where
    PyTorch's loops agree, 15-element calls (its scalar loop) elsewhere; the
    larger ones go to PyTorch (checked too)."""
    gen = torch.Generator().manual_seed(21)
    other = _all_values(dtype, gen)
    x = other[torch.randperm(other.numel(), generator=gen)]
    n = other.numel()
    if torch_loops_agree(dtype, alpha):
        add_like_torch(ops, x, other, alpha, torch.empty(n, dtype=dtype))
        # Strided and broadcast layouts go through the same formula.
        m = n // 3 - 1
        add_like_torch(
            ops,
            x[::3][:m],
            other[1::3][:m],
            alpha,
            torch.empty(2 * m, dtype=dtype)[::2],
        )
        add_like_torch(
            ops,
            x[:4096].reshape(64, 64),
            other[:64],
            alpha,
            torch.empty(64, 64, dtype=dtype),
        )
        return
    out = torch.empty(n, dtype=dtype)
    for k in range(0, n, 15):
        ops.add(
            x[k : k + 15],
            other[k : k + 15],
            alpha=alpha,
            out=out[k : k + 15],
            implementation="native",
        )
    want = torch.empty(n, dtype=dtype)
    for k in range(0, n, 15):
        torch.add(x[k : k + 15], other[k : k + 15], alpha=alpha, out=want[k : k + 15])
    assert_same_bits(out, want, f"add alpha={alpha!r} {dtype}, 15-element calls")
    add_like_torch(ops, x[:16], other[:16], alpha, torch.empty(16, dtype=dtype))


@pytest.mark.parametrize(
    "dtype, alpha",
    [
        (torch.float16, 65504.5),
        (torch.float16, 1e5),
        (torch.float16, 65505),
        (torch.float16, -70000),
        (torch.bfloat16, 1e39),
        (torch.float32, 1e39),
        (torch.float32, -1e39),
    ],
    ids=str,
)
def test_add_alpha_overflowing_the_dtype_is_torchs_error(ops, dtype, alpha):
    """PyTorch converts alpha to the dtype with an overflow check; the kernel
    computed with it instead of raising."""
    a = torch.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.add(a, a, alpha=alpha)
    with pytest.raises(NotImplementedError, match="alpha overflows"):
        ops.add(a, a, alpha=alpha, out=torch.empty_like(a), implementation="native")
    with pytest.raises(RuntimeError, match="without overflow"):
        ops.add(a, a, alpha=alpha, out=torch.empty_like(a))


CAPABILITY_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    from infiniops_codegen.runtime import load

    ops = load(sys.argv[1])
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(4099, generator=gen), torch.randn(4099, generator=gen)
    ours = torch.empty(4099)
    ops.add(a, b, alpha=-1.5, out=ours, implementation="native")
    theirs = torch.add(a, b, alpha=-1.5)
    fused = (a.double() - 1.5 * b.double()).float()  # one rounding
    print(torch.backends.cpu.get_cpu_capability(), torch.equal(ours, theirs),
          torch.equal(theirs, fused))
    """)


def test_add_float32_fuses_as_torchs_cpu_capability_does(ops):
    """PyTorch's AVX2 and AVX512 kernels (and their scalar loops, which the
    compiler fuses there) compute a + alpha * b with one rounding; its
    default kernels (ATEN_CPU_CAPABILITY=default, or a CPU without AVX2 and
    FMA) with two. The native kernel follows whichever PyTorch runs."""
    natural = torch.backends.cpu.get_cpu_capability()
    settings = [None, "default"] + (["avx2"] if natural in ("AVX2", "AVX512") else [])
    for setting in settings:
        env = subprocess_env()
        env.pop("ATEN_CPU_CAPABILITY", None)
        if setting is not None:
            env["ATEN_CPU_CAPABILITY"] = setting
        proc = subprocess.run(
            [sys.executable, "-c", CAPABILITY_SCRIPT, str(build_dir())],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        capability, same, fused = proc.stdout.split()
        assert same == "True", f"ATEN_CPU_CAPABILITY={setting}: differs from torch"
        assert (fused == "True") == (capability != "DEFAULT"), (setting, capability)


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


# --- Bit for bit where PyTorch's result is a function of the values -------------
# PyTorch's elementwise CPU kernels have a vectorized loop and a scalar loop
# (small tensors, strided rows, a row's tail). Where the two compute the same
# thing, the native kernels must give PyTorch's bits on any layout. Where
# they do not (float32 exp: SLEEF in the vector loop, libm in the scalar
# one), which one an element gets depends on its place in TensorIterator's
# loops; the comparisons below then use rows of 7 elements, which every
# vector loop leaves to the scalar one, and the kernels follow that loop.
# (rms_norm is not here: its float32 sum of squares is ATen's cascade sum,
# whose order depends on the CPU's vector width; test_rms_norm compares it
# within a tolerance.)


def _rows_of_7(values, copies=1):
    """values as the first 7 columns of a (-1, 7 * copies) tensor: rows of 7
    elements that are not contiguous with each other (copies > 1)."""
    n = values.numel() // 7 * 7
    rows = values[:n].reshape(-1, 7)
    return torch.cat([rows] * copies, dim=1)[:, :7] if copies > 1 else rows


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_mul_bit_for_bit_sweep(ops, dtype):
    """A product of two float16/bfloat16 values is exact in float, so both of
    PyTorch's loops round once, as the kernel does; float32 rounds once."""
    gen = torch.Generator().manual_seed(22)
    x = _all_values(dtype, gen)
    y = x[torch.randperm(x.numel(), generator=gen)]
    out = torch.empty_like(x)
    ops.mul(x, y, out=out, implementation="native")
    assert_same_bits(out, torch.mul(x, y), f"mul {dtype}")
    for scalar in (y[7], torch.tensor(-1.5, dtype=dtype)):  # a 0-dim other
        ops.mul(x, scalar, out=out, implementation="native")
        assert_same_bits(out, torch.mul(x, scalar), f"mul by 0-dim {dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_silu_bit_for_bit_sweep(ops, dtype):
    gen = torch.Generator().manual_seed(23)
    x = _rows_of_7(_all_values(dtype, gen), copies=2)
    out = torch.empty(x.shape, dtype=dtype)
    ops.silu(x, out=out, implementation="native")
    assert_same_bits(out, torch.nn.functional.silu(x), f"silu {dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_silu_and_mul_bit_for_bit_sweep(ops, dtype):
    """The composite is at::silu (rounded to the dtype), then at::mul_out
    (rounded again): for float16 and bfloat16 two roundings, where the kernel
    rounded once and was a step off on 12% (float16) and 2% (bfloat16) of all
    values, ~25% of normally distributed ones."""
    gen = torch.Generator().manual_seed(24)
    gate = _rows_of_7(_all_values(dtype, gen))
    up = gate[torch.randperm(gate.shape[0], generator=gen)]
    x = torch.cat([gate, up], dim=1)  # [n, 14]: rows of 7 for silu
    ours = torch.empty(gate.shape, dtype=dtype)
    theirs = torch.empty(gate.shape, dtype=dtype)
    ops.silu_and_mul(x, out=ours, implementation="native")
    ops.silu_and_mul(x, out=theirs, implementation="torch")
    assert_same_bits(ours, theirs, f"silu_and_mul {dtype}")
    reference = torch.nn.functional.silu(x[:, :7]) * x[:, 7:]
    assert_same_bits(theirs, reference, f"silu_and_mul's fallback {dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_default_equals_native_for_supported_dtypes(ops, dtype):
    gen = torch.Generator().manual_seed(17)
    a, b = torch.randn(33, generator=gen).to(dtype), torch.randn(33).to(dtype)
    default, native = torch.empty(33, dtype=dtype), torch.empty(33, dtype=dtype)
    ops.add(a, b, alpha=-1, out=default)
    ops.add(a, b, alpha=-1, out=native, implementation="native")
    assert torch.equal(default, native)
    assert torch.equal(native, torch.add(a, b, alpha=-1))


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
    want = torch.add(x, x, alpha=1)
    assert ops.add(x, x, alpha=1, out=x, implementation="native") is x
    assert torch.equal(x, want)
    small = torch.randn(3, 5).to(dtype)  # under 16 elements: any alpha
    want = torch.add(small, small, alpha=-1.5)
    assert (
        ops.add(small, small, alpha=-1.5, out=small, implementation="native") is small
    )
    assert torch.equal(small, want)


def test_forced_native_errors_name_the_python_spelling(ops):
    """Python callers are told the keyword's values; the library's C++ error
    (ImplementationError) names Implementation::kTorch, for C++ callers
    (tests/test_cpp_example.py)."""
    x = torch.randn(4)
    with pytest.raises(NotImplementedError) as no_kernel:
        ops.exp(x, out=torch.empty(4), implementation="native")
    assert str(no_kernel.value) == (
        "exp(): implementation='native' was requested, but this op has no native "
        "kernel; use 'torch' or 'default'"
    )
    with pytest.raises(NotImplementedError) as unsupported:
        ops.add(
            x.double(),
            x.double(),
            out=torch.empty(4, dtype=torch.float64),
            implementation="native",
        )
    message = str(unsupported.value)
    assert message.startswith("add(): implementation='native' was requested, but ")
    assert message.endswith("); use 'torch' or 'default'"), message
    assert "Implementation::" not in message
