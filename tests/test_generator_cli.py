"""CLI tests of `infiniops-codegen generate` and `generate --check`, run with
click's CliRunner on a private copy of tests/fixtures/specs/basic/ and
temporary output directories (never the repository's generated/)."""

from __future__ import annotations

import json

import pytest

from infiniops_codegen.render import pipeline
from infiniops_codegen.render.sources import MARKER
from torch_facts import version

OWNED_LINE = f"// {MARKER} from basic/ops.yaml — do not edit\n"


@pytest.fixture
def out(tmp_path, basic_specs, runner, helpers, monkeypatch):
    """An output dir freshly generated from the basic fixture; the working
    directory is tmp_path, so --check names its files out/<path>."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    result = helpers.invoke(runner, "generate", "--specs", basic_specs, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def check(runner, helpers, specs, out):
    return helpers.invoke(runner, "generate", "--check", "--specs", specs, "--out", out)


def test_generate_writes_every_file(out, basic_specs, helpers):
    files = helpers.tree(out)
    assert {"ops.h", "ops.cpp", "manifest.json", "infiniops.pyi"} <= files.keys()
    assert any(rel.startswith("torch_fallback/shard_") for rel in files)
    for rel, data in files.items():
        assert MARKER.encode() in data.split(b"\n", 1)[0], rel
    rendered = pipeline.generate(basic_specs).files
    assert files == {rel: text.encode() for rel, text in rendered.items()}


def test_generate_reports_counts(tmp_path, basic_specs, runner, helpers):
    result = helpers.invoke(
        runner, "generate", "--specs", basic_specs, "--out", tmp_path / "o"
    )
    assert result.exit_code == 0, result.output
    n = len(helpers.tree(tmp_path / "o"))
    assert "generated 9 ops into " in result.output
    assert f"{n} written, 0 removed, 0 unchanged" in result.output


def test_check_on_a_clean_dir_exits_0(out, basic_specs, runner, helpers):
    result = check(runner, helpers, basic_specs, out)
    assert result.exit_code == 0, result.output
    assert "is up to date" in result.output
    assert "stale" not in result.output and "missing" not in result.output


def test_check_names_an_edited_file_with_a_diff(out, basic_specs, runner, helpers):
    before = helpers.tree(out)
    path = out / "ops.cpp"
    path.write_text(path.read_text() + "// hand edit\n")
    result = check(runner, helpers, basic_specs, out)
    assert result.exit_code == 1, result.output
    assert "edited by hand: out/ops.cpp" in result.output
    assert "--- out/ops.cpp (on disk)" in result.output
    assert "+++ out/ops.cpp (generated)" in result.output
    assert "\n-// hand edit\n" in result.output
    assert "out/ops.h" not in result.output
    # --check writes nothing
    after = helpers.tree(out)
    assert after["ops.cpp"].endswith(b"// hand edit\n")
    assert {k: v for k, v in after.items() if k != "ops.cpp"} == {
        k: v for k, v in before.items() if k != "ops.cpp"
    }


def test_check_reports_an_extra_owned_file(out, basic_specs, runner, helpers):
    (out / "torch_fallback" / "shard_077.cpp").write_text(OWNED_LINE + "int x;\n")
    result = check(runner, helpers, basic_specs, out)
    assert result.exit_code == 1, result.output
    assert "extra: out/torch_fallback/shard_077.cpp" in result.output
    assert (out / "torch_fallback" / "shard_077.cpp").exists()  # check only


def test_check_reports_a_missing_file(out, basic_specs, runner, helpers):
    (out / "ops.h").unlink()
    result = check(runner, helpers, basic_specs, out)
    assert result.exit_code == 1, result.output
    assert "missing: out/ops.h" in result.output
    assert not (out / "ops.h").exists()


def test_check_lists_every_problem_at_once(out, basic_specs, runner, helpers):
    (out / "ops.h").unlink()
    (out / "bindings.cpp").write_text(OWNED_LINE)
    (out / "old.h").write_text(OWNED_LINE)
    result = check(runner, helpers, basic_specs, out)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith(
        "out/ is out of date: 1 edited by hand, 0 stale, 1 missing, 1 extra (of "
    )
    # bindings.cpp's content is not what was generated: a hand edit
    for line in (
        "edited by hand: out/bindings.cpp",
        "missing: out/ops.h",
        "extra: out/old.h (generated earlier, no longer produced)",
    ):
        assert line in lines


def test_files_it_does_not_own_are_left_alone(out, basic_specs, runner, helpers):
    mine = {
        out / "NOTES.txt": "my notes\n",
        out / "torch_fallback" / "local.cpp": f"// mine\n// {MARKER} (2nd line)\n",
        out / "extra" / "thing.h": "#pragma once\n",
    }
    for path, text in mine.items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    stamps = {path: path.stat().st_mtime_ns for path in mine}
    result = check(runner, helpers, basic_specs, out)
    assert result.exit_code == 0, result.output
    assert "NOTES" not in result.output and "local.cpp" not in result.output
    # generate that rewrites and removes owned files still leaves them alone
    # (--force: ops.h, rewritten here, no longer has its generated content)
    (out / "ops.h").write_text(OWNED_LINE)
    (out / "gone.h").write_text(OWNED_LINE)
    result = helpers.invoke(
        runner,
        "generate",
        "--specs",
        basic_specs,
        "--out",
        out,
        "--ops",
        "abs",
        "--force",
    )
    assert result.exit_code == 0, result.output
    for path, text in mine.items():
        assert path.read_text() == text
        assert path.stat().st_mtime_ns == stamps[path]


def test_generate_removes_owned_files_no_longer_produced(
    out, basic_specs, runner, helpers
):
    shards = sorted((out / "torch_fallback").glob("shard_*.cpp"))
    assert len(shards) >= 2
    (out / "gone.h").write_text(OWNED_LINE)
    # one op: a single shard, so the other shard files are no longer produced
    result = helpers.invoke(
        runner, "generate", "--specs", basic_specs, "--out", out, "--ops", "abs"
    )
    assert result.exit_code == 0, result.output
    remaining = sorted((out / "torch_fallback").glob("shard_*.cpp"))
    assert [p.name for p in remaining] == ["shard_000.cpp"]
    assert not (out / "gone.h").exists()
    assert f"{len(shards)} removed" in result.output  # 1 + (shards - 1)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [op["name"] for op in manifest["ops"]] == ["abs"]


def _as_generated_by(out, edit) -> None:
    """Make out/ look generated with a torch whose schemas differ from the
    installed one's: edit the data of its manifest (generate --check takes
    the schemas out/ was generated with from there)."""
    path = out / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    text = json.dumps(data, indent=1)
    path.write_text("{" + text[1:].lstrip("\n "))  # the marker on line 1


def _op(data, aten):
    return next(op for op in data["ops"] if op["aten"] == aten)


def test_check_names_the_overloads_whose_schemas_differ(
    out, basic_specs, runner, helpers
):
    def edit(data):
        abs_out = _op(data, "abs.out")
        abs_out["schema"] = abs_out["schema"].replace("Tensor self", "Tensor x")
        add = _op(data, "add.out")
        add["tags"] = add["tags"] + ["made_up"]
        alpha = next(a for a in add["arguments"] if a["name"] == "alpha")
        alpha["cpp_type"] = "double"
        _op(data, "topk.values")["cpp_function"] = "at::topk_values"

    _as_generated_by(out, edit)
    result = check(runner, helpers, basic_specs, out)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    header = lines.index(
        f"the installed torch {version()}'s ATen schemas differ from those out/ "
        "was generated with, for 3 overloads:"
    )
    assert lines[header + 1 : header + 6] == [
        "  abs.out: argument 'x' is named 'self'",
        "  add.out: C++ type of 'alpha' is 'const at::Scalar &' (was 'double')",
        "  add.out: no tag 'made_up' any more",
        "  topk.values: C++ function: at::topk_out (was at::topk_values)",
        "stale: out/manifest.json",
    ]
    # not a version string: the release's facts, by overload
    assert "was generated with torch" not in result.output


def test_check_groups_a_change_many_overloads_share(out, basic_specs, runner, helpers):
    def edit(data):
        for op in data["ops"]:
            op["tags"] = [t for t in op["tags"] if t != "pt2_compliant_tag"]

    before = json.loads((out / "manifest.json").read_text())
    tagged = sorted(
        op["aten"] for op in before["ops"] if "pt2_compliant_tag" in op["tags"]
    )
    assert len(tagged) > 4
    _as_generated_by(out, edit)
    result = check(runner, helpers, basic_specs, out)
    assert (
        f"  new tag 'pt2_compliant_tag': {len(tagged)} overloads "
        f"({', '.join(tagged[:4])} and {len(tagged) - 4} more)"
    ) in result.output.splitlines(), result.output


def test_check_names_torchs_python_signatures_that_differ(
    out, basic_specs, runner, helpers
):
    def edit(data):
        data["functions"]["clamp"] = data["functions"]["clamp"][:1]

    gone = json.loads((out / "manifest.json").read_text())["functions"]["clamp"][1:]
    assert gone
    _as_generated_by(out, edit)
    result = check(runner, helpers, basic_specs, out)
    for overload in gone:
        assert (
            f"  torch.clamp: new Python signature {overload['signature']}"
            in result.output.splitlines()
        ), result.output


def test_a_spec_change_is_no_schema_drift(out, basic_specs, runner, helpers):
    (basic_specs / "ops.yaml").write_text(
        (basic_specs / "ops.yaml").read_text() + "  - exp.out\n"
    )
    (out / "ops.h").unlink()
    result = check(runner, helpers, basic_specs, out)
    assert result.exit_code == 1
    assert "stale: out/manifest.json" in result.output
    assert "ATen schemas differ" not in result.output


def test_generate_writes_and_says_what_the_schemas_changed(
    out, basic_specs, runner, helpers
):
    def edit(data):
        neg = _op(data, "neg.out")
        neg["schema"] = neg["schema"].replace("Tensor self", "Tensor a")

    _as_generated_by(out, edit)
    result = helpers.invoke(runner, "generate", "--specs", basic_specs, "--out", out)
    assert result.exit_code == 0, result.output
    assert "  neg.out: argument 'a' is named 'self'" in result.output
    assert check(runner, helpers, basic_specs, out).exit_code == 0


def test_group_help(runner, helpers):
    result = helpers.invoke(runner, "--help")
    assert result.exit_code == 0
    assert "generate" in result.output
    assert "infiniops-codegen generate --check" in result.output


def test_generate_help(runner, helpers):
    result = helpers.invoke(runner, "generate", "--help")
    assert result.exit_code == 0
    for text in ("--check", "--specs", "--out", "--ops", "Examples:"):
        assert text in result.output
    assert "infiniops-codegen generate --ops all" in result.output


def test_unknown_ops_selection_is_a_usage_error(basic_specs, tmp_path, runner, helpers):
    result = helpers.invoke(
        runner,
        "generate",
        "--specs",
        basic_specs,
        "--out",
        tmp_path / "o",
        "--ops",
        "abs,nosuchop",
    )
    assert result.exit_code == 2
    assert "nosuchop" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_torch_function_signature_spells_out_hidden_arguments(tmp_path):
    """__torch_function__ hands torch.ops.aten.<overload> the call: arguments
    under their schema names, and hidden ones without a schema default (the
    Generator of rand.generator_out) as None, or calling it would fail."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ops.yaml").write_text("ops:\n  - rand.generator_out\n  - abs.out\n")
    files = pipeline.generate(specs).files
    bindings = files["bindings.cpp"]
    assert (
        'const char* const kNone_rand_generator[] = {"generator", nullptr};' in bindings
    )
    assert ".aten_none = kNone_rand_generator," in bindings
    assert '.aten = "rand.generator_out",' in bindings
    # abs: `self` is `input` in Python; the overload gets `self`
    assert 'const char* const kSchemaNames_abs[] = {"self", "out"};' in bindings
    assert "kNone_abs" not in bindings
