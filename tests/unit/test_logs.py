"""Log lines never carry a secret, whatever a log call was handed: every rendered line, in
either format, tracebacks included, goes through the redactor."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import structlog

from bot.logs import configure_logging

TOKEN = "ghp_" + "k7Q" * 12
KEY = "AKIA" + "Q7ZP4XW2LM9RT3VB"


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.mark.parametrize("json_lines", [True, False])
def test_secrets_in_any_value_are_redacted(
    json_lines: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("INFO", json_lines=json_lines)
    log = structlog.get_logger("test")
    log.info("job_skipped", reason=f"token {TOKEN}", nested={"url": "https://u:pw9Xq2Lm8z@h/"})
    try:
        raise RuntimeError(f"cannot use {KEY}")
    except RuntimeError:
        log.exception("deliberation_failed")
    err = capsys.readouterr().err
    assert TOKEN not in err and KEY not in err and "pw9Xq2Lm8z" not in err
    assert "job_skipped" in err and "deliberation_failed" in err
    assert "[REDACTED:github-token]" in err and "[REDACTED:aws-access-key]" in err
    if json_lines:  # still one JSON object per line
        events = [json.loads(line) for line in err.splitlines()]
        assert [e["event"] for e in events] == ["job_skipped", "deliberation_failed"]
        assert "RuntimeError" in events[1]["exception"]
