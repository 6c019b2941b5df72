"""`infiniops-codegen build`: generate, configure and compile (build/)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..toolchain import builder
from ..render import writer
from ..base.errors import SpecErrors
from ..base.locations import shown as _rel
from ..model.resolve import SelectionError
from .common import EXIT_DIFF, EXIT_USAGE, error, generation_failed, project, refused
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
        generation_failed(e)
    except writer.ForeignFileError as e:
        refused(e, proj, spec_dir or proj.specs)
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
    from ..base import sanitize as sanitizers

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
    from ..base.sanitize import SCRIPT

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
    from ..base.platforms import parse_platforms, platform_names

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
