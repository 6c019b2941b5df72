"""bench.png: speed ratio (reference / ours) per op, before vs after, one
panel per shape family (the median over an op's configurations)."""

from __future__ import annotations

import statistics
from pathlib import Path

FAMILY_TITLES = {
    "tiny": "tiny (1 and 64 elements)",
    "llm": "LLM shapes (7B, tokens 1/16/128)",
}


def _per_op(rows: list[dict], family: str) -> dict[str, tuple[float, float]]:
    ops: dict[str, list[dict]] = {}
    for r in rows:
        if "error" not in r and r["family"] == family:
            ops.setdefault(r["op"], []).append(r)
    return {
        op: (
            statistics.median(r["ratio_before"] for r in rs),
            statistics.median(r["ratio_after"] for r in rs),
        )
        for op, rs in sorted(ops.items())
    }


def write_png(path: Path, rows: list[dict], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    families = [f for f in FAMILY_TITLES if _per_op(rows, f)]
    if not families:
        families = ["tiny"]
    widest = max([len(_per_op(rows, f)) for f in families] + [1])
    fig, axes = plt.subplots(
        len(families),
        1,
        figsize=(max(8.0, 0.28 * widest + 2.5), 3.8 * len(families)),
        squeeze=False,
    )
    for ax, family in zip(axes[:, 0], families):
        data = _per_op(rows, family)
        names = list(data)
        xs = range(len(names))
        before = [data[n][0] for n in names]
        after = [data[n][1] for n in names]
        for x, b, a in zip(xs, before, after):
            ax.plot([x, x], [b, a], color="#bbbbbb", linewidth=1, zorder=1)
        ax.scatter(
            xs, before, s=22, color="#999999", label="before (-O0, from_blob)", zorder=2
        )
        ax.scatter(
            xs,
            after,
            s=26,
            color="#1f77b4",
            label="after (-O3, handle reuse)",
            zorder=3,
        )
        ax.axhline(1.0, color="black", linewidth=0.8)
        for level in (0.9, 0.6):
            ax.axhline(level, color="#d62728", linewidth=0.6, linestyle="--")
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, rotation=70, ha="right", fontsize=7)
        ax.set_xlim(-0.7, max(len(names), 1) - 0.3)
        ax.set_ylabel("reference / ours")
        ax.set_title(
            f"{FAMILY_TITLES[family]} — above 1: faster than torch", fontsize=9
        )
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", ncol=2, fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
