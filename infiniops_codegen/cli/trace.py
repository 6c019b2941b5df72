"""`infiniops-codegen trace`: the ATen ops a script calls, against the specs
(trace/).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..render import pipeline
from ..base.errors import SpecErrors
from ..base.locations import shown as _rel
from ..model.resolve import SelectionError
from .common import EXIT_DIFF, EXIT_USAGE, error, generation_failed, project, shown_dir
from .options import SPECS_OPTION, VERBOSE_OPTION


@click.command(
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

    from ..trace import marks as model_trace
    from ..schema.db import load_schema_db

    proj = project(ctx) if spec_dir is None else None
    spec_dir = spec_dir or proj.specs
    specs = f"{shown_dir(spec_dir, proj)}/"
    if write_path is not None:
        _check_spec_file(write_path, spec_dir, specs)
    try:  # spec problems before the script runs, which may take long
        opset = pipeline.load_opset(spec_dir, "all")
    except (SpecErrors, SelectionError) as e:
        generation_failed(e)
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
    from ..trace import marks as model_trace

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
        generation_failed(e)
    noun = "entry" if len(missing) == 1 else "entries"
    say(f"appended {len(missing)} {noun} to {_rel(path)}: {', '.join(missing)}")
