"""bench.png, one panel per question, from the included rows only:

  1. tiny configurations: ratio vs torch per op, before / after / the floor
     of the after path (what a binding doing nothing else would reach);
  2. tiny configurations: overhead over the like-for-like floor per op, one
     marker per path;
  3. LLM configurations: ratio vs torch per op, before / after / floor.

Aggregation (stated in each panel's title): per op, the median over its
configurations in that panel; a vertical bar spans their min–max (after).
Panel titles list the sizes and dtypes actually run.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from . import paths as P

PATH_STYLE = {
    "native": ("#2ca02c", "D"),
    "direct": ("#1f77b4", "o"),
    "dispatcher": ("#ff7f0e", "s"),
    "from_blob": ("#9467bd", "^"),
}


def _by_op(rows: list[dict]) -> dict[str, list[dict]]:
    ops: dict[str, list[dict]] = {}
    for r in rows:
        ops.setdefault(r["op"], []).append(r)
    return dict(sorted(ops.items()))


def _describe(rows: list[dict], family: str) -> str:
    dtypes = sorted({r["dtype"] for r in rows})
    if family == "tiny":
        sizes = sorted({r["size"] for r in rows})
        size_text = "elements " + ", ".join(map(str, sizes[:6]))
        if len(sizes) > 6:
            size_text += ", ..."
    else:
        sizes = sorted({r["size"] for r in rows})
        size_text = "tokens " + ", ".join(map(str, sizes))
    return (
        f"{family}: {len(rows)} configurations, {len({r['op'] for r in rows})} ops "
        f"({size_text}; {', '.join(dtypes)})"
    )


RATIO_TICKS = [0.125, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8, 16, 32]


def _ratio_panel(ax, rows: list[dict], family: str) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ops = _by_op(rows)
    xs = list(range(len(ops)))
    series = {"before": [], "after": [], "floor": [], "lo": [], "hi": []}
    for rs in ops.values():
        after = [r["ratio"]["after"] for r in rs]
        series["before"].append(statistics.median(r["ratio"]["before"] for r in rs))
        series["after"].append(statistics.median(after))
        floors = [r["floor_ratio"]["after"] for r in rs if "after" in r["floor_ratio"]]
        series["floor"].append(statistics.median(floors) if floors else float("nan"))
        series["lo"].append(min(after))
        series["hi"].append(max(after))
    ax.vlines(xs, series["lo"], series["hi"], color="#1f77b4", alpha=0.35, lw=2)
    ax.scatter(
        xs, series["before"], s=20, color="#999999", label="before (baseline)", zorder=2
    )
    ax.scatter(
        xs,
        series["floor"],
        s=70,
        marker="_",
        color="black",
        linewidths=1.6,
        label="floor of the after path",
        zorder=3,
    )
    ax.scatter(
        xs,
        series["after"],
        s=26,
        color="#1f77b4",
        label="after (default path; bar: min–max)",
        zorder=4,
    )
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_locator(FixedLocator(RATIO_TICKS))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))
    for level, text, style in (
        (1.0, "1x = torch", "-"),
        (0.9, "0.9x", "--"),
        (0.6, "0.6x", "--"),
    ):
        colour = "black" if level == 1.0 else "#d62728"
        ax.axhline(level, color=colour, linewidth=0.8, linestyle=style, zorder=1)
        ax.annotate(
            text,
            xy=(1.0, level),
            xycoords=("axes fraction", "data"),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
            color=colour,
        )
    _op_axis(ax, list(ops))
    ax.set_ylabel("torch time / our time\n(above 1x: faster than torch)", fontsize=8)
    ax.set_title(
        _describe(rows, family)
        + "\nratio vs torch.<op>(out=); per op: median of its configurations",
        fontsize=9,
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.06, 1.0), fontsize=7, frameon=False)


OVERHEAD_TICKS = [
    sign * v
    for v in (20_000, 10_000, 5000, 2000, 1000, 500, 200, 100, 50)
    for sign in (1, -1)
] + [0]


def _overhead_panel(ax, rows: list[dict]) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ops = _by_op(rows)
    names = list(ops)
    offsets = {p: (i - 1.5) * 0.16 for i, p in enumerate(P.PATHS)}
    for path in P.PATHS:
        colour, marker = PATH_STYLE[path]
        xs, ys = [], []
        for x, rs in enumerate(ops.values()):
            values = [
                r["over_floor_ns"][path] for r in rs if path in r["over_floor_ns"]
            ]
            if values:
                xs.append(x + offsets[path])
                ys.append(statistics.median(values))
        if xs:
            ax.scatter(xs, ys, s=18, color=colour, marker=marker, label=path, zorder=3)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.annotate(
        "0 = floor",
        xy=(1.0, 0),
        xycoords=("axes fraction", "data"),
        xytext=(3, 0),
        textcoords="offset points",
        va="center",
        fontsize=7,
    )
    ax.set_yscale("symlog", linthresh=100)
    ax.yaxis.set_major_locator(FixedLocator(OVERHEAD_TICKS))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:+,.0f} ns"))
    _op_axis(ax, names)
    ax.set_ylabel(
        "our time − the path's floor\n(symlog: linear within ±100 ns)", fontsize=8
    )
    ax.set_title(
        _describe(rows, "tiny")
        + "\noverhead over the like-for-like floor, per path; per op: median of "
        "its configurations",
        fontsize=9,
    )
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.06, 1.0),
        fontsize=7,
        frameon=False,
        title="path",
        title_fontsize=7,
    )


def _op_axis(ax, names: list[str]) -> None:
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlim(-0.7, max(len(names), 1) - 0.3)
    ax.grid(axis="y", alpha=0.3, which="major")


def write_png(path: Path, rows: list[dict], meta: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if "excluded" not in r]
    tiny = [r for r in rows if r["family"] == "tiny"]
    llm = [r for r in rows if r["family"] == "llm"]
    panels = []
    if tiny:
        panels += [("ratio", tiny, "tiny"), ("overhead", tiny, "tiny")]
    if llm:
        panels.append(("ratio", llm, "llm"))
    widest = max([len({r["op"] for r in rs}) for _, rs, _ in panels] + [1])
    fig, axes = plt.subplots(
        max(len(panels), 1),
        1,
        figsize=(max(9.0, 0.2 * widest + 3.5), 4.2 * max(len(panels), 1) + 0.7),
        squeeze=False,
    )
    for ax, (kind, rs, family) in zip(axes[:, 0], panels):
        if kind == "ratio":
            _ratio_panel(ax, rs, family)
        else:
            _overhead_panel(ax, rs)
    if not panels:
        axes[0, 0].text(0.5, 0.5, "no configuration to show", ha="center")
    git = meta.get("git", {})
    commit = git.get("commit", "unknown")[:12]
    if git.get("modified"):
        commit += " + uncommitted changes"
    fig.suptitle(
        f"infiniops bench · git {commit} · {meta.get('date', '')}\n"
        f"torch {meta.get('torch_version', '?')} · {meta.get('cpu', '')} · "
        f"{meta.get('threads', 1)} thread(s)",
        fontsize=9,
        x=0.01,
        ha="left",
    )
    top = 1 - 0.6 / fig.get_figheight()
    fig.tight_layout(rect=(0, 0, 1, top))
    fig.savefig(path, dpi=110)
    plt.close(fig)
