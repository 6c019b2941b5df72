"""Argument kinds: how each ATen argument type crosses the library, as one
typed record per kind (the core C++ type of the library's API, the .pyi
annotation, the bridge's converter, what it carries for __torch_function__,
what the correctness harness passes for it, how the bench's floor unpacks
it), and how a schema default becomes a C++ expression and a JSON value.

The kinds are the one place that knows them: the model, the templates, the
manifest reader and the tools read these records, never a kind's name. On
the C++ side each kind is one traits type of `cpp/torch/arg_kinds.h`
(`converter`). Pure data (standard library only): the manifest reader and
the tools import it without the generator.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from enum import Enum

from .records import TypeInfo

# Arguments of these types are hidden from callers and passed as empty
# optionals (or torchgen's C++ default when the schema has one).
HIDDEN_BASES = frozenset({"Layout", "Device", "MemoryFormat", "Generator"})

# Named constants that appear as schema defaults (at::Reduction).
_NAMED_INT_DEFAULTS = {"Mean": 1, "Sum": 2}

_INT = frozenset({"int", "SymInt"})


class UnsupportedType(ValueError):
    """The argument's type cannot be expressed; the message says why."""


class Tensors(str, Enum):
    """What an argument of a kind holds of tensors."""

    NONE = "none"
    ONE = "one"  # a tensor, or None for an optional one
    LIST = "list"  # a sequence of tensors (elements may be None: Tensor?[])


class Sample(str, Enum):
    """What the correctness harness (harness/samples.py) passes for an
    argument of a kind when the schema has no default and no hint says."""

    TENSOR = "tensor"  # a tensor of the plan's shape
    TENSOR_OR_NONE = "tensor_or_none"  # one when shaped or required, else None
    TENSOR_PAIR = "tensor_pair"  # two tensors of the plan's shape
    INDEX_LIST = "index_list"  # one index tensor (Tensor?[] of index ops)
    INT = "int"  # by the argument's name (dim: within the rank)
    INT_LIST = "int_list"  # by name; N values for int[N]; sizes: the shape
    FLOAT = "float"  # by name
    SCALAR = "scalar"  # by name
    SCALAR_LIST = "scalar_list"  # [1, 2]
    FALSE = "false"
    TRUE_ARRAY = "true_array"  # N times True for bool[N]
    REDUCTION = "reduction"  # "none" (the str arguments are reductions)
    NONE = "none"
    CASE_DTYPE = "case_dtype"  # the dtype of the case


@dataclass(frozen=True)
class FloorCode:
    """How the bench's floor (bench/floor.py) handles an argument of a kind,
    as C++ with {o} the Python object, {v} the unpacked value, {b} its
    from_blob rebuild, {c} the core value and {size} a list's N."""

    unpack: str  # declares {v} from {o}
    aten: str = "{v}"  # the ATen argument made of {v} (or of {b})
    from_blob: str | None = None  # declares {b} from {v}: tensor kinds only
    native: str | None = None  # declares {c}: the kinds native kernels take


@dataclass(frozen=True)
class ArgKind:
    name: str  # the kind's name in the manifest, e.g. "int_list_opt"
    family: str  # schema base: Tensor, Scalar, int, float, bool, str, ScalarType
    optional: bool  # `T?`
    is_list: bool
    elem_optional: bool  # `Tensor?[]`
    core_type: str  # C++ type in the library's API ("{size}": a list's N)
    out_core_type: str | None  # as an out= argument; None: never one
    py_type: str  # annotation in the .pyi stub
    # traits type in cpp/torch/arg_kinds.h, its names qualified "{ns}" (the
    # namespace torch_bridge::kinds as the code using it spells it),
    # "{size}" a list's N and "{sym}" "Sym" for a SymInt schema type (whose
    # Python values torch's parser takes more of than an int's)
    converter: str
    sample: Sample
    floor: FloorCode | None  # None: the bench's floor does not take the kind
    floor_out: FloorCode | None = None  # as an out= argument
    tensors: Tensors = Tensors.NONE
    sized: bool = False  # needs the list size N of `T[N]`

    def core(self, size: int | None, output: bool) -> str:
        text = self.out_core_type if output else self.core_type
        return text.format(size=size or 0)

    def converter_type(self, size: int | None, ns: str, symint: bool = False) -> str:
        return self.converter.format(size=size or 0, ns=ns, sym="Sym" if symint else "")


def _optional(
    kind: ArgKind,
    name: str,
    core: str,
    py: str,
    floor: FloorCode | None,
    sample: Sample | None = None,
) -> ArgKind:
    """`T?` of a kind: None is std::nullopt (kinds::Optional in C++); never
    an output, so no out= forms."""
    return replace(
        kind,
        name=name,
        optional=True,
        core_type=core,
        out_core_type=None,
        py_type=py,
        converter="{ns}Optional<" + kind.converter + ">",
        sample=sample or kind.sample,
        floor=floor,
        floor_out=None,
    )


def _kind(
    name, family, core, py, converter, sample, floor, *, out=None, is_list=False, **kw
):
    return ArgKind(
        name=name,
        family=family,
        optional=False,
        is_list=is_list,
        elem_optional=kw.pop("elem_optional", False),
        core_type=core,
        out_core_type=out,
        py_type=py,
        converter=converter,
        sample=sample,
        floor=floor,
        **kw,
    )


TENSOR = _kind(
    "tensor",
    "Tensor",
    "const Tensor&",
    "Tensor",
    "{ns}Tensor",
    Sample.TENSOR,
    FloorCode(
        "const at::Tensor& {v} = fl::tensor({o});",
        from_blob="const at::Tensor& {b} = fl::rebound({v}, [] {{}});",
        native="const infini::ops::Tensor {c} = fl::core(fl::tensor({o}));",
    ),
    out="Tensor&",
    floor_out=FloorCode(
        "at::Tensor& {v} = fl::tensor_out({o});",
        from_blob="at::Tensor {b} = fl::rebound({v}, [] {{}});",
        native="infini::ops::Tensor {c} = fl::core({v});",
    ),
    tensors=Tensors.ONE,
)
TENSOR_LIST = _kind(
    "tensor_list",
    "Tensor",
    "std::span<const Tensor>",
    "Sequence[Tensor]",
    "{ns}TensorList",
    Sample.TENSOR_PAIR,
    FloorCode(
        "const fl::TensorList {v}({o});",
        aten="{v}.ref()",
        from_blob="const fl::TensorList {b} = {v}.rebound([] {{}});",
    ),
    out="std::span<Tensor>",
    is_list=True,
    tensors=Tensors.LIST,
)
TENSOR_OPT_LIST = _kind(
    "tensor_opt_list",
    "Tensor",
    "std::span<const std::optional<Tensor>>",
    "Sequence[Tensor | None]",
    "{ns}TensorOptList",
    Sample.INDEX_LIST,
    FloorCode(
        "const auto {v} = fl::tensor_opt_list({o});",
        from_blob="const auto {b} = fl::from_blob({v});",
    ),
    is_list=True,
    elem_optional=True,
    tensors=Tensors.LIST,
)
SCALAR = _kind(
    "scalar",
    "Scalar",
    "const Scalar&",
    "Number",
    "{ns}Scalar",
    Sample.SCALAR,
    FloorCode(
        "const at::Scalar {v} = fl::scalar({o});",
        native="const infini::ops::Scalar {c} = fl::core_scalar({o});",
    ),
)
SCALAR_LIST = _kind(
    "scalar_list",
    "Scalar",
    "std::span<const Scalar>",
    "Sequence[Number]",
    "{ns}ScalarList",
    Sample.SCALAR_LIST,
    None,
    is_list=True,
)
INT = _kind(
    "int",
    "int",
    "int64_t",
    "int",
    "{ns}{sym}Int",
    Sample.INT,
    FloorCode(
        "const int64_t {v} = fl::int64({o});",
        native="const int64_t {c} = fl::int64({o});",
    ),
)
INT_LIST = _kind(
    "int_list",
    "int",
    "std::span<const int64_t>",
    "int | Sequence[int]",
    "{ns}{sym}IntList<{size}>",
    Sample.INT_LIST,
    FloorCode("const fl::IntList {v}({o}, {size});", aten="{v}.ref()"),
    is_list=True,
    sized=True,
)
FLOAT = _kind(
    "float",
    "float",
    "double",
    "float",
    "{ns}Float",
    Sample.FLOAT,
    FloorCode(
        "const double {v} = fl::float64({o});",
        native="const double {c} = fl::float64({o});",
    ),
)
FLOAT_LIST = _kind(
    "float_list",
    "float",
    "std::span<const double>",
    "Sequence[float]",
    "{ns}FloatList",
    Sample.NONE,
    None,  # only its optional form exists
    is_list=True,
)
BOOL = _kind(
    "bool",
    "bool",
    "bool",
    "bool",
    "{ns}Bool",
    Sample.FALSE,
    FloorCode(
        "const bool {v} = fl::boolean({o});",
        native="const bool {c} = fl::boolean({o});",
    ),
)
BOOL_ARRAY = _kind(
    "bool_array",
    "bool",
    "std::array<bool, {size}>",
    "Sequence[bool]",
    "{ns}BoolArray<{size}>",
    Sample.TRUE_ARRAY,
    FloorCode("const auto {v} = fl::bool_array<{size}>({o});"),
    is_list=True,
    sized=True,
)
STR = _kind(
    "str",
    "str",
    "std::string_view",
    "str",
    "{ns}Str",
    Sample.REDUCTION,
    FloorCode("const c10::string_view {v} = fl::str({o});"),
)
DTYPE = _kind(
    "dtype",
    "ScalarType",
    "DataType",
    "torch.dtype",
    "{ns}Dtype",
    Sample.CASE_DTYPE,
    FloorCode("const at::ScalarType {v} = fl::dtype({o});"),
)

KINDS: tuple[ArgKind, ...] = (
    TENSOR,
    _optional(
        TENSOR,
        "tensor_opt",
        "const std::optional<Tensor>&",
        "Tensor | None",
        FloorCode(
            "const std::optional<at::Tensor> {v} = fl::tensor_opt({o});",
            from_blob="const std::optional<at::Tensor> {b} = fl::rebound({v}, [] {{}});",
        ),
        Sample.TENSOR_OR_NONE,
    ),
    TENSOR_LIST,
    TENSOR_OPT_LIST,
    SCALAR,
    _optional(
        SCALAR,
        "scalar_opt",
        "const std::optional<Scalar>&",
        "Number | None",
        FloorCode("const auto {v} = fl::scalar_opt({o});"),
    ),
    SCALAR_LIST,
    INT,
    _optional(
        INT,
        "int_opt",
        "std::optional<int64_t>",
        "int | None",
        FloorCode("const auto {v} = fl::int64_opt({o});"),
    ),
    INT_LIST,
    _optional(
        INT_LIST,
        "int_list_opt",
        "std::optional<std::span<const int64_t>>",
        "int | Sequence[int] | None",
        FloorCode("const fl::IntList {v}({o}, {size});", aten="{v}.opt_ref()"),
    ),
    FLOAT,
    _optional(
        FLOAT,
        "float_opt",
        "std::optional<double>",
        "float | None",
        FloorCode("const auto {v} = fl::float64_opt({o});"),
    ),
    _optional(
        FLOAT_LIST,
        "float_list_opt",
        "std::optional<std::span<const double>>",
        "Sequence[float] | None",
        None,
    ),
    BOOL,
    _optional(
        BOOL,
        "bool_opt",
        "std::optional<bool>",
        "bool | None",
        None,
    ),
    BOOL_ARRAY,
    STR,
    _optional(
        STR,
        "str_opt",
        "std::optional<std::string_view>",
        "str | None",
        FloorCode("const auto {v} = fl::str_opt({o});"),
        Sample.NONE,
    ),
    DTYPE,
    _optional(
        DTYPE,
        "dtype_opt",
        "std::optional<DataType>",
        "torch.dtype | None",
        FloorCode("const auto {v} = fl::dtype_opt({o});"),
        Sample.NONE,
    ),
)
BY_NAME = {k.name: k for k in KINDS}
# Schema types the kinds take: `float[]` exists only as `float[]?` in ATen.
_BY_TYPE = {
    (k.family, k.optional, k.is_list, k.elem_optional): k
    for k in KINDS
    if k is not FLOAT_LIST
}


def is_hidden(t: TypeInfo) -> bool:
    return t.base in HIDDEN_BASES and t.optional and not t.is_list


def classify(t: TypeInfo, is_out: bool) -> ArgKind:
    """The kind of a visible argument; UnsupportedType otherwise."""
    family = "int" if t.base in _INT else t.base
    if t.base in HIDDEN_BASES and not t.optional:
        raise UnsupportedType(
            f"type '{t.text}' is not optional, so it cannot be hidden and passed "
            "as an empty optional"
        )
    kind = _BY_TYPE.get((family, t.optional, t.is_list, t.elem_optional))
    if kind is None:
        raise UnsupportedType(f"type '{t.text}' has no converter")
    if kind is BOOL_ARRAY and t.size is None:
        raise UnsupportedType(f"type '{t.text}' needs a fixed size")
    if is_out and kind.out_core_type is None:
        raise UnsupportedType(f"type '{t.text}' cannot be an output")
    return kind


def _literal(text: str, t: TypeInfo):
    if t.base in _INT and text in _NAMED_INT_DEFAULTS:
        return _NAMED_INT_DEFAULTS[text]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise UnsupportedType(f"default '{text}' of type '{t.text}' is not a literal")


def default_value(text: str, t: TypeInfo):
    """The schema default as a JSON value (None, bool, int, float, str, list)."""
    value = _literal(text, t)
    if value is None:
        return None
    if t.is_list:
        if not isinstance(value, list):  # int[2] x=1 means [1, 1]
            value = [value] * (t.size or 1)
        if t.base == "float":
            return [float(v) for v in value]
        return list(value)
    if t.base == "float":
        return float(value)
    return value


def _cpp_scalar(value, base: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if base == "float":
        return repr(float(value))
    if isinstance(value, int):
        return f"int64_t{{{value}}}"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    raise UnsupportedType(f"default {value!r} has no C++ spelling")


def core_default_expr(value, t: TypeInfo) -> str:
    """C++ expression of the default in the library's core types."""
    if value is None:
        return "std::nullopt"
    if t.is_list:
        return "{" + ", ".join(_cpp_scalar(v, t.base) for v in value) + "}"
    if t.base == "Scalar":
        return f"Scalar({_cpp_scalar(value, 'Scalar')})"
    if t.base == "ScalarType":
        raise UnsupportedType(f"non-None dtype default '{value}'")
    return _cpp_scalar(value, t.base)


def py_default(value) -> str:
    """The default as written in a .pyi stub."""
    return repr(value)
