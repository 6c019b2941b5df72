"""Several outputs as torch has them (issue 16, point 3): `out=` takes them
as one tuple (or list), and the call returns what torch's out= call returns:
torch.return_types.<name>_out with torch's field names where the schema
names its returns, else a plain tuple. The per-output keywords stay."""

from __future__ import annotations

import pytest
import torch

from infiniops_codegen.model import manifest as manifest_reader


def _manifest(ops):
    return manifest_reader.of_build(ops.__file__.rsplit("/", 1)[0])


def test_every_return_type_is_torchs(ops):
    several = [op for op in _manifest(ops).ops if len(op.outputs) > 1]
    assert len(several) >= 10
    named = [op for op in several if op.return_type]
    assert {op.name for op in named} >= {
        "max",
        "min",
        "topk",
        "sort_values",
        "kthvalue",
    }
    for op in named:
        assert hasattr(torch.return_types, op.return_type), op.name


# (op, args, outputs, the torch call it stands in for)
CASES = [
    (
        "max",
        (1,),
        (torch.float32, torch.int64),
        lambda x, out: torch.max(x, 1, out=out),
    ),
    (
        "min",
        (0, True),
        (torch.float32, torch.int64),
        lambda x, out: torch.min(x, 0, True, out=out),
    ),
    (
        "topk",
        (2,),
        (torch.float32, torch.int64),
        lambda x, out: torch.topk(x, 2, out=out),
    ),
    (
        "sort_values",
        (),
        (torch.float32, torch.int64),
        lambda x, out: torch.sort(x, out=out),
    ),
    (
        "kthvalue",
        (2, 1),
        (torch.float32, torch.int64),
        lambda x, out: torch.kthvalue(x, 2, 1, out=out),
    ),
    (
        "aminmax",
        (),
        (torch.float32, torch.float32),
        lambda x, out: torch.aminmax(x, out=out),
    ),
]


@pytest.mark.parametrize(
    "name, args, dtypes, reference", CASES, ids=[c[0] for c in CASES]
)
def test_out_tuple_and_named_result(ops, name, args, dtypes, reference):
    x = torch.randn(4, 5)
    ours = tuple(torch.empty(0, dtype=d) for d in dtypes)
    theirs = tuple(torch.empty(0, dtype=d) for d in dtypes)
    result = getattr(ops, name)(x, *args, out=ours)
    expected = reference(x, theirs)
    assert type(result) is type(expected), (type(result), type(expected))
    fields = type(expected).__match_args__  # a structseq's field names
    assert len(fields) == len(ours)
    for field, tensor in zip(fields, ours):
        assert getattr(result, field) is tensor, field
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
    # the explicit keywords give the same result type, the same tensors
    keywords = [
        a.python_name for a in _manifest(ops).op(name).arguments if a.role == "output"
    ]
    again = getattr(ops, name)(x, *args, **dict(zip(keywords, ours)))
    assert type(again) is type(expected) and all(r is o for r, o in zip(again, ours))
    as_list = getattr(ops, name)(x, *args, out=list(ours))
    assert type(as_list) is type(expected)


def test_unnamed_outputs_stay_a_tuple(ops):
    x = torch.randn(1, 2, 6, 6)
    out = (torch.empty(0), torch.empty(0, dtype=torch.int64))
    result = ops.max_pool2d_with_indices(x, [2, 2], out=out)
    expected = torch.ops.aten.max_pool2d_with_indices.out(
        x, [2, 2], out=torch.empty(0), indices=torch.empty(0, dtype=torch.int64)
    )
    assert type(result) is tuple and type(expected) is tuple
    assert result[0] is out[0] and result[1] is out[1]


@pytest.mark.parametrize(
    "out, message",
    [
        (
            (torch.empty(0),),
            r"max\(\): argument 'out' must be a tuple of 2 Tensors, not a tuple of 1",
        ),
        (
            # no signature of torch.max takes one tensor as out= here
            torch.empty(0),
            r"max\(\) received an invalid combination of arguments - got "
            r"\(Tensor, int, out=Tensor\)",
        ),
    ],
)
def test_out_errors_are_type_errors(ops, out, message):
    with pytest.raises(TypeError, match=message):
        ops.max(torch.randn(3, 4), 1, out=out)


def test_out_and_a_keyword_output_together(ops):
    v, i = torch.empty(0), torch.empty(0, dtype=torch.int64)
    with pytest.raises(TypeError, match="got multiple values for argument"):
        ops.max(torch.randn(3, 4), 1, out=(v, i), max=v)


def test_single_output_ops_take_no_tuple(ops):
    with pytest.raises(TypeError):
        ops.abs(torch.randn(3), out=(torch.empty(3),))
