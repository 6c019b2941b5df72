"""Platforms in the generated code, read from the golden files of the basic
fixture (whose silu_and_mul declares a native kernel on every platform) and
from the platform table: each platform's guard, device type and WITH_ flag
appear where they should, and nothing of a stream guard is compiled on CPU.

Lines are judged by the #ifdef blocks that enclose them (`active`), i.e. by
what the preprocessor keeps for a build with the given WITH_ flags.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infiniops_codegen.render import pipeline
from infiniops_codegen.base.locations import SUPPORT_DIR
from infiniops_codegen.base.platforms import load_platforms

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden" / "basic"
PLATFORMS = load_platforms()
STREAM_PLATFORMS = [p for p in PLATFORMS if p.stream]
GUARDS = {p.stream.guard for p in STREAM_PLATFORMS}

# The torch device of each platform known when these tests were written (a
# cross-check of the table; a new platform needs no entry here).
TORCH_DEVICES = {
    "cpu": "cpu",
    "nvidia": "cuda",
    "iluvatar": "cuda",
    "metax": "cuda",
    "cambricon": "mlu",
    "moore": "musa",
    "ascend": "npu",
    "sim": "sim",
}


def active(text: str, defined: set[str]) -> str:
    """The lines the preprocessor keeps with `defined` (#ifdef/#ifndef/#else/
    #endif and `#if defined(A) || defined(B)`: what the templates use)."""
    stack: list[bool] = []
    kept = []
    for line in text.splitlines():
        words = line.split()
        directive = words[0] if words else ""
        if directive == "#ifdef":
            stack.append(words[1] in defined)
        elif directive == "#if":
            names = re.findall(r"defined\((\w+)\)", line)
            assert names and "&&" not in line and "!" not in line, line
            stack.append(any(n in defined for n in names))
        elif directive == "#ifndef":
            stack.append(words[1] not in defined)
        elif directive == "#else":
            stack[-1] = not stack[-1]
        elif directive == "#endif":
            stack.pop()
        elif all(stack):
            kept.append(line)
    assert not stack, "unbalanced #ifdef"
    return "\n".join(kept)


def golden(rel: str) -> str:
    return (GOLDEN / rel).read_text(encoding="utf-8")


def test_platform_table():
    names = [p.name for p in PLATFORMS]
    assert names[: len(TORCH_DEVICES)] == list(TORCH_DEVICES)  # new ones go last
    for p in PLATFORMS:
        assert p.flag == f"WITH_{p.name.upper()}"
        assert p.device_type == "k" + p.name.capitalize()
        assert p.torch_device == TORCH_DEVICES.get(p.name, p.torch_device)
        assert p.kernels.compiler and p.kernels.extensions
        assert (p.stream is None) == (p.name == "cpu"), p.name
    bridge = {p.name for p in PLATFORMS if p.host_compiled_bridge}
    assert bridge & set(TORCH_DEVICES) == {"metax", "moore"}
    nvidia = next(p for p in PLATFORMS if p.name == "nvidia")
    assert (nvidia.kernels.compiler, nvidia.kernels.language) == ("nvcc", "CUDA")
    assert nvidia.stream.guard == "c10::cuda::CUDAStreamGuard"
    assert "c10/cuda/CUDAGuard.h" in nvidia.stream.headers


@pytest.mark.parametrize("platform", STREAM_PLATFORMS, ids=lambda p: p.name)
def test_each_stream_platform_guards_its_own_device(platform):
    text = golden("stream_guards.cpp")
    on = active(text, {"WITH_CPU", platform.flag})
    for header in platform.stream.headers:
        assert f"#include <{header}>" in on
    guard = (
        f"    case DeviceType::{platform.device_type}: {{\n"
        f"      // {platform.name}: torch device '{platform.torch_device}', "
        f"{platform.stream.type} streams.\n"
        f"      const {platform.stream.guard} guard_(\n"
        f"          {platform.stream.external_expr('stream.handle', 'device.index')});\n"
        "      call();\n"
    )
    assert guard in on
    assert f"Stream {platform.name}::current_stream(Device device)" in on
    assert platform.stream.current_expr("device.index") in on
    # ... and only under its own flag: no other platform's case is compiled.
    others = [p for p in STREAM_PLATFORMS if p is not platform]
    assert all(f"case DeviceType::{p.device_type}:" not in on for p in others)


def test_no_guard_code_at_all_on_cpu():
    for rel in ("stream_guards.cpp", "stream_guards.h", "ops.cpp", "torch_fallback.h"):
        cpu = active(golden(rel), {"WITH_CPU"})
        for p in STREAM_PLATFORMS:
            assert p.stream.guard not in cpu, rel
            assert p.stream.type not in cpu, rel
            assert f"{p.name}::current_stream" not in cpu, rel
            assert all(h not in cpu for h in p.stream.headers), rel
        assert "Guard" not in cpu and "kCpu: {" not in cpu, rel
    # The wrappers themselves (shards) never hold a guard, on any platform.
    shards = sorted(GOLDEN.glob("torch_fallback/shard_*.cpp"))
    for shard in shards + [GOLDEN / "torch_fallback.h"]:
        text = shard.read_text(encoding="utf-8")
        assert not any(guard in text for guard in GUARDS), shard.name
        assert "stream" not in text.lower(), shard.name


def test_the_fixture_declares_a_kernel_on_every_platform():
    spec = (GOLDEN.parents[1] / "specs" / "basic" / "composite.yaml").read_text()
    every = re.search(r"native: \[(.*)\]  # every platform", spec).group(1)
    missing = [p.name for p in PLATFORMS if p.name not in every.split(", ")]
    assert not missing, (
        f"add {missing} to silu_and_mul's native list in "
        "tests/fixtures/specs/basic/composite.yaml, then run "
        "scripts/update_goldens.py (docs/adding-a-platform.md)"
    )


def test_cpu_native_kernels_take_no_stream_and_others_take_one():
    decls = golden("native_kernels.h")
    dispatch = golden("ops.cpp")
    for p in PLATFORMS:
        kept = active(decls, {p.flag})
        stream = ", Stream stream" if p.stream else ""
        assert (
            f"namespace infini::ops::native::{p.name} {{\n"
            in kept  # under its own flag
        )
        assert (
            f"KernelResult silu_and_mul(const Tensor& input, Tensor& out{stream});"
            in kept
        )
        call = active(dispatch, {p.flag})
        args = "input, out" + (
            f", torch_fallback::{p.name}::current_stream(key_.device())"
            if p.stream
            else ""
        )
        assert (
            f"        case DeviceType::{p.device_type}:\n"
            "          {  // every dtype: the kernel decides\n"
            + (
                # a device's kernel launches with its device current
                "            const torch_fallback::NativeDevice device_(key_.device());\n"
                if p.stream
                else ""
            )
            + "            const native::KernelResult result_ = "
            f"native::{p.name}::silu_and_mul({args});\n"
            "            if (result_) [[likely]] {\n"
        ) in call, p.name
        assert active(decls, set()).count("namespace infini::ops::native::") == 0


def test_stream_dispatch_and_bindings():
    dispatch = golden("ops.cpp")
    # Every op hands a given stream to the platform's guard before anything.
    assert dispatch.count("if (stream_) [[unlikely]] {") == dispatch.count(
        "Implementation impl_, Stream stream_) {"
    )
    assert (
        'torch_fallback::on_stream("silu_and_mul", input.device(), stream_' in dispatch
    )
    bindings = golden("bindings.cpp")
    names = re.findall(r"kNames_\w+\[\] = \{(.*)\};", bindings)
    assert names and all(n.endswith('"implementation", "stream"') for n in names)
    attrs = {p.stream.py_attr for p in STREAM_PLATFORMS}
    assert attrs >= {"cuda_stream", "mlu_stream", "musa_stream", "npu_stream"}
    line = next(l for l in bindings.splitlines() if "kStreamAttributes[] =" in l)
    assert all(f'"{a}"' in line for a in attrs) and line.endswith("nullptr};")


def test_platforms_cmake_carries_the_table():
    text = golden("platforms.cmake")
    names = " ".join(p.name for p in PLATFORMS)
    assert f"set(INFINI_OPS_PLATFORMS {names})" in text
    assert names.startswith("cpu nvidia iluvatar metax cambricon moore ascend")
    for p in PLATFORMS:
        assert f"set(INFINI_OPS_PLATFORM_{p.name}_FLAG {p.flag})" in text
        on = {"DEFAULT": p.default, "CUDA_TOOLKIT": p.c10_type == "CUDA"}
        for key, value in on.items():
            state = "ON" if value else "OFF"
            assert f"set(INFINI_OPS_PLATFORM_{p.name}_{key} {state})" in text
        assert (
            f"set(INFINI_OPS_PLATFORM_{p.name}_KERNEL_LANGUAGE {p.kernels.language})"
            in text
        )
        bridge = "ON" if p.host_compiled_bridge else "OFF"
        assert (
            f"set(INFINI_OPS_PLATFORM_{p.name}_HOST_COMPILED_BRIDGE {bridge})" in text
        )


def test_cmake_reads_every_platform_variable_it_is_given():
    text = golden("platforms.cmake")
    cmake = (SUPPORT_DIR / "CMakeLists.txt").read_text()
    keys = set(re.findall(r"set\(INFINI_OPS_PLATFORM_[a-z0-9]+_([A-Z_]+) ", text))
    assert {"FLAG", "DEFAULT", "CUDA_TOOLKIT"} <= keys
    unread = sorted(k for k in keys if f"INFINI_OPS_PLATFORM_${{_p}}_{k}" not in cmake)
    assert not unread, f"platforms.cmake sets what CMakeLists.txt never reads: {unread}"


def test_generate_produces_every_platform(tmp_path, runner, helpers):
    out = tmp_path / "gen"
    result = helpers.invoke(
        runner,
        "generate",
        "--specs",
        GOLDEN.parents[1] / "specs" / "basic",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    for rel in ("stream_guards.cpp", "stream_guards.h", "platforms.cmake"):
        assert (out / rel).read_text(encoding="utf-8") == golden(rel)
    committed = (GOLDEN.parents[3] / "generated" / "stream_guards.cpp").read_text()
    for p in STREAM_PLATFORMS:
        assert f"#ifdef {p.flag}" in committed and p.stream.guard in committed
