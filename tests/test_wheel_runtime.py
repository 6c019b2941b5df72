"""What a project's wheel is made of, without building one (docs/packaging.md):
the build backend's checks of the build options and of the project's
pyproject.toml, its torch pin, the CMake project's generate step, and the
run-time modules the wheel copies in, which must import nothing else of the
tool. tests/test_init.py builds wheels and installs them.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import wheel as build_backend
from infiniops_codegen.base import torch_build
from infiniops_codegen.base.locations import PACKAGE_DIR, SUPPORT_DIR

REPO = Path(__file__).resolve().parent.parent
PLATFORMS = ("cpu", "nvidia", "sim")


# --- the build options (config settings) ------------------------------------------


@pytest.mark.parametrize(
    "settings, defines",
    [
        (None, {}),
        (
            {
                "cmake.define.WITH_CPU": "ON",
                "cmake.define.WITH_NVIDIA": "off",
                "cmake.define.INFINI_OPS_TORCH_OPT_LEVEL": "s",
                "cmake.define.INFINI_OPS_OPS": "add,mul",
                "cmake.define.CMAKE_CXX_FLAGS": "-march=native",
                "cmake.build-type": "Debug",
                "editable.rebuild": "true",
            },
            {
                "WITH_CPU": "ON",
                "WITH_NVIDIA": "off",
                "INFINI_OPS_TORCH_OPT_LEVEL": "s",
                "INFINI_OPS_OPS": "add,mul",
                "CMAKE_CXX_FLAGS": "-march=native",
            },
        ),
        # pip passes a setting given twice as a list: the same value is one
        ({"cmake.define.WITH_CPU": ["ON", "ON"]}, {"WITH_CPU": "ON"}),
    ],
)
def test_valid_options(settings, defines):
    assert build_backend.check_options(settings, PLATFORMS) == defines


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            {"cmake.define.INFINI_OPS_TORCH_OPT_LEVEL": "4"},
            "cmake.define.INFINI_OPS_TORCH_OPT_LEVEL=4: use one of 0, 1, 2, 3, s",
        ),
        (
            {"cmake.define.WITH_FOO": "ON"},
            "cmake.define.WITH_FOO: no platform 'foo'; the platforms: "
            "WITH_CPU, WITH_NVIDIA, WITH_SIM",
        ),
        (
            {"cmake.define.WITH_CPU": "maybe"},
            "cmake.define.WITH_CPU=maybe: use ON or OFF",
        ),
        (
            {"cmake.define.INFINI_OPS_OPTLEVEL": "3"},
            "cmake.define.INFINI_OPS_OPTLEVEL: no such build option; the tool's: "
            "INFINI_OPS_TORCH_OPT_LEVEL, INFINI_OPS_OPS, INFINI_OPS_PCH, "
            "INFINI_OPS_CPU_COMPILER, INFINI_OPS_NVIDIA_COMPILER, "
            "INFINI_OPS_SIM_COMPILER, WITH_CPU, WITH_NVIDIA, WITH_SIM",
        ),
        (
            {"cmake.build-type": "Fast"},
            "cmake.build-type=Fast: use one of Release, Debug, RelWithDebInfo, "
            "MinSizeRel",
        ),
        (
            {"cmake.define.INFINI_OPS_OPS": " "},
            "cmake.define.INFINI_OPS_OPS is empty: name ops (add,mul), 'all' or "
            "'default'",
        ),
        (
            {"cmake.define.WITH_CPU": ["ON", "OFF"]},
            "cmake.define.WITH_CPU is given 2 times: give it once",
        ),
        (
            {"cmake.source-dir": "."},
            "cmake.source-dir is set by the backend (the tool's CMake project): "
            "leave it out",
        ),
        (
            {"cmake.define.INFINI_OPS_GENERATED_DIR": "/x"},
            "cmake.define.INFINI_OPS_GENERATED_DIR is set by the backend: leave it out",
        ),
        (
            {"cmake.define.INFINI_OPS_SANITIZE": "address"},
            "cmake.define.INFINI_OPS_SANITIZE: not for a wheel (a sanitized module "
            "loads only into a Python that preloads the sanitizers' runtimes: "
            "'infiniops-codegen build --sanitize')",
        ),
    ],
)
def test_invalid_options_stop_with_one_line(settings, message):
    with pytest.raises(build_backend.BackendError) as e:
        build_backend.check_options(settings, PLATFORMS)
    assert str(e.value) == message


def test_a_hook_reports_a_bad_option_on_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\ndynamic = ["dependencies"]\n'
        '[[tool.dynamic-metadata]]\nprovider = "infiniops-codegen"\n'
        '[tool.infiniops-codegen]\nname = "x"\n'
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        build_backend.get_requires_for_build_wheel(
            {"cmake.define.INFINI_OPS_TORCH_OPT_LEVEL": "9"}
        )
    assert e.value.code == 1
    assert capsys.readouterr().err == (
        "infiniops-codegen: cmake.define.INFINI_OPS_TORCH_OPT_LEVEL=9: use one of "
        "0, 1, 2, 3, s\n"
    )


def test_the_settings_scikit_build_core_gets(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\ndynamic = ["dependencies"]\n'
        '[[tool.dynamic-metadata]]\nprovider = "infiniops-codegen"\n'
        '[tool.infiniops-codegen]\nname = "mylib"\nbuild-dir = "out"\n'
    )
    monkeypatch.chdir(tmp_path)
    settings = build_backend.scikit_settings({"cmake.define.WITH_CPU": "ON"})
    assert settings == {
        "cmake.define.WITH_CPU": "ON",
        "cmake.source-dir": str(SUPPORT_DIR),
        "wheel.install-dir": "mylib",
        "build-dir": "out/wheel/{wheel_tag}",
        "cmake.define.INFINI_OPS_PROJECT_DIR": str(tmp_path.resolve()),
        "cmake.define.INFINI_OPS_WHEEL": "ON",
    }
    # a build-dir of the user's wins
    assert build_backend.scikit_settings({"build-dir": "elsewhere"})["build-dir"] == (
        "elsewhere"
    )


@pytest.mark.parametrize(
    "pyproject, message",
    [
        (
            '[tool.infiniops-codegen]\nname = "x"\n',
            "no [project] table with a name: a wheel needs one",
        ),
        (
            '[project]\nname = "x"\nversion = "1"\n[tool.infiniops-codegen]\nname = "x"\n',
            'the wheel pins the torch it is built against: add "dependencies" to '
            "[project] dynamic and a [[tool.dynamic-metadata]] table with provider "
            '= "infiniops-codegen"',
        ),
    ],
)
def test_a_project_that_is_no_package_is_told_what_to_add(tmp_path, pyproject, message):
    (tmp_path / "pyproject.toml").write_text(pyproject)
    with pytest.raises(build_backend.BackendError, match=re.escape(message)):
        build_backend.check_pyproject(tmp_path)


# --- the torch pin (the dynamic-metadata provider) ----------------------------------


def test_the_wheel_pins_the_release_it_is_built_against():
    installed = torch_build.installed()
    release = ".".join(map(str, installed.release))
    fragment = build_backend.dynamic_metadata({}, {"dependencies": ["torch>=2.11"]})
    assert fragment == {"dependencies": [f"torch=={release}"]}


def test_a_torch_outside_the_projects_range_stops_the_build(capsys):
    with pytest.raises(SystemExit):
        build_backend.dynamic_metadata({}, {"dependencies": ["torch<2.0"]})
    assert "outside the project's range (torch<2.0)" in capsys.readouterr().err


def test_the_provider_is_an_entry_point_of_the_tool():
    from importlib.metadata import entry_points

    (found,) = [
        e
        for e in entry_points(group="dynamic_metadata.provider")
        if e.name == build_backend.PROVIDER
    ]
    assert found.load() is build_backend


# --- the CMake project's generate step -----------------------------------------------


def test_generate_step_writes_the_cmake_settings(tmp_path):
    example = REPO / "examples" / "wheel"
    out = tmp_path / "project.cmake"
    done = subprocess.run(
        [sys.executable, "-m", "infiniops_codegen.build_backend", "generate"]
        + ["--project", example, "--build-dir", tmp_path, "--write", out],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    # the committed sources are current: nothing written
    assert done.stdout == f"generate: 3 ops, 0 files changed in {example}/generated/\n"
    assert out.read_text().splitlines()[1:] == [
        f'set(INFINI_OPS_GENERATED_DIR "{example / "generated"}")',
        f'set(INFINI_OPS_KERNEL_ROOT "{example / "cpp" / "kernels"}")',
        f'set(INFINI_OPS_SPEC_DIR "{example / "op_specs"}")',
    ]


def test_generate_step_reports_a_spec_error_where_it_is(tmp_path):
    project = tmp_path / "p"
    (project / "op_specs").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.infiniops-codegen]\nname = "p"\n')
    (project / "op_specs" / "ops.yaml").write_text("ops:\n  - nosuchop.out\n")
    done = subprocess.run(
        [sys.executable, "-m", "infiniops_codegen.build_backend", "generate"]
        + ["--project", project, "--build-dir", tmp_path / "b"]
        + ["--write", tmp_path / "x.cmake"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(
        "infiniops-codegen: the project's specs do not generate:\n"
        f"{project / 'op_specs' / 'ops.yaml'}:2:5: "
    ), done.stderr


def test_the_example_project_is_generated():
    from click.testing import CliRunner

    from infiniops_codegen.cli import main

    result = CliRunner().invoke(
        main, ["--project", str(REPO / "examples" / "wheel"), "generate", "--check"]
    )
    assert result.exit_code == 0, result.output


# --- the run-time modules a wheel copies in ------------------------------------------


def _runtime_modules() -> list[str]:
    text = (SUPPORT_DIR / "CMakeLists.txt").read_text()
    (line,) = re.findall(r"^set\(INFINI_OPS_RUNTIME_MODULES ([^)]*)\)$", text, re.M)
    return line.split()


# Imports of the run-time modules that leave the copied set, each reached only
# where a wheel never goes: load() without a directory (the wheel's loader
# passes its own) finds the project; a sanitize record (a wheel has none).
OUTSIDE_THE_WHEEL = {
    ("runtime/loader.py", "base.project"),
    ("runtime/loader.py", "base.sanitize"),
}


def _imported(module: str, node: ast.ImportFrom) -> list[str]:
    """The modules (dotted, relative to the tool's package) a relative import
    of `module` (a path like runtime/loader.py) names."""
    package = module.split("/")[:-1]
    base = package[: len(package) - (node.level - 1)]
    named = ".".join([*base, node.module] if node.module else base)
    folder = PACKAGE_DIR.joinpath(*named.split("."))
    if node.module and not folder.is_dir():
        return [named]
    # `from ..base import sanitize`: the names are modules of that package
    return [
        f"{named}.{a.name}".lstrip(".")
        for a in node.names
        if (folder / f"{a.name}.py").is_file()
    ] or [named]


def test_the_runtime_modules_import_only_each_other_and_the_standard_library():
    modules = _runtime_modules()
    names = {
        m.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for m in modules
    }
    allowed_absolute = set(sys.stdlib_module_names) | {"torch"}
    leaving = set()
    for module in modules:
        tree = ast.parse((PACKAGE_DIR / module).read_text())
        top_level = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                for target in _imported(module, node):
                    if target not in names:
                        leaving.add((module, target))
                        # never at import time
                        assert id(node) not in top_level, (module, target)
            elif isinstance(node, ast.ImportFrom):
                assert node.module.split(".")[0] in allowed_absolute, (
                    module,
                    node.module,
                )
            elif isinstance(node, ast.Import):
                for a in node.names:
                    assert a.name.split(".")[0] in allowed_absolute, (module, a.name)
    assert leaving == OUTSIDE_THE_WHEEL


def test_the_runtime_modules_import_as_a_package_of_their_own(tmp_path):
    """Copied as the wheel copies them (in their folders), into a package the
    tool is not importable beside: they import."""
    package = tmp_path / "somelib" / "_runtime"
    package.mkdir(parents=True)
    (tmp_path / "somelib" / "__init__.py").write_text("")
    (package / "__init__.py").write_text(
        (SUPPORT_DIR / "python" / "runtime_init.py").read_text()
    )
    for module in _runtime_modules():
        (package / module).parent.mkdir(exist_ok=True)
        (package / module).write_text((PACKAGE_DIR / module).read_text())
    code = (
        "import sys; sys.modules['infiniops_codegen'] = None\n"
        "from somelib._runtime.runtime import loader, observe, torch_ops\n"
        "print(loader.load.__module__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "somelib._runtime.runtime.loader"
