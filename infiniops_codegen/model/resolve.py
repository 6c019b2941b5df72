"""Specs + the schema oracle -> the typed model (OpSet).

All naming, argument roles, defaults and shard assignment are decided here,
so templates only lay out text.
"""

from __future__ import annotations

import difflib
import keyword
import zlib
from dataclasses import replace

from ..schema import arg_kinds
from ..opspec import composite_calls, references
from . import module_api
from ..schema.arg_kinds import Tensors
from ..base.errors import SpecError, SpecErrors
from .ops import Argument, Default, Exclusion, NativeImpl, Op, OpSet, Role
from .overloads import python_functions
from ..base.platforms import load_platforms
from ..schema.db import SchemaDB, schema_from_signature
from ..schema.records import AtenSchema, SchemaArg
from ..opspec.entries import OpSpec, SpecSet, Where

# Keyword parameters every op takes besides its schema arguments.
RESERVED_PARAMS = frozenset({"implementation", "stream"})
CPP_KEYWORDS = frozenset(
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char "
    "char8_t char16_t char32_t class compl concept const consteval constexpr "
    "constinit const_cast continue co_await co_return co_yield decltype default "
    "delete do double dynamic_cast else enum explicit export extern false float "
    "for friend goto if inline int long mutable namespace new noexcept not not_eq "
    "nullptr operator or or_eq private protected public register reinterpret_cast "
    "requires return short signed sizeof static static_assert static_cast struct "
    "switch template this thread_local throw true try typedef typeid typename "
    "union unsigned using virtual void volatile wchar_t while xor xor_eq".split()
)
DEFAULT_RENAMES = {"self": "input"}


class _OpError(Exception):
    def __init__(self, where: Where, message: str):
        self.error = where.error(message)


def default_name(schema: AtenSchema, siblings: dict[str, int]) -> str:
    """`abs.out` -> `abs`; overloads that share a base keep a suffix:
    `clamp.Tensor_out` -> `clamp_Tensor`, `pow.Tensor_Scalar_out` ->
    `pow_Tensor_Scalar`, while the plain `.out` overload keeps the base name.
    siblings: sibling_counts()."""
    if siblings.get(schema.base, 0) <= 1 or schema.overload == "out":
        return schema.base
    suffix = schema.overload.removesuffix("_out")
    return f"{schema.base}_{suffix}"


def sibling_counts(db: SchemaDB) -> dict[str, int]:
    """Base name -> how many expressible out= overloads share it. One that
    can never be an op (a Dimname argument, torch 2.11's named-tensor
    overloads) takes no name, so it leaves the others' names as they are."""
    counts: dict[str, int] = {}
    for schema in db.out_overloads.values():
        try:
            for a in schema.args:
                _argument(a, a.name)
        except arg_kinds.UnsupportedType:
            continue
        counts[schema.base] = counts.get(schema.base, 0) + 1
    return counts


def _hidden_value(a: SchemaArg) -> str:
    """A typed empty optional (or torchgen's default): a bare std::nullopt is
    ambiguous where ATen overloads differ only in a trailing optional."""
    value_type = a.cpp_type.removeprefix("const ").removesuffix("&").strip()
    return f"{value_type}({a.cpp_default or ''})"


def _argument(a: SchemaArg, py_name: str) -> Argument:  # raises UnsupportedType
    t = a.type
    common = dict(
        name=a.name,
        py_name=py_name,
        aten_type=t.text,
        aten_cpp_type=a.cpp_type,
        kwarg_only=a.kwarg_only,
        schema_default=a.default is not None,
    )
    if arg_kinds.is_hidden(t):
        return Argument(
            **common,
            role=Role.HIDDEN,
            kind=None,
            default=None,
            hidden_value=_hidden_value(a),
        )
    kind = arg_kinds.classify(t, a.is_out)
    default = None
    if a.default is not None:
        value = arg_kinds.default_value(a.default, t)
        default = Default(
            value, arg_kinds.core_default_expr(value, t), arg_kinds.py_default(value)
        )
    if a.is_out:
        role = Role.OUTPUT
    elif t.base == "Tensor":
        role = Role.INPUT
    else:
        role = Role.ATTRIBUTE
    return Argument(
        **common,
        role=role,
        kind=kind,
        default=default,
        hidden_value=None,
        size=t.size if kind.sized else None,
        mutable=a.is_write and not a.is_out,
    )


def _release(spec: OpSpec, version: str) -> str:
    """` in torch <version>` after an ATen overload's name in an error: its
    arguments are that release's (composites': the spec's)."""
    return f" in torch {version}" if spec.aten and version else ""


def _arguments(
    schema: AtenSchema, spec: OpSpec, version: str = ""
) -> tuple[Argument, ...]:
    names = {a.name for a in schema.args}
    renames = dict(DEFAULT_RENAMES)
    for old, new in spec.rename:
        if old not in names:
            raise _OpError(
                spec.at("rename"),
                f"'rename' names '{old}', which is not an argument of {schema.name}"
                f"{_release(spec, version)} "
                f"(arguments: {', '.join(a.name for a in schema.args)})",
            )
        renames[old] = new
    args = []
    for a in schema.args:
        py_name = renames.get(a.name, a.name)
        if keyword.iskeyword(py_name):
            py_name += "_"  # e.g. random.from_out's 'from'
        try:
            args.append(_argument(a, py_name))
        except arg_kinds.UnsupportedType as e:
            raise _OpError(
                spec.at("aten") if spec.aten else spec.at("signature"),
                f"argument '{a.name}' of {schema.name}: unsupported: {e}",
            ) from None
    seen: dict[str, str] = {}
    for a in args:
        if a.hidden:
            continue
        if a.py_name in RESERVED_PARAMS:
            raise _OpError(
                spec.at("rename") if spec.rename else spec.where,
                f"argument name '{a.py_name}' is reserved for the library",
            )
        if a.py_name in seen:
            raise _OpError(
                spec.at("rename") if spec.rename else spec.where,
                f"two arguments would be called '{a.py_name}' "
                f"('{seen[a.py_name]}' and '{a.name}')",
            )
        seen[a.py_name] = a.name
    if not any(a.is_output for a in args):
        if spec.signature is not None:
            raise _OpError(spec.at("signature"), _missing_out(schema))
        raise _OpError(spec.where, f"{schema.name} has no out= argument")
    return tuple(args)


def _missing_out(schema: AtenSchema) -> str:
    """A composite signature without an out= argument: what to write."""
    unmarked = [
        a.name
        for a in schema.args
        if a.kwarg_only and a.type.base == "Tensor" and not a.is_write
    ]
    name = unmarked[-1] if unmarked else "out"
    what = f"'{name}' lacks" if unmarked else "missing"
    return (
        f"composite signature has no out= argument: {what} the out annotation; "
        f"mark the output 'Tensor(a!) {name}' after '*' and return it, e.g. "
        f"'{schema.base}(Tensor input, *, Tensor(a!) {name}) -> Tensor(a!)' "
        "(an out= argument is a keyword-only Tensor with a write annotation)"
    )


# Hint keys that are not argument names: per-argument tensor shapes and
# literal tensor values ({arg: [..]} or {arg: {value: [..], dtype: int32}}).
HINT_TABLES = ("shapes", "tensors")


def _check_hints(spec: OpSpec, args: tuple[Argument, ...], version: str = "") -> None:
    names = {a.py_name for a in args if not a.hidden}
    tensors = {a.py_name for a in args if a.role is Role.INPUT}
    of = f" of {spec.aten}{_release(spec, version)}" if spec.aten and version else ""
    known = ", ".join(sorted(names))
    for key, value in spec.hints:
        where = spec.places.get(f"hints.{key}", spec.at("hints"))
        if key in HINT_TABLES:
            if not isinstance(value, dict):
                raise _OpError(where, f"hint '{key}' must map argument names to values")
            for name in value:
                if name not in tensors:
                    raise _OpError(
                        where,
                        f"hint '{key}' names '{name}', which is no tensor argument"
                        f"{of} (arguments: {known})",
                    )
        elif key not in names:
            raise _OpError(
                where, f"hint '{key}' names no argument{of} (arguments: {known})"
            )
        elif not isinstance(value, list) or not value:
            raise _OpError(
                where, f"hint '{key}' must be a non-empty list of values to test"
            )


def with_hints_for(spec: OpSpec, version: str) -> OpSpec:
    """spec with the hints of its first hint set whose range of torch
    releases holds `version` (none: no hints). Only those are checked
    against the schema: another release's may name its own arguments."""
    for hints in spec.hint_sets:
        if hints.torch is None or version in hints.torch:
            return replace(
                spec, hints=hints.values, places={**spec.places, **hints.places}
            )
    return replace(spec, hints=())


def _native(spec: OpSpec, args: tuple[Argument, ...]) -> tuple[NativeImpl, ...]:
    if spec.native and not any(a.is_tensor for a in args):
        raise _OpError(
            spec.at("native"),
            "a native kernel needs a plain Tensor argument to choose its device",
        )
    seen = set()
    for n in spec.native:
        if n.platform in seen:
            raise _OpError(spec.at("native"), f"platform '{n.platform}' listed twice")
        seen.add(n.platform)
    return tuple(NativeImpl(n.platform, n.dtypes, n.up_to) for n in spec.native)


def _resolve_schema(spec: OpSpec, db: SchemaDB) -> AtenSchema:
    if spec.aten is not None:
        schema = db.out_overloads.get(spec.aten)
        if schema is not None:
            return schema
        hint = ", ".join(repr(s) for s in db.suggestions(spec.aten))
        # The op's own out= overloads come first (gelu.Tensor_out: gelu.out,
        # not ge.Tensor_out): the name is right more often than the overload.
        base = spec.aten.split(".", 1)[0]
        same = [n for n in db.out_overloads if n.split(".", 1)[0] == base]
        if same:
            close = difflib.get_close_matches(spec.aten, same, n=3, cutoff=0)
            hint = ", ".join(repr(s) for s in close)
        if spec.aten in db.all_names:
            msg = f"'{spec.aten}' is an ATen overload without out= arguments"
        else:
            msg = f"torch {db.torch_version} has no ATen overload '{spec.aten}'"
        if hint:
            msg += f"; did you mean {hint}?"
        raise _OpError(spec.at("aten"), msg)
    try:
        schema = schema_from_signature(spec.signature)
    except ValueError as e:
        raise _OpError(spec.at("signature"), f"invalid signature: {e}") from None
    if spec.name and spec.name != schema.base:
        raise _OpError(
            spec.at("name"),
            f"'name' is '{spec.name}' but the signature declares '{schema.base}'",
        )
    if schema.overload:
        raise _OpError(
            spec.at("signature"), "a composite signature takes no overload name"
        )
    for use in spec.uses:
        if use not in db.headers:
            raise _OpError(
                spec.at("uses"),
                f"'uses' names '{use}', which is no ATen operator of torch "
                f"{db.torch_version}",
            )
    # `uses` decides the headers the body gets: the body's calls must match.
    wrong = composite_calls.uses_problem(
        spec.fallback or "", spec.uses, db.headers, spec.fallback_line
    )
    if wrong:
        raise _OpError(spec.at("uses" if "uses" in spec.places else "fallback"), wrong)
    return schema


def _op(spec: OpSpec, db: SchemaDB, name: str) -> Op:
    schema = _resolve_schema(spec, db)
    args = _arguments(schema, spec, db.torch_version)
    _check_hints(spec, args, db.torch_version)
    composite = spec.aten is None
    if spec.reference is not None:
        inputs = tuple(a.name for a in args if not a.is_output and not a.hidden)
        wrong = references.problem(spec.reference, inputs)
        if wrong:
            raise _OpError(spec.at("reference"), wrong)
    return Op(
        name=name,
        aten=None if composite else schema.name,
        source=spec.source,
        extension=spec.extension,
        schema=schema.schema,
        arguments=args,
        headers=tuple(sorted(set(spec.uses))) if composite else (schema.header,),
        aten_function=None if composite else f"at::{schema.cpp_name}",
        cpp_order=schema.cpp_order,
        fallback_body=spec.fallback.rstrip() if composite else None,
        fallback_line=spec.fallback_line if composite else 0,
        native=_native(spec, args),
        native_line=spec.at("native").line if spec.native else 0,
        native_col=spec.at("native").col if spec.native else 0,
        hints=spec.hints,
        shard=0,
        cpu_kernel=schema.cpu_kernel,
        tensor_iterator=schema.tensor_iterator,
        functional=schema.functional,
        functional_call=schema.functional_call,
        return_type=schema.return_type,
        tags=schema.tags,
        reference=spec.reference,
        reference_line=spec.at("reference").line if spec.reference else 0,
        output_like=_output_like(spec, args),
        functional_schema=schema.functional_schema,
        functional_tags=schema.functional_tags,
    )


def _output_like(spec: OpSpec, args) -> tuple[tuple[str, str], ...]:
    """A composite's 'like': each key an output, each value one tensor input
    (located errors otherwise)."""
    outputs = {a.name for a in args if a.is_output}
    inputs = {a.name for a in args if a.is_tensor and not a.is_output}
    for out, arg in spec.like:
        if out not in outputs:
            raise _OpError(
                spec.at("like"),
                f"'like' names '{out}', which is not an output of the signature "
                f"(outputs: {', '.join(sorted(outputs))})",
            )
        if arg not in inputs:
            raise _OpError(
                spec.at("like"),
                f"'like' allocates '{out}' like '{arg}', which is not a tensor "
                f"input of the signature (tensor inputs: {', '.join(sorted(inputs))})",
            )
    return spec.like


def _name_for(spec: OpSpec, db: SchemaDB, siblings: dict[str, int]) -> str | None:
    if spec.name:
        return spec.name
    if spec.aten and spec.aten in db.out_overloads:
        return default_name(db.out_overloads[spec.aten], siblings)
    return None  # composites: taken from the parsed signature


def _check_name(name: str, where: Where) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise _OpError(where, f"op name '{name}' is not a valid Python identifier")
    if name in CPP_KEYWORDS:
        raise _OpError(where, f"op name '{name}' is a C++ keyword")
    reserved = module_api.reserved_reason(name)
    if reserved:
        raise _OpError(where, f"op name '{name}' is reserved: {reserved}")


def shard_count(n_ops: int, shard_size: int) -> int:
    """A power of two near n/size: the count (and so every op's shard) only
    changes when the op set doubles or halves, not on every added op."""
    want = max(1, -(-n_ops // shard_size))
    count = 1
    while count < want:
        count *= 2
    return count


def shard_of(name: str, count: int) -> int:
    return zlib.crc32(name.encode()) % count  # stable across runs and machines


def build_opset(
    specs: SpecSet, db: SchemaDB, selection: str = "default", names=None
) -> OpSet:
    """Resolve specs into the model; raise SpecErrors listing every problem.

    selection: "default" (the specs), "all" (the specs plus every expressible
    out= overload), or "names" (only the ops in `names`).
    """
    errors: list[SpecError] = []
    ops: list[Op] = []
    taken: dict[str, Where] = {}
    explicit: set[str] = set()  # names a spec gave
    covered: set[str] = set()
    siblings = sibling_counts(db)
    for spec in specs.ops:
        spec = with_hints_for(spec, db.torch_version)
        try:
            name = _name_for(spec, db, siblings)
            op = _op(spec, db, name or "")
            if not name:
                name = op.schema.split("(", 1)[0]
                op = _replace_name(op, name)
            where = spec.at("name") if spec.name else spec.where
            _check_name(name, where)
            if name in taken:
                w = taken[name]
                raise _OpError(
                    where,
                    f"duplicate op name '{name}' (also at {w.path}:{w.line}:{w.col})",
                )
            taken[name] = where
            if spec.name:
                explicit.add(name)
            if op.aten:
                covered.add(op.aten)
            ops.append(op)
        except _OpError as e:
            errors.append(e.error)
    if errors:
        raise SpecErrors(errors)
    exclusions: list[Exclusion] = []
    if selection == "all":
        hints = _all_hints(specs.all_hints, db, covered)
        ops += _everything_else(db, covered, set(taken), exclusions, siblings)
        _apply_all_hints(ops, hints, exclusions, db.torch_version)
    elif selection == "names":
        wanted = set(names or ())
        unknown = sorted(wanted - {op.name for op in ops})
        if unknown:
            raise SelectionError(unknown, sorted(op.name for op in ops))
        # An extension's ops are all built: --extension asked for them.
        ops = [op for op in ops if op.name in wanted or op.extension]
    ops.sort(key=lambda op: op.name)
    count = shard_count(len(ops), specs.shard_size)
    ops = [_finish(op, shard_of(op.name, count), specs.direct_cpu) for op in ops]
    ops, functions = _functions(ops, db, taken, explicit, count)
    label = selection if selection != "names" else ",".join(sorted(names or ()))
    return OpSet(
        ops=tuple(ops),
        functions=functions,
        platforms=load_platforms(),
        torch_version=db.torch_version,
        shard_count=count,
        shard_size=specs.shard_size,
        selection=label,
        sources=specs.sources,
        exclusions=tuple(exclusions),
    )


def _functions(
    ops: list[Op], db: SchemaDB, taken: dict[str, Where], explicit: set[str], count: int
):
    """The module's torch-like functions (overloads.py), and the ops with
    the numbers-as-tensors rule of the function they serve. An op whose
    name is a function's it does not serve (`normal.out` is not among
    torch.normal's) takes its overload's name (`normal_out`) where the name
    was derived; a name a spec gave is an error."""
    functions = python_functions(ops, db)
    served = {o.op.name for f in functions for o in f.overloads if o.op}
    names = {op.name for op in ops}
    errors = []
    for f in functions:
        op = next((op for op in ops if op.name == f.name), None)
        if op is None or any(o.op is op for o in f.overloads):
            continue
        where = taken.get(op.name) or Where(op.source, 1, 1)
        new_name = f"{op.name}_{op.aten.split('.', 1)[1]}" if op.aten else ""
        if op.name in explicit or not new_name or new_name in names:
            serving = ", ".join(sorted({o.op.name for o in f.overloads if o.op}))
            errors.append(
                where.error(
                    f"op name '{op.name}' is the name of torch's Python function "
                    f"'{f.name}', which this build serves with {serving}; give "
                    "the op another name"
                )
            )
            continue
        renamed = replace(op, name=new_name, shard=shard_of(new_name, count))
        ops = [renamed if o is op else o for o in ops]
        names.add(new_name)
    if errors:
        raise SpecErrors(errors)
    # Membership goes by ATen overload, not name: a rename changes none.
    numbers = {
        o.op.aten
        for f in functions
        for o in f.overloads
        if o.op and o.numbers_as_tensors
    }
    ops = [replace(op, numbers_as_tensors=op.aten in numbers) for op in ops]
    ops.sort(key=lambda op: op.name)
    return ops, python_functions(ops, db)


class SelectionError(Exception):
    def __init__(self, unknown: list[str], known: list[str]):
        self.unknown = unknown
        super().__init__(
            f"unknown op(s) in --ops: {', '.join(unknown)} "
            f"({len(known)} ops are defined in the specs)"
        )


def _all_hints(hint_specs, db, covered) -> dict[str, OpSpec]:
    """The hints file of the full set, by ATen overload, checked by name."""
    errors, result = [], {}
    for spec in hint_specs:
        if not _applies(spec, db.torch_version):
            continue  # hints for other releases only
        spec = with_hints_for(spec, db.torch_version)
        if spec.aten not in db.out_overloads:
            close = ", ".join(repr(s) for s in db.suggestions(spec.aten))
            hint = f"; did you mean {close}?" if close else ""
            errors.append(
                spec.where.error(
                    f"torch {db.torch_version} has no ATen out= overload "
                    f"'{spec.aten}'{hint}{LIMIT_HINTS}"
                )
            )
        elif spec.aten in covered:
            errors.append(
                spec.where.error(
                    f"'{spec.aten}' is in the specs: give its hints in its spec entry"
                )
            )
        else:
            result[spec.aten] = spec
    if errors:
        raise SpecErrors(errors)
    return result


# How to keep the hints of an overload that only some releases have.
LIMIT_HINTS = (
    " (hints for an overload some releases lack: limit them to the others with "
    "'torch: \">=2.14\"' in their mapping)"
)


def _applies(spec: OpSpec, version: str) -> bool:
    return any(h.torch is None or version in h.torch for h in spec.hint_sets)


def _apply_all_hints(
    ops: list[Op], hints: dict[str, OpSpec], exclusions, version: str
) -> None:
    """Attach the hints file's entries to the ops `--ops all` added, after
    checking their argument names; hints for an excluded overload are an error."""
    errors = []
    excluded = {e.aten for e in exclusions}
    for i, op in enumerate(ops):
        spec = hints.get(op.aten) if op.source == "<all>" else None
        if spec is None:
            continue
        try:
            _check_hints(spec, op.arguments, version)
        except _OpError as e:
            errors.append(e.error)
            continue
        ops[i] = replace(op, hints=spec.hints)
    for aten, spec in hints.items():
        if aten in excluded:
            errors.append(
                spec.where.error(f"'{aten}' is not expressible (see 'exclusions')")
            )
    if errors:
        raise SpecErrors(errors)


def _everything_else(db, covered, taken, exclusions, siblings) -> list[Op]:
    """Every expressible out= overload the specs do not already name."""
    result = []
    for aten, schema in db.out_overloads.items():
        if aten in covered:
            continue
        spec = OpSpec("<all>", Where("<all>", 0, 0), aten=aten)
        name = default_name(schema, siblings)
        if name in taken:
            name = f"{schema.base}_{schema.overload}"
        try:
            _check_name(name, spec.where)
            if name in taken:
                raise _OpError(spec.where, f"name '{name}' is taken by a spec'd op")
            op = _op(spec, db, name)
        except _OpError as e:
            exclusions.append(Exclusion(aten, e.error.message))
            continue
        taken.add(name)
        result.append(op)
    return result


def _replace_name(op: Op, name: str) -> Op:
    return replace(op, name=name)


def _finish(op: Op, shard: int, direct_cpu: bool) -> Op:
    # Direct mode needs ATen's CPU entry point and plain tensor arguments
    # (lists would need per-element checks on the hot path).
    direct = (
        direct_cpu
        and op.cpu_kernel
        and not op.composite
        and all(
            a.tensors is Tensors.ONE
            for a in op.visible
            if a.role in (Role.INPUT, Role.OUTPUT)
        )
    )
    return replace(op, shard=shard, direct_cpu=direct)
