"""Shared fixtures: the fake model server (one per test session, i.e. per xdist worker)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot import tokens
from bot.providers import preflight, window
from bot.providers.negotiation import PROCESS_MODES
from tests.support.github_server import FakeGitHub, run_fake_github
from tests.support.model_server import FakeModelServer, run_fake_model_server


@pytest.fixture(autouse=True)
def fresh_estimator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with the estimator a fresh process has: the process-wide one learns
    from every call's usage, so without this a test's budget depends on the tests before it
    in the same worker."""
    monkeypatch.setattr(tokens, "_default", tokens.TokenEstimator())


@pytest.fixture(scope="session")
def fake_models() -> Iterator[FakeModelServer]:
    """The running fake model server, shared by the session. Prefer `models` in tests."""
    with run_fake_model_server() as server:
        yield server


@pytest.fixture
def models(fake_models: FakeModelServer) -> FakeModelServer:
    """The session's fake model server with no rules, no calls and an empty cache; and no
    structured-output mode remembered from an earlier test's calls to it."""
    fake_models.reset()
    PROCESS_MODES.forget()
    preflight.forget()
    window.forget()
    return fake_models


@pytest.fixture(scope="session")
def fake_github() -> Iterator[FakeGitHub]:
    """The running fake GitHub API server, shared by the session; tests reset and seed it."""
    with run_fake_github() as server:
        yield server
