"""`infiniops-codegen bench`: the library's call paths against PyTorch's own
call and against like-for-like floors.

Takes: a build (built when missing, through toolchain/) and its manifest.
Gives: per-call times, medians and ratios in bench.json, bench.md and
bench.png.

configs.py   the configuration table (data)
cases.py     table -> configurations; their tensors
derive.py    configurations from the harness's samples, for ops the table lacks
paths.py     the call paths (native, direct, dispatcher, from_blob), forcing them
calls.py     how each variant calls an op; the timed loops
reference.py PyTorch's side: expected results, the reference call, comparison
floor.py     the floors: per path, a bare binding doing that path's work only
worker.py    the timing processes
runner.py    interleaved batches across the workers
builds.py    the before/after builds, built when missing
gitstate.py  the commit and whether the tree is modified
report.py    figures, summaries, bench.json and bench.md
plot.py      bench.png
main.py      all of it, for the CLI
"""
