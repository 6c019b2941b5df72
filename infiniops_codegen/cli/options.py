"""The options several commands take, defined once."""

from __future__ import annotations

from pathlib import Path

import click


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
    help="'all' (specs plus every expressible ATen out= overload), 'covering' "
    "(the fewest ops of the specs that take every path the whole set takes), "
    "or op names separated by commas, which 'covering,' adds to it; '@FILE' "
    "reads names from a file (one per line).",
)
