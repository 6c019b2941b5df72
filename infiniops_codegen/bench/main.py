"""`infiniops-codegen bench` end to end: select configurations, make sure the
builds and the floor exist, time, write bench.json / bench.md / bench.png."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from . import builds, cases, floor, plot, report, runner
from ..pipeline import REPO_ROOT


class BenchError(Exception):
    """A problem for people (bad selection, failed build)."""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _git_revision() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return head + ("+modified" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _rel(path: Path) -> str:
    """Relative to the repository when inside it (bench.json is committed)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT.resolve()))
    except ValueError:
        return str(path)


def _build_meta(info: builds.BuildInfo, state: dict) -> dict:
    return {
        "build_dir": _rel(info.build_dir),
        "opt_level": info.opt_level,
        "ops": len(info.ops),
        **state,
        "module_mtime": datetime.datetime.fromtimestamp(
            info.module.stat().st_mtime, datetime.timezone.utc
        ).isoformat(timespec="seconds"),
    }


def run_bench(
    *,
    quick: bool = False,
    ops: set[str] | None = None,
    out: Path = Path("bench-results"),
    after_build_dir: Path | None = None,
    before_build_dir: Path | None = None,
    threads: int = 1,
    echo=print,
) -> dict:
    """Run the sweep; returns the JSON document written to out/bench.json."""
    start = time.perf_counter()
    after_dir = Path(
        after_build_dir or os.environ.get("INFINIOPS_BUILD_DIR") or REPO_ROOT / "build"
    )
    before_dir = Path(before_build_dir or REPO_ROOT / "build-O0")
    configs = cases.select(quick, ops)
    if ops is not None:
        known = {c.op for c in cases.select(quick, None)}
        for name in sorted(ops - known):
            echo(f"note: no {'quick ' if quick else ''}configuration uses op '{name}'")
    if not configs:
        raise BenchError("no configuration left to run (check --ops)")
    try:
        after = builds.ensure_after(after_dir, echo)
        entries = {o["name"]: o for o in after.manifest()["ops"]}
        missing = sorted({c.op for c in configs} - set(entries))
        if missing:
            echo(f"note: {after_dir} lacks {', '.join(missing)}: skipped")
        configs = [c for c in configs if c.op in entries]
        needed = {c.op for c in configs}
        before = builds.ensure_before(before_dir, "0", needed, echo)
    except builds.BuildFailed as e:
        raise BenchError(str(e)) from None
    try:
        floor_path, left_out = floor.build(
            [entries[name] for name in sorted(needed)],
            before_dir / "bench-floor",
            echo,
        )
    except floor.FloorError as e:
        raise BenchError(str(e)) from None
    for line in left_out:
        echo(f"note: no floor for {line}")

    params = {
        "threads": threads,
        "before_build_dir": str(before_dir),
        "after_build_dir": str(after_dir),
        "floor_path": str(floor_path),
    }
    plan = runner.QUICK if quick else runner.FULL
    n_tiny = sum(c.family == "tiny" for c in configs)
    echo(
        f"timing {len(configs)} configurations ({n_tiny} tiny, "
        f"{len(configs) - n_tiny} LLM) over {len(needed)} ops, interleaved "
        "reference / before / after / floor"
    )
    load_before = os.getloadavg()
    outcomes, states = runner.run_all(configs, entries, params, plan, echo)
    rows = [report.config_row(o, entries[o.config.op]) for o in outcomes]
    summary = report.summarise(rows)
    if not summary:
        raise BenchError("every configuration failed; see the lines above")

    import torch

    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "quick": quick,
        "ops_filter": sorted(ops) if ops is not None else None,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "threads": threads,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "git": _git_revision(),
        "before": _build_meta(before, states["before"]),
        "after": _build_meta(after, states["after"]),
        "floor": _rel(floor_path),
        "plan": asdict(plan),
        "configs": len(rows),
        "skipped": sum("error" in r for r in rows),
        "wall_s": round(time.perf_counter() - start, 1),
    }
    out.mkdir(parents=True, exist_ok=True)
    report.write_json(out / "bench.json", meta, rows, summary)
    report.write_markdown(out / "bench.md", meta, rows, summary)
    title = (
        f"infiniops fallback vs torch.<op>(out=) · {meta['cpu']} · "
        f"torch {meta['torch_version']} · {threads} thread(s)"
    )
    plot.write_png(out / "bench.png", rows, title)
    echo("")
    echo(report.summary_text(summary))
    echo(f"wrote {out}/bench.json, bench.md, bench.png ({meta['wall_s']:.0f} s)")
    return {"meta": meta, "summary": summary, "configs": rows}
