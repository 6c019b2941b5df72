"""Per-function instruction counts per call of ops.abs vs its direct floor
(callgrind), the groundwork of issue 14:

    python scripts/callgrind_abs_vs_floor.py FLOOR_SO

FLOOR_SO: a floor built by infiniops_codegen.bench.floor.build() for abs.
"""

import sys
from torch.utils.benchmark import Timer

floor_path = sys.argv[1]
setup = f"""
import sys; sys.path.insert(0, 'build')
import importlib.util, torch, infiniops as ops
torch.set_num_threads(1)
spec = importlib.util.spec_from_file_location(
    {floor_path.rsplit('/',1)[1].split('.')[0]!r}, {floor_path!r})
fl = importlib.util.module_from_spec(spec); spec.loader.exec_module(fl)
x = torch.randn(1); o = torch.empty(1)
"""
N = 400
res = {}
for name, stmt in {
    "ours": "ops.abs(x, out=o)",
    "floor": "fl.direct__abs(x, o)",
}.items():
    c = Timer(stmt, setup=setup).collect_callgrind(number=N, collect_baseline=False)
    res[name] = c
    print(name, c.counts(denoise=True) / N, flush=True)
d = res["ours"].as_standardized().stats(inclusive=False) - res[
    "floor"
].as_standardized().stats(inclusive=False)
d = d.denoise()
print("delta total per call", sum(c for c, _ in d) / N)
for count, fn in sorted(d, key=lambda t: -abs(t[0]))[:45]:
    print(f"{count / N:9.1f}  {fn[:160]}")
