"""The floor: a tiny C++ extension with one raw METH_FASTCALL function per op
that unpacks its arguments and calls the same `at::<op>_out` directly.

The source is generated from the manifest and torchgen's C++ signature of each
out= overload (schema_db), compiled with g++ -O3 against torch and
torch_python, and cached by content hash: a second run loads the cached .so.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import jinja2

from ..schema_db import load_schema_db, torch_version
from ..schema_types import AtenSchema

TEMPLATE = Path(__file__).resolve().parent / "floor.cpp.j2"


class FloorError(Exception):
    """The floor extension could not be generated or compiled."""


@dataclass(frozen=True)
class FloorFunction:
    name: str
    schema: str
    cpp_name: str
    arity: int
    decls: tuple[str, ...]
    call_args: tuple[str, ...]


# kind -> (declaration of v from Python object o, how v is passed)
_CONVERT = {
    "tensor": ("const at::Tensor& {v} = fl::tensor({o});", "{v}"),
    "tensor_opt": ("const std::optional<at::Tensor> {v} = fl::tensor_opt({o});", "{v}"),
    "tensor_list": ("const fl::TensorList {v}({o});", "{v}.ref()"),
    "tensor_opt_list": ("const auto {v} = fl::tensor_opt_list({o});", "{v}"),
    "scalar": ("const at::Scalar {v} = fl::scalar({o});", "{v}"),
    "scalar_opt": ("const auto {v} = fl::scalar_opt({o});", "{v}"),
    "int": ("const int64_t {v} = fl::int64({o});", "{v}"),
    "int_opt": ("const auto {v} = fl::int64_opt({o});", "{v}"),
    "int_list": ("const fl::IntList {v}({o}, {size});", "{v}.ref()"),
    "int_list_opt": ("const fl::IntList {v}({o}, {size});", "{v}.opt_ref()"),
    "float": ("const double {v} = fl::float64({o});", "{v}"),
    "float_opt": ("const auto {v} = fl::float64_opt({o});", "{v}"),
    "bool": ("const bool {v} = fl::boolean({o});", "{v}"),
    "bool_array": ("const auto {v} = fl::bool_array<{size}>({o});", "{v}"),
    "str": ("const c10::string_view {v} = fl::str({o});", "{v}"),
    "str_opt": ("const auto {v} = fl::str_opt({o});", "{v}"),
    "dtype": ("const at::ScalarType {v} = fl::dtype({o});", "{v}"),
    "dtype_opt": ("const auto {v} = fl::dtype_opt({o});", "{v}"),
}
_OUTPUT = ("at::Tensor& {v} = fl::tensor_out({o});", "{v}")


def floor_function(entry: dict, schema: AtenSchema) -> FloorFunction:
    """One op's floor function. Raises FloorError for argument kinds it does
    not handle."""
    sizes = {a.name: a.type.size for a in schema.args}
    decls = []
    passed: dict[str, str] = {}
    index = 0
    for a in entry["arguments"]:
        var = f"v_{a['name']}"
        if a["role"] == "hidden":
            passed[a["name"]] = "{}"  # the C++ default (std::nullopt)
            continue
        if a["role"] == "output":
            if a["kind"] != "tensor":
                raise FloorError(f"{entry['name']}: output kind {a['kind']}")
            decl, use = _OUTPUT
        elif a["kind"] in _CONVERT:
            decl, use = _CONVERT[a["kind"]]
        else:
            raise FloorError(f"{entry['name']}: argument kind {a['kind']}")
        if a["kind"] == "tensor_list" and "ITensorListRef" in a["cpp_type"]:
            use = "at::ITensorListRef({v}.ref())"
        fields = {"v": var, "o": f"args[{index}]", "size": sizes.get(a["name"]) or 0}
        decls.append(decl.format(**fields))
        passed[a["name"]] = use.format(**fields)
        index += 1
    return FloorFunction(
        name=entry["name"],
        schema=schema.schema,
        cpp_name=schema.cpp_name,
        arity=index,
        decls=tuple(decls),
        call_args=tuple(passed[name] for name in schema.cpp_order),
    )


def render(entries: list[dict], module: str = "MODULE") -> tuple[str, list[str]]:
    """(C++ source, names of ops left out with the reason)."""
    db = load_schema_db()
    functions, headers, left_out = [], set(), []
    for entry in sorted(entries, key=lambda e: e["name"]):
        schema = db.out_overloads.get(entry["aten"])
        if entry.get("composite") or schema is None:
            left_out.append(f"{entry['name']}: no ATen out= overload")
            continue
        try:
            functions.append(floor_function(entry, schema))
        except FloorError as e:
            left_out.append(str(e))
            continue
        headers.add(schema.header)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE.parent)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    source = env.get_template(TEMPLATE.name).render(
        torch_version=torch_version(),
        headers=sorted(headers),
        functions=functions,
        module=module,
    )
    return source, left_out


def _torch_paths() -> tuple[list[str], str]:
    from torch.utils import cpp_extension

    return cpp_extension.include_paths(), cpp_extension.library_paths()[0]


def _compile_command(source: Path, target: Path) -> list[str]:
    includes, lib_dir = _torch_paths()
    cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
    return (
        [cxx, "-O3", "-std=c++20", "-fPIC", "-shared", "-w"]
        + ["-D_GLIBCXX_USE_CXX11_ABI=1", "-DTORCH_ASSERT_ONLY_METHOD_OPERATORS"]
        + ["-DNDEBUG"]
        + [f"-I{p}" for p in includes]
        + [f"-I{sysconfig.get_paths()['include']}"]
        + [str(source), "-o", str(target)]
        + [f"-L{lib_dir}", "-ltorch", "-ltorch_cpu", "-lc10", "-ltorch_python"]
        + [f"-Wl,-rpath,{lib_dir}"]
    )


def build(entries: list[dict], cache_dir: Path, echo=print) -> tuple[Path, list[str]]:
    """Compile (or find cached) the floor for these manifest entries; returns
    the .so path and the ops left out."""
    probe, left_out = render(entries)
    key = hashlib.sha256(
        (probe + "\0" + " ".join(_compile_command(Path("s"), Path("t")))).encode()
    ).hexdigest()[:12]
    module = f"infiniops_bench_floor_{key}"
    target = cache_dir / f"{module}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if target.is_file():
        return target, left_out
    source_text, _ = render(entries, module)
    cache_dir.mkdir(parents=True, exist_ok=True)
    source = cache_dir / f"{module}.cpp"
    source.write_text(source_text)
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    cmd = _compile_command(source, tmp)
    n = source_text.count("PyObject* floor_")
    echo(f"compiling the floor extension ({n} ops, -O3) into {cache_dir}/ ...")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        lines = (proc.stderr or proc.stdout).splitlines()
        first = next((i for i, l in enumerate(lines) if "error" in l), 0)
        raise FloorError(
            "compiling the floor extension failed:\n"
            + "\n".join(lines[first : first + 10])
        )
    os.replace(tmp, target)
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
