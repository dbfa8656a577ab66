"""The run's transcript as a file for the workflow's artifact: action.yml uploads
`$RUNNER_TEMP/council-transcript.html` (`actions/upload-artifact`, whatever the outcome).

The App serves the same page behind GitHub login (`/deliberations/{id}`); a workflow run
has no server, so its transcript goes where the run's logs are, readable by whoever can
read the run. Best effort: a transcript that cannot be written never fails the review.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import structlog

from bot.council.advisory import Advisory
from bot.render.transcript import transcript_html
from bot.store.db import Database
from bot.store.history import load_transcript

__all__ = ["TRANSCRIPT_FILE", "transcript_file", "write_transcript"]

TRANSCRIPT_FILE = "council-transcript.html"

log = structlog.get_logger(__name__)


def transcript_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """`$RUNNER_TEMP/council-transcript.html`; None outside a runner."""
    temp = (os.environ if environ is None else environ).get("RUNNER_TEMP")
    return Path(temp) / TRANSCRIPT_FILE if temp else None


async def write_transcript(
    db: Database,
    deliberation_id: str,
    advisory: Advisory | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Path | None:
    """Write the deliberation's transcript (`advisory`: the one just made, which the
    run's record may not hold yet); the file, or None when nothing was written."""
    path = transcript_file(environ)
    if path is None:
        return None
    try:
        found = await load_transcript(db, deliberation_id)
        if found is None:
            return None
        record, stored, events = found
        title = f"Council transcript - {record.repo}" + (
            f"#{record.pr_number}" if record.pr_number else ""
        )
        html = transcript_html(record, advisory or stored, events, title=title)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
    except Exception:  # the review is what matters
        log.warning("transcript_not_written", path=str(path), exc_info=True)
        return None
    log.info("transcript_written", path=str(path))
    return path
