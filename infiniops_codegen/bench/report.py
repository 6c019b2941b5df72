"""Per-configuration figures, summaries, and the JSON / Markdown outputs.

Latency: the median over rounds of each variant's per-call time. The
comparisons are *paired*: taken within each round (whose four batches ran
back to back), then the median over rounds, so that the shared machine's
slow changes of speed, which hit a whole round alike, cancel out.
(ours = before or after)
  dispatch gap        ours - reference (ns; negative: we are faster)
  speed ratio         reference / ours (> 1: we are faster)
  overhead over floor ours - floor (ns)
  after vs before     after / before - 1 (negative: after is faster)
Summaries are medians (and counts) over configurations.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from .runner import Outcome

VARIANTS = ("before", "after")
GROUPS = ("tiny", "llm", "all")
SLOW_RATIOS = (0.6, 0.9)


def config_row(o: Outcome, entry: dict) -> dict:
    c = o.config
    row = {
        "id": c.id,
        "family": c.family,
        "op": c.op,
        "label": c.label,
        "size": c.size,
        "dtype": c.dtype,
        "shapes": c.shape_text,
        "after_implementation": _implementation(entry, c.dtype),
    }
    if o.error:
        row["error"] = o.error
        return row
    s = o.samples
    row.update(
        reference_call=o.reference_call,
        calls_per_batch=o.calls_per_batch,
        rounds=o.reps,
        median_ns={k: round(statistics.median(v), 1) for k, v in s.items()},
        min_ns={k: round(min(v), 1) for k, v in s.items()},
        outputs_match=o.match,
    )

    def paired(fn, a: str, b: str, digits: int) -> float:
        return round(statistics.median(map(fn, s[a], s[b])), digits)

    for v in VARIANTS:
        row[f"gap_{v}_ns"] = paired(lambda x, r: x - r, v, "reference", 1)
        row[f"ratio_{v}"] = paired(lambda x, r: r / x, v, "reference", 4)
        row[f"over_floor_{v}_ns"] = paired(lambda x, f: x - f, v, "floor", 1)
    row["after_vs_before"] = paired(lambda a, b: a / b - 1, "after", "before", 4)
    return row


def _implementation(entry: dict, dtype: str) -> str:
    native = entry.get("implementations", {}).get("native", {})
    return "native" if dtype in native.get("cpu", []) else "torch"


def _median(values) -> float | None:
    values = list(values)
    return round(statistics.median(values), 4) if values else None


def summarise(rows: list[dict]) -> dict:
    """{group: {...}} over timed rows; group 'all' is every family."""
    timed = [r for r in rows if "error" not in r]
    result = {}
    for group in GROUPS:
        sel = [r for r in timed if group == "all" or r["family"] == group]
        if not sel:
            continue
        s = {
            "configs": len(sel),
            "ops": len({r["op"] for r in sel}),
            "median_latency_ns": {
                k: _median(r["median_ns"][k] for r in sel)
                for k in ("reference", "before", "after", "floor")
            },
            "after_vs_before_median": _median(r["after_vs_before"] for r in sel),
        }
        for v in VARIANTS:
            ratios = [r[f"ratio_{v}"] for r in sel]
            s[v] = {
                "median_gap_ns": _median(r[f"gap_{v}_ns"] for r in sel),
                "median_ratio": _median(ratios),
                "min_ratio": round(min(ratios), 4),
                "median_over_floor_ns": _median(r[f"over_floor_{v}_ns"] for r in sel),
                "below_0.6x": sum(x < 0.6 for x in ratios),
                "below_0.9x": sum(x < 0.9 for x in ratios),
            }
        lat = s["median_latency_ns"]
        s["after_vs_before_of_medians"] = round(lat["after"] / lat["before"] - 1, 4)
        result[group] = s
    return result


def write_json(path: Path, meta: dict, rows: list[dict], summary: dict) -> None:
    """Indented meta and summary; one line per configuration (small diffs)."""
    head = json.dumps({"meta": meta, "summary": summary}, indent=1)[:-2]
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    body = ",\n  ".join(lines)
    path.write_text(f'{head},\n "configs": [\n  {body}\n ]\n}}\n')


def _ns(x: float | None) -> str:
    if x is None:
        return "–"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.2f} ms"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.1f} µs"
    return f"{x:.0f} ns"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}%"


def summary_table(summary: dict) -> list[str]:
    groups = [g for g in GROUPS if g in summary]
    head = ["metric"] + [f"{g} {v}" for g in groups for v in VARIANTS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def row(name, fn):
        cells = [fn(summary[g], v) for g in groups for v in VARIANTS]
        lines.append("| " + " | ".join([name] + cells) + " |")

    row("configurations (ops)", lambda s, v: f"{s['configs']} ({s['ops']})")
    row(
        "median latency, reference",
        lambda s, v: _ns(s["median_latency_ns"]["reference"]),
    )
    row("median latency, ours", lambda s, v: _ns(s["median_latency_ns"][v]))
    row("median latency, floor", lambda s, v: _ns(s["median_latency_ns"]["floor"]))
    row("median dispatch gap (ours − ref)", lambda s, v: _ns(s[v]["median_gap_ns"]))
    row("median speed ratio (ref / ours)", lambda s, v: f"{s[v]['median_ratio']:.3f}x")
    row("lowest speed ratio", lambda s, v: f"{s[v]['min_ratio']:.3f}x")
    row("median overhead over floor", lambda s, v: _ns(s[v]["median_over_floor_ns"]))
    row("configs below 0.6x", lambda s, v: str(s[v]["below_0.6x"]))
    row("configs below 0.9x", lambda s, v: str(s[v]["below_0.9x"]))
    row(
        "after vs before, median per config",
        lambda s, v: _pct(s["after_vs_before_median"]) if v == "after" else "",
    )
    row(
        "after vs before, of median latencies",
        lambda s, v: _pct(s["after_vs_before_of_medians"]) if v == "after" else "",
    )
    return lines


def config_table(rows: list[dict]) -> list[str]:
    head = (
        "| configuration | shapes | impl | reference | before | after | floor "
        "| gap (after) | ratio before | ratio after | after − floor | after vs before |"
    )
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        if "error" in r:
            continue
        m = r["median_ns"]
        flag = "" if all(r["outputs_match"].values()) else " ⚠"
        lines.append(
            f"| `{r['id']}`{flag} | {r['shapes']} | {r['after_implementation']} "
            f"| {_ns(m['reference'])} | {_ns(m['before'])} | {_ns(m['after'])} "
            f"| {_ns(m['floor'])} | {_ns(r['gap_after_ns'])} "
            f"| {r['ratio_before']:.2f}x | {r['ratio_after']:.2f}x "
            f"| {_ns(r['over_floor_after_ns'])} | {_pct(r['after_vs_before'])} |"
        )
    return lines


def _build_line(b: dict) -> str:
    reuse = b.get("handle_reuse")
    parts = [f"`{b['build_dir']}` (-O{b['opt_level']})"]
    if reuse is not None:
        parts.append(
            "handle reuse on" if reuse else "handle reuse off (from_blob path)"
        )
    if "direct_mode" in b:
        parts.append(f"direct kernel mode {'on' if b['direct_mode'] else 'off'}")
    return ", ".join(parts)


def write_markdown(path: Path, meta: dict, rows: list[dict], summary: dict) -> None:
    skipped = [r for r in rows if "error" in r]
    lines = [
        "# infiniops-codegen bench",
        "",
        f"{meta['date']} · torch {meta['torch_version']} · {meta['cpu']} · "
        f"{meta['threads']} intra-op thread(s) · {meta['wall_s']:.0f} s · "
        f"{'quick' if meta['quick'] else 'full'} sweep",
        "",
        f"- reference: `torch.<op>(..., out=)` from Python",
        f"- before: {_build_line(meta['before'])}",
        f"- after: {_build_line(meta['after'])}, default implementation",
        "- floor: `THPVariable_Unpack` + `at::<op>_out`, nothing else",
        "",
        "Latencies are medians over rounds of the per-call time. Gaps, ratios "
        "and overheads are paired: taken within each round (reference, before, "
        "after and floor batches run back to back), then the median over rounds. "
        "Summary rows are medians over configurations. "
        "Ratio = reference / ours (> 1: ours is faster).",
        "",
        "## Summary",
        "",
        *summary_table(summary),
        "",
        "## Configurations",
        "",
        "impl: what the after build's default implementation runs (a native "
        "kernel or the torch fallback). ⚠: an output differed from PyTorch's.",
        "",
        *config_table(rows),
    ]
    if skipped:
        lines += ["", f"## Skipped ({len(skipped)})", ""]
        lines += [f"- `{r['id']}`: {r['error']}" for r in skipped]
    path.write_text("\n".join(lines) + "\n")


def summary_text(summary: dict) -> str:
    """The summary for stdout."""
    out = []
    for group in GROUPS:
        if group not in summary:
            continue
        s = summary[group]
        lat = s["median_latency_ns"]
        out.append(
            f"{group}: {s['configs']} configs, {s['ops']} ops; median latency "
            f"ref {_ns(lat['reference'])}, before {_ns(lat['before'])}, "
            f"after {_ns(lat['after'])}, floor {_ns(lat['floor'])}"
        )
        for v in VARIANTS:
            d = s[v]
            out.append(
                f"  {v:6}: ratio {d['median_ratio']:.3f}x (min {d['min_ratio']:.2f}x), "
                f"gap {_ns(d['median_gap_ns'])}, over floor "
                f"{_ns(d['median_over_floor_ns'])}, <0.6x: {d['below_0.6x']}, "
                f"<0.9x: {d['below_0.9x']}"
            )
        out.append(
            f"  after vs before: {_pct(s['after_vs_before_median'])} "
            f"(median per config), {_pct(s['after_vs_before_of_medians'])} "
            "(of median latencies)"
        )
    return "\n".join(out)
