"""Property-based fuzz of the built module against PyTorch (run in a child
process by tests/test_fuzz_runtime.py, so that a crash is a failed test).

    python tests/fuzz_runtime_worker.py BUILD_DIR SEED EXAMPLES_PER_OP [OPS]

For each op, hypothesis draws shapes, dtypes, layouts (transposed, sliced,
expanded, 0-dim, empty), values (with NaN/inf), scalars, outs (right, wrong
shape, wrong dtype, strided, aliasing an input) and at most one misuse
(None, a list, a str, a meta-device tensor, a tensor that requires grad, an
overflowing int, a bad implementation=, an unknown keyword, ...). Each
example calls PyTorch's own Python function with the same arguments, then
the module on the handle-reuse or the from_blob path with a random
implementation. Either both succeed and the outs match, or both raise the
same exception type; the few differences by design are spelled out in
`expected_difference`. Inputs must come back unchanged.

Before every call the case is printed on stdout (`CASE ...`), so the parent
can show the call that crashed the interpreter. The last line is a JSON
summary: calls, examples and failures per op.
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable

import torch
from hypothesis import strategies as st

from fuzz_support import run_examples

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.uint8,
    torch.bool,
    torch.complex64,
]
FLOATS = DTYPES[:4]
# What tensors are drawn in: mostly the common dtypes, every one sometimes.
WEIGHTED = [torch.float32] * 4 + [torch.float64, torch.float16, torch.bfloat16] * 2
WEIGHTED += [torch.int64, torch.bool] * 2 + DTYPES


# --- Values -----------------------------------------------------------------------


def make_values(shape, dtype, gen_seed: int, special: bool) -> torch.Tensor:
    g = torch.Generator().manual_seed(gen_seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not (dtype.is_floating_point or dtype.is_complex):
        low = 0 if dtype == torch.uint8 else -4
        return torch.randint(low, 5, shape, generator=g).to(dtype)
    t = (torch.randn(shape, generator=g, dtype=torch.float64) * 2).to(dtype)
    if special and t.numel() > 0:
        flat = t.view(-1)
        for k, v in enumerate((math.nan, math.inf, -math.inf, -0.0)):
            flat[(k * 7) % flat.numel()] = v
    return t


@st.composite
def shapes(draw, min_dims=0, max_dims=4, max_side=4):
    n = draw(st.integers(min_dims, max_dims))
    return tuple(draw(st.integers(0 if n else 1, max_side)) for _ in range(n))


@st.composite
def tensors(draw, shape, dtypes=WEIGHTED, dtype=None):
    """A tensor of `shape` in one of several layouts."""
    dtype = dtype or draw(st.sampled_from(dtypes))
    gen_seed = draw(st.integers(0, 2**31 - 1))
    special = draw(st.integers(0, 9)) == 0
    layout = draw(st.sampled_from(["contiguous", "transposed", "sliced", "expanded"]))
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        base = make_values(shape[::-1], dtype, gen_seed, special)
        return base.permute(*reversed(range(len(shape))))
    if layout == "sliced" and len(shape) >= 1:
        wide = shape[:-1] + (shape[-1] * 2,)
        return make_values(wide, dtype, gen_seed, special)[..., ::2]
    if layout == "expanded" and len(shape) >= 1 and shape[0] > 1:
        return make_values((1,) + shape[1:], dtype, gen_seed, special).expand(shape)
    return make_values(shape, dtype, gen_seed, special)


def broadcast_partner(draw, shape):
    """A shape that broadcasts with `shape` (mostly), or a random one."""
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(shapes())  # probably not broadcastable
    shape = list(shape)
    if choice <= 3 and shape:
        shape[draw(st.integers(0, len(shape) - 1))] = 1
    if choice == 4 and shape:
        shape = shape[draw(st.integers(0, len(shape))) :]
    return tuple(shape)


# --- Op table ------------------------------------------------------------------------


@dataclass
class Call:
    args: list
    kwargs: dict
    outs: dict  # out name -> tensor (filled later)
    tensor_params: list = field(default_factory=list)  # (where, key) of tensors
    int_params: list = field(default_factory=list)
    scalar_params: list = field(default_factory=list)
    alias: dict = field(default_factory=dict)  # out name -> index of an input
    notes: str = ""


@dataclass
class OpFuzz:
    name: str  # the module's op
    torch_fn: Callable  # PyTorch's Python function, called with out=
    draw: Callable  # draw(st_draw) -> Call
    out_names: tuple = ("out",)

    def ref(self, args, kwargs, outs):
        if len(self.out_names) > 1:
            out = tuple(outs[n] for n in self.out_names)
        else:
            out = outs["out"]
        return self.torch_fn(*args, **kwargs, out=out)


def _unary(draw):
    x = draw(tensors(draw(shapes())))
    return Call([x], {}, {}, tensor_params=[("args", 0)])


def _binary(draw, alpha=False, scalar_other=False):
    shape = draw(shapes())
    x = draw(tensors(shape))
    if scalar_other:
        other = draw(scalars())
    else:
        y_dtype = draw(st.sampled_from([x.dtype] * 3 + DTYPES))
        other = draw(tensors(broadcast_partner(draw, shape), dtype=y_dtype))
    kwargs = {}
    call = Call([x, other], kwargs, {}, tensor_params=[("args", 0)])
    if not scalar_other:
        call.tensor_params.append(("args", 1))
    else:
        call.scalar_params.append(("args", 1))
    if alpha and draw(st.booleans()):
        kwargs["alpha"] = draw(scalars())
        call.scalar_params.append(("kwargs", "alpha"))
    return call


def scalars():
    return st.one_of(
        st.integers(-3, 3),
        st.floats(-3, 3, allow_nan=False, width=32),
        st.booleans(),
        st.sampled_from([0.5, -1.0, math.inf, 2**62]),
    )


def _dim(draw, ndim):
    if ndim == 0:
        return draw(st.sampled_from([0, -1]))
    return draw(st.integers(-ndim - 1, ndim))  # sometimes out of range


def _reduce(draw, with_dtype=True, dim_list=True, dim_optional=True):
    shape = draw(shapes(min_dims=0))
    x = draw(tensors(shape))
    args, kwargs = [x], {}
    call = Call(args, kwargs, {}, tensor_params=[("args", 0)])
    form = draw(st.integers(0, 3))
    if form == 0 and dim_optional:
        args.append(None)
    elif form == 1 and dim_list:
        n = len(shape)
        dims = draw(st.lists(st.integers(-n - 1, n), max_size=max(n, 1), unique=True))
        args.append(dims)
    else:
        args.append(_dim(draw, len(shape)))
        call.int_params.append(("args", 1))
    if draw(st.booleans()):
        args.append(draw(st.booleans()))
    if with_dtype and draw(st.integers(0, 3)) == 0:
        kwargs["dtype"] = draw(st.sampled_from(DTYPES))
    return call


def _sum(draw):
    return _reduce(draw)


def _amax(draw):
    call = _reduce(draw, with_dtype=False, dim_optional=False)
    if call.args[1] is None:
        call.args[1] = []
    return call


def _argmax(draw):
    shape = draw(shapes())
    x = draw(tensors(shape))
    args = [x]
    call = Call(args, {}, {}, tensor_params=[("args", 0)])
    if draw(st.booleans()):
        args.append(_dim(draw, len(shape)) if draw(st.booleans()) else None)
        if args[-1] is not None:
            call.int_params.append(("args", 1))
        if draw(st.booleans()):
            args.append(draw(st.booleans()))
    return call


def _dim_op(draw, with_dtype):
    shape = draw(shapes())
    x = draw(tensors(shape))
    args = [x, _dim(draw, len(shape))]
    kwargs = {}
    if with_dtype and draw(st.integers(0, 3)) == 0:
        if with_dtype == "positional":
            args.append(draw(st.sampled_from(FLOATS)))
        else:
            kwargs["dtype"] = draw(st.sampled_from(DTYPES))
    return Call(args, kwargs, {}, tensor_params=[("args", 0)], int_params=[("args", 1)])


def _mm(draw):
    n, k, m = (draw(st.integers(0, 4)) for _ in range(3))
    k2 = k if draw(st.integers(0, 5)) else draw(st.integers(0, 4))
    dtype = draw(st.sampled_from(DTYPES))
    a = draw(tensors((n, k), dtype=dtype))
    b = draw(tensors((k2, m), dtype=draw(st.sampled_from([dtype] * 4 + DTYPES))))
    return Call([a, b], {}, {}, tensor_params=[("args", 0), ("args", 1)])


def _matmul(draw):
    k = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from(FLOATS + [torch.int64]))
    lead = draw(shapes(max_dims=2, max_side=3))
    a_shape = lead + (draw(st.integers(1, 3)), k)
    b_shape = (k,) if draw(st.booleans()) else (k, draw(st.integers(1, 3)))
    if draw(st.integers(0, 5)) == 0:
        b_shape = (k + 1,)
    a = draw(tensors(a_shape, dtype=dtype))
    b = draw(tensors(b_shape, dtype=dtype))
    return Call([a, b], {}, {}, tensor_params=[("args", 0), ("args", 1)])


def _cat(draw):
    shape = draw(shapes(min_dims=1))
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 3))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    items = []
    for _ in range(n):
        s = list(shape)
        s[dim] = draw(st.integers(0, 3))
        if draw(st.integers(0, 9)) == 0:
            s = list(draw(shapes()))
        items.append(
            draw(tensors(s, dtype=draw(st.sampled_from([dtype] * 3 + DTYPES))))
        )
    args = [items]
    call = Call(args, {}, {})
    if draw(st.booleans()):
        args.append(dim)
        call.int_params.append(("args", 1))
    return call


def _clamp(draw):
    x = draw(tensors(draw(shapes())))
    bounds = st.one_of(st.none(), scalars())
    call = Call([x, draw(bounds), draw(bounds)], {}, {}, tensor_params=[("args", 0)])
    call.scalar_params += [("args", 1), ("args", 2)]
    return call


def _where(draw):
    shape = draw(shapes())
    cond = draw(
        tensors(broadcast_partner(draw, shape), dtypes=[torch.bool] * 5 + DTYPES)
    )
    x = draw(tensors(shape))
    y = draw(tensors(broadcast_partner(draw, shape), dtype=x.dtype))
    return Call(
        [cond, x, y], {}, {}, tensor_params=[("args", 0), ("args", 1), ("args", 2)]
    )


def _topk(draw):
    shape = draw(shapes())
    x = draw(tensors(shape))
    n = shape[-1] if shape else 1
    args = [x, draw(st.integers(0, n + 1))]
    call = Call(args, {}, {}, tensor_params=[("args", 0)], int_params=[("args", 1)])
    if draw(st.booleans()):
        args.append(_dim(draw, len(shape)))
        call.int_params.append(("args", 2))
        if draw(st.booleans()):
            args += [draw(st.booleans()), True]
    return call


def _pow_scalar(draw):
    x = draw(tensors(draw(shapes())))
    e = draw(st.sampled_from([0, 1, 2, 3, -1, 0.5, 2.0, -2.5]))
    return Call(
        [x, e], {}, {}, tensor_params=[("args", 0)], scalar_params=[("args", 1)]
    )


OPS: list[OpFuzz] = [
    OpFuzz("abs", torch.abs, _unary),
    OpFuzz("neg", torch.neg, _unary),
    OpFuzz("exp", torch.exp, _unary),
    OpFuzz("sqrt", torch.sqrt, _unary),
    OpFuzz("sigmoid", torch.sigmoid, _unary),
    OpFuzz("tanh", torch.tanh, _unary),
    OpFuzz("floor", torch.floor, _unary),
    OpFuzz("sign", torch.sign, _unary),
    OpFuzz("logical_not", torch.logical_not, _unary),
    OpFuzz("bitwise_not", torch.bitwise_not, _unary),
    OpFuzz("silu", torch._C._nn.silu, _unary),  # native kernel
    OpFuzz("add", torch.add, lambda d: _binary(d, alpha=True)),  # native
    OpFuzz("mul", torch.mul, _binary),  # native
    OpFuzz("sub", torch.sub, lambda d: _binary(d, alpha=True)),
    OpFuzz("div", torch.div, _binary),
    OpFuzz("maximum", torch.maximum, _binary),
    OpFuzz("atan2", torch.atan2, _binary),
    OpFuzz("eq_Tensor", torch.eq, _binary),
    OpFuzz("lt_Scalar", torch.lt, lambda d: _binary(d, scalar_other=True)),
    OpFuzz("logical_and", torch.logical_and, _binary),
    OpFuzz("bitwise_and_Tensor", torch.bitwise_and, _binary),
    OpFuzz("pow_Tensor_Scalar", torch.pow, _pow_scalar),
    OpFuzz("sum", torch.sum, _sum),
    OpFuzz("mean", torch.mean, _sum),
    OpFuzz("amax", torch.amax, _amax),
    OpFuzz("argmax", torch.argmax, _argmax),
    OpFuzz("cumsum", torch.cumsum, lambda d: _dim_op(d, "keyword")),
    OpFuzz("softmax", torch.softmax, lambda d: _dim_op(d, "positional")),
    OpFuzz("log_softmax", torch.log_softmax, lambda d: _dim_op(d, "positional")),
    OpFuzz("mm", torch.mm, _mm),
    OpFuzz("matmul", torch.matmul, _matmul),
    OpFuzz("cat", torch.cat, _cat),
    OpFuzz("clamp", torch.clamp, _clamp),
    OpFuzz("where", torch.where, _where),
    OpFuzz("topk", torch.topk, _topk, out_names=("values", "indices")),
]


# --- Outs and misuses -------------------------------------------------------------------


def _probe(op: OpFuzz, call: Call):
    """Shapes and dtypes of PyTorch's result without out= (None if it fails)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = op.torch_fn(*call.args, **call.kwargs)
    except Exception:  # noqa: BLE001 - the probe only sizes the outs
        return None
    results = tuple(result) if isinstance(result, tuple) else (result,)
    return [(tuple(r.shape), r.dtype) for r in results]


@st.composite
def outs_for(draw, op: OpFuzz, call: Call):
    probe = _probe(op, call)
    outs = {}
    for k, name in enumerate(op.out_names):
        shape, dtype = probe[k] if probe and k < len(probe) else ((), torch.float32)
        kind = draw(
            st.sampled_from(
                ["exact"] * 8
                + ["empty", "wrong_shape", "wrong_dtype", "strided", "alias"]
            )
        )
        if kind == "empty":
            shape = (0,)
        elif kind == "wrong_shape":
            shape = draw(shapes())
        elif kind == "wrong_dtype":
            dtype = draw(st.sampled_from(DTYPES))
        if kind == "alias":
            same = [
                k
                for k, a in enumerate(call.args)
                if isinstance(a, torch.Tensor) and a.shape == shape and a.dtype == dtype
            ]
            if same:
                call.alias[name] = same[0]
                outs[name] = call.args[same[0]]
                call.notes += f" {name}=alias of argument {same[0]}"
                continue
        if kind == "strided" and len(shape) >= 2:
            t = torch.full(shape[::-1], 7, dtype=dtype).permute(
                *reversed(range(len(shape)))
            )
        else:
            t = (
                torch.full(shape, 7, dtype=dtype)
                if shape != (0,)
                else torch.empty(0, dtype=dtype)
            )
        outs[name] = t
        if kind != "exact":
            call.notes += f" {name}={kind}"
    return outs


MISUSES = [
    "tensor_none",
    "tensor_list",
    "tensor_str",
    "tensor_float",
    "tensor_meta",
    "tensor_grad",
    "int_huge",
    "int_float",
    "int_bool",
    "int_none",
    "scalar_str",
    "scalar_huge",
    "scalar_tensor",
    "out_none",
    "out_list",
    "out_meta",
    "impl_unknown",
    "impl_int",
    "impl_native",
    "extra_keyword",
    "extra_positional",
]


def _get(call, where_key):
    where, key = where_key
    return (call.args if where == "args" else call.kwargs)[key]


def _set(call, where_key, value):
    where, key = where_key
    (call.args if where == "args" else call.kwargs)[key] = value


def _tensor_slots(call):
    slots = list(call.tensor_params)
    if call.args and isinstance(call.args[0], list):  # cat: an element of the list
        slots += [("list", k) for k in range(len(call.args[0]))]
    return slots


@st.composite
def misuse(draw, op: OpFuzz, call: Call):
    """Applies at most one misuse; returns its name ('' for none)."""
    if draw(st.integers(0, 3)) != 0:
        return ""
    kind = draw(st.sampled_from(MISUSES))
    slots = _tensor_slots(call)
    if kind.startswith("tensor_") and slots:
        slot = draw(st.sampled_from(slots))
        original = call.args[0][slot[1]] if slot[0] == "list" else _get(call, slot)
        value = {
            "tensor_none": None,
            "tensor_list": original.tolist() if original.dim() else [original.item()],
            "tensor_str": "x",
            "tensor_float": 1.5,
            "tensor_meta": torch.empty(
                original.shape, dtype=original.dtype, device="meta"
            ),
            "tensor_grad": original.real.to(torch.float32).requires_grad_(),
        }[kind]
        if slot[0] == "list":
            call.args[0][slot[1]] = value
        else:
            _set(call, slot, value)
        return f"{kind}@{slot}"
    if kind.startswith("int_") and call.int_params:
        slot = draw(st.sampled_from(call.int_params))
        value = {
            "int_huge": draw(st.sampled_from([2**70, -(2**70), 2**63])),
            "int_float": 1.5,
            "int_bool": True,
            "int_none": None,
        }[kind]
        _set(call, slot, value)
        return f"{kind}@{slot}"
    slots = call.scalar_params
    if kind == "scalar_tensor":
        # Elsewhere PyTorch's function has a Tensor overload at that place.
        slots = [s for s in slots if s == ("kwargs", "alpha")]
    if kind.startswith("scalar_") and slots:
        slot = draw(st.sampled_from(slots))
        value = {
            "scalar_str": "x",
            "scalar_huge": 2**70,
            "scalar_tensor": torch.ones(2),
        }[kind]
        _set(call, slot, value)
        return f"{kind}@{slot}"
    if kind.startswith("out_"):
        name = draw(st.sampled_from(op.out_names))
        call.outs[name] = {
            "out_none": None,
            "out_list": [0.0],
            "out_meta": torch.empty(0, device="meta"),
        }[kind]
        return f"{kind}@{name}"
    if kind.startswith("impl_") or kind.startswith("extra_"):
        return kind
    return ""


# --- Running and comparing -------------------------------------------------------------

DEBUG = bool(__import__("os").environ.get("FUZZ_DEBUG"))
STATS = {"calls": 0, "examples": 0, "per_op": {}}


def _outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
        return None
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return e


def _snapshot(call):
    items = [a for a in call.args if isinstance(a, torch.Tensor)]
    if call.args and isinstance(call.args[0], list):
        items += [a for a in call.args[0] if isinstance(a, torch.Tensor)]
    return [(t, t.clone()) for t in items if t.device.type == "cpu"]


def _fresh(outs):
    return {
        k: v.clone() if isinstance(v, torch.Tensor) and v.device.type == "cpu" else v
        for k, v in outs.items()
    }


def _assert_same(ours: torch.Tensor, theirs: torch.Tensor, what: str):
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{what}: dtype {ours.dtype} != {theirs.dtype}"
    if ours.dtype.is_floating_point or ours.dtype.is_complex:
        torch.testing.assert_close(ours, theirs, equal_nan=True, msg=what)
    else:
        assert torch.equal(ours, theirs), f"{what}: values differ"


def expected_difference(misuse_name, impl, reuse, theirs, ours) -> str | None:
    """Why ours may differ from PyTorch here by design, or None."""
    if misuse_name.startswith("out_none") and isinstance(ours, TypeError):
        # only ops without a functional twin taking their arguments (index)
        return "out= is required (PyTorch would allocate one)"
    if misuse_name == "impl_unknown":
        return "expect ValueError" if isinstance(ours, ValueError) else None
    if misuse_name == "impl_int":
        return "expect TypeError" if isinstance(ours, TypeError) else None
    if impl == "native" and isinstance(ours, NotImplementedError):
        return "no native kernel for this call"
    if (
        misuse_name.startswith("tensor_grad")
        and isinstance(ours, RuntimeError)
        and "automatic differentiation" in str(ours)
    ):
        # PyTorch checks only differentiable out= overloads (not eq, argmax,
        # softmax.int_out, ...); plain ATen ops leave it to ATen's autograd
        # kernel as PyTorch does, but native kernels, composites and the
        # from_blob path cannot reach it and refuse every such input.
        return "out= with an input that requires grad refused (native, composite or from_blob)"
    if (
        misuse_name.startswith(("tensor_meta", "out_meta"))
        and isinstance(ours, RuntimeError)
        and "device type meta" in str(ours)
    ):
        # The library has no meta device: refused when the argument is
        # converted, before anything else of the call (PyTorch may report
        # another problem first, and even accepts a few mixed-device calls:
        # amax of a 0-d CPU tensor into a meta out, and a 1x1 matmul of a CPU
        # and a meta tensor, which returns garbage).
        return "the meta device is not supported"
    if (
        misuse_name.startswith("tensor_float")
        and not isinstance(theirs, TypeError)
        and isinstance(ours, TypeError)
    ):
        # An op is one ATen overload; PyTorch's function also has a Scalar
        # overload (eq.Scalar, add with a wrapped number, ...), so it takes
        # the number (and may then fail in the kernel).
        return "a number where the overload takes a Tensor"
    if (
        theirs is None
        and not reuse
        and isinstance(ours, RuntimeError)
        and "from_blob path" in str(ours)
    ):
        return "a from_blob output cannot be resized (documented)"
    return None


def _materialise(call: Call):
    """Fresh outs (and fresh copies of the inputs they alias) for one call."""
    args = list(call.args)
    outs = _fresh(call.outs)
    for name, k in call.alias.items():
        if isinstance(args[k], torch.Tensor) and args[k].device.type == "cpu":
            args[k] = args[k].clone()
            outs[name] = args[k]
    return args, outs


def _unchanged(before) -> bool:
    for t, copy in before:
        same = torch.equal(t, copy) or (
            (t.dtype.is_floating_point or t.dtype.is_complex)
            and torch.equal(t.isnan(), copy.isnan())
            and torch.equal(t.nan_to_num(), copy.nan_to_num())
        )
        if not same:
            return False
    return True


def run_example(m, op: OpFuzz, data) -> None:
    call = op.draw(data.draw)
    call.outs = data.draw(outs_for(op, call))
    name = data.draw(misuse(op, call))
    extra_kw = {"bogus": 1} if name == "extra_keyword" else {}
    extra_pos = [torch.zeros(1)] * 8 if name == "extra_positional" else []
    STATS["examples"] += 1
    before = _snapshot(call)

    args, ref_outs = _materialise(call)
    theirs = _outcome(
        lambda: op.ref(args + extra_pos, {**call.kwargs, **extra_kw}, ref_outs)
    )
    # Both paths: handle reuse, then from_blob; a random implementation each.
    impls = ["default"] * 4 + ["torch"] * 3 + ["native"]
    for reuse in (True, False):
        impl = data.draw(st.sampled_from(impls))
        direct = data.draw(st.integers(0, 4)) != 0
        # from_blob: mostly the wrapper pool (re-bound wrappers, the
        # default), sometimes fresh wrappers.
        pool = reuse or data.draw(st.integers(0, 3)) != 0
        if name == "impl_native":
            impl = "native"
        impl_arg = {"impl_unknown": "cuda", "impl_int": 3}.get(name, impl)
        args, our_outs = _materialise(call)
        desc = f"{op.name} misuse={name or '-'} implementation={impl_arg!r} " f"reuse={reuse} pool={pool} direct={direct} outs:{call.notes or ' exact'} args=" + ", ".join(
            _describe(a) for a in call.args
        ) + (
            f" kwargs={ {k: _describe(v) for k, v in call.kwargs.items()} }"
        )
        print("CASE", desc, flush=True)
        fn = getattr(m, op.name)
        m.set_handle_reuse(reuse)
        m.set_direct_mode(direct)
        m.set_wrapper_pool(pool)
        STATS["calls"] += 1
        per = STATS["per_op"].setdefault(op.name, {"calls": 0, "raised": 0})
        per["calls"] += 1
        try:
            ours = _outcome(
                lambda: fn(
                    *args,
                    *extra_pos,
                    **call.kwargs,
                    **extra_kw,
                    **our_outs,
                    implementation=impl_arg,
                )
            )
        finally:
            m.set_handle_reuse(True)
            m.set_direct_mode(True)
            m.set_wrapper_pool(True)
        if ours is not None:
            per["raised"] += 1
            if DEBUG:
                print("RAISED", type(ours).__name__, str(ours).splitlines()[0][:90])
        assert _unchanged(before), f"{desc}: an input was modified"
        if expected_difference(name, impl, reuse, theirs, ours):
            continue
        if theirs is not None or ours is not None:
            assert type(ours) is type(theirs), (
                f"{desc}\n  PyTorch: {type(theirs).__name__}: {theirs}\n"
                f"  ours:    {type(ours).__name__}: {ours}"
            )
            continue
        if name.startswith("out_none"):
            # out=None: the outputs are allocated and returned, as torch's
            # own call does; compare what both calls return.
            args, our_outs = _materialise(call)
            m.set_handle_reuse(reuse)
            try:
                ours_value = fn(
                    *args, **call.kwargs, **our_outs, implementation=impl_arg
                )
            finally:
                m.set_handle_reuse(True)
            args, ref_outs = _materialise(call)
            theirs_value = op.ref(args, call.kwargs, ref_outs)
            pairs = zip(
                *(
                    v if isinstance(v, tuple) else (v,)
                    for v in (ours_value, theirs_value)
                )
            )
            for k, (a, b) in enumerate(pairs):
                _assert_same(a, b, f"{desc} [result {k}]")
            continue
        for out_name in op.out_names:
            _assert_same(our_outs[out_name], ref_outs[out_name], f"{desc} [{out_name}]")


def _describe(a) -> str:
    if isinstance(a, torch.Tensor):
        layout = "" if a.is_contiguous() else f" strides={a.stride()}"
        return f"T{tuple(a.shape)}:{str(a.dtype)[6:]}:{a.device.type}{layout}"
    if isinstance(a, list):
        return "[" + ", ".join(_describe(x) for x in a) + "]"
    return repr(a)


def fuzz_op(m, op: OpFuzz, seed_value: int, examples: int) -> str | None:
    return run_examples(lambda data: run_example(m, op, data), seed_value, examples)


def main() -> int:
    build_dir, seed_value, examples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    only = set(sys.argv[4].split(",")) if len(sys.argv) > 4 and sys.argv[4] else None
    from infiniops_codegen.runtime import load

    m = load(build_dir)
    torch.set_num_threads(1)
    print(f"SEED {seed_value}", flush=True)
    failures = {}
    start = time.perf_counter()
    for k, op in enumerate(OPS):
        if only and op.name not in only:
            continue
        failure = fuzz_op(m, op, seed_value + k, examples)
        if failure:
            failures[op.name] = failure
    summary = {
        "seed": seed_value,
        "ops": len(STATS["per_op"]),
        "calls": STATS["calls"],
        "examples": STATS["examples"],
        "per_op": STATS["per_op"],
        # The main thread's wrapper pool over the run (the from_blob calls).
        "wrapper_pool": m._debug_wrapper_pool(False),
        "failures": failures,
        "seconds": round(time.perf_counter() - start, 2),
    }
    print("SUMMARY " + json.dumps(summary), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
