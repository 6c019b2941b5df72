"""Expanding the configuration table (configs.py) into concrete configurations,
and materialising their tensors (in the worker processes)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from ..model.manifest import INPUT, Op
from . import configs as C

# An attribute that takes the configuration's dtype (derived configurations).
CASE_DTYPE = "<case dtype>"


@dataclass(frozen=True)
class TensorArg:
    shape: tuple[int, ...]
    fill: str  # randn | pos | unit | index | mask | spd | literal
    dtype: str
    high: int
    literal: object = field(default=None, compare=False)  # fill="literal"

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class Config:
    id: str  # e.g. "tiny/add/64/bfloat16", "llm/mm[qkv/o proj]/T=16/float32"
    family: str  # "tiny" | "llm"
    op: str
    label: str
    size: int  # tiny: elements; llm: tokens
    dtype: str
    args: dict  # schema name -> TensorArg | list[TensorArg] | literal
    source: str = "table"  # "table" (configs.py) or "samples" (derive.py)

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    @property
    def shape_text(self) -> str:
        """The tensor arguments' shapes, e.g. "[16,4096] [4096,4096]"."""
        parts = []
        for v in self.args.values():
            for item in v if isinstance(v, list) else [v]:
                if isinstance(item, TensorArg):
                    parts.append("[" + ",".join(map(str, item.shape)) + "]")
        return " ".join(parts)


def key_numel(config: Config, op: Op) -> int:
    """Elements of the op's first tensor argument (a native kernel's size
    limit applies to it)."""
    for a in op.arguments:
        value = config.args.get(a.name)
        if isinstance(value, list) and value:
            value = value[0]
        if a.role == INPUT and isinstance(value, TensorArg):
            return value.numel
    return 0


def _dim(d: C.Dim, symbols: dict[str, int]) -> int:
    return symbols[d] if isinstance(d, str) else d


def _resolve(value, symbols: dict[str, int], dtype: str):
    if isinstance(value, C.Tensor):
        return TensorArg(
            shape=tuple(_dim(d, symbols) for d in value.shape),
            fill=value.fill,
            dtype=value.dtype or dtype,
            high=_dim(value.high, symbols),
        )
    if isinstance(value, list):
        return [_resolve(v, symbols, dtype) for v in value]
    if isinstance(value, str) and value in symbols:
        return symbols[value]
    return value


def _config(family: str, case: C.Case, size: int, dtype: str, symbols) -> Config:
    name = f"{case.op}[{case.label}]" if case.label else case.op
    size_text = str(size) if family == "tiny" else f"T={size}"
    args = {k: _resolve(v, symbols, dtype) for k, v in case.args.items()}
    return Config(
        f"{family}/{name}/{size_text}/{dtype}",
        family,
        case.op,
        case.label,
        size,
        dtype,
        args,
    )


def all_configs() -> list[Config]:
    """Every configuration of the full sweep, tiny family first."""
    result = []
    for case in C.TINY:
        for size, symbols in C.TINY_SIZES.items():
            for dtype in C.TINY_DTYPES:
                result.append(_config("tiny", case, size, dtype, symbols))
    for case in C.LLM:
        for dtype in C.LLM_DTYPES:
            for tokens in case.tokens.get(dtype, C.LLM_TOKENS):
                symbols = dict(C.LLM_DIMS, T=tokens)
                result.append(_config("llm", case, tokens, dtype, symbols))
    return result


def select(quick: bool, ops: set[str] | None) -> list[Config]:
    """The table's configurations: the full sweep or the quick ids, of the
    named ops only when ops is given. With --quick, a named op without a
    quick id gets its first tiny configuration."""
    configs = all_configs()
    if ops is not None:
        configs = [c for c in configs if c.op in ops]
    if quick:
        wanted = set(C.QUICK)
        chosen = [c for c in configs if c.id in wanted]
        if ops is not None:
            covered = {c.op for c in chosen}
            for c in configs:
                if c.op not in covered and c.family == "tiny":
                    chosen.append(c)
                    covered.add(c.op)
        ids = {c.id for c in chosen}
        configs = [c for c in configs if c.id in ids]
    return configs


def materialise(config: Config, device: str = "cpu"):
    """The configuration's argument values (tensors made on the CPU from its
    seed, the same in every process, then moved to device)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(config.seed)

    def make(spec: TensorArg):
        return _make(spec).to(device)

    def _make(spec: TensorArg):
        dtype = getattr(torch, spec.dtype)
        shape = spec.shape
        if spec.fill == "literal":
            return _literal(spec)
        if spec.fill == "index":
            return torch.randint(
                0, spec.high, shape, generator=gen, dtype=dtype, device="cpu"
            )
        if spec.fill == "mask" or dtype == torch.bool:
            return torch.rand(shape, generator=gen, device="cpu") < 0.5
        if not dtype.is_floating_point:  # small non-zero integers
            v = torch.randint(
                -5, 6, shape, generator=gen, dtype=torch.int64, device="cpu"
            )
            return torch.where(v == 0, torch.ones_like(v), v).to(dtype)
        if spec.fill == "pos":
            base = torch.rand(shape, generator=gen, device="cpu") + 0.5
        elif spec.fill == "unit":
            base = torch.rand(shape, generator=gen, device="cpu") * 1.8 - 0.9
        elif spec.fill == "spd":  # symmetric positive definite (last two dims)
            a = torch.randn(shape, generator=gen, dtype=torch.float64, device="cpu")
            eye = torch.eye(shape[-1], dtype=torch.float64, device="cpu")
            base = a @ a.mT / shape[-1] + eye
        else:
            base = torch.randn(shape, generator=gen, device="cpu")
        return base.to(dtype)

    def value(v):
        if isinstance(v, TensorArg):
            return make(v)
        if isinstance(v, list):
            return [value(x) for x in v]
        if isinstance(v, str) and v == CASE_DTYPE:
            return getattr(torch, config.dtype)
        return v

    return {name: value(v) for name, v in config.args.items()}


def _literal(spec: TensorArg):
    """A `tensors` hint of the harness: ints stay int64 and bools bool, floats
    take the configuration's dtype; {value, dtype} fixes the dtype."""
    import torch

    literal = spec.literal
    if isinstance(literal, dict):
        dtype = getattr(torch, literal["dtype"])
        return torch.tensor(literal["value"], dtype=dtype, device="cpu")
    t = torch.tensor(literal, device="cpu")
    if t.is_floating_point():
        dtype = getattr(torch, spec.dtype)
        return t.to(dtype if dtype.is_floating_point else torch.float32)
    return t
