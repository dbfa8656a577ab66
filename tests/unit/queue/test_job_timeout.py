"""The job timeout covers a deliberation whose seats queue for a one-at-a-time server."""

from __future__ import annotations

from typing import Any

from bot.queue.jobs import GITHUB_BUDGET_S, job_timeout_s, narrowest_concurrency
from bot.settings import Settings


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


def test_hosted_models_queue_at_most_twice_for_a_nine_seat_board() -> None:
    hosted = settings(anthropic_api_key="sk-ant-x", openai_api_key="sk-x")
    assert narrowest_concurrency(hosted) == 8
    # 22 sequential calls (the chair's merge of the findings among them, with its re-ask),
    # 14 of them made by every seat at once: 9 seats, 2 turns of 8.
    assert job_timeout_s(hosted) == (22 - 14 + 14 * 2) * 300 + GITHUB_BUDGET_S


def test_a_local_server_serves_one_seat_at_a_time_and_the_timeout_waits_for_all() -> None:
    local = settings(models=["ollama:llama3.1:8b"])
    assert narrowest_concurrency(local) == 1
    assert job_timeout_s(local) == (22 - 14 + 14 * 9) * 300 + GITHUB_BUDGET_S
    endpoint = settings(
        models=["box:qwen3"],
        endpoints={"box": {"base_url": "http://10.0.0.5:8000/v1", "local": True, "concurrency": 3}},
        call_deadline_s=120,
    )
    assert narrowest_concurrency(endpoint) == 3
    assert job_timeout_s(endpoint) == (22 - 14 + 14 * 3) * 120 + GITHUB_BUDGET_S


def test_the_operator_override_wins() -> None:
    assert job_timeout_s(settings(models=["ollama:x"], job_timeout_s=900)) == 900
