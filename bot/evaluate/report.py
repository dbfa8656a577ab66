"""The results of an evaluation: per arm over every pull request, as JSON, Markdown and a
plot of F1 against cost."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.evaluate.score import Counts


def _counts(record: dict[str, Any]) -> Counts:
    c = record.get("counts") or {}
    return Counts(
        int(c.get("goldens", 0)),
        int(c.get("predictions", 0)),
        int(c.get("matched", 0)),
        int(c.get("located_matches", 0)),
        int(c.get("overlapping", 0)),
    )


def arm_order(records: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(r["arm"]) for r in records))


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per arm: PRs, summed counts, micro-averaged figures, cost and time (total and per PR),
    tokens (the arm's own; the judge's apart)."""
    out: dict[str, dict[str, Any]] = {}
    for arm in arm_order(records):
        mine = [r for r in records if r["arm"] == arm]
        total = Counts()
        for r in mine:
            total = total + _counts(r)
        n = len(mine)
        cost = sum(float(r.get("cost_usd", 0.0)) for r in mine)
        wall = sum(float(r.get("wall_s", 0.0)) for r in mine)
        tokens = sum(int(r.get("tokens", 0)) for r in mine)
        out[arm] = {
            "prs": n,
            **total.figures(),
            **total.counts(),
            "cost_usd": round(cost, 6),
            "cost_usd_per_pr": round(cost / n, 6) if n else 0.0,
            "wall_s": round(wall, 3),
            "wall_s_per_pr": round(wall / n, 3) if n else 0.0,
            "tokens": tokens,
            "tokens_per_pr": round(tokens / n) if n else 0,
            "judge_cost_usd": round(sum(float(r["judge"]["cost_usd"]) for r in mine), 6),
            "errors": sum(1 for r in mine if r.get("error")),
        }
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def markdown(
    summary: dict[str, dict[str, Any]], records: Sequence[dict[str, Any]], title: str
) -> str:
    lines = [
        f"# {title}",
        "",
        "| Arm | PRs | Precision | Recall | F1 | Location accuracy | Cost (USD) | "
        "Cost per PR | Time (s) | Time per PR | Tokens per PR |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for arm, s in summary.items():
        lines.append(
            f"| {arm} | {s['prs']} | {_pct(s['precision'])} | {_pct(s['recall'])} | "
            f"{_pct(s['f1'])} | {_pct(s['location_accuracy'])} | {s['cost_usd']:.4f} | "
            f"{s['cost_usd_per_pr']:.4f} | {s['wall_s']:.1f} | {s['wall_s_per_pr']:.1f} | "
            f"{s['tokens_per_pr']} |"
        )
    for arm in summary:
        lines += [
            "",
            f"## {arm}",
            "",
            "| PR | Golden | Findings | Matched | Precision | Recall | F1 | Location accuracy "
            "| Cost (USD) | Time (s) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in records:
            if r["arm"] != arm:
                continue
            c, f = r["counts"], r["figures"]
            lines.append(
                f"| {r['pr']} | {c['goldens']} | {c['predictions']} | {c['matched']} | "
                f"{_pct(f['precision'])} | {_pct(f['recall'])} | {_pct(f['f1'])} | "
                f"{_pct(f['location_accuracy'])} | {float(r['cost_usd']):.4f} | "
                f"{float(r['wall_s']):.1f} |"
            )
    return "\n".join(lines) + "\n"


def write(
    out: Path,
    records: Sequence[dict[str, Any]],
    *,
    meta: dict[str, Any],
    plot: bool = True,
) -> dict[str, Any]:
    """results.json, results.md and (matplotlib installed) f1_cost.png in `out`."""
    summary = summarize(records)
    document = {**meta, "arms": summary, "prs": list(records)}
    (out / "results.json").write_text(json.dumps(document, indent=2) + "\n")
    (out / "results.md").write_text(markdown(summary, records, f"Evaluation of {meta['dataset']}"))
    document["plot"] = plot_f1_cost(summary, out / "f1_cost.png") if plot else None
    return document


def plot_f1_cost(summary: dict[str, dict[str, Any]], path: Path) -> str | None:
    """F1 against cost per PR, one point per arm; None (and no file) without matplotlib
    (`pip install 'pr-council[plot]'`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, axes = plt.subplots(figsize=(6.4, 4.8), dpi=100)
    for arm, s in summary.items():
        axes.scatter([s["cost_usd_per_pr"]], [s["f1"]], label=arm, s=48)
        axes.annotate(arm, (s["cost_usd_per_pr"], s["f1"]), textcoords="offset points",
                      xytext=(5, 5), fontsize=8)  # fmt: skip
    axes.set_xlabel("cost per PR (USD)")
    axes.set_ylabel("F1")
    axes.set_ylim(0, 1.05)
    axes.set_title("F1 against cost, per arm")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)
    return str(path)
