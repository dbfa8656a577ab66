"""The signals in words, for the prompt: what automated analysis found in the change.

Seats read this beside the code, so a risky pattern or a Trojan Source character is put in
front of every reviewer, not only used to choose them.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.context.models import Signals

MAX_ITEMS = 20


def describe_signals(signals: Signals) -> str:
    spread = len(signals.directories)
    lines = [
        f"Size: {signals.files_changed} file(s), +{signals.lines_added} -{signals.lines_deleted} "
        f"lines in {spread} director{'y' if spread == 1 else 'ies'}.",
        _list("Languages", signals.languages),
        _list("Frameworks", signals.frameworks),
        _list("Touched areas", signals.areas),
        _list("Artifacts", signals.artifact_types),
    ]
    if signals.source_without_tests:
        lines.append("Source code changed without any test changing.")
    if signals.dependencies:
        lines.append("Dependency changes:")
        lines += [
            f"- {d.manifest}: {d.name} {d.old or '(new)'} -> {d.new or '(removed)'}"
            for d in signals.dependencies[:MAX_ITEMS]
        ]
    if signals.risky_patterns:
        lines.append("Risky patterns on added lines:")
        lines += [f"- {r.kind} at {r.path}:{r.line}" for r in signals.risky_patterns[:MAX_ITEMS]]
    if signals.trojan_source:
        lines.append("Bidirectional control characters in code (Trojan Source; shown as <U+...>):")
        lines += [f"- {c.path}:{c.line}" for c in signals.trojan_source[:MAX_ITEMS]]
    if signals.binary_files:
        lines.append(_list("Binary files (not readable)", signals.binary_files))
    if signals.non_utf8_files:
        lines.append(
            _list("Not UTF-8 (decoded with replacement characters)", signals.non_utf8_files)
        )
    return "\n".join(line for line in lines if line)


def _list(label: str, items: Sequence[str]) -> str:
    if not items:
        return ""
    shown = ", ".join(items[:MAX_ITEMS])
    more = f" and {len(items) - MAX_ITEMS} more" if len(items) > MAX_ITEMS else ""
    return f"{label}: {shown}{more}."
