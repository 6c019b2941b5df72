"""The argument-kind registry (infiniops_codegen/schema/arg_kinds.py) is the one
description of how each argument type crosses the library: every kind's
converter must exist in the bridge (cpp/torch/converters.h) and produce a
value the library's API takes as the kind's core type. Checked by compiling
one translation unit that instantiates every kind (no torch needed: the
converters header is free of ATen)."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from infiniops_codegen.schema import arg_kinds
from infiniops_codegen.base.locations import SUPPORT_DIR
from infiniops_codegen.schema.records import TypeInfo

REPO = Path(__file__).resolve().parent.parent


def _checks() -> list[str]:
    lines = []
    for kind in arg_kinds.KINDS:
        size = 3 if kind.sized else None
        for output in (False, True) if kind.out_core_type else (False,):
            traits = kind.converter_type(size, "tk::")
            core = kind.core(size, output)
            # the converted value binds to the API parameter as the generated
            # bindings pass it (an lvalue)
            lines.append(
                f"static_assert(std::is_convertible_v<{traits}::value&, {core}>, "
                f'"{kind.name}");'
            )
            # and the converter instantiates (its unpack exists)
            lines.append(
                f"[[maybe_unused]] {traits}::value v_{kind.name}_{int(output)} = "
                f"tb::arg<{traits}>(obj, sig, 0);"
            )
    return lines


def test_every_kind_has_a_converter_the_api_takes(tmp_path):
    compiler = shutil.which("g++")
    assert compiler, "g++ is needed"
    source = tmp_path / "kinds.cc"
    source.write_text(
        '#include <type_traits>\n#include "torch/converters.h"\n'
        "namespace tb = infini::ops::torch_bridge;\n"
        "namespace tk = infini::ops::torch_bridge::kinds;\n"
        "using namespace infini::ops;\n"
        "void check(PyObject* obj, const tb::Signature& sig) {\n"
        + "\n".join(_checks())
        + "\n}\n"
    )
    result = subprocess.run(
        [
            compiler,
            "-std=c++20",
            "-fsyntax-only",
            "-I",
            str(SUPPORT_DIR / "cpp"),
            "-I",
            str(REPO / "generated"),
            "-I",
            sysconfig.get_paths()["include"],
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]


# float[] exists in ATen only as float[]? (float_list_opt): no schema type
# classifies as the bare list kind.
CLASSIFIED = [k for k in arg_kinds.KINDS if k is not arg_kinds.FLOAT_LIST]


@pytest.mark.parametrize("kind", CLASSIFIED, ids=lambda k: k.name)
def test_classify_finds_each_kind_from_its_schema_type(kind):
    t = TypeInfo(
        text="t",
        base=kind.family,
        optional=kind.optional,
        is_list=kind.is_list,
        size=2 if kind.sized else None,
        elem_optional=kind.elem_optional,
    )
    assert arg_kinds.classify(t, is_out=False) is kind


def test_kind_names_are_unique():
    names = [k.name for k in arg_kinds.KINDS]
    assert len(names) == len(set(names)) == len(arg_kinds.BY_NAME)


# --- what the tools read of a kind -------------------------------------------------

TENSOR_SAMPLES = {
    arg_kinds.Sample.TENSOR,
    arg_kinds.Sample.TENSOR_OR_NONE,
    arg_kinds.Sample.TENSOR_PAIR,
    arg_kinds.Sample.INDEX_LIST,
}


@pytest.mark.parametrize("kind", arg_kinds.KINDS, ids=lambda k: k.name)
def test_a_kind_s_harness_sample_matches_what_it_holds(kind):
    # The harness makes tensors for exactly the kinds that hold them.
    assert (kind.sample in TENSOR_SAMPLES) == (
        kind.tensors is not arg_kinds.Tensors.NONE
    )
    if kind.optional and kind.tensors is arg_kinds.Tensors.NONE:
        # an optional attribute samples as its base kind or as None
        bases = {k.name: k for k in (*arg_kinds.KINDS, arg_kinds.FLOAT_LIST)}
        base = bases[kind.name.removesuffix("_opt")]
        assert kind.sample in (base.sample, arg_kinds.Sample.NONE)


@pytest.mark.parametrize("kind", arg_kinds.KINDS, ids=lambda k: k.name)
def test_a_kind_s_floor_code_uses_only_its_placeholders(kind):
    import string

    allowed = {"o", "v", "b", "c", "size"}
    for code in (kind.floor, kind.floor_out):
        if code is None:
            continue
        for text in (code.unpack, code.aten, code.from_blob, code.native):
            if text is None:
                continue
            names = {f for _, f, _, _ in string.Formatter().parse(text) if f}
            assert names <= allowed, (kind.name, text)
        # only tensor kinds are rebuilt over from_blob
        assert (code.from_blob is not None) == (
            kind.tensors is not arg_kinds.Tensors.NONE
        )
    # an output form exactly where the kind can be an output the floor takes
    assert kind.floor_out is None or kind.out_core_type is not None
