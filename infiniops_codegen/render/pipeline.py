"""spec dir -> model -> rendered files: the pure part of `generate`."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from ..base.errors import SpecError, SpecErrors
from ..opspec.extensions import Extension

from ..model.ops import OpSet
from ..base.project import LibraryNames
from . import covering, drift
from ..base.locations import MANIFEST
from .sources import manifest_data, render
from ..model.resolve import build_opset
from ..schema.db import SchemaDB, load_schema_db
from ..opspec.entries import read_all_hints, read_specs


@dataclass(frozen=True)
class Generation:
    opset: OpSet
    files: dict[str, str]


# `--ops covering[,NAME...]`: the covering selection of the default set
# (covering.py), with these ops in it too.
COVERING = "covering"


def parse_selection(ops: str | None) -> tuple[str, tuple[str, ...]]:
    """`--ops` value -> (selection, names). None: the default set."""
    if ops is None or ops.strip() in ("", "default"):
        return "default", ()
    if ops.strip() == "all":
        return "all", ()
    names = []
    selection = "names"
    for part in ops.split(","):
        part = part.strip()
        if part.startswith("@"):  # @file: one op name per line, # comments
            names += _names_from_file(Path(part[1:]))
        elif part == COVERING:
            selection = COVERING
        elif part:
            names.append(part)
    return selection, tuple(sorted(set(names)))


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
    reference: Path | None = None,
) -> OpSet:
    """The model of spec_dir's ops (a selection of them), plus every op of
    the extensions (opspec/extensions.py), for the library called library.
    reference: the committed generated/ of the default set, whose ops this
    torch's schemas change join a covering selection."""
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
        if selection == COVERING:
            opset = _covering(specs, db or load_schema_db(), names, reference)
        else:
            opset = build_opset(specs, db or load_schema_db(), selection, names)
    except SpecErrors as e:  # report structural and schema problems together
        raise SpecErrors(errors + e.errors) from None
    if errors:
        raise SpecErrors(errors)
    return replace(opset, names=library)


def _covering(specs, db: SchemaDB, names, reference: Path | None) -> OpSet:
    """The covering selection of the default set (covering.py), with the
    ops named and those whose schemas on this torch differ from the
    reference's (a release's drift is compiled and tested too)."""
    whole = build_opset(specs, db, "default")
    required = set(names) | drifted_ops(whole, reference)
    chosen = covering.select(
        whole, lambda some: build_opset(specs, db, "names", some), required
    )
    opset = build_opset(specs, db, "names", chosen)
    label = ",".join((COVERING, *sorted(names)))
    return replace(opset, selection=label)


def drifted_ops(opset: OpSet, reference: Path | None) -> set[str]:
    """The ops of opset whose ATen facts but their tags differ from those of
    the manifest in reference (drift.py), and those serving a function
    whose torch signatures differ; none when reference holds no manifest."""
    if reference is None:
        return set()
    new = json.loads(json.dumps(manifest_data(opset)))
    try:
        old = json.loads((reference / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    if not isinstance(old, dict) or not isinstance(old.get("ops"), list):
        return set()
    # Tags are data the registration lists, the same code whatever they are
    # (those that choose a path are features of the covering selection).
    changed = {c.overload for c in drift.changes(old, new) if not drift.tags_only(c)}
    by_function = {f"torch.{f.name}": f for f in opset.functions}
    result = {op.name for op in opset.ops if (op.aten or op.name) in changed}
    for key in changed & by_function.keys():
        result |= {op.name for op in by_function[key].ops}
    return result


def generate(
    spec_dir: Path,
    ops: str | None = None,
    extensions: tuple[Extension, ...] = (),
    library: LibraryNames = LibraryNames(),
    reference: Path | None = None,
) -> Generation:
    opset = load_opset(
        spec_dir, ops, extensions=extensions, library=library, reference=reference
    )
    return Generation(opset, render(opset))
