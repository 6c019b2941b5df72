"""`infiniops-codegen bench` end to end: select configurations, make sure the
builds and the floors exist, time, write bench.json / bench.md / bench.png,
and fail when a configuration failed or its outputs differ from PyTorch's."""

from __future__ import annotations

import datetime
import os
import platform
import time
from dataclasses import asdict
from pathlib import Path

from ..base import project as projects
from ..toolchain.builder import Built
from . import builds, cases, derive, floor, gitstate, plot, report, runner


def published() -> Path:
    """The committed copy of the results: docs/perf/ of the project."""
    return projects.current().root / "docs" / "perf"


def default_before_dir() -> Path:
    """The bench's own before build: inside the project's build directory,
    never in the source tree."""
    return projects.current().build_dir / "bench-before-O0"


class BenchError(Exception):
    """The run failed (a build, the floor, a configuration): exit 1."""


class BenchUsageError(Exception):
    """A bad request (unknown op, refused output directory): exit 2."""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _rel(path: Path) -> str:
    """Relative to the project when inside it (bench.json is committed)."""
    return projects.current().rel(path)


def _build_meta(info: Built, state: dict) -> dict:
    return {
        "build_dir": _rel(info.build_dir),
        "opt_level": info.opt_level,
        "ops": len(info.ops),
        **state,
        "module_mtime": datetime.datetime.fromtimestamp(
            info.module.stat().st_mtime, datetime.timezone.utc
        ).isoformat(timespec="seconds"),
        "stale_inputs": builds.stale_inputs(info.module)[:20],
    }


def publishing(out: Path) -> bool:
    """Is out the committed copy (docs/perf/)?"""
    return Path(out).resolve() == published().resolve()


def check_publishable(git: dict, after: Built | None) -> None:
    """docs/perf/ must come from an unmodified tree, built from it."""
    if git.get("modified"):
        raise BenchUsageError(
            f"refusing to write {_rel(published())}/ from a modified tree "
            f"({', '.join(git['changes'][:8])}): commit or stash first, or pass "
            "another --out"
        )
    if git.get("commit") in (None, "unknown"):
        raise BenchUsageError(
            f"refusing to write {_rel(published())}/: the git commit is unknown"
        )
    stale = builds.stale_inputs(after.module) if after is not None else []
    if stale:
        raise BenchUsageError(
            f"refusing to write {_rel(published())}/: {_rel(after.build_dir)} is "
            f"older than {', '.join(stale[:5])}; run 'infiniops-codegen build' first"
        )


def _select(quick: bool, ops: set[str] | None, entries: dict, echo) -> list:
    """Table configurations of the build's ops, plus configurations derived
    from the harness's samples for named ops the table lacks (and, with
    --quick alone, for the build's own ops in place of quick ops it lacks)."""
    configs = cases.select(quick, ops)
    missing = sorted({c.op for c in configs} - set(entries))
    configs = [c for c in configs if c.op in entries]
    if quick and ops is None:
        own = _own_quick(configs, entries, echo)
        if missing:
            echo(
                f"note: the after build lacks {', '.join(missing)} of the quick set"
                + (f": its own {', '.join(c.op for c in own)} instead" if own else "")
            )
        return configs + own
    if missing:
        echo(f"note: the after build lacks {', '.join(missing)}: skipped")
    if ops is None:
        return configs
    covered = {c.op for c in configs}
    for name in sorted(ops - covered):
        try:
            found = derive.derive(entries[name], quick)
        except derive.NotDerivable as e:
            raise BenchError(str(e)) from None
        echo(
            f"note: {name} is not in the configuration table: {len(found)} "
            "configuration(s) from the harness's samples"
        )
        configs += found
    return configs


def _own_quick(chosen: list, entries: dict, echo) -> list:
    """--quick in a build without every op of the quick set (a project of
    its own): the build's other ops take the free places, those with native
    kernels first, one configuration each (its first tiny one in the table,
    else one from the harness's samples). A build with the whole quick set
    keeps it as it is."""
    places = len({c.op for c in cases.select(True, None)})
    covered = {c.op for c in chosen}
    others = [name for name in entries if name not in covered]
    others.sort(key=lambda name: not entries[name].implementations.native)
    found: list = []
    for name in others:
        if len(covered) >= places:
            break
        configs = cases.select(True, {name})[:1]
        if not configs:
            try:
                configs = derive.derive(entries[name], True)
            except derive.NotDerivable as e:
                echo(f"note: --quick leaves out {e}")
                continue
        found += configs
        covered.add(name)
    return found


def run_bench(
    *,
    quick: bool = False,
    ops: set[str] | None = None,
    out: Path | None = None,
    after_build_dir: Path | None = None,
    before_build_dir: Path | None = None,
    threads: int = 1,
    device: str = "cpu",
    echo=print,
    verbose: bool = False,
) -> dict:
    """Run the sweep; returns the JSON document written to out/bench.json.
    Raises BenchUsageError (before timing anything) or BenchError."""
    start = time.perf_counter()
    out = Path(out or projects.current().build_dir / "bench-results")
    if ops is not None and not ops:
        raise BenchUsageError("--ops names no op")
    device = _check_device(device)
    root = projects.current().root
    git = gitstate.state(root, ignore=_bench_outputs(out))
    if publishing(out):
        check_publishable(git, None)
    after_dir = Path(
        after_build_dir
        or os.environ.get("INFINIOPS_BUILD_DIR")
        or projects.current().build_dir
    )
    before_dir = Path(before_build_dir or default_before_dir())
    try:
        after = builds.ensure_after(after_dir, echo)
    except builds.BuildFailed as e:
        raise BenchError(str(e)) from None
    if publishing(out):
        check_publishable(git, after)
    entries = after.manifest.by_name()
    if ops is not None:
        unknown = sorted(ops - set(entries))
        if unknown:
            raise BenchUsageError(
                f"not an op of {_rel(after_dir)}: {', '.join(unknown)} "
                "('infiniops-codegen list' shows the build's ops)"
            )
    configs = _select(quick, ops, entries, echo)
    if not configs:
        if ops is None:  # the full sweep of a build without any table op
            raise BenchUsageError(
                f"none of the configuration table's ops is in {_rel(after_dir)}: "
                "name the ops to time with --ops (their configurations come "
                "from the harness's samples), or use --quick"
            )
        raise BenchUsageError("no configuration left to run (check --ops)")
    needed = {c.op for c in configs}
    try:
        before = builds.ensure_before(before_dir, "0", needed, echo)
        floor_path, left_out = floor.build(
            [entries[name] for name in sorted(needed)],
            before_dir / "bench-floor",
            echo,
            after.generated_dir,
        )
    except builds.BuildFailed as e:
        raise BenchError(str(e)) from None
    except floor.FloorError as e:
        raise BenchError(str(e)) from None
    for line in left_out:
        echo(f"note: no floor for {line}")

    params = {
        "threads": threads,
        "device": device,
        "before_build_dir": str(before_dir),
        "after_build_dir": str(after_dir),
        "floor_path": str(floor_path),
    }
    plan = runner.QUICK if quick else runner.FULL
    n_tiny = sum(c.family == "tiny" for c in configs)
    echo(
        f"timing {len(configs)} configurations ({n_tiny} tiny: every path, "
        f"{len(configs) - n_tiny} LLM: the default path) over {len(needed)} ops, "
        "interleaved: reference, before, each path next to its floor"
    )
    load_before = os.getloadavg()
    outcomes, states = runner.run_all(configs, entries, params, plan, echo, verbose)
    rows = [report.config_row(o) for o in outcomes]
    summary = report.summarise(rows)
    git_after = gitstate.state(root, ignore=_bench_outputs(out))
    if git_after != git:
        echo("warning: the git state changed during the run (recorded in meta)")

    import torch

    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "git": git,
        "git_after_run": git_after if git_after != git else "unchanged",
        "quick": quick,
        "ops_filter": sorted(ops) if ops is not None else None,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "threads": threads,
        "device": device,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "before": _build_meta(before, states["before"]),
        "after": _build_meta(after, states["after"]),
        "floor": _rel(floor_path),
        "floor_left_out": left_out,
        "plan": asdict(plan),
        "configs": len(rows),
        "excluded": sum("excluded" in r for r in rows),
        "wall_s": round(time.perf_counter() - start, 1),
    }
    out.mkdir(parents=True, exist_ok=True)
    report.write_json(out / "bench.json", meta, rows, summary)
    report.write_markdown(out / "bench.md", meta, rows, summary)
    plot.write_png(out / "bench.png", rows, meta)
    echo("")
    echo(report.summary_text(summary))
    echo(f"wrote {out}/bench.json, bench.md, bench.png ({meta['wall_s']:.0f} s)")
    bad = [r for r in rows if "excluded" in r]
    if bad:
        listing = "\n".join(f"  {r['id']}: {r['excluded']}" for r in bad)
        raise BenchError(
            f"{len(bad)} of {len(rows)} configurations failed or did not match "
            f"PyTorch (excluded from every figure):\n{listing}"
        )
    return {"meta": meta, "summary": summary, "configs": rows}


def _check_device(device: str) -> str:
    """A torch device string this process can use (usage error otherwise)."""
    import torch

    from ..base.platforms import import_torch_module

    # A torch port's device (sim, npu, ...) exists once its module is imported.
    import_torch_module(device)
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise BenchUsageError(f"--device {device}: {e}") from None
    if parsed.type != "cpu":
        module = getattr(torch, parsed.type, None)
        if module is None or not module.is_available():
            raise BenchUsageError(f"--device {device}: not available here")
    return str(parsed)


def _bench_outputs(out: Path) -> list[Path]:
    return [Path(out) / name for name in ("bench.json", "bench.md", "bench.png")]
