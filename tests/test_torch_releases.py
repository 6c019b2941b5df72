"""Several torch releases (docs/torch-releases.md): the tested range stated
once and shown; the installed torch named as torch names itself; schema drift
by overload; a build on a release whose schemas differ leaves generated/
alone; the loader and the CMake package refuse a module built against
another torch build; hints and skips limited to ranges of releases.

Every fact comes from the installed torch or from fixtures that hold for any
release; a second torch is faked by a record or a manifest, never needed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from infiniops_codegen.toolchain import builder
from infiniops_codegen.render import drift
from infiniops_codegen.runtime import loader as runtime
from infiniops_codegen.base import torch_build, torch_release
from infiniops_codegen.base import project as projects
from infiniops_codegen.harness import opinfo, skips
from infiniops_codegen.base.locations import MANIFEST, SUPPORT_DIR, TORCH_RECORD
from infiniops_codegen.render.pipeline import load_opset
from infiniops_codegen.base.torch_build import TorchBuild
from infiniops_codegen.base.torch_release import parse_range
from environment_skips import requires
from torch_facts import version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
INSTALLED = TorchBuild(str(torch.__version__), torch.version.cuda, torch.version.hip)
# Another build than the installed one: same release, the other device kind.
OTHER = TorchBuild(
    INSTALLED.version.split("+")[0] + ("+cpu" if INSTALLED.cuda else "+cu130"),
    None if INSTALLED.cuda else "13.0",
)


# --- the tested range ------------------------------------------------------------


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_range_is_the_package_metadata():
    project = _pyproject()
    torch_dep = next(d for d in project["dependencies"] if d.startswith("torch"))
    stated = torch_release.supported()
    assert stated.torch.text == torch_dep.removeprefix("torch")
    assert stated.python.text == project["requires-python"]
    # the suite runs on a supported pair: otherwise its facts are not the tool's
    assert version() in stated.torch, (version(), stated.torch)
    assert ".".join(map(str, sys.version_info[:3])) in stated.python


def test_an_installed_tool_reads_the_range_from_its_metadata(monkeypatch):
    """A wheel has no pyproject.toml beside the package: the range comes
    from the metadata pip wrote from it (pip may reorder the clauses)."""
    import importlib.metadata

    monkeypatch.setattr(torch_release, "_source_project", lambda path: None)
    monkeypatch.setattr(
        importlib.metadata,
        "requires",
        lambda name: [
            "click>=8.1",
            "torch<2.16,>=2.11",
            "tomli>=2; python_version < '3.11'",
        ],
    )
    monkeypatch.setattr(
        importlib.metadata, "metadata", lambda name: {"Requires-Python": "<3.14,>=3.10"}
    )
    stated = torch_release.supported()
    assert (str(stated.torch), str(stated.python)) == (">=2.11,<2.16", ">=3.10,<3.14")
    assert stated.source == "package metadata"


def test_version_shows_the_range_and_what_is_installed(runner, helpers):
    stated = torch_release.supported()
    result = helpers.invoke(runner, "--version")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("infiniops-codegen ")
    assert (
        f"tested with torch {stated.torch.spelled()} ({stated.torch}) on Python "
        f"{stated.python.spelled()} ({stated.python})"
    ) in lines[1]
    assert f"installed: torch {INSTALLED}, Python " in lines[2]
    assert "warning" not in result.output


def test_version_warns_outside_the_range(runner, helpers, monkeypatch):
    monkeypatch.setattr(torch_build, "installed", lambda: TorchBuild("2.99.0"))
    result = helpers.invoke(runner, "--version")
    assert "warning: torch 2.99.0 is outside the tested range" in result.output


def test_the_readme_states_the_range():
    stated = torch_release.supported()
    readme = (REPO / "README.md").read_text()
    assert f"torch {stated.torch.spelled()}" in readme
    assert f"Python {stated.python.spelled()}" in readme


@pytest.mark.parametrize(
    "text, inside, outside",
    [
        (">=2.11,<2.16", ["2.11.0", "2.14.1+cu130", "2.15.9"], ["2.10.2", "2.16.0"]),
        (">=2.14", ["2.14.0", "3.0"], ["2.13.9"]),
        ("==2.14.*", ["2.14.0", "2.14.1+cpu"], ["2.13.0", "2.15.0"]),
        ("==2.14", ["2.14.0"], ["2.14.1"]),
        ("!=2.14.0,<2.15", ["2.14.1", "2.13.0"], ["2.14.0", "2.15.0"]),
        ("<2.15", ["2.15.0a0+git1234"[:0] + "2.14.9"], ["2.15.0a0"]),
    ],
)
def test_ranges_of_releases(text, inside, outside):
    limit = parse_range(text)
    for v in inside:
        assert v in limit, (v, text)
    for v in outside:
        assert v not in limit, (v, text)


@pytest.mark.parametrize("text", ["", "2.14", "=>2.14", ">=2.x", "<2.14.*", 2.14])
def test_a_malformed_range_says_what_a_range_is(text):
    with pytest.raises(ValueError, match="range of torch releases"):
        parse_range(text)


def test_ranges_of_minor_releases_are_spelled_out():
    assert parse_range(">=2.11,<2.16").spelled() == "2.11 to 2.15"
    assert parse_range(">=3.10,<3.14").spelled() == "3.10 to 3.13"
    assert parse_range(">=2.14").spelled() == ">=2.14"


# --- which torch ---------------------------------------------------------------------


def test_the_installed_torch_is_named_as_torch_names_itself(tmp_path):
    from infiniops_codegen.schema.db import torch_version

    assert torch_build.installed() == INSTALLED
    assert torch_version() == str(torch.__version__)
    # read from its version.py too (without the torch module: the loader's way)
    path = Path(torch.__file__).parent / "version.py"
    assert torch_build.read_version_py(path) == INSTALLED
    fake = tmp_path / "version.py"
    fake.write_text(
        "from typing import Optional\n__version__ = '2.14.1+cu130'\ndebug = False\n"
        "cuda: Optional[str] = '13.0'\ngit_version = 'abc'\nhip: Optional[str] = None\n"
    )
    read = torch_build.read_version_py(fake)
    assert read == TorchBuild("2.14.1+cu130", "13.0")
    assert str(read) == "2.14.1+cu130 (CUDA 13.0)" and read.release == (2, 14, 1)


def test_a_record_round_trips_and_a_broken_one_is_named(tmp_path):
    path = tmp_path / TORCH_RECORD
    assert torch_build.read_record(path) is None  # a build older than records
    path.write_text(json.dumps(OTHER.as_json()))
    assert torch_build.read_record(path) == OTHER
    path.write_text('{"version": 2}')
    with pytest.raises(ValueError, match=f"{TORCH_RECORD}: not a record"):
        torch_build.read_record(path)


# --- drift ---------------------------------------------------------------------------

S = "f.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)"


@pytest.mark.parametrize(
    "new, said",
    [
        (
            S.replace("Tensor self", "Tensor input"),
            ["argument 'self' is named 'input'"],
        ),
        (S.replace("int dim", "int? dim"), ["argument 'dim' is a 'int?' (was 'int')"]),
        (
            S.replace("=False", "=True"),
            ["argument 'keepdim' defaults to True (was False)"],
        ),
        (
            S.replace("bool keepdim=False, ", "bool keepdim=False, int n=0, "),
            ["new argument 'int n=0'"],
        ),
        (S.replace("int dim, ", ""), ["no argument 'int dim' any more"]),
        (S.replace(", *", "").replace("Tensor(a!) out)", "*, Tensor(a!) out)"), []),
        (S.replace("-> Tensor(a!)", "-> ()"), ["returns () (was Tensor(a!))"]),
    ],
)
def test_schema_changes_are_said_argument_by_argument(new, said):
    assert drift.schema_changes(S, new) == said


def test_overloads_torch_added_or_removed_count_for_the_full_set():
    def manifest(*ops, excluded=()):
        return {
            "selection": "all",
            "ops": [
                {"name": a.split(".")[0], "aten": a, "source": "<all>", "schema": a}
                for a in ops
            ],
            "exclusions": [{"aten": a, "reason": "r"} for a in excluded],
        }

    old = manifest("a.out", "gone.out", excluded=["x.out"])
    new = manifest("a.out", "added.out", excluded=["x.out", "y.out"])
    assert drift.changes(old, new) == [
        drift.Change("added.out", "new out= overload in torch"),
        drift.Change("gone.out", "gone from torch"),
        drift.Change("y.out", "new out= overload in torch, not expressible"),
    ]
    # ops a spec names are the spec's business, not drift
    old["ops"].append({"name": "z", "aten": "z.out", "source": "op_specs/x.yaml"})
    assert len(drift.changes(old, new)) == 3


# --- build on a release whose schemas differ -------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project of the basic fixture's specs, generated with the installed
    torch; configure and compile stubbed (what is generated where is tested)."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURES / "specs" / "basic", root / "op_specs")
    (root / "pyproject.toml").write_text("[tool.infiniops-codegen]\n")
    for op in ("mul", "silu_and_mul"):  # the specs' native kernels (never compiled)
        kernel = root / "cpp" / "kernels" / "cpu" / f"{op}.cc"
        kernel.parent.mkdir(parents=True, exist_ok=True)
        kernel.write_text("// compile stubbed\n")
    proj = projects.load(root)
    gen = load_opset(proj.specs)
    from infiniops_codegen.render import sources as render, writer

    writer.write(render.render(gen), proj.generated)
    monkeypatch.setattr(builder, "require_tools", lambda: None)
    monkeypatch.setattr(
        builder, "configure", lambda c, echo: c.build_dir.mkdir(exist_ok=True)
    )
    monkeypatch.setattr(builder, "compile_all", lambda *a, **k: 0)
    return proj


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file()
    }


def _build(proj) -> tuple[builder.BuildResult, list[str]]:
    said: list[str] = []
    request = builder.BuildRequest(project=proj, smoke=False, ccache=False)
    return builder.build(request, said.append), said


def test_build_with_other_schemas_leaves_generated_alone(project):
    path = project.generated / MANIFEST
    data = json.loads(path.read_text())
    for op in data["ops"]:  # as another release would have generated it
        if op["aten"] == "neg.out":
            op["schema"] = op["schema"].replace("Tensor self", "Tensor x")
    text = json.dumps(data, indent=1)
    path.write_text("{" + text[1:].lstrip("\n "))
    before = _tree(project.generated)
    result, said = _build(project)
    assert _tree(project.generated) == before
    assert result.generated_dir == project.build_dir / "generated"
    assert (result.generated_dir / "ops.h").is_file()
    note = next(line for line in said if "ATen schemas differ" in line)
    assert f"torch {version()}'s ATen schemas differ from those generated/" in note
    assert "for 1 overload (neg.out) (" in note
    assert note.endswith("and leaving generated/ as it is")


def test_build_after_a_spec_change_updates_generated(project):
    specs = project.specs / "ops.yaml"
    specs.write_text(specs.read_text() + "  - exp.out\n")
    result, said = _build(project)
    assert result.generated_dir == project.generated
    names = [
        op["name"]
        for op in json.loads((project.generated / MANIFEST).read_text())["ops"]
    ]
    assert "exp" in names
    assert not any("ATen schemas differ" in line for line in said)
    rebuild = json.loads((project.build_dir / builder.CONFIGURE_STAMP).read_text())
    assert rebuild["rebuild"] == {"project": str(project.root), "options": []}


def test_the_rebuild_command_repeats_the_build_options(project):
    request = builder.resolved(
        builder.BuildRequest(
            project=project, ops="all", opt_level="0", sanitize=("address",)
        )
    )
    assert builder.rebuild_options(request) == [
        "--ops", "all", "--opt-level", "0", "--sanitize", "address",
    ]  # fmt: skip


# --- the loader refuses another torch build -----------------------------------------------


def _fake_build(directory: Path, built: TorchBuild | None) -> Path:
    """A build directory whose module file is not a shared object at all:
    a loader that dlopen()ed it would fail on it ('invalid ELF header'), so
    an error that names the torch builds came before anything was loaded."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "infiniops.cpython-3x-x86_64-linux-gnu.so").write_text("no ELF " * 64)
    if built is not None:
        (directory / TORCH_RECORD).write_text(json.dumps(built.as_json()))
    shim = directory / "infiniops" / "__init__.py"
    shim.parent.mkdir(exist_ok=True)
    shutil.copyfile(SUPPORT_DIR / "python" / "module_init.py", shim)
    return directory


def test_load_refuses_a_module_built_against_another_torch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    directory = _fake_build(tmp_path / "b", OTHER)
    with pytest.raises(ImportError) as raised:
        runtime.load(directory)
    message = str(raised.value)
    assert f"built against torch {OTHER}, but torch {INSTALLED} is installed" in message
    assert message.endswith("infiniops-codegen build --build-dir b")
    assert "ELF" not in message


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env
    )


@pytest.mark.parametrize("route", ["load", "import"])
def test_the_refusal_comes_before_the_module_is_loaded(tmp_path, route):
    """The same record and module, once naming another torch build and once
    the installed one: only the latter reaches the dynamic loader."""
    code = {
        "load": "from infiniops_codegen.runtime import load; load('b')",
        "import": "import sys; sys.path.insert(0, 'b'); import infiniops",
    }[route]
    _fake_build(tmp_path / "b", OTHER)
    refused = _python(code, tmp_path)
    assert refused.returncode == 1
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: the infiniops module in ")
    assert f"b was built against torch {OTHER}" in last
    assert f"torch {INSTALLED} is installed" in last
    _fake_build(tmp_path / "b", INSTALLED)
    loaded = _python(code, tmp_path)
    last = loaded.stderr.strip().splitlines()[-1]
    assert "infiniops.cpython-3x" in last and "ELF" in last, loaded.stderr


def test_a_real_module_built_against_another_torch_is_refused(ops, tmp_path):
    """The suite's own build, its record made to name another torch build:
    imported from its directory, it raises ImportError naming both (not an
    undefined symbol, not a crash)."""
    built = Path(ops.__file__).parent
    copy = tmp_path / "b"
    copy.mkdir()
    for p in [Path(ops.__file__), *built.glob("libinfiniops.so*")]:
        shutil.copy(p, copy / p.name, follow_symlinks=True)
    shutil.copytree(built / "infiniops", copy / "infiniops")
    (copy / TORCH_RECORD).write_text(json.dumps(OTHER.as_json()))
    code = "import sys; sys.path.insert(0, 'b'); import infiniops; print('loaded')"
    proc = _python(code, tmp_path)
    assert proc.returncode == 1 and "loaded" not in proc.stdout
    assert f"was built against torch {OTHER}" in proc.stderr
    (copy / TORCH_RECORD).write_text(json.dumps(INSTALLED.as_json()))
    proc = _python(code, tmp_path)
    assert proc.stdout.strip() == "loaded", proc.stderr[-2000:]


@requires("foreign_build")
def test_a_module_built_against_another_release_is_refused():
    """A real build made with another torch release (in CI: the main job's,
    torch 2.13.0, loaded in a release's job): `import infiniops` from its
    directory raises ImportError naming both builds and the command that
    rebuilds it, before the module is loaded."""
    built = Path(os.environ["INFINIOPS_FOREIGN_BUILD_DIR"]).resolve()
    record = TorchBuild.from_json(json.loads((built / TORCH_RECORD).read_text()))
    assert record.release != INSTALLED.release, (
        f"{built} was built against torch {record}, the installed release:"
        " INFINIOPS_FOREIGN_BUILD_DIR must name a build of another release"
    )
    code = f"import sys; sys.path.insert(0, {str(built)!r}); import infiniops"
    proc = _python(code, built.parent)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert last.startswith(f"ImportError: the infiniops module in {built} was"), last
    assert f"built against torch {record}, but torch {INSTALLED} is" in last
    assert "Rebuild it with this torch: infiniops-codegen build" in last
    assert "undefined symbol" not in proc.stderr


def test_the_cmake_package_refuses_another_torch(ops, tmp_path):
    """find_package(InfiniOps) with a Torch that is another build than the
    library's (a stand-in Torch package whose version.py says so)."""
    prefix = tmp_path / "prefix"
    subprocess.run(
        ["cmake", "--install", str(Path(ops.__file__).parent), "--prefix", str(prefix)],
        check=True,
        capture_output=True,
    )
    fake = tmp_path / "torch"
    (fake / "share" / "cmake" / "Torch").mkdir(parents=True)
    (fake / "share" / "cmake" / "Torch" / "TorchConfig.cmake").write_text(
        'set(TORCH_INSTALL_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../..")\n'
        "set(Torch_FOUND TRUE)\n"
    )
    (fake / "version.py").write_text(
        f"__version__ = '{OTHER.version}'\ncuda = {OTHER.cuda!r}\nhip = None\n"
    )
    app = tmp_path / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(textwrap.dedent("""\
            cmake_minimum_required(VERSION 3.22)
            project(app LANGUAGES CXX)
            find_package(InfiniOps CONFIG REQUIRED)
            """))
    proc = subprocess.run(
        ["cmake", "-S", str(app), "-B", str(tmp_path / "b"), "-G", "Ninja",
         f"-DCMAKE_PREFIX_PATH={prefix}", f"-DTorch_DIR={fake}/share/cmake/Torch"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())
    assert f"was built against torch {INSTALLED}" in text, text
    assert f"found torch {OTHER}" in text, text
    assert "infiniops-codegen build --install" in text


# --- hints and skips for ranges of releases ------------------------------------------------


def _not(v: str) -> str:
    """A range that excludes release v."""
    return f"<{'.'.join(map(str, torch_build.release(v)[:2]))}"


def _this(v: str) -> str:
    """A range that holds release v."""
    return f">={'.'.join(map(str, torch_build.release(v)[:2]))}"


def _specs(tmp_path: Path, ops: str, hints: str | None = None) -> Path:
    specs = tmp_path / "specs"
    specs.mkdir(parents=True)
    (specs / "ops.yaml").write_text(ops)
    if hints is not None:
        (specs / "all").mkdir()
        (specs / "all" / "hints.yaml").write_text(hints)
    return specs


def test_spec_hints_for_a_range_of_releases(tmp_path):
    specs = _specs(
        tmp_path,
        "ops:\n"
        "  - aten: kthvalue.values\n"
        "    hints:\n"
        f"      - {{torch: '{_not(version())}', k: [9], no_such_argument: [1]}}\n"
        f"      - {{torch: '{_this(version())}', k: [1, 2]}}\n"
        f"  - {{aten: abs.out, hints: {{torch: '{_not(version())}', x: [1]}}}}\n",
    )
    ops = {op.aten: op for op in load_opset(specs).ops}
    # the first applies elsewhere only: its argument names are not checked here
    assert ops["kthvalue.values"].hints == (("k", [1, 2]),)
    assert ops["abs.out"].hints == ()


def test_full_set_hints_for_an_overload_this_release_lacks(tmp_path):
    ops = "ops:\n  - abs.out\n"
    limited = f"hints:\n  no_such.out: {{torch: '{_not(version())}', x: [1]}}\n"
    specs = _specs(tmp_path / "a", ops, limited)
    assert "no_such" not in {op.name for op in load_opset(specs, "all").ops}
    unlimited = "hints:\n  no_such.out: {x: [1]}\n"
    specs = _specs(tmp_path / "b", ops, unlimited)
    from infiniops_codegen.base.errors import SpecErrors

    with pytest.raises(SpecErrors) as raised:
        load_opset(specs, "all")
    [error] = raised.value.errors
    assert error.message.startswith(f"torch {version()} has no ATen out= overload")


def test_skips_apply_to_their_range_of_releases(tmp_path):
    path = tmp_path / "skips.yaml"
    path.write_text(
        "harness:\n"
        "  - {op: a, reason: always}\n"
        f"  - {{op: b, torch: '{_this(version())}', reason: here}}\n"
        f"  - {{op: c, torch: '{_not(version())}', reason: elsewhere}}\n"
        "opinfo:\n"
        f"  - {{op: d, torch: '{_not(version())}', reason: elsewhere}}\n"
        f"  - {{op: e, torch: '{_this(version())}', reason: here}}\n"
    )
    assert [s.op for s in skips.load_skips(path)] == ["a", "b"]
    assert [s.op for s in skips.load_skips(path, torch="1.0.0")] == ["a", "c"]
    assert [s.op for s in opinfo.load_skips(path)] == ["e"]
    path.write_text("harness:\n  - {op: a, torch: 'soon', reason: r}\n")
    with pytest.raises(ValueError, match="not a range of torch releases"):
        skips.load_skips(path)


# --- list --op -----------------------------------------------------------------------------


def test_list_op_shows_an_argument_the_installed_torch_renamed(
    tmp_path, runner, helpers
):
    data = json.loads((FIXTURES / "golden" / "basic" / MANIFEST).read_text())
    for op in data["ops"]:  # as a release that called it `x` would have it
        if op["aten"] == "neg.out":
            op["schema"] = op["schema"].replace("Tensor self", "Tensor x")
    path = tmp_path / MANIFEST
    path.write_text(json.dumps(data))
    result = helpers.invoke(runner, "list", "--op", "neg", "--manifest", path)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-2].startswith(f"  torch {version()} (installed): neg.out(Tensor self")
    assert lines[-1] == "    argument 'x' is named 'self'"
    shown = helpers.invoke(runner, "list", "--op", "abs", "--manifest", path)
    assert "(installed)" not in shown.output  # the same schema: nothing to say


# --- signatures no op serves ----------------------------------------------------------


def test_a_signature_no_build_can_serve_says_so():
    """torch 2.11 and 2.12 list dimension-name signatures among torch.sum's;
    a call matching one names it and why no build serves it, where one that
    a spec could serve names the out= overload to add (the functional one's
    out= twin where torch pairs none)."""
    from infiniops_codegen.model.overloads import _remedy
    from infiniops_codegen.schema.records import PyOverload, PyParam

    def overload(dim: str, out: str | None, functional: str) -> PyOverload:
        params = (PyParam("input", "Tensor"), PyParam("dim", dim))
        return PyOverload("sum(...)", params, functional, out, False)

    twins = {"bitwise_and.Scalar_Tensor": "bitwise_and.Scalar_Tensor_out"}
    named = overload("DimnameList", "sum.DimnameList_out", "sum.dim_DimnameList")
    assert _remedy(named, twins) == (
        "no build can serve it: dimension names (named tensors) are not expressible"
    )
    plain = overload("IntList", "sum.IntList_out", "sum.dim_IntList")
    assert (
        _remedy(plain, twins)
        == "add 'sum.IntList_out' to the specs or build with --ops all"
    )
    paired = overload("Scalar", None, "bitwise_and.Scalar_Tensor")
    assert "'bitwise_and.Scalar_Tensor_out' to the specs" in _remedy(paired, twins)
    alone = overload("Int", None, "softmax.Dimless")
    assert _remedy(alone, twins) == (
        "no build can serve it: torch has no out= overload of softmax.Dimless"
    )
