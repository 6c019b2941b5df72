"""`infiniops-codegen bench`: the configuration table, the call paths and
their floors (generated source, and a compiled floor doing each path's work),
the report's exclusions, the publishing guard, and one real
`bench --quick --ops add,abs,rms_norm` run (its files and their fields; no
timing is asserted anywhere: the machine is shared)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import builder
from infiniops_codegen.model import manifest
from infiniops_codegen.bench import (
    calls,
    cases,
    configs,
    derive,
    floor,
    gitstate,
    main,
    paths,
    report,
    runner,
)

REPO = Path(__file__).resolve().parent.parent

FULL_CONFIGS, TINY_CONFIGS, LLM_CONFIGS = 519, 312, 207
TABLE_OPS, LLM_OPS = 52, 34


@pytest.fixture(scope="module")
def manifest_ops() -> dict[str, manifest.Op]:
    return manifest.generated().by_name()


# --- The configuration table -------------------------------------------------------


def test_full_sweep_size():
    all_configs = cases.all_configs()
    assert len(all_configs) == FULL_CONFIGS
    assert sum(c.family == "tiny" for c in all_configs) == TINY_CONFIGS
    assert sum(c.family == "llm" for c in all_configs) == LLM_CONFIGS
    assert len({c.op for c in all_configs}) == TABLE_OPS
    assert len({c.op for c in all_configs if c.family == "llm"}) == LLM_OPS
    assert len({c.id for c in all_configs}) == FULL_CONFIGS
    # tiny: every op at 1 and 64 elements in three dtypes
    assert TINY_CONFIGS == TABLE_OPS * 2 * 3
    assert {c.size for c in all_configs if c.family == "tiny"} == {1, 64}
    assert {c.size for c in all_configs if c.family == "llm"} == {1, 16, 128}
    assert {c.dtype for c in all_configs} == {"float32", "bfloat16", "float16"}
    assert {c.source for c in all_configs} == {"table"}


def test_tiny_configs_have_1_or_64_elements(manifest_ops):
    for c in cases.all_configs():
        if c.family == "tiny":
            assert cases.key_numel(c, manifest_ops[c.op]) == c.size, c.id


def test_quick_selection():
    quick = [c.id for c in cases.select(True, None)]
    assert quick == [c.id for c in cases.all_configs() if c.id in configs.QUICK]
    assert len(quick) == len(configs.QUICK) == 12
    # A named op without a quick id gets its first tiny configuration.
    named = [c.id for c in cases.select(True, {"add", "abs", "gelu"})]
    assert named == [
        "tiny/abs/1/float32",
        "tiny/abs/64/float32",
        "tiny/gelu/1/float32",
        "tiny/add/1/float32",
        "tiny/add/64/bfloat16",
        "llm/add[residual]/T=1/float32",
        "llm/add[residual]/T=16/bfloat16",
    ]
    assert len(cases.select(False, {"add"})) == 6 + 6  # tiny 2x3, llm 3+3


def test_quick_selection_of_this_build_is_the_quick_set(manifest_ops):
    """A build with every op of the quick set (this repository's) times
    exactly it, whatever other ops it has."""
    said = []
    chosen = main._select(True, None, manifest_ops, said.append)
    assert [c.id for c in chosen] == [c.id for c in cases.select(True, None)]
    assert said == []


def _project_ops(tmp_path, lines: str) -> dict[str, manifest.Op]:
    """The manifest ops of a user's project with these spec lines."""
    import json as json_

    from infiniops_codegen.render import pipeline

    specs = tmp_path / "op_specs"
    specs.mkdir()
    (specs / "ops.yaml").write_text("ops:\n" + lines)
    data = json_.loads(pipeline.generate(specs).files["manifest.json"])
    return manifest.from_data(data).by_name()


def test_quick_selection_of_a_project_takes_its_own_ops(tmp_path):
    """`bench --quick` in a project without the quick set's ops: its own ops
    fill the quick set's places (7 ops), native kernels first; quick ops it
    has keep their configurations."""
    entries = _project_ops(
        tmp_path,
        "  - abs.out\n  - hypot.out\n  - atan2.out\n  - copysign.out\n"
        "  - erfinv.out\n  - nextafter.out\n  - logaddexp.out\n"
        "  - fmod.Tensor_out\n  - {aten: neg.out, native: [cpu]}\n",
    )
    places = len({c.op for c in cases.select(True, None)})
    assert places == 7
    said = []
    chosen = main._select(True, None, entries, said.append)
    assert [c.id for c in chosen] == [
        "tiny/abs/1/float32",  # the quick set's own
        "tiny/abs/64/float32",
        "tiny/neg/1/float32",  # a native kernel: first; in the table
        "tiny/atan2[sample]/24/float32",  # then in manifest order
        "tiny/copysign[sample]/24/float32",
        "tiny/erfinv[sample]/24/float32",
        "tiny/fmod_Tensor[sample]/24/float32",
        "tiny/hypot[sample]/24/float32",
    ]
    assert len({c.op for c in chosen}) == places
    assert said == [
        "note: the after build lacks add, mm, mul, silu, softmax, sum of the "
        "quick set: its own neg, atan2, copysign, erfinv, fmod_Tensor, hypot instead"
    ]


def test_the_full_sweep_of_a_build_without_table_ops_says_what_to_do(
    tmp_path, monkeypatch
):
    """Without --quick, a build none of whose ops the table has (a user's
    project) is told how to time it, before any build is made."""
    from types import SimpleNamespace

    entries = _project_ops(tmp_path, "  - hypot.out\n")
    after = SimpleNamespace(manifest=SimpleNamespace(by_name=lambda: entries))
    monkeypatch.setattr(main.builds, "ensure_after", lambda d, echo: after)
    with pytest.raises(main.BenchUsageError) as e:
        main.run_bench(out=tmp_path / "out", echo=lambda *a: None)
    assert "none of the configuration table's ops is in " in str(e.value)
    assert "name the ops to time with --ops" in str(e.value)


def test_config_arguments_are_schema_arguments(manifest_ops):
    for c in cases.all_configs():
        entry = manifest_ops[c.op]
        names = {a.name for a in entry.arguments if a.role != "output"}
        assert set(c.args) <= names, c.id
        assert not entry.composite, c.id


def test_configurations_derived_from_the_harness_samples(manifest_ops):
    (quick,) = derive.derive(manifest_ops["hardtanh"], quick=True)
    assert quick.id == "tiny/hardtanh[sample]/24/float32"
    assert quick.source == "samples" and quick.family == "tiny"
    full = derive.derive(manifest_ops["hardtanh"], quick=False)
    assert [c.dtype for c in full] == ["float32", "bfloat16", "float16"]
    # A composite: compared with its reference expression.
    (rms,) = derive.derive(manifest_ops["rms_norm"], quick=True)
    assert rms.args["input"].shape == (4, 6) and rms.args["weight"].shape == (6,)
    # Integer-only ops fall back to integer dtypes.
    ints = derive.derive(manifest_ops["bitwise_and_Tensor"], quick=False)
    assert [c.dtype for c in ints] == ["int64", "bool"]


# --- Paths ----------------------------------------------------------------------------


def test_default_and_applicable_paths(manifest_ops):
    add, abs_, softmax = (manifest_ops[n] for n in ("add", "abs", "softmax"))
    limit = paths.native_limit(add, "float32")
    assert limit > 64
    assert paths.default_path(add, "float32", 64) == "native"
    assert paths.default_path(add, "float32", limit + 1) == "direct"
    assert paths.default_path(add, "int64", 1) == "direct"
    assert paths.applicable(add, "float32") == (
        "native",
        "direct",
        "dispatcher",
        "from_blob",
    )
    assert paths.applicable(add, "int64") == ("direct", "dispatcher", "from_blob")
    assert paths.default_path(abs_, "float32", 1) == "direct"
    assert paths.default_path(softmax, "float32", 1) == "dispatcher"
    assert paths.applicable(softmax, "float32") == ("dispatcher", "from_blob")
    rms = manifest_ops["rms_norm"]
    assert paths.applicable(rms, "float32") == ("native", "dispatcher", "from_blob")


def test_paths_off_the_cpu(manifest_ops):
    add, abs_ = manifest_ops["add"], manifest_ops["abs"]
    # CUDA tensors: the nvidia kernels, never at::cpu::.
    assert paths.platform("cuda:0") == "nvidia"
    assert paths.applicable(add, "float32", "cuda") == (
        "native",
        "dispatcher",
        "from_blob",
    )
    assert paths.default_path(abs_, "float32", 1, "cuda") == "dispatcher"
    assert paths.from_blob_inner(abs_, "cuda") == "dispatcher"
    assert [p for p in paths.PATHS if paths.has_floor(p, "cuda")] == [
        "dispatcher",
        "from_blob",
    ]
    assert all(paths.has_floor(p, "cpu") for p in paths.PATHS)


def test_forcing_a_path_changes_as_little_as_it_can():
    S = paths.Setting
    # From a native default, leaving the kernel takes implementation="torch".
    assert paths.setting("direct", "native") == S("direct", True, True, "torch")
    assert paths.setting("dispatcher", "native") == S(
        "dispatcher", True, False, "torch"
    )
    assert paths.setting("from_blob", "native") == S("from_blob", False, True, "torch")
    assert paths.setting("native", "native") == S("native", True, True, None)
    # From a torch default, only the switches (and "native" to force a kernel).
    assert paths.setting("direct", "direct") == S("direct", True, True, None)
    assert paths.setting("dispatcher", "direct") == S("dispatcher", True, False, None)
    assert paths.setting("native", "direct") == S("native", True, True, "native")
    abs_ = manifest.generated().op("abs")  # no native kernel
    assert paths.before_setting(abs_, "float32") == S("before", False, False, None)


def test_round_order_puts_each_path_next_to_its_floor():
    present = {"reference", "before", "native", "floor_native", "direct"}
    present |= {"floor_direct", "dispatcher", "from_blob", "floor_from_blob"}
    order = runner.round_order(present, ("native", "direct", "dispatcher", "from_blob"))
    assert order == [
        "reference",
        "before",
        "native",
        "floor_native",
        "direct",
        "floor_direct",
        "dispatcher",
        "from_blob",
        "floor_from_blob",
    ]


# --- Floors ---------------------------------------------------------------------------


def _function(source: str, name: str) -> str:
    start = source.index(f"PyObject* floor_{name}(")
    return source[start : source.index("\n}\n", start)]


def test_floor_source_covers_every_path_of_every_table_op(manifest_ops):
    ops = sorted({c.op for c in cases.all_configs()})
    source, left_out = floor.render([manifest_ops[o] for o in ops], "floor_test")
    assert left_out == []
    names = set(re.findall(r"PyObject\* floor_(\w+)\(", source))
    expected = set()
    for op in ops:
        for p in paths.applicable(manifest_ops[op], "float32"):
            expected.add(floor.function_name(p, op))
    assert names == expected
    assert "PyInit_floor_test" in source

    direct = _function(source, "direct__add")
    assert "at::AutoDispatchBelowADInplaceOrView below_autograd;" in direct
    assert "at::cpu::add_out(v_out, v_self, v_other, v_alpha);" in direct
    assert "fl::bump_version(v_out);" in direct
    dispatcher = _function(source, "dispatcher__add")
    assert "at::add_out(v_out, v_self, v_other, v_alpha);" in dispatcher
    assert "bump_version" not in dispatcher  # the dispatcher's ADInplaceOrView does
    blob = _function(source, "from_blob__add")
    assert "at::cpu::add_out(b_out, b_self, b_other, v_alpha);" in blob
    assert "fl::carry_version(v_out, b_out);" in blob
    blob_softmax = _function(source, "from_blob__softmax")
    assert "at::softmax_out(b_out, b_self, v_dim, v_dtype);" in blob_softmax
    native = _function(source, "native__add")
    assert "infini::ops::native::cpu::add(c_self, c_other, c_alpha, c_out)" in native
    assert "fl::bump_version(v_out);" in native


FLOOR_OPS = ["exp", "abs", "sub", "add", "clamp", "mm", "sum", "cat", "topk"]
FLOOR_OPS += ["native_layer_norm", "mul", "silu", "rms_norm"]  # = alloc_probe.OPS


@pytest.fixture(scope="module")
def floor_module(manifest_ops):
    from runtime_conftest_helpers import build_dir

    path, _ = floor.build(
        [manifest_ops[n] for n in FLOOR_OPS], build_dir() / "test-floor", echo=print
    )
    return floor.load(path)


def test_the_floor_is_built_by_the_projects_cmake(floor_module):
    """The floor is a target of CMakeLists.txt, configured in a build
    directory of its own: the module's torch flags and CPU kernel objects,
    no compiler command line of the bench's own."""
    from runtime_conftest_helpers import build_dir

    cmake = build_dir() / "test-floor" / "cmake"
    cache = (cmake / "CMakeCache.txt").read_text()
    assert "INFINI_OPS_BENCH_FLOOR_SOURCE:FILEPATH=" in cache
    commands = json.loads((cmake / "compile_commands.json").read_text())
    floor_cmd = next(c for c in commands if "infiniops_bench_floor_" in c["file"])
    assert "-D_GLIBCXX_USE_CXX11_ABI=1" in floor_cmd["command"]
    assert "-DTORCH_ASSERT_ONLY_METHOD_OPERATORS" in floor_cmd["command"]
    assert floor_module.__file__.startswith(str(build_dir() / "test-floor"))


def test_the_bench_builds_through_the_builder(tmp_path, monkeypatch):
    """No child `infiniops-codegen build` process: the bench calls
    builder.build() with the before build's request."""
    seen = []

    def fake_build(request, echo=print, verbose=False):
        seen.append(request)
        echo("generate: 2 ops")

    monkeypatch.setattr(builder, "build", fake_build)
    monkeypatch.setattr(main.builds, "inspect", lambda d: None)
    lines = []
    with pytest.raises(main.builds.BuildFailed, match="holds no module"):
        main.builds.ensure_before(tmp_path / "b", "0", {"abs", "add"}, lines.append)
    (request,) = seen
    assert request.build_dir == tmp_path / "b" and request.opt_level == "0"
    assert request.ops == "abs,add" and not request.smoke
    assert "  generate: 2 ops" in lines


@pytest.mark.parametrize("path", ["direct", "dispatcher", "from_blob", "native"])
def test_a_floor_does_its_path_work(floor_module, path):
    import torch

    x, y = torch.randn(2, 3), torch.randn(2, 3)
    out = torch.empty(2, 3)
    fn = getattr(floor_module, floor.function_name(path, "add"))
    before = out._version
    assert fn(x, y, 2, out) is out
    assert out._version == before + 1  # as torch.add(..., out=) bumps it
    torch.testing.assert_close(out, x + 2 * y)


def test_floors_of_several_outputs_return_them_and_bump_each(floor_module):
    import torch

    x = torch.randn(5)
    values, indices = torch.empty(2), torch.empty(2, dtype=torch.long)
    for path in ("direct", "dispatcher", "from_blob"):
        v0, i0 = values._version, indices._version
        fn = getattr(floor_module, floor.function_name(path, "topk"))
        result = fn(x, 2, -1, True, True, values, indices)
        assert result == (values, indices) and result[0] is values, path
        assert (values._version, indices._version) == (v0 + 1, i0 + 1), path
        torch.testing.assert_close(values, torch.topk(x, 2).values)


def test_native_floor_of_a_composite(floor_module):
    import torch

    x, w = torch.randn(4, 6), torch.randn(6)
    out = torch.empty(4, 6)
    floor_module.native__rms_norm(x, w, 1e-6, out)
    want = torch.nn.functional.rms_norm(x, (6,), w, 1e-6)
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
    assert not hasattr(floor_module, "dispatcher__rms_norm")  # no ATen out=


# --- Calls ----------------------------------------------------------------------------


def test_call_plans(manifest_ops):
    entry = manifest_ops["topk"]
    values = {"self": "x", "k": 1, "dim": 1}
    ours = calls.ours(print, entry, values, ["v", "i"])
    assert ours.args == ("x", 1, 1)
    assert ours.kwargs == (("values", "v"), ("indices", "i"))
    ref = calls.torch_style(print, entry, values, ["v", "i"])
    assert ref.kwargs == (("out", ("v", "i")),)
    low = calls.floor(print, entry, values, ["v", "i"])
    assert low.args == ("x", 1, 1, True, True, "v", "i")  # defaults filled in

    add = calls.ours(
        print, manifest_ops["add"], {"self": 1, "other": 2}, ["o"], "torch"
    )
    assert add.args == (1, 2)
    assert add.kwargs == (("out", "o"), ("implementation", "torch"))
    seen = []
    call = calls.Call(lambda a, b, out: seen.append((a, b, out)), (1, 2), (("out", 3),))
    loop = calls.timed_loop(call)
    loop(7)
    assert seen == [(1, 2, 3)] * 7


# --- Report: exclusions -----------------------------------------------------------------


def _outcome(config_id: str, match: bool) -> runner.Outcome:
    (config,) = [c for c in cases.all_configs() if c.id == config_id]
    roles = ["reference", "before", "direct", "floor_direct"]
    times = {"reference": 1000.0, "before": 2000.0, "direct": 800.0}
    times["floor_direct"] = 600.0
    return runner.Outcome(
        config,
        default="direct",
        paths=("direct",),
        samples={r: [times[r]] * 3 for r in roles},
        calls_per_batch=10,
        reps=3,
        match={"before": True, "direct": match, "floor_direct": True},
        calls={r: r for r in roles},
    )


def test_a_mismatch_is_excluded_from_every_figure():
    good = report.config_row(_outcome("tiny/abs/1/float32", True))
    bad = report.config_row(_outcome("tiny/abs/64/float32", False))
    assert "excluded" not in good
    assert bad["excluded"] == "outputs differ from PyTorch's: direct"
    assert good["over_floor_ns"] == {"direct": 200.0, "after": 200.0}
    assert good["ratio"]["after"] == 1.25 and good["ratio"]["before"] == 0.5
    summary = report.summarise([good, bad])
    assert summary["tiny"]["configs"] == summary["all"]["configs"] == 1
    assert summary["tiny"]["direct"]["configs"] == 1
    assert summary["tiny"]["after"]["median_over_floor_ns"] == 200.0
    assert report.summarise([bad]) == {}


def test_a_mismatch_fails_the_command(tmp_path, monkeypatch):
    """run_bench writes its files, then raises (exit 1) naming the config."""
    from runtime_conftest_helpers import build_dir

    after = main.builds.inspect(build_dir())
    assert after is not None, f"the runtime tests need a build in {build_dir()}"
    monkeypatch.setattr(main.builds, "ensure_after", lambda d, echo: after)
    monkeypatch.setattr(main.builds, "ensure_before", lambda *a: after)
    monkeypatch.setattr(main.floor, "build", lambda *a: (after.module, []))
    outcomes = [_outcome("tiny/abs/1/float32", True)]
    outcomes.append(_outcome("tiny/abs/64/float32", False))
    states = {"before": {"handle_reuse": False}, "after": {"handle_reuse": True}}
    monkeypatch.setattr(main.runner, "run_all", lambda *a, **k: (outcomes, states))
    with pytest.raises(main.BenchError) as e:
        main.run_bench(ops={"abs"}, out=tmp_path, echo=lambda *a: None)
    assert "1 of 2 configurations" in str(e.value)
    assert "tiny/abs/64/float32: outputs differ" in str(e.value)
    data = json.loads((tmp_path / "bench.json").read_text())
    assert data["summary"]["all"]["configs"] == 1
    assert data["meta"]["excluded"] == 1
    assert "## Excluded (1)" in (tmp_path / "bench.md").read_text()


# --- The committed copy ------------------------------------------------------------------


def test_git_changes_count_tracked_files_and_untracked_build_inputs():
    porcelain = "\n".join(
        [
            " M README.md",
            "?? notes.txt",
            "?? cpp/core/new.h",
            "R  templates/a.j2 -> templates/b.j2",
            " M docs/perf/bench.json",
        ]
    )
    found = gitstate.changes(porcelain, {"docs/perf/bench.json"})
    assert found == ["README.md", "cpp/core/new.h", "templates/b.j2"]


def test_docs_perf_is_refused_from_a_modified_tree():
    assert main.publishing(REPO / "docs" / "perf")
    assert not main.publishing(REPO / "bench-results")
    modified = {"commit": "0" * 40, "modified": True, "changes": ["cpp/x.cc"]}
    with pytest.raises(main.BenchUsageError, match="modified tree.*cpp/x.cc"):
        main.check_publishable(modified, None)
    clean = {"commit": "0" * 40, "modified": False, "changes": []}
    main.check_publishable(clean, None)  # accepted


def test_docs_perf_is_refused_from_a_stale_build(tmp_path):
    import os

    module = tmp_path / "infiniops.so"
    module.write_bytes(b"")
    os.utime(module, (0, 0))  # built before every source file
    stale = builder.Built(tmp_path, module, "3", None, manifest.generated())
    clean = {"commit": "0" * 40, "modified": False, "changes": []}
    with pytest.raises(
        main.BenchUsageError, match="older than .*infiniops-codegen build"
    ):
        main.check_publishable(clean, stale)
    os.utime(module)  # now: newer than every source
    main.check_publishable(clean, stale)


# --- The command --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ops", "nosuchop"], "not an op of"),
        (["--ops", ","], "--ops names no op"),
        (["--ops", "abs", "--device", "nosuchdevice"], "--device nosuchdevice"),
        (["--threads", "0"], "--threads"),
    ],
)
def test_usage_errors_exit_2(tmp_path, runner, helpers, args, message):
    result = helpers.invoke(runner, "bench", *args, "--out", tmp_path)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


QUICK_RUN = [
    "tiny/abs/1/float32",
    "tiny/abs/64/float32",
    "tiny/add/1/float32",
    "tiny/add/64/bfloat16",
    "llm/add[residual]/T=1/float32",
    "llm/add[residual]/T=16/bfloat16",
    "tiny/rms_norm[sample]/24/float32",
]


@pytest.mark.own_build(
    "builds the bench's own before build (-O0, its own bridge) and floors: "
    "CI's bench smoke run"
)
def test_bench_quick_writes_its_files(tmp_path, runner, helpers):
    out = tmp_path / "bench"
    result = helpers.invoke(
        runner, "bench", "--quick", "--ops", "add,abs,rms_norm", "--out", out, "-v"
    )
    assert result.exit_code == 0, result.output
    for name in ("bench.json", "bench.md", "bench.png"):
        assert (out / name).is_file(), name
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "rms_norm is not in the configuration table" in result.output
    assert "over floor (ns): native" in result.output  # -v: every path

    data = json.loads((out / "bench.json").read_text())
    meta = data["meta"]
    assert re.fullmatch(r"[0-9a-f]{40}", meta["git"]["commit"])
    assert isinstance(meta["git"]["modified"], bool)
    assert meta["before"]["handle_reuse"] is False
    assert meta["before"]["direct_mode"] is False
    assert meta["after"]["handle_reuse"] is True
    assert meta["excluded"] == 0

    rows = {r["id"]: r for r in data["configs"]}
    assert list(rows) == QUICK_RUN
    assert [r["after_path"] for r in rows.values()] == [
        "direct",
        "direct",
        "native",
        "native",
        "direct",  # 4,096 elements: over add's float32 native limit (2,048)
        "direct",  # 65,536 bfloat16 elements: over its bfloat16 one
        "native",
    ]
    every = ["native", "direct", "dispatcher", "from_blob"]
    assert rows["tiny/add/1/float32"]["paths"] == every
    assert rows["tiny/abs/1/float32"]["paths"] == every[1:]
    assert rows["tiny/rms_norm[sample]/24/float32"]["paths"] == [
        "native",
        "dispatcher",
        "from_blob",
    ]
    assert rows["llm/add[residual]/T=16/bfloat16"]["paths"] == ["direct"]
    for r in rows.values():
        assert "excluded" not in r, r["id"]
        assert set(r["outputs_match"].values()) == {True}, r["id"]
        floors = {f"floor_{p}" for p in r["paths"]}
        if r["op"] == "rms_norm":
            floors = {"floor_native"}  # a composite: no ATen out= to floor
        # torch's API (worker.py): ours and torch's call without out=, and
        # the function's call with out= (a composite: its own function only)
        api = {"api"} | ({"torch_api", "api_out"} if r["op"] != "rms_norm" else set())
        assert set(r["median_ns"]) == {
            "reference",
            "before",
            *r["paths"],
            *floors,
            *api,
        }
        assert ("api_ratio" in r) == ("resolution_ns" in r) == ("torch_api" in api)
        assert set(r["over_floor_ns"]) == {f[6:] for f in floors} | {"after"}
        assert set(r["ratio"]) == {"before", "after", *r["paths"]}
    add = rows["tiny/add/1/float32"]["calls"]
    assert add["reference"] == "torch.add"
    assert add["direct"] == 'after.add (implementation="torch")'
    assert add["dispatcher"] == (
        'after.add (set_direct_mode(False), implementation="torch")'
    )
    assert add["native"] == "after.add (defaults)"
    assert add["floor_from_blob"] == "floor.from_blob__add"
    assert add["before"] == "before.add (set_handle_reuse(False), " + (
        'set_direct_mode(False), implementation="torch")'
    )
    rms = rows["tiny/rms_norm[sample]/24/float32"]["calls"]["reference"]
    assert rms.startswith("torch.nn.functional.rms_norm(") and "out.copy_()" in rms

    summary = data["summary"]
    assert set(summary) == {"tiny", "llm", "all"}
    assert summary["tiny"]["api"]["configs"] == 4  # abs and add, not rms_norm
    assert summary["tiny"]["resolution"]["configs"] == 4
    assert summary["tiny"]["configs"] == 5 and summary["llm"]["configs"] == 2
    assert summary["tiny"]["native"]["configs"] == 3
    assert summary["tiny"]["direct"]["configs"] == 4
    assert summary["tiny"]["dispatcher"]["configs"] == 5
    assert summary["tiny"]["from_blob"]["configs"] == 5
    assert summary["tiny"]["from_blob"]["configs_with_floor"] == 4
    assert set(summary["llm"]) >= {"after", "before", "direct"}
    assert "native" not in summary["llm"]  # both over add's native limits
    assert "dispatcher" not in summary["llm"]  # LLM: the default path only

    md = (out / "bench.md").read_text()
    assert "## Headline: tiny" in md and "`tiny/add/1/float32`" in md
    assert "over the like-for-like floor" in md
