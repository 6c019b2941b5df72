"""`infiniops-codegen list`: the ops of a generation and where each runs
(model/coverage.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..toolchain import builder
from ..render import pipeline
from ..base import project as projects
from ..base.errors import SpecErrors
from ..base.locations import MANIFEST
from ..base.locations import shown as _rel
from ..model.resolve import SelectionError
from .common import EXIT_USAGE, error, generation_failed, project, shown_dir
from .options import SPECS_OPTION, VERBOSE_OPTION

_STATUS_COLOURS = {
    "native": "green",
    "torch": None,
    "missing": "red",
    "no-source": "yellow",
}


@click.command("list")
@click.option("--op", "op_name", default=None, metavar="NAME", help="Show one op.")
@click.option(
    "--available",
    is_flag=True,
    help="List the ATen out= overloads the generator can express that the "
    "specs do not have yet (what a spec line may name); needs no build.",
)
@click.option(
    "--match",
    "pattern",
    default=None,
    metavar="TEXT",
    help="With --available: only overloads whose name contains TEXT, or "
    "matches it as a glob ('*', '?', '[...]'); case-insensitive.",
)
@SPECS_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option(
    "--build-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Read the manifest.json of this build directory.",
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Read this manifest [default: the project's generated/manifest.json].",
)
@click.option(
    "--platform",
    "platform_names",
    default=None,
    metavar="NAMES",
    help="Platforms to show (names separated by commas, or 'all') [default: "
    "a build directory's own platforms; else cpu and those with a native "
    "kernel].",
)
@VERBOSE_OPTION
@click.pass_context
def list_ops(
    ctx,
    op_name,
    available,
    pattern,
    spec_dir,
    as_json,
    build_dir,
    manifest_path,
    platform_names,
):
    """The coverage matrix: op x platform -> native kernel, torch fallback or
    missing, from a manifest (nothing is built). With --available: the ATen
    out= overloads that could be added to the specs.

    \b
    Examples:
      infiniops-codegen list                    # the table, generated/manifest.json
      infiniops-codegen list --json
      infiniops-codegen list --op add           # signature and implementations
      infiniops-codegen list --build-dir build-small
      infiniops-codegen list --platform all     # every platform of the table
      infiniops-codegen list --available --match hypot
    """
    import json

    from ..model import coverage, manifest as manifest_reader

    if available:
        others = [
            name
            for name, given in (
                ("--op", op_name),
                ("--build-dir", build_dir),
                ("--manifest", manifest_path),
                ("--platform", platform_names),
            )
            if given is not None
        ]
        if others:
            error(f"--available reads the specs, not a manifest: drop {others[0]}")
            sys.exit(EXIT_USAGE)
        _list_available(ctx, spec_dir, pattern, as_json)
        return
    if pattern is not None or spec_dir is not None:
        error(
            f"{'--match' if pattern is not None else '--specs'} only applies to "
            "--available (the ATen out= overloads not in the specs)"
        )
        sys.exit(EXIT_USAGE)
    proj = None
    if manifest_path is None:
        proj = project(ctx) if build_dir is None else None
        manifest_path = (build_dir or proj.generated) / MANIFEST
    try:
        manifest = manifest_reader.read(manifest_path)
    except manifest_reader.ManifestError as e:
        error(str(e))
        sys.exit(EXIT_USAGE)
    shown, hidden_note = _listed_platforms(manifest, manifest_path, platform_names)
    unwritten = _unwritten_kernels(manifest, proj)
    try:
        details = (
            coverage.op_details(manifest, op_name, shown, unwritten)
            if op_name
            else None
        )
    except manifest_reader.ManifestError as e:
        # difflib's close names, else other places the name may be
        hinted = "did you mean" in str(e)
        error(str(e) + ("" if hinted else _not_in_manifest_hint(op_name, manifest)))
        sys.exit(EXIT_USAGE)
    if details is not None and details["aten"]:
        details["installed_torch"] = _installed_schema(
            details["aten"], details["schema"]
        )
    if ctx.obj["verbose"]:
        from ..base import torch_build
        from ..base.locations import TORCH_RECORD

        try:  # a build directory's manifest: the torch the build is against
            built = torch_build.read_record(manifest_path.parent / TORCH_RECORD)
        except ValueError:
            built = None
        click.echo(
            f"manifest {_rel(manifest_path)}: selection {manifest.selection}"
            + (f", built against torch {built}" if built else ""),
            err=True,
        )
    notes = [
        f"{m.platform}: the spec of {m.op} gives it a native kernel, but "
        f"{m.shown(proj.rel)} does not exist yet ('build' stops at CMake "
        "configure until it is written)"
        for m in unwritten.values()
        if details is None or m.op == details["name"]
    ]
    if as_json:
        data = details or coverage.matrix_json(
            manifest, _rel(manifest_path), shown, unwritten
        )
        data["platforms_not_shown"] = [p for p in manifest.platforms if p not in shown]
        click.echo(json.dumps(data, indent=1))
        return
    if details:
        lines = coverage.op_text(details)
    else:

        def style(text: str, status: str) -> str:
            colour = _STATUS_COLOURS.get(status)
            return click.style(text, fg=colour) if colour else text

        lines = coverage.matrix_table(manifest, style, shown, unwritten)
    for line in lines:
        click.echo(line)
    for note in notes:
        click.secho(f"{coverage.NO_SOURCE}: {note}", fg="yellow")
    if hidden_note:
        click.echo(hidden_note)


def _listed_platforms(
    manifest, manifest_path: Path, names: str | None
) -> tuple[tuple[str, ...], str | None]:
    """list's platforms (coverage.listed_platforms): --platform's, else those
    of the build directory holding the manifest, if it is one."""
    from ..model import coverage
    from ..base.platforms import load_platforms, parse_platforms

    if names is not None and names.strip() == "all":
        return manifest.platforms, None
    if names is not None:
        try:
            wanted = {p.name for p in parse_platforms(names)}
        except ValueError as e:
            error(f"--platform {names}: {e}")
            sys.exit(EXIT_USAGE)
        return tuple(p for p in manifest.platforms if p in wanted), None
    built = builder.built_platforms(manifest_path.parent)
    default = tuple(p.name for p in load_platforms() if p.default)
    where = _rel(manifest_path.parent) if built is not None else None
    return coverage.listed_platforms(manifest, default, built, where)


def _unwritten_kernels(manifest, proj: projects.Project | None) -> dict:
    """(op, platform) -> kernel_sources.Missing for the project's own ops
    whose native kernel source does not exist yet; {} without a project."""
    from ..model import kernel_sources

    if proj is None:
        return {}
    natives = (
        (op.name, tuple(op.implementations.native))
        for op in manifest.ops
        if op.implementations.native and not op.extension
    )
    return {
        (m.op, m.platform): m for m in kernel_sources.missing(proj.kernels, natives)
    }


def _not_in_manifest_hint(name: str, manifest) -> str:
    """list --op NAME without a close match (coverage.not_found_hint), with
    the installed torch's out= overloads when torchgen can load them."""
    from ..model import coverage

    try:
        from ..schema.db import load_schema_db

        overloads = tuple(load_schema_db().out_overloads)
    except Exception:  # no torch, or torchgen failing: no ATen names to offer
        overloads = ()
    return coverage.not_found_hint(name, manifest, overloads)


def _installed_schema(aten: str, schema: str) -> dict | None:
    """list --op: where the installed torch's schema of the overload differs
    from the manifest's (an argument renamed, retyped, added, ...); None when
    it does not, or no torch is installed (a manifest is read without one)."""
    from ..render import drift
    from ..schema.db import load_schema_db

    try:
        db = load_schema_db()
    except Exception:  # no torch, or torchgen failing: nothing to compare with
        return None
    installed = db.out_overloads.get(aten)
    if installed is not None and installed.schema == schema:
        return None
    return {
        "version": db.torch_version,
        "schema": installed.schema if installed else None,
        "changes": drift.schema_changes(schema, installed.schema) if installed else [],
    }


def _list_available(
    ctx: click.Context, spec_dir: Path | None, pattern: str | None, as_json: bool
) -> None:
    """list --available: what `--ops all` adds to the specs (every expressible
    out= overload they do not name), filtered by --match."""
    import json

    from ..model import coverage

    proj = project(ctx) if spec_dir is None else None
    spec_dir = spec_dir or proj.specs
    try:
        opset = pipeline.load_opset(spec_dir, "all")
    except (SpecErrors, SelectionError) as e:
        generation_failed(e)
    rows = coverage.available(opset.ops)
    shown = [r for r in rows if coverage.matches(r.aten, pattern)]
    # overloads the specs already have that the pattern names: say so, rather
    # than a bare "0" for someone looking for an op the set already has
    present = sorted(
        op.aten
        for op in opset.ops
        if op.aten and op.source != "<all>" and coverage.matches(op.aten, pattern)
    )
    specs = f"{shown_dir(spec_dir, proj)}/"
    if as_json:
        data = {
            "specs": specs,
            "torch_version": opset.torch_version,
            "match": pattern,
            "count": len(shown),
            "available": len(rows),
            "overloads": [r._asdict() for r in shown],
        }
        if pattern is not None:
            data["in_specs"] = present
        click.echo(json.dumps(data, indent=1))
        return
    for line in coverage.available_lines(shown):
        click.echo(line)
    if pattern is None:
        click.echo(
            f"{len(rows)} expressible ATen out= overloads are not in {specs}; "
            "add one as a line '- <overload>' of a spec file (docs/adding-an-op.md)"
        )
    else:
        click.echo(
            f"{len(shown)} of the {len(rows)} expressible ATen out= overloads not "
            f"in {specs} match '{pattern}'"
            + ("; add one as a line '- <overload>' of a spec file" if shown else "")
        )
        if present:
            more = f" and {len(present) - 5} more" if len(present) > 5 else ""
            click.echo(f"already in {specs}: {', '.join(present[:5])}{more}")
    if ctx.obj["verbose"]:
        for e in opset.exclusions:
            click.echo(f"  not expressible: {e.aten}: {e.reason}", err=True)
