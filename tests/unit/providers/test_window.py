"""A model's window as its server says it (llama-server's /props, Ollama's /api/show,
vLLM's /v1/models), the endpoint's setting over it, the local default when nothing is
said, and the review's context budget from it; a refusal's window and prompt, read."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from bot.providers import ContextTooLong, ProviderRegistry
from bot.providers.errors import map_sdk_error
from bot.providers.window import (
    LOCAL_CONTEXT_WINDOW,
    OLLAMA_DEFAULT_WINDOW,
    discover,
    forget,
    remembered,
    window_of,
)
from bot.review.inputs import context_budget
from bot.settings import Settings
from tests.support.cli import run_council
from tests.support.diffs import AUTH_DIFF
from tests.support.model_server import FakeModelServer, Fault


@pytest.fixture(autouse=True)
def no_windows() -> Iterator[None]:
    """No window discovered or learned by another test of this process."""
    forget()
    yield
    forget()


def settings(models: FakeModelServer, base_url: str | None = None, **endpoint: Any) -> Settings:
    box = {"base_url": base_url or models.openai_url, "local": True, **endpoint}
    return Settings(
        _env_file=None,
        openai_api_key="sk-test-0123456789",
        openai_base_url=models.openai_url,
        max_retries=0,
        endpoints={"box": box},
    )


async def windows(
    models: FakeModelServer, refs: list[str], base_url: str | None = None, **endpoint: Any
) -> tuple[list[int], int]:
    """What the review plans for each of `refs` after asking, and its context budget."""
    config = settings(models, base_url, **endpoint)
    registry = ProviderRegistry(config)
    await discover(registry, refs)
    planned = [window_of(registry, ref).tokens for ref in refs]
    return planned, context_budget(config, refs, 100_000)


async def test_llama_server_says_its_window_in_props(models: FakeModelServer) -> None:
    models.behave_as("llama-server")
    models.context_window(6144)
    planned, budget = await windows(models, ["box:qwen2.5-coder"])
    assert planned == [6144] and budget == 3072
    assert remembered("box:qwen2.5-coder") is not None
    assert models.calls == []  # no model was called to find it out


async def test_ollama_says_num_ctx_when_its_modelfile_sets_one(models: FakeModelServer) -> None:
    models.behave_as("ollama")
    models.context_window(16_384, "qwen3:8b")
    planned, budget = await windows(models, ["box:qwen3:8b"])
    assert planned == [16_384] and budget == 8192


async def test_ollama_without_num_ctx_has_its_default_within_the_models_own_length(
    models: FakeModelServer,
) -> None:
    models.behave_as("ollama")
    planned, _ = await windows(models, ["box:llama3.1:8b"])
    assert planned == [OLLAMA_DEFAULT_WINDOW]  # the smallest of Ollama's defaults
    forget()
    models.context_window(None, "tinyllama", trained=2048)
    models.context_window(65_536, "phi3", trained=4096)
    planned, budget = await windows(models, ["box:tinyllama", "box:phi3"])
    assert planned == [2048, 4096] and budget == 1024  # never past the model's own length


async def test_vllm_lists_max_model_len(models: FakeModelServer) -> None:
    models.behave_as("vllm")
    models.served_models = ["Qwen/Qwen3-Coder-30B", "other"]
    models.context_window(40_960, "Qwen/Qwen3-Coder-30B")
    planned, budget = await windows(models, ["box:Qwen/Qwen3-Coder-30B"])
    assert planned == [40_960] and budget == 20_480


async def test_the_endpoints_setting_wins_and_nothing_is_asked(models: FakeModelServer) -> None:
    models.behave_as("llama-server")
    models.context_window(2048)
    listed = models.model_list_calls
    planned, budget = await windows(models, ["box:qwen"], context_window=12_000)
    assert planned == [12_000] and budget == 6000
    assert models.model_list_calls == listed


async def test_a_server_that_says_nothing_gets_the_local_default(models: FakeModelServer) -> None:
    models.behave_as("llama-cpp-python")  # no /props, no /api/show, no max_model_len
    models.served_models = ["qwen"]
    planned, budget = await windows(models, ["box:qwen"])
    assert planned == [LOCAL_CONTEXT_WINDOW] and budget == LOCAL_CONTEXT_WINDOW // 2
    assert remembered("box:qwen") is None  # a default, not said: nothing is cut for it


async def test_a_known_model_keeps_the_tables_window(models: FakeModelServer) -> None:
    config = settings(models)
    await discover(ProviderRegistry(config), ["openai:gpt-5.4"])
    assert context_budget(config, ["openai:gpt-5.4"], 900_000) == 500_000
    assert models.model_list_calls == 0  # nobody was asked


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_unreachable_server_gets_the_default_quickly(models: FakeModelServer) -> None:
    started = time.monotonic()
    url = f"http://127.0.0.1:{closed_port()}/v1"
    planned, budget = await windows(models, ["box:qwen"], base_url=url)
    assert planned == [LOCAL_CONTEXT_WINDOW] and budget == LOCAL_CONTEXT_WINDOW // 2
    assert time.monotonic() - started < 1.0


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server that takes connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


async def test_a_server_that_never_answers_gets_the_default_in_bounded_time(
    models: FakeModelServer, silent_server: str
) -> None:
    started = time.monotonic()
    planned, _ = await windows(models, ["box:qwen"], base_url=silent_server)
    assert planned == [LOCAL_CONTEXT_WINDOW]
    assert time.monotonic() - started < 3.0


async def test_what_a_server_said_is_kept_for_the_process(models: FakeModelServer) -> None:
    models.behave_as("vllm")
    models.served_models = ["qwen"]
    models.context_window(20_000)
    await windows(models, ["box:qwen"])
    listed = models.model_list_calls
    models.context_window(50_000)
    planned, _ = await windows(models, ["box:qwen"])
    assert planned == [20_000] and models.model_list_calls == listed


def test_the_dry_run_plans_the_budget_from_the_servers_window(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.behave_as("llama-server")
    models.context_window(3000)
    (tmp_path / "change.diff").write_text(AUTH_DIFF)
    endpoints = json.dumps({"box": {"base_url": models.openai_url, "local": True}})
    done = run_council(
        models,
        tmp_path,
        "review",
        "--diff",
        "change.diff",
        "--models",
        "box:qwen",
        "--dry-run",
        "--json",
        COUNCIL_ENDPOINTS=endpoints,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["context"]["budget"] == 1500
    assert models.calls == []


# --------------------------------------------------------------------------------------------
# A refusal's window and prompt, as each server words them
# --------------------------------------------------------------------------------------------


async def refused(models: FakeModelServer, kind: Any, max_tokens: int | None) -> ContextTooLong:
    models.behave_as(kind)
    models.context_window(300)
    client = openai.AsyncOpenAI(base_url=models.openai_url, api_key="k", max_retries=0)
    extra: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
    try:
        with pytest.raises(openai.BadRequestError) as raised:
            await client.chat.completions.create(
                model="qwen", messages=[{"role": "user", "content": "word " * 400}], **extra
            )
    finally:
        await client.close()
    error = map_sdk_error(raised.value, ref="box:qwen", key_env=None)
    assert isinstance(error, ContextTooLong)
    return error


@pytest.mark.parametrize("kind", ["llama-cpp-python", "llama-server", "openai", "vllm"])
async def test_a_refusal_names_the_window_and_the_prompt(
    models: FakeModelServer, kind: str
) -> None:
    error = await refused(models, kind, 1000)
    assert models.calls[-1].status == 400
    assert (error.window, error.prompt_tokens) == (300, models.count_tokens("word " * 400))


async def test_llama_cpp_pythons_refusal_without_max_tokens_still_reads(
    models: FakeModelServer,
) -> None:
    error = await refused(models, "llama-cpp-python", None)
    assert "None in the completion" in str(error)
    assert (error.window, error.prompt_tokens) == (300, models.count_tokens("word " * 400))


async def test_anthropics_refusal_names_the_window_and_the_prompt(
    models: FakeModelServer,
) -> None:
    models.on(reply=Fault.bad_request("prompt is too long: 210000 tokens > 200000 maximum"))
    client = anthropic.AsyncAnthropic(base_url=models.anthropic_url, api_key="k", max_retries=0)
    try:
        with pytest.raises(anthropic.BadRequestError) as raised:
            await client.messages.create(
                model="claude-sonnet-5-5",
                max_tokens=10,
                messages=[{"role": "user", "content": "hi"}],
            )
    finally:
        await client.close()
    error = map_sdk_error(raised.value, ref="anthropic:claude-sonnet-5-5", key_env=None)
    assert isinstance(error, ContextTooLong)
    assert (error.window, error.prompt_tokens) == (200_000, 210_000)
