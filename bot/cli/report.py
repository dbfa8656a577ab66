"""Printing an advisory: Markdown (the PR comment's text), JSON, or text for a person; and,
whatever the format, one summary line on stderr."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.console import Console

from bot.council.advisory import Advisory
from bot.render import conclusion_for, render_comment
from bot.render.markdown import comment_options
from bot.render.protocol_sections import json_parts
from bot.render.terminal import render_advisory, render_text, summary_line
from bot.render.usage import usage_json
from bot.review.assemble import PreparedReview


def emit(advisory: Advisory, prepared: PreparedReview, output: str, err: Console) -> None:
    """The advisory on stdout in `output`'s format, then the summary line on stderr."""
    options = comment_options(prepared.setup.config)
    if output == "json":
        markdown = render_comment(advisory, options=options)
        gate = prepared.setup.config.gate
        typer.echo(json.dumps(advisory_json(advisory, markdown, gate), indent=2))
    elif output == "text":
        out = Console(highlight=False, emoji=False)
        if out.is_terminal:
            for part in render_advisory(advisory):
                out.print(part)
        else:  # a file or a pipe: plain lines, no trailing padding
            typer.echo(render_text(advisory), nl=False)
    else:
        typer.echo(render_comment(advisory, options=options))
    err.print(f"council: {summary_line(advisory)}", highlight=False, markup=False)


def advisory_json(advisory: Advisory, markdown: str, gate: str = "verdict") -> dict[str, Any]:
    return {
        "protocol": advisory.protocol,
        "resolution": advisory.resolution.value,
        "conclusion": conclusion_for(advisory, gate),  # type: ignore[arg-type]
        "seats": [
            {
                "id": s.seat_id,
                "persona": s.persona_id,
                "division": s.division,
                "model": s.model,
                "state": s.state.value,
                "verdict": s.assessment.verdict if s.assessment else None,
                "score": s.assessment.score if s.assessment else None,
                "vote": s.vote.vote if s.vote else None,
                # Why a seat that assessed has no vote ("timed out", ...); None: it voted.
                "vote_missing": s.vote_missing,
                "confidence": s.vote.confidence if s.vote else None,
                "board_score": s.score,
                # The seat's lenses its kept assessment did not score.
                "unscored_lenses": list(s.unscored_lenses),
            }
            for s in advisory.seats
        ],
        "findings": [
            {
                "severity": f.severity,
                "path": f.path,
                "start_line": f.start_line,
                "end_line": f.end_line,
                # Its lines at head, as the comment shows them ("path:L196 (outside the diff)").
                "location": f.location(),
                "outside_diff": f.outside_diff,
                "title": f.title,
                "replacement": f.replacement,
                "raised_by": f.raised_by,
                # The same issue at other places (`path:L618`), merged by the chair.
                "also_at": list(f.also_at),
            }
            for f in advisory.findings
        ],
        "conditions": advisory.conditions,
        # What the council says of its own record (a chair's merge group it refused, ...).
        "notes": list(advisory.notes),
        "usage": usage_json(advisory.usage),
        # Each protocol's report under its name (bot.render.sections; None elsewhere).
        **json_parts(advisory),
        "markdown": markdown,
    }
