"""`infiniops-codegen init DIR --name NAME`: the scaffold of a new project.

What init writes and what it refuses (no build). The command's promise,
from a wheel install of the tool in a fresh virtual environment (`init`,
`build`, the project's tests, its wheel installed where the tool is not), is
tests/test_packages.py's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infiniops_codegen.base import project as projects
from infiniops_codegen.scaffold import init as scaffold


def _init(helpers, runner, directory: Path, *args: str):
    return helpers.invoke(runner, "init", directory, *args)


# --- what init writes -----------------------------------------------------------


def test_init_writes_a_project_and_generates_it(tmp_path, runner, helpers):
    root = tmp_path / "mylib-demo"
    result = _init(helpers, runner, root, "--name", "mylib")
    assert result.exit_code == 0, result.output
    for rel in scaffold.FILES:
        assert (root / rel).is_file(), rel
    proj = projects.load(root)
    assert proj.name == "mylib" and proj.specs == root / "op_specs"
    # generated/ is there, as it would be committed: `generate --check` agrees
    assert (root / "generated" / "manifest.json").is_file()
    assert (root / "generated" / "native_kernels.h").read_text().count(
        "KernelResult relu(const Tensor& self, Tensor& out);"
    ) == 1
    check = helpers.invoke(runner, "--project", root, "generate", "--check")
    assert check.exit_code == 0, check.output
    # the project's name where people and tools read it
    tests = (root / "tests" / "test_ops.py").read_text()
    assert "\nimport mylib as ops\n" in tests
    assert 'find_spec("mylib")' in (root / "tests" / "conftest.py").read_text()
    assert "import mylib\n" in (root / "README.md").read_text()
    ci = (root / ".github" / "workflows" / "ci.yml").read_text()
    for step in (
        "generate --check",
        "infiniops-codegen check --fuzz",
        "pip wheel . --no-build-isolation",
        "/tmp/clean/bin/pip install dist/*.whl",
        "INFINIOPS_TEST_INSTALLED=1 /tmp/clean/bin/python -m pytest -q",
    ):
        assert step in ci, step
    # the project is a package built by the tool's backend
    pyproject = (root / "pyproject.toml").read_text()
    assert 'build-backend = "infiniops_codegen.build_backend"' in pyproject
    assert 'name = "mylib"' in pyproject and 'dynamic = ["dependencies"]' in pyproject
    kernel = (root / "cpp" / "kernels" / "cpu" / "relu.cc").read_text()
    assert "namespace infini::ops::native::cpu {" in kernel
    assert 'decline("' in kernel
    # what was written, and the next commands
    lines = result.output.splitlines()
    assert lines[0] == f"wrote the project mylib into {root}/:"
    assert lines[1 : 1 + len(scaffold.FILES)] == [f"  {rel}" for rel in scaffold.FILES]
    assert "generated 3 ops into " in result.output
    assert lines[-4:] == [
        f"  cd {root}",
        "  infiniops-codegen build       # compiles the module into build/",
        "  python -m pytest -q           # each op against torch",
        "  pip wheel . --no-build-isolation --no-deps -w dist"
        "   # the package (infiniops-codegen docs packaging)",
    ]


def test_init_is_listed_in_help(runner, helpers):
    result = helpers.invoke(runner, "--help")
    assert "init my-ops --name myops" in result.output
    assert "\n  init " in result.output


# --- what init refuses ----------------------------------------------------------


def test_init_refuses_a_directory_that_is_not_empty(tmp_path, runner, helpers):
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "notes.txt").write_text("mine\n")
    before = helpers.tree(root)
    result = _init(helpers, runner, root, "--name", "mylib")
    assert result.exit_code == 2
    assert result.output.startswith(
        f"error: {root} is not empty (notes.txt, src/): init writes a new project "
        "into a new or empty directory; --force writes the scaffold's files "
        "(pyproject.toml, .gitignore, README.md, op_specs/ops.yaml, "
        "cpp/kernels/cpu/relu.cc, tests/conftest.py, tests/test_ops.py, "
        ".github/workflows/ci.yml) over any of them there and leaves every "
        "other file as it is\n"
    ), result.output
    assert helpers.tree(root) == before and sorted(os.listdir(root)) == [
        "notes.txt",
        "src",
    ]


def test_init_refusal_shows_the_first_entries(tmp_path, runner, helpers):
    root = tmp_path / "full"
    root.mkdir()
    for n in range(8):
        (root / f"f{n}").write_text("")
    result = _init(helpers, runner, root, "--name", "mylib")
    assert result.exit_code == 2
    assert f"{root} is not empty (f0, f1, f2, f3, f4 and 3 more)" in result.output


def test_init_force_writes_only_the_scaffolds_files(tmp_path, runner, helpers):
    root = tmp_path / "work"
    (root / "op_specs").mkdir(parents=True)
    (root / "notes.txt").write_text("mine\n")
    (root / "README.md").write_text("my readme\n")
    result = _init(helpers, runner, root, "--name", "mylib", "--force")
    assert result.exit_code == 0, result.output
    assert (root / "notes.txt").read_text() == "mine\n"  # never touched
    assert (root / "README.md").read_text().startswith("# mylib\n")
    assert (
        "  README.md  (overwritten: it was there, with other content)"
        in result.output.splitlines()
    )
    assert "  pyproject.toml" in result.output.splitlines()
    # again: every file is the scaffold's already
    again = _init(helpers, runner, root, "--name", "mylib", "--force")
    assert again.exit_code == 0, again.output
    for rel in scaffold.FILES:
        assert f"  {rel}  (unchanged: it was there, the same)" in again.output


@pytest.mark.parametrize(
    "name, message",
    [
        (
            "MyLib",
            "error: --name: 'name' = 'MyLib' must be a lower-case identifier "
            "(letters, digits, '_'; a letter first), e.g. 'mylib'",
        ),
        ("my-lib", "error: --name: 'name' = 'my-lib' must be a lower-case identifier"),
        (
            "torch",
            "error: --name: 'name' = 'torch' is a Python or C++ keyword or a name "
            "torch or the tool uses; choose another, e.g. 'mylib'",
        ),
        ("class", "error: --name: 'name' = 'class' is a Python or C++ keyword"),
    ],
)
def test_init_refuses_a_bad_name(tmp_path, runner, helpers, name, message):
    root = tmp_path / "new"
    result = _init(helpers, runner, root, "--name", name)
    assert result.exit_code == 2
    assert result.output.startswith(message), result.output
    assert not root.exists()  # nothing written


def test_init_needs_a_name(tmp_path, runner, helpers):
    result = _init(helpers, runner, tmp_path / "new")
    assert result.exit_code == 2
    assert "Missing option '--name'" in result.output


def test_init_refuses_a_file_for_a_directory(tmp_path, runner, helpers):
    path = tmp_path / "afile"
    path.write_text("x")
    result = _init(helpers, runner, path, "--name", "mylib")
    assert result.exit_code == 2
    assert result.output == f"error: {path} exists and is not a directory\n"
