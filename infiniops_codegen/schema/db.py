"""The schema oracle: ATen `out=` overloads as torchgen resolves them.

torchgen parses the installed torch's packaged native_functions.yaml; the
result is reduced to `AtenSchema` records and cached on disk, keyed by the
content of the YAML files and the torch version, so a warm `generate` does not
import torchgen at all.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path

from ..base import torch_build
from ..base.locations import cache_dir
from .records import (
    AtenSchema,
    FunctionalCall,
    PyOverload,
    PyParam,
    SchemaArg,
    TypeInfo,
)

# Bump when the extracted records change shape or meaning.
CACHE_FORMAT = 14  # 14: the records moved to schema/records.py (pickled by path)


@dataclass(frozen=True)
class SchemaDB:
    torch_version: str
    out_overloads: dict[str, AtenSchema]  # "add.out" -> schema
    all_names: frozenset[str]  # every function name, e.g. "add.Tensor"
    headers: frozenset[str]  # every per-operator header stem
    # torch's Python functions (torch.*, torch.nn.functional's ATen ones,
    # torch.linalg.*, ...) by name: their signatures in the order torch's
    # argument parser tries them.
    python_overloads: dict[str, tuple[PyOverload, ...]] = field(default_factory=dict)

    def suggestions(self, name: str, limit: int = 3) -> list[str]:
        import difflib

        return difflib.get_close_matches(name, self.out_overloads, n=limit, cutoff=0.6)


def torch_version() -> str:
    """The installed torch's version as torch spells it (`torch.__version__`,
    `2.14.1+cu130`: the distribution's metadata says `2.14.1`), read without
    importing torch (~1 s)."""
    found = torch_build.installed()
    if found is None:
        raise RuntimeError(_NO_TORCH)
    return found.version


_NO_TORCH = (
    "torch is not installed for this Python: install a release the tool is "
    "tested with (infiniops-codegen --version shows them), e.g. torch==2.13.0"
)


def _native_yaml_dir() -> Path:
    spec = importlib.util.find_spec("torchgen")
    if spec is None or spec.origin is None:
        raise RuntimeError(_NO_TORCH)
    return Path(spec.origin).parent / "packaged" / "ATen" / "native"


def _cache_key(yaml_dir: Path, version: str) -> str:
    h = hashlib.sha256(f"{CACHE_FORMAT}\0{version}\0".encode())
    for name in ("native_functions.yaml", "tags.yaml"):
        h.update((yaml_dir / name).read_bytes())
    return h.hexdigest()[:24]


def load_schema_db(use_cache: bool = True) -> SchemaDB:
    version = torch_version()
    yaml_dir = _native_yaml_dir()
    path = cache_dir() / f"schemas-{_cache_key(yaml_dir, version)}.pickle"
    if use_cache and path.is_file():
        try:
            with path.open("rb") as f:
                db = pickle.load(f)
            if isinstance(db, SchemaDB):
                return db
        except Exception:  # unpickling garbage can raise almost anything
            pass  # a corrupt or foreign cache is rebuilt below
    db = _build(yaml_dir, version)
    if use_cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            with tmp.open("wb") as f:
                pickle.dump(db, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)  # atomic: concurrent runs never see half a file
        except OSError:
            pass  # a read-only cache dir only costs time
    return db


def _build(yaml_dir: Path, version: str) -> SchemaDB:
    from torchgen.gen import parse_native_yaml
    from torchgen.model import DispatchKey, SchemaKind

    parsed = parse_native_yaml(
        str(yaml_dir / "native_functions.yaml"), str(yaml_dir / "tags.yaml")
    )
    cpu = parsed.backend_indices[DispatchKey.CPU]
    # The functional overload with the same signature as each out= overload
    # (torch.ops.aten.<functional> is the harness's second reference).
    functionals = {
        f.func.signature(): f
        for f in parsed.native_functions
        if f.func.kind() == SchemaKind.functional
    }
    outs: dict[str, AtenSchema] = {}
    names: set[str] = set()
    headers: set[str] = set()
    for f in parsed.native_functions:
        names.add(str(f.func.name))
        headers.add(f.root_name)
        if f.func.kind() != SchemaKind.out or f.manual_cpp_binding:
            continue
        functional = functionals.get(f.func.signature())
        outs[str(f.func.name)] = _extract(
            f,
            cpu.has_kernel(f),
            str(functional.func.name) if functional else None,
            _functional_call(f, functional, cpu) if functional else None,
            functional_schema=str(functional.func) if functional else None,
            functional_tags=tuple(sorted(functional.tags)) if functional else (),
        )
    return SchemaDB(
        version,
        dict(sorted(outs.items())),
        frozenset(names),
        frozenset(headers),
        _python_overloads(parsed.native_functions),
    )


def _functional_call(out, f, cpu) -> FunctionalCall | None:
    """How a call without out= runs `f`, the functional twin of the out=
    overload `out`: only where it returns exactly one plain tensor per output
    and takes no TensorOptions pack (its C++ call then takes the out=
    overload's other arguments in the same order)."""
    from torchgen.api.python import structseq_fieldnames
    from torchgen.api.types import CppSignatureGroup
    from torchgen.context import native_function_manager
    from torchgen.model import BaseTy, BaseType

    from torchgen.model import Variant

    returns = f.func.returns
    if len(returns) != len(out.func.arguments.out) or f.func.arguments.tensor_options:
        return None
    if Variant.function not in f.variants:  # a Tensor method only: no at::<name>
        return None
    if any(r.type != BaseType(BaseTy.Tensor) for r in returns):
        return None
    with native_function_manager(f):
        name = CppSignatureGroup.from_native_function(f, method=False).signature.name()
    # A structured functional's CPU entry is generated from its out= kernel.
    cpu_kernel = cpu.has_kernel(f) or (
        f.structured_delegate == out.func.name and cpu.has_kernel(out)
    )
    structseq = len(returns) > 1 and structseq_fieldnames(returns)
    return FunctionalCall(
        name,
        bool(cpu_kernel),
        str(f.func.name.name.base) if structseq else None,
        meta_kernel=f.structured_delegate is not None,
    )


# The Python modules whose functions torch's codegen binds (torch.*,
# torch._C._nn, _linalg, _special, _fft), as gen_python_functions does.
_PYTHON_MODULES = (None, "nn", "linalg", "special", "fft")


def _python_overloads(native_functions) -> dict[str, tuple[PyOverload, ...]]:
    """torch's Python functions by name, each signature in the order the
    argument parser tries them: torchgen's own grouping (functional with its
    out= twin) and sorting, deprecated signatures left out."""
    import torch
    from torchgen.api.python import PythonSignatureNativeFunctionPair, signature
    from torchgen.context import native_function_manager
    from torchgen.model import Variant
    from torchgen.packaged.autograd import gen_python_functions as gpf

    by_name: dict[str, list] = {}
    for f in native_functions:
        if (
            f.python_module not in _PYTHON_MODULES
            or not gpf.should_generate_py_binding(f)
        ):
            continue
        if f.python_module is None and Variant.function not in f.variants:
            continue
        with native_function_manager(f):
            pair = PythonSignatureNativeFunctionPair(signature(f, method=False), f)
        by_name.setdefault(str(f.func.name.name), []).append(pair)
    result = {}
    for name, pairs in sorted(by_name.items()):
        try:
            groups = gpf.group_overloads(pairs, symint=True)
        except RuntimeError:  # torch binds no such set either
            continue
        numbers = bool(torch._C._should_allow_numbers_as_tensors(name))
        result[name] = tuple(_py_overload(g, numbers) for g in groups)
    return result


def _py_overload(group, numbers_as_tensors: bool) -> PyOverload:
    sig = group.signature
    positional = len(sig.input_args)
    params = tuple(
        _py_param(a, kwarg_only=i >= positional) for i, a in enumerate(sig.arguments())
    )
    return PyOverload(
        text=sig.signature_str(symint=True),
        params=params,
        functional=str(group.base.func.name),
        out=str(group.outplace.func.name) if group.outplace else None,
        numbers_as_tensors=numbers_as_tensors,
    )


# Schema base types -> the bridge's checks (cpp/torch/overloads.h).
_MATCH = {
    "Tensor": "Tensor",
    "Scalar": "Scalar",
    "int": "Int",
    "SymInt": "SymInt",
    "float": "Float",
    "bool": "Bool",
    "str": "Str",
    "ScalarType": "Dtype",
    "Generator": "Generator",
    "Layout": "Layout",
    "Device": "Device",
    "MemoryFormat": "MemoryFormat",
    "Dimname": "Dimname",
}
_LIST_MATCH = {
    "Tensor": "TensorList",
    "int": "IntList",
    "SymInt": "SymIntList",
    "float": "FloatList",
    "Scalar": "ScalarList",
    "bool": "BoolList",
    "Dimname": "DimnameList",
}


def _py_param(a, kwarg_only: bool) -> PyParam:
    from torchgen.model import BaseType, ListType, OptionalType

    t = a.type
    optional = isinstance(t, OptionalType)
    inner = t.elem if optional else t
    size = 0
    if isinstance(inner, ListType):
        elem = inner.elem.elem if isinstance(inner.elem, OptionalType) else inner.elem
        base = elem.name.name if isinstance(elem, BaseType) else str(elem)
        match = _LIST_MATCH.get(base, "Any")
        size = inner.size or 0
    else:
        base = inner.name.name if isinstance(inner, BaseType) else str(inner)
        match = _MATCH.get(base, "Any")
    # The parser's keyword, as torchgen spells the parameter for it (`Tensor
    # self` is `input` outside methods).
    keyword = a.argument_str(method=False, symint=True).split("=", 1)[0].split()[-1]
    return PyParam(
        name=keyword,
        match=match,
        size=size,
        allow_none=optional or a.default == "None",
        has_default=a.default is not None,
        kwarg_only=kwarg_only,
    )


def _type_info(t) -> TypeInfo:
    from torchgen.model import BaseType, ListType, OptionalType

    text = str(t)
    optional = isinstance(t, OptionalType)
    inner = t.elem if optional else t
    if isinstance(inner, ListType):
        elem = inner.elem
        elem_optional = isinstance(elem, OptionalType)
        if elem_optional:
            elem = elem.elem
        base = elem.name.name if isinstance(elem, BaseType) else str(elem)
        return TypeInfo(text, base, optional, True, inner.size, elem_optional)
    base = inner.name.name if isinstance(inner, BaseType) else str(inner)
    return TypeInfo(text, base, optional)


def _schema_args(func, cpp_types: dict[str, tuple[str, str | None]]):
    kwarg_only = {a.name for a in func.arguments.flat_kwarg_only}
    out = {a.name for a in func.arguments.out}
    result = []
    for a in func.arguments.flat_all:
        cpp_type, cpp_default = cpp_types.get(a.name, ("", None))
        result.append(
            SchemaArg(
                name=a.name,
                type=_type_info(a.type),
                default=a.default,
                cpp_type=cpp_type,
                cpp_default=cpp_default,
                kwarg_only=a.name in kwarg_only or a.name in out,
                is_out=a.name in out,
                is_write=a.is_write,
            )
        )
    return tuple(result)


def _extract(
    f,
    cpu_kernel: bool,
    functional: str | None,
    functional_call=None,
    functional_schema: str | None = None,
    functional_tags: tuple[str, ...] = (),
) -> AtenSchema:
    from torchgen.api.types import CppSignatureGroup
    from torchgen.context import native_function_manager

    # The manager sets per-function flags (const refs for mutable tensors,
    # ITensorListRef for lists) that change the C++ signature.
    with native_function_manager(f):
        sig = CppSignatureGroup.from_native_function(f, method=False).signature
        bindings = [
            b for b in sig.arguments() if hasattr(b.argument, "name")
        ]  # TensorOptions packs never occur in out= overloads
        cpp_types = {b.argument.name: (str(b.type), b.default) for b in bindings}
        cpp_order = tuple(b.argument.name for b in bindings)
        cpp_name = sig.name()
    func = f.func
    return AtenSchema(
        name=str(func.name),
        base=str(func.name.name),
        overload=func.name.overload_name,
        header=f.root_name,
        cpp_name=cpp_name,
        args=_schema_args(func, cpp_types),
        cpp_order=cpp_order,
        cpu_kernel=bool(cpu_kernel),
        tensor_iterator=f.structured_inherits == "TensorIteratorBase",
        schema=str(func),
        functional=functional,
        tags=tuple(sorted(f.tags)),
        return_type=_return_type(func),
        functional_call=functional_call,
        functional_schema=functional_schema,
        functional_tags=functional_tags,
    )


def _return_type(func) -> str | None:
    """torch.return_types.<base>_out: what torch's Python API returns from
    an out= overload whose returns are all named (torchgen's structseq rule)."""
    from torchgen.api.python import structseq_fieldnames

    if not func.is_out_fn() or not structseq_fieldnames(func.returns):
        return None
    return f"{func.name.name.base}_out"


def schema_from_signature(text: str) -> AtenSchema:
    """Parse a composite op's explicit signature with torchgen's own parser.

    Raises ValueError with torchgen's message when the text is not a schema.
    """
    from torchgen import local
    from torchgen.api import cpp
    from torchgen.model import FunctionSchema

    try:
        func = FunctionSchema.parse(text)
    except (AssertionError, RuntimeError, AttributeError, KeyError, IndexError) as e:
        msg = str(e).strip() or "not a valid function schema"
        raise ValueError(msg) from None
    cpp_types: dict[str, tuple[str, str | None]] = {}
    with local.parametrize(
        use_const_ref_for_mutable_tensors=False, use_ilistref_for_tensor_lists=False
    ):
        for a in func.arguments.flat_all:
            try:
                t = cpp.argumenttype_type(
                    a.type, mutable=a.is_write, binds=a.name, symint=False
                ).cpp_type()
                d = (
                    cpp.default_expr(a.default, a.type, symint=False)
                    if a.default is not None
                    else None
                )
            except (AssertionError, RuntimeError, KeyError, ValueError) as e:
                raise ValueError(f"argument '{a.name}': {e}") from None
            cpp_types[a.name] = (t, d)
    out_names = [a.name for a in func.arguments.out]
    # The dispatcher's pair (render/torch_library.py): the out= overload under
    # "out" (or the signature's own overload name), the functional one
    # (outputs returned, defaults kept) under the default overload.
    functional = func.signature(strip_default=False, keep_return_names=True)
    order = tuple(out_names) + tuple(
        a.name for a in func.arguments.flat_all if a.name not in out_names
    )
    return AtenSchema(
        name=str(func.name),
        base=str(func.name.name),
        overload=func.name.overload_name,
        header="",
        cpp_name=str(func.name.name),
        args=_schema_args(func, cpp_types),
        cpp_order=order,
        cpu_kernel=False,
        tensor_iterator=False,
        schema=str(func),
        functional_schema=str(functional) if out_names else None,
    )
