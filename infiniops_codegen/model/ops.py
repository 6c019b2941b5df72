"""The typed model between specs and templates. Templates see only this."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..schema.arg_kinds import ArgKind, Tensors
from ..base.dtypes import DType, load_dtypes, spec_dtypes
from ..base.platforms import Platform
from ..base.project import LibraryNames
from ..schema.records import FunctionalCall


class Role(str, Enum):
    INPUT = "input"  # tensor-valued argument read by the op
    OUTPUT = "output"  # an out= tensor (or tensor list) the op writes
    ATTRIBUTE = "attribute"  # a non-tensor value: int, float, Scalar, dims...
    HIDDEN = "hidden"  # Layout?/Device?/MemoryFormat?/Generator?: never exposed


@dataclass(frozen=True)
class TorchDeviceType:
    """A c10::DeviceType and the platforms whose tensors carry it, in table
    order. Its tensors belong to the first of them that a build has; with
    none of them built, to the upstream one (PyTorch's own backend, whose
    tensors the torch fallback runs), if any; else the bridge refuses them."""

    c10_type: str  # "CPU", "CUDA", "PrivateUse1"
    platforms: tuple[Platform, ...]

    @property
    def upstream(self) -> Platform | None:
        return next((p for p in self.platforms if p.upstream), None)

    @property
    def unconditional(self) -> Platform | None:
        """The platform that takes its tensors in every build: the upstream
        one, when no other platform carries the same device type."""
        only = self.platforms[0]
        return only if len(self.platforms) == 1 and only.upstream else None


@dataclass(frozen=True)
class Default:
    value: object  # JSON value: None, bool, int, float, str or list
    core_expr: str  # C++ expression in core types (bindings)
    py_repr: str  # as written in the .pyi stub


@dataclass(frozen=True)
class Argument:
    name: str  # schema name, also the C++ parameter name
    py_name: str  # keyword name in Python (self -> input)
    aten_type: str  # torchgen's spelling, e.g. "int[1]?"
    aten_cpp_type: str  # C++ type of the ATen API parameter
    role: Role
    kind: ArgKind | None  # how it crosses the library; None when hidden
    kwarg_only: bool
    default: Default | None
    hidden_value: str | None  # C++ value passed to ATen for a hidden argument
    size: int | None = None  # N of a fixed-size list (`int[2]`)
    mutable: bool = False  # an input the op writes (`Tensor(a!)`, not out=)
    schema_default: bool = False  # the ATen schema gives a default

    @property
    def hidden(self) -> bool:
        return self.role is Role.HIDDEN

    @property
    def is_output(self) -> bool:
        return self.role is Role.OUTPUT

    @property
    def core_type(self) -> str | None:
        """C++ type in the library's API; None when hidden."""
        return self.kind.core(self.size, self.is_output) if self.kind else None

    @property
    def py_type(self) -> str | None:
        """.pyi annotation; None when hidden."""
        return self.kind.py_type if self.kind else None

    @property
    def converter(self) -> str | None:
        """The bridge's traits type converting it (cpp/torch/arg_kinds.h),
        spelled through the alias `tk` of the generated bindings."""
        if self.kind is None:
            return None
        return self.kind.converter_type(self.size, "tk::", symint=self.symint)

    @property
    def symint(self) -> bool:
        """A `SymInt` or `SymInt[]` schema type: torch's parser takes any
        __index__ object for it, where an `int` takes only ints."""
        return self.aten_type.startswith("SymInt")

    @property
    def checks_index(self) -> bool:
        """torch's parser calls __index__ of its value (a SymInt) or of its
        first element (an int list) while it checks the arguments, before it
        converts any."""
        if self.kind is None or self.kind.family != "int":
            return False
        return self.symint or self.kind.is_list

    @property
    def tensors(self) -> Tensors:
        return self.kind.tensors if self.kind else Tensors.NONE

    @property
    def is_tensor(self) -> bool:
        """One tensor, not optional: an output or the dispatch tensor."""
        return self.tensors is Tensors.ONE and not self.kind.optional

    @property
    def lane_ref(self) -> str | None:
        """The bridge's type of this tensor on the lane (cpp/torch/lane.h);
        None for anything but one (possibly optional) tensor."""
        if self.tensors is Tensors.LIST:
            lane_list = not (self.kind.elem_optional or self.is_output or self.mutable)
            return "TensorListRef" if lane_list else None
        if self.tensors is not Tensors.ONE:
            return None
        return "OptionalTensorRef" if self.kind.optional else "TensorRef"


@dataclass(frozen=True)
class CoreSignature:
    """Parameters in the library's C++ API (core types): one rendering for
    every declaration and every call of an op's functions."""

    arguments: tuple[Argument, ...]

    def decl(self, *extra: str) -> str:
        """`const Tensor& self, Tensor& out` (+ extra parameters)."""
        return ", ".join(
            [f"{a.core_type} {a.name}" for a in self.arguments] + list(extra)
        )

    def call(self, *extra: str, prefix: str = "") -> str:
        """`self, out` (+ extra arguments); prefix: `v_self, v_out`."""
        return ", ".join([prefix + a.name for a in self.arguments] + list(extra))

    def lane_decl(self) -> str:
        """The lane's overload: tensors as the bridge's references."""
        return ", ".join(
            (
                f"::infini::ops::torch_bridge::{a.lane_ref} {a.name}"
                if a.lane_ref
                else f"{a.core_type} {a.name}"
            )
            for a in self.arguments
        )


@dataclass(frozen=True)
class NativeImpl:
    platform: str
    dtypes: tuple[str, ...]  # empty: the kernel decides for every dtype
    up_to: tuple[int | None, ...] = ()  # per dtype; empty or None: any size

    @property
    def dtype_limits(self) -> tuple[tuple[str, int], ...]:
        """(core dtype enumerator, max elements or -1 for any size)."""
        limits = self.up_to or (None,) * len(self.dtypes)
        return tuple(
            (spec_dtypes()[d].enumerator, -1 if n is None else n)
            for d, n in zip(self.dtypes, limits)
        )


@dataclass(frozen=True)
class Op:
    name: str  # public name in C++ and Python
    aten: str | None  # ATen overload ("add.out"); None for composites
    source: str  # spec file, as recorded in generated headers
    schema: str  # readable schema
    arguments: tuple[Argument, ...]  # schema order
    headers: tuple[str, ...]  # ATen per-operator headers the wrapper needs
    aten_function: str | None  # "at::add_out"; None for composites
    cpp_order: tuple[str, ...]  # argument names in the ATen C++ API's order
    fallback_body: str | None  # composite ops: C++ statements
    native: tuple[NativeImpl, ...]
    hints: tuple[tuple[str, object], ...]  # harness hints, sorted by key
    shard: int
    cpu_kernel: bool  # ATen has a CPU kernel entry (at::cpu::...)
    functional: str | None = None  # ATen functional overload, e.g. "add.Tensor"
    # torch.return_types.<name> torch's out= call returns (several named
    # outputs); None: a plain tuple (or the one output itself)
    return_type: str | None = None
    tags: tuple[str, ...] = ()  # ATen tags, e.g. nondeterministic_seeded
    reference: str | None = None  # composites: Python reference expression
    reference_line: int = 0  # its line in the spec file (source), for errors
    direct_cpu: bool = False  # may call at::cpu::<fn> directly, skipping the dispatcher
    tensor_iterator: bool = False  # ATen kernel structured on TensorIteratorBase
    fallback_line: int = 0  # composites: the line of the body's first line in source
    extension: str = ""  # the extension that defines the op ("": the project)
    # Where its spec's `native:` value is (line, col in source), for errors
    # about the kernels it names (kernel_sources.unbuildable).
    native_line: int = field(default=0, compare=False)
    native_col: int = field(default=0, compare=False)
    # How a call without out= runs ATen's functional overload (None: it
    # has none that takes this op's arguments and returns its outputs).
    functional_call: FunctionalCall | None = None
    # A Tensor parameter takes a Python number (torch's add, sub, mul, ...).
    numbers_as_tensors: bool = False
    # Composites: output -> the input it is allocated like without out=.
    output_like: tuple[tuple[str, str], ...] = ()
    # The functional overload's schema and tags as torchgen prints them (a
    # composite's: its signature without outputs); None: none.
    functional_schema: str | None = None
    functional_tags: tuple[str, ...] = ()

    @property
    def no_out(self) -> bool:
        """A call may leave the outputs out: they are allocated as torch's
        call without out= allocates them. ATen ops with a functional twin
        (its outputs and shapes are torch's) and composites (outputs of the
        first input's dtype and device, shaped by the body); in both, every
        output one tensor and every other tensor argument one the binding
        can hand over as it arrived (lane.h's references)."""
        if not (self.functional_call or self.composite):
            return False
        if self.composite and self.first_input is None:
            return False
        if not all(a.is_tensor for a in self.outputs):
            return False
        return all(a.lane_ref for a in self.visible if a.tensors is not Tensors.NONE)

    @property
    def meta_allocate(self) -> bool:
        """A call without out= may allocate its outputs with the structured
        kernel's C++ meta function (at::meta::) and take the out= way, where
        a native kernel may serve it; otherwise ATen's functional overload
        computes it (and a composite's outputs start empty)."""
        fc = self.functional_call
        return bool(self.no_out and fc and fc.meta_kernel and self.native)

    @property
    def allocates(self) -> bool:
        """A call without out= may allocate its outputs (no_out::<op>_allocate)
        and take the out= way: composites, and ops whose native kernels may
        take it (meta_allocate)."""
        return self.no_out and (self.composite or self.meta_allocate)

    @property
    def returns_nothing(self) -> bool:
        """The schema returns nothing (`-> ()`: outputs in a Tensor[] out=,
        split_with_sizes_copy.out): torch's out= call returns None."""
        return self.schema.replace(" ", "").endswith("->()")

    @property
    def first_input(self) -> Argument | None:
        """The first input that is one tensor: a composite's outputs take
        its dtype and device when its body cannot run on meta tensors."""
        return next((a for a in self.inputs if a.is_tensor and not a.hidden), None)

    @property
    def call_params(self) -> tuple[Argument, ...]:
        """The arguments of a call without out=: the visible ones but the
        outputs."""
        return tuple(a for a in self.visible if not a.is_output)

    @property
    def call_decl(self) -> str:
        """Parameters of the no-out fallbacks (tensors as lane references),
        then the Results they fill."""
        params = CoreSignature(self.call_params).lane_decl()
        results = "::infini::ops::torch_bridge::Results& results"
        return f"{params}, {results}" if params else results

    @property
    def call_args(self) -> str:
        """The binding's call of a no-out fallback: tensor k is `c_[k]`
        (the lane's numbering), tensor list k `cl_[k]`, then `r_`."""
        return ", ".join(self._call_args())

    def _tensor_index(self) -> dict[str, int]:
        """Name -> k: the k-th Python parameter of one tensor (the bridge's
        refs, outputs included), or the k-th of a tensor list."""
        index = {}
        for kind in (Tensors.ONE, Tensors.LIST):
            params = (a for a in self.python_params if a.tensors is kind)
            index.update({a.name: k for k, a in enumerate(params)})
        return index

    def _call_args(self):
        index = self._tensor_index()
        for a in self.call_params:
            if a.tensors is Tensors.LIST:
                yield f"cl_[{index[a.name]}]"
            elif a.lane_ref:
                yield f"tb::{a.lane_ref}{{c_[{index[a.name]}]}}"
            else:
                yield f"v_{a.name}"
        yield "r_"

    @property
    def functional_aten_call(self) -> str:
        """The arguments of the functional overload's C++ call: the out=
        call's without the outputs (same order: outputs lead an _out call)."""
        return self._aten_args(outputs=False)

    @property
    def meta_aten_call(self) -> str:
        """The same on meta stand-ins of the tensors (`m_<name>`)."""
        return self._aten_args(outputs=False, meta=True)

    @property
    def meta_body_call(self) -> str:
        """A composite's body call on meta stand-ins, outputs included."""
        return self._aten_args(outputs=True, meta=True)

    def _aten_args(self, outputs: bool = True, meta: bool = False) -> str:
        """The ATen C++ call's arguments: each visible one converted
        (`a_<name>`, or its meta stand-in `m_<name>` for tensors when meta),
        each hidden one its value; the outputs left out unless outputs."""

        def arg(a: Argument) -> str:
            if a.hidden:
                return a.hidden_value
            if meta and a.tensors is not Tensors.NONE:
                return f"m_{a.name}"
            return f"a_{a.name}"

        return ", ".join(
            arg(a) for a in self.aten_arguments if outputs or not a.is_output
        )

    @property
    def fallback_line_directive(self) -> str:
        """`#line` naming the body's place in its spec file, so the compiler
        reports errors in the body there (relative, as in generated headers)."""
        escaped = self.source.replace("\\", "\\\\").replace('"', '\\"')
        return f'#line {self.fallback_line} "{escaped}"'

    @property
    def aten_autograd(self) -> bool:
        """Tensors that require grad (or carry a forward-AD tangent) go to
        ATen's dispatcher, whose autograd kernel raises where PyTorch does
        (native kernels never see them); composites have no autograd kernel
        and refuse them instead."""
        return not self.composite

    @property
    def borrows_tensors(self) -> bool:
        """Tensor arguments get borrowed handles and small calls keep the GIL.

        Only for direct TensorIterator kernels: their parallel loops see raw
        pointers, never an at::Tensor, so no ATen worker thread can need the
        GIL to copy a borrowed tensor while the caller holds it."""
        return self.direct_cpu and self.tensor_iterator

    @property
    def lane(self) -> bool:
        """Python calls may take the lane (cpp/torch/lane.h): an ATen op
        whose tensors are single tensors or input lists of tensors."""
        return not self.composite and all(
            a.lane_ref for a in self.visible if a.tensors is not Tensors.NONE
        )

    @property
    def lane_default(self) -> bool:
        """A CPU call's default implementation is ATen's: no native CPU kernel."""
        return "cpu" not in self.native_platforms

    @property
    def lane_lists(self) -> int:
        """Tensor-list parameters (each a `l_[k]` of the lane's call)."""
        return self.tensor_list_param_mask.bit_count()

    @property
    def lane_call(self) -> str:
        """The binding's call of the lane overload: tensor k of the Python
        parameters is `t_[k]`, tensor list k `l_[k]`, the rest their
        converted values."""
        index = self._tensor_index()

        def arg(a: Argument) -> str:
            if a.tensors is Tensors.LIST:
                return f"l_[{index[a.name]}]"
            if a.lane_ref:
                return f"tb::{a.lane_ref}{{t_[{index[a.name]}]}}"
            return f"v_{a.name}"

        return ", ".join(arg(a) for a in self.visible)

    @property
    def optional_tensor_param_mask(self) -> int:
        """Bit i: Python parameter i takes one tensor or None."""
        return self._param_mask(Tensors.ONE, optional=True)

    @property
    def direct_function(self) -> str:
        """The CPU kernel entry point, e.g. "at::cpu::add_out"."""
        return "at::cpu::" + (self.aten_function or "").removeprefix("at::")

    @property
    def tensor_carrying(self) -> tuple[Argument, ...]:
        """Visible arguments holding tensors: single ones and lists."""
        return tuple(a for a in self.visible if a.tensors is not Tensors.NONE)

    @property
    def tensor_arguments(self) -> tuple[Argument, ...]:
        """Visible arguments of one (possibly optional) tensor."""
        return tuple(a for a in self.visible if a.tensors is Tensors.ONE)

    @property
    def composite(self) -> bool:
        return self.aten is None

    @property
    def visible(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if not a.hidden)

    @property
    def outputs(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.is_output)

    @property
    def inputs(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.role is Role.INPUT)

    @property
    def overlap_check(self) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(output names, input names) of single tensors whose memory the
        from_blob path must check for overlap; None when the op has no
        single tensor output."""
        outs = tuple(a.name for a in self.outputs if a.is_tensor)
        ins = tuple(a.name for a in self.tensor_arguments if not a.is_output)
        return (outs, ins) if outs else None

    @property
    def positional(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.visible if not a.kwarg_only)

    @property
    def keyword_only(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.visible if a.kwarg_only)

    @property
    def python_params(self) -> tuple[Argument, ...]:
        """Parser order: positional parameters, then keyword-only ones."""
        return self.positional + self.keyword_only

    @property
    def dispatch_tensor(self) -> Argument | None:
        """The tensor whose device and dtype choose the implementation."""
        for a in self.inputs + self.outputs:
            if a.is_tensor:
                return a
        return None

    @property
    def device_expr(self) -> str:
        """C++ expression (in dispatch) of the device the op runs on: the
        dispatch tensor's, else the first tensor of the first tensor list."""
        key = self.dispatch_tensor
        if key is not None:
            return f"{key.name}.device()"
        for a in self.inputs + self.outputs:
            if a.tensors is Tensors.LIST and not a.kind.elem_optional:
                return f"list_device({a.name})"
        return "Device{}"

    @property
    def aten_arguments(self) -> tuple[Argument, ...]:
        """Arguments in the order the ATen C++ function takes them."""
        by_name = {a.name: a for a in self.arguments}
        return tuple(by_name[n] for n in self.cpp_order)

    @property
    def api(self) -> CoreSignature:
        """The op's parameters in the library's C++ API."""
        return CoreSignature(self.visible)

    @property
    def aten_call(self) -> str:
        """The arguments of the ATen C++ call in the fallback wrapper: each
        visible one converted (`a_<name>`), each hidden one its value."""
        return self._aten_args()

    @property
    def aten_params(self) -> str:
        """The ATen C++ API's parameters (a composite's body sees these)."""
        return ", ".join(f"{a.aten_cpp_type} {a.name}" for a in self.aten_arguments)

    @property
    def native_platforms(self) -> tuple[str, ...]:
        return tuple(n.platform for n in self.native)

    @property
    def py_return(self) -> str:
        """Return annotation: the out argument(s), returned as passed (several
        in torch's structseq where torch returns one)."""
        outs = self.outputs
        if len(outs) == 1:
            return outs[0].py_type
        fc = self.functional_call
        if self.return_type and fc and fc.return_type:
            # torch.return_types.max: what torch.max(x, 1) returns, and the
            # type torch's stubs declare (with out= it is a max_out, which
            # they do not declare: the same fields)
            return f"torch.return_types.{fc.return_type}"
        return "tuple[" + ", ".join(a.py_type for a in outs) + "]"

    @property
    def hints_dict(self) -> dict:
        return dict(self.hints)

    @property
    def tensor_like_arguments(self) -> tuple[Argument, ...]:
        """Visible arguments holding tensors: single, optional or lists."""
        return tuple(a for a in self.visible if a.tensors is not Tensors.NONE)

    @property
    def aten_profile_name(self) -> str | None:
        """The ATen operator's name a profiler shows ("aten::add"); None for
        a composite (OpSet.profile_name gives it the library's)."""
        if self.aten is None:
            return None
        return "aten::" + self.aten.split(".", 1)[0]

    @property
    def native_summary(self) -> str:
        """Platforms and dtypes of the native kernels, for error messages."""
        return "; ".join(
            n.platform + (": " + ", ".join(n.dtypes) if n.dtypes else "")
            for n in self.native
        )

    @property
    def mutated_inputs(self) -> tuple[Argument, ...]:
        """Inputs the op writes besides its outputs (`Tensor(a!)` arguments
        that are not out=): their writes count like an output's."""
        return tuple(a for a in self.inputs if a.mutable and not a.hidden)

    def _param_mask(self, tensors: Tensors, optional: bool | None = None) -> int:
        """Bit i: Python parameter i holds these tensors (and, when
        optional is given, is an optional kind or not)."""
        if len(self.python_params) > 62:  # a uint64_t with implementation, stream
            raise ValueError(f"{self.name}: more than 62 parameters")
        return sum(
            1 << i
            for i, a in enumerate(self.python_params)
            if a.tensors is tensors and optional in (None, a.kind.optional)
        )

    @property
    def number_tensor_param_mask(self) -> int:
        """Bit i: Python parameter i takes a Python number for its tensor
        (numbers_as_tensors; inputs only)."""
        outs = {a.name for a in self.outputs}
        return sum(
            1 << i
            for i, a in enumerate(self.python_params)
            if a.tensors is Tensors.ONE and a.name not in outs
        )

    @property
    def tensor_param_mask(self) -> int:
        """Bit i: Python parameter i takes one tensor (__torch_function__)."""
        return self._param_mask(Tensors.ONE)

    @property
    def tensor_list_param_mask(self) -> int:
        """Bit i: Python parameter i takes a list of tensors."""
        return self._param_mask(Tensors.LIST)

    @property
    def schema_names_differ(self) -> bool:
        return any(a.name != a.py_name for a in self.python_params)

    @property
    def hidden_without_default(self) -> tuple[Argument, ...]:
        """Hidden arguments the ATen schema gives no default (`Generator?
        generator` of rand.generator_out): calling the overload from Python
        needs them spelled out, as None."""
        return tuple(a for a in self.arguments if a.hidden and not a.schema_default)

    @property
    def aten_positional(self) -> int:
        """How many leading Python parameters the ATen overload also takes
        positionally: the schema's positional arguments up to the first one
        the binding hides (the rest are passed by schema name)."""
        count = 0
        for a in self.arguments:
            if a.kwarg_only or a.hidden:
                break
            count += 1
        return count


@dataclass(frozen=True)
class Exclusion:
    aten: str
    reason: str


@dataclass(frozen=True)
class Shard:
    index: int
    ops: tuple[Op, ...]

    @property
    def headers(self) -> tuple[str, ...]:
        names = {h for op in self.ops for h in op.headers}
        names |= {f"{op.headers[0]}_cpu_dispatch" for op in self.ops if op.direct_cpu}
        names |= {
            f"{op.headers[0]}_meta_dispatch" for op in self.ops if op.meta_allocate
        }
        return tuple(sorted(names))

    @property
    def file(self) -> str:
        return f"torch_fallback/shard_{self.index:03d}.cpp"


@dataclass(frozen=True)
class OpSet:
    ops: tuple[Op, ...]  # sorted by name
    platforms: tuple[Platform, ...]
    torch_version: str
    shard_count: int
    shard_size: int
    selection: str  # "default", "all" or the selected names
    sources: tuple[str, ...]  # spec files read
    exclusions: tuple[Exclusion, ...]  # out= overloads not expressible
    dtypes: tuple[DType, ...] = field(default_factory=load_dtypes)  # enum order
    # The module's torch-like functions (overloads.PyFunction), by name.
    functions: tuple = ()
    # What the build is called: module, library, C++ namespace, CMake package.
    names: LibraryNames = LibraryNames()

    def profile_name(self, op: "Op") -> str:
        """The name a profiler shows for op: the ATen operator's, as for
        torch's own call ("aten::add"); a composite's is the library's own
        ("<name>::<op>")."""
        return op.aten_profile_name or f"{self.names.name}::{op.name}"

    @property
    def overloaded_functions(self) -> tuple:
        """Functions that choose among signatures (the rest are one op's
        binding under the function's name)."""
        return tuple(f for f in self.functions if f.direct is None)

    def dtypes_of(self, kind: str) -> tuple[DType, ...]:
        """The dtypes of one kind ("bool", "integral", ...), in enum order."""
        return tuple(d for d in self.dtypes if d.kind == kind)

    @property
    def torch_device_types(self) -> tuple[TorchDeviceType, ...]:
        """The c10 device types of the platforms, in table order, each with
        the platforms whose tensors carry it."""
        groups: dict[str, list[Platform]] = {}
        for p in self.platforms:
            groups.setdefault(p.c10_type, []).append(p)
        return tuple(TorchDeviceType(t, tuple(ps)) for t, ps in groups.items())

    @property
    def native_kernel_ops(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(platform, names of the ops with a native kernel on it), in table
        order, platforms without one left out: a build compiles the kernel
        sources of these ops only (<kernels>/<platform>/<op>.<ext>)."""
        result = []
        for p in self.platforms:
            # op@extension: the kernel is in that extension's kernels directory
            names = tuple(
                f"{op.name}@{op.extension}" if op.extension else op.name
                for op in self.ops
                if p.name in op.native_platforms
            )
            if names:
                result.append((p.name, names))
        return tuple(result)

    @property
    def stream_platforms(self) -> tuple[Platform, ...]:
        """Platforms with streams: each gets a guard in the generated code."""
        return tuple(p for p in self.platforms if p.stream is not None)

    @property
    def stream_attributes(self) -> tuple[str, ...]:
        """Python stream attributes holding the raw handle, each once."""
        return tuple(dict.fromkeys(p.stream.py_attr for p in self.stream_platforms))

    @property
    def shards(self) -> tuple[Shard, ...]:
        shards = (
            Shard(i, tuple(op for op in self.ops if op.shard == i))
            for i in range(self.shard_count)
        )
        return tuple(s for s in shards if s.ops)  # an empty TU only costs time

    @property
    def source_label(self) -> str:
        """What aggregate files say they were generated from."""
        dirs = sorted({s.rsplit("/", 1)[0] for s in self.sources})
        return ", ".join(d + "/" for d in dirs) if dirs else "no specs"
