"""How each ATen argument type crosses the library: its converter kind, the
core C++ type it takes in the library's API, its Python annotation, and how a
schema default becomes a C++ expression and a JSON value.

Every kind has one Python→core converter and one core→ATen overload in the
hand-written torch bridge (cpp/torch/); the names here must match those.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .schema_types import TypeInfo

# Arguments of these types are hidden from callers and passed as empty
# optionals (or torchgen's C++ default when the schema has one).
HIDDEN_BASES = frozenset({"Layout", "Device", "MemoryFormat", "Generator"})

# Named constants that appear as schema defaults (at::Reduction).
_NAMED_INT_DEFAULTS = {"Mean": 1, "Sum": 2}


class UnsupportedType(ValueError):
    """The argument's type cannot be expressed; the message says why."""


@dataclass(frozen=True)
class Kind:
    name: str  # converter family, e.g. "int_list"
    core_type: str  # C++ type in the library's API for an input
    out_core_type: str | None  # C++ type when the argument is an output
    py_type: str  # annotation in the .pyi stub


_INT = frozenset({"int", "SymInt"})


def _kind_table() -> dict[tuple[str, bool, bool, bool], Kind]:
    """(family, optional, is_list, elem_optional) -> Kind."""
    k = {}

    def add(family, optional, is_list, elem_opt, name, core, out, py):
        k[(family, optional, is_list, elem_opt)] = Kind(name, core, out, py)

    add("Tensor", False, False, False, "tensor", "const Tensor&", "Tensor&", "Tensor")
    add(
        "Tensor",
        True,
        False,
        False,
        "tensor_opt",
        "const std::optional<Tensor>&",
        None,
        "Tensor | None",
    )
    add(
        "Tensor",
        False,
        True,
        False,
        "tensor_list",
        "std::span<const Tensor>",
        "std::span<Tensor>",
        "Sequence[Tensor]",
    )
    add(
        "Tensor",
        False,
        True,
        True,
        "tensor_opt_list",
        "std::span<const std::optional<Tensor>>",
        None,
        "Sequence[Tensor | None]",
    )
    add("Scalar", False, False, False, "scalar", "const Scalar&", None, "Number")
    add(
        "Scalar",
        True,
        False,
        False,
        "scalar_opt",
        "const std::optional<Scalar>&",
        None,
        "Number | None",
    )
    add(
        "Scalar",
        False,
        True,
        False,
        "scalar_list",
        "std::span<const Scalar>",
        None,
        "Sequence[Number]",
    )
    add("int", False, False, False, "int", "int64_t", None, "int")
    add(
        "int",
        True,
        False,
        False,
        "int_opt",
        "std::optional<int64_t>",
        None,
        "int | None",
    )
    add(
        "int",
        False,
        True,
        False,
        "int_list",
        "std::span<const int64_t>",
        None,
        "int | Sequence[int]",
    )
    add(
        "int",
        True,
        True,
        False,
        "int_list_opt",
        "std::optional<std::span<const int64_t>>",
        None,
        "int | Sequence[int] | None",
    )
    add("float", False, False, False, "float", "double", None, "float")
    add(
        "float",
        True,
        False,
        False,
        "float_opt",
        "std::optional<double>",
        None,
        "float | None",
    )
    add(
        "float",
        True,
        True,
        False,
        "float_list_opt",
        "std::optional<std::span<const double>>",
        None,
        "Sequence[float] | None",
    )
    add("bool", False, False, False, "bool", "bool", None, "bool")
    add(
        "bool",
        True,
        False,
        False,
        "bool_opt",
        "std::optional<bool>",
        None,
        "bool | None",
    )
    add(
        "bool",
        False,
        True,
        False,
        "bool_array",
        "std::array<bool, {size}>",
        None,
        "Sequence[bool]",
    )
    add("str", False, False, False, "str", "std::string_view", None, "str")
    add(
        "str",
        True,
        False,
        False,
        "str_opt",
        "std::optional<std::string_view>",
        None,
        "str | None",
    )
    add("ScalarType", False, False, False, "dtype", "DataType", None, "torch.dtype")
    add(
        "ScalarType",
        True,
        False,
        False,
        "dtype_opt",
        "std::optional<DataType>",
        None,
        "torch.dtype | None",
    )
    return k


_KINDS = _kind_table()


def is_hidden(t: TypeInfo) -> bool:
    return t.base in HIDDEN_BASES and t.optional and not t.is_list


def classify(t: TypeInfo, is_out: bool) -> Kind:
    """The converter kind of a visible argument; UnsupportedType otherwise."""
    family = "int" if t.base in _INT else t.base
    if t.base in HIDDEN_BASES and not t.optional:
        raise UnsupportedType(
            f"type '{t.text}' is not optional, so it cannot be hidden and passed "
            "as an empty optional"
        )
    kind = _KINDS.get((family, t.optional, t.is_list, t.elem_optional))
    if kind is None:
        raise UnsupportedType(f"type '{t.text}' has no converter")
    if kind.name == "bool_array" and t.size is None:
        raise UnsupportedType(f"type '{t.text}' needs a fixed size")
    if is_out:
        if kind.out_core_type is None:
            raise UnsupportedType(f"type '{t.text}' cannot be an output")
    if kind.name == "bool_array":
        core = kind.core_type.format(size=t.size)
        return Kind(kind.name, core, None, kind.py_type)
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
