"""Golden-file tests: tests/fixtures/specs/basic/ must render exactly to
tests/fixtures/golden/basic/ from the schemas of tests/fixtures/schemas/
basic.json (recorded from torch 2.13.0, so the goldens hold whichever
release is installed); a template or model change shows up as a unified
diff in the failure message.

After an intended change, refresh the goldens and review their diff:

    python scripts/update_goldens.py
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from pathlib import Path

import pytest

import schema_fixture
from infiniops_codegen.render import pipeline
from infiniops_codegen.render.sources import MARKER, render
from infiniops_codegen.schema.db import load_schema_db
from infiniops_codegen.base.torch_build import release
from torch_facts import out_overloads, version

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SPECS = FIXTURES / "specs" / "basic"
GOLDEN = FIXTURES / "golden" / "basic"
REFRESH = "refresh with: python scripts/update_goldens.py (then review the diff)"

FIXTURE_OPS = {
    "abs",
    "add",
    "clamp_Tensor",
    "empty",
    "mul",
    "neg",
    "silu_and_mul",
    "topk",
    "total",
}
AGGREGATES = {
    "bindings.cpp",
    "infiniops.pyi",
    "manifest.json",
    "native_kernels.h",
    "ops.cpp",
    "ops.h",
    "sources.cmake",
    "torch_fallback.h",
}


def golden_files() -> dict[str, str]:
    return {
        p.relative_to(GOLDEN).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(GOLDEN.rglob("*"))
        if p.is_file()
    }


def test_rendering_matches_golden_files():
    rendered = render(pipeline.load_opset(SPECS, db=schema_fixture.load("basic")))
    golden = golden_files()
    problems = []
    for rel in sorted(rendered.keys() - golden.keys()):
        problems.append(f"missing golden file: {rel}")
    for rel in sorted(golden.keys() - rendered.keys()):
        problems.append(f"golden file no longer rendered: {rel}")
    for rel in sorted(rendered.keys() & golden.keys()):
        if rendered[rel] != golden[rel]:
            diff = difflib.unified_diff(
                golden[rel].splitlines(keepends=True),
                rendered[rel].splitlines(keepends=True),
                fromfile=f"golden/basic/{rel}",
                tofile=f"rendered/{rel}",
            )
            problems.append("".join(diff))
    assert not problems, "\n".join(problems) + "\n" + REFRESH


def test_the_schema_fixture_is_the_schema_oracles_own():
    """Recorded by scripts/update_goldens.py: on the release it was recorded
    from, the installed torch's records of those functions are the same (a
    change of the schema extraction shows up here)."""
    fixture = schema_fixture.load("basic")
    installed = load_schema_db()
    if installed.torch_version != fixture.torch_version:
        pytest.skip(
            f"the schema fixture is torch {fixture.torch_version}'s; torch "
            f"{installed.torch_version} is installed, whose schemas may differ"
        )
    assert schema_fixture.subset(installed, schema_fixture.bases(SPECS)) == fixture


def test_fixture_spans_several_shards_and_all_file_kinds():
    files = golden_files()
    shards = [rel for rel in files if rel.startswith("torch_fallback/shard_")]
    assert len(shards) >= 2, shards
    assert AGGREGATES <= files.keys()


# Rendered from the tool's data tables, not the specs (render.TABLES_SOURCE).
TABLES = {"dtype_table.h", "platform_table.h", "torch_tables.h"}


def test_every_golden_file_starts_with_the_generated_marker():
    line_re = re.compile(
        r"^(//|#) " + re.escape(MARKER) + r" from basic/.* — do not edit$"
    )
    tables_line = f"// {MARKER} from infiniops_codegen/data/ — do not edit"
    for rel, text in golden_files().items():
        first = text.split("\n", 1)[0]
        if rel.endswith(".json"):
            assert f"{MARKER} from basic/ — do not edit" in first, rel
        elif rel in TABLES:
            assert first == tables_line, f"{rel}: {first!r}"
        else:
            assert line_re.match(first), f"{rel}: {first!r}"


def test_manifest_lists_the_fixture_ops_with_their_outputs():
    manifest = json.loads((GOLDEN / "manifest.json").read_text(encoding="utf-8"))
    ops = {op["name"]: op for op in manifest["ops"]}
    assert set(ops) == FIXTURE_OPS
    assert manifest["op_count"] == len(FIXTURE_OPS)
    assert manifest["exclusions"] == []
    assert ops["topk"]["outputs"] == ["values", "indices"]
    assert all(ops[n]["outputs"] == ["out"] for n in FIXTURE_OPS - {"topk"})
    # name + rename overrides
    assert ops["total"]["aten"] == "sum.IntList_out"
    assert ops["total"]["arguments"][0]["python_name"] == "x"
    assert ops["clamp_Tensor"]["aten"] == "clamp.Tensor_out"
    # native platforms and dtypes
    assert ops["mul"]["implementations"]["native"] == {
        "cpu": ["float32", "float16"],
        "nvidia": [],
    }
    # composite op
    assert ops["silu_and_mul"]["composite"] is True
    assert ops["silu_and_mul"]["aten"] is None
    assert ops["silu_and_mul"]["source"] == "basic/composite.yaml"
    # hidden argument
    roles = {a["name"]: a["role"] for a in ops["empty"]["arguments"]}
    assert roles["memory_format"] == "hidden"
    # every op's shard file exists
    for op in ops.values():
        shard = f"torch_fallback/shard_{op['shard']:03d}.cpp"
        assert (GOLDEN / shard).is_file(), (op["name"], shard)
        assert f"void {op['name']}(" in (GOLDEN / shard).read_text(encoding="utf-8")


def test_no_generated_file_names_the_torch_release():
    """Generated files depend on the schemas only, so that a release with
    the same schemas generates the same files (docs/torch-releases.md): the
    installed torch's version, in either spelling, appears in none of them,
    golden or rendered."""
    spellings = {version(), ".".join(map(str, release(version())))}
    rendered = pipeline.generate(SPECS).files
    for rel, text in list(golden_files().items()) + list(rendered.items()):
        found = [s for s in spellings if s in text]
        assert not found, f"{rel} names torch {found}"
    assert "torch_version" not in json.loads(rendered["manifest.json"])


def test_pyi_stub_parses_and_declares_every_op():
    tree = ast.parse((GOLDEN / "infiniops.pyi").read_text(encoding="utf-8"))
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert FIXTURE_OPS <= funcs.keys()
    params = [a.arg for a in funcs["total"].args.args]
    assert params == ["x", "dim", "keepdim"]
    kwonly = [a.arg for a in funcs["total"].args.kwonlyargs]
    assert kwonly == ["dtype", "out", "implementation", "stream"]
    empty = funcs["empty"].args
    params = [a.arg for a in empty.args + empty.kwonlyargs]
    assert params == ["size", "out", "implementation", "stream"]  # memory_format hidden


def test_all_selection_renders_a_parsable_stub_and_complete_manifest(
    tmp_path, runner, helpers
):
    out = tmp_path / "all"
    result = helpers.invoke(runner, "generate", "--ops", "all", "--out", out)
    assert result.exit_code == 0, result.output
    ast.parse((out / "infiniops.pyi").read_text(encoding="utf-8"))
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["selection"] == "all"
    assert manifest["op_count"] == len(manifest["ops"]) >= 1050
    aten_ops = [op for op in manifest["ops"] if op["aten"] is not None]
    # every out= overload of the installed torch is either rendered or
    # excluded with its reason
    rendered = {op["aten"] for op in aten_ops} | {
        e["aten"] for e in manifest["exclusions"]
    }
    assert rendered == out_overloads()
    assert len(aten_ops) + len(manifest["exclusions"]) == len(out_overloads())
    for e in manifest["exclusions"]:
        assert e["aten"] and e["reason"].strip(), e
    for rel, data in helpers.tree(out).items():
        assert MARKER in data.decode("utf-8").split("\n", 1)[0], rel
