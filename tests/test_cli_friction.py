"""A newcomer's friction (issue 15): `list --available` (the ATen out=
overloads a spec line may still name) and the doc example that uses one;
`generate --check` that leads with the summary and the fix, names files from
the project root, caps its diff and tells a hand edit from a stale file;
`generate` and `build` refusing to overwrite a hand-edited generated file
without --force; and -v accepted before and after every subcommand.

Everything runs on private copies (a temporary project made of a copy of
op_specs/ and pyproject.toml, or small spec directories); nothing compiles.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import builder
from infiniops_codegen.model import manifest
from infiniops_codegen.render import pipeline, writer
from infiniops_codegen.base import project as projects
from infiniops_codegen.cli import DIFF_LIMIT, EXIT_DIFF, EXIT_USAGE, main
from infiniops_codegen.render.sources import content_hash

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "adding-an-op.md"


def _project(root: Path) -> Path:
    """A copy of this repository's project: its op specs, native kernels and
    pyproject.toml."""
    root.mkdir(parents=True)
    shutil.copytree(REPO / "op_specs", root / "op_specs")
    shutil.copytree(REPO / "cpp" / "kernels", root / "cpp" / "kernels")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.fixture(scope="module")
def generated_project(tmp_path_factory) -> Path:
    """A project copy with its generated/ written once (copied per test)."""
    from click.testing import CliRunner

    root = _project(tmp_path_factory.mktemp("friction") / "proj")
    result = CliRunner().invoke(main, ["--project", str(root), "generate"])
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def proj(generated_project, tmp_path) -> Path:
    """A private, freshly generated project (safe to edit)."""
    return Path(shutil.copytree(generated_project, tmp_path / "proj"))


def _edit_spec(root: Path, old: str, new: str) -> None:
    spec = root / "op_specs" / "extended.yaml"
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new, 1))


# --- list --available ---------------------------------------------------------------


def _small_specs(tmp_path: Path) -> Path:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ops.yaml").write_text("ops:\n  - abs.out\n  - hypot.out\n")
    return specs


def test_available_lists_overloads_not_in_the_specs(tmp_path, runner, helpers):
    specs = _small_specs(tmp_path)
    result = helpers.invoke(runner, "list", "--available", "--specs", specs)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    names = [line.split()[0] for line in lines[:-1]]
    assert "nextafter.out" in names and "neg.out" in names
    assert "hypot.out" not in names and "abs.out" not in names  # in the specs
    # overload name, then its schema without the name
    (line,) = [ln for ln in lines if ln.startswith("nextafter.out ")]
    assert line.split(None, 1)[1] == (
        "(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)"
    )
    assert re.fullmatch(
        rf"{len(names)} expressible ATen out= overloads are not in \S+; .*",
        lines[-1],
    ), lines[-1]
    # exactly what --ops all adds to these specs
    opset = pipeline.load_opset(specs, "all")
    assert sorted(names) == sorted(op.aten for op in opset.ops if op.source == "<all>")


def test_available_match_substring_or_glob(tmp_path, runner, helpers):
    specs = _small_specs(tmp_path)

    def listed(pattern):
        result = helpers.invoke(
            runner, "list", "--available", "--specs", specs, "--match", pattern
        )
        assert result.exit_code == 0, result.output
        rows = [ln.split(None, 1) for ln in result.output.splitlines()]
        return [r[0] for r in rows if len(r) == 2 and r[1].startswith("(")]

    assert listed("nextafter") == ["nextafter.out"]
    assert listed("NEXTAFTER") == ["nextafter.out"]  # case-insensitive
    assert listed("next*") == ["nextafter.out"]
    assert listed("*after.out") == ["nextafter.out"]
    assert "logit.out" in listed("logit")
    assert listed("log*") and all(n.startswith("log") for n in listed("log*"))
    assert listed("no_such_op_at_all") == []
    # an overload the specs already have: not listed, but named as present
    result = helpers.invoke(
        runner, "list", "--available", "--specs", specs, "--match", "hypot"
    )
    assert result.output.splitlines()[0].startswith("0 of the ")
    assert "already in " in result.output and "hypot.out" in result.output


def test_available_json(tmp_path, runner, helpers):
    specs = _small_specs(tmp_path)
    result = helpers.invoke(
        runner, "list", "--available", "--specs", specs, "--match", "hypot", "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["count"] == len(data["overloads"]) == 0
    assert data["in_specs"] == ["hypot.out"]
    result = helpers.invoke(
        runner, "list", "--available", "--specs", specs, "--match", "next", "--json"
    )
    data = json.loads(result.output)
    assert data["overloads"] == [
        {
            "aten": "nextafter.out",
            "name": "nextafter",
            "schema": "nextafter.out(Tensor self, Tensor other, *, "
            "Tensor(a!) out) -> Tensor(a!)",
        }
    ]
    assert data["count"] == 1 and data["available"] > 800


def test_available_reads_the_project_specs(tmp_path, runner, helpers):
    """From the project (--project), no build and no generated/ needed."""
    root = _project(tmp_path / "proj")
    result = helpers.invoke(
        runner, "--project", root, "list", "--available", "--match", "hypot"
    )
    assert result.exit_code == 0, result.output
    assert "already in op_specs/: hypot.out" in result.output
    assert not (root / "generated").exists() and not (root / "build").exists()


@pytest.mark.parametrize(
    "extra", [["--op", "add"], ["--build-dir", "."], ["--manifest", "m.json"]]
)
def test_available_with_manifest_options_is_a_usage_error(
    tmp_path, runner, helpers, extra
):
    specs = _small_specs(tmp_path)
    result = helpers.invoke(runner, "list", "--available", "--specs", specs, *extra)
    assert result.exit_code == EXIT_USAGE
    assert result.output.startswith("error: --available") and extra[0] in result.output


def test_match_without_available_is_a_usage_error(runner, helpers):
    result = helpers.invoke(runner, "list", "--match", "add")
    assert result.exit_code == EXIT_USAGE
    assert "--match only applies to --available" in result.output


def _doc_example() -> str:
    """The overload docs/adding-an-op.md adds (its step 2 YAML line)."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"```yaml\n\s+- (\S+)\n\s*```", text)
    assert m, "docs/adding-an-op.md has no one-line spec example"
    return m.group(1)


def test_the_docs_example_is_not_in_the_default_set(runner, helpers):
    """Followed literally, the doc must not add an op the specs already have
    (the old hypot.out example failed with "duplicate op name")."""
    aten = _doc_example()
    text = DOC.read_text(encoding="utf-8")
    assert "infiniops-codegen list --available" in text
    assert f"-k {aten.split('.')[0]}" in text  # the harness step tests the same op
    result = helpers.invoke(
        runner, "--project", REPO, "list", "--available", "--match", aten, "--json"
    )
    assert result.exit_code == 0, result.output
    assert aten in [o["aten"] for o in json.loads(result.output)["overloads"]]


def test_following_the_doc_in_a_copy_generates_the_op(proj, runner, helpers):
    aten = _doc_example()
    name = aten.split(".")[0]
    with (proj / "op_specs" / "extended.yaml").open("a") as f:
        f.write(f"  - {aten}\n")
    result = helpers.invoke(runner, "--project", proj, "generate")
    assert result.exit_code == 0, result.output
    check = helpers.invoke(runner, "--project", proj, "generate", "--check")
    assert check.exit_code == 0, check.output
    shown = helpers.invoke(runner, "--project", proj, "list", "--op", name)
    assert shown.exit_code == 0, shown.output
    assert f"ATen {aten}" in shown.output


# --- the manifest's file hashes -----------------------------------------------------


def test_the_manifest_records_a_hash_of_every_other_file(basic_specs):
    files = pipeline.generate(basic_specs).files
    recorded = json.loads(files["manifest.json"])["files"]
    assert recorded == {
        rel: content_hash(text) for rel, text in files.items() if rel != "manifest.json"
    }
    assert list(recorded) == sorted(recorded)
    assert all(re.fullmatch(r"[0-9a-f]{16}", h) for h in recorded.values())


def test_the_manifest_reader_accepts_the_files_key():
    m = manifest.generated(REPO / "generated")
    assert m.files["bindings.cpp"] == content_hash(
        (REPO / "generated" / "bindings.cpp").read_bytes()
    )
    assert "manifest.json" not in m.files


# --- generate --check -----------------------------------------------------------------


def _check(runner, helpers, root, *args):
    return helpers.invoke(runner, "--project", root, "generate", "--check", *args)


def test_check_leads_with_the_summary_and_the_fix(proj, runner, helpers):
    _edit_spec(proj, "  - hypot.out\n", "")  # an op less: a few files stale
    result = _check(runner, helpers, proj)
    assert result.exit_code == EXIT_DIFF
    lines = result.output.splitlines()
    assert re.fullmatch(
        r"generated/ is out of date: (\d+) stale, 0 missing, 0 extra \(of \d+ files\)",
        lines[0],
    ), lines[0]
    assert lines[1] == f"run 'infiniops-codegen --project {proj} generate' to update it"
    stale = [ln for ln in lines if ln.startswith("stale: ")]
    assert "stale: generated/ops.cpp" in stale
    assert int(re.search(r"(\d+) stale", lines[0]).group(1)) == len(stale)
    assert lines.index(stale[0]) == 2
    first_diff = next(i for i, ln in enumerate(lines) if ln.startswith("--- "))
    assert first_diff > lines.index(stale[-1])
    assert lines[first_diff].startswith("--- generated/")
    assert not any(ln.startswith("stale: ops.cpp") for ln in lines)


def test_check_caps_the_diff_and_counts_what_it_cut(proj, runner, helpers):
    # Most of the ops go: a long diff in many files.
    (proj / "op_specs" / "extended.yaml").write_text("ops:\n  - hypot.out\n")
    result = _check(runner, helpers, proj)
    assert result.exit_code == EXIT_DIFF
    lines = result.output.splitlines()
    m = re.fullmatch(
        r"\.\.\. (\d+) more diff lines not shown \((\d+) files?; -v shows them all\)",
        lines[-1],
    )
    assert m, lines[-1]
    first_diff = next(i for i, ln in enumerate(lines) if ln.startswith("--- "))
    shown = len(lines) - 1 - first_diff
    assert shown == DIFF_LIMIT
    verbose = _check(runner, helpers, proj, "-v")
    vlines = verbose.output.splitlines()
    total = len(vlines) - next(
        i for i, ln in enumerate(vlines) if ln.startswith("--- ")
    )
    assert int(m.group(1)) == total - DIFF_LIMIT
    assert "more diff lines not shown" not in verbose.output
    stale = [ln for ln in lines if ln.startswith("stale: ")]
    assert 1 < int(m.group(2)) <= len(stale)


def test_check_names_a_hand_edit_and_where_the_change_belongs(proj, runner, helpers):
    path = proj / "generated" / "bindings.cpp"
    path.write_text(path.read_text() + "// my fix\n")
    _edit_spec(proj, "  - hypot.out\n", "")  # and the specs changed too
    result = _check(runner, helpers, proj)
    assert result.exit_code == EXIT_DIFF
    lines = result.output.splitlines()
    assert lines[0].startswith("generated/ is out of date: 1 edited by hand, ")
    assert lines[1].startswith(
        "generated/bindings.cpp was edited by hand: generated files are rewritten "
        "from the specs and templates; put the change in op_specs/ or the templates"
    )
    assert "generate --force" in lines[1]
    assert "edited by hand: generated/bindings.cpp" in lines
    assert "stale: generated/bindings.cpp" not in lines
    assert "stale: generated/ops.cpp" in lines  # changed by the spec, not by hand
    assert "-// my fix" in lines


def test_a_file_edited_back_to_the_generated_content_is_up_to_date(
    proj, runner, helpers
):
    path = proj / "generated" / "ops.h"
    original = path.read_bytes()
    path.write_bytes(original + b"// x\n")
    path.write_bytes(original)
    assert _check(runner, helpers, proj).exit_code == 0


# --- refusing to overwrite a hand edit ----------------------------------------------


def test_writer_refuses_a_hand_edit_unless_forced(proj):
    out = proj / "generated"
    _edit_spec(proj, "  - hypot.out\n", "")
    files = pipeline.generate(proj / "op_specs").files
    edited = out / "ops.h"
    edited.write_text(edited.read_text() + "// mine\n")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(writer.HandEditedError) as caught:
        writer.write(files, out)
    assert caught.value.paths == ["ops.h"]
    assert isinstance(caught.value, writer.ForeignFileError)  # callers catch it
    assert "ops.h was edited by hand" in str(caught.value)
    assert "--force" in str(caught.value)
    # nothing written, not even the merely stale files
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    result = writer.write(files, out, force=True)
    assert "ops.h" in result.stale and result.edited == ["ops.h"]
    assert edited.read_text() == files["ops.h"]
    assert writer.compare(files, out).clean


def test_writer_refuses_to_remove_a_hand_edited_file(proj):
    out = proj / "generated"
    shard = out / "torch_fallback" / "shard_003.cpp"
    shard.write_text(shard.read_text() + "// mine\n")
    # fewer ops, fewer shards: shard_003.cpp is no longer produced
    (proj / "op_specs" / "extended.yaml").write_text("ops:\n  - hypot.out\n")
    files = pipeline.generate(proj / "op_specs").files
    assert "torch_fallback/shard_003.cpp" not in files
    with pytest.raises(writer.HandEditedError) as caught:
        writer.write(files, out)
    assert caught.value.paths == ["torch_fallback/shard_003.cpp"]
    assert shard.exists()


def test_generate_refuses_a_hand_edit_without_force(proj, runner, helpers):
    path = proj / "generated" / "bindings.cpp"
    edited = path.read_text() + "// my fix\n"
    path.write_text(edited)
    _edit_spec(proj, "  - hypot.out\n", "")
    result = helpers.invoke(runner, "--project", proj, "generate")
    assert result.exit_code == EXIT_USAGE
    lines = result.output.splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: generated/bindings.cpp was edited by hand")
    assert "op_specs/" in lines[0] and "--force" in lines[0]
    assert path.read_text() == edited
    result = helpers.invoke(runner, "--project", proj, "generate", "--force")
    assert result.exit_code == 0, result.output
    assert "// my fix" not in path.read_text()
    assert _check(runner, helpers, proj).exit_code == 0


class _Configured(Exception):
    pass


def _no_cmake(monkeypatch):
    """builder.build gets no further than the point before CMake."""

    def stop(*args, **kwargs):
        raise _Configured()

    monkeypatch.setattr(builder, "require_tools", stop)
    monkeypatch.setattr(builder, "configure", stop)


def test_build_refuses_a_hand_edit_before_configuring(proj, tmp_path, monkeypatch):
    _no_cmake(monkeypatch)
    path = proj / "generated" / "ops.cpp"
    edited = path.read_text() + "// my fix\n"
    path.write_text(edited)
    _edit_spec(proj, "  - hypot.out\n", "")
    request = builder.BuildRequest(
        project=projects.load(proj), build_dir=tmp_path / "b", smoke=False
    )
    with pytest.raises(writer.HandEditedError) as caught:
        builder.build(request, echo=lambda line: None)
    assert caught.value.paths == ["ops.cpp"]
    assert path.read_text() == edited
    assert not (tmp_path / "b").exists()
    # --force: the edit is overwritten and the build goes on to CMake
    forced = builder.BuildRequest(
        project=projects.load(proj), build_dir=tmp_path / "b", smoke=False, force=True
    )
    with pytest.raises(_Configured):
        builder.build(forced, echo=lambda line: None)
    assert "// my fix" not in path.read_text()


def test_build_command_refusal_is_one_error_line(
    proj, tmp_path, monkeypatch, runner, helpers
):
    _no_cmake(monkeypatch)
    path = proj / "generated" / "ops.cpp"
    path.write_text(path.read_text() + "// my fix\n")
    _edit_spec(proj, "  - hypot.out\n", "")
    args = ["--project", proj, "build", "--build-dir", tmp_path / "b", "--no-smoke"]
    result = helpers.invoke(runner, *args)
    assert result.exit_code == EXIT_USAGE
    assert result.output.splitlines() == [
        ln for ln in result.output.splitlines() if ln.startswith("error: ")
    ]
    assert "generated/ops.cpp was edited by hand" in result.output
    assert "--force" in result.output
    with pytest.raises(_Configured):
        helpers.invoke(runner, *args, "--force")


# --- -v on every subcommand ------------------------------------------------------------

COMMANDS = sorted(main.commands)
# The arguments a command cannot be parsed without.
REQUIRED_ARGS = {"init": ["some-dir", "--name", "mylib"]}


def test_the_commands_are_enumerated():
    assert {"generate", "build", "bench", "list"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_verbose_is_accepted_before_and_after_every_command(name):
    """The group help promises -v/--verbose before or after the command."""
    command = main.commands[name]
    options = [p for p in command.params if "-v" in getattr(p, "opts", ())]
    assert options, f"'{name}' has no -v option"
    assert "--verbose" in options[0].opts and options[0].is_flag
    for flag in ("-v", "--verbose"):
        parent = main.make_context("infiniops-codegen", [name])
        args = [*REQUIRED_ARGS.get(name, []), flag]
        ctx = command.make_context(name, args, parent=parent)
        assert ctx.find_object(dict)["verbose"] is True, (name, flag)
        parent = main.make_context("infiniops-codegen", [flag, name])
        assert parent.params["verbose"] is True


@pytest.mark.parametrize("where", ["before", "after"])
def test_bench_and_build_pass_verbose_on(where, monkeypatch, runner, helpers):
    """`bench -v` was rejected once; both reach their work with verbose on
    (that work replaced here, nothing is built or timed)."""
    from infiniops_codegen.bench import main as bench_main

    seen = {}
    monkeypatch.setattr(
        bench_main, "run_bench", lambda **kw: seen.update(bench=kw["verbose"])
    )

    def fake_build(request, echo, verbose=False):
        seen["build"] = verbose
        raise builder.BuildError("stopped")

    monkeypatch.setattr(builder, "build", fake_build)
    for name in ("bench", "build"):
        args = ["-v", name] if where == "before" else [name, "-v"]
        helpers.invoke(runner, "--project", REPO, *args)
    assert seen == {"bench": True, "build": True}


# --- Item 7: the build's progress lines ----------------------------------------


def test_build_progress_shows_steps_not_ninja_bookkeeping(tmp_path):
    """Ninja's raw lines become short steps: the glob re-check is not shown,
    the precompiled header is named as such, sources outside the tool's CMake
    project (the project's generated files and kernels) by their path."""
    from infiniops_codegen.toolchain import builder

    shown = builder._short_step
    assert shown("Re-checking globbed directories...") is None
    pch = "Building CXX object CMakeFiles/infiniops_wrappers.dir/cmake_pch.hxx.gch"
    assert shown(pch) == "precompile the common header of infiniops_wrappers"
    kernel = REPO / "cpp" / "kernels" / "cpu" / "add.cc"
    line = f"Building CXX object CMakeFiles/infiniops_kernels_cpu.dir{kernel}.o"
    step = shown(line)
    assert step.startswith("compile ") and step.endswith("cpp/kernels/cpu/add.cc")
    assert "Building" not in step and ".o" not in step
