"""The library's ops as PyTorch operators (docs/compile.md): the model of
what the generated torch_library.cpp registers with c10::Dispatcher.

Each op becomes a pair under the library's namespace, `torch.ops.<name>`:
its out= overload and its functional overload, with ATen's schemas and tags
(the twin's own names: `add.out` and `add.Tensor`; a composite's `<op>.out`
and `<op>`). Their kernels read the boxed stack into the library's core
values and call its dispatch, so the native kernel runs where it accepts;
the functional overload allocates its outputs as the library's own call
without out= does, or is ATen's twin where that call is ATen's anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema.arg_kinds import Tensors
from ..model.ops import Argument, Op

# Argument kind -> the accessor of dispatcher/registration.h's Args that reads it.
_ACCESSORS = {
    "tensor": "tensor",
    "tensor_opt": "tensor_opt",
    "tensor_list": "tensor_list",
    "tensor_opt_list": "tensor_opt_list",
    "scalar": "scalar",
    "scalar_opt": "scalar_opt",
    "scalar_list": "scalar_list",
    "int": "integer",
    "int_opt": "integer_opt",
    "int_list": "int_list",
    "int_list_opt": "int_list_opt",
    "float": "real",
    "float_opt": "real_opt",
    "float_list_opt": "real_list_opt",
    "bool": "boolean",
    "bool_opt": "boolean_opt",
    "bool_array": "bool_array<{size}>",
    "str": "str",
    "str_opt": "str_opt",
    "dtype": "dtype",
    "dtype_opt": "dtype_opt",
}
# Kinds the API takes as a view of what the accessor returns.
_VIEWED = frozenset({"int_list_opt", "float_list_opt"})


@dataclass(frozen=True)
class DispatcherOp:
    op: Op
    namespace: str  # the dispatcher's: the library's name

    @property
    def out_name(self) -> str:
        return f"{self.op.name}.out" if self.op.composite else self.op.aten

    @property
    def out_schema(self) -> str:
        if not self.op.composite:
            return self.op.schema
        base, rest = self.op.schema.split("(", 1)
        return f"{base}.out({rest}"

    @property
    def functional_schema(self) -> str | None:
        return self.op.functional_schema

    @property
    def functional_name(self) -> str | None:
        if self.functional_schema is None:
            return None
        name = self.functional_schema.split("(", 1)[0]
        return name if "." in name else f"{name}.default"

    @property
    def registered_functional_name(self) -> str | None:
        """The name as a registration spells it (the default overload has
        none)."""
        if self.functional_schema is None:
            return None
        return self.functional_schema.split("(", 1)[0]

    @property
    def out_tags(self) -> tuple[str, ...]:
        """ATen's, but `out`: with it, Inductor (torch 2.13) lowers the
        functional overload to this one and passes every argument the graph
        holds by keyword twice, positionally too ("expected at most 4
        argument(s) but received 5"); without it Inductor calls the
        functional overload, whose kernel allocates as the library does."""
        return tuple(t for t in self.op.tags if t != "out")

    @property
    def functional_tags(self) -> tuple[str, ...]:
        return self.op.functional_tags

    @property
    def kernel_id(self) -> str:
        return self.op.name

    @property
    def num_args(self) -> int:
        return len(self.op.arguments)

    @property
    def num_functional_args(self) -> int:
        return sum(1 for a in self.op.arguments if not a.is_output)

    def index(self, arg: Argument) -> int:
        return self.op.arguments.index(arg)

    @property
    def hidden(self) -> tuple[int, ...]:
        return tuple(self.index(a) for a in self.op.arguments if a.hidden)

    def read(self, arg: Argument) -> str:
        """The declaration of `v_<name>` from the stack."""
        accessor = _ACCESSORS[arg.kind.name].format(size=arg.size or 0)
        const = "" if arg.is_output else "const "
        return f"{const}auto v_{arg.name} = a.{accessor}({self.index(arg)});"

    @staticmethod
    def _passed(arg: Argument) -> str:
        if arg.kind.name in _VIEWED:
            return f"dk::opt_span(v_{arg.name})"
        return f"v_{arg.name}"

    @property
    def api_call(self) -> str:
        """The library's call of the op on the `v_` values."""
        return ", ".join(self._passed(a) for a in self.op.visible)

    @property
    def outputs(self) -> tuple[int, ...]:
        """Stack indices of the outputs the out= overload returns (none for
        a schema returning `()`)."""
        if self.op.returns_nothing:
            return ()
        return tuple(self.index(a) for a in self.op.outputs)

    @property
    def typed_functional(self) -> bool:
        """The functional overload allocates its outputs as the library's
        call without out= does and takes the out= way (a native kernel may
        serve it); otherwise ATen's twin computes it, as that call would."""
        op = self.op
        if self.functional_schema is None or not op.allocates:
            return False
        return all(
            a.tensors is Tensors.NONE
            or a.lane_ref in ("TensorRef", "OptionalTensorRef")
            for a in op.call_params
        )

    @property
    def no_out_args(self) -> str:
        """The no-out fallback's arguments (lane references, values)."""

        def arg(a: Argument) -> str:
            if a.lane_ref == "TensorRef":
                return f"a.ref({self.index(a)})"
            if a.lane_ref == "OptionalTensorRef":
                return f"a.opt_ref({self.index(a)})"
            return f"v_{a.name}"

        return ", ".join(arg(a) for a in self.op.call_params)

    @property
    def aten_functional(self) -> str | None:
        """ATen's functional twin ("add.Tensor"); None for composites."""
        if self.op.composite or self.functional_schema is None:
            return None
        return self.functional_schema.split("(", 1)[0]

    @property
    def differentiable(self) -> bool:
        """A composite's functional overload differentiates through its body
        on ATen values."""
        return self.op.composite and self.functional_schema is not None

    @property
    def body_params(self) -> str:
        return ", ".join(f"{a.aten_cpp_type} {a.name}" for a in self.op.aten_arguments)

    @property
    def body_call(self) -> str:
        return ", ".join(
            f"o_{a.name}" if a.is_output else f"v_{a.name}"
            for a in self.op.aten_arguments
        )

    @property
    def like_input(self) -> str:
        """The composite's outputs start empty, of this input's dtype and
        device (the body resizes them)."""
        return self.op.first_input.name

    def aten_read(self, arg: Argument) -> str:
        """The declaration of `v_<name>` as the ATen value the body takes."""
        return (
            f"c10::IValue i_{arg.name} = a[{self.index(arg)}];\n"
            f"  auto v_{arg.name} = c10::impl::ivalue_to_arg<std::decay_t<"
            f"{arg.aten_cpp_type}>, false>::call(i_{arg.name});"
        )


def dispatcher_ops(ops, namespace: str) -> tuple[DispatcherOp, ...]:
    """One registration per op; a functional overload two ops share (ATen
    twins of two out= overloads) is registered once."""
    result = []
    seen: set[str] = set()
    for op in ops:
        d = DispatcherOp(op, namespace)
        if d.functional_schema is not None and d.registered_functional_name in seen:
            d = DispatcherOp(_without_functional(op), namespace)
        if d.functional_schema is not None:
            seen.add(d.registered_functional_name)
        result.append(d)
    return tuple(result)


def _without_functional(op: Op) -> Op:
    from dataclasses import replace

    return replace(op, functional_schema=None, functional_tags=())
