"""ops.<name> behaves like torch.<name> (issue 16): torch's overloads by
name, tried in torch's order; out= optional, the outputs then allocated as
torch allocates them; several outputs as torch's named tuples; numbers
where torch takes them; the explicit overload names still there."""

from __future__ import annotations

import inspect
import pydoc

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from infiniops_codegen.model import manifest as manifest_reader


def _manifest(ops):
    return manifest_reader.of_build(ops.__file__.rsplit("/", 1)[0])


def test_the_calls_of_the_issue_work_as_in_torch(ops):
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    o = torch.empty(3, 4)
    assert ops.pow(x, 2, out=o) is o
    torch.testing.assert_close(o, torch.pow(x, 2))
    torch.testing.assert_close(ops.sum(x), torch.sum(x))
    s = torch.empty(())
    assert ops.sum(x, dim=None, out=s) is s
    torch.testing.assert_close(s, torch.sum(x, dim=None))
    v, i = torch.empty(0), torch.empty(0, dtype=torch.int64)
    result = ops.max(x, 1, out=(v, i))
    assert type(result) is torch.return_types.max_out
    assert result.values is v and result.indices is i
    torch.testing.assert_close(ops.add(x, y), torch.add(x, y))
    torch.testing.assert_close(ops.add(x, 2.0), torch.add(x, 2.0))
    assert str(inspect.signature(ops.add)).startswith(
        "(input, other, *, alpha=1, out=None"
    )
    # (heaviside is not in the default build; maximum is its kind)
    text = pydoc.render_doc(ops.maximum, renderer=pydoc.plaintext)
    assert "maximum(input, other, *, out=None" in text


def test_torch_rejects_what_torch_rejects(ops):
    x = torch.randn(3, 4)
    # torch binds sum(Tensor input, *, dtype) without out= (sum.out has no
    # Python binding) and refuses sum(x, out=o); ours is sum.out's call there
    s = torch.empty(())
    assert ops.sum(x, out=s) is s
    torch.testing.assert_close(s, torch.sum(x))
    with pytest.raises(TypeError, match="invalid combination"):
        torch.sum(x, out=torch.empty(()))
    # torch 2.11 and 2.12 take a string as a Dimname (RuntimeError: named
    # tensors); ours then names sum.DimnameList_out, not in the build
    # (NotImplementedError, a RuntimeError). 2.13 refuses it (TypeError).
    try:
        torch.sum(x, "no dim")
    except (TypeError, RuntimeError) as e:
        torch_error = e
    if type(torch_error) is TypeError:
        with pytest.raises(TypeError, match=r"sum\(\) received an invalid combination"):
            ops.sum(x, "no dim")
    else:
        assert type(torch_error) is RuntimeError, torch_error
        with pytest.raises(RuntimeError, match=r"sum\.DimnameList_out"):
            ops.sum(x, "no dim")
    # maximum takes no number for a tensor (add does)
    with pytest.raises(TypeError):
        ops.maximum(x, 2.0)
    with pytest.raises(TypeError):
        torch.maximum(x, 2.0)


def test_a_signature_not_in_the_build_is_named(ops):
    x = torch.randn(3)
    functions = _manifest(ops).functions
    absent = [o for o in functions["pow"] if o.op is None]
    assert [o.aten for o in absent] == ["pow.Scalar_out"]
    with pytest.raises(
        NotImplementedError, match=r"pow\.Scalar_out.*not in this build"
    ):
        ops.pow(2, x)


def test_overloads_in_torchs_order(ops):
    """The manifest's order of each function's signatures is torchgen's
    (the schema oracle's python_overloads), with the build's ops on them."""
    from infiniops_codegen.schema.db import load_schema_db

    db = load_schema_db()
    manifest = _manifest(ops)
    ops_by_name = manifest.by_name()
    checked = 0
    for name, overloads in manifest.functions.items():
        if len(overloads) == 1 and ops_by_name[overloads[0].op].composite:
            continue  # a composite's own function (torch has none, or another)
        theirs = db.python_overloads[name]
        assert [o.signature for o in overloads] == [t.text for t in theirs], name
        for o, t in zip(overloads, theirs):
            if o.op is not None:
                op = ops_by_name[o.op]
                assert op.aten == t.out or (
                    t.out is None and op.functional == t.functional
                )
        checked += 1
    # the default set serves over 150 of torch's functions; a selection
    # (CI's covering build) fewer, each checked the same
    assert checked > (150 if manifest.selection == "default" else 0), checked


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.pow(x, 2),  # Tensor, Scalar -> pow.Tensor_Scalar
        lambda m, x: m.pow(x, x),  # Tensor, Tensor
        lambda m, x: m.clamp(x, -0.5, 0.5),  # Scalar? overload
        lambda m, x: m.clamp(x, torch.zeros(4), None),  # Tensor? overload
        lambda m, x: m.eq(x, 0.0),
        lambda m, x: m.eq(x, x.clone()),
        lambda m, x: m.sum(x, [0]),
        lambda m, x: m.sum(x, dtype=torch.float64),
        lambda m, x: m.mean(x, (0, 1), keepdim=True),
        lambda m, x: m.max(x, 1, True),
        lambda m, x: m.max(x),
        lambda m, x: m.max(x, x.flip(0)),
        lambda m, x: m.div(x, 2, rounding_mode="floor"),
        lambda m, x: m.sub(3, x),
        lambda m, x: m.mul(x, True),
        lambda m, x: m.where(x > 0, x, x * 2),
        lambda m, x: m.cat([x, x], 1),
        lambda m, x: m.softmax(x, -1),
        lambda m, x: m.std(x, 1, correction=0),
    ],
)
def test_without_out_as_torch(ops, call):
    x = torch.randn(3, 4)
    theirs = call(torch, x)
    ours = call(ops, x)
    assert type(ours) is type(theirs)
    for a, b in zip(*(r if isinstance(r, tuple) else (r,) for r in (ours, theirs))):
        assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
        torch.testing.assert_close(a, b, equal_nan=True)
        assert a._version == b._version  # fresh, as torch's own result


def test_allocation_follows_torch(ops):
    """dtype promotion, broadcasting, memory format, device, strides."""
    i = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    cases = [
        (lambda m: m.add(i, 2.5)),  # a wrapped number promotes to float
        (lambda m: m.add(i, torch.tensor(2.5, dtype=torch.float64))),
        (lambda m: m.mul(i, True)),
        (lambda m: m.add(torch.randn(4, 1), torch.randn(1, 5))),
        (
            lambda m: m.abs(
                torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
            )
        ),
        (lambda m: m.sigmoid(torch.randn(4, 6).t())),
        (lambda m: m.add(torch.randn(3, 4, dtype=torch.float16), torch.randn(3, 4))),
    ]
    for case in cases:
        torch.manual_seed(0)
        theirs = case(torch)
        torch.manual_seed(0)
        ours = case(ops)
        assert (ours.dtype, ours.shape, ours.stride(), ours.device) == (
            theirs.dtype,
            theirs.shape,
            theirs.stride(),
            theirs.device,
        )


def test_meta_tensors_without_out(ops):
    m = torch.empty(3, 4, device="meta")
    r = ops.add(m, m)
    assert r.device.type == "meta" and r.shape == (3, 4)


def test_several_outputs_without_out(ops):
    x = torch.randn(4, 5)
    for name, args in [("max", (1,)), ("aminmax", ()), ("sort", ()), ("topk", (2,))]:
        ours, theirs = getattr(ops, name)(x, *args), getattr(torch, name)(x, *args)
        assert type(ours) is type(theirs), name
        for a, b in zip(ours, theirs):
            torch.testing.assert_close(a, b)


def test_autograd_without_out_records_the_graph(ops):
    for name in ("mul", "add", "exp", "silu"):  # mul, add, silu: native kernels too
        x = torch.randn(5, requires_grad=True)
        xt = x.detach().clone().requires_grad_()
        args = (x, 2.0) if name in ("mul", "add") else (x,)
        ours = getattr(ops, name)(*args)
        fn = getattr(torch, name, None) or getattr(torch.nn.functional, name)
        theirs = fn(xt, *args[1:])
        assert ours.requires_grad and type(ours.grad_fn) is type(theirs.grad_fn), name
        ours.sum().backward()
        theirs.sum().backward()
        torch.testing.assert_close(x.grad, xt.grad)


def test_native_kernels_serve_calls_without_out(ops):
    x, y = torch.randn(8), torch.randn(8)
    forced = ops.add(x, y, implementation="native")  # the native kernel or an error
    torch.testing.assert_close(forced, x + y)
    # a composite's 'like' output (rms_norm: like input) reaches its native
    # kernel, and so does one its body shapes (silu_and_mul's, run on meta
    # tensors); a call the kernel refuses (float64) raises as with out=
    x, w = torch.randn(4, 6), torch.randn(6)
    native = ops.rms_norm(x, w, implementation="native")
    torch.testing.assert_close(native, torch.nn.functional.rms_norm(x, (6,), w, 1e-6))
    half = ops.silu_and_mul(x, implementation="native")
    torch.testing.assert_close(half, torch.nn.functional.silu(x[:, :3]) * x[:, 3:])
    with pytest.raises(NotImplementedError, match="declined|no native kernel applies"):
        ops.silu_and_mul(x.double(), implementation="native")
    # an op without a native kernel raises as its out= call does, not
    # silently running PyTorch's
    with pytest.raises(NotImplementedError, match="has no native kernel"):
        ops.erfinv(x, implementation="native")


def test_composites_without_out_on_the_from_blob_path(ops):
    """Outputs allocated for a call without out= are shaped before the call
    (a from_blob output cannot grow): by 'like', else by the body run on
    meta tensors."""
    x = torch.randn(4, 6)
    q = torch.randn(1, 2, 4, 8)
    kv = torch.randn(1, 1, 4, 8)  # grouped-query: one key/value head for two
    ops.set_handle_reuse(False)
    try:
        half = ops.silu_and_mul(x)
        attention = ops.scaled_dot_product_attention(q, q, q)
        grouped = ops.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
    finally:
        ops.set_handle_reuse(True)
    torch.testing.assert_close(half, torch.nn.functional.silu(x[:, :3]) * x[:, 3:])
    torch.testing.assert_close(
        attention, torch.nn.functional.scaled_dot_product_attention(q, q, q)
    )
    torch.testing.assert_close(
        grouped,
        torch.nn.functional.scaled_dot_product_attention(q, kv, kv, enable_gqa=True),
    )


def test_composites_without_out(ops):
    x, w = torch.randn(4, 6, dtype=torch.float64), torch.randn(6, dtype=torch.float64)
    ours = ops.rms_norm(x, w)
    expected = torch.nn.functional.rms_norm(x, (6,), w, 1e-6)
    assert ours.dtype == torch.float64
    torch.testing.assert_close(ours, expected)
    half = ops.silu_and_mul(x)
    torch.testing.assert_close(half, torch.nn.functional.silu(x[:, :3]) * x[:, 3:])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpa_takes_torch_s_whole_signature(ops, dtype, is_causal):
    """Grouped-query attention as HF transformers' Llama calls it: 8 query
    heads over 2 key/value heads, scale and enable_gqa keyword-only."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q = torch.randn(2, 8, 5, 16, dtype=dtype)
    k, v = torch.randn(2, 2, 5, 16, dtype=dtype), torch.randn(2, 2, 5, 16, dtype=dtype)
    expected = sdpa(q, k, v, None, 0.0, is_causal, scale=0.25, enable_gqa=True)
    ours = ops.scaled_dot_product_attention(
        q, k, v, None, 0.0, is_causal, scale=0.25, enable_gqa=True
    )
    assert ours.dtype == dtype and ours.shape == (2, 8, 5, 16)
    torch.testing.assert_close(ours, expected, rtol=0, atol=0)
    out = torch.empty(0, dtype=dtype)
    result = ops.scaled_dot_product_attention(
        q, k, v, is_causal=is_causal, enable_gqa=True, out=out
    )
    assert result is out
    torch.testing.assert_close(
        out, sdpa(q, k, v, is_causal=is_causal, enable_gqa=True), rtol=0, atol=0
    )
    # Without enable_gqa the head counts must match: the same error as torch's.
    for kwargs in ({}, {"enable_gqa": False}):
        with pytest.raises(Exception) as theirs:
            sdpa(q, k, v, **kwargs)
        with pytest.raises(Exception) as ours_raised:
            ops.scaled_dot_product_attention(q, k, v, **kwargs)
        assert type(ours_raised.value) is type(theirs.value)
        assert str(ours_raised.value) == str(theirs.value)
    # torch takes scale by keyword only, and so do we.
    with pytest.raises(TypeError):
        sdpa(q, k, v, None, 0.0, is_causal, 0.25)
    with pytest.raises(TypeError):
        ops.scaled_dot_product_attention(q, k, v, None, 0.0, is_causal, 0.25)


def test_explicit_overload_names_stay(ops):
    x = torch.randn(3)
    o = torch.empty(3)
    assert ops.pow_Tensor_Scalar(x, 2, out=o) is o
    torch.testing.assert_close(o, x**2)
    torch.testing.assert_close(ops.add_Scalar(x, 2.0), x + 2)
    v, i = torch.empty(0), torch.empty(0, dtype=torch.int64)
    r = ops.max(x.reshape(1, 3), 1, max=v, max_values=i)  # the op's own keywords
    assert r.values is v


def test_out_none_allocates(ops):
    x = torch.randn(3)
    torch.testing.assert_close(ops.exp(x, out=None), torch.exp(x))
    assert type(ops.max(x.reshape(1, 3), 1, out=None)) is torch.return_types.max


def test_torch_function_sees_the_functional_overload(ops):
    seen = []

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x = torch.randn(3)
    with Mode():
        r = ops.add(x, x)
    torch.testing.assert_close(r, x + x)
    assert torch.ops.aten.add.Tensor in seen


def test_dispatch_modes_see_one_functional_call(ops):
    calls = []

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            calls.append(func)
            return func(*args, **(kwargs or {}))

    x = torch.randn(3)
    with Mode():
        ops.mul(x, x)  # a native kernel op: no meta run where a mode looks
        ops.exp(x)
    assert calls == [torch.ops.aten.mul.Tensor, torch.ops.aten.exp.default]


def test_profiler_records_the_functional_op(ops):
    x = torch.randn(3)
    with torch.profiler.profile() as prof:
        ops.exp(x)
    assert "aten::exp" in {e.name for e in prof.events()}


def test_type_stub_declares_the_overloads(ops):
    import ast
    from pathlib import Path

    stub = Path(__file__).resolve().parent.parent / "generated" / "infiniops.pyi"
    tree = ast.parse(stub.read_text())
    pow_defs = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "pow"
    ]
    assert len(pow_defs) == 2
    assert all(
        any(getattr(d, "id", None) == "overload" for d in f.decorator_list)
        for f in pow_defs
    )


def test_out_is_optional_except_where_no_functional_twin_takes_the_call(ops):
    """As docs/troubleshooting.md says: a call without out= allocates its
    outputs as torch does; index (Tensor?[] indices) still needs out=."""
    x = torch.randn(4, 6)
    torch.testing.assert_close(ops.add(x, 2.0), torch.add(x, 2.0))
    torch.testing.assert_close(ops.add(x, 2.0, out=None), torch.add(x, 2.0))
    with pytest.raises(TypeError) as caught:
        ops.index(x, [torch.tensor([0, 1])])
    assert str(caught.value) == "index() missing required argument 'out'"
