"""Per-configuration figures, summaries, and the JSON / Markdown outputs.

Latency: the median over rounds of each variant's per-call time. The
comparisons are *paired*: taken within each round (whose batches ran back to
back), then the median over rounds, so that the shared machine's slow changes
of speed, which hit a whole round alike, cancel out.

  overhead over the floor   path - floor of that path (ns): what the library
                            adds to the least work that path needs (floor.py)
  ratio                     reference / variant (> 1: faster than torch)
  gap                       variant - reference (ns; negative: faster)
  after vs before           after / before - 1 (negative: after is faster)
  api ratio                 torch_api / api: torch.<function>(...) without
                            out= against ours without out= (> 1: ours faster)
  resolution                api_out - the default path: what choosing among a
                            function's overloads adds to the explicit
                            overload's call (ns)

"after" is the default path of the configuration (paths.default_path);
"before" the before build. Summaries are medians (and counts) over
configurations; a configuration that failed or whose outputs differ from
PyTorch's is excluded from every one of them (and fails the command).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from . import paths as P
from .runner import Outcome
from .worker import floor_role

GROUPS = ("tiny", "llm", "all")


def config_row(o: Outcome) -> dict:
    c = o.config
    row = {
        "id": c.id,
        "family": c.family,
        "op": c.op,
        "label": c.label,
        "size": c.size,
        "dtype": c.dtype,
        "shapes": c.shape_text,
        "source": c.source,
        "after_path": o.default,
        "paths": list(o.paths),
    }
    if o.error:
        row["error"] = o.error
        row["excluded"] = f"failed: {o.error}"
        return row
    s = o.samples
    row.update(
        calls=o.calls,
        calls_per_batch=o.calls_per_batch,
        rounds=o.reps,
        median_ns={k: round(statistics.median(v), 1) for k, v in s.items()},
        min_ns={k: round(min(v), 1) for k, v in s.items()},
        outputs_match=o.match,
    )
    bad = sorted(r for r, ok in o.match.items() if not ok)
    if bad:
        row["excluded"] = "outputs differ from PyTorch's: " + ", ".join(bad)

    def paired(fn, a: str, b: str, digits: int) -> float:
        return round(statistics.median(map(fn, s[a], s[b])), digits)

    variants = {"before": "before", "after": o.default}
    variants.update({p: p for p in o.paths})
    row["ratio"] = {
        k: paired(lambda x, r: r / x, v, "reference", 4) for k, v in variants.items()
    }
    row["gap_ns"] = {
        k: paired(lambda x, r: x - r, v, "reference", 1) for k, v in variants.items()
    }
    over, floor_ratio = {}, {}
    for p in o.paths:
        if floor_role(p) in s:
            over[p] = paired(lambda x, f: x - f, p, floor_role(p), 1)
            floor_ratio[p] = paired(lambda f, r: r / f, floor_role(p), "reference", 4)
    if o.default in over:
        over["after"] = over[o.default]
        floor_ratio["after"] = floor_ratio[o.default]
    row["over_floor_ns"] = over
    row["floor_ratio"] = floor_ratio
    row["after_vs_before"] = paired(lambda a, b: a / b - 1, o.default, "before", 4)
    if "api" in s and "torch_api" in s:
        row["api_ratio"] = paired(lambda x, r: r / x, "api", "torch_api", 4)
        row["api_gap_ns"] = paired(lambda x, r: x - r, "api", "torch_api", 1)
    if "api_out" in s:
        row["resolution_ns"] = paired(lambda x, d: x - d, "api_out", o.default, 1)
    return row


def _median(values) -> float | None:
    values = list(values)
    return round(statistics.median(values), 4) if values else None


def _quartiles(values) -> list[float] | None:
    values = sorted(values)
    if len(values) < 4:
        return None
    q = statistics.quantiles(values, n=4)
    return [round(q[0], 1), round(q[2], 1)]


def _variant_summary(sel: list[dict], key: str) -> dict | None:
    """Summary of one variant (before, after or a path) over the rows that
    timed it."""
    rows = [r for r in sel if key in r["ratio"]]
    if not rows:
        return None
    ratios = [r["ratio"][key] for r in rows]
    with_floor = [r for r in rows if key in r["over_floor_ns"]]
    over = [r["over_floor_ns"][key] for r in with_floor]
    return {
        "configs": len(rows),
        "ops": len({r["op"] for r in rows}),
        "median_ratio": _median(ratios),
        "min_ratio": round(min(ratios), 4),
        "median_gap_ns": _median(r["gap_ns"][key] for r in rows),
        "below_0.6x": sum(x < 0.6 for x in ratios),
        "below_0.9x": sum(x < 0.9 for x in ratios),
        "configs_with_floor": len(with_floor),
        "median_over_floor_ns": _median(over),
        "over_floor_quartiles_ns": _quartiles(over),
        "median_floor_ratio": _median(r["floor_ratio"][key] for r in with_floor),
    }


def included(rows: list[dict]) -> list[dict]:
    return [r for r in rows if "excluded" not in r]


def summarise(rows: list[dict]) -> dict:
    """{group: {...}} over the included rows; group 'all' is every family."""
    timed = included(rows)
    result = {}
    for group in GROUPS:
        sel = [r for r in timed if group == "all" or r["family"] == group]
        if not sel:
            continue
        s = {
            "configs": len(sel),
            "ops": len({r["op"] for r in sel}),
            "median_latency_ns": {
                "reference": _median(r["median_ns"]["reference"] for r in sel),
                "before": _median(r["median_ns"]["before"] for r in sel),
                "after": _median(r["median_ns"][r["after_path"]] for r in sel),
            },
            "after_vs_before_median": _median(r["after_vs_before"] for r in sel),
        }
        for key in ("after", "before", *P.PATHS):
            summary = _variant_summary(sel, key)
            if summary is not None:
                s[key] = summary
        lat = s["median_latency_ns"]
        s["after_vs_before_of_medians"] = round(lat["after"] / lat["before"] - 1, 4)
        api = [r for r in sel if "api_ratio" in r]
        if api:
            ratios = [r["api_ratio"] for r in api]
            s["api"] = {
                "configs": len(api),
                "ops": len({r["op"] for r in api}),
                "median_ratio": _median(ratios),
                "min_ratio": round(min(ratios), 4),
                "median_gap_ns": _median(r["api_gap_ns"] for r in api),
            }
        resolution = [r["resolution_ns"] for r in sel if "resolution_ns" in r]
        if resolution:
            s["resolution"] = {
                "configs": len(resolution),
                "median_ns": _median(resolution),
                "quartiles_ns": _quartiles(resolution),
            }
        result[group] = s
    return result


def write_json(path: Path, meta: dict, rows: list[dict], summary: dict) -> None:
    """Indented meta and summary; one line per configuration (small diffs)."""
    head = json.dumps({"meta": meta, "summary": summary}, indent=1)[:-2]
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    body = ",\n  ".join(lines)
    path.write_text(f'{head},\n "configs": [\n  {body}\n ]\n}}\n')


def ns(x: float | None) -> str:
    if x is None:
        return "–"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.2f} ms"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.1f} µs"
    return f"{x:.0f} ns"


def _signed_ns(x: float | None) -> str:
    return "–" if x is None else ("+" if x >= 0 else "") + ns(x)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}%"


def _ratio(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}x"


VARIANT_TITLES = {
    "after": "**after** (default path)",
    "native": "native kernel",
    "direct": "direct (`at::cpu::`)",
    "dispatcher": "dispatcher (`at::`)",
    "from_blob": "from_blob",
    "before": "before (baseline)",
}


def headline_table(summary: dict, group: str) -> list[str]:
    """Per path: overhead over its like-for-like floor, ratio vs torch."""
    s = summary[group]
    lines = [
        "| variant | configs (ops) | over the like-for-like floor, median "
        "[quartiles] | ratio vs torch, median (lowest) | floor's ratio vs torch |",
        "|---|---|---|---|---|",
    ]
    for key in ("after", *P.PATHS, "before"):
        v = s.get(key)
        if v is None:
            continue
        quart = v["over_floor_quartiles_ns"]
        over = _signed_ns(v["median_over_floor_ns"])
        if quart:
            over += f" [{ns(quart[0])}, {ns(quart[1])}]"
        if key == "before":
            over = "– (no floor)"
        elif v["configs_with_floor"] < v["configs"]:
            over += f" ({v['configs_with_floor']} with a floor)"
        lines.append(
            f"| {VARIANT_TITLES[key]} | {v['configs']} ({v['ops']}) | {over} "
            f"| {_ratio(v['median_ratio'])} ({_ratio(v['min_ratio'])}) "
            f"| {_ratio(v['median_floor_ratio'])} |"
        )
    return lines


def summary_table(summary: dict) -> list[str]:
    groups = [g for g in GROUPS if g in summary]
    head = ["metric"] + groups
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def row(name, fn):
        cells = []
        for g in groups:
            try:
                cells.append(fn(summary[g]))
            except (KeyError, TypeError):
                cells.append("–")
        lines.append("| " + " | ".join([name] + cells) + " |")

    row("configurations (ops)", lambda s: f"{s['configs']} ({s['ops']})")
    for k in ("reference", "before", "after"):
        row(f"median latency, {k}", lambda s, k=k: ns(s["median_latency_ns"][k]))
    for v in ("after", "before"):
        row(f"median ratio vs torch, {v}", lambda s, v=v: _ratio(s[v]["median_ratio"]))
        row(f"lowest ratio, {v}", lambda s, v=v: _ratio(s[v]["min_ratio"]))
        row(
            f"median gap to torch, {v}",
            lambda s, v=v: _signed_ns(s[v]["median_gap_ns"]),
        )
        row(f"configs below 0.9x, {v}", lambda s, v=v: str(s[v]["below_0.9x"]))
        row(f"configs below 0.6x, {v}", lambda s, v=v: str(s[v]["below_0.6x"]))
    row(
        "median over the floor, after",
        lambda s: _signed_ns(s["after"]["median_over_floor_ns"]),
    )
    row(
        "no out=: median ratio vs torch (lowest)",
        lambda s: f"{_ratio(s['api']['median_ratio'])} ({_ratio(s['api']['min_ratio'])})",
    )
    row("no out=: configurations", lambda s: str(s["api"]["configs"]))
    row(
        "overload resolution, median (configs)",
        lambda s: f"{_signed_ns(s['resolution']['median_ns'])} ({s['resolution']['configs']})",
    )
    row(
        "after vs before, median per config",
        lambda s: _pct(s["after_vs_before_median"]),
    )
    row(
        "after vs before, of median latencies",
        lambda s: _pct(s["after_vs_before_of_medians"]),
    )
    return lines


def config_table(rows: list[dict]) -> list[str]:
    head = (
        "| configuration | shapes | after path | reference | before | after "
        "| ratio before | ratio after | over floor: after | native | direct "
        "| dispatcher | from_blob | after vs before |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        if "error" in r:
            continue
        m = r["median_ns"]
        flag = " ⚠ excluded" if "excluded" in r else ""
        over = r["over_floor_ns"]
        cells = [_signed_ns(over.get(p)) if p in over else "" for p in P.PATHS]
        lines.append(
            f"| `{r['id']}`{flag} | {r['shapes']} | {r['after_path']} "
            f"| {ns(m['reference'])} | {ns(m['before'])} | {ns(m[r['after_path']])} "
            f"| {_ratio(r['ratio']['before'])} | {_ratio(r['ratio']['after'])} "
            f"| {_signed_ns(over.get('after'))} | {' | '.join(cells)} "
            f"| {_pct(r['after_vs_before'])} |"
        )
    return lines


def _build_line(b: dict) -> str:
    parts = [f"`{b['build_dir']}` (-O{b['opt_level']})"]
    if "handle_reuse" in b:
        parts.append(
            "handle reuse on" if b["handle_reuse"] else "handle reuse off (from_blob)"
        )
    if "direct_mode" in b:
        parts.append(f"direct kernel mode {'on' if b['direct_mode'] else 'off'}")
    return ", ".join(parts)


def git_text(git: dict) -> str:
    text = f"git `{git.get('commit', 'unknown')[:12]}`"
    if git.get("modified"):
        changed = ", ".join(git.get("changes", [])[:5])
        text += f" **+ uncommitted changes** ({changed})"
    return text


def write_markdown(path: Path, meta: dict, rows: list[dict], summary: dict) -> None:
    excluded = [r for r in rows if "excluded" in r]
    lines = [
        "# infiniops-codegen bench",
        "",
        f"{meta['date']} · {git_text(meta['git'])} · torch {meta['torch_version']} · "
        f"{meta['cpu']} · {meta['threads']} intra-op thread(s) · "
        f"{meta['wall_s']:.0f} s · {'quick' if meta['quick'] else 'full'} sweep",
        "",
        "- reference: `torch.<op>(..., out=)` from Python",
        "- without out=: `torch.<f>(...)` against `ops.<f>(...)` (torch's API, "
        "the outputs allocated); overload resolution: `ops.<f>(..., out=)` "
        "minus the explicit overload's call",
        f"- before: {_build_line(meta['before'])}, implementation=\"torch\"",
        f"- after: {_build_line(meta['after'])}; *after* is a plain call (the "
        "default path); each path is the after build forced onto it "
        "(`set_direct_mode`, `set_handle_reuse`, `implementation=`)",
        "- floors: per path, a bare binding doing that path's work and nothing "
        "else (`infiniops_codegen/bench/floor.py`)",
        "",
        "Latencies are medians over rounds of the per-call time. Overheads and "
        "ratios are paired: taken within each round (all variants run back to "
        "back, each path next to its floor), then the median over rounds. "
        "Summary rows are medians over configurations. Ratio = reference / "
        "variant (> 1: faster than torch).",
        "",
    ]
    for group in GROUPS:
        if group in summary:
            lines += [f"## Headline: {group}", "", *headline_table(summary, group), ""]
    lines += ["## Summary", "", *summary_table(summary), ""]
    if excluded:
        lines += [f"## Excluded ({len(excluded)}): not in any figure above", ""]
        lines += [f"- `{r['id']}`: {r['excluded']}" for r in excluded]
        lines.append("")
    lines += [
        "## Configurations",
        "",
        "after path: what a plain call runs. over floor: each path minus its "
        "own floor (blank: not timed for this configuration).",
        "",
        *config_table(rows),
    ]
    path.write_text("\n".join(lines) + "\n")


def summary_text(summary: dict) -> str:
    """The headline for stdout."""
    out = []
    for group in GROUPS:
        if group not in summary:
            continue
        s = summary[group]
        lat = s["median_latency_ns"]
        out.append(
            f"{group}: {s['configs']} configs, {s['ops']} ops; median latency "
            f"ref {ns(lat['reference'])}, before {ns(lat['before'])}, "
            f"after {ns(lat['after'])}; after vs before "
            f"{_pct(s['after_vs_before_median'])}"
        )
        out.append(
            f"  {'variant':<11}{'configs':>8}  {'over floor':>11}  "
            f"{'ratio vs torch (lowest)':<24}{'floor ratio':>11}"
        )
        for key in ("after", *P.PATHS, "before"):
            v = s.get(key)
            if v is None:
                continue
            over = "–" if key == "before" else _signed_ns(v["median_over_floor_ns"])
            out.append(
                f"  {key:<11}{v['configs']:>8}  {over:>11}  "
                f"{_ratio(v['median_ratio']) + ' (' + _ratio(v['min_ratio']) + ')':<24}"
                f"{_ratio(v['median_floor_ratio']):>11}"
            )
        if "api" in s:
            a = s["api"]
            out.append(
                f"  without out=: {a['configs']} configs, torch.<f>(...) / "
                f"ops.<f>(...) median {_ratio(a['median_ratio'])} (lowest "
                f"{_ratio(a['min_ratio'])}), gap {_signed_ns(a['median_gap_ns'])}"
            )
        if "resolution" in s:
            r = s["resolution"]
            out.append(
                f"  overload resolution: ops.<f>(..., out=) minus the explicit "
                f"overload's call, median {_signed_ns(r['median_ns'])} over "
                f"{r['configs']} configs"
            )
    return "\n".join(out)
