"""The dtype and platform tables (infiniops_codegen/data/dtypes.yaml,
platforms.yaml) are the one list of each: checked against PyTorch, rendered
into C++ that compiles and maps as the tables say (for every combination of
platforms that changes the CUDA / PrivateUse1 mapping), and no hand-written
C++ or CMake lists them again."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import warnings
from pathlib import Path

import pytest
import torch

from infiniops_codegen.render import pipeline
from infiniops_codegen.base.dtypes import load_dtypes, spec_dtypes
from infiniops_codegen.base.locations import SUPPORT_DIR
from infiniops_codegen.base.platforms import load_platforms

REPO = Path(__file__).resolve().parent.parent
GENERATED = REPO / "generated"
TORCH_INCLUDE = Path(torch.__file__).parent / "include"
CXX = os.environ.get("CXX", "g++")
DTYPES = load_dtypes()
PLATFORMS = load_platforms()
BY_NAME = {p.name: p for p in PLATFORMS}
TABLE_FILES = ("dtype_table.h", "platform_table.h", "torch_tables.h")


# --- The dtype table -----------------------------------------------------------


@pytest.mark.parametrize("d", DTYPES, ids=lambda d: d.name)
def test_each_dtype_is_torchs(d):
    dtype = getattr(torch, d.name)  # the name is PyTorch's
    assert isinstance(dtype, torch.dtype)
    assert dtype.itemsize == d.size
    assert dtype.is_floating_point == (d.kind == "floating")
    assert dtype.is_complex == (d.kind == "complex")
    assert (dtype == torch.bool) == (d.kind == "bool")
    with warnings.catch_warnings():  # complex32 is "experimental"
        warnings.simplefilter("ignore")
        assert torch.empty(0, dtype=dtype).type() == f"torch.{d.c10}Tensor"
    assert d.enumerator.startswith("k")


def test_spec_dtypes_are_the_twelve_specs_always_accepted():
    # Behaviour kept from before the table: the unsigned 16-64 bit, complex32
    # and float8 dtypes exist in the core but no spec names them.
    assert list(spec_dtypes()) == [
        "bool",
        "uint8",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ]


# --- The platform table --------------------------------------------------------


def test_platform_table_rules():
    assert [p.name for p in PLATFORMS if p.default] == ["cpu"]
    assert {p.c10_type for p in PLATFORMS if p.upstream} == {"CPU", "CUDA"}
    assert [p.name for p in PLATFORMS if p.upstream] == ["cpu", "nvidia"]
    assert [p.name for p in PLATFORMS if p.cuda_toolkit] == [
        "nvidia",
        "iluvatar",
        "metax",
    ]


def mapped(built: set[str]) -> dict[str, str | None]:
    """The documented rule: a c10 device type's tensors belong to the first
    built platform (table order) carrying it, else to its upstream one."""
    result = {}
    for p in PLATFORMS:
        result.setdefault(p.c10_type, None)
        if result[p.c10_type] is None and p.name in built:
            result[p.c10_type] = p.name
    for t in result:
        if result[t] is None:
            up = [p.name for p in PLATFORMS if p.c10_type == t and p.upstream]
            result[t] = up[0] if up else None
    return result


# What the hand-written bridge did before the table (aten_convert.cpp's #if
# chains): the generated mapping must keep it.
BEFORE = [
    (set(), {"CPU": "cpu", "CUDA": "nvidia", "PrivateUse1": None}),
    ({"iluvatar"}, {"CUDA": "iluvatar"}),
    ({"metax"}, {"CUDA": "metax"}),
    ({"iluvatar", "metax"}, {"CUDA": "iluvatar"}),
    ({"nvidia", "iluvatar"}, {"CUDA": "nvidia"}),
    ({"nvidia", "metax"}, {"CUDA": "nvidia"}),
    ({"cambricon"}, {"PrivateUse1": "cambricon"}),
    ({"moore"}, {"PrivateUse1": "moore"}),
    ({"ascend"}, {"PrivateUse1": "ascend"}),
    ({"cambricon", "moore", "ascend"}, {"PrivateUse1": "cambricon"}),
    ({"moore", "ascend"}, {"PrivateUse1": "moore"}),
]


# A set's ids sorted: its order changes with the hash seed, and pytest-xdist's
# workers must collect the same ids.
@pytest.mark.parametrize(
    "built, expected",
    BEFORE,
    ids=lambda v: str(sorted(v) if isinstance(v, set) else v),
)
def test_rule_keeps_the_old_mapping(built, expected):
    got = mapped(built | {"cpu"})
    assert {t: got[t] for t in expected} == expected


# --- The generated C++ ---------------------------------------------------------


def _compile(source: str, defines: set[str]) -> subprocess.CompletedProcess:
    cmd = [CXX, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror"]
    cmd += [f"-D{d}" for d in sorted(defines)]
    cmd += ["-I", str(SUPPORT_DIR / "cpp"), "-I", str(GENERATED)]
    cmd += ["-isystem", str(TORCH_INCLUDE), "-x", "c++", "-"]
    return subprocess.run(
        cmd, input=source, capture_output=True, text=True, timeout=300
    )


def _enum(p) -> str:
    return f"infini::ops::DeviceType::{p.device_type}"


def _combinations() -> list[tuple[str, ...]]:
    """Every subset of each c10 device type's platforms (what the mapping
    depends on), the subsets of different device types zipped together to
    keep the compiles few."""
    groups: dict[str, list[str]] = {}
    for p in PLATFORMS:
        groups.setdefault(p.c10_type, []).append(p.name)
    subsets = [
        [c for n in range(len(g) + 1) for c in itertools.combinations(g, n)]
        for g in groups.values()
    ]
    return [
        tuple(name for part in parts if part for name in part)
        for parts in itertools.zip_longest(*subsets)
    ]


COMBINATIONS = _combinations()


@pytest.mark.parametrize("names", COMBINATIONS, ids=lambda c: "+".join(c) or "cpu")
def test_generated_tables_map_as_the_rule_says(names):
    built = {"cpu", *names}
    asserts = []
    for t, platform in mapped(built).items():
        if platform is None:
            value = "infini::ops::DeviceType{-1}"
        else:
            value = _enum(BY_NAME[platform])
        asserts.append(
            f"static_assert(T::device_type(c10::DeviceType::{t}, none) == {value});"
        )
    for p in PLATFORMS:
        asserts.append(
            f"static_assert(T::c10_device_type({_enum(p)}, [] {{ return "
            f"c10::DeviceType::Meta; }}) == c10::DeviceType::{p.c10_type});"
        )
        asserts.append(
            f'static_assert(infini::ops::to_string({_enum(p)}) == "{p.name}");'
        )
    order = [p.name for p in PLATFORMS if p.name in built]
    for k, name in enumerate(order):
        asserts.append(
            f"static_assert(std::string_view(infini::ops::kBuiltPlatforms[{k}]) "
            f'== "{name}");'
        )
    asserts.append(
        f"static_assert(infini::ops::kBuiltPlatforms[{len(order)}] == nullptr);"
    )
    source = "\n".join(
        [
            '#include "torch_tables.h"',
            "#include <string_view>",
            "namespace T = infini::ops::torch_bridge::tables;",
            "constexpr auto none = [] { return infini::ops::DeviceType{-1}; };",
            *asserts,
        ]
    )
    flags = {BY_NAME[n].flag for n in built}
    result = _compile(source, flags)
    assert result.returncode == 0, result.stderr


def test_generated_dtype_tables_match_the_table():
    asserts = []
    for code, d in enumerate(DTYPES):
        e = f"infini::ops::DataType::{d.enumerator}"
        asserts += [
            f"static_assert(static_cast<int>({e}) == {code});",
            f"static_assert(infini::ops::element_size({e}) == {d.size});",
            f'static_assert(infini::ops::to_string({e}) == "{d.name}");',
            f"static_assert(infini::ops::is_floating_point({e}) == "
            f"{str(d.kind == 'floating').lower()});",
            f"static_assert(infini::ops::is_complex({e}) == "
            f"{str(d.kind == 'complex').lower()});",
            f"static_assert(infini::ops::is_integral({e}, false) == "
            f"{str(d.kind == 'integral').lower()});",
            f"static_assert(infini::ops::is_integral({e}, true) == "
            f"{str(d.kind in ('integral', 'bool')).lower()});",
            f"static_assert(T::scalar_type({e}, fail_s) == c10::ScalarType::{d.c10});",
            f"static_assert(T::data_type(c10::ScalarType::{d.c10}, fail_d) == {e});",
        ]
    asserts.append(
        "static_assert(T::data_type(c10::ScalarType::QInt8, "
        "[] { return infini::ops::DataType{-1}; }) == infini::ops::DataType{-1});"
    )
    source = "\n".join(
        [
            '#include "torch_tables.h"',
            "namespace T = infini::ops::torch_bridge::tables;",
            "constexpr auto fail_s = [] { return c10::ScalarType::Undefined; };",
            "constexpr auto fail_d = [] { return infini::ops::DataType{-1}; };",
            *asserts,
        ]
    )
    result = _compile(source, {"WITH_CPU"})
    assert result.returncode == 0, result.stderr


def test_committed_tables_are_current():
    """The committed table headers are what the tables render to (the core
    compiles against them: tests/test_core.py)."""
    files = pipeline.generate(REPO / "op_specs").files
    for name in TABLE_FILES:
        assert (GENERATED / name).read_text() == files[name], name


# --- Nothing lists them again --------------------------------------------------

HAND_WRITTEN = (
    [SUPPORT_DIR / "CMakeLists.txt"]
    + sorted((SUPPORT_DIR / "cmake").iterdir())
    + sorted(
        p
        for d in ("core", "torch", "runtime")
        for p in (SUPPORT_DIR / "cpp" / d).rglob("*")  # torch/aten/ too
        if p.is_file()
    )
)


@pytest.mark.parametrize("path", HAND_WRITTEN, ids=lambda p: str(p.relative_to(REPO)))
def test_no_hand_written_list(path):
    """No platform flag, no dtype's c10 enumerator and no DataType enumerator
    outside the tables (the kernels name the dtypes they handle; that is
    their business, not a list)."""
    text = path.read_text()
    flags = "|".join(p.flag for p in PLATFORMS)
    c10 = "|".join(d.c10 for d in DTYPES)
    enums = "|".join(d.enumerator for d in DTYPES)
    pattern = rf"\b({flags})\b|ScalarType::({c10})\b|DataType::({enums})\b"
    found = [m.group(0) for m in re.finditer(pattern, text)]
    assert found == [], f"{path.name} lists {found}: use the generated tables"
