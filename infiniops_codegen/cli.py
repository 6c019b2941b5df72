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
from .locations import shown as _rel
from .resolve import SelectionError

EXIT_DIFF = 1
EXIT_USAGE = 2


def error(message: str) -> None:
    """One line on stderr; red on a terminal, plain otherwise."""
    click.secho(f"error: {message}", fg="red", err=True)


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


def run_generation(
    spec_dir: Path,
    ops: str | None,
    extension_dirs: tuple[Path, ...] = (),
    library: projects.LibraryNames = projects.LibraryNames(),
) -> pipeline.Generation:
    """Generate, turning spec problems into exit code 2 with located lines."""
    from . import extensions

    try:
        return pipeline.generate(
            spec_dir, ops, extensions.load_all(extension_dirs), library=library
        )
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


def _shown(path: Path, proj: projects.Project | None) -> str:
    """A directory as shown to people: relative to the project root when
    inside it (generated/), else to the working directory, else absolute."""
    if proj is not None:
        shown = proj.rel(path)
        if not Path(shown).is_absolute():
            return Path(shown).as_posix()
    return Path(_rel(path)).as_posix()


def _refused(
    e: writer.ForeignFileError, proj: projects.Project | None, spec_dir: Path
) -> None:
    """A write the generator refused (writer.write): one line, exit 2."""
    if isinstance(e, writer.HandEditedError):
        error(e.describe(_shown(e.out_dir, proj), f"{_shown(spec_dir, proj)}/"))
    else:
        error(str(e))
    sys.exit(EXIT_USAGE)


def write_or_exit(
    files: dict[str, str],
    out: Path,
    force: bool,
    proj: projects.Project | None,
    spec_dir: Path,
) -> writer.Comparison:
    try:
        return writer.write(files, out, force=force)
    except writer.ForeignFileError as e:
        _refused(e, proj, spec_dir)
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
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _show_version(ctx) if value else None,
    help="Show the version, the torch and Python releases it is tested with, "
    "and the installed ones, and exit.",
)
@click.pass_context
def main(ctx: click.Context, verbose: bool, project_dir: Path | None) -> None:
    """Generate PyTorch fallbacks for an operator library from YAML op specs.

    \b
    Typical use:
      infiniops-codegen init my-ops --name myops   # a new project
      infiniops-codegen generate            # op_specs/ -> generated/
      infiniops-codegen generate --check    # CI: is generated/ up to date?
      infiniops-codegen build               # compile the module into build/
      infiniops-codegen check --fuzz        # the build against PyTorch
      infiniops-codegen list --op add       # what an op takes and runs on
      infiniops-codegen trace -- python model.py   # a model's ops as specs

    \b
    Exit codes: 0 success; 1 --check found differences, or a build or bench
    failed; 2 usage or spec error. Errors are red on a terminal (NO_COLOR=1
    turns colour off). -v/--verbose works before or after the command.
    """
    ctx.obj = {"verbose": verbose, "project_dir": project_dir}
    projects.use(None)  # each run finds its own (tests invoke main repeatedly)
    if os.environ.get("NO_COLOR"):  # https://no-color.org
        ctx.color = False


def _show_version(ctx: click.Context) -> None:
    """--version: the tool's, the tested ranges (the package metadata) and
    what is installed; a warning when the installed torch is outside."""
    from . import torch_build, torch_release

    ranges = torch_release.supported()
    torch = torch_build.installed()
    click.echo(f"infiniops-codegen {__version__}")
    click.echo(
        f"tested with torch {ranges.torch.spelled()} ({ranges.torch}) on Python "
        f"{ranges.python.spelled()} ({ranges.python}), as its {ranges.source} states"
    )
    python = ".".join(str(n) for n in sys.version_info[:3])
    click.echo(
        f"installed: torch {torch if torch else '(none)'}, Python {python} "
        f"({sys.executable})"
    )
    outside = []
    if torch is not None and torch.version not in ranges.torch:
        outside.append(f"torch {torch.version}")
    if python not in ranges.python:
        outside.append(f"Python {python}")
    if outside:
        verb = "is" if len(outside) == 1 else "are"
        click.secho(
            f"warning: {' and '.join(outside)} {verb} outside the tested range",
            fg="yellow",
            err=True,
        )
    ctx.exit()


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
FORCE_OPTION = click.option(
    "--force",
    is_flag=True,
    help="Overwrite generated files that were edited by hand (the edit is lost).",
)
EXTENSION_OPTION = click.option(
    "--extension",
    "extension_dirs",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="An extension: a directory with infiniops-extension.yaml, its own op "
    "specs and native kernels; all its ops join the build (repeatable; "
    "docs/extensions.md).",
)
OPS_OPTION = click.option(
    "--ops",
    default=None,
    metavar="SELECTION",
    help="'all' (specs plus every expressible ATen out= overload), or op names "
    "separated by commas; '@FILE' reads names from a file (one per line).",
)


@main.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option(
    "--name",
    required=True,
    help="The library's name: a lower-case identifier (the Python module, the "
    "C++ library, [tool.infiniops-codegen] name).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Write into a directory that is not empty: the scaffold's own files "
    "are overwritten, every other file is left as it is.",
)
@VERBOSE_OPTION
@click.pass_context
def init(ctx, directory: Path, name: str, force: bool):
    """Write a new project into DIRECTORY that builds and tests at once.

    \b
    The project: pyproject.toml with [tool.infiniops-codegen], op_specs/ with
    an ATen op (add), an ATen op with a native CPU kernel (relu; its source
    cpp/kernels/cpu/relu.cc) and a composite op (relu_squared), tests/ that
    compare each with torch, a CI workflow (.github/workflows/ci.yml) and a
    README; then generates generated/. DIRECTORY must be new or empty.

    \b
    Examples:
      infiniops-codegen init mylib-demo --name mylib
      cd mylib-demo && infiniops-codegen build && python -m pytest -q
    """
    from . import scaffold

    try:
        plan = scaffold.plan(directory, name, force)
        scaffold.write(plan)
    except scaffold.ScaffoldError as e:
        error(str(e))
        sys.exit(EXIT_USAGE)
    except OSError as e:
        error(f"cannot write the project into {directory}: {e}")
        sys.exit(EXIT_USAGE)
    click.echo(f"wrote the project {name} into {_rel(directory)}/:")
    for rel in plan.files:
        if rel in plan.overwritten:
            click.echo(f"  {rel}  (overwritten: it was there, with other content)")
        elif rel in plan.unchanged:
            click.echo(f"  {rel}  (unchanged: it was there, the same)")
        else:
            click.echo(f"  {rel}")
    proj = projects.load(directory)
    projects.use(proj)
    ctx.obj["project"] = proj
    gen = run_generation(proj.specs, None, library=proj.names)
    result = write_or_exit(gen.files, proj.generated, False, proj, proj.specs)
    click.echo(
        f"generated {len(gen.opset.ops)} ops into {_rel(proj.generated)}/: "
        f"{len(result.stale) + len(result.missing)} files written"
    )
    click.echo("next:")
    click.echo(f"  cd {_rel(directory)}")
    click.echo("  infiniops-codegen build       # compiles the module into build/")
    click.echo("  python -m pytest -q           # each op against torch")
    click.echo(
        "  pip wheel . --no-build-isolation --no-deps -w dist"
        "   # the package (infiniops-codegen docs packaging)"
    )


def _doc_topics() -> dict[str, Path]:
    """topic -> file of the shipped docs (locations.DOCS_DIR): adding-an-op,
    design/bridge-cache, ..."""
    from .locations import DOCS_DIR

    files = sorted(DOCS_DIR.glob("*.md")) + sorted(
        p for p in DOCS_DIR.glob("*/**/*.md")
    )
    return {p.relative_to(DOCS_DIR).with_suffix("").as_posix(): p for p in files}


@main.command()
@click.argument("topic", required=False)
@click.option(
    "--path", "show_path", is_flag=True, help="Print the topic's file, not its text."
)
@VERBOSE_OPTION
def docs(topic: str | None, show_path: bool):
    """The tool's documentation, shipped with it.

    \b
    With no TOPIC: the topics and their titles. With one: its text (Markdown).
    Examples:
      infiniops-codegen docs
      infiniops-codegen docs adding-an-op
      infiniops-codegen docs packaging --path
    """
    topics = _doc_topics()
    if topic is None:
        width = max(map(len, topics))
        for name, path in topics.items():
            title = next(
                (
                    line[2:].strip()
                    for line in path.read_text(encoding="utf-8").splitlines()
                    if line.startswith("# ")
                ),
                "",
            )
            click.echo(f"{name:<{width}}  {title}")
        return
    key = topic.removeprefix("docs/").removesuffix(".md")
    if key not in topics:
        import difflib

        close = difflib.get_close_matches(key, list(topics), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        error(f"no topic {topic!r}{hint} ('infiniops-codegen docs' lists them)")
        sys.exit(EXIT_USAGE)
    path = topics[key]
    click.echo(
        str(path) if show_path else path.read_text(encoding="utf-8"), nl=show_path
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
    gen = run_generation(spec_dir, ops, extension_dirs, library)
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
    drifted = _drift_lines(gen, out, _shown(out, proj), ctx.obj["verbose"])
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
    "--compiler-launcher",
    default=None,
    metavar="CMD",
    help="A distributed compiler front before the C++ compiler, e.g. 'distcc' "
    "or 'sccache' (with its arguments, shell-quoted); behind ccache when "
    "ccache is used (docs/building.md: a multi-machine build).",
)
@click.option(
    "--cache/--no-cache",
    "bridge_cache",
    default=True,
    show_default=True,
    help="Link the torch bridge and use the precompiled header from the shared "
    "bridge cache when an earlier build made them with the same compiler, "
    "flags and torch, and add them to it otherwise ($INFINIOPS_NO_BRIDGE_CACHE=1 "
    "bypasses it too; docs/building.md: the bridge cache).",
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
@click.option(
    "--install",
    "install_prefix",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    metavar="PREFIX",
    help="After building, install the C++ library, its headers and its CMake "
    "package (find_package(<cmake-package>)) into PREFIX (docs/cpp.md).",
)
@click.option(
    "--sanitize",
    default=None,
    metavar="NAMES",
    help="Compile and link every TU with these sanitizers: address,undefined "
    "or thread (optionally with undefined); the build prints how to run "
    "Python under them (docs/building.md: sanitizers).",
)
@click.option(
    "--cmake-arg",
    "cmake_args",
    multiple=True,
    metavar="NAME=VALUE",
    help="Passed to CMake as -DNAME=VALUE (repeatable); one dropped since the "
    "last build is removed from the cache.",
)
@FORCE_OPTION
@EXTENSION_OPTION
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
    compiler_launcher,
    bridge_cache,
    smoke,
    platform_list,
    compile_only,
    kernel_compilers,
    install_prefix,
    sanitize,
    cmake_args,
    force,
    extension_dirs,
):
    """Generate (if specs or templates changed), configure and compile.

    A generated file edited by hand stops the build before anything is
    configured (--force overwrites it).

    \b
    Examples:
      infiniops-codegen build                      # default ops, -O3, build/
      infiniops-codegen build --opt-level 0 --build-dir build-O0
      infiniops-codegen build --ops add,mul,rms_norm --build-dir build-small
      infiniops-codegen build --install /opt/infiniops  # + the C++ library
      infiniops-codegen build --sanitize address,undefined --build-dir build-asan
    """
    if compile_only and install_prefix is not None:
        error("--install needs a linked library; --compile-only links none")
        sys.exit(EXIT_USAGE)
    platforms, compilers = _platform_options(platform_list, kernel_compilers)
    sanitizers, cmake_pairs = _sanitize_options(sanitize, cmake_args)
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
        compiler_launcher=_launcher_option(compiler_launcher),
        extensions=tuple(extension_dirs),
        force=force,
        install=install_prefix,
        sanitize=sanitizers,
        cmake_args=cmake_pairs,
        bridge_cache=bridge_cache,
    )
    try:
        result = builder.build(request, click.echo, verbose=ctx.obj["verbose"])
    except (SpecErrors, SelectionError) as e:
        _generation_failed(e)
    except writer.ForeignFileError as e:
        _refused(e, proj, spec_dir or proj.specs)
    except builder.BuildError as e:
        error(str(e))
        sys.exit(EXIT_DIFF)
    except builder.OptionError as e:  # a --cmake-arg the build sets itself
        error(str(e))
        sys.exit(EXIT_USAGE)
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
    if result.installed is not None:
        click.echo(
            f"installed the C++ library into {result.installed} (CMake: "
            f"find_package({result.names.cmake_package} CONFIG), target "
            f"{result.names.cmake_target}, -DCMAKE_PREFIX_PATH={result.installed})"
        )
    if result.sanitizer_env is not None:
        _say_how_to_run(result)


def _sanitize_options(
    sanitize: str | None, cmake_args: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """--sanitize and --cmake-arg values, or exit 2 naming the problem."""
    from . import sanitize as sanitizers

    try:
        names = sanitizers.parse(sanitize) if sanitize is not None else ()
    except ValueError as e:
        error(f"--sanitize: {e}")
        sys.exit(EXIT_USAGE)
    try:
        pairs = tuple(builder.parse_cmake_arg(a) for a in cmake_args)
    except builder.OptionError as e:
        error(str(e))
        sys.exit(EXIT_USAGE)
    return names, pairs


def _say_how_to_run(result: builder.BuildResult) -> None:
    """How to run Python under a sanitized build: the module loads only into
    a process that preloads the sanitizers' runtimes."""
    from .sanitize import SCRIPT

    env = result.sanitizer_env
    script = result.build_dir / SCRIPT
    if env.missing:
        click.echo(
            f"note: the compiler names no {', '.join(env.missing)}: preload its "
            "runtime yourself (LD_PRELOAD) before running Python under this build"
        )
    click.echo(
        f"sanitized ({','.join(env.sanitizers)}): run Python under it with\n"
        f"  {env.command()} ...\n"
        f"or {_rel(script)} ... (the same line)"
    )


def _launcher_option(value: str | None) -> tuple[str, ...]:
    """--compiler-launcher as argv; exit 2 when its program is not found."""
    if not value:
        return ()
    import shlex
    import shutil

    try:
        argv = tuple(shlex.split(value))
    except ValueError as e:
        error(f"--compiler-launcher {value!r}: {e}")
        sys.exit(EXIT_USAGE)
    if not argv or shutil.which(argv[0]) is None:
        error(f"--compiler-launcher: '{argv[0] if argv else value}' is not on PATH")
        sys.exit(EXIT_USAGE)
    return argv


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


def _drift_lines(
    gen: pipeline.Generation, out: Path, shown: str, verbose: bool
) -> list[str]:
    """Where the installed torch's schemas differ from those `out` was
    generated with, by overload ([] when they do not)."""
    from . import drift

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
    shown = _shown(out, proj)
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
            f"specs and templates; put the change in {_shown(spec_dir, proj)}/ or "
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
    default=None,
    help="Where bench.json, bench.md and bench.png go [default: "
    "<the project's build dir>/bench-results/]. docs/perf/ (the committed "
    "copy) is refused from a modified tree or a stale build.",
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

    proj = project(ctx)
    out_dir = out_dir or proj.build_dir / "bench-results"
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


@main.command()
@click.option(
    "--build-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The build checked [default: $INFINIOPS_BUILD_DIR, else the "
    "project's build dir].",
)
@click.option(
    "--skips",
    "skip_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The project's own skip file ('harness:' entries: its choices) "
    "[default: tests/skips.yaml of the project, where there is one]. The "
    "tool's list of PyTorch's own bugs and limitations always applies.",
)
@click.option("--ops", default=None, metavar="NAMES", help="Only these ops (commas).")
@click.option(
    "--device",
    default="cpu",
    show_default=True,
    help="The torch device the tensors are made on (cpu, sim, cuda).",
)
@click.option(
    "--fuzz",
    is_flag=True,
    help="Also run the native-kernel fuzzer on each op with a native kernel.",
)
@click.option("--fuzz-only", is_flag=True, help="Run the native-kernel fuzzer only.")
@click.option(
    "--examples",
    type=click.IntRange(min=0),
    default=100,
    show_default=True,
    help="Drawn fuzzer cases per op (derandomized: the same each run).",
)
@click.option(
    "--seconds",
    type=click.FloatRange(min=0),
    default=None,
    help="Stop drawing fuzzer cases after this long (all ops together).",
)
@click.option(
    "--report",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The harness's JSON report [default: <build dir>/harness-report.json].",
)
@VERBOSE_OPTION
@click.pass_context
def check(
    ctx, build_dir, skip_file, ops, device, fuzz, fuzz_only, examples, seconds, report
):
    """Check the project's build against PyTorch: every op, dtype and layout
    (the correctness harness), and with --fuzz each native kernel on drawn
    shapes, strides, dtypes and aliased outs (the native-kernel fuzzer).

    Needs no file of the project's: ops whose values PyTorch does not define
    (empty*, random ops) are compared by shape, dtype, device and range, and
    PyTorch's own bugs are skipped by the tool's list. Exit 1 when a check
    failed, 2 for a usage error.

    
    Examples:
      infiniops-codegen check                 # the harness
      infiniops-codegen check --fuzz          # and the native-kernel fuzzer
      infiniops-codegen check --fuzz-only --ops relu --examples 500
      infiniops-codegen check --device sim    # a build with the sim platform
    """
    import subprocess

    proj = project(ctx)
    build_dir = Path(
        build_dir or os.environ.get("INFINIOPS_BUILD_DIR") or proj.build_dir
    )
    if not (build_dir / MANIFEST).is_file():
        error(
            f"no build in {_rel(build_dir)} (no {MANIFEST}): run "
            "'infiniops-codegen build' first"
        )
        sys.exit(EXIT_USAGE)
    if skip_file is None and (proj.root / "tests" / "skips.yaml").is_file():
        skip_file = proj.root / "tests" / "skips.yaml"
    elif skip_file is not None and not skip_file.is_file():
        error(f"no skip file {_rel(skip_file)}")
        sys.exit(EXIT_USAGE)
    failed = False
    if not fuzz_only:
        from .harness.__main__ import main as harness

        argv = ["--build-dir", str(build_dir), "--devices", device]
        argv += ["--skips", str(skip_file)] if skip_file else []
        argv += ["--ops", ops] if ops else []
        argv += ["--report", str(report)] if report else []
        click.echo(
            "skips: the tool's list" + (f", {_rel(skip_file)}" if skip_file else "")
        )
        code = harness(argv)
        if code == EXIT_USAGE:
            sys.exit(EXIT_USAGE)
        failed |= code != 0
    if fuzz or fuzz_only:
        argv = [sys.executable, "-m", "infiniops_codegen.harness.fuzz"]
        argv += ["--build-dir", str(build_dir), "--device", device]
        argv += ["--examples", str(examples)]
        argv += ["--seconds", str(seconds)] if seconds is not None else []
        argv += ["--ops", ops] if ops else []
        sys.stdout.flush()
        done = subprocess.run(argv)
        if done.returncode not in (0, 1):
            error(
                f"the native-kernel fuzzer ended with status {done.returncode} "
                "(a kernel crashed the process?)"
            )
        failed |= done.returncode != 0
    sys.exit(EXIT_DIFF if failed else 0)


_STATUS_COLOURS = {
    "native": "green",
    "torch": None,
    "missing": "red",
    "no-source": "yellow",
}


@main.command("list")
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

    from . import coverage, manifest as manifest_reader

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
        from . import torch_build
        from .locations import TORCH_RECORD

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


@main.command(
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@SPECS_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option(
    "--write",
    "write_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="FILE",
    help="Append the expressible out= overloads the specs lack to FILE, a "
    "spec file of the spec directory (created with an 'ops:' list when "
    "absent), one line each with its call count.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@VERBOSE_OPTION
@click.pass_context
def trace(ctx, spec_dir, as_json, write_path, command):
    """Run a Python script and list the ATen ops it calls, each marked: in
    the project (native or fallback), expressible but not in the specs (the
    out= overload to add), or not expressible (why).

    The script runs in a child process under a dispatch-level recorder
    (torch's TorchDispatchMode), so the ops torch.nn modules call count
    too; its output passes through (its stdout onto stderr with --json). Exit 1 when the script fails (what it
    called until then is still listed), 2 for a usage or spec error.

    \b
    Examples:
      infiniops-codegen trace -- python model.py --steps 2
      infiniops-codegen trace --json -- python -m mypkg.infer
      infiniops-codegen trace --write op_specs/model.yaml -- python model.py
    """
    import json

    from . import model_trace
    from .schema_db import load_schema_db

    proj = project(ctx) if spec_dir is None else None
    spec_dir = spec_dir or proj.specs
    specs = f"{_shown(spec_dir, proj)}/"
    if write_path is not None:
        _check_spec_file(write_path, spec_dir, specs)
    try:  # spec problems before the script runs, which may take long
        opset = pipeline.load_opset(spec_dir, "all")
    except (SpecErrors, SelectionError) as e:
        _generation_failed(e)
    try:
        result = model_trace.trace(
            list(command), opset, load_schema_db(), stdout_to_stderr=as_json
        )
    except model_trace.TraceError as e:
        error(str(e))
        sys.exit(EXIT_USAGE)
    if as_json:
        data = model_trace.json_data(result, specs, opset.torch_version)
        click.echo(json.dumps(data, indent=1))
    else:
        for line in model_trace.lines(result):
            click.echo(line)
    if write_path is not None:
        _write_missing(write_path, spec_dir, result, as_json)
    if result.status != 0:
        error(
            f"'{' '.join(command)}' exited with status {result.status}: the ops "
            "listed are those it called before it ended"
        )
        sys.exit(EXIT_DIFF)


def _check_spec_file(path: Path, spec_dir: Path, specs: str) -> None:
    """trace --write: a .yaml/.yml file directly in the spec directory (the
    only files generate reads), else exit 2."""
    if path.suffix not in (".yaml", ".yml") or (
        path.parent.resolve() != spec_dir.resolve()
    ):
        error(
            f"--write {path}: give a .yaml file directly in {specs} (generate "
            f"reads only those), e.g. {specs}model.yaml"
        )
        sys.exit(EXIT_USAGE)


def _write_missing(path: Path, spec_dir: Path, result, as_json: bool) -> None:
    """trace --write: append the missing out= overloads to path, then load
    the specs as generate would (the default set and --ops all); a file
    they no longer load from is put back as it was (exit 2)."""
    from . import model_trace

    say = (lambda line: click.echo(line, err=True)) if as_json else click.echo
    hinted = model_trace.hinted_for_all(spec_dir)
    missing = {}
    for out, traced in result.missing().items():
        if out in hinted:
            say(
                f"--write: {out} is left out: {hinted[out]} holds its hints; "
                "move them into a spec entry for it (docs/spec-format.md)"
            )
        else:
            missing[out] = traced
    if not missing:
        say(f"--write: nothing to add to {_rel(path)}")
        return
    try:
        old = path.read_text(encoding="utf-8") if path.exists() else None
        path.write_text(model_trace.appended_text(old, missing), encoding="utf-8")
    except model_trace.WriteError as e:
        error(f"--write {_rel(path)}: {e}")
        sys.exit(EXIT_USAGE)
    except OSError as e:
        error(f"--write: cannot write {_rel(path)}: {e}")
        sys.exit(EXIT_USAGE)
    try:
        pipeline.load_opset(spec_dir)
        pipeline.load_opset(spec_dir, "all")
    except (SpecErrors, SelectionError) as e:
        if old is None:
            path.unlink()
        else:
            path.write_text(old, encoding="utf-8")
        error(
            "--write: the specs do not load with the entries added; "
            f"{_rel(path)} is left as it was"
        )
        _generation_failed(e)
    noun = "entry" if len(missing) == 1 else "entries"
    say(f"appended {len(missing)} {noun} to {_rel(path)}: {', '.join(missing)}")


def _kernels_to_write(
    opset, proj: projects.Project | None, extension_dirs=()
) -> list[str]:
    """generate's warnings: native kernels the specs declare (the project's,
    an extension's) whose source does not exist yet (the build would stop
    at CMake configure)."""
    from . import extensions, kernel_sources

    roots = {"": proj.kernels} if proj is not None else {}
    roots.update({e.name: e.kernels for e in extensions.load_all(extension_dirs)})
    lines = []
    for owner, root in roots.items():
        ops = [op for op in opset.ops if op.native and op.extension == owner]
        natives = ((op.name, [n.platform for n in op.native]) for op in ops)
        source = {op.name: op.source for op in ops}
        lines += [
            f"warning: {source[m.op]}: the spec of {m.op} gives it a native "
            f"{m.platform} kernel, but {m.shown(lambda d: _shown(d, proj))} "
            "does not exist yet: write it "
            "(docs/adding-an-op.md), or 'build' stops before it configures"
            for m in kernel_sources.missing(root, natives)
        ]
    return lines


def _listed_platforms(
    manifest, manifest_path: Path, names: str | None
) -> tuple[tuple[str, ...], str | None]:
    """list's platforms (coverage.listed_platforms): --platform's, else those
    of the build directory holding the manifest, if it is one."""
    from . import coverage
    from .platforms import load_platforms, parse_platforms

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
    from . import kernel_sources

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
    from . import coverage

    try:
        from .schema_db import load_schema_db

        overloads = tuple(load_schema_db().out_overloads)
    except Exception:  # no torch, or torchgen failing: no ATen names to offer
        overloads = ()
    return coverage.not_found_hint(name, manifest, overloads)


def _installed_schema(aten: str, schema: str) -> dict | None:
    """list --op: where the installed torch's schema of the overload differs
    from the manifest's (an argument renamed, retyped, added, ...); None when
    it does not, or no torch is installed (a manifest is read without one)."""
    from . import drift
    from .schema_db import load_schema_db

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

    from . import coverage

    proj = project(ctx) if spec_dir is None else None
    spec_dir = spec_dir or proj.specs
    try:
        opset = pipeline.load_opset(spec_dir, "all")
    except (SpecErrors, SelectionError) as e:
        _generation_failed(e)
    rows = coverage.available(opset.ops)
    shown = [r for r in rows if coverage.matches(r.aten, pattern)]
    # overloads the specs already have that the pattern names: say so, rather
    # than a bare "0" for someone looking for an op the set already has
    present = sorted(
        op.aten
        for op in opset.ops
        if op.aten and op.source != "<all>" and coverage.matches(op.aten, pattern)
    )
    specs = f"{_shown(spec_dir, proj)}/"
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


if __name__ == "__main__":
    main()
