"""The ops inside PyTorch 2's compiler stack (docs/compile.md): dispatcher
ops, torch.compile without graph breaks, torch.export, autograd, opcheck."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from runtime_conftest_helpers import REPO, build_dir  # noqa: E402

torch._dynamo = pytest.importorskip("torch._dynamo")


@pytest.fixture(autouse=True)
def _fresh_inductor_cache(tmp_path, monkeypatch):
    # Inductor's FX graph cache keys on the graph, not on the ops' tags or
    # kernels: a graph compiled against another build would be reused.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _graph(f, *args, **options):
    """The FX graph Dynamo hands the backend (fullgraph: no break)."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch.compile(f, backend=backend, fullgraph=True, **options)(*args)
    assert len(graphs) == 1
    return graphs[0]


def _fresh_python(script: str) -> subprocess.CompletedProcess:
    """The script in a fresh interpreter (this one's path); it must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _targets(gm) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def test_every_op_is_a_dispatcher_op_with_aten_s_schema(ops):
    manifest = json.loads((build_dir() / "manifest.json").read_text())
    namespace = getattr(torch.ops, ops.__name__)
    for op in manifest["ops"]:
        d = op["dispatcher"]
        for ours, aten in (
            (d["out"], op["aten"]),
            (d["functional"], d["aten_functional"]),
        ):
            base, _, overload = ours.partition(".")
            overload_ = getattr(getattr(namespace, base), overload)
            schema = str(overload_._schema)
            assert schema.startswith(f"{ops.__name__}::"), schema
            if aten is None:  # a composite: its own signature
                continue
            abase, _, aover = aten.partition(".")
            twin = getattr(getattr(torch.ops.aten, abase), aover or "default")
            assert schema.split("::", 1)[1] == str(twin._schema).split("::", 1)[1]
            # torch's tags, but `out` where Inductor would pass a keyword-only
            # argument twice (render/torch_library.py)
            assert set(overload_.tags) <= set(twin.tags)
            assert set(twin.tags) - set(overload_.tags) <= {torch.Tag.out}


def test_dispatcher_kernels_call_the_library(ops):
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    out = torch.empty(4, 6)
    ns = getattr(torch.ops, ops.__name__)
    assert ns.add.out(x, y, alpha=2, out=out) is out
    torch.testing.assert_close(out, torch.add(x, y, alpha=2))
    torch.testing.assert_close(ns.add.Tensor(x, y), x + y)
    w = torch.randn(6)
    torch.testing.assert_close(
        ns.rms_norm(x, w, 1e-6), torch.nn.functional.rms_norm(x, (6,), w, 1e-6)
    )
    # A wrong out= geometry is resized as ATen resizes (same warning).
    small = torch.empty(0)
    ns.add.out(x, y, out=small)
    assert small.shape == (4, 6)


def test_autograd_through_the_twin_and_composite_bodies(ops):
    ns = getattr(torch.ops, ops.__name__)
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    w = torch.randn(8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: ns.mul.Tensor(a, a), (x,))
    assert torch.autograd.gradcheck(lambda a, b: ns.rms_norm(a, b, 1e-6), (x, w))
    assert torch.autograd.gradcheck(lambda a: ns.silu_and_mul(a), (x,))
    assert torch.autograd.gradcheck(lambda a: ns.softmax.int(a, 1), (x,))
    # out= takes no autograd, as ATen's out= overloads: an error, never a
    # silently missing gradient.
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ns.add.out(x, x, out=torch.empty(3, 8, dtype=torch.float64))


def test_compile_fullgraph_traces_to_the_dispatcher_ops(ops):
    w = torch.randn(6)
    f = lambda x: ops.rms_norm(ops.add(x, x), w, 1e-6)  # noqa: E731
    x = torch.randn(4, 6)
    gm = _graph(f, x)
    name = ops.__name__
    assert _targets(gm) == [f"{name}.add", f"{name}.rms_norm"]
    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(x), f(x))


def test_compile_out_and_keywords(ops):
    def f(x, y, o):
        ops.mul(x, y, out=o)
        return ops.add(o, x, alpha=2), ops.softmax(o, dim=-1)

    x, y = torch.randn(4, 6), torch.randn(4, 6)
    o1, o2 = torch.empty(4, 6), torch.empty(4, 6)
    eager = f(x, y, o1)
    compiled = torch.compile(f, fullgraph=True)(x, y, o2)
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(o2, o1)


def test_compile_dynamic_shapes(ops):
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("inductor")
    w = torch.randn(6)
    f = lambda x: ops.silu_and_mul(ops.rms_norm(x, w, 1e-6)).sum(-1)  # noqa: E731
    compiled = torch.compile(f, backend=counter, fullgraph=True, dynamic=True)
    for rows in (2, 5, 9):
        x = torch.randn(rows, 6)
        torch.testing.assert_close(compiled(x), f(x))
    assert counter.frame_count == 1


class Block(torch.nn.Module):
    """A small decoder block written with the ops."""

    def __init__(self, ops, vocab=32, dim=16, heads=4, kv_heads=2, hidden=24):
        super().__init__()
        self.ops, self.heads, self.kv_heads = ops, heads, kv_heads
        self.embed = torch.nn.Parameter(torch.randn(vocab, dim))
        self.norm1 = torch.nn.Parameter(torch.rand(dim) + 0.5)
        self.norm2 = torch.nn.Parameter(torch.rand(dim) + 0.5)
        self.q = torch.nn.Parameter(torch.randn(heads * 4, dim) / 4)
        self.kv = torch.nn.Parameter(torch.randn(2 * kv_heads * 4, dim) / 4)
        self.o = torch.nn.Parameter(torch.randn(dim, heads * 4) / 4)
        self.up = torch.nn.Parameter(torch.randn(2 * hidden, dim) / 4)
        self.down = torch.nn.Parameter(torch.randn(dim, hidden) / 4)
        self.head = torch.nn.Parameter(torch.randn(vocab, dim) / 4)

    def forward(self, tokens):
        ops = self.ops
        b, t = tokens.shape
        h = ops.embedding(self.embed, tokens)
        x = ops.rms_norm(h, self.norm1, 1e-6)
        q = ops.linear(x, self.q).view(b, t, self.heads, 4).transpose(1, 2)
        k, v = ops.linear(x, self.kv).view(b, t, 2, self.kv_heads, 4).unbind(2)
        a = ops.scaled_dot_product_attention(
            q, k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True
        )
        h = ops.add(h, ops.linear(a.transpose(1, 2).reshape(b, t, -1), self.o))
        x = ops.rms_norm(h, self.norm2, 1e-6)
        h = ops.add(h, ops.linear(ops.silu_and_mul(ops.linear(x, self.up)), self.down))
        return ops.softmax(ops.linear(h, self.head), -1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_llm_block_compiled_with_inductor(ops, dtype):
    torch.manual_seed(0)
    block = Block(ops).to(dtype)
    tokens = torch.randint(0, 32, (2, 5))
    with torch.no_grad():
        eager = block(tokens)
        gm = _graph(block, tokens)
        targets = set(_targets(gm))
        name = ops.__name__
        for op in ("embedding", "rms_norm", "linear", "silu_and_mul", "add", "softmax"):
            assert f"{name}.{op}" in targets, targets
        assert f"{name}.scaled_dot_product_attention" in targets
        compiled = torch.compile(block, fullgraph=True)
        first = compiled(tokens)
        ops._debug_native_runs(True)
        result = compiled(tokens)
        native = ops._debug_native_runs(True)
    tol = {} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    torch.testing.assert_close(result, eager, **tol)
    torch.testing.assert_close(first, result)
    # Inside the compiled program the library's native kernels ran (counted
    # by the library): both residual adds, both rms_norms, silu_and_mul.
    assert native == {"add": 2, "rms_norm": 2, "silu_and_mul": 1}, native


@pytest.mark.parametrize("strict", [False, True])
def test_export_save_load_in_a_fresh_process(ops, tmp_path, strict):
    w = torch.randn(6)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(w.clone())

        def forward(self, x):
            return ops.softmax(ops.rms_norm(ops.add(x, x), self.w, 1e-6), -1)

    x = torch.randn(4, 6)
    m = M()
    # strict: Dynamo traces (the module's polyfills); non-strict (torch's
    # default): the module's Python runs on fake tensors, which the binding
    # hands to the dispatcher ops.
    ep = torch.export.export(m, (x,), strict=strict)
    name = ops.__name__
    assert _targets(ep.graph_module) == [
        f"{name}.add.Tensor",
        f"{name}.rms_norm.default",
        f"{name}.softmax.int",
    ]
    path = tmp_path / "m.pt2"
    torch.export.save(ep, path)
    with torch.no_grad():
        expected = m(x)
    torch.save({"x": x, "expected": expected}, tmp_path / "data.pt")
    script = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {str(build_dir())!r})
        import {name}
        ep = torch.export.load({str(path)!r})
        data = torch.load({str(tmp_path / "data.pt")!r})
        torch.testing.assert_close(ep.module()(data["x"]), data["expected"])
        print("ok")
        """)
    done = _fresh_python(script)
    assert done.stdout.strip() == "ok"


def _counts(results) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def test_opcheck_on_every_op_of_the_build(ops):
    """torch.library.opcheck's four tests (test_autograd_registration where
    an input can require grad) on both overloads of every op, over the
    harness's samples; what cannot pass is in tests/skips.yaml (opcheck)."""
    from infiniops_codegen.harness import opcheck

    opcheck.load_skips(REPO / "tests" / "skips.yaml")
    results = opcheck.check(str(build_dir()))
    failed = [r for r in results if r.status == "failed"]
    assert not failed, failed
    for r in results:
        if r.status == "not applicable":
            assert r.reason, r
    counts = _counts(results)
    print(f"opcheck: {len(results)} overloads: {counts}")
    assert counts["passed"] >= len(results) - 5


def test_opcheck_leaves_out_an_op_the_harness_skips(ops, tmp_path):
    """An op the correctness harness skips whole (no reference torch can
    compute) is not sampled: it counts as not applicable, with the skip's
    reason (the full set's _nnpack_spatial_convolution crashed the process
    in torch's own kernel while its sample was searched)."""
    from infiniops_codegen.harness import opcheck

    skips = tmp_path / "skips.yaml"
    skips.write_text(
        "harness:\n"
        "  - op: abs\n"
        "    reason: no reference here\n"
        "  - op: neg\n"
        "    variants: [transposed]\n"
        "    reason: one layout only\n"
    )
    try:
        opcheck.load_skips(skips)
        results = opcheck.check(str(build_dir()), ["abs", "neg"])
    finally:
        opcheck.load_skips(REPO / "tests" / "skips.yaml")
    by_op = {}
    for r in results:
        by_op.setdefault(r.op, []).append(r)
    assert [(r.status, r.reason) for r in by_op["abs"]] == [
        ("not applicable", "harness skip: no reference here")
    ]
    # A skip of some layouts only leaves the op checked.
    assert {r.status for r in by_op["neg"]} == {"passed"}, by_op["neg"]


def test_opcheck_command_checks_in_a_child_process(ops):
    """The command checks the ops in a child process (a crash of one check
    is then counted, not the end of the run) and reports what it found."""
    done = subprocess.run(
        [sys.executable, "-m", "infiniops_codegen.harness.opcheck"]
        + ["--build-dir", str(build_dir()), "--ops", "abs,neg"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "4 passed", done.stdout


@pytest.mark.own_build("a build of its own: a project with a factory op")
def test_a_factory_op_picks_its_backend_and_is_functionalized(tmp_path):
    """An op with no tensor argument (zeros.default, as the full set's
    factories) runs through the dispatcher: a BackendSelect kernel picks the
    backend from its dtype, layout and device, as ATen's do. Its out=
    overload is functionalized through the functional one, with the output's
    options (as ATen's zeros.out is). opcheck's four tests pass on both."""
    from click.testing import CliRunner

    from infiniops_codegen.cli import main

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ops.yaml").write_text("ops:\n  - zeros.out\n")
    d = tmp_path / "b"
    args = [
        "--project",
        str(REPO),
        "build",
        "--specs",
        str(specs),
        "--build-dir",
        str(d),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "infiniops_codegen.harness.opcheck",
            "--build-dir",
            str(d),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "2 passed", done.stdout
    script = textwrap.dedent(f"""
        import torch
        from infiniops_codegen.runtime import load
        from infiniops_codegen.runtime.torch_ops import library
        ops = load({str(d)!r})
        library(ops.__name__).ensure()
        ns = getattr(torch.ops, ops.__name__)
        z = ns.zeros.default([2, 3], dtype=torch.float64)
        assert torch.equal(z, torch.zeros(2, 3, dtype=torch.float64)), z
        with torch._subclasses.FakeTensorMode():
            f = ns.zeros.default([4], dtype=torch.int32)
        assert (f.shape, f.dtype) == ((4,), torch.int32), f
        out = torch.ones(2, 2, dtype=torch.float64)
        g = torch.compile(lambda o: ns.zeros.out([2, 2], out=o), fullgraph=True)
        r = g(out)
        assert torch.equal(out, torch.zeros(2, 2, dtype=torch.float64)), out
        print("ok")
        """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_gradcheck_on_every_differentiable_op(ops):
    """torch.autograd.gradcheck (float64) through every functional overload
    with a differentiable output; each op left out says why (no floating
    input, an integer or bool output, random, or torch's own derivative
    missing or failing on the same sample)."""
    from infiniops_codegen.harness import opcheck

    results = opcheck.check(str(build_dir()), gradcheck=True)
    failed = [r for r in results if r.status == "failed"]
    assert not failed, failed
    assert all(r.reason for r in results if r.status == "not applicable")
    print(f"gradcheck: {len(results)} ops: {_counts(results)}")
    assert _counts(results)["passed"] >= 150


def test_import_registers_nothing_until_needed(ops):
    script = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {str(build_dir())!r})
        import {ops.__name__} as ops
        assert "torch._dynamo" not in sys.modules
        try:
            torch._C._dispatch_find_schema_or_throw("{ops.__name__}::add", "out")
            print("registered")
        except RuntimeError:
            print("not yet")
        getattr(torch.ops, "{ops.__name__}").add.out
        torch._C._dispatch_find_schema_or_throw("{ops.__name__}::add", "out")
        print("now")
        """)
    done = _fresh_python(script)
    assert done.stdout.split() == ["not", "yet", "now"]
