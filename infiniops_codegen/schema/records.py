"""Plain, picklable records of what torchgen says about an ATen schema.

torchgen objects are heavy to build (~1.6 s for native_functions.yaml), so the
oracle extracts these small records once and caches them; nothing downstream
imports torchgen for ATen ops.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TypeInfo:
    """Structure of a schema type, read from torchgen's Type objects."""

    text: str  # torchgen's own spelling, e.g. "int[2]?"
    base: str  # BaseTy name: Tensor, int, SymInt, float, Scalar, ...
    optional: bool = False
    is_list: bool = False
    size: int | None = None  # N of a fixed-size list such as int[2]
    elem_optional: bool = False  # Tensor?[]


@dataclass(frozen=True)
class SchemaArg:
    name: str
    type: TypeInfo
    default: str | None  # the schema's default literal, e.g. "False", "[0,1]"
    cpp_type: str  # C++ type of the ATen API parameter (torchgen)
    cpp_default: str | None  # torchgen's C++ default expression
    kwarg_only: bool
    is_out: bool
    is_write: bool


@dataclass(frozen=True)
class FunctionalCall:
    """How a call without out= computes the outputs: ATen's functional
    overload, which takes the out= overload's other arguments in the same
    order and returns one tensor per output."""

    cpp_name: str  # at::<cpp_name>(...), e.g. "add"
    cpu_kernel: bool  # at::cpu::<cpp_name> exists (a CPU kernel entry)
    return_type: str | None  # torch.return_types.<name>; None: one tensor or a tuple
    # at::meta::<cpp_name> exists: the structured kernel's C++ meta function,
    # callable without the dispatcher (whose Meta key may run Python: prims)
    meta_kernel: bool = False


@dataclass(frozen=True)
class PyParam:
    """A parameter of torch's Python signature, as its argument parser
    checks it (torch/csrc/utils/python_arg_parser.cpp)."""

    name: str
    match: str  # the bridge's check of a value (overloads.h): "Tensor", "IntList", ...
    size: int = 0  # N of `int[N]` (one int stands for N) or of `Tensor[N] out`
    allow_none: bool = False
    has_default: bool = False
    kwarg_only: bool = False


@dataclass(frozen=True)
class PyOverload:
    """One signature of a torch Python function, as torchgen groups and
    orders them (gen_python_functions.group_overloads)."""

    text: str  # torch's own spelling: "add(Tensor input, Tensor other, *, ...)"
    params: tuple[PyParam, ...]  # positional ones, then keyword-only (out= too)
    functional: str  # "add.Tensor"
    out: str | None  # the out= overload torch pairs with it; None: no out=
    numbers_as_tensors: bool  # torch takes a Python number for a Tensor


@dataclass(frozen=True)
class AtenSchema:
    name: str  # "add.out"
    base: str  # "add"
    overload: str  # "out"
    header: str  # per-operator header stem: ATen/ops/<header>.h
    cpp_name: str  # "add_out"
    args: tuple[SchemaArg, ...]  # schema order
    cpp_order: tuple[str, ...]  # argument names in the C++ API's order
    cpu_kernel: bool  # a CPU kernel is registered: at::cpu::<cpp_name> exists
    tensor_iterator: bool  # structured on TensorIteratorBase
    schema: str  # str(FunctionSchema), for humans only
    functional: str | None = None  # functional overload, e.g. "add.Tensor"
    # torch.return_types.<name> that torch returns from this out= overload
    # (a structseq with the schema's return names); None: a plain tuple.
    return_type: str | None = None
    # The functional overload as a call without out= makes it (None: no
    # such call): its ATen C++ function, whether at::cpu:: has it, and the
    # torch.return_types.<name> of its several named results.
    functional_call: FunctionalCall | None = None
    tags: tuple[
        str, ...
    ] = ()  # native_functions.yaml tags (nondeterministic_seeded, ...)
    # The functional overload's schema and tags, as torchgen prints them
    # (the dispatcher's functional twin of the op: render/torch_library.py).
    functional_schema: str | None = None
    functional_tags: tuple[str, ...] = ()
