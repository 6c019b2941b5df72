"""What the commands share: exit codes, the one-line error, the project a run
works on, and a generation's spec errors and refused writes mapped to exit
code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..render import pipeline, writer
from ..base import project as projects
from ..base.errors import SpecErrors
from ..base.locations import shown as _rel
from ..model.resolve import SelectionError

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


def shown_dir(path: Path, proj: projects.Project | None) -> str:
    """A directory as shown to people: relative to the project root when
    inside it (generated/), else to the working directory, else absolute."""
    if proj is not None:
        shown = proj.rel(path)
        if not Path(shown).is_absolute():
            return Path(shown).as_posix()
    return Path(_rel(path)).as_posix()


def run_generation(
    spec_dir: Path,
    ops: str | None,
    extension_dirs: tuple[Path, ...] = (),
    library: projects.LibraryNames = projects.LibraryNames(),
    reference: Path | None = None,
) -> pipeline.Generation:
    """Generate, turning spec problems into exit code 2 with located lines.
    reference: the committed generated/ (a covering selection's drift)."""
    from ..opspec import extensions

    try:
        return pipeline.generate(
            spec_dir,
            ops,
            extensions.load_all(extension_dirs),
            library=library,
            reference=reference,
        )
    except (SpecErrors, SelectionError) as e:
        generation_failed(e)
    except OSError as e:
        error(f"cannot read an --ops file: {e}")
        sys.exit(EXIT_USAGE)


def generation_failed(e: SpecErrors | SelectionError) -> None:
    """Spec problems, one located line each, or an unknown --ops name: exit 2."""
    if isinstance(e, SelectionError):
        error(str(e))
        sys.exit(EXIT_USAGE)
    for err in e.errors:
        click.secho(str(err), fg="red", err=True)
    noun = "problem" if len(e.errors) == 1 else "problems"
    click.echo(f"{len(e.errors)} spec {noun}; nothing was written", err=True)
    sys.exit(EXIT_USAGE)


def refused(
    e: writer.ForeignFileError, proj: projects.Project | None, spec_dir: Path
) -> None:
    """A write the generator refused (writer.write): one line, exit 2."""
    if isinstance(e, writer.HandEditedError):
        error(e.describe(shown_dir(e.out_dir, proj), f"{shown_dir(spec_dir, proj)}/"))
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
        refused(e, proj, spec_dir)
    except OSError as e:
        error(f"cannot write {out}: {e}")
        sys.exit(EXIT_USAGE)
