"""`infiniops-codegen check`: a build against PyTorch (harness/)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..base.locations import MANIFEST
from ..base.locations import shown as _rel
from .common import EXIT_DIFF, EXIT_USAGE, error, project
from .options import VERBOSE_OPTION


@click.command()
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
        from ..harness.__main__ import main as harness

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
