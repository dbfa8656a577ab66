"""The one retry loop of GitHub calls (`bot.github.retry`), on a clock the test drives.

No test here sleeps: `RetryPolicy` takes the clock, the sleep and the jitter's random draw,
and the failures are githubkit's own exceptions around real httpx requests and responses.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from githubkit import Response
from githubkit.exception import (
    GitHubException,
    RequestError,
    RequestFailed,
    RequestTimeout,
    SecondaryRateLimitExceeded,
)

from bot.github.retry import Backoff, RetryPolicy
from bot.settings import Settings

URL = "https://api.github.com/repos/acme/widgets/pulls/1"


class FakeClock:
    """Time that passes only when the code under test sleeps (or a test says so)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def answered(status: int, method: str = "GET", **headers: str) -> Response[Any]:
    request = httpx.Request(method, URL, headers=headers)
    return Response(httpx.Response(status, request=request, json={"message": "x"}), Any)


def failed(status: int, method: str = "GET") -> RequestFailed:
    return RequestFailed(answered(status, method))


def broken(kind: type[httpx.TransportError], method: str = "GET") -> RequestError[Any]:
    error = kind("boom", request=httpx.Request(method, URL))
    if isinstance(error, httpx.TimeoutException):
        return RequestTimeout(error)
    return RequestError(error)


class Script:
    """An attempt that raises the given failures in turn (or `endless()` every time), then
    answers "ok"; each try takes `takes_s` on the clock."""

    def __init__(
        self,
        *failures: GitHubException,
        endless: Callable[[], GitHubException] | None = None,
        clock: FakeClock | None = None,
        takes_s: float = 0,
    ) -> None:
        self.failures = list(failures)
        self.endless = endless
        self.calls = 0
        self.clock = clock
        self.takes_s = takes_s

    async def __call__(self) -> str:
        self.calls += 1
        if self.clock is not None:
            self.clock.now += self.takes_s
        if self.endless is not None:
            raise self.endless()
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


def always(
    make: Callable[[], GitHubException], clock: FakeClock | None = None, takes_s: float = 0
) -> Script:
    return Script(endless=make, clock=clock, takes_s=takes_s)


def policy(
    clock: FakeClock, draw: float | Callable[[], float] = 1.0, **backoff: float
) -> RetryPolicy:
    draws = draw if callable(draw) else (lambda: draw)
    return RetryPolicy(Backoff(**backoff), clock=clock, sleep=clock.sleep, draw=draws)


# --- the default schedule ---------------------------------------------------------------------


async def test_the_default_schedule_doubles_from_one_second_capped_at_30_within_180() -> None:
    clock = FakeClock()
    storm = always(lambda: failed(502))
    with pytest.raises(RequestFailed) as last:
        await policy(clock).call(storm)  # the jitter at its top: the ceilings themselves
    assert clock.sleeps == [1, 2, 4, 8, 16, 30, 30, 30, 30]  # 151 s; 30 more would be 181
    assert storm.calls == 10
    assert last.value.response.status_code == 502


async def test_the_jitter_keeps_each_wait_between_half_its_ceiling_and_the_ceiling() -> None:
    ceilings = [min(30.0, 2.0**n) for n in range(40)]
    for seed in range(20):
        clock = FakeClock()
        with pytest.raises(RequestFailed):
            await policy(clock, random.Random(seed).random).call(always(lambda: failed(503)))
        assert all(
            ceiling / 2 <= wait <= ceiling
            for wait, ceiling in zip(clock.sleeps, ceilings, strict=False)
        )
        assert sum(clock.sleeps) <= 180
        assert sum(clock.sleeps) + ceilings[len(clock.sleeps)] > 180  # it stopped for the budget


async def test_at_the_bottom_of_the_jitter_there_are_more_tries_in_the_same_budget() -> None:
    clock = FakeClock()
    with pytest.raises(RequestFailed):
        await policy(clock, 0.0).call(always(lambda: failed(500)))
    assert clock.sleeps == [0.5, 1, 2, 4, 8] + [15] * 10  # 165.5 s; 15 more would be 180.5


def test_the_settings_give_the_default_schedule() -> None:
    backoff = RetryPolicy.from_settings(Settings(_env_file=None)).backoff
    assert backoff == Backoff(budget_s=180.0, first_s=1.0, max_delay_s=30.0)
    tuned = Settings(_env_file=None, github_retry_budget_s=20, github_retry_max_delay_s=4)
    assert RetryPolicy.from_settings(tuned).backoff == Backoff(budget_s=20, max_delay_s=4)


async def test_time_spent_trying_counts_against_the_budget() -> None:
    clock = FakeClock()
    slow = always(lambda: broken(httpx.ReadTimeout), clock=clock, takes_s=30)  # each try 30 s
    with pytest.raises(RequestTimeout):
        await policy(clock).call(slow)
    # 30, +1, 30, +2, 30, +4, 30, +8, 30 = 165 s; the next wait (16) would end at 181.
    assert clock.sleeps == [1, 2, 4, 8] and slow.calls == 5


# --- what is tried again ----------------------------------------------------------------------


async def test_a_storm_that_ends_inside_the_budget_is_ridden_out() -> None:
    clock = FakeClock()
    script = Script(failed(502), failed(503), failed(504), failed(500))
    assert await policy(clock).call(script) == "ok"
    assert clock.sleeps == [1, 2, 4, 8] and script.calls == 5


@pytest.mark.parametrize("status", [400, 403, 404, 406, 409, 422, 501])
async def test_an_answer_that_will_not_change_is_not_asked_again(status: int) -> None:
    clock = FakeClock()
    script = Script(failed(status))
    with pytest.raises(RequestFailed):
        await policy(clock).call(script)
    assert clock.sleeps == [] and script.calls == 1


@pytest.mark.parametrize("method", ["GET", "POST", "PATCH"])
@pytest.mark.parametrize("kind", [httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout])
async def test_a_request_that_never_left_is_sent_again_whatever_its_method(
    kind: type[httpx.TransportError], method: str
) -> None:
    clock = FakeClock()
    script = Script(broken(kind, method), broken(kind, method))
    assert await policy(clock).call(script, method=method) == "ok"
    assert clock.sleeps == [1, 2]


@pytest.mark.parametrize("kind", [httpx.ReadTimeout, httpx.ReadError, httpx.RemoteProtocolError])
async def test_a_broken_answer_is_asked_again_but_a_post_is_not_sent_twice(
    kind: type[httpx.TransportError],
) -> None:
    clock = FakeClock()
    assert await policy(clock).call(Script(broken(kind)), method="GET") == "ok"
    assert await policy(clock).call(Script(broken(kind, "PATCH")), method="PATCH") == "ok"
    post = Script(broken(kind, "POST"))
    with pytest.raises(RequestError):  # it may have created the comment already
        await policy(clock).call(post, method="POST")
    assert post.calls == 1


async def test_a_failed_token_request_inside_a_call_is_judged_by_its_own_answer() -> None:
    clock = FakeClock()
    # githubkit wraps what the auth flow raises in a bare RequestError.
    minting = Script(RequestError(failed(502, "POST")), RequestError(failed(503, "POST")))
    assert await policy(clock).call(minting) == "ok"
    assert clock.sleeps == [1, 2]
    refused = Script(RequestError(failed(404, "POST")))
    with pytest.raises(RequestError):
        await policy(clock).call(refused)
    assert refused.calls == 1


# --- rate limits ------------------------------------------------------------------------------


def limited(seconds: int) -> SecondaryRateLimitExceeded:
    return SecondaryRateLimitExceeded(answered(403, "POST"), timedelta(seconds=seconds))


async def test_a_rate_limit_is_waited_out_when_its_retry_after_ends_within_the_budget() -> None:
    clock = FakeClock()
    script = Script(limited(60), failed(502), limited(0))
    assert await policy(clock).call(script, method="POST") == "ok"
    assert clock.sleeps == [60, 2, 0]  # the backoff keeps counting across both kinds


async def test_a_rate_limit_past_the_budget_fails_at_once() -> None:
    clock = FakeClock()
    with pytest.raises(SecondaryRateLimitExceeded):
        await policy(clock).call(Script(limited(3600)), method="POST")
    assert clock.sleeps == []
    clock = FakeClock()
    late = Script(failed(502), failed(502), failed(502), limited(175))  # 7 s in: 182 > 180
    with pytest.raises(SecondaryRateLimitExceeded):
        await policy(clock).call(late)
    assert clock.sleeps == [1, 2, 4]


# --- 401: new credentials, once ---------------------------------------------------------------


class Renewal:
    def __init__(self, renewed: bool = True) -> None:
        self.renewed = renewed
        self.failures: list[GitHubException] = []

    async def __call__(self, failure: GitHubException) -> bool:
        self.failures.append(failure)
        return self.renewed


async def test_a_401_renews_the_credentials_once_then_is_an_error() -> None:
    clock = FakeClock()
    renew = Renewal()
    once = Script(failed(401))
    assert await policy(clock).call(once, refresh=renew) == "ok"
    assert once.calls == 2 and len(renew.failures) == 1 and clock.sleeps == []

    renew = Renewal()
    twice = Script(failed(401), failed(401))
    with pytest.raises(RequestFailed) as refused:
        await policy(clock).call(twice, refresh=renew)
    assert refused.value.response.status_code == 401
    assert twice.calls == 2 and len(renew.failures) == 1


async def test_a_401_without_renewable_credentials_is_an_error_at_once() -> None:
    clock = FakeClock()
    for refresh in (None, Renewal(renewed=False)):
        script = Script(failed(401))
        with pytest.raises(RequestFailed):
            await policy(clock).call(script, refresh=refresh)
        assert script.calls == 1


async def test_a_storm_after_the_renewal_is_still_retried() -> None:
    clock = FakeClock()
    renew = Renewal()
    # The token request made with the new credentials meets a 502 first.
    script = Script(failed(401), RequestError(failed(502, "POST")), failed(502))
    assert await policy(clock).call(script, refresh=renew) == "ok"
    assert clock.sleeps == [1, 2] and len(renew.failures) == 1
