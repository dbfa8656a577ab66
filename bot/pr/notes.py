"""The repository's own files that did not load, said where its people look: the status's
summary (from the moment it opens) and the `/council help` reply; and that reply itself.

`.github/council.yml` problems are known once the config is read; persona files are read
only after admission, so their problems join the summary with the setup.
"""

from __future__ import annotations

from bot.commands import grammar_help
from bot.config import AGENTS_DIR, ConfigResult
from bot.config.show import render_effective
from bot.review.setup import RepoSetup
from bot.safety.markdown import sanitize_inline

__all__ = ["convening", "help_text", "issues_note", "persona_note", "setup_note"]


def issues_note(loaded: ConfigResult) -> str:
    if not loaded.issues:
        return ""
    lines = [
        f"- `{i.key}`: {i.reason}" + (f" (line {i.line})" if i.line else "") for i in loaded.issues
    ]
    return (
        "\n\n**`.github/council.yml` has problems; defaults were used for these keys:**\n"
        + "\n".join(lines)
    )


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
    """Every problem in the repository's council files, for the status's summary."""
    return issues_note(setup.loaded) + persona_note(setup)


def convening(protocol: str, note: str) -> str:
    """The summary of a status just opened; `note`: the repository's setup problems."""
    return f"The council ({protocol}) is convening.{note}"


def help_text(setup: RepoSetup) -> str:
    """The grammar, the effective configuration and the repository's broken council files."""
    effective = render_effective(setup.config, setup.loaded.issues)
    return f"{grammar_help()}\n{effective}{persona_note(setup)}"
