"""The signals reach the seats: council_inputs puts them in front as their own section."""

from __future__ import annotations

from bot.context import build_context
from bot.context.models import PullRequestMeta
from bot.review.inputs import council_inputs

DIFF = (
    "diff --git a/app/run.py b/app/run.py\n"
    "--- a/app/run.py\n+++ b/app/run.py\n"
    "@@ -1,1 +1,3 @@\n"
    " import subprocess\n"
    "+def run(cmd):\n"
    "+    return subprocess.call(cmd, shell=True)  # \u202e\n"
)


async def no_file(path: str) -> bytes | None:
    return None


async def test_signals_are_a_section_every_seat_reads() -> None:
    built = await build_context(PullRequestMeta(title="Run commands"), DIFF, [], no_file)
    sections, signals, _ = council_inputs(built, "Review this")
    first = sections[0]
    assert first.kind == "signals"
    assert "app/run.py:3" in first.text  # where the bidi control / risky call is
    assert "Trojan Source" in first.text
    assert "Source code changed without any test changing." in first.text
    assert any(r.kind in first.text for r in built.signals.risky_patterns)
    assert "trojan-source" in signals.keywords
