"""The `infiniops-codegen` command line: one module per command, each thin
(its options, a call into its stage, the error mapping); the options several
take are in `options`, the exit codes and error mapping they share in
`common`.

Takes: the command line. Gives: a call into the stage a command is about,
and its outcome as an exit code:
0 success, 1 `--check` found differences (or a build/run failed),
2 usage or spec error.
"""

from .common import EXIT_DIFF, EXIT_USAGE
from .generate import DIFF_LIMIT
from .main import main
from . import bench, build, check, docs, generate, init, list, trace

# `--help` lists them sorted by name, whatever the order here.
for _command in (
    init.init,
    docs.docs,
    generate.generate,
    build.build,
    bench.bench,
    check.check,
    list.list_ops,
    trace.trace,
):
    main.add_command(_command)

__all__ = ["DIFF_LIMIT", "EXIT_DIFF", "EXIT_USAGE", "main"]
