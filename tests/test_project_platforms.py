"""A project's own platform table (`[tool.infiniops-codegen] platforms`):
merged after the tool's rows, rendered like them, and read with located
errors; the acme fixture's stand-in kernel compiler refuses torch headers.
Building and running acme needs the simulated accelerator: test_sim_acme.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen.base import platforms
from infiniops_codegen.base.errors import SpecErrors
from infiniops_codegen.base.project import load as load_project

ACME = Path(__file__).resolve().parent / "fixtures" / "acme"


def _acme(tmp_path: Path) -> Path:
    root = tmp_path / "acme"
    shutil.copytree(ACME, root)
    return root


def _generate(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "infiniops_codegen.cli",
            "--project",
            str(root),
            "generate",
        ],
        capture_output=True,
        text=True,
        cwd=root,
    )


def test_a_project_platform_follows_the_tools(tmp_path):
    root = _acme(tmp_path)
    table = load_project(root).platforms
    assert table == root.resolve() / "platforms.yaml"
    merged = platforms.load_platforms(table)
    tool = platforms.load_platforms(None)
    assert merged[: len(tool)] == tool  # the tool's enumerators keep their values
    acme = merged[-1]
    assert (acme.name, acme.device_type, acme.c10_type) == (
        "acme",
        "kAcme",
        "PrivateUse1",
    )
    assert acme.host_compiled_bridge and acme.kernels.language == "VENDORCXX"
    assert acme.torch_module == "infiniops_codegen.sim"
    assert acme.package.runtime == "InfiniSim::runtime"
    assert acme.origin.endswith("platforms.yaml") and tool[0].origin == "tool"


def test_generation_renders_the_project_platform(tmp_path):
    root = _acme(tmp_path)
    proc = _generate(root)
    assert proc.returncode == 0, proc.stderr
    generated = root / "generated"
    table = (generated / "platform_table.h").read_text()
    assert "kAcme" in table and table.index("kSim") < table.index("kAcme")
    kernels = (generated / "native_kernels.h").read_text()
    assert "#ifdef WITH_ACME\nnamespace infini::ops::native::acme {" in kernels
    assert (
        "KernelResult add(const Tensor& self, const Tensor& other, const Scalar& alpha, "
        in kernels
    )
    cmake = (generated / "platforms.cmake").read_text()
    assert 'set(INFINI_OPS_PLATFORM_acme_KERNEL_COMPILER "acme-cc")' in cmake
    assert "set(INFINI_OPS_PLATFORM_acme_HOST_COMPILED_BRIDGE ON)" in cmake
    assert 'set(INFINI_OPS_PLATFORM_acme_PACKAGE "InfiniSim")' in cmake
    # PrivateUse1 tensors belong to acme in a build with acme and without
    # the ports listed before it.
    tables = (generated / "torch_tables.h").read_text()
    assert "#elif defined(WITH_ACME)\n      return DeviceType::kAcme;" in tables


BAD_TABLE = """\
platforms:
  - name: sim
    flag: WITH_SIM2
    device_type: kSim2
    torch: {device: sim, c10_type: PrivateUse1}
    kernels: {compiler: cc, language: CXX, extensions: [cc]}
  - name: beta
    flag: BETA
    device_type: kBeta
    torch: {device: beta, c10_type: PrivateUse2}
    kernels: {compiler: cc, language: FORTRAN, extensions: [f]}
    colour: blue
  - name: gamma
    flag: WITH_GAMMA
    device_type: kGamma
    torch: {device: gamma, c10_type: PrivateUse1}
    stream: {headers: [g.h], type: g_t, guard: G, external: "make({stream})", current: "cur({index})", py_attr: g}
"""


def test_a_malformed_project_table_is_reported_where_it_is_wrong(tmp_path):
    root = _acme(tmp_path)
    (root / "platforms.yaml").write_text(BAD_TABLE)
    with pytest.raises(SpecErrors) as e:
        platforms.load_platforms(root / "platforms.yaml")
    lines = [str(err) for err in e.value.errors]
    where = str(root / "platforms.yaml")
    expected = [
        (2, 11, "name 'sim' is platform 'sim''s already (the tool's table)"),
        (8, 11, "'flag' = 'BETA' of platform 'beta': WITH_ and upper case"),
        (10, 37, "c10_type 'PrivateUse2' is not one of"),
        (11, 39, "kernel language 'FORTRAN' is not one of CXX, CUDA, VENDORCXX"),
        (12, 5, "unknown key 'colour' in a platform;"),
        (13, 5, "platform 'gamma' needs 'kernels'"),
        (
            17,
            61,
            "'external' of the stream of platform 'gamma' must use {stream} and {index}",
        ),
    ]
    for line, col, message in expected:
        assert any(
            text.startswith(f"{where}:{line}:{col}: {message}") for text in lines
        ), (line, col, message, lines)
    assert len(lines) == len(expected), lines
    # The CLI shows each, located, and writes nothing (exit 2, as for specs).
    proc = _generate(root)
    assert proc.returncode == 2
    assert "platforms.yaml:12:5: unknown key 'colour'" in proc.stderr
    assert not (root / "generated").exists()


def test_a_missing_project_table_is_named(tmp_path):
    root = _acme(tmp_path)
    (root / "platforms.yaml").unlink()
    proc = _generate(root)
    assert proc.returncode == 2
    assert "platforms.yaml:1:1: cannot read" in proc.stderr


def test_the_acme_compiler_refuses_torch_headers(tmp_path):
    import torch.utils.cpp_extension as ext

    source = tmp_path / "k.acme"
    source.write_text("#include <ATen/core/Tensor.h>\nint f() { return 1; }\n")
    includes = [f"-I{d}" for d in ext.include_paths()]
    proc = subprocess.run(
        [
            str(ACME / "acme-cc"),
            "-x",
            "c++",
            "-std=c++20",
            *includes,
            "-c",
            str(source),
            "-o",
            str(tmp_path / "k.o"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "acme-cc: error: cannot compile PyTorch's headers" in proc.stderr
    assert not (tmp_path / "k.o").exists()
    # A torch-free source compiles.
    source.write_text("#include <vector>\nint f() { return 1; }\n")
    proc = subprocess.run(
        [
            str(ACME / "acme-cc"),
            "-x",
            "c++",
            *includes,
            "-c",
            str(source),
            "-o",
            str(tmp_path / "k.o"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "k.o").is_file()
