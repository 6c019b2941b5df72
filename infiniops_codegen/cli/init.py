"""`infiniops-codegen init`: a new project (scaffold/)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..base import project as projects
from ..base.locations import shown as _rel
from .common import EXIT_USAGE, error, run_generation, write_or_exit
from .options import VERBOSE_OPTION


@click.command()
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
    from ..scaffold import init as scaffold

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
