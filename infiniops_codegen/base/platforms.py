"""The platform table: the tool's (data/platforms.yaml) and a project's own.

A project adds platforms in a file of the same format that its
`[tool.infiniops-codegen] platforms` key names (project.py); its rows follow
the tool's, so the tool's enumerators keep their values. Both files are read
with positions: a mistake is reported as `file:line:col: ...`, all of a
file's mistakes at once (SpecErrors), as for op specs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import SpecError, SpecErrors
from .locations import DATA_DIR
from .yaml_nodes import Node, load_yaml


# The platform records: the model (model/ops.py) and the templates see them as
# they are.
@dataclass(frozen=True)
class StreamSupport:
    """How generated code makes a caller's stream current (platforms.yaml)."""

    headers: tuple[str, ...]  # included by the generated stream support
    type: str  # native stream type, e.g. "cudaStream_t"
    guard: str  # RAII guard class, e.g. "c10::cuda::CUDAStreamGuard"
    external: str  # "{stream}", "{index}" -> a torch stream of a raw handle
    current: str  # "{index}" -> the raw current stream of that device
    py_attr: str  # Python stream attribute holding the raw handle

    def external_expr(self, stream: str, index: str) -> str:
        return self.external.format(stream=stream, index=index)

    def current_expr(self, index: str) -> str:
        return self.current.format(index=index)


@dataclass(frozen=True)
class KernelToolchain:
    compiler: str  # default compiler of cpp/kernels/<platform>/
    language: str  # CMake language: CXX, CUDA or VENDORCXX
    extensions: tuple[str, ...]  # kernel source extensions, without the dot
    flags: tuple[str, ...]  # extra kernel compile flags


@dataclass(frozen=True)
class PortPackage:
    """The CMake package of a platform's torch port (platforms.yaml
    `package`): found at configure, its targets linked."""

    name: str  # find_package(<name>)
    runtime: str | None  # torch-free target the native kernels link
    torch: str | None  # target the torch bridge, wrappers and library link


@dataclass(frozen=True)
class Platform:
    name: str  # "cpu", "nvidia", ...
    flag: str  # build flag, "WITH_CPU"
    device_type: str  # core enum value, "kCpu"
    torch_device: str = "cpu"  # Python device name of its tensors
    c10_type: str = "CPU"  # c10::DeviceType of its tensors
    stream: StreamSupport | None = None  # None: no streams, no guard code
    kernels: KernelToolchain | None = None
    host_compiled_bridge: bool = False  # vendor compiler must not compile torch code
    torch_libraries: tuple[str, ...] = ()  # linked from torch's lib dir
    default: bool = False  # built unless turned off
    upstream: bool = False  # PyTorch's own backend of its c10 device type
    # The Python module that makes its tensors (a vendor's torch port:
    # torch_npu, ...): imported before any tensor of the device is made.
    torch_module: str | None = None
    package: PortPackage | None = None  # the port's CMake package
    origin: str = "tool"  # the table it comes from: "tool" or the project's file

    @property
    def cuda_toolkit(self) -> bool:
        """Its torch port keeps PyTorch's CUDA names: its stream guard
        compiles against c10/cuda, which includes the CUDA runtime headers,
        so the build needs the CUDA toolkit (include dir, cudart)."""
        return self.c10_type == "CUDA"


PLATFORMS_FILE = DATA_DIR / "platforms.yaml"
KERNEL_LANGUAGES = ("CXX", "CUDA", "VENDORCXX")
# The c10 device types a platform's tensors can carry (an out-of-tree port
# registers as PrivateUse1).
C10_TYPES = ("CPU", "CUDA", "HIP", "XPU", "MPS", "PrivateUse1")

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_FLAG = re.compile(r"WITH_[A-Z][A-Z0-9_]*\Z")
_ENUMERATOR = re.compile(r"k[A-Z][A-Za-z0-9]*\Z")
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")

_ROW_KEYS = (
    "name",
    "flag",
    "device_type",
    "default",
    "torch",
    "stream",
    "kernels",
    "torch_libraries",
    "host_compiled_bridge",
    "package",
)
_TORCH_KEYS = ("device", "c10_type", "upstream", "module")
_STREAM_KEYS = ("headers", "type", "guard", "external", "current", "py_attr")
_KERNEL_KEYS = ("compiler", "language", "extensions", "flags")
_PACKAGE_KEYS = ("name", "runtime", "torch")


class _Reader:
    """Reads one table's rows, collecting located errors."""

    def __init__(self, display: str):
        self.display = display
        self.errors: list[SpecError] = []

    def fail(self, node: Node, message: str) -> None:
        self.errors.append(SpecError(self.display, node.line, node.col, message))

    def mapping(self, node: Node, what: str, keys: tuple[str, ...]) -> bool:
        if node.kind != "mapping":
            self.fail(node, f"{what} must be a mapping")
            return False
        for key in node.value:
            if key not in keys:
                self.fail(
                    node.keys[key],
                    f"unknown key '{key}' in {what}; known: {', '.join(keys)}",
                )
        return True

    def optional_mapping(
        self, row: Node, key: str, what: str, keys: tuple[str, ...]
    ) -> Node | None:
        """row's mapping under key; None when absent, null or malformed
        (reported)."""
        node = row.value.get(key)
        if node is None or node.value is None or not self.mapping(node, what, keys):
            return None
        return node

    def string(
        self, parent: Node, key: str, what: str, pattern=None, hint: str = ""
    ) -> str | None:
        node = parent.value.get(key)
        if node is None:
            self.fail(parent, f"{what} needs '{key}'")
            return None
        if not isinstance(node.value, str) or not node.value.strip():
            self.fail(node, f"'{key}' of {what} must be a non-empty string")
            return None
        if pattern is not None and not pattern.match(node.value):
            self.fail(node, f"'{key}' = '{node.value}' of {what}: {hint}")
            return None
        return node.value

    def optional_string(self, parent: Node, key: str, what: str, pattern=None, hint=""):
        node = parent.value.get(key)
        if node is None or node.value is None:
            return None
        return self.string(parent, key, what, pattern, hint)

    def flag(self, parent: Node, key: str, what: str) -> bool:
        node = parent.value.get(key)
        if node is None or node.value is None:
            return False
        if not isinstance(node.value, bool):
            self.fail(node, f"'{key}' of {what} must be true or false")
            return False
        return node.value

    def strings(self, parent: Node, key: str, what: str, required: bool = False):
        node = parent.value.get(key)
        if node is None or node.value is None:
            if required:
                self.fail(parent, f"{what} needs '{key}' (a list)")
            return ()
        if node.kind != "list" or not all(
            isinstance(n.value, str) and n.value for n in node.value
        ):
            self.fail(node, f"'{key}' of {what} must be a list of strings")
            return ()
        return tuple(n.value for n in node.value)

    def stream(self, row: Node, what: str) -> StreamSupport | None:
        what = f"the stream of {what}"
        node = self.optional_mapping(row, "stream", what, _STREAM_KEYS)
        if node is None:
            return None
        values = {k: self.string(node, k, what) for k in _STREAM_KEYS[1:]}
        for key, fields in (
            ("external", ("{stream}", "{index}")),
            ("current", ("{index}",)),
        ):
            text = values[key]
            missing = [f for f in fields if text is not None and f not in text]
            if missing:
                self.fail(
                    node.value[key],
                    f"'{key}' of {what} must use {' and '.join(fields)} "
                    f"(lacks {', '.join(missing)})",
                )
                values[key] = None
        headers = self.strings(node, "headers", what, required=True)
        if None in values.values():
            return None
        return StreamSupport(headers=headers, **values)

    def kernels(self, row: Node, what: str) -> KernelToolchain | None:
        node = row.value.get("kernels")
        what = f"the kernels of {what}"
        if node is None:
            self.fail(row, f"{what.split(' of ', 1)[1]} needs 'kernels'")
            return None
        if not self.mapping(node, what, _KERNEL_KEYS):
            return None
        compiler = self.string(node, "compiler", what)
        language = self.string(node, "language", what)
        if language is not None and language not in KERNEL_LANGUAGES:
            self.fail(
                node.value["language"],
                f"kernel language '{language}' is not one of "
                f"{', '.join(KERNEL_LANGUAGES)}",
            )
            language = None
        extensions = self.strings(node, "extensions", what, required=True)
        flags = self.strings(node, "flags", what)
        if compiler is None or language is None or not extensions:
            return None
        return KernelToolchain(compiler, language, extensions, flags)

    def package(self, row: Node, what: str) -> PortPackage | None:
        what = f"the package of {what}"
        node = self.optional_mapping(row, "package", what, _PACKAGE_KEYS)
        if node is None:
            return None
        name = self.string(node, "name", what)
        runtime = self.optional_string(node, "runtime", what)
        torch = self.optional_string(node, "torch", what)
        return PortPackage(name, runtime, torch) if name else None

    def row(self, row: Node, origin: str) -> Platform | None:
        if not self.mapping(row, "a platform", _ROW_KEYS):
            return None
        name = self.string(
            row, "name", "a platform", _NAME, "a lower-case identifier (cpu, acme)"
        )
        what = f"platform '{name}'" if name else "a platform"
        flag = self.string(row, "flag", what, _FLAG, "WITH_ and upper case (WITH_ACME)")
        enumerator = self.string(
            row, "device_type", what, _ENUMERATOR, "k and CamelCase (kAcme)"
        )
        torch = row.value.get("torch")
        device = c10_type = module = None
        upstream = False
        if torch is None:
            self.fail(row, f"{what} needs 'torch' (device, c10_type)")
        elif self.mapping(torch, f"the torch of {what}", _TORCH_KEYS):
            device = self.string(torch, "device", f"the torch of {what}")
            c10_type = self.string(torch, "c10_type", f"the torch of {what}")
            if c10_type is not None and c10_type not in C10_TYPES:
                self.fail(
                    torch.value["c10_type"],
                    f"c10_type '{c10_type}' is not one of {', '.join(C10_TYPES)}",
                )
                c10_type = None
            upstream = self.flag(torch, "upstream", f"the torch of {what}")
            module = self.optional_string(
                torch, "module", f"the torch of {what}", _MODULE, "a Python module name"
            )
        stream = self.stream(row, what)
        kernels = self.kernels(row, what)
        package = self.package(row, what)
        libraries = self.strings(row, "torch_libraries", what)
        host_compiled = self.flag(row, "host_compiled_bridge", what)
        default = self.flag(row, "default", what)
        if None in (name, flag, enumerator, device, c10_type, kernels):
            return None
        if (
            "stream" in row.value
            and row.value["stream"].value is not None
            and not stream
        ):
            return None
        return Platform(
            name=name,
            flag=flag,
            device_type=enumerator,
            torch_device=device,
            c10_type=c10_type,
            stream=stream,
            kernels=kernels,
            host_compiled_bridge=host_compiled,
            torch_libraries=libraries,
            default=default,
            upstream=upstream,
            torch_module=module,
            package=package,
            origin=origin,
        )

    def table(self, text: str, origin: str) -> list[tuple[Platform, Node]]:
        root = load_yaml(text, self.display, self.errors)
        if root is None:
            return []
        if root.kind != "mapping" or "platforms" not in root.value:
            self.fail(root, "a platform table is a mapping with a 'platforms' list")
            return []
        rows = root.value["platforms"]
        if rows.kind != "list":
            self.fail(rows, "'platforms' must be a list of platforms")
            return []
        result = []
        for node in rows.value:
            platform = self.row(node, origin)
            if platform is not None:
                result.append((platform, node))
        return result


def _check(rows: list[tuple[Platform, Node, _Reader]]) -> None:
    """Names, flags and enumerators each once (a project's row may not take
    the tool's); at most one upstream platform per c10 device type."""
    seen: dict[tuple[str, str], Platform] = {}
    upstream: dict[str, Platform] = {}
    for p, node, reader in rows:
        for key, attr in (
            ("name", "name"),
            ("flag", "flag"),
            ("device_type", "device_type"),
        ):
            value = getattr(p, attr)
            first = seen.setdefault((key, value), p)
            if first is not p:
                where = "the tool's table" if first.origin == "tool" else first.origin
                reader.fail(
                    node.value[key],
                    f"{key} '{value}' is platform '{first.name}''s already ({where})",
                )
        if p.upstream:
            first = upstream.setdefault(p.c10_type, p)
            if first is not p:
                reader.fail(
                    node.value["torch"],
                    f"'{first.name}' is already upstream for c10 device type "
                    f"{p.c10_type} (at most one platform is PyTorch's own backend)",
                )


@lru_cache(maxsize=8)
def _load(project_table: Path | None, stamp: float | None) -> tuple[Platform, ...]:
    del stamp  # part of the cache key only: an edited table is read again
    tool = _Reader(str(PLATFORMS_FILE))
    rows = [(p, n, tool) for p, n in tool.table(PLATFORMS_FILE.read_text(), "tool")]
    readers = [tool]
    if project_table is not None:
        own = _Reader(_display(project_table))
        readers.append(own)
        try:
            text = project_table.read_text(encoding="utf-8")
        except OSError as e:
            own.errors.append(SpecError(own.display, 1, 1, f"cannot read: {e}"))
        else:
            rows += [(p, n, own) for p, n in own.table(text, own.display)]
    _check(rows)
    errors = [e for r in readers for e in r.errors]
    if errors:
        raise SpecErrors(errors)
    return tuple(p for p, _, _ in rows)


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _project_table() -> Path | None:
    """The current project's platform table, if it names one."""
    from . import project

    try:
        return project.current().platforms
    except project.ProjectError:
        return None


def load_platforms(project_table: Path | None = ...) -> tuple[Platform, ...]:
    """The tool's platforms, then the project's own (the current project's
    unless a table is given; None: the tool's only). SpecErrors, located,
    when a table is malformed."""
    table = _project_table() if project_table is ... else project_table
    stamp = None
    if table is not None:
        try:
            stamp = table.stat().st_mtime
        except OSError:
            stamp = -1.0
    return _load(table, stamp)


def platform_names() -> tuple[str, ...]:
    return tuple(p.name for p in load_platforms())


def by_torch_device(device: str) -> Platform | None:
    """The platform whose tensors are on a torch device ("sim:1" -> sim):
    the first in table order carrying that device name."""
    kind = device.split(":", 1)[0]
    return next((p for p in load_platforms() if p.torch_device == kind), None)


def import_torch_module(device: str) -> None:
    """Import the Python module that makes a device's tensors (the platform
    row's torch.module: a torch port), so that `torch.device(device)` is
    known before any tensor is made there. Nothing for torch's own devices."""
    platform = by_torch_device(device)
    if platform is not None and platform.torch_module:
        import importlib

        importlib.import_module(platform.torch_module)


def parse_platforms(text: str) -> tuple[Platform, ...]:
    """`--platform cpu,nvidia` -> those platforms, in table order.
    ValueError naming the known ones for an unknown name or an empty list."""
    by_name = {p.name: p for p in load_platforms()}
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        what = f"unknown platform {', '.join(unknown)}" if unknown else "no platform"
        raise ValueError(f"{what}; choose from {', '.join(by_name)}")
    return tuple(p for p in load_platforms() if p.name in names)
