"""What ran where (docs/observability.md): the call trace, the counters and
the strict native mode of the built module, from Python and (through the
environment) from a fresh interpreter. The C++ side: examples/cpp/main.cpp
(tests/test_cpp_example.py).

Which implementation must run is derived, not assumed: add, silu and
rms_norm have native CPU kernels for small float32 tensors (the manifest's
`native`), exp has none.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import pytest
import torch

from runtime_conftest_helpers import REPO, build_dir, manifest, subprocess_env


@pytest.fixture(autouse=True)
def _nothing_observes(ops):
    """Each test starts and ends with nothing observing: counting, tracing or
    a strict mode left on would change the other tests' calls."""
    assert ops._observe_flags() == 0
    yield
    ops.reset_stats(False)
    assert ops._observe_flags() == 0


def _native_on_cpu(name: str) -> bool:
    op = next(o for o in manifest().ops if o.name == name)
    return "float32" in op.implementations.native.get("cpu", ())


def test_native_facts_the_tests_rely_on():
    assert _native_on_cpu("add") and _native_on_cpu("rms_norm")
    assert not _native_on_cpu("exp")


def test_stats_count_per_op_implementation_and_path(ops):
    x, w, out = torch.randn(4, 6), torch.randn(6), torch.empty(4, 6)
    ops.reset_stats()
    for _ in range(3):
        ops.add(x, x, out=out)  # native
    ops.add(x.double(), x.double())  # no float64 kernel: torch
    ops.exp(x, out=out)  # no native kernel, out= given: the lane
    ops.exp(x)  # without out=: ATen's functional overload
    ops.rms_norm(x, w, 1e-6, out=out)  # a composite's native kernel
    ops.rms_norm(x, w, 1e-6, out=out, implementation="torch")  # its body
    stats = ops.stats()
    assert stats[("add", "native", "handle")] == 3
    assert sum(n for k, n in stats.items() if k[:2] == ("add", "torch")) == 1
    (exp_lane,) = [k for k in stats if k.op == "exp" and k.path.startswith("lane+")]
    assert stats[exp_lane] == 1 and exp_lane.implementation == "torch"
    assert exp_lane.path in ("lane+direct", "lane+dispatcher")
    assert sum(n for k, n in stats.items() if k.op == "exp") == 2
    assert stats[("rms_norm", "native", "handle")] == 1
    assert stats[("rms_norm", "composite", "handle")] == 1
    assert sum(stats.values()) == 8
    # Zeroed by reset_stats(), and nothing counted once it stops.
    ops.reset_stats()
    assert ops.stats() == {}
    ops.add(x, x, out=out)
    assert sum(ops.stats().values()) == 1
    ops.reset_stats(False)
    ops.add(x, x, out=out)
    assert ops.stats() == {}


def test_stats_sum_the_threads(ops):
    x, w = torch.randn(4, 6), torch.randn(6)
    ops.reset_stats()

    def work():
        out = torch.empty(4, 6)
        for _ in range(200):
            ops.add(x, x, out=out)
            ops.rms_norm(x, w, 1e-6, out=out)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = ops.stats()
    assert stats[("add", "native", "handle")] == 800
    assert stats[("rms_norm", "native", "handle")] == 800


def test_trace_records_each_call(ops):
    x, w, out = torch.randn(4, 6), torch.randn(6), torch.empty(4, 6)
    with ops.trace() as t:
        ops.add(x, x, out=out)
        ops.exp(x, out=out)
        ops.rms_norm(x.double(), w.double(), 1e-6)
        with pytest.raises(RuntimeError):
            ops.add(x, torch.randn(3), out=out)
    add, exp, rms, bad = t.records
    assert add == {
        "op": "add",
        "aten": "aten::add.out",
        "device": "cpu",
        "tensors": [
            {"name": "input", "dtype": "float32", "shape": [4, 6]},
            {"name": "other", "dtype": "float32", "shape": [4, 6]},
            {"name": "out", "dtype": "float32", "shape": [4, 6]},
        ],
        "implementation": "native",
        "path": "handle",
    }
    assert exp["implementation"] == "torch" and exp["path"].startswith("lane+")
    assert "declined" not in exp  # nothing to decline: exp has no native kernel
    assert rms["aten"] is None and rms["implementation"] == "composite"
    assert rms["tensors"][0] == {"name": "input", "dtype": "float64", "shape": [4, 6]}
    assert "no native kernel applies to this device, dtype and size" in rms["declined"]
    # A call that raised is traced with its error, and the kernel's reason.
    assert "must match the size of tensor b" in bad["error"]
    assert "the native kernel declined this call" in bad["declined"]


def test_trace_into_a_path_and_a_file_object(ops, tmp_path):
    x = torch.randn(3)
    path = tmp_path / "calls.jsonl"
    with ops.trace(path) as t:
        ops.add(x, x)
        ops.exp(x)
    lines = path.read_text().splitlines()
    assert [json.loads(line)["op"] for line in lines] == ["add", "exp"]
    assert t.records == [json.loads(line) for line in lines]

    class Sink:
        def __init__(self):
            self.text = ""

        def write(self, s):
            self.text += s

    sink = Sink()
    with ops.trace(sink):
        ops.exp(x)
    (line,) = sink.text.splitlines()
    assert json.loads(line)["op"] == "exp"
    # Off again, and not nested.
    with ops.trace():
        with pytest.raises(RuntimeError, match="traced already"):
            with ops.trace():
                pass
    with pytest.raises(TypeError, match="file must be a path"):
        with ops.trace(42):
            pass


def test_require_native(ops):
    x, out = torch.randn(4, 6), torch.empty(4, 6)
    with ops.require_native(["add"]):
        ops.add(x, x, out=out)  # the native kernel takes it
        ops.exp(x, out=out)  # not required
        with pytest.raises(NotImplementedError) as e:
            ops.add(x.double(), x.double())
        assert "add(): require_native: the call would fall back to PyTorch" in str(
            e.value
        )
        assert "no native kernel applies to this device, dtype and size" in str(e.value)
        with pytest.raises(NotImplementedError, match="the native kernel declined"):
            ops.add(x, torch.randn(3), out=out)
        # implementation="torch" asks for PyTorch: not a fallback.
        ops.add(x.double(), x.double(), implementation="torch")
    ops.add(x.double(), x.double())  # off again
    with ops.require_native(True):
        for call in (lambda: ops.exp(x, out=out), lambda: ops.exp(x)):
            with pytest.raises(
                NotImplementedError, match="the op has no native kernel"
            ):
                call()
        # Nested blocks: the union holds, and the outer one still after.
        with ops.require_native("add"):
            with pytest.raises(NotImplementedError):
                ops.exp(x)
        with pytest.raises(NotImplementedError):
            ops.exp(x)
    with pytest.raises(ValueError, match="has no op 'no_such_op'"):
        ops.require_native(["add", "no_such_op"])


def test_environment_variables_from_a_fresh_process(tmp_path):
    """INFINIOPS_TRACE (a path), INFINIOPS_STATS and INFINIOPS_REQUIRE_NATIVE
    are read once when the library loads: what a C++ caller uses too."""
    trace = tmp_path / "trace.jsonl"
    script = textwrap.dedent(f"""
        import torch
        from infiniops_codegen.runtime import load
        ops = load({str(build_dir())!r})
        x = torch.randn(4, 6)
        ops.add(x, x)
        ops.exp(x, out=torch.empty(4, 6))
        print(sorted((k.op, k.implementation, n) for k, n in ops.stats().items()))
        try:
            ops.add(x.double(), x.double())
        except NotImplementedError as e:
            print("raised:", str(e).split(":")[0])
        """)
    env = subprocess_env()
    env.update(
        INFINIOPS_TRACE=str(trace), INFINIOPS_STATS="1", INFINIOPS_REQUIRE_NATIVE="add"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == "[('add', 'native', 1), ('exp', 'torch', 1)]"
    assert out[1] == "raised: add()"
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(r["op"], r["implementation"]) for r in records] == [
        ("add", "native"),
        ("exp", "torch"),
        ("add", "torch"),
    ]
    assert "require_native" in records[2]["error"]
