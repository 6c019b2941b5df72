"""The floors: a small C++ extension with, per op and per call path of the
library (paths.py), one raw METH_FASTCALL function doing the same work as
that path and nothing else. What the library adds on top is its own cost.

  direct__<op>      THPVariable_Check + THPVariable_Unpack of every tensor,
                    AutoDispatchBelowADInplaceOrView, at::cpu::<op>_out,
                    each output's version bumped
  dispatcher__<op>  the same unpacking, at::<op>_out through the dispatcher
  from_blob__<op>   the same unpacking, every at::Tensor a wrapper re-bound to
                    its raw pointer and geometry (one per call site and
                    thread, made once as cpp/torch/aten/from_blob.cpp makes a
                    from_blob tensor; the data pointer, storage size, sizes,
                    strides and version reset on each call, as the library's
                    wrapper pool does), then the direct (CPU tensors of direct ops) or
                    dispatcher call above on the rebuilt tensors, then each
                    output's version delta carried over to the caller's tensor
  native__<op>      the same unpacking, a core `Tensor` (data pointer, shape,
                    strides, dtype, device) per tensor, the library's own
                    native kernel (cpp/kernels/cpu/*.cc, compiled into the
                    floor), each output's version bumped

Every function returns what the library returns (the out tensor, or a tuple
of them). None releases the GIL, handles warnings, checks overlap or output
shapes, or looks for modes: those are the library's cost.

The source is rendered from the manifest and torchgen's C++ signature of each
out= overload (schema_db) by the generator's own renderer
(templates/bench_floor.cpp.j2), and compiled by the tool's CMake project
(support/CMakeLists.txt, target infiniops_bench_floor: the same torch discovery,
flags and CPU kernel objects as the module) in a build directory of its own,
cached by a hash of everything that goes into it: a second run loads the
cached .so.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ..toolchain import builder
from ..base import project as projects
from ..base.locations import SUPPORT_DIR
from ..schema.arg_kinds import FloorCode, Tensors
from ..model.manifest import HIDDEN, OUTPUT, Argument, Op
from ..render.sources import render_template
from ..schema.db import load_schema_db, torch_version
from ..schema.records import AtenSchema
from . import paths as P

TEMPLATE = "bench_floor.cpp.j2"  # in templates/
TARGET = "infiniops_bench_floor"  # in support/CMakeLists.txt


class FloorError(Exception):
    """The floor extension could not be generated or compiled."""


def function_name(path: str, op: str) -> str:
    """The floor module's function for `op` on `path`."""
    return f"{path}__{op}"


@dataclass(frozen=True)
class FloorFunction:
    name: str  # function_name(path, op)
    comment: str
    arity: int
    decls: tuple[str, ...]
    body: tuple[str, ...]
    outputs: tuple[int, ...]  # argument indices of the outputs (the return value)
    # torch.return_types.<name> several outputs are returned in (as the
    # library and torch return them); None: a plain tuple
    return_type: str | None = None


@dataclass(frozen=True)
class _Unpacked:
    arity: int
    decls: tuple[str, ...]
    aten_args: tuple[str, ...]  # ATen C++ order, unpacked values
    blob_decls: tuple[str, ...]
    blob_args: tuple[str, ...]  # ATen C++ order, rebuilt tensors
    outputs: tuple[str, ...]  # variables of the outputs
    blob_outputs: tuple[str, ...]
    output_indices: tuple[int, ...]


def _code(op: Op, a: Argument) -> FloorCode:
    """The kind's floor code for `a` (as an output where it is one)."""
    code = a.kind.floor_out if a.role == OUTPUT else a.kind.floor
    if code is None:
        what = "output" if a.role == OUTPUT else "argument"
        raise FloorError(f"{op.name}: {what} kind {a.kind.name}")
    return code


def _unpack(op: Op, schema: AtenSchema) -> _Unpacked:
    sizes = {a.name: a.type.size for a in schema.args}
    decls, blob_decls = [], []
    passed: dict[str, str] = {}
    blob_passed: dict[str, str] = {}
    outputs, blob_outputs, indices = [], [], []
    index = 0
    for a in op.arguments:
        name = a.name
        var, blob = f"v_{name}", f"b_{name}"
        if a.role == HIDDEN:
            passed[name] = blob_passed[name] = "{}"  # the C++ default (nullopt)
            continue
        code = _code(op, a)
        if a.role == OUTPUT:
            outputs.append(var)
            blob_outputs.append(blob)
            indices.append(index)
        use = code.aten
        if a.kind.tensors is Tensors.LIST and "ITensorListRef" in a.cpp_type:
            use = "at::ITensorListRef({v}.ref())"
        fields = {"o": f"args[{index}]", "size": sizes.get(name) or 0}
        decls.append(code.unpack.format(v=var, **fields))
        passed[name] = use.format(v=var, **fields)
        if code.from_blob is None:
            blob_passed[name] = passed[name]
        else:
            blob_decls.append(code.from_blob.format(b=blob, v=var))
            blob_passed[name] = use.format(v=blob, **fields)
        index += 1
    return _Unpacked(
        arity=index,
        decls=tuple(decls),
        aten_args=tuple(passed[n] for n in schema.cpp_order),
        blob_decls=tuple(blob_decls),
        blob_args=tuple(blob_passed[n] for n in schema.cpp_order),
        outputs=tuple(outputs),
        blob_outputs=tuple(blob_outputs),
        output_indices=tuple(indices),
    )


def _direct_call(schema: AtenSchema, args: tuple[str, ...], outs) -> list[str]:
    return [
        "{",
        "  at::AutoDispatchBelowADInplaceOrView below_autograd;",
        f"  at::cpu::{schema.cpp_name}({', '.join(args)});",
        "}",
        *(f"fl::bump_version({o});" for o in outs),
    ]


def _dispatcher_call(schema: AtenSchema, args: tuple[str, ...]) -> list[str]:
    return [f"at::{schema.cpp_name}({', '.join(args)});"]


def aten_functions(op: Op, schema: AtenSchema) -> list[FloorFunction]:
    """The direct (where the op has it), dispatcher and from_blob floors of an
    op with an ATen out= overload. Raises FloorError for argument kinds it
    does not handle."""
    u = _unpack(op, schema)

    def make(path: str, body: list[str], decls=u.decls) -> FloorFunction:
        return FloorFunction(
            function_name(path, op.name),
            f"{path}: {schema.schema}",
            u.arity,
            tuple(decls),
            tuple(body),
            u.output_indices,
            op.return_type,
        )

    result = []
    if op.direct_cpu:
        result.append(make("direct", _direct_call(schema, u.aten_args, u.outputs)))
    result.append(make("dispatcher", _dispatcher_call(schema, u.aten_args)))
    if P.from_blob_inner(op) == "direct":
        # The library's from_blob tensors then take the direct path on the
        # CPU only (bench --device cuda: the dispatcher).
        direct = _direct_call(schema, u.blob_args, u.blob_outputs)
        inner = [f"if ({u.outputs[0]}.is_cpu()) {{"]
        inner += ["  " + line for line in direct] + ["} else {"]
        inner += ["  " + line for line in _dispatcher_call(schema, u.blob_args)]
        inner += ["}"]
    else:
        inner = _dispatcher_call(schema, u.blob_args)
    carry = [f"fl::carry_version({v}, {b});" for v, b in zip(u.outputs, u.blob_outputs)]
    result.append(make("from_blob", inner + carry, u.decls + u.blob_decls))
    return result


def native_function(op: Op) -> FloorFunction:
    """The native floor: core tensors, the library's CPU kernel, versions."""
    decls, call, outputs, out_vars = [], [], [], []
    index = 0
    for a in op.arguments:
        if a.role == HIDDEN:
            raise FloorError(f"{op.name}: native kernel with a hidden argument")
        c, o, v = f"c_{a.name}", f"args[{index}]", f"v_{a.name}"
        code = _code(op, a)
        if code.native is None:
            raise FloorError(f"{op.name}: native argument kind {a.kind.name}")
        if a.role == OUTPUT:  # the core tensor is made of the unpacked output
            decls.append(code.unpack.format(v=v, o=o))
            outputs.append(index)
            out_vars.append(v)
        decls.append(code.native.format(c=c, o=o, v=v))
        call.append(c)
        index += 1
    body = [
        f"if (!infini::ops::native::cpu::{op.name}({', '.join(call)})) {{",
        f'  fl::declined("{op.name}");',
        "}",
        *(f"fl::bump_version({v});" for v in out_vars),
    ]
    return FloorFunction(
        function_name("native", op.name),
        f"native: {op.schema}",
        index,
        tuple(decls),
        tuple(body),
        tuple(outputs),
        op.return_type,
    )


def functions_of(op: Op, db=None) -> tuple[list[FloorFunction], list[str]]:
    """(floor functions of one op, what was left out with the reason)."""
    functions, left_out = [], []
    schema = None
    if not op.composite:
        schema = (db or load_schema_db()).out_overloads.get(op.aten)
    if schema is None:
        left_out.append(
            f"{op.name}: no ATen out= overload (composite body), "
            "so no dispatcher/from_blob floor"
        )
    else:
        try:
            functions += aten_functions(op, schema)
        except FloorError as e:
            left_out.append(str(e))
    if P.native_dtypes(op):
        try:
            functions.append(native_function(op))
        except FloorError as e:
            left_out.append(str(e))
    return functions, left_out


def render(ops: list[Op], module: str = "MODULE") -> tuple[str, list[str]]:
    """(C++ source, ops or paths left out with the reason)."""
    db = load_schema_db()
    functions, headers, left_out = [], set(), []
    native = False
    for op in sorted(ops, key=lambda o: o.name):
        fns, lost = functions_of(op, db)
        functions += fns
        left_out += lost
        for f in fns:
            path = f.name.split("__", 1)[0]
            if path == "native":
                native = True
            else:
                header = db.out_overloads[op.aten].header
                headers.add(header)
                if path == "direct":
                    headers.add(f"{header}_cpu_dispatch")
    source = render_template(
        TEMPLATE,
        torch_version=torch_version(),
        headers=sorted(headers),
        functions=functions,
        native=native,
        module=module,
    )
    return source, left_out


def _digest(source: str, generated_dir: Path, with_native: bool) -> str:
    """Hash of the source and of what the build adds: the CMake project, the
    interpreter and torch, and (with native floors) the kernel sources, the
    core headers and the generated kernel declarations."""
    h = hashlib.sha256(source.encode())
    h.update((SUPPORT_DIR / "CMakeLists.txt").read_bytes())
    h.update(
        f"{sys.executable}\0{torch_version()}\0{os.environ.get('CXX', '')}".encode()
    )
    if with_native:
        kernels = projects.current().kernels / "cpu"
        files = sorted(kernels.glob("*")) + sorted(
            (SUPPORT_DIR / "cpp" / "core").glob("*.h")
        )
        files += sorted((SUPPORT_DIR / "cpp" / "kernels" / "cpu").glob("*.h"))
        files.append(Path(generated_dir) / "native_kernels.h")
        files += sorted(Path(generated_dir).glob("*_table.h"))
        for f in files:
            if f.is_file():
                h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


def build(
    ops: list[Op], cache_dir: Path, echo=print, generated_dir: Path | None = None
) -> tuple[Path, list[str]]:
    """Compile (or find cached) the floors of these ops; returns the .so path
    and what was left out. generated_dir: the generated sources the CMake
    project is configured with (the native kernels' declarations; default:
    the project's generated/)."""
    project = projects.current()
    generated_dir = Path(generated_dir or project.generated)
    probe, left_out = render(ops)
    with_native = "native__" in probe
    module = f"infiniops_bench_floor_{_digest(probe, generated_dir, with_native)}"
    target = cache_dir / f"{module}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if target.is_file():
        return target, left_out
    source_text, _ = render(ops, module)
    cache_dir.mkdir(parents=True, exist_ok=True)
    source = cache_dir / f"{module}.cpp"
    source.write_text(source_text)
    n = source_text.count("\nPyObject* floor_")
    echo(
        f"compiling the floor extension ({n} functions, -O3"
        f"{', with the native kernels' if with_native else ''}) into {cache_dir}/ ..."
    )
    config = builder.BuildConfig(
        build_dir=cache_dir / "cmake",
        generated_dir=generated_dir,
        kernel_root=project.kernels,
        jobs=os.cpu_count() or 1,
        extra_cmake_args=(
            f"-DINFINI_OPS_BENCH_FLOOR_SOURCE={source.resolve()}",
            "-DINFINI_OPS_PCH=OFF",
        ),
    )
    try:
        builder.require_tools()
        builder.configure(config, lambda line: None)
        builder.compile_all(config, lambda line: None, {}, targets=(TARGET,))
    except builder.BuildError as e:
        raise FloorError(f"compiling the floor extension failed:\n{e}") from None
    if not target.is_file():
        raise FloorError(f"the floor build wrote no {target}")
    return target, left_out


def load(path: Path):
    """Import a built floor extension (its module name is in the file name)."""
    name = path.name.split(".", 1)[0]
    if name in sys.modules:
        return sys.modules[name]
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module
