"""Instructions per call of the library's calls and their like-for-like floors
(callgrind), for the bench's tiny configurations of a few ops:

    python scripts/callgrind_vs_floor.py [--build-dir build] [--paths all]
        [--ops abs,add,...] [--size 1] [--dtype float32] [--calls 400]

For each op, the configuration `tiny/<op>/<size>/<dtype>` of the bench is
made (the same tensors the bench times), and each path that applies (only
the default one unless --paths all) is run under callgrind next to its floor:
the library's call forced onto the path as the bench forces it, and the
floor's function. One intra-op thread, as in the bench. Prints one line per
op and path: ours, floor, ours - floor (instructions per call, the Python
loop included in both, so the difference is the library's own).

The floors are built (or found) as the bench builds them, under
<before-build-dir>/bench-floor/.
"""

from __future__ import annotations

import argparse
import sys
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


def _stmt(call) -> tuple[str, dict]:
    """The call spelled out (as the bench's timed loop spells it)."""
    env = {"f": call.func}
    parts = []
    for i, a in enumerate(call.args):
        env[f"a{i}"] = a
        parts.append(f"a{i}")
    for i, (k, v) in enumerate(call.kwargs):
        env[f"k{i}"] = v
        parts.append(f"{k}=k{i}")
    return f"f({', '.join(parts)})", env


def call_env(build_dir, floor_path, name, config_id, path, which):
    """(statement, its globals) of one variant; run in callgrind's process
    too (its globals must be made there)."""
    import torch

    from infiniops_codegen.bench import calls, cases, floor
    from infiniops_codegen.bench import paths as P
    from infiniops_codegen.bench import reference
    from infiniops_codegen.bench.runner import timed_paths
    from infiniops_codegen.manifest import of_build
    from infiniops_codegen.runtime import load

    torch.set_num_threads(1)
    op = of_build(build_dir).by_name()[name]
    config = {c.id: c for c in cases.select(False, {name})}[config_id]
    default, _ = timed_paths(config, op)
    values = cases.materialise(config)
    outputs = [torch.empty_like(w) for w in reference.expected(op, values)]
    if which == "floor":
        fn = getattr(floor.load(Path(floor_path)), floor.function_name(path, name))
        call = calls.floor(fn, op, values, outputs)
    else:
        module = load(build_dir)
        setting = P.setting(path, default)
        module.set_handle_reuse(setting.handle_reuse)
        module.set_direct_mode(setting.direct_mode)
        call = calls.ours(
            getattr(module, name), op, values, outputs, setting.implementation
        )
    call()  # first-use work (interned names, lookups) stays out of the count
    return _stmt(call)


def _collect(n: int, *key):
    from torch.utils.benchmark import Timer

    stmt, _ = call_env(*key)
    setup = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from callgrind_vs_floor import call_env\n"
        f"globals().update(call_env(*{key!r})[1])"
    )
    return Timer(stmt, setup=setup).collect_callgrind(number=n, collect_baseline=False)


def _functions(ours, floor, n: int, top: int) -> None:
    """The functions whose own (exclusive) counts differ most, per call."""
    delta = (
        ours.as_standardized().stats(inclusive=False)
        - floor.as_standardized().stats(inclusive=False)
    ).denoise()
    for count, fn in sorted(delta, key=lambda t: -abs(t[0]))[:top]:
        print(f"    {count / n:+8.1f}  {fn[:150]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--before-build-dir", default="build-O0")
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
    args = p.parse_args(argv)

    from infiniops_codegen.bench import cases, floor
    from infiniops_codegen.bench import paths as P
    from infiniops_codegen.bench.runner import timed_paths
    from infiniops_codegen.manifest import of_build

    entries = of_build(args.build_dir).by_name()
    names = args.ops.split(",")
    floor_path, _ = floor.build(
        [entries[n] for n in sorted(names)],
        Path(args.before_build_dir) / "bench-floor",
        echo=lambda line: print(line, file=sys.stderr),
    )
    configs = {c.id: c for c in cases.select(False, set(names))}
    print(f"{'config':32} {'path':10} {'ours':>8} {'floor':>8} {'over':>7}")
    for name in names:
        op = entries[name]
        config = configs.get(f"tiny/{name}/{args.size}/{args.dtype}")
        if config is None:
            print(f"{name}: no configuration tiny/{name}/{args.size}/{args.dtype}")
            continue
        default, applicable = timed_paths(config, op)
        chosen = applicable if args.paths == "all" else (default,)
        for path in chosen:
            key = (args.build_dir, str(floor_path), name, config.id, path)
            ours_stats = _collect(args.calls, *key, "ours")
            ours = ours_stats.counts(denoise=True) / args.calls
            if not P.has_floor(path) or not hasattr(
                floor.load(floor_path), floor.function_name(path, name)
            ):
                print(f"{config.id:32} {path:10} {ours:8.0f} {'-':>8} {'-':>7}")
                continue
            floor_stats = _collect(args.calls, *key, "floor")
            base = floor_stats.counts(denoise=True) / args.calls
            print(
                f"{config.id:32} {path:10} {ours:8.0f} {base:8.0f} {ours - base:+7.0f}",
                flush=True,
            )
            if args.functions:
                _functions(ours_stats, floor_stats, args.calls, args.functions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
