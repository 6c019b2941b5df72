"""`infiniops-codegen generate [--check]`: op specs into generated/ (render/)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..toolchain import builder
from ..render import pipeline, writer
from ..base import project as projects
from ..base.locations import shown as _rel
from .common import EXIT_DIFF, project, run_generation, shown_dir, write_or_exit
from .options import (
    EXTENSION_OPTION,
    FORCE_OPTION,
    OPS_OPTION,
    SPECS_OPTION,
    VERBOSE_OPTION,
)


@click.command()
@SPECS_OPTION
@OPS_OPTION
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output directory [default: the project's generated/ for its default "
    "op set, <build dir>/generated/ for anything else, as with 'build'].",
)
@click.option(
    "--build-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The build directory whose generated/ takes a non-default generation "
    "[default: the project's, build/].",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 listing every stale, missing or extra file "
    "and every generated file edited by hand (-v: the whole diff).",
)
@FORCE_OPTION
@EXTENSION_OPTION
@VERBOSE_OPTION
@click.pass_context
def generate(
    ctx,
    spec_dir: Path | None,
    ops: str | None,
    out_dir: Path | None,
    build_dir: Path | None,
    check: bool,
    force: bool,
    extension_dirs: tuple[Path, ...],
):
    """Render op specs into C++ sources, a .pyi stub and a manifest.

    A generated file edited by hand is not overwritten without --force: the
    change belongs in the specs or the templates.

    \b
    Examples:
      infiniops-codegen generate
      infiniops-codegen generate --check
      infiniops-codegen generate --ops all    # -> build/generated/
    """
    start = time.perf_counter()
    # With both --specs and --out given, no project is needed.
    proj = project(ctx) if spec_dir is None or out_dir is None else None
    spec_dir = spec_dir or proj.specs
    library = proj.names if proj is not None else projects.LibraryNames()
    reference = proj.generated if proj is not None else None
    gen = run_generation(spec_dir, ops, extension_dirs, library, reference)
    # The rule `build` follows (builder.generated_dir_for).
    out = out_dir or builder.generated_dir_for(
        builder.BuildRequest(
            project=proj,
            spec_dir=spec_dir,
            ops=ops,
            build_dir=build_dir,
            extensions=tuple(extension_dirs),
        )
    )
    if check:
        fix = _fix_command(ctx)
        sys.exit(_check(gen, out, proj, spec_dir, fix, ctx.obj["verbose"]))
    drifted = _drift_lines(gen, out, shown_dir(out, proj), ctx.obj["verbose"])
    result = write_or_exit(gen.files, out, force, proj, spec_dir)
    elapsed = time.perf_counter() - start
    opset = gen.opset
    for line in drifted:  # written anyway: generate does what it is told
        click.secho(line, fg="yellow", err=True)
    for line in _kernels_to_write(opset, proj, extension_dirs):
        click.secho(line, fg="yellow", err=True)
    click.echo(
        f"generated {len(opset.ops)} ops into {_rel(out)}/: "
        f"{len(result.stale) + len(result.missing)} written, "
        f"{len(result.extra)} removed, {len(result.unchanged)} unchanged "
        f"({elapsed:.2f} s)"
    )
    if opset.exclusions:
        click.echo(
            f"{len(opset.exclusions)} out= overloads are not expressible "
            "(see 'exclusions' in manifest.json)"
        )
    if ctx.obj["verbose"]:
        for rel in result.stale + result.missing:
            click.echo(f"  wrote {rel}")
        for rel in result.extra:
            click.echo(f"  removed {rel}")
        for e in opset.exclusions:
            click.echo(f"  excluded {e.aten}: {e.reason}")


def _drift_lines(
    gen: pipeline.Generation, out: Path, shown: str, verbose: bool
) -> list[str]:
    """Where the installed torch's schemas differ from those `out` was
    generated with, by overload ([] when they do not)."""
    from ..render import drift

    found = drift.between(out, gen.files)
    if not found:
        return []
    return [
        f"the installed torch {gen.opset.torch_version}'s ATen schemas differ from "
        f"those {shown}/ was generated with, for {drift.counted(found)}:",
        *("  " + line for line in drift.lines(found, None if verbose else DRIFT_LIMIT)),
    ]


DRIFT_LIMIT = 40  # drift lines --check and generate show (-v: every line)
DIFF_LIMIT = 200  # diff lines --check shows in all (-v: every line)


def _fix_command(ctx: click.Context) -> str:
    """The `generate` command that brings the checked directory up to date:
    this one's options without --check."""
    import shlex

    words = ["infiniops-codegen"]
    root = ctx.parent.params.get("project_dir") if ctx.parent else None
    if root is not None:
        words += ["--project", str(root)]
    words.append("generate")
    for name, option in (
        ("spec_dir", "--specs"),
        ("ops", "--ops"),
        ("out_dir", "--out"),
        ("build_dir", "--build-dir"),
    ):
        if ctx.params.get(name) is not None:
            words += [option, str(ctx.params[name])]
    return " ".join(shlex.quote(w) for w in words)


def _check(
    gen: pipeline.Generation,
    out: Path,
    proj: projects.Project | None,
    spec_dir: Path,
    fix: str,
    verbose: bool = False,
) -> int:
    """--check: the summary and the fix first, then one line per file (paths
    as shown from the project root), then the diffs, capped (-v: all)."""
    cmp = writer.compare(gen.files, out)
    shown = shown_dir(out, proj)
    if cmp.clean:
        click.echo(f"{shown}/ is up to date ({len(cmp.unchanged)} files)")
        return 0
    edited = set(cmp.edited)
    stale = [rel for rel in cmp.stale if rel not in edited]
    extra = [rel for rel in cmp.extra if rel not in edited]
    counts = [
        f"{len(stale)} stale",
        f"{len(cmp.missing)} missing",
        f"{len(extra)} extra",
    ]
    if edited:
        counts.insert(0, f"{len(edited)} edited by hand")
    if cmp.foreign:
        counts.append(f"{len(cmp.foreign)} not generated")

    def say(line: str, colour: str = "red") -> None:  # the summary and the fix
        click.secho(line, fg=colour, err=True)

    say(f"{shown}/ is out of date: {', '.join(counts)} (of {len(gen.files)} files)")
    if edited:
        names = ", ".join(f"{shown}/{rel}" for rel in cmp.edited)
        was = "was" if len(edited) == 1 else "were"
        say(
            f"{names} {was} edited by hand: generated files are rewritten from the "
            f"specs and templates; put the change in {shown_dir(spec_dir, proj)}/ or "
            "the templates, "
            f"then run '{fix} --force' (which discards the edit)"
        )
    if cmp.foreign:
        say(
            f"files without the '{writer.MARKER}' line are in the way: move them "
            f"away or delete them, then run '{fix}'"
        )
    if not edited and not cmp.foreign:
        say(f"run '{fix}' to update it")
    drifted = _drift_lines(gen, out, shown, verbose)
    for line in drifted:
        say(line, "yellow")
    if drifted and proj is not None and out == proj.generated:
        say(
            f"{shown}/ is committed with one release's schemas: 'infiniops-codegen "
            f"build' with this torch generates into <build dir>/generated/ and "
            f"leaves {shown}/ as it is (docs/torch-releases.md)",
            "yellow",
        )
    for rel in cmp.edited:
        click.echo(f"edited by hand: {shown}/{rel}")
    for rel in stale:
        click.echo(f"stale: {shown}/{rel}")
    for rel in cmp.missing:
        click.echo(f"missing: {shown}/{rel}")
    for rel in extra:
        click.echo(f"extra: {shown}/{rel} (generated earlier, no longer produced)")
    for rel in cmp.foreign:
        click.echo(f"not generated: {shown}/{rel} (exists without the @generated line)")
    budget = None if verbose else DIFF_LIMIT
    cut_lines = cut_files = 0
    for rel in [r for r in cmp.stale if r in edited] + stale:
        lines = writer.diff_lines(gen.files, out, rel, f"{shown}/{rel}")
        if budget is not None:
            shown_lines, budget = lines[:budget], max(0, budget - len(lines))
            if len(shown_lines) < len(lines):
                cut_lines += len(lines) - len(shown_lines)
                cut_files += 1
            lines = shown_lines
        click.echo("".join(lines), nl=False)
    if cut_lines:
        noun = "file" if cut_files == 1 else "files"
        click.echo(
            f"... {cut_lines} more diff lines not shown ({cut_files} {noun}; "
            "-v shows them all)"
        )
    return EXIT_DIFF


def _kernels_to_write(
    opset, proj: projects.Project | None, extension_dirs=()
) -> list[str]:
    """generate's warnings: native kernels the specs declare (the project's,
    an extension's) whose source does not exist yet (the build would stop
    at CMake configure)."""
    from ..opspec import extensions
    from ..model import kernel_sources

    roots = {"": proj.kernels} if proj is not None else {}
    roots.update({e.name: e.kernels for e in extensions.load_all(extension_dirs)})
    lines = []
    for owner, root in roots.items():
        ops = [op for op in opset.ops if op.native and op.extension == owner]
        natives = ((op.name, [n.platform for n in op.native]) for op in ops)
        source = {op.name: op.source for op in ops}
        lines += [
            f"warning: {source[m.op]}: the spec of {m.op} gives it a native "
            f"{m.platform} kernel, but {m.shown(lambda d: shown_dir(d, proj))} "
            "does not exist yet: write it "
            "(docs/adding-an-op.md), or 'build' stops before it configures"
            for m in kernel_sources.missing(root, natives)
        ]
    return lines
