"""The module-level API of the built module besides its ops: the functions
and attributes every build has, and so the names no op may take.

One list, read by the spec validation (resolve.py: an op with a reserved
name is a located spec error), the method table of the bindings
(templates/bindings.cpp.j2) and the type stub (templates/module.pyi.j2).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModuleFunction:
    name: str
    cpp: str  # the C++ function of the method table (bindings.cpp)
    flags: str  # METH_NOARGS / METH_O
    doc: str
    stub: str  # the .pyi declaration after the name: "(enabled: bool, /) -> None"


FUNCTIONS = (
    ModuleFunction(
        "implementations",
        "py_implementations",
        "METH_NOARGS",
        "{op: {platform: [implementations]}} for the platforms this build has.",
        "() -> dict[str, dict[str, list[str]]]",
    ),
    ModuleFunction(
        "platforms",
        "tb::py_platforms",
        "METH_NOARGS",
        "Platforms this build has.",
        "() -> list[str]",
    ),
    ModuleFunction(
        "set_handle_reuse",
        "tb::py_set_handle_reuse",
        "METH_O",
        "Reuse the at::Tensor a Python tensor arrived with (True, the default) "
        "or rebuild it with from_blob on every call (False).",
        "(enabled: bool, /) -> None",
    ),
    ModuleFunction(
        "handle_reuse",
        "tb::py_handle_reuse",
        "METH_NOARGS",
        "Whether handles are reused.",
        "() -> bool",
    ),
    ModuleFunction(
        "set_wrapper_pool",
        "tb::py_set_wrapper_pool",
        "METH_O",
        "On the from_blob path, re-bind the at::Tensor wrappers of earlier "
        "calls (True, the default) or make fresh ones on every call (False).",
        "(enabled: bool, /) -> None",
    ),
    ModuleFunction(
        "wrapper_pool",
        "tb::py_wrapper_pool",
        "METH_NOARGS",
        "Whether the from_blob path re-binds pooled wrappers.",
        "() -> bool",
    ),
    ModuleFunction(
        "set_direct_mode",
        "tb::py_set_direct_mode",
        "METH_O",
        "Call ATen's CPU kernels directly for plain CPU tensors (True, the "
        "default) or always go through the dispatcher (False).",
        "(enabled: bool, /) -> None",
    ),
    ModuleFunction(
        "direct_mode",
        "tb::py_direct_mode",
        "METH_NOARGS",
        "Whether direct kernel mode is on.",
        "() -> bool",
    ),
    ModuleFunction(
        "set_lane",
        "tb::py_set_lane",
        "METH_O",
        "Let calls whose tensors ATen takes as they are skip the library's "
        "core tensors (True, the default) or never (False).",
        "(enabled: bool, /) -> None",
    ),
    ModuleFunction(
        "lane",
        "tb::py_lane",
        "METH_NOARGS",
        "Whether the lane is on.",
        "() -> bool",
    ),
    ModuleFunction(
        "_register_torch_ops",
        "py_register_torch_ops",
        "METH_NOARGS",
        "Register the ops with PyTorch's dispatcher as torch.ops.<name>.<op> "
        "(once; the module does it when first needed: docs/compile.md).",
        "() -> None",
    ),
    ModuleFunction(
        "_debug_native_runs",
        "py_debug_native_runs",
        "METH_O",
        "Test hook: {op: native kernel runs} of the ops whose native kernel "
        "ran since the last reset; given True, also zeroes the counts.",
        "(reset: bool, /) -> dict[str, int]",
    ),
    ModuleFunction(
        "_debug_lane_calls",
        "tb::py_debug_lane_calls",
        "METH_NOARGS",
        "Test hook: how many calls took the lane so far.",
        "() -> int",
    ),
    ModuleFunction(
        "_observe_stats",
        "tb::py_observe_stats",
        "METH_NOARGS",
        "The call counters: [(op, implementation, path, calls)] "
        "(infiniops_codegen.observe: stats()).",
        "() -> list[tuple[str, str, str, int]]",
    ),
    ModuleFunction(
        "_observe_reset_stats",
        "tb::py_observe_reset_stats",
        "METH_O",
        "Zero the call counters; count from now on (True) or stop (False).",
        "(count: bool, /) -> None",
    ),
    ModuleFunction(
        "_observe_trace",
        "tb::py_observe_trace",
        "METH_O",
        "Trace calls into a file (a path), or keep the lines (None).",
        "(path: str | None, /) -> None",
    ),
    ModuleFunction(
        "_observe_end_trace",
        "tb::py_observe_end_trace",
        "METH_NOARGS",
        "End the trace: the kept lines; back to INFINIOPS_TRACE's file.",
        "() -> list[str]",
    ),
    ModuleFunction(
        "_observe_require_native",
        "tb::py_observe_require_native",
        "METH_O",
        "Calls that would fall back raise: True (every op), a list of op "
        "names, or None (off).",
        "(ops: bool | list[str] | None, /) -> None",
    ),
    ModuleFunction(
        "_observe_flags",
        "tb::py_observe_flags",
        "METH_NOARGS",
        "What observes now: 1 counters, 2 trace, 4 require_native.",
        "() -> int",
    ),
    ModuleFunction(
        "_debug_wrapper_pool",
        "tb::py_debug_wrapper_pool",
        "METH_O",
        "Test hook: the calling thread's wrapper pool counts (rebound, fresh, "
        "kept, dropped, pooled); clears the pool first when given True.",
        "(clear: bool, /) -> dict[str, int]",
    ),
    ModuleFunction(
        "_debug_keep",
        "tb::py_debug_keep",
        "METH_O",
        "Test hook: keep a C++ copy of a tensor.",
        "(tensor: Tensor, /) -> int",
    ),
    ModuleFunction(
        "_debug_kept",
        "tb::py_debug_kept",
        "METH_O",
        "Test hook: a kept tensor, through its handle.",
        "(index: int, /) -> Tensor",
    ),
    ModuleFunction(
        "_debug_release",
        "tb::py_debug_release",
        "METH_NOARGS",
        "Test hook: drop the kept copies.",
        "() -> None",
    ),
)

# Module attributes (set in PyInit_<module>; cmake_prefix_path by
# runtime.load: an installed package's CMAKE_PREFIX_PATH, None for a build
# directory): name -> .pyi type.
ATTRIBUTES = {
    "__torch_version__": "str",
    "selection": "str",
    "cmake_prefix_path": "str | None",
}

# Names no op may take although the module defines nothing by them: every
# test hook is `_debug_*`; dunder names are Python's; `ops` is the C++
# namespace of the library (infini::ops).
RESERVED_PREFIXES = ("_debug_", "_observe_")
OTHER_RESERVED = ("ops",)


@dataclass(frozen=True)
class PythonFunction:
    """A function runtime.load adds to the module (infiniops_codegen/runtime/observe.py)."""

    name: str
    stub: str
    reserved: bool = True  # no op may take the name


PYTHON_FUNCTIONS = (
    PythonFunction("stats", "() -> dict[tuple[str, str, str], int]"),
    PythonFunction("reset_stats", "(count: bool = True) -> None"),
    PythonFunction(
        "require_native",
        "(ops: bool | str | Sequence[str] = True) -> AbstractContextManager[object]",
    ),
    # ATen's op `trace` keeps the name where a build has it.
    PythonFunction(
        "trace", "(file: object = None) -> AbstractContextManager[object]", False
    ),
)


def reserved_reason(name: str) -> str | None:
    """Why an op may not be called `name`, None when it may."""
    if any(f.name == name for f in FUNCTIONS):
        return "a function of the built module has this name"
    if name in ATTRIBUTES:
        return "an attribute of the built module has this name"
    for prefix in RESERVED_PREFIXES:
        if name.startswith(prefix):
            return f"names starting with '{prefix}' are the module's test hooks"
    if name.startswith("__") and name.endswith("__"):
        return "dunder names are Python's"
    if any(f.name == name and f.reserved for f in PYTHON_FUNCTIONS):
        return "the loaded module has a function of this name (docs/observability.md)"
    if name in OTHER_RESERVED:
        return "it is the library's C++ namespace (infini::ops)"
    return None


# Keyword parameters every op takes after its own (the .pyi annotation and
# default of each); no argument of an op may take these names.
CALL_KEYWORDS = (
    ("implementation", 'Implementation = "default"'),
    ("stream", "StreamLike | None = None"),
)
# Their defaults, as Python literals (the builtins' text signatures).
CALL_DEFAULTS = {"implementation": '"default"', "stream": "None"}
