"""The manifest, typed: what a generation (`generated/manifest.json`) or a
build (`<build-dir>/manifest.json`) holds, read once into frozen records.

The generator writes it (render.manifest_data); the correctness harness, the
bench and `infiniops-codegen list` read it only through this module. Standard
library and the argument-kind records (`arg_kinds`, pure data) only: reading
a manifest needs neither the generator nor torch.

    from infiniops_codegen import manifest
    m = manifest.of_build("build")        # or manifest.read(path)
    add = m.op("add")
    add.python_signature, [a.python_name for a in add.inputs]
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..schema.arg_kinds import BY_NAME as KINDS
from ..schema.arg_kinds import ArgKind
from ..base.locations import MANIFEST

# Argument roles (model.Role values).
INPUT, ATTRIBUTE, OUTPUT, HIDDEN = "input", "attribute", "output", "hidden"
ROLES = (INPUT, ATTRIBUTE, OUTPUT, HIDDEN)


class ManifestError(Exception):
    """A manifest cannot be read, is not one, or lacks an op; the message
    says which file and why, in one line."""


@dataclass(frozen=True)
class Argument:
    name: str  # schema name
    python_name: str  # the keyword of the Python API
    kind: ArgKind | None  # the argument's kind; None for hidden arguments
    role: str  # input / attribute / output / hidden
    keyword_only: bool
    has_default: bool
    default: object = field(hash=False)  # its Python value (None: none or None)
    mutable: bool  # an input the op writes (`Tensor(a!)`, not an output)
    aten_type: str  # schema type text, e.g. "Tensor?", "int[2]"
    cpp_type: str  # the ATen C++ parameter type
    core_type: str  # the library's C++ parameter type

    @property
    def hidden(self) -> bool:
        return self.role == HIDDEN


@dataclass(frozen=True)
class Implementations:
    torch: tuple[str, ...]  # platforms with the torch fallback
    # platform -> dtypes of its kernel
    native: Mapping[str, tuple[str, ...]] = field(hash=False)
    # platform -> dtype -> most elements for which native is the default
    native_up_to: Mapping[str, Mapping[str, int]] = field(hash=False)

    def native_dtypes(self, platform: str) -> tuple[str, ...]:
        return self.native.get(platform, ())

    def native_limit(self, platform: str, dtype: str) -> int | None:
        """Most elements for which the native kernel is the default; None: any."""
        return self.native_up_to.get(platform, {}).get(dtype)


@dataclass(frozen=True)
class Op:
    name: str  # the module's function
    aten: str | None  # ATen out= overload; None for a composite
    composite: bool
    source: str  # the spec file
    schema: str  # the ATen schema (a composite's declared signature)
    python_signature: str | None  # as the .pyi stub declares it
    arguments: tuple[Argument, ...]  # schema order, hidden ones included
    outputs: tuple[str, ...]  # Python names of the outputs
    implementations: Implementations
    cpu_kernel: bool
    direct_cpu: bool  # plain CPU tensors call at::cpu::<op>_out
    functional: str | None  # the functional ATen overload
    tags: tuple[str, ...]
    reference: str | None  # a composite's reference expression
    shard: int
    hints: Mapping = field(hash=False, compare=False)  # the spec's harness hints
    extension: str = ""  # the extension that defines the op ("": the project)
    return_type: str | None = None  # torch.return_types.<name> of the outputs
    out_optional: bool = False  # a call may leave out= out
    reference_line: int | None = None  # the reference's line in `source`
    # its overloads in torch.ops.<library name>: {"out", "functional",
    # "aten_functional"} (render/torch_library.py; empty: a build that predates them)
    dispatcher: Mapping = field(default_factory=dict, hash=False, compare=False)

    @property
    def visible(self) -> tuple[Argument, ...]:
        """The arguments of the Python API (hidden ones are passed as None)."""
        return tuple(a for a in self.arguments if not a.hidden)

    @property
    def inputs(self) -> tuple[Argument, ...]:
        """Visible arguments that are not outputs (tensors and attributes)."""
        return tuple(a for a in self.visible if a.role != OUTPUT)

    @property
    def out_args(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.visible if a.role == OUTPUT)

    @property
    def mutable_inputs(self) -> tuple[str, ...]:
        """Schema names of the inputs the op writes in place (`Tensor(b!)`:
        optimizer and running-statistics state), in schema order."""
        return tuple(a.name for a in self.arguments if a.mutable)

    def argument(self, name: str) -> Argument:
        """An argument by schema name."""
        for a in self.arguments:
            if a.name == name:
                return a
        raise KeyError(f"{self.name} has no argument '{name}'")


@dataclass(frozen=True)
class Exclusion:
    aten: str
    reason: str


@dataclass(frozen=True)
class Overload:
    """One signature of a module function (overloads.py), in the order
    its argument parser tries them."""

    signature: str  # torch's spelling
    aten: str  # the ATen overload it stands for
    op: str | None  # the op serving it; None: not in this build


@dataclass(frozen=True)
class Manifest:
    path: Path | None  # where it was read from
    selection: str  # default / all / the names of --ops
    platforms: tuple[str, ...]  # every platform of data/platforms.yaml
    sources: tuple[str, ...]
    shard_count: int
    shard_size: int
    ops: tuple[Op, ...]  # sorted by name
    exclusions: tuple[Exclusion, ...]
    # relative path -> content hash (render.content_hash) of every file the
    # generation wrote besides the manifest; empty in older manifests
    files: Mapping[str, str] = field(default_factory=dict, hash=False)
    # ops.<name> as torch.<name>: name -> its signatures, in order
    functions: Mapping[str, tuple[Overload, ...]] = field(
        default_factory=dict, hash=False
    )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.ops)

    def by_name(self) -> dict[str, Op]:
        return {op.name: op for op in self.ops}

    def op(self, name: str) -> Op:
        """An op by public name or ATen overload; ManifestError (with the
        closest names) when there is none."""
        for op in self.ops:
            if op.name == name or op.aten == name:
                return op
        close = difflib.get_close_matches(name, self.names, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ManifestError(f"no op '{name}' in the manifest{hint}")


# -- reading ------------------------------------------------------------------


def read(path: str | Path) -> Manifest:
    """Read and check a manifest file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(
            f"{path}: no manifest; run 'infiniops-codegen generate' (or build)"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ManifestError(f"{path}: cannot read the manifest: {e}") from None
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{path}:{e.lineno}:{e.colno}: not a valid manifest: {e.msg}"
        ) from None
    return from_data(data, path)


def of_build(build_dir: str | Path) -> Manifest:
    """The manifest a build directory holds (what its module was built from)."""
    return read(Path(build_dir) / MANIFEST)


def generated(directory: str | Path | None = None) -> Manifest:
    """The manifest of a generated directory (default: the project's
    committed one)."""
    if directory is None:
        from ..base.project import current

        directory = current().generated
    return read(Path(directory) / MANIFEST)


def from_data(data: object, path: Path | None = None) -> Manifest:
    """A manifest from its JSON data (render.manifest_data's shape)."""
    where = str(path) if path is not None else "manifest"
    if not isinstance(data, dict) or not isinstance(data.get("ops"), list):
        raise ManifestError(f"{where}: not an infiniops-codegen manifest (no 'ops')")
    r = _Reader(where)
    platforms = tuple(r.get(data, "platforms", list, "the manifest"))
    ops = tuple(
        sorted(
            (_op(r, entry, k, platforms) for k, entry in enumerate(data["ops"])),
            key=lambda op: op.name,
        )
    )
    return Manifest(
        path=path,
        selection=r.get(data, "selection", str, "the manifest"),
        platforms=platforms,
        sources=tuple(data.get("sources") or ()),
        shard_count=r.get(data, "shard_count", int, "the manifest"),
        shard_size=r.get(data, "shard_size", int, "the manifest"),
        ops=ops,
        exclusions=tuple(
            Exclusion(r.get(e, "aten", str, "an exclusion"), e.get("reason", ""))
            for e in data.get("exclusions") or ()
        ),
        files=_files(r, data),
        functions={
            name: tuple(
                Overload(
                    r.get(o, "signature", str, f"function {name}"),
                    r.get(o, "aten", str, f"function {name}"),
                    o.get("op"),
                )
                for o in overloads
            )
            for name, overloads in (
                r.get(data, "functions", dict, "the manifest", None) or {}
            ).items()
        },
    )


def _files(r: "_Reader", data: dict) -> dict[str, str]:
    files = r.get(data, "files", dict, "the manifest", None) or {}
    for rel, digest in files.items():
        if not isinstance(digest, str):
            raise ManifestError(
                f"{r.where}: 'files' entry '{rel}' is a {type(digest).__name__}, "
                "not a hash string"
            )
    return dict(files)


def recorded_hashes(directory: str | Path) -> dict[str, str]:
    """The "files" hashes of a generated directory's manifest, read on their
    own (the rest of the manifest may be stale or of another version); {}
    when there is no readable manifest or it records none."""
    try:
        data = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


_MISSING = object()


class _Reader:
    """Field access that names the file, the op and the field on failure."""

    def __init__(self, where: str):
        self.where = where

    def get(self, data, key: str, kind, what: str, default=_MISSING):
        if not isinstance(data, dict):
            raise ManifestError(f"{self.where}: {what} is not a mapping")
        value = data.get(key, default)
        if value is _MISSING:
            raise ManifestError(
                f"{self.where}: {what} has no '{key}' (written by another "
                "version of infiniops-codegen? run 'infiniops-codegen generate')"
            )
        if value is not None and not isinstance(value, kind):
            raise ManifestError(
                f"{self.where}: '{key}' of {what} is a {type(value).__name__}, "
                f"not a {kind.__name__}"
            )
        return value


def _argument(r: _Reader, a, what: str) -> Argument:
    role = r.get(a, "role", str, what)
    if role not in ROLES:
        raise ManifestError(f"{r.where}: {what} has the unknown role '{role}'")
    kind = r.get(a, "kind", str, what, None)
    if kind is not None and kind not in KINDS:
        raise ManifestError(
            f"{r.where}: {what} has the unknown kind '{kind}' (written by another "
            "version of infiniops-codegen? run 'infiniops-codegen generate')"
        )
    return Argument(
        name=r.get(a, "name", str, what),
        python_name=r.get(a, "python_name", str, what),
        kind=None if kind is None else KINDS[kind],
        role=role,
        keyword_only=r.get(a, "keyword_only", bool, what),
        has_default=r.get(a, "has_default", bool, what),
        default=a.get("default"),
        mutable=r.get(a, "mutable", bool, what, False),
        aten_type=r.get(a, "aten_type", str, what),
        cpp_type=r.get(a, "cpp_type", str, what, ""),
        core_type=r.get(a, "core_type", str, what, ""),
    )


def _implementations(r: _Reader, data, what: str, platforms) -> Implementations:
    torch = r.get(data, "torch", (str, list), what, "all")
    if torch == "all":
        torch = platforms
    elif isinstance(torch, str):
        raise ManifestError(f"{r.where}: 'torch' of {what} is '{torch}', not 'all'")
    native = r.get(data, "native", dict, what, {})
    up_to = r.get(data, "native_up_to", dict, what, {})
    return Implementations(
        torch=tuple(torch),
        native={p: tuple(d) for p, d in native.items()},
        native_up_to={p: dict(limits) for p, limits in up_to.items()},
    )


def _op(r: _Reader, entry, index: int, platforms) -> Op:
    what = f"op {index}"
    name = r.get(entry, "name", str, what)
    what = f"op '{name}'"
    arguments = tuple(
        _argument(r, a, f"argument {k} of {what}")
        for k, a in enumerate(r.get(entry, "arguments", list, what))
    )
    return Op(
        name=name,
        aten=r.get(entry, "aten", str, what),
        composite=r.get(entry, "composite", bool, what),
        source=r.get(entry, "source", str, what, ""),
        schema=r.get(entry, "schema", str, what),
        python_signature=r.get(entry, "python_signature", str, what, None),
        arguments=arguments,
        outputs=tuple(r.get(entry, "outputs", list, what)),
        implementations=_implementations(
            r, r.get(entry, "implementations", dict, what), what, platforms
        ),
        cpu_kernel=bool(r.get(entry, "cpu_kernel", bool, what, False)),
        direct_cpu=bool(r.get(entry, "direct_cpu", bool, what, False)),
        functional=r.get(entry, "functional", str, what, None),
        tags=tuple(r.get(entry, "tags", list, what, None) or ()),
        reference=r.get(entry, "reference", str, what, None),
        shard=r.get(entry, "shard", int, what, 0),
        hints=dict(r.get(entry, "hints", dict, what, None) or {}),
        extension=r.get(entry, "extension", str, what, ""),
        return_type=r.get(entry, "return_type", str, what, None),
        out_optional=r.get(entry, "out_optional", bool, what, False),
        reference_line=r.get(entry, "reference_line", int, what, None),
        dispatcher=dict(r.get(entry, "dispatcher", dict, what, None) or {}),
    )
