"""Rendering an advisory: the sticky PR comment (Markdown) and the check-run output."""

from bot.render.checks import (
    Annotation,
    CheckRunOutput,
    Conclusion,
    Gate,
    annotation_batches,
    conclusion_for,
    render_check_run,
)
from bot.render.markdown import render_comment

__all__ = [
    "Annotation",
    "CheckRunOutput",
    "Conclusion",
    "Gate",
    "annotation_batches",
    "conclusion_for",
    "render_check_run",
    "render_comment",
]
