"""The sweep's configuration table: data only (cases.py expands it).

Each `Case` names an op of the built module (its manifest name) and its
arguments by *schema* name; tensors are `Tensor` specs whose shapes use the
symbols below. A case expands to one configuration per size (tiny family) or
token count (LLM family) and per dtype.

Symbols:
  tiny family:  m, n = 1, 1 (1 element) or 8, 8 (64 elements)
  LLM family:   T = tokens (1 decode, 16 and 128 prefill), H = hidden 4096,
                I = intermediate 11008, NH = 32 heads, HD = 128 head dim,
                HD2 = 64 (half a head: rotary embeddings), V = 32000 vocab,
                C = 128 tokens of attention context
"""

from __future__ import annotations

from dataclasses import dataclass, field

Dim = int | str


@dataclass(frozen=True)
class Tensor:
    """A tensor argument. dtype None: the configuration's dtype."""

    shape: tuple[Dim, ...]
    fill: str = "randn"  # randn | pos (0.5..1.5) | unit (-0.9..0.9) | index | mask
    dtype: str | None = None
    high: Dim = 1  # exclusive upper bound of fill="index"


def t(*shape: Dim, fill: str = "randn") -> Tensor:
    return Tensor(tuple(shape), fill)


def pos(*shape: Dim) -> Tensor:
    return Tensor(tuple(shape), "pos")


def mask(*shape: Dim) -> Tensor:
    return Tensor(tuple(shape), "mask", "bool")


def index(*shape: Dim, high: Dim) -> Tensor:
    return Tensor(tuple(shape), "index", "int64", high)


@dataclass(frozen=True)
class Case:
    op: str  # the module's op name (manifest "name")
    args: dict  # schema argument name -> Tensor | list of Tensor | literal
    label: str = ""  # tells apart cases of one op, e.g. "qkv proj"
    # dtype -> token counts allowed (LLM family): caps the slow ones.
    tokens: dict[str, tuple[int, ...]] = field(default_factory=dict)


TINY_SIZES = {1: {"m": 1, "n": 1}, 64: {"m": 8, "n": 8}}
TINY_DTYPES = ("float32", "bfloat16", "float16")

LLM_DIMS = {"H": 4096, "I": 11008, "NH": 32, "HD": 128, "HD2": 64, "V": 32000, "C": 128}
LLM_TOKENS = (1, 16, 128)
LLM_DTYPES = ("float32", "bfloat16")

# Half-precision GEMMs have no fast CPU path here (~0.1 GMAC/s): keep them to
# decode (and short prefill for the attention-sized ones).
DECODE_ONLY_LOW_PRECISION = {"bfloat16": (1,), "float16": (1,)}
SHORT_LOW_PRECISION = {"bfloat16": (1, 16), "float16": (1, 16)}

_x = t("m", "n")
_p = pos("m", "n")

TINY: tuple[Case, ...] = (
    # unary
    *(
        Case(op, {"self": _x})
        for op in ("abs neg exp sin cos tanh sigmoid relu gelu silu erf".split())
    ),
    *(Case(op, {"self": _p}) for op in "log sqrt rsqrt reciprocal".split()),
    # binary
    *(
        Case(op, {"self": _x, "other": _x})
        for op in "add sub mul maximum minimum eq_Tensor gt_Tensor".split()
    ),
    Case("div", {"self": _x, "other": _p}),
    Case("pow_Tensor_Tensor", {"self": _p, "exponent": _x}),
    Case("pow_Tensor_Scalar", {"self": _p, "exponent": 2}),
    Case("where", {"condition": mask("m", "n"), "self": _x, "other": _x}),
    # reductions
    Case("sum", {"self": _x, "dim": [1]}),
    Case("mean", {"self": _x, "dim": [1]}),
    Case("amax", {"self": _x, "dim": [1]}),
    Case("argmax", {"self": _x, "dim": 1}),
    Case("softmax", {"self": _x, "dim": 1}),
    Case("log_softmax", {"self": _x, "dim": 1}),
    Case("cumsum", {"self": _x, "dim": 1}),
    Case("topk", {"self": _x, "k": 1, "dim": 1}),
    Case("max", {"self": _x, "dim": 1}),
    # matmul
    Case("mm", {"self": _x, "mat2": _x}),
    Case("bmm", {"self": t(1, "m", "n"), "mat2": t(1, "n", "m")}),
    Case("addmm", {"self": _x, "mat1": _x, "mat2": _x}),
    Case("matmul", {"self": _x, "other": _x}),
    Case("linear", {"input": _x, "weight": _x, "bias": t("m")}),
    Case(
        "baddbmm",
        {"self": t(1, "m", "m"), "batch1": t(1, "m", "n"), "batch2": t(1, "n", "m")},
    ),
    # other
    Case("cat", {"tensors": [_x, _x], "dim": 0}),
    Case("clamp", {"self": _x, "min": -0.5, "max": 0.5}),
    Case("clamp_Tensor", {"self": _x, "min": t("m", "n", fill="unit"), "max": _p}),
    Case("embedding", {"weight": _x, "indices": index("m", high="m")}),
    Case("index_select", {"self": _x, "dim": 0, "index": index("m", high="m")}),
    Case("gather", {"self": _x, "dim": 1, "index": index("m", "n", high="n")}),
    Case("masked_fill", {"self": _x, "mask": mask("m", "n"), "value": -1.0}),
    Case(
        "native_layer_norm",
        {
            "input": _x,
            "normalized_shape": ["n"],
            "weight": t("n"),
            "bias": t("n"),
            "eps": 1e-5,
        },
    ),
    # losses, reduction='none': with 'mean' or 'sum' ATen's out= kernels
    # use the 0-d out as their elementwise buffer, resizing it (and warning)
    # on every call, which would time ATen's warning path.
    *(
        Case(op, {"self": _x, "target": _x, "reduction": 0})
        for op in "mse_loss smooth_l1_loss soft_margin_loss".split()
    ),
)

_scores = t("NH", "T", "C")  # attention scores against C context tokens

LLM: tuple[Case, ...] = (
    # activations and the residual stream
    Case("add", {"self": t("T", "H"), "other": t("T", "H")}, "residual"),
    Case("mul", {"self": t("T", "I"), "other": t("T", "I")}, "gate*up"),
    Case("silu", {"self": t("T", "I")}),
    Case("gelu", {"self": t("T", "I")}),
    Case("sigmoid", {"self": t("T", "I")}),
    Case("tanh", {"self": t("T", "I")}),
    Case("neg", {"self": t("T", "NH", "HD2")}, "rotary half"),
    Case("clamp", {"self": t("T", "H"), "min": -1.0, "max": 1.0}),
    # RMSNorm pieces and LayerNorm
    Case("pow_Tensor_Scalar", {"self": t("T", "H"), "exponent": 2}, "x^2"),
    Case("mean", {"self": t("T", "H"), "dim": [-1], "keepdim": True}, "rms"),
    Case("rsqrt", {"self": pos("T", 1)}),
    Case("div", {"self": t("T", "H"), "other": pos("T", 1)}, "normalise"),
    Case(
        "native_layer_norm",
        {
            "input": t("T", "H"),
            "normalized_shape": ["H"],
            "weight": t("H"),
            "bias": t("H"),
            "eps": 1e-5,
        },
    ),
    # attention (scores [NH, T, C])
    Case(
        "bmm",
        {"self": t("NH", "T", "HD"), "mat2": t("NH", "HD", "C")},
        "q.kT",
        SHORT_LOW_PRECISION,
    ),
    Case(
        "bmm", {"self": _scores, "mat2": t("NH", "C", "HD")}, "p.v", SHORT_LOW_PRECISION
    ),
    Case(
        "baddbmm",
        {
            "self": _scores,
            "batch1": t("NH", "T", "HD"),
            "batch2": t("NH", "HD", "C"),
            "alpha": 0.08838834764831845,
        },
        "scaled q.kT",
        SHORT_LOW_PRECISION,
    ),
    Case(
        "masked_fill",
        {"self": _scores, "mask": mask("T", "C"), "value": -1e4},
        "causal",
    ),
    Case("where", {"condition": mask("T", "C"), "self": _scores, "other": _scores}),
    Case("amax", {"self": _scores, "dim": [-1], "keepdim": True}),
    Case("sub", {"self": _scores, "other": t("NH", "T", 1)}, "stabilise"),
    Case("exp", {"self": _scores}),
    Case("sum", {"self": _scores, "dim": [-1], "keepdim": True}),
    Case("softmax", {"self": _scores, "dim": -1}),
    Case("cat", {"tensors": [t("C", "H"), t("T", "H")], "dim": 0}, "kv append"),
    # projections (7B layer shapes)
    Case(
        "mm",
        {"self": t("T", "H"), "mat2": t("H", "H")},
        "qkv/o proj",
        DECODE_ONLY_LOW_PRECISION,
    ),
    Case(
        "mm",
        {"self": t("T", "H"), "mat2": t("H", "I")},
        "gate/up proj",
        DECODE_ONLY_LOW_PRECISION,
    ),
    Case(
        "mm",
        {"self": t("T", "I"), "mat2": t("I", "H")},
        "down proj",
        DECODE_ONLY_LOW_PRECISION,
    ),
    Case(
        "linear",
        {"input": t("T", "H"), "weight": t("H", "H"), "bias": t("H")},
        "o proj",
        DECODE_ONLY_LOW_PRECISION,
    ),
    Case(
        "addmm",
        {"self": t("H"), "mat1": t("T", "H"), "mat2": t("H", "H")},
        "biased proj",
        DECODE_ONLY_LOW_PRECISION,
    ),
    Case(
        "matmul",
        {"self": t("T", "H"), "other": t("H", "H")},
        "proj",
        DECODE_ONLY_LOW_PRECISION,
    ),
    # embedding and sampling
    Case("embedding", {"weight": t("V", "H"), "indices": index("T", high="V")}),
    Case(
        "index_select", {"self": t("V", "H"), "dim": 0, "index": index("T", high="V")}
    ),
    Case("log_softmax", {"self": t("T", "V"), "dim": -1}, "logits"),
    Case("argmax", {"self": t("T", "V"), "dim": -1}, "greedy"),
    Case("max", {"self": t("T", "V"), "dim": -1}, "logits"),
    Case("topk", {"self": t("T", "V"), "k": 50, "dim": -1}, "top-50"),
    Case(
        "gather",
        {"self": t("T", "V"), "dim": 1, "index": index("T", 1, high="V")},
        "logprob",
    ),
)

# --quick: a few configuration ids (cases.py spells them), filtered by --ops.
QUICK: tuple[str, ...] = (
    "tiny/add/1/float32",
    "tiny/add/64/bfloat16",
    "tiny/abs/1/float32",
    "tiny/abs/64/float32",
    "tiny/mul/1/float32",
    "tiny/mm/64/float32",
    "tiny/sum/64/float32",
    "tiny/softmax/1/float32",
    "llm/add[residual]/T=1/float32",
    "llm/add[residual]/T=16/bfloat16",
    "llm/silu/T=16/float32",
    "llm/mm[qkv/o proj]/T=1/float32",
)
