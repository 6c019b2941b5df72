"""What a CUDA build of torch needs to configure
(infiniops_codegen/toolchain/cuda_toolkit.py): the toolkit root, through symbolic links and wrapper scripts, and an
architecture list. Fake toolkits and tools in tmp_path; no CUDA torch needed
(the CUDA jobs of CI build with one)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import cuda_toolkit
from infiniops_codegen.toolchain.cuda_toolkit import (
    NO_GPU_ARCH_LIST,
    ToolkitError,
    TorchBuild,
    find_toolkit,
)

SCRIPT = Path(cuda_toolkit.__file__)
CUDA_TORCH = TorchBuild(version="2.11.0+cu130", cuda="13.0")
CPU_TORCH = TorchBuild(version="2.13.0+cpu", cuda=None)


def _toolkit(root: Path, version: str = "13.0.88") -> Path:
    """A directory that looks like a CUDA toolkit."""
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    _script(root / "bin" / "nvcc", "exit 0")
    (root / "include" / "cuda_runtime.h").write_text("")
    (root / "version.json").write_text(f'{{"cuda": {{"version": "{version}"}}}}')
    return root


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _which(mapping: dict[str, Path]):
    return lambda name: str(mapping[name]) if name in mapping else None


def _never_asked(nvcc: str):
    raise AssertionError(f"{nvcc} should not have been run")


def test_torch_build_reads_version_py_without_importing(tmp_path):
    (tmp_path / "version.py").write_text(
        "from typing import Optional\n"
        "__version__ = '2.11.0+cu130'\n"
        "cuda: Optional[str] = '13.0'\n"
    )
    assert cuda_toolkit.torch_build(tmp_path) == CUDA_TORCH
    (tmp_path / "version.py").write_text(
        "__version__ = '2.13.0+cpu'\ncuda: Optional[str] = None\n"
    )
    assert cuda_toolkit.torch_build(tmp_path) == CPU_TORCH
    assert cuda_toolkit.torch_build(tmp_path / "absent") is None


def test_a_variable_naming_the_toolkit_wins(tmp_path):
    root = _toolkit(tmp_path / "cuda-13.0")
    other = _toolkit(tmp_path / "other")
    found = find_toolkit(
        {"CUDA_HOME": str(root)}, _which({"nvcc": other / "bin" / "nvcc"}), _never_asked
    )
    assert (found.root, found.version, found.how) == (root, "13.0.88", "CUDA_HOME")


def test_a_variable_naming_no_toolkit_is_an_error_naming_it(tmp_path):
    with pytest.raises(
        ToolkitError, match=r"CUDAToolkit_ROOT=.* is not a CUDA toolkit"
    ):
        find_toolkit({"CUDAToolkit_ROOT": str(tmp_path)}, _which({}), _never_asked)


def test_nvcc_on_path_through_a_symbolic_link(tmp_path):
    root = _toolkit(tmp_path / "cuda-13.0")
    link = tmp_path / "bin" / "nvcc"
    link.parent.mkdir()
    link.symlink_to(root / "bin" / "nvcc")
    found = find_toolkit({}, _which({"nvcc": link}), _never_asked)
    assert found.root == root.resolve()


def test_nvcc_on_path_a_wrapper_script_is_asked_where_its_toolkit_is(tmp_path):
    """The case of this machine: /usr/local/bin/nvcc is a script that runs
    /usr/local/cuda-13.0/bin/nvcc; its directory's parent is no toolkit."""
    root = _toolkit(tmp_path / "cuda-13.0")
    # What nvcc's dry run prints, from a script standing for the wrapper.
    wrapper = _script(
        tmp_path / "local" / "bin" / "nvcc", f"echo '#$ _HERE_={root}/bin' >&2"
    )
    found = find_toolkit({}, _which({"nvcc": wrapper}), standard_roots=())
    assert found.root == root.resolve()
    assert "which runs" in found.how


def test_standard_places_newest_first(tmp_path):
    _toolkit(tmp_path / "cuda-12.9")
    newest = _toolkit(tmp_path / "cuda-13.0", version="13.0.1")
    _toolkit(tmp_path / "cuda-12.10")
    found = find_toolkit(
        {}, _which({}), _never_asked, standard_roots=(f"{tmp_path}/cuda-*",)
    )
    assert found.root == newest


def test_no_toolkit_is_an_error_naming_the_variable(tmp_path):
    wrapper = _script(tmp_path / "bin" / "nvcc", "exit 1")
    with pytest.raises(ToolkitError, match=r"not in one.*set CUDAToolkit_ROOT"):
        find_toolkit({}, _which({"nvcc": wrapper}), standard_roots=())
    with pytest.raises(ToolkitError, match=r"no nvcc on PATH.*set CUDAToolkit_ROOT"):
        find_toolkit({}, _which({}), _never_asked, standard_roots=())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_this_machines_nvcc_leads_to_a_toolkit():
    found = find_toolkit(os.environ)
    assert cuda_toolkit.is_toolkit(found.root), found


def test_gpu_architectures_from_nvidia_smi(tmp_path):
    smi = _script(tmp_path / "nvidia-smi", "printf '9.0\\n9.0\\n8.6\\n'")
    assert cuda_toolkit.gpu_architectures(_which({"nvidia-smi": smi})) == [
        "9.0",
        "8.6",
    ]
    broken = _script(tmp_path / "broken" / "nvidia-smi", "echo 'No devices' ; exit 6")
    assert cuda_toolkit.gpu_architectures(_which({"nvidia-smi": broken})) == []
    assert cuda_toolkit.gpu_architectures(_which({})) == []


def _settings(tmp_path, env=None, given=(), torch=CUDA_TORCH, gpus=()):
    root = tmp_path / "cuda"
    if not root.exists():
        _toolkit(root)
    return cuda_toolkit.settings(
        env or {},
        set(given),
        torch,
        which=_which({"nvcc": root / "bin" / "nvcc"}),
        ask_nvcc=_never_asked,
        gpus=lambda: list(gpus),
    )


def test_a_cpu_torch_needs_nothing(tmp_path):
    assert _settings(tmp_path, torch=CPU_TORCH) is None
    assert _settings(tmp_path, torch=None) is None
    assert "set(" not in cuda_toolkit.render_cmake(None)


def test_a_cuda_torch_without_a_gpu_gets_the_toolkit_and_an_architecture(tmp_path):
    found = _settings(tmp_path)
    root = tmp_path / "cuda"
    assert (found.toolkit.root, found.compiler) == (root, root / "bin" / "nvcc")
    assert found.arch.value == NO_GPU_ARCH_LIST
    text = cuda_toolkit.render_cmake(found)
    assert f'set(CUDA_TOOLKIT_ROOT_DIR "{root}" CACHE PATH' in text
    assert f'set(CUDAToolkit_ROOT "{root}")' in text
    assert f'set(CMAKE_CUDA_COMPILER "{root}/bin/nvcc" CACHE FILEPATH' in text
    assert f'set(TORCH_CUDA_ARCH_LIST "{NO_GPU_ARCH_LIST}" CACHE STRING' in text
    # one status line saying what was chosen and how to choose otherwise
    (status,) = [l for l in text.splitlines() if l.startswith("message(STATUS")]
    assert cuda_toolkit.STATUS + "torch 2.11.0+cu130 is a CUDA 13.0 build" in status
    assert "no GPU here; set TORCH_CUDA_ARCH_LIST to choose" in status


def test_cudacxx_names_the_compiler(tmp_path):
    assert _settings(tmp_path, env={"CUDACXX": "/x/nvcc"}).compiler is None


def test_the_gpus_architectures_when_there_are_gpus(tmp_path):
    found = _settings(tmp_path, gpus=["9.0", "8.6"])
    assert found.arch.value == "9.0;8.6"
    assert 'set(TORCH_CUDA_ARCH_LIST "9.0;8.6"' in cuda_toolkit.render_cmake(found)


def test_what_the_user_set_is_not_looked_for(tmp_path):
    found = _settings(tmp_path, env={"TORCH_CUDA_ARCH_LIST": "9.0"})
    assert found.arch is None
    found = _settings(tmp_path, given={"CUDA_TOOLKIT_ROOT_DIR", "TORCH_CUDA_ARCH_LIST"})
    assert (found.toolkit, found.arch, found.compiler) == (None, None, None)
    assert "set(" not in cuda_toolkit.render_cmake(found)


def test_paths_are_quoted_for_cmake():
    assert cuda_toolkit._quoted('a "b" $c \\d') == '"a \\"b\\" \\$c \\\\d"'


# --- As support/CMakeLists.txt runs it --------------------------------------------


def _torch_dir(tmp_path, cuda: str | None) -> Path:
    d = tmp_path / "torch"
    d.mkdir()
    (d / "version.py").write_text(
        "__version__ = '2.11.0+cu130'\n" f"cuda: Optional[str] = {cuda!r}\n"
    )
    return d


def _run(tmp_path, torch_dir, env, *args):
    out = tmp_path / "settings.cmake"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--torch-dir", str(torch_dir)]
        + ["--write", str(out), *args],
        capture_output=True,
        text=True,
        env=env,
    )
    return proc, (out.read_text() if out.exists() else None)


def test_the_script_writes_the_settings(tmp_path):
    root = _toolkit(tmp_path / "cuda-13.0")
    env = {"PATH": os.environ["PATH"], "CUDA_HOME": str(root)}
    proc, text = _run(tmp_path, _torch_dir(tmp_path, "13.0"), env)
    assert proc.returncode == 0, proc.stderr
    assert f'set(CUDA_TOOLKIT_ROOT_DIR "{root}"' in text
    # what the configure already has is not set again
    proc, text = _run(
        tmp_path,
        tmp_path / "torch",
        env,
        "--given",
        "CUDA_TOOLKIT_ROOT_DIR,TORCH_CUDA_ARCH_LIST",
    )
    assert proc.returncode == 0 and "set(" not in text


def test_the_script_says_which_variable_to_set(tmp_path):
    env = {"PATH": os.environ["PATH"], "CUDA_HOME": str(tmp_path)}
    proc, text = _run(tmp_path, _torch_dir(tmp_path, "13.0"), env)
    assert proc.returncode == 1 and text is None
    assert proc.stderr.startswith(
        "torch 2.11.0+cu130 is a CUDA 13.0 build, and its CMake package needs the "
        "CUDA toolkit: CUDA_HOME="
    )
    assert "set CUDA_HOME to the toolkit's root" in proc.stderr


def test_the_script_with_the_cpu_wheel(tmp_path):
    proc, text = _run(tmp_path, _torch_dir(tmp_path, None), {"PATH": ""})
    assert proc.returncode == 0 and "set(" not in text


def test_the_version_from_cuda_h_without_version_json(tmp_path):
    root = _toolkit(tmp_path / "cuda")
    (root / "version.json").unlink()
    (root / "include" / "cuda.h").write_text("#define CUDA_VERSION 13020\n")
    assert cuda_toolkit.toolkit_version(root) == "13.2"
    (root / "include" / "cuda.h").unlink()
    assert cuda_toolkit.toolkit_version(root) is None


def test_a_toolkit_of_another_cuda_release_is_said(tmp_path):
    found = _settings(tmp_path, torch=TorchBuild("2.15.0+cu132", "13.2"))
    assert "torch was built with CUDA 13.2" in found.describe()
    assert "torch was built with" not in _settings(tmp_path).describe()
