"""How long the sticky comment is, and how often it repeats itself, on realistic answers.

For each protocol and board size (3, 5, 9 seats where the protocol seats that many), the
engine deliberates in-process (`tests.support.fake_provider.FakeProviders`) on
`tests.support.long_answers.LongCouncilScript`: what a capable model writes on an ordinary
225-line PR (long details, several findings per seat in overlapping words). Each advisory
is rendered three ways:

- baseline: `max_findings: 50`, `min_severity: nit` (every finding listed on the screen);
- default: `comment: full`, `max_findings: 7`, `min_severity: minor`;
- compact: `comment: compact`.

Reported: total characters, visible characters (outside `<details>`), and repetition: the
most times one finding title appears, and the most times one sentence appears, in the
visible part and in the whole comment.

Run: `python bench/advisory.py` (or `make bench`). Writes bench/results/advisory.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.council.protocols import NAMES
from bot.render.markdown import VISIBLE_TARGET, CommentOptions, render_comment, visible_text
from tests.support.long_answers import all_titles, long_advisory, repetition

SIZES = (3, 5, 9)
VARIANTS = {
    "baseline": CommentOptions(max_findings=50, min_severity="nit"),
    "default": CommentOptions(),
    "compact": CommentOptions(comment="compact"),
}


async def measure() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    titles = all_titles()
    for protocol in NAMES:
        seen: set[int] = set()
        for size in SIZES:
            advisory = await long_advisory(protocol, size)
            seats = len(advisory.seats)
            if seats in seen:  # the protocol seats a fixed number: measured once
                continue
            seen.add(seats)
            for variant, options in VARIANTS.items():
                text = render_comment(advisory, options=options)
                visible = visible_text(text)
                title_all, sentence_all = repetition(text, titles)
                title_vis, sentence_vis = repetition(visible, titles)
                rows.append(
                    {
                        "protocol": protocol,
                        "seats": seats,
                        "findings": len(advisory.findings),
                        "variant": variant,
                        "total_chars": len(text),
                        "visible_chars": len(visible),
                        "title_repeats_visible": title_vis,
                        "title_repeats_total": title_all,
                        "sentence_repeats_visible": sentence_vis,
                        "sentence_repeats_total": sentence_all,
                    }
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "advisory.json"
    )
    args = parser.parse_args()
    rows = asyncio.run(measure())
    print(f"Comment length and repetition (visible target {VISIBLE_TARGET:,} characters)")
    print(
        f"  {'protocol':<8} {'seats':>5} {'findings':>8} {'variant':<8} {'total':>7} "
        f"{'visible':>7}  {'title x (vis/all)':>17}  {'sentence x (vis/all)':>20}"
    )
    for r in rows:
        print(
            f"  {r['protocol']:<8} {r['seats']:>5} {r['findings']:>8} {r['variant']:<8} "
            f"{r['total_chars']:>7,} {r['visible_chars']:>7,}  "
            f"{r['title_repeats_visible']:>8}/{r['title_repeats_total']:<8}  "
            f"{r['sentence_repeats_visible']:>10}/{r['sentence_repeats_total']:<9}"
        )
    over = [r for r in rows if r["variant"] != "baseline" and r["visible_chars"] > VISIBLE_TARGET]
    print("visible part within target: " + ("yes" if not over else f"NO ({len(over)} over)"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
