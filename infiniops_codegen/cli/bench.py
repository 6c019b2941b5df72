"""`infiniops-codegen bench`: the per-call bench (bench/)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import EXIT_DIFF, EXIT_USAGE, error, project
from .options import VERBOSE_OPTION


@click.command()
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
    from ..bench.main import BenchError, BenchUsageError, run_bench

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
