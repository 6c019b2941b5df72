"""The `infiniops-codegen` command line.

Exit codes: 0 success, 1 `--check` found differences (or a build/run failed),
2 usage or spec error.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from . import __version__, builder, pipeline, writer
from . import project as projects
from .errors import SpecErrors
from .locations import MANIFEST
from .resolve import SelectionError
from .schema_db import torch_version

EXIT_DIFF = 1
EXIT_USAGE = 2


def error(message: str) -> None:
    """One line on stderr; red on a terminal, plain otherwise."""
    click.secho(f"error: {message}", fg="red", err=True)


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def project(ctx: click.Context) -> projects.Project:
    """The project this run works on (--project, else the nearest at or above
    the working directory), made current for the library; exit 2 when there
    is none."""
    obj = ctx.ensure_object(dict)
    if obj.get("project") is None:
        try:
            named = obj.get("project_dir")
            found = projects.load(named) if named else projects.discover()
        except projects.ProjectError as e:
            error(str(e))
            sys.exit(EXIT_USAGE)
        except OSError as e:
            error(f"cannot read the project's pyproject.toml: {e}")
            sys.exit(EXIT_USAGE)
        projects.use(found)
        obj["project"] = found
    return obj["project"]


def run_generation(spec_dir: Path, ops: str | None) -> pipeline.Generation:
    """Generate, turning spec problems into exit code 2 with located lines."""
    try:
        return pipeline.generate(spec_dir, ops)
    except (SpecErrors, SelectionError) as e:
        _generation_failed(e)
    except OSError as e:
        error(f"cannot read an --ops file: {e}")
        sys.exit(EXIT_USAGE)


def _generation_failed(e: SpecErrors | SelectionError) -> None:
    """Spec problems, one located line each, or an unknown --ops name: exit 2."""
    if isinstance(e, SelectionError):
        error(str(e))
        sys.exit(EXIT_USAGE)
    for err in e.errors:
        click.secho(str(err), fg="red", err=True)
    noun = "problem" if len(e.errors) == 1 else "problems"
    click.echo(f"{len(e.errors)} spec {noun}; nothing was written", err=True)
    sys.exit(EXIT_USAGE)


def write_or_exit(files: dict[str, str], out: Path) -> writer.Comparison:
    try:
        return writer.write(files, out)
    except writer.ForeignFileError as e:
        error(str(e))
        sys.exit(EXIT_USAGE)
    except OSError as e:
        error(f"cannot write {out}: {e}")
        sys.exit(EXIT_USAGE)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Say more about each step.")
@click.option(
    "--project",
    "project_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="The project to work on [default: the nearest directory at or above "
    "the working directory whose pyproject.toml has a [tool.infiniops-codegen] "
    "table].",
)
@click.version_option(version=__version__, prog_name="infiniops-codegen")
@click.pass_context
def main(ctx: click.Context, verbose: bool, project_dir: Path | None) -> None:
    """Generate PyTorch fallbacks for an operator library from YAML op specs.

    \b
    Typical use:
      infiniops-codegen generate            # op_specs/ -> generated/
      infiniops-codegen generate --check    # CI: is generated/ up to date?
      infiniops-codegen build               # compile the module into build/
      infiniops-codegen list --op add       # what an op takes and runs on

    \b
    Exit codes: 0 success; 1 --check found differences, or a build or bench
    failed; 2 usage or spec error. Errors are red on a terminal (NO_COLOR=1
    turns colour off). -v/--verbose works before or after the command.
    """
    ctx.obj = {"verbose": verbose, "project_dir": project_dir}
    projects.use(None)  # each run finds its own (tests invoke main repeatedly)
    if os.environ.get("NO_COLOR"):  # https://no-color.org
        ctx.color = False


def _set_verbose(ctx: click.Context, _param, value: bool) -> None:
    if value:
        ctx.ensure_object(dict)["verbose"] = True


# Accepted after the command too (`generate -v`), same as before it.
VERBOSE_OPTION = click.option(
    "-v",
    "--verbose",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_set_verbose,
    help="Say more about each step.",
)


SPECS_OPTION = click.option(
    "--specs",
    "spec_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Directory of op spec YAML files [default: the project's, op_specs/].",
)
OPS_OPTION = click.option(
    "--ops",
    default=None,
    metavar="SELECTION",
    help="'all' (specs plus every expressible ATen out= overload), or op names "
    "separated by commas; '@FILE' reads names from a file (one per line).",
)


@main.command()
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
    help="Write nothing; exit 1 listing every stale, missing or extra file.",
)
@VERBOSE_OPTION
@click.pass_context
def generate(
    ctx,
    spec_dir: Path | None,
    ops: str | None,
    out_dir: Path | None,
    build_dir: Path | None,
    check: bool,
):
    """Render op specs into C++ sources, a .pyi stub and a manifest.

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
    gen = run_generation(spec_dir, ops)
    default_set = pipeline.parse_selection(ops)[0] == "default"
    out = out_dir or proj.generated_dir(
        spec_dir, default_set, build_dir or proj.build_dir
    )
    if check:
        sys.exit(_check(gen, out))
    result = write_or_exit(gen.files, out)
    elapsed = time.perf_counter() - start
    opset = gen.opset
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


@main.command()
@SPECS_OPTION
@OPS_OPTION
@click.option(
    "--opt-level",
    type=click.Choice(builder.OPT_LEVELS),
    default="3",
    show_default=True,
    help="Optimisation level of the generated wrappers (-O0..-O3, -Os); the "
    "torch bridge is always -O3.",
)
@click.option(
    "--build-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Build directory [default: the project's, build/].",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=os.cpu_count() or 1,
    show_default="number of cores",
    help="Parallel compile jobs.",
)
@click.option(
    "--ccache/--no-ccache",
    default=True,
    show_default=True,
    help="Use ccache as the compiler launcher when it is installed.",
)
@click.option(
    "--smoke/--no-smoke",
    default=True,
    show_default=True,
    help="After building, import the module in a fresh interpreter and call an op.",
)
@click.option(
    "--platform",
    "platform_list",
    default="cpu",
    show_default=True,
    metavar="NAMES",
    help="Platforms to build, separated by commas: "
    "cpu, nvidia, iluvatar, metax, cambricon, moore, ascend "
    "(infiniops_codegen/data/platforms.yaml; docs/platforms.md).",
)
@click.option(
    "--compile-only",
    is_flag=True,
    help="Compile every object (bridge, wrappers, kernels) but link no module "
    "and run no smoke check: for a platform whose torch runtime is not "
    "installed, e.g. --platform cpu,nvidia with the CPU torch wheel.",
)
@click.option(
    "--kernel-compiler",
    "kernel_compilers",
    multiple=True,
    metavar="PLATFORM=COMPILER",
    help="The compiler of a platform's native kernels (default: platforms.yaml, "
    "e.g. metax=mxcc); repeatable.",
)
@VERBOSE_OPTION
@click.pass_context
def build(
    ctx,
    spec_dir,
    ops,
    opt_level,
    build_dir,
    jobs,
    ccache,
    smoke,
    platform_list,
    compile_only,
    kernel_compilers,
):
    """Generate (if specs or templates changed), configure and compile.

    \b
    Examples:
      infiniops-codegen build                      # default ops, -O3, build/
      infiniops-codegen build --opt-level 0 --build-dir build-O0
      infiniops-codegen build --ops add,mul,rms_norm --build-dir build-small
    """
    platforms, compilers = _platform_options(platform_list, kernel_compilers)
    proj = project(ctx)
    request = builder.BuildRequest(
        project=proj,
        build_dir=build_dir,
        spec_dir=spec_dir,
        ops=ops,
        opt_level=opt_level,
        jobs=jobs,
        ccache=ccache,
        smoke=smoke,
        platforms=platforms,
        compile_only=compile_only,
        kernel_compilers=compilers,
    )
    try:
        result = builder.build(request, click.echo, verbose=ctx.obj["verbose"])
    except (SpecErrors, SelectionError) as e:
        _generation_failed(e)
    except writer.ForeignFileError as e:
        error(str(e))
        sys.exit(EXIT_USAGE)
    except builder.BuildError as e:
        error(str(e))
        sys.exit(EXIT_DIFF)
    except OSError as e:  # an --ops file, the generated directory
        error(str(e))
        sys.exit(EXIT_USAGE)
    if compile_only:
        click.echo(
            f"compiled {len(result.ops)} ops for {','.join(result.platforms)} "
            f"(objects only, no module): {result.steps} build steps in "
            f"{result.seconds:.1f} s"
        )
        return
    click.echo(
        f"built {_rel(result.module) if result.module else '?'} -O{opt_level}: "
        f"{len(result.ops)} ops, {result.steps} build steps in "
        f"{result.seconds:.1f} s" + (f"; smoke: {result.smoke}" if result.smoke else "")
    )


def _platform_options(
    platform_list: str, kernel_compilers: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """--platform and --kernel-compiler values, or exit 2 naming the problem."""
    from .platforms import parse_platforms, platform_names

    try:
        platforms = tuple(p.name for p in parse_platforms(platform_list))
    except ValueError as e:
        error(f"--platform: {e}")
        sys.exit(EXIT_USAGE)
    compilers = []
    for item in kernel_compilers:
        name, sep, compiler = item.partition("=")
        if not sep or not compiler or name not in platform_names():
            error(
                f"--kernel-compiler {item!r}: use PLATFORM=COMPILER with a platform "
                f"of {', '.join(platform_names())}"
            )
            sys.exit(EXIT_USAGE)
        compilers.append((name, compiler))
    return platforms, tuple(compilers)


def _recorded_torch_version(out: Path) -> str | None:
    from . import manifest

    try:
        return manifest.generated(out).torch_version
    except manifest.ManifestError:
        return None


def _check(gen: pipeline.Generation, out: Path) -> int:
    cmp = writer.compare(gen.files, out)
    recorded = _recorded_torch_version(out)
    installed = torch_version()
    if recorded is not None and recorded != installed:
        click.secho(
            f"note: {_rel(out)}/ was generated with torch {recorded}, but torch "
            f"{installed} is installed; schemas may differ because of that",
            fg="yellow",
            err=True,
        )
    if cmp.clean:
        click.echo(f"{_rel(out)}/ is up to date ({len(cmp.unchanged)} files)")
        return 0
    for rel in cmp.stale:
        click.echo(f"stale: {rel}")
        click.echo(writer.unified_diff(gen.files, out, rel), nl=False)
    for rel in cmp.missing:
        click.echo(f"missing: {rel}")
    for rel in cmp.extra:
        click.echo(f"extra: {rel} (generated earlier, no longer produced)")
    for rel in cmp.foreign:
        click.echo(f"not generated: {rel} (exists without the @generated line)")
    n = len(cmp.stale) + len(cmp.missing) + len(cmp.extra) + len(cmp.foreign)
    click.secho(
        f"{_rel(out)}/ is out of date ({n} files); run 'infiniops-codegen generate'",
        fg="red",
        err=True,
    )
    return EXIT_DIFF


@main.command()
@click.option("--quick", is_flag=True, help="A few configurations (under a minute).")
@click.option(
    "--ops",
    default=None,
    metavar="NAMES",
    help="Only configurations of these ops (names separated by commas); an op "
    "of the build that the configuration table lacks gets configurations "
    "derived from the correctness harness's samples.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("bench-results"),
    show_default=True,
    help="Where bench.json, bench.md and bench.png go. docs/perf/ (the "
    "committed copy) is refused from a modified tree or a stale build.",
)
@click.option(
    "--after-build-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The build timed as 'after' and forced onto each path "
    "[default: $INFINIOPS_BUILD_DIR or build/].",
)
@click.option(
    "--before-build-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The build timed as 'before' (the from_blob path through the "
    "dispatcher, implementation='torch'); built with --opt-level 0 when "
    "missing [default: <the project's build dir>/bench-before-O0/].",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="torch intra-op threads in every timed process.",
)
@click.option(
    "--device",
    default="cpu",
    show_default=True,
    help="The torch device the tensors are made on (e.g. cuda). Off the CPU "
    "the direct path and the native and direct floors do not apply, and "
    "each batch ends with a synchronize.",
)
@VERBOSE_OPTION
@click.pass_context
def bench(ctx, quick, ops, out_dir, after_build_dir, before_build_dir, threads, device):
    """Time ops against PyTorch's torch.<op>(out=): before, after, and the
    after build forced onto each call path (native, direct, dispatcher,
    from_blob) next to that path's like-for-like floor, interleaved, per
    operator x shape x dtype configuration.

    Exit 1 when a configuration fails or its outputs differ from PyTorch's
    (it is then left out of every summary figure); 2 for a usage error.

    \b
    Examples:
      infiniops-codegen bench --quick
      infiniops-codegen bench                       # the full sweep (minutes)
      infiniops-codegen bench --ops add,mm --out bench-add-mm
      infiniops-codegen bench --ops hardtanh -v     # an op the table lacks
    """
    from .bench.main import BenchError, BenchUsageError, run_bench

    project(ctx)
    names = None
    if ops is not None:
        names = {n.strip() for n in ops.split(",") if n.strip()}
    try:
        run_bench(
            quick=quick,
            ops=names,
            out=out_dir,
            after_build_dir=after_build_dir,
            before_build_dir=before_build_dir,
            threads=threads,
            device=device,
            echo=click.echo,
            verbose=ctx.obj["verbose"],
        )
    except BenchUsageError as e:
        error(str(e))
        sys.exit(EXIT_USAGE)
    except BenchError as e:
        error(str(e))
        sys.exit(EXIT_DIFF)


_STATUS_COLOURS = {"native": "green", "torch": None, "missing": "red"}


@main.command("list")
@click.option("--op", "op_name", default=None, metavar="NAME", help="Show one op.")
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
@VERBOSE_OPTION
@click.pass_context
def list_ops(ctx, op_name, as_json, build_dir, manifest_path):
    """The coverage matrix: op x platform -> native kernel, torch fallback or
    missing, from a manifest (nothing is built).

    \b
    Examples:
      infiniops-codegen list                    # the table, generated/manifest.json
      infiniops-codegen list --json
      infiniops-codegen list --op add           # signature and implementations
      infiniops-codegen list --build-dir build-small
    """
    import json

    from . import coverage, manifest as manifest_reader

    if manifest_path is None:
        manifest_path = (build_dir or project(ctx).generated) / MANIFEST
    try:
        manifest = manifest_reader.read(manifest_path)
        details = coverage.op_details(manifest, op_name) if op_name else None
    except manifest_reader.ManifestError as e:
        error(str(e))
        sys.exit(EXIT_USAGE)
    if ctx.obj["verbose"]:
        click.echo(
            f"manifest {_rel(manifest_path)}: torch {manifest.torch_version}, "
            f"selection {manifest.selection}",
            err=True,
        )
    if as_json:
        data = details or coverage.matrix_json(manifest, _rel(manifest_path))
        click.echo(json.dumps(data, indent=1))
    elif details:
        for line in coverage.op_text(details):
            click.echo(line)
    else:

        def style(text: str, status: str) -> str:
            colour = _STATUS_COLOURS.get(status)
            return click.style(text, fg=colour) if colour else text

        for line in coverage.matrix_table(manifest, style):
            click.echo(line)


if __name__ == "__main__":
    main()
