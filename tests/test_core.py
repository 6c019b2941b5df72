"""Builds and runs the torch-free C++ core and the native CPU kernels.

All C++ is compiled with plain g++ and no torch or Python include path, which
is what proves the core and the kernels stay free of framework headers.
PyTorch appears only on the Python side, as a numeric reference for the
kernels.

The core's DataType and DeviceType come from the dtype and platform tables,
generated into generated/dtype_table.h and generated/platform_table.h (the
committed ones: `generate --check` keeps them current), so every compile here
has the generated directory on its include path, as the CMake project does,
and those two headers are checked like the core's own.
"""

import ctypes
import os
import re
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from infiniops_codegen.base.dtypes import load_dtypes
from infiniops_codegen.base.locations import SUPPORT_DIR

pytestmark = pytest.mark.own_build(
    "builds of its own: the core's and the kernels' C++ test programs (-O2, ASan+UBSan)"
)

REPO_ROOT = Path(__file__).resolve().parent.parent
CPP_DIR = SUPPORT_DIR / "cpp"
CORE_DIR = CPP_DIR / "core"
KERNEL_DIR = CPP_DIR / "kernels" / "cpu"  # the kernels' helper headers (the tool's)
KERNEL_SOURCE_DIR = REPO_ROOT / "cpp" / "kernels" / "cpu"  # this project's kernels
CPP_TEST_DIR = REPO_ROOT / "tests" / "cpp"
GENERATED_DIR = REPO_ROOT / "generated"
INCLUDES = ["-I", str(CPP_DIR), "-I", str(GENERATED_DIR)]

CXX = os.environ.get("CXX", "g++")
STRICT = ["-std=c++20", "-Wall", "-Wextra", "-Werror"]

# Listed explicitly (not globbed) so a missing file fails instead of silently
# yielding an empty parametrization; test_header_lists_are_complete keeps the
# lists in step with the directories.
CORE_HEADERS = [
    "core.h",
    "data_type.h",
    "decline.h",
    "device.h",
    "error.h",
    "handle.h",
    "implementation.h",
    "observe.h",
    "scalar.h",
    "small_dims.h",
    "stream.h",
    "tensor.h",
]
# The generated parts of the core (torch-free, included by data_type.h and
# device.h).
CORE_TABLES = ["dtype_table.h", "platform_table.h"]
KERNEL_HEADERS = ["alpha.h", "checks.h", "elementwise.h", "half.h", "strided.h"]
# The kernels include their declarations from the generated native_kernels.h
# (the CPU ones under WITH_CPU), as in the module's build.
KERNEL_FLAGS = ["-DWITH_CPU"]
KERNEL_SOURCES = ["add.cc", "mul.cc", "rms_norm.cc", "silu.cc", "silu_and_mul.cc"]

BUILD_MODES = {
    "O2": ["-O2"],
    # Catches out-of-bounds strided access, use-after-free of handles or Dims
    # storage, and undefined behaviour that an optimized run may hide.
    "asan-ubsan": [
        "-O0",
        "-g",
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all",
    ],
}

FORBIDDEN_INCLUDE = re.compile(
    r'#\s*include\s*[<"](torch/|ATen/|c10/|Python\.h|pybind11/|nanobind/)'
)


def _run(cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


def test_header_lists_are_complete():
    assert sorted(p.name for p in CORE_DIR.glob("*.h")) == sorted(CORE_HEADERS)
    assert sorted(p.name for p in KERNEL_DIR.glob("*.h")) == sorted(KERNEL_HEADERS)
    assert sorted(p.name for p in KERNEL_SOURCE_DIR.glob("*.cc")) == sorted(
        KERNEL_SOURCES
    )


@pytest.mark.parametrize(
    "path",
    [CORE_DIR / h for h in CORE_HEADERS]
    + [GENERATED_DIR / h for h in CORE_TABLES]
    + [KERNEL_DIR / name for name in KERNEL_HEADERS]
    + [KERNEL_SOURCE_DIR / name for name in KERNEL_SOURCES],
    ids=lambda p: str(p.relative_to(REPO_ROOT)),
)
def test_no_framework_includes(path):
    offending = [
        line for line in path.read_text().splitlines() if FORBIDDEN_INCLUDE.search(line)
    ]
    assert offending == [], f"{path.name} includes framework headers: {offending}"


def _compile_header_alone(include):
    # Included twice from a scratch TU: compiling a header as the main file
    # would trip "#pragma once in main file", and the second include checks
    # the include guard.
    source = f'#include "{include}"\n#include "{include}"\n'
    return _run(
        [CXX, *STRICT, "-fsyntax-only", *INCLUDES, "-x", "c++", "-"],
        input=source,
        timeout=120,
    )


@pytest.mark.parametrize("header", CORE_HEADERS)
def test_core_header_compiles_alone(header):
    result = _compile_header_alone(f"core/{header}")
    assert result.returncode == 0, f"core/{header}:\n{result.stderr}"


@pytest.mark.parametrize("header", CORE_TABLES)
def test_core_table_compiles_alone(header):
    result = _compile_header_alone(header)
    assert result.returncode == 0, f"{header}:\n{result.stderr}"


@pytest.mark.parametrize("header", KERNEL_HEADERS)
def test_kernel_header_compiles_alone(header):
    result = _compile_header_alone(f"kernels/cpu/{header}")
    assert result.returncode == 0, f"kernels/cpu/{header}:\n{result.stderr}"


PROGRAMS = {
    "core_test": [CPP_TEST_DIR / "core_test.cc"],
    "kernels_test": [CPP_TEST_DIR / "kernels_test.cc"]
    + [KERNEL_SOURCE_DIR / name for name in KERNEL_SOURCES],
}


@pytest.mark.parametrize("mode", list(BUILD_MODES))
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_cpp_program(program, mode, tmp_path):
    binary = tmp_path / program
    build = _run(
        [
            CXX,
            *STRICT,
            *BUILD_MODES[mode],
            *INCLUDES,
            "-I",
            str(CPP_TEST_DIR),
            *KERNEL_FLAGS,
            *map(str, PROGRAMS[program]),
            "-o",
            str(binary),
        ],
        timeout=600,
    )
    assert build.returncode == 0, f"build of {program} failed:\n{build.stderr}"

    result = _run([str(binary)], timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{program} exited {result.returncode}:\n{output}"
    assert "all checks passed" in result.stdout, output


# --- Native kernels against PyTorch --------------------------------------
# The C++ programs above check hand-computed cases; here the same kernels run
# on random inputs of several layouts, through a small C shim loaded with
# ctypes, and are compared with PyTorch (used only as a numeric reference).


def _data_type_codes():
    """DataType enumerator values: their order in the dtype table."""
    return {d.enumerator: code for code, d in enumerate(load_dtypes())}


_CODES = _data_type_codes()
DTYPES = {
    torch.float32: _CODES["kFloat32"],
    torch.float16: _CODES["kFloat16"],
    torch.bfloat16: _CODES["kBFloat16"],
    torch.int32: _CODES["kInt32"],
    torch.float64: _CODES["kFloat64"],
    torch.bool: _CODES["kBool"],
}


class _TensorDesc(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("ndim", ctypes.c_int64),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("dtype", ctypes.c_int32),
    ]


@pytest.fixture(scope="module")
def kernels_lib(tmp_path_factory):
    library = tmp_path_factory.mktemp("capi") / "libkernels_capi.so"
    build = _run(
        [
            CXX,
            *STRICT,
            "-O2",
            "-fPIC",
            "-shared",
            *INCLUDES,
            *KERNEL_FLAGS,
            str(CPP_TEST_DIR / "kernels_capi.cc"),
            *(str(KERNEL_SOURCE_DIR / name) for name in KERNEL_SOURCES),
            "-o",
            str(library),
        ],
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    lib = ctypes.CDLL(str(library))
    lib.run_kernel.restype = ctypes.c_int
    lib.run_kernel.argtypes = [
        ctypes.c_char_p,
        ctypes.POINTER(_TensorDesc),
        ctypes.c_int32,
        ctypes.c_double,
    ]
    return lib


def _call(lib, name, tensors, scalar=0.0):
    descs = (_TensorDesc * len(tensors))()
    keep_alive = []
    for desc, t in zip(descs, tensors):
        shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
        strides = (ctypes.c_int64 * max(t.dim(), 1))(*t.stride())
        keep_alive += [shape, strides]
        desc.data = t.data_ptr()
        desc.ndim = t.dim()
        desc.shape = shape
        desc.strides = strides
        desc.dtype = DTYPES[t.dtype]
    return lib.run_kernel(name.encode(), descs, len(tensors), scalar)


def _make(shape, dtype, layout, generator):
    """A random tensor of `shape` laid out as `layout` describes."""
    shape = list(shape)

    def randn(s):
        return torch.randn(s, generator=generator).to(dtype)

    if layout == "contiguous":
        return randn(shape)
    if layout == "transposed":
        return randn(shape[:-2] + [shape[-1], shape[-2]]).transpose(-1, -2)
    if layout == "sliced":
        return randn(shape[:-1] + [shape[-1] * 2 + 1])[..., 1::2]
    if layout == "expanded":
        return randn([1] + shape[1:]).expand(shape)
    raise AssertionError(layout)


def _nan_out(shape, dtype, layout):
    # A filled, possibly transposed out: the kernel must overwrite every
    # element through the out's own strides.
    shape = list(shape)
    if layout == "transposed":
        return (
            torch.full(shape[:-2] + [shape[-1], shape[-2]], float("nan"))
            .to(dtype)
            .transpose(-1, -2)
        )
    return torch.full(shape, float("nan")).to(dtype)


FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LAYOUTS = ["contiguous", "transposed", "sliced", "expanded"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("op", ["add", "mul", "silu", "rms_norm", "silu_and_mul"])
def test_kernel_matches_torch(kernels_lib, op, dtype, layout):
    gen = torch.Generator().manual_seed(1234)
    out_layout = "transposed" if layout == "transposed" else "contiguous"
    if op in ("add", "mul"):
        a = _make([3, 5, 6], dtype, layout, gen)
        b = _make([5, 1], dtype, "contiguous", gen)  # broadcast against a
        out = _nan_out([3, 5, 6], dtype, out_layout)
        alpha = -0.75
        if op == "add" and dtype != torch.float32:
            # PyTorch's vectorized 16-bit loop computes a + alpha * b in float
            # and rounds once; its scalar loop rounds alpha * b to the 16-bit
            # type first. Which one an element gets depends on the layout, so
            # the kernel leaves such calls to PyTorch, and takes them only
            # under 16 elements (all in the scalar loop) ...
            assert _call(kernels_lib, op, [a, b, out], alpha) == 0
            a, out = a[:1, :, :3], out[:1, :, :3]
            assert _call(kernels_lib, op, [a, b, out], alpha) == 1
            assert torch.equal(out, torch.add(a, b, alpha=alpha))
            # ... or where alpha * b is exact (alpha 1, -1 or 0).
            a = _make([3, 5, 6], dtype, layout, gen)
            out = _nan_out([3, 5, 6], dtype, out_layout)
            alpha = -1
        expected = torch.add(a, b, alpha=alpha) if op == "add" else a * b
        assert _call(kernels_lib, op, [a, b, out], alpha) == 1
    elif op == "silu":
        x = _make([4, 7, 6], dtype, layout, gen) * 4
        out = _nan_out([4, 7, 6], dtype, out_layout)
        expected = F.silu(x)
        assert _call(kernels_lib, op, [x, out]) == 1
    elif op == "rms_norm":
        x = _make([4, 5, 16], dtype, layout, gen)
        weight = torch.randn(32, generator=gen).to(dtype)[::2]
        out = _nan_out([4, 5, 16], dtype, out_layout)
        expected = torch.rms_norm(x, (16,), weight, 1e-5)
        assert _call(kernels_lib, op, [x, weight, out], 1e-5) == 1
    else:
        x = _make([3, 4, 10], dtype, layout, gen)
        out = _nan_out([3, 4, 5], dtype, out_layout)
        # As the composite computes it: silu rounded to dtype, then the product.
        expected = F.silu(x[..., :5]) * x[..., 5:]
        assert _call(kernels_lib, op, [x, out]) == 1
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float64, torch.bool], ids=str)
def test_kernels_decline_other_dtypes(kernels_lib, dtype):
    a = torch.zeros(2, 4, dtype=dtype)
    out = torch.zeros(2, 4, dtype=dtype)
    half = torch.zeros(2, 2, dtype=dtype)
    weight = torch.zeros(4, dtype=dtype)
    assert _call(kernels_lib, "add", [a, a, out], 1.0) == 0
    assert _call(kernels_lib, "mul", [a, a, out]) == 0
    assert _call(kernels_lib, "silu", [a, out]) == 0
    assert _call(kernels_lib, "rms_norm", [a, weight, out], 1e-6) == 0
    assert _call(kernels_lib, "silu_and_mul", [a, half]) == 0
    assert not out.any() and not half.any()


def test_kernels_decline_bad_out_shape(kernels_lib):
    a = torch.randn(2, 3)
    b = torch.randn(3)
    wrong = torch.zeros(3, 3)
    assert _call(kernels_lib, "add", [a, b, wrong], 1.0) == 0
    assert _call(kernels_lib, "mul", [a, b, wrong]) == 0
    assert _call(kernels_lib, "silu", [a, wrong]) == 0
    assert _call(kernels_lib, "rms_norm", [a, torch.ones(3), wrong], 1e-6) == 0
    assert _call(kernels_lib, "silu_and_mul", [torch.randn(2, 6), wrong]) == 0
    assert not wrong.any()
