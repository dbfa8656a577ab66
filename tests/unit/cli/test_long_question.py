"""A 10,000-character question (`council review --question`, as `/council <question>`
reaches the same `review_topic`) is clipped before the models see it and before it is
stored: the seats get the first 500 characters or so and a note that it was clipped, and
so does the record. The console script, the fake model server's call log, the SQLite store.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from bot.review.inputs import QUESTION_MAX_CHARS, review_topic
from bot.store.db import Database
from bot.store.history import deliberation_history
from tests.support.cli import run_council
from tests.support.council_answers import CouncilScript
from tests.support.diffs import AUTH_DIFF
from tests.support.model_server import FakeModelServer

OPENING = "Is the retry in the login handler safe when the password store is slow?"
LATE = "LATE-MARKER-past-the-clip"
NOTE = "… (clipped from 10,000 characters)"


def long_question() -> str:
    words = " ".join(f"word{i:04d}" for i in range(1200))
    text = f"{OPENING} {words[:5000]} {LATE} {words[5000:]}"
    return text[:9_999] + "."


def stored_topics(database: Path) -> list[str]:
    async def read() -> list[str]:
        async with Database(f"sqlite:///{database}") as db:
            return [r.topic for r in await deliberation_history(db)]

    return asyncio.run(read())


def test_a_long_question_is_clipped_for_the_models_and_the_store(
    models: FakeModelServer, tmp_path: Path
) -> None:
    question = long_question()
    assert len(question) == 10_000
    (tmp_path / "change.diff").write_text(AUTH_DIFF)
    models.default(CouncilScript().reply)

    done = run_council(
        models,
        tmp_path,
        "review",
        "--diff",
        "change.diff",
        "--protocol",
        "quick",
        "--question",
        question,
        "--json",
    )

    assert done.returncode == 0, done.stderr
    # The store keeps the clipped topic.
    (topic,) = stored_topics(tmp_path / "council.db")
    assert topic.startswith(OPENING) and topic.endswith(NOTE)
    assert len(topic) <= QUESTION_MAX_CHARS + len(NOTE)
    assert question.startswith(topic.removesuffix(NOTE))  # cut at a word, nothing added
    assert LATE not in topic
    # Every model call carries the clipped question, none the rest of it.
    assert models.calls
    for call in models.calls:
        prompt = call.request.text
        assert LATE not in prompt and question not in prompt
    asked = [c for c in models.calls if c.request.output_name == "submit_assessment"]
    assert asked and all(f"question before the council:\n{topic}" in c.request.text for c in asked)


def test_a_question_within_the_limit_is_kept_whole() -> None:
    question = "Is this safe? " * (QUESTION_MAX_CHARS // 14)
    assert len(question.strip()) <= QUESTION_MAX_CHARS
    assert review_topic(question) == question.strip()
    clipped = review_topic("x" * (QUESTION_MAX_CHARS + 1))  # no word boundary: a hard cut
    assert (
        clipped
        == "x" * QUESTION_MAX_CHARS + f"… (clipped from {QUESTION_MAX_CHARS + 1} characters)"
    )
    assert re.search(r"clipped from 501 characters", clipped)
