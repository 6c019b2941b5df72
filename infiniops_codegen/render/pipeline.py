"""spec dir -> model -> rendered files: the pure part of `generate`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..base.errors import SpecError, SpecErrors
from ..opspec.extensions import Extension

from ..model.ops import OpSet
from ..base.project import LibraryNames
from .sources import render
from ..model.resolve import build_opset
from ..schema.db import SchemaDB, load_schema_db
from ..opspec.entries import read_all_hints, read_specs


@dataclass(frozen=True)
class Generation:
    opset: OpSet
    files: dict[str, str]


def parse_selection(ops: str | None) -> tuple[str, tuple[str, ...]]:
    """`--ops` value -> (selection, names). None: the default set."""
    if ops is None or ops.strip() in ("", "default"):
        return "default", ()
    if ops.strip() == "all":
        return "all", ()
    names = []
    for part in ops.split(","):
        part = part.strip()
        if part.startswith("@"):  # @file: one op name per line, # comments
            names += _names_from_file(Path(part[1:]))
        elif part:
            names.append(part)
    return "names", tuple(sorted(set(names)))


def _names_from_file(path: Path) -> list[str]:
    names = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(line)
    return names


def load_opset(
    spec_dir: Path,
    ops: str | None = None,
    db: SchemaDB | None = None,
    extensions: tuple[Extension, ...] = (),
    library: LibraryNames = LibraryNames(),
) -> OpSet:
    """The model of spec_dir's ops (a selection of them), plus every op of
    the extensions (opspec/extensions.py), for the library called library."""
    if not spec_dir.is_dir():
        raise SpecErrors([SpecError(str(spec_dir), 1, 1, "spec directory not found")])
    errors: list[SpecError] = []
    specs = read_specs(spec_dir, errors)
    for ext in extensions:
        more = read_specs(ext.specs, errors, extension=ext.name)
        specs = replace(
            specs, ops=specs.ops + more.ops, sources=specs.sources + more.sources
        )
    selection, names = parse_selection(ops)
    if selection == "all":  # hints for the ops only the full set builds
        specs = replace(specs, all_hints=read_all_hints(spec_dir, errors))
    try:
        opset = build_opset(specs, db or load_schema_db(), selection, names)
    except SpecErrors as e:  # report structural and schema problems together
        raise SpecErrors(errors + e.errors) from None
    if errors:
        raise SpecErrors(errors)
    return replace(opset, names=library)


def generate(
    spec_dir: Path,
    ops: str | None = None,
    extensions: tuple[Extension, ...] = (),
    library: LibraryNames = LibraryNames(),
) -> Generation:
    opset = load_opset(spec_dir, ops, extensions=extensions, library=library)
    return Generation(opset, render(opset))
