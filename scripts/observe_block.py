"""The small decoder block of tests/test_compile.py, run eagerly and compiled
with Inductor under the library's counters, compiled against eager in
float32 and bfloat16, and once under its trace: the outputs shown in
docs/observability.md and docs/compile.md.

    python scripts/observe_block.py [BUILD_DIR]
"""

from __future__ import annotations

import json
import sys

import torch

from infiniops_codegen.runtime import load


def block(ops, tokens, p):
    """embedding, rms_norm, linear, scaled_dot_product_attention (GQA), add,
    rms_norm, linear, silu_and_mul, linear, add, softmax."""
    b, t = tokens.shape
    h = ops.embedding(p["embed"], tokens)
    x = ops.rms_norm(h, p["norm1"], 1e-6)
    q = ops.linear(x, p["q"]).view(b, t, 4, 4).transpose(1, 2)
    k, v = ops.linear(x, p["kv"]).view(b, t, 2, 2, 4).unbind(2)
    a = ops.scaled_dot_product_attention(
        q, k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True
    )
    h = ops.add(h, ops.linear(a.transpose(1, 2).reshape(b, t, 16), p["o"]))
    x = ops.rms_norm(h, p["norm2"], 1e-6)
    h = ops.add(h, ops.linear(ops.silu_and_mul(ops.linear(x, p["up"])), p["down"]))
    return ops.softmax(ops.linear(h, p["head"]), -1)


def main(argv: list[str]) -> int:
    ops = load(argv[0] if argv else None)
    torch.manual_seed(0)
    shapes = {
        "embed": (32, 16),
        "norm1": (16,),
        "norm2": (16,),
        "q": (16, 16),
        "kv": (16, 16),
        "o": (16, 16),
        "up": (48, 16),
        "down": (16, 24),
        "head": (32, 16),
    }
    p = {name: torch.randn(*shape) / 4 for name, shape in shapes.items()}
    tokens = torch.randint(0, 32, (2, 8))

    print("$ eager: ops.reset_stats(); block(...); ops.stats()")
    ops.reset_stats()
    block(ops, tokens, p)
    for key, calls in sorted(ops.stats().items()):
        print(f"{calls:3}  {key.op:30} {key.implementation:10} {key.path}")

    print("\n$ torch.compile(block, fullgraph=True): the same counters")
    compiled = torch.compile(block, fullgraph=True)
    compiled(ops, tokens, p)  # compiles
    ops.reset_stats()
    compiled(ops, tokens, p)
    for key, calls in sorted(ops.stats().items()):
        print(f"{calls:3}  {key.op:30} {key.implementation:10} {key.path}")
    ops.reset_stats(False)

    print("\n$ compiled vs eager (max abs difference of the block's output)")
    for dtype in (torch.float32, torch.bfloat16):
        q = {name: w.to(dtype) for name, w in p.items()}
        eager = block(ops, tokens, q)
        torch._dynamo.reset()
        out = torch.compile(block, fullgraph=True)(ops, tokens, q)
        diff = (out.float() - eager.float()).abs().max().item()
        print(f"{str(dtype):15} {diff:.3g}  (output {tuple(out.shape)}, {out.dtype})")

    print("\n$ with ops.trace() as t: block(...)  (its first four lines)")
    with ops.trace() as t:
        block(ops, tokens, p)
    for record in t.records[:4]:
        print(json.dumps(record))
    print(f"... {len(t.records)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
