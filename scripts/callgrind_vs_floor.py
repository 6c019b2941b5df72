"""Instructions per call of the library's calls and their like-for-like floors
(callgrind), for the bench's tiny configurations of a few ops:

    python scripts/callgrind_vs_floor.py [--build-dir build] [--paths all]
        [--ops abs,add,...] [--size 1] [--dtype float32] [--calls 400]
        [--functions N]

For each op, the configuration `tiny/<op>/<size>/<dtype>` of the bench is
made (the same tensors the bench times), and each path that applies (only
the default one unless --paths all) is counted next to its floor: the
library's call forced onto the path as the bench forces it, and the floor's
function. One intra-op thread, as in the bench. Prints one line per op and
path: ours, floor, ours - floor (instructions per call; the Python loop is
in both, so the difference is the library's own). --functions N adds the N
functions whose own counts differ most between the two.

Everything runs in one process under valgrind (callgrind collects only
around each loop of calls, and dumps after it), so that torch is imported
once. The floors are built (or found) as the bench builds them, under
<before-build-dir>/bench-floor/.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPRESENTATIVE = (
    "abs",
    "add",
    "sum",
    "mm",
    "cat",
    "softmax",
    "native_layer_norm",
    "rms_norm",
)


def _configs(op) -> dict:
    """The bench's configurations of op: the table's, else those derived
    from the harness's samples (as `bench --ops` derives them)."""
    from infiniops_codegen.bench import cases, derive

    found = cases.select(False, {op.name}) or derive.derive(op, False)
    return {c.id: c for c in found}


def _pick(configs: dict, name: str, size: str, dtype: str):
    """tiny/<name>/<size>/<dtype>, else the first derived one of the dtype."""
    wanted = configs.get(f"tiny/{name}/{size}/{dtype}")
    if wanted is not None:
        return wanted
    derived = [c for c in configs.values() if "[sample]" in c.id and c.dtype == dtype]
    return derived[0] if derived else None


def _call(build_dir, floor_path, name, config_id, path, which):
    """The bench's call of one variant."""
    import torch

    from infiniops_codegen.bench import calls, cases, floor
    from infiniops_codegen.bench import paths as P
    from infiniops_codegen.bench import reference
    from infiniops_codegen.bench.runner import timed_paths
    from infiniops_codegen.model.manifest import of_build
    from infiniops_codegen.runtime import load

    op = of_build(build_dir).by_name()[name]
    config = _configs(op)[config_id]
    default, _ = timed_paths(config, op)
    values = cases.materialise(config)
    outputs = [torch.empty_like(w) for w in reference.expected(op, values)]
    if which == "floor":
        fn = getattr(floor.load(Path(floor_path)), floor.function_name(path, name))
        return calls.floor(fn, op, values, outputs), None
    module = load(build_dir)
    setting = P.setting(path, default)
    call = calls.ours(
        getattr(module, name), op, values, outputs, setting.implementation
    )
    return call, (module, setting)


def child(spec: str) -> None:
    """Under valgrind: count each variant's loop, one dump each."""
    import torch

    torch.set_num_threads(1)
    job = json.loads(Path(spec).read_text())
    for key in job["variants"]:
        call, switches = _call(*key)
        stmt, env = call.spelled()
        source = f"def loop(n):\n    for _ in range(n):\n        {stmt}\n"
        exec(source, env)
        if switches is not None:
            module, setting = switches
            module.set_handle_reuse(setting.handle_reuse)
            module.set_direct_mode(setting.direct_mode)
        env["loop"](20)  # first-use work stays out of the count
        torch._C._valgrind_toggle()
        env["loop"](job["calls"])
        torch._C._valgrind_toggle_and_dump_stats()
        if switches is not None:
            switches[0].set_handle_reuse(True)
            switches[0].set_direct_mode(True)


def _total(dump: Path) -> int:
    text = dump.read_text(errors="replace")
    m = re.search(r"^(?:totals|summary):\s*(\d+)", text, re.M)
    return int(m.group(1)) if m else 0


# The interpreter's frames below the timed loop: collection starts and stops
# inside them, so callgrind books the whole loop on them.
_OUTER_FRAMES = (
    "(below main)",
    "python.c:main",
    "pythonrun.c:",
    "Modules/main.c:",
    "libc-start.c:",
    "libc_start_call_main.h:",
    "PyEval_EvalCode",
    "???:0x",
)


def _per_function(dump: Path) -> dict[str, int]:
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(dump)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counts: dict[str, int] = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.*)$", line)
        if not m or m.group(2).startswith("PROGRAM TOTALS"):
            continue
        # One name for a function whichever object has it (an inlined
        # kernel in the floor and in the module).
        name = re.sub(r" \[[^]]*\]$", "", m.group(2).strip())
        if any(frame in name for frame in _OUTER_FRAMES):
            continue
        counts[name] = counts.get(name, 0) + int(m.group(1).replace(",", ""))
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--before-build-dir", default="build/bench-before-O0")
    p.add_argument("--ops", default=",".join(REPRESENTATIVE))
    p.add_argument("--size", default="1")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--paths", choices=("default", "all"), default="default")
    p.add_argument("--calls", type=int, default=400)
    p.add_argument(
        "--functions",
        type=int,
        default=0,
        metavar="N",
        help="also print the N functions whose counts differ most from the floor's",
    )
    p.add_argument("--keep", metavar="DIR", help="keep the callgrind dumps in DIR")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child)
        return 0

    from infiniops_codegen.bench import floor
    from infiniops_codegen.bench import paths as P
    from infiniops_codegen.bench.runner import timed_paths
    from infiniops_codegen.model.manifest import of_build

    entries = of_build(args.build_dir).by_name()
    names = args.ops.split(",")
    floor_path, _ = floor.build(
        [entries[n] for n in sorted(names)],
        Path(args.before_build_dir) / "bench-floor",
        echo=lambda line: print(line, file=sys.stderr),
    )
    floor_module = floor.load(floor_path)
    rows = []  # (config id, path, index of ours, index of the floor or None)
    variants = []
    for name in names:
        config = _pick(_configs(entries[name]), name, args.size, args.dtype)
        if config is None:
            print(f"{name}: no configuration tiny/{name}/{args.size}/{args.dtype}")
            continue
        default, applicable = timed_paths(config, entries[name])
        for path in applicable if args.paths == "all" else (default,):
            key = [args.build_dir, str(floor_path), name, config.id, path]
            variants.append(key + ["ours"])
            ours = len(variants) - 1
            has = P.has_floor(path) and hasattr(
                floor_module, floor.function_name(path, name)
            )
            if has:
                variants.append(key + ["floor"])
            rows.append((config.id, path, ours, len(variants) - 1 if has else None))
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        Path(tmp).mkdir(parents=True, exist_ok=True)
        spec = Path(tmp) / "job.json"
        spec.write_text(json.dumps({"variants": variants, "calls": args.calls}))
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                "--instr-atstart=yes",
                "--collect-atstart=no",
                "--dump-instr=no",
                sys.executable,
                __file__,
                "--child",
                str(spec),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        dumps = sorted(
            Path(tmp).glob("callgrind.out.*"), key=lambda d: int(d.name.split(".")[-1])
        )
        if len(dumps) != len(variants):
            print(f"expected {len(variants)} dumps, found {len(dumps)}")
            return 1
        n = args.calls
        print(f"{'config':32} {'path':10} {'ours':>8} {'floor':>8} {'over':>7}")
        for config_id, path, i, j in rows:
            ours = _total(dumps[i]) / n
            if j is None:
                print(f"{config_id:32} {path:10} {ours:8.0f} {'-':>8} {'-':>7}")
                continue
            base = _total(dumps[j]) / n
            print(
                f"{config_id:32} {path:10} {ours:8.0f} {base:8.0f} {ours - base:+7.0f}"
            )
            if args.functions:
                a, b = _per_function(dumps[i]), _per_function(dumps[j])
                delta = {f: a.get(f, 0) - b.get(f, 0) for f in set(a) | set(b)}
                top = sorted(delta.items(), key=lambda t: -abs(t[1]))[: args.functions]
                for fn, d in top:
                    print(f"    {d / n:+8.1f}  {fn[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
