"""A kept advisory is posted later as the repository asked: the `publish_pending` job
carries the comment options (the record keeps only the advisory)."""

from __future__ import annotations

from bot.queue.publishing import PendingPublication
from bot.render.markdown import CommentOptions


def test_the_comment_options_survive_the_job_payload() -> None:
    options = CommentOptions(comment="compact", max_findings=3, min_severity="nit")
    pending = PendingPublication(deliberation_id="d-1", task_type="review", comment=options)
    payload = pending.model_dump(mode="json")
    assert PendingPublication.model_validate(payload).comment == options


def test_a_job_enqueued_before_the_options_existed_renders_with_the_defaults() -> None:
    old = {"deliberation_id": "d-1", "task_type": "review", "gate": "advisory", "attempt": 2}
    assert PendingPublication.model_validate(old).comment == CommentOptions()
