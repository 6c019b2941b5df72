"""`infiniops-codegen bench`: the fallback call against PyTorch's own.

configs.py   the configuration table (data)
cases.py     table -> configurations; their tensors
calls.py     how each variant calls an op; the timed loops
floor.py     the floor extension (at::<op>_out with nothing around it)
worker.py    one timing process per variant
runner.py    interleaved batches across the workers
builds.py    the before/after builds, built when missing
report.py    figures, summaries, bench.json and bench.md
plot.py      bench.png
main.py      all of it, for the CLI
"""
