"""`infiniops-codegen bench`: the configuration table, the floor source, the
call plans, and one real `bench --quick --ops add,abs` run (its files and
their fields; no timing is asserted anywhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infiniops_codegen.bench import calls, cases, configs, floor

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def manifest_ops() -> dict[str, dict]:
    data = json.loads((REPO / "generated" / "manifest.json").read_text())
    return {o["name"]: o for o in data["ops"]}


def test_full_sweep_size():
    all_configs = cases.all_configs()
    assert len(all_configs) >= 126
    assert len({c.op for c in all_configs}) >= 43
    assert len({c.id for c in all_configs}) == len(all_configs)
    families = {c.family for c in all_configs}
    assert families == {"tiny", "llm"}
    tiny_sizes = {c.size for c in all_configs if c.family == "tiny"}
    assert tiny_sizes == {1, 64}
    tokens = {c.size for c in all_configs if c.family == "llm"}
    assert tokens == {1, 16, 128}
    assert {c.dtype for c in all_configs} >= {"float32", "bfloat16"}


def test_tiny_configs_have_1_or_64_elements():
    for c in cases.all_configs():
        if c.family != "tiny":
            continue
        first = next(
            x
            for v in c.args.values()
            for x in (v if isinstance(v, list) else [v])
            if isinstance(x, cases.TensorArg)
        )
        numel = 1
        for d in first.shape:
            numel *= d
        assert numel == c.size, c.id


def test_quick_ids_exist():
    ids = {c.id for c in cases.all_configs()}
    assert set(configs.QUICK) <= ids
    quick = cases.select(True, {"add", "abs"})
    assert {c.op for c in quick} == {"add", "abs"}
    assert {c.family for c in quick} == {"tiny", "llm"}


def test_config_arguments_are_schema_arguments(manifest_ops):
    for c in cases.all_configs():
        entry = manifest_ops[c.op]
        names = {a["name"] for a in entry["arguments"] if a["role"] != "output"}
        assert set(c.args) <= names, c.id
        assert not entry["composite"], c.id  # the floor needs an out= overload


def test_floor_source_covers_every_op(manifest_ops):
    ops = sorted({c.op for c in cases.all_configs()})
    source, left_out = floor.render([manifest_ops[o] for o in ops], "floor_test")
    assert left_out == []
    for op in ops:
        assert f"PyObject* floor_{op}(" in source
    assert "PyInit_floor_test" in source
    assert "at::add_out(v_out, v_self, v_other, v_alpha);" in source


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

    add = calls.ours(print, manifest_ops["add"], {"self": 1, "other": 2}, ["o"])
    assert add.args == (1, 2) and add.kwargs == (("out", "o"),)
    loop = calls.timed_loop(calls.Call(lambda a, b, out: None, (1, 2), (("out", 3),)))
    assert loop(10) >= 0


def test_bench_quick_writes_its_files(tmp_path, runner, helpers):
    out = tmp_path / "bench"
    result = helpers.invoke(
        runner, "bench", "--quick", "--ops", "add,abs", "--out", out
    )
    assert result.exit_code == 0, result.output
    for name in ("bench.json", "bench.md", "bench.png"):
        assert (out / name).is_file(), name
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    data = json.loads((out / "bench.json").read_text())
    meta = data["meta"]
    for key in ("torch_version", "threads", "before", "after", "floor", "plan"):
        assert key in meta
    assert meta["before"]["handle_reuse"] is False
    assert meta["after"]["handle_reuse"] is True

    rows = data["configs"]
    assert {r["op"] for r in rows} == {"add", "abs"}
    assert all("error" not in r for r in rows), [r.get("error") for r in rows]
    for r in rows:
        assert set(r["median_ns"]) == {"reference", "before", "after", "floor"}
        for v in ("before", "after"):
            for key in (f"gap_{v}_ns", f"ratio_{v}", f"over_floor_{v}_ns"):
                assert isinstance(r[key], float), key
        assert "after_vs_before" in r
        assert r["outputs_match"] == {"before": True, "after": True, "floor": True}

    summary = data["summary"]
    assert set(summary) == {"tiny", "llm", "all"}
    for group in summary.values():
        assert set(group["median_latency_ns"]) == {
            "reference",
            "before",
            "after",
            "floor",
        }
        for v in ("before", "after"):
            for key in (
                "median_gap_ns",
                "median_ratio",
                "median_over_floor_ns",
                "below_0.6x",
                "below_0.9x",
            ):
                assert key in group[v]
        assert "after_vs_before_median" in group

    md = (out / "bench.md").read_text()
    assert "## Summary" in md and "`tiny/add/1/float32`" in md
    assert "median speed ratio" in result.output or "ratio" in result.output
