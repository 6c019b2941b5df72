"""The tool and its projects as packages, as users install them.

The tool's wheel, built from the checkout's files as git lists them, in a
fresh virtual environment (the `tool_venv` fixture, once for the file): it
builds without a setuptools warning and ships its docs; `init`, `build` and
the project's tests pass from it; a copy of this project generates and
builds from it. A project's wheel (docs/packaging.md): an `init` project
with the seed's config settings, installed into another venv that has only
torch, where the package imports and works with no tool and no compiler,
`find_package` builds a C++ program against it, and another build of the
same torch is refused; examples/wheel/ with the seed's command as written.

Each builds the tool's wheel and fresh venvs: deselected from the suite
(own_build, pyproject.toml) and run by CI's `python -m pytest -m own_build`.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from infiniops_codegen.base import project as projects

from environment_skips import requires

pytestmark = pytest.mark.own_build(
    "builds the tool's wheel, fresh venvs and projects' wheels"
)

REPO = Path(__file__).resolve().parent.parent
# The project name of the end-to-end test: the scaffold's tests `import mylib`.
E2E_NAME = "mylib"
# torch pinned to the build this test runs on, so that pip takes it from where
# this environment's came from (pip's configuration and cache).
TORCH_PIN = f"torch=={importlib.metadata.version('torch')}"


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
        if src.is_symlink():  # as git keeps it (infiniops_codegen/docs)
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(src), dest / rel)
        elif src.is_file():
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


@pytest.fixture(scope="module")
def tool_venv(tmp_path_factory):
    """The tool as a user installs it: its wheel, built from a copy of the
    checkout, in a new venv with torch and pytest. SimpleNamespace(python,
    tool, env: PATH and VIRTUAL_ENV of the venv)."""
    tmp_path = tmp_path_factory.mktemp("tool_venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.pop("INFINIOPS_PROJECT", None)
    env.pop("INFINIOPS_BUILD_DIR", None)
    src = _sources(tmp_path / "src")
    # -v: setuptools' warnings (printed by the backend) reach the output;
    # byte-compiling on, so that distutils does not say it is skipped.
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps"]
        + ["--no-build-isolation", "-w", tmp_path / "dist", src],
        tmp_path,
        {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"},
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
    # pytest: the project's tests run with it; build: python -m build
    _run(
        [python, "-m", "pip", "install", "-q", TORCH_PIN, wheel, "pytest", "build"],
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
    return SimpleNamespace(
        python=python,
        tool=str(venv / "bin" / "infiniops-codegen"),
        env=env,
        wheel=wheel,
        build_output=built.stdout + built.stderr,
    )


@requires("git")
def test_the_tools_wheel_builds_without_warnings_and_ships_its_docs(tool_venv):
    # pip's own lines about this machine's package index are not the build's
    warnings = [
        line
        for line in tool_venv.build_output.splitlines()
        if re.search(r"warn|deprecat", line, re.I)
        and not line.startswith("WARNING: Location ")
    ]
    assert warnings == []
    with zipfile.ZipFile(tool_venv.wheel) as z:
        metadata = z.read(
            next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        ).decode()
        names = set(z.namelist())
    assert "License-Expression: Apache-2.0" in metadata
    assert re.search(r"^Project-URL: Documentation, https://\S+/docs$", metadata, re.M)
    shipped = {
        n.removeprefix("infiniops_codegen/docs/")
        for n in names
        if n.startswith("infiniops_codegen/docs/")
    }
    in_repo = {
        p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")
    }
    assert shipped == in_repo
    # what the installed tool says of them
    listed = _run([tool_venv.tool, "docs"], REPO, tool_venv.env).stdout.splitlines()
    assert any(re.fullmatch(r"adding-an-op +Adding an op", line) for line in listed)
    assert any(
        re.fullmatch(r"packaging +Packaging: a project as a wheel", l) for l in listed
    )
    text = _run([tool_venv.tool, "docs", "packaging"], REPO, tool_venv.env).stdout
    assert text == (REPO / "docs" / "packaging.md").read_text()


@requires("git")
def test_init_build_test_from_a_wheel(tool_venv, tmp_path):
    python, tool, env = tool_venv.python, tool_venv.tool, dict(tool_venv.env)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
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


@requires("git")
def test_a_copy_of_this_project_generates_and_builds_from_the_tools_wheel(
    tool_venv, tmp_path
):
    """The tool from its wheel on this repository's project, copied outside
    the checkout and used from a subdirectory (found by walking up):
    `--version` reads the tested ranges from the wheel's metadata, `generate
    --check` finds the copy's generated/ current, a small build compiles,
    links and passes its smoke call, `list` reads it and `import infiniops`
    from its build directory goes through the torch check. The checkout does
    not change."""
    python, tool, env = tool_venv.python, tool_venv.tool, dict(tool_venv.env)
    status = ["git", "status", "--porcelain=v1", "-uall"]
    before = _run(status, REPO, env).stdout
    version = _run([tool, "--version"], tmp_path, env).stdout
    assert "as its package metadata states" in version, version
    project = tmp_path / "project"
    project.mkdir()
    for rel in ("op_specs", "generated", "cpp"):
        shutil.copytree(REPO / rel, project / rel)
    shutil.copy2(REPO / "pyproject.toml", project / "pyproject.toml")
    inside = project / "op_specs"
    _run([tool, "generate", "--check"], inside, env)
    # native CPU kernels of add and mul, abs a fallback
    _run([tool, "build", "--ops", "add,mul,abs", "--no-ccache"], inside, env)
    listed = _run([tool, "list", "--build-dir", "../build"], inside, env).stdout
    assert re.search(r"^add +native", listed, re.M), listed
    shown = _run(
        [python, "-c", "import infiniops; print(len(infiniops.implementations()))"],
        project / "build",
        env,
    )
    assert shown.stdout.strip() == "3"
    assert _run(status, REPO, env).stdout == before


# --- the project as a package: its wheel, installed where the tool is not -------

WHEEL_NAME = "acmeops"
# The scaffold's ops, each called in the clean venv against torch; an op the
# scaffold gains must be added here (the test compares the sets).
OP_CHECKS = """
import importlib.util, json, sys
import torch
import acmeops

x = torch.randn(6, 5)
x.view(-1)[:4] = torch.tensor([-1.0, -0.0, 0.0, float("nan")])
checks = {
    "add": lambda: (acmeops.add(x, x, alpha=2), torch.add(x, x, alpha=2)),
    "relu": lambda: (acmeops.relu(x), torch.relu(x)),
    "relu_squared": lambda: (acmeops.relu_squared(x), torch.relu(x) ** 2),
}
assert set(acmeops.implementations()) == set(checks), acmeops.implementations()
for name, check in checks.items():
    got, want = check()
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
out = torch.empty_like(x)
assert acmeops.relu(x, out=out, implementation="native") is out
print(json.dumps({
    "ops": sorted(checks),
    "file": acmeops.__file__,
    "cmake_prefix_path": acmeops.cmake_prefix_path,
    "torch_version": acmeops.__torch_version__,
    "tool": importlib.util.find_spec("infiniops_codegen") is not None,
    "scikit_build_core": importlib.util.find_spec("scikit_build_core") is not None,
    "registered": str(torch.ops.acmeops.relu),
}))
"""
CPP_PROGRAM = {
    "CMakeLists.txt": """cmake_minimum_required(VERSION 3.22)
project(uses_acmeops LANGUAGES CXX)
# CMAKE_PREFIX_PATH: acmeops.cmake_prefix_path, the installed package.
find_package(acmeops CONFIG REQUIRED)
add_executable(uses_acmeops main.cpp)
target_link_libraries(uses_acmeops PRIVATE acmeops::acmeops)
""",
    "main.cpp": """#include <acmeops/ops.h>

#include <cstdio>
#include <vector>

int main() {
  std::vector<float> x{-2.0f, -0.5f, 0.0f, 1.5f}, relu(4), square(4);
  auto tensor = [](std::vector<float>& v) {
    return acmeops::Tensor::contiguous(v.data(), {4}, acmeops::DataType::kFloat32,
                                       acmeops::Device{});
  };
  acmeops::Tensor tx = tensor(x), trelu = tensor(relu), tsquare = tensor(square);
  acmeops::relu(tx, trelu, acmeops::Implementation::kNative);  // the native kernel
  acmeops::relu_squared(tx, tsquare);  // the composite, through ATen
  bool ok = relu == std::vector<float>{0.0f, 0.0f, 0.0f, 1.5f} &&
            square == std::vector<float>{0.0f, 0.0f, 0.0f, 2.25f};
  std::puts(ok ? "ok" : "wrong");
  return ok ? 0 : 1;
}
""",
}


@requires("git")
def test_init_project_as_a_wheel_installed_without_the_tool(tool_venv, tmp_path):
    """docs/packaging.md's promise: `init lib --name acmeops`, `pip wheel
    ./lib --no-build-isolation` with the seed's config settings gives one
    wheel; in a new venv with only torch of the pinned release, with no
    compiler on PATH, the package imports and each op matches torch, and the
    project's tests pass against it; find_package(acmeops) through it builds
    a C++ program; the package refuses another build of the same torch.
    (The pip options are the seed's; tests/skips.yaml's git entry: the tool's
    wheel is built from the checkout's files as git lists them.)"""
    python, tool, env = tool_venv.python, tool_venv.tool, dict(tool_venv.env)
    _run([tool, "init", "lib", "--name", WHEEL_NAME], tmp_path, env)
    project_root = tmp_path / "lib"
    _run(
        [python, "-m", "pip", "wheel", "./lib", "--no-build-isolation", "--no-deps"]
        + ["-w", "dist", "--config-settings=cmake.define.WITH_CPU=ON"]
        + ["--config-settings=cmake.define.INFINI_OPS_TORCH_OPT_LEVEL=3"],
        tmp_path,
        env,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    # the interpreter's and platform's tag; the pinned torch beside the range
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert wheel.name == f"{WHEEL_NAME}-0.1.0-{py}-{py}-linux_{os.uname().machine}.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        metadata = z.read(f"{WHEEL_NAME}-0.1.0.dist-info/METADATA").decode()
        blobs = {n: z.read(n) for n in names}
    release = TORCH_PIN.split("==")[1].split("+")[0]
    assert f"Requires-Dist: torch=={release}\n" in metadata, metadata
    assert "Requires-Dist: torch<" in metadata or "Requires-Dist: torch>=" in metadata
    for member in (
        "__init__.py",
        "__init__.pyi",
        "py.typed",
        "lib/libacmeops.so",
        "include/acmeops/ops.h",
        "include/acmeops/core/tensor.h",
        "lib/cmake/acmeops/acmeopsConfig.cmake",
        "manifest.json",
        "torch-build.json",
        "_runtime/runtime/loader.py",
        "_runtime/base/locations.py",
    ):
        assert f"{WHEEL_NAME}/{member}" in names, member
    assert any(n.startswith(f"{WHEEL_NAME}/{WHEEL_NAME}.cpython-") for n in names)
    # nothing of the build environment: not the project, not its site-packages
    site = _run(
        [
            python,
            "-c",
            "import torch, pathlib; print(pathlib.Path(torch.__file__).parents[1])",
        ],
        tmp_path,
        env,
    ).stdout.strip()
    for name, blob in blobs.items():
        for path in (str(project_root), site, str(tmp_path)):
            assert path.encode() not in blob, f"{name} holds {path}"

    clean = tmp_path / "clean"
    clean_env = {k: v for k, v in env.items() if k != "VIRTUAL_ENV"}
    clean_env["PATH"] = os.environ.get("PATH", "")
    _run([sys.executable, "-m", "venv", clean], tmp_path, clean_env)
    clean_python = clean / "bin" / "python"
    _run(
        [clean_python, "-m", "pip", "install", "-q", TORCH_PIN, wheel, "pytest"],
        tmp_path,
        clean_env,
    )
    # No compiler, no cmake: the venv's bin/ alone on PATH.
    bare = dict(clean_env, PATH=str(clean / "bin"), VIRTUAL_ENV=str(clean))
    bare.pop("INFINIOPS_TEST_INSTALLED", None)
    checked = json.loads(
        _run([clean_python, "-c", OP_CHECKS], tmp_path, bare).stdout.splitlines()[-1]
    )
    assert checked["file"].startswith(str(clean)), checked
    assert not checked["tool"] and not checked["scikit_build_core"], checked
    assert checked["cmake_prefix_path"] == str(Path(checked["file"]).parent)
    assert checked["torch_version"].split("+")[0] == release
    assert checked["registered"] == "acmeops.relu"
    # the project's own tests, against the installed package (its CI's way)
    tests = _run(
        [clean_python, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        project_root,
        dict(bare, INFINIOPS_TEST_INSTALLED="1"),
    )
    assert " passed" in tests.stdout and "failed" not in tests.stdout, tests.stdout

    # A C++ program through the installed package's CMake package.
    program = tmp_path / "program"
    program.mkdir()
    for rel, text in CPP_PROGRAM.items():
        (program / rel).write_text(text)
    assert len(CPP_PROGRAM["main.cpp"].splitlines()) <= 25
    prefix = checked["cmake_prefix_path"]
    _run(
        ["cmake", "-S", program, "-B", program / "build", "-G", "Ninja"]
        + [f"-DCMAKE_PREFIX_PATH={prefix}"],
        tmp_path,
        clean_env,
    )
    _run(["ninja", "-C", program / "build"], tmp_path, clean_env)
    ran = _run([program / "build" / "uses_acmeops"], tmp_path, clean_env)
    assert ran.stdout.strip() == "ok"

    # Another build of the same release (what `==X.Y.Z` cannot tell apart:
    # +cpu and +cu130): made here by rewriting the clean venv's torch/version.py
    # as a CUDA build's; the loader refuses it before loading the module.
    version_py = Path(checked["file"]).parents[1] / "torch" / "version.py"
    text = version_py.read_text()
    version_py.write_text(
        re.sub(r"^cuda(.*)= None$", "cuda\\1= '13.0'", text, flags=re.M).replace(
            f"'{checked['torch_version']}'", f"'{release}+cu130'"
        )
    )
    refused = subprocess.run(
        [clean_python, "-c", "import acmeops"],
        cwd=tmp_path,
        env=bare,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1
    assert "ImportError: acmeops 0.1.0 (" in refused.stderr, refused.stderr
    assert f"was built against torch {checked['torch_version']} (CPU)" in refused.stderr
    assert f"but torch {release}+cu130 (CUDA 13.0) is installed" in refused.stderr


EXAMPLE_CHECKS = """
import importlib.metadata, json
import torch
import exampleops

a, b = torch.randn(4, 5), torch.randn(5)
a[0, 0] = float("nan")
for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
    x, y = a.to(dtype), b.to(dtype)
    torch.testing.assert_close(
        exampleops.maximum(x, y), torch.maximum(x, y), rtol=0, atol=0, equal_nan=True
    )
out = torch.empty(4, 5)
assert exampleops.maximum(a, b, out=out, implementation="native") is out
torch.testing.assert_close(exampleops.add(a, b, alpha=3), torch.add(a, b, alpha=3), equal_nan=True)
torch.testing.assert_close(exampleops.gelu(b), torch.nn.functional.gelu(b))
meta = importlib.metadata.metadata("exampleops")
print(json.dumps({
    "version": meta["Version"],
    "license": meta["License-Expression"],
    "requires": importlib.metadata.requires("exampleops"),
    "implementations": exampleops.implementations(),
}))
"""


@requires("git")
def test_the_example_project_installs_with_the_seeds_command(tool_venv, tmp_path):
    """examples/wheel/ with the seed's command as written (less WITH_NVIDIA,
    which needs a CUDA torch), in the tool's venv; `python -m build --sdist`
    gives a source archive a wheel builds from."""
    python, env = tool_venv.python, dict(tool_venv.env)
    project = tmp_path / "wheel"
    shutil.copytree(
        REPO / "examples" / "wheel", project, ignore=shutil.ignore_patterns("build")
    )
    _run(
        [python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-v"]
        + [".", "--config-settings=cmake.define.WITH_CPU=ON"]
        + ["--config-settings=cmake.define.INFINI_OPS_TORCH_OPT_LEVEL=3"],
        project,
        env,
    )
    checked = json.loads(
        _run([python, "-c", EXAMPLE_CHECKS], tmp_path, env).stdout.splitlines()[-1]
    )
    release = TORCH_PIN.split("==")[1].split("+")[0]
    assert checked["version"] == "1.2.0" and checked["license"] == "Apache-2.0"
    assert sorted(checked["requires"]) == sorted(
        ["torch<2.16,>=2.11", f"torch=={release}"]
    )
    assert checked["implementations"]["maximum"] == {"cpu": ["native", "torch"]}
    _run(
        [python, "-m", "build", "--sdist", "--no-isolation", "-o", tmp_path / "sdist"]
        + ["."],
        project,
        env,
    )
    (sdist,) = (tmp_path / "sdist").glob("exampleops-1.2.0.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in (
        "pyproject.toml",
        "README.md",
        "op_specs/ops.yaml",
        "cpp/kernels/cpu/maximum.cc",
        "generated/sources.cmake",
        "generated/exampleops.pyi",
    ):
        assert needed in names, needed
    assert not any(n.startswith("build/") for n in names)


@requires("git")
def test_an_editable_install_rebuilds_on_import_after_a_spec_edit(tool_venv, tmp_path):
    """docs/packaging.md#editable-installs: `pip install -e .
    --no-build-isolation -Ceditable.rebuild=true`, then an op added to the
    spec is there at the next import (regenerated, compiled, linked by the
    import itself)."""
    python, tool, env = tool_venv.python, tool_venv.tool, dict(tool_venv.env)
    _run([tool, "init", "lib", "--name", "editableops"], tmp_path, env)
    project = tmp_path / "lib"
    _run(
        [python, "-m", "pip", "install", "-e", ".", "--no-build-isolation"]
        + ["--no-deps", "-Ceditable.rebuild=true", "-Ceditable.verbose=false"],
        project,
        env,
    )
    show = "import editableops; print(sorted(editableops.implementations()))"
    before = _run([python, "-c", show], tmp_path, env).stdout.splitlines()[-1]
    assert before == "['add', 'relu', 'relu_squared']"
    specs = project / "op_specs" / "ops.yaml"
    specs.write_text(
        specs.read_text().replace("  - add.out\n", "  - add.out\n  - mul.out\n")
    )
    after = _run([python, "-c", show], tmp_path, env).stdout.splitlines()[-1]
    assert after == "['add', 'mul', 'relu', 'relu_squared']"
    x = "import torch, editableops; x = torch.randn(5); print(torch.equal(editableops.mul(x, x), x * x))"
    assert _run([python, "-c", x], tmp_path, env).stdout.splitlines()[-1] == "True"
    # the project's generated/ follows the spec, as `build` keeps it
    _run([tool, "generate", "--check"], project, env)
