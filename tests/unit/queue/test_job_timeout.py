"""The job timeout is derived from the protocol table: the longest deliberation any
protocol plans (every call with its re-asks), the seats' calls queueing for the narrowest
endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from bot.council.protocols import (
    DEBATE_MODES,
    NAMES,
    longest_deliberation,
    most_seats,
    planned_calls,
    protocol,
    sequential_turns,
)
from bot.queue.jobs import GITHUB_BUDGET_S, job_timeout_s, narrowest_concurrency
from bot.settings import Settings


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


def test_hosted_models_queue_at_most_twice_for_a_nine_seat_board() -> None:
    hosted = settings(anthropic_api_key="sk-ant-x", openai_api_key="sk-x")
    assert narrowest_concurrency(hosted) == 8
    # Counted by hand: a board of 9 and a voting chair (10 members, 2 turns of 8) with 3
    # discussion rounds: assess 2 x 3 tries, 3 rounds of 2 x 2, vote 2 x 2, merge 2 and
    # synthesis 2 = 26 turns. A full debate is 25 (5 members, one turn each).
    assert longest_deliberation(models=0, concurrency=8) == ("board", 26)
    assert job_timeout_s(hosted) == 26 * 300 + GITHUB_BUDGET_S


def test_a_local_server_serves_one_seat_at_a_time_and_the_timeout_waits_for_all() -> None:
    local = settings(models=["ollama:llama3.1:8b"])
    assert narrowest_concurrency(local) == 1
    # 10 members one at a time: assess 30, 3 rounds of 20, vote 20, merge 2, synthesis 2.
    assert job_timeout_s(local) == 114 * 300 + GITHUB_BUDGET_S
    endpoint = settings(
        models=["box:qwen3"],
        endpoints={"box": {"base_url": "http://10.0.0.5:8000/v1", "local": True, "concurrency": 3}},
        call_deadline_s=120,
    )
    assert narrowest_concurrency(endpoint) == 3
    # 4 turns of 3: assess 12, 3 rounds of 8, vote 8, merge 2, synthesis 2.
    assert job_timeout_s(endpoint) == 48 * 120 + GITHUB_BUDGET_S


@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_no_protocol_or_mode_plans_more_than_the_timeout_allows(concurrency: int) -> None:
    _, longest = longest_deliberation(models=2, concurrency=concurrency)
    for name in NAMES:
        for mode in DEBATE_MODES if protocol(name).judged else (None,):
            calls = planned_calls(
                name,
                seats=most_seats(name, models=2),
                rounds=3,
                mode=mode,
                models=2,
                chair_votes=True,
            )
            assert sequential_turns(calls, concurrency) <= longest, (name, mode)


def test_more_models_than_the_largest_board_lengthen_a_council() -> None:
    # 20 models: a council of 20 and a voting chair, 3 turns of 8: assess 9, rank 6,
    # merge 2, synthesis 2 = 19; the board's 26 is still the longest.
    calls = planned_calls("council", seats=20, rounds=0, models=20, chair_votes=True)
    assert sequential_turns(calls, 8) == 19
    assert longest_deliberation(models=20, concurrency=8) == ("board", 26)
    # One at a time, 21 members: assess 63, rank 42, merge 2, synthesis 2.
    assert sequential_turns(calls, 1) == 109


def test_the_operator_override_wins() -> None:
    assert job_timeout_s(settings(models=["ollama:x"], job_timeout_s=900)) == 900
