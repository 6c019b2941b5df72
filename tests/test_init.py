"""`infiniops-codegen init DIR --name NAME`: the scaffold of a new project.

The fast tests check what init writes and what it refuses (no build). The
last test is the command's promise, from a wheel install of the tool in a
fresh virtual environment, in a scratch directory: `init mylib-demo --name
<name> && cd mylib-demo && infiniops-codegen build && python -m pytest -q`
passes, and `generate --check` after it.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen import project as projects
from infiniops_codegen import scaffold

from environment_skips import requires

REPO = Path(__file__).resolve().parent.parent
# The project name of the end-to-end test: the scaffold's tests `import mylib`.
E2E_NAME = "mylib"


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
        "bool relu(const Tensor& self, Tensor& out);"
    ) == 1
    check = helpers.invoke(runner, "--project", root, "generate", "--check")
    assert check.exit_code == 0, check.output
    # the project's name where people and tools read it
    tests = (root / "tests" / "test_ops.py").read_text()
    assert "\nimport mylib as ops\n" in tests
    assert 'find_spec("mylib")' in (root / "tests" / "conftest.py").read_text()
    assert "import mylib\n" in (root / "README.md").read_text()
    ci = (root / ".github" / "workflows" / "ci.yml").read_text()
    for step in ("generate --check", "infiniops-codegen build", "python -m pytest -q"):
        assert step in ci, step
    kernel = (root / "cpp" / "kernels" / "cpu" / "relu.cc").read_text()
    assert "namespace infini::ops::native::cpu {" in kernel
    assert 'decline("' in kernel
    # what was written, and the next commands
    lines = result.output.splitlines()
    assert lines[0] == f"wrote the project mylib into {root}/:"
    assert lines[1 : 1 + len(scaffold.FILES)] == [f"  {rel}" for rel in scaffold.FILES]
    assert "generated 3 ops into " in result.output
    assert lines[-3:] == [
        f"  cd {root}",
        "  infiniops-codegen build       # compiles the module into build/",
        "  python -m pytest -q           # each op against torch",
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


# --- the promise: from a wheel, init, build, test ---------------------------------


def _sources(dest: Path) -> Path:
    """The checkout's files (tracked and untracked, not ignored) copied to
    dest: setuptools writes build/ and *.egg-info into the tree it builds."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _run(argv, cwd: Path, env: dict, timeout: int = 900):
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, (
        f"{' '.join(map(str, argv))} (in {cwd}) exited {done.returncode}:\n"
        f"{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    )
    return done


@requires("git")
def test_init_build_test_from_a_wheel(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.pop("INFINIOPS_PROJECT", None)
    env.pop("INFINIOPS_BUILD_DIR", None)
    src = _sources(tmp_path / "src")
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps"]
        + ["--no-build-isolation", "-w", tmp_path / "dist", src],
        tmp_path,
        env,
    )
    (wheel,) = (tmp_path / "dist").glob("infiniops_codegen-*.whl")
    venv = tmp_path / "venv"
    # A new venv with nothing inherited (--system-site-packages would give
    # the *base* interpreter's packages, not this environment's when it is a
    # venv itself): the wheel and its dependencies installed as a user
    # installs them, torch pinned to the build this test runs on so that pip
    # takes it from where this environment's came from (pip's configuration
    # and cache) instead of resolving another release.
    _run([sys.executable, "-m", "venv", venv], tmp_path, env)
    python = venv / "bin" / "python"
    torch_pin = f"torch=={importlib.metadata.version('torch')}"
    # pytest: the project's tests run with it
    _run(
        [python, "-m", "pip", "install", "-q", torch_pin, wheel, "pytest"],
        tmp_path,
        env,
    )
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    where = _run(
        [python, "-c", "import infiniops_codegen; print(infiniops_codegen.__file__)"],
        tmp_path,
        env,
    ).stdout.strip()
    assert where.startswith(str(venv)), f"the tool came from {where}, not the wheel"

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    tool = str(venv / "bin" / "infiniops-codegen")
    _run([tool, "init", "mylib-demo", "--name", E2E_NAME], scratch, env)
    root = scratch / "mylib-demo"
    _run([tool, "build"], root, env)
    tests = _run([python, "-m", "pytest", "-q"], root, env)
    assert " passed" in tests.stdout and "failed" not in tests.stdout, tests.stdout
    _run([tool, "generate", "--check"], root, env)
    # the module is the project's name: importable from the build directory
    name = projects.load(root).name
    assert name == E2E_NAME
    env["PYTHONPATH"] = str(root / "build")
    shown = _run(
        [python, "-c", f"import {name}; print({name}.implementations()['relu'])"],
        scratch,
        env,
    )
    assert shown.stdout.strip() == "{'cpu': ['native', 'torch']}"
