"""The project the tool works on (infiniops_codegen/base/project.py): found from
the working directory or --project, its [tool.infiniops-codegen] table
validated with located errors, and generation written only inside it (the
default set into its generated/, anything else into <build dir>/generated/,
the same rule for `generate` and `build`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import builder
from infiniops_codegen.base import project
from infiniops_codegen.cli import EXIT_USAGE

REPO = Path(__file__).resolve().parent.parent
TABLE = '[tool.infiniops-codegen]\nspecs = "op_specs"\n'


def _project(root: Path, table: str = TABLE, specs: Path | None = None) -> Path:
    """A project at root: pyproject.toml with the table, and op specs."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n\n' + table)
    shutil.copytree(specs or REPO / "op_specs", root / "op_specs")
    return root


def test_found_from_a_subdirectory(tmp_path, monkeypatch):
    root = _project(tmp_path / "proj")
    (root / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(root / "deep" / "er")
    monkeypatch.delenv("INFINIOPS_PROJECT", raising=False)
    found = project.find()
    assert found.root == root.resolve()
    assert found.specs == root.resolve() / "op_specs"
    assert found.generated == root.resolve() / "generated"
    assert found.kernels == root.resolve() / "cpp" / "kernels"
    assert found.build_dir == root.resolve() / "build"


def test_a_pyproject_without_the_table_is_passed_over(tmp_path, monkeypatch):
    root = _project(tmp_path / "proj")
    inner = root / "python_pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "other"\n')
    monkeypatch.chdir(inner)
    assert project.find().root == root.resolve()


def test_the_table_sets_the_paths(tmp_path):
    table = (
        "[tool.infiniops-codegen]\n"
        'specs = "op_specs"\ngenerated = "src/gen"\n'
        'kernels = "native"\nbuild-dir = "out/build"\n'
    )
    found = project.load(_project(tmp_path / "p", table))
    assert found.generated == (tmp_path / "p" / "src" / "gen").resolve()
    assert found.kernels == (tmp_path / "p" / "native").resolve()
    assert found.build_dir == (tmp_path / "p" / "out" / "build").resolve()


@pytest.mark.parametrize(
    "line, message",
    [
        ('spec = "op_specs"', "unknown key 'spec'"),
        ('generated = "../elsewhere"', "leaves the project ('..')"),
        ('build-dir = "/tmp/b"', "is absolute"),
        ("kernels = 3", "'kernels' must be a path string"),
    ],
)
def test_a_bad_table_entry_is_located(tmp_path, line, message):
    table = f"[tool.infiniops-codegen]\n# where things are\n{line}\n"
    root = _project(tmp_path / "p", table)
    with pytest.raises(project.ProjectError) as e:
        project.load(root)
    # [project] (1), name (2), blank (3), table (4), comment (5), the line (6)
    assert str(e.value).startswith(f"{root / 'pyproject.toml'}:6:1: ")
    assert message in str(e.value)


def test_invalid_toml_is_located(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.infiniops-codegen]\nspecs = "x\n')
    with pytest.raises(
        project.ProjectError, match=r"pyproject.toml:2:\d+: not valid TOML"
    ):
        project.find(root)


def test_outside_any_project_one_error_and_exit_2(
    tmp_path, monkeypatch, runner, helpers
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INFINIOPS_PROJECT", raising=False)
    for args in (["generate"], ["generate", "--check"], ["build"], ["list"]):
        result = helpers.invoke(runner, *args)
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1, result.output
        assert lines[0].startswith("error: no infiniops-codegen project at or above")
        assert "--project DIR" in lines[0]


def test_project_option_names_a_directory_without_the_table(tmp_path, runner, helpers):
    result = helpers.invoke(runner, "--project", tmp_path, "generate", "--check")
    assert result.exit_code == EXIT_USAGE
    assert "is not an infiniops-codegen project" in result.output


def test_generate_in_a_second_copy_writes_that_copy(
    tmp_path, monkeypatch, runner, helpers
):
    """The issue's case: an install of the tool from one checkout, run in
    another copy, wrote the first checkout's generated/."""
    before = helpers.tree(REPO / "generated")
    copy = _project(tmp_path / "copy")
    monkeypatch.chdir(copy / "op_specs")
    result = helpers.invoke(runner, "generate")
    assert result.exit_code == 0, result.output
    assert helpers.tree(copy / "generated") == before  # same specs, same files
    assert helpers.tree(REPO / "generated") == before
    check = helpers.invoke(runner, "generate", "--check")
    assert check.exit_code == 0, check.output


def test_project_option_from_elsewhere(tmp_path, runner, helpers):
    copy = _project(tmp_path / "copy")
    result = helpers.invoke(runner, "--project", copy, "generate", "--ops", "add,mul")
    assert result.exit_code == 0, result.output
    assert (copy / "build" / "generated" / "manifest.json").is_file()
    assert not (copy / "generated").exists()  # only the default set goes there


def test_one_rule_for_generate_and_build(tmp_path, runner, helpers):
    """Non-default generation goes to <build dir>/generated/ for both
    commands; other --specs than the project's are non-default too."""
    copy = project.load(_project(tmp_path / "copy"))
    other_specs = tmp_path / "other_specs"
    shutil.copytree(copy.specs, other_specs)
    cases = [
        ({"ops": "add,mul"}, copy.build_dir / "generated"),
        ({"spec_dir": other_specs}, copy.build_dir / "generated"),
        ({"ops": "add", "build_dir": tmp_path / "b"}, tmp_path / "b" / "generated"),
        ({}, copy.generated),
    ]
    for kwargs, expected in cases:
        request = builder.BuildRequest(project=copy, **kwargs)
        assert builder.generated_dir_for(request) == expected, kwargs
        args = ["--project", copy.root, "generate"]
        if "ops" in kwargs:
            args += ["--ops", kwargs["ops"]]
        if "spec_dir" in kwargs:
            args += ["--specs", kwargs["spec_dir"]]
        if "build_dir" in kwargs:
            args += ["--build-dir", kwargs["build_dir"]]
        result = helpers.invoke(runner, *args)
        assert result.exit_code == 0, result.output
        assert (expected / "manifest.json").is_file(), (kwargs, result.output)
