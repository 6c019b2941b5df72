"""The `infiniops-codegen` group: its own options (--project, -v, --version);
the commands are added by the package (cli/__init__.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .. import __version__
from ..base import project as projects


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
    from ..base import torch_build, torch_release

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
