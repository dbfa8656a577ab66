"""The repository's own files that did not load, said where its people look: the check
run's summary and the `/council help` reply.

`.github/council.yml` problems are said by `checkrun.issues_note` (the check run says them
from the moment it opens); persona files are read only after admission, so their problems
join the summary when the advisory is published, and the help reply reads them itself.
"""

from __future__ import annotations

from bot.queue.checkrun import issues_note
from bot.review import AGENTS_DIR
from bot.review.setup import RepoSetup
from bot.safety import sanitize_inline

__all__ = ["persona_note", "setup_note"]


def persona_note(setup: RepoSetup) -> str:
    """Markdown listing each repository persona file that did not load: file, line, reason.

    Only the repository's own files: a problem in the operator's packaged catalog is for
    the operator's log, not for the pull request.
    """
    issues = [i for i in setup.catalog.issues if i.path.startswith(f"{AGENTS_DIR}/")]
    if not issues:
        return ""
    lines = [
        f"- `{_code(i.path)}`"
        + (f" line {i.line}" if i.line else "")
        + f": {sanitize_inline(i.reason)}"
        for i in issues
    ]
    return (
        f"\n\n**Persona files in `{AGENTS_DIR}/` that did not load; the council convenes "
        "without them:**\n" + "\n".join(lines)
    )


def _code(path: str) -> str:
    """A file name inside an inline code span (a backquote in it would end the span)."""
    return sanitize_inline(path).replace("`", "'")


def setup_note(setup: RepoSetup) -> str:
    """Every problem in the repository's council files, for the check run's summary."""
    return issues_note(setup.loaded) + persona_note(setup)
