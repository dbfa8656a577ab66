"""The fake model server's context windows: a prompt past the window refused in each
server's own shape, output clipped to what the window leaves, and what llama-server,
Ollama and vLLM say of their windows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.model_server import (
    LLAMA_SERVER_N_CTX,
    OLLAMA_TRAINED_CONTEXT,
    VLLM_MAX_MODEL_LEN,
    FakeModelServer,
    Reply,
)

AUTH = {"Authorization": "Bearer k"}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


def chat(words: int, max_tokens: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "qwen",
        "messages": [{"role": "user", "content": "word " * words}],
    }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


async def post(models: FakeModelServer, http: httpx.AsyncClient, body: Any) -> httpx.Response:
    return await http.post(models.openai_url + "/chat/completions", json=body, headers=AUTH)


async def test_llama_cpp_python_refuses_a_prompt_as_its_errors_py_words_it(
    models: FakeModelServer, http: httpx.AsyncClient
) -> None:
    models.behave_as("llama-cpp-python")
    prompt = models.count_tokens("word " * 200)
    models.context_window(prompt)  # P >= N is refused, as the real one does
    response = await post(models, http, chat(200, 1000))
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": (
                f"This model's maximum context length is {prompt} tokens. However, you "
                f"requested {prompt + 1000} tokens ({prompt} in the messages, 1000 in the "
                "completion). Please reduce the length of the messages or completion."
            ),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    response = await post(models, http, chat(200))
    assert "(" + str(prompt) + " in the messages, None in the completion)" in response.text
    assert [c.status for c in models.calls] == [400, 400]


async def test_llama_server_and_openai_refuse_in_their_own_shapes(
    models: FakeModelServer, http: httpx.AsyncClient
) -> None:
    prompt = models.count_tokens("word " * 200)
    models.context_window(100)
    models.behave_as("llama-server")
    error = (await post(models, http, chat(200))).json()["error"]
    assert error == {
        "code": 400,
        "message": (
            f"request ({prompt} tokens) exceeds the available context size (100 tokens), "
            "try increasing it"
        ),
        "type": "exceed_context_size_error",
        "n_prompt_tokens": prompt,
        "n_ctx": 100,
    }
    models.behave_as("openai")
    error = (await post(models, http, chat(200))).json()["error"]
    assert error["code"] == "context_length_exceeded" and error["param"] == "messages"
    assert error["message"] == (
        f"This model's maximum context length is 100 tokens. However, your messages "
        f"resulted in {prompt} tokens. Please reduce the length of the messages."
    )


async def test_output_past_the_window_is_clipped_silently(
    models: FakeModelServer, http: httpx.AsyncClient
) -> None:
    models.behave_as("llama-cpp-python")
    prompt = models.count_tokens("word " * 20)
    models.context_window(prompt + 10)
    models.on(reply=Reply(text="x" * 400))  # 101 tokens of answer
    answer = (await post(models, http, chat(20, 4096))).json()
    assert answer["choices"][0]["finish_reason"] == "length"
    assert answer["usage"]["completion_tokens"] == 10
    assert answer["choices"][0]["message"]["content"] == "x" * 40
    models.context_window(prompt + 500)
    answer = (await post(models, http, chat(20, 4096))).json()
    assert answer["choices"][0]["finish_reason"] == "stop"  # it fits: nothing is cut
    assert [c.request.max_tokens for c in models.calls] == [4096, 4096]  # as sent


async def test_only_llama_server_answers_props(
    models: FakeModelServer, http: httpx.AsyncClient
) -> None:
    assert (await http.get(models.url + "/props")).status_code == 404
    models.behave_as("llama-server")
    props = (await http.get(models.url + "/props")).json()
    assert props["default_generation_settings"]["n_ctx"] == LLAMA_SERVER_N_CTX
    models.context_window(2048)
    props = (await http.get(models.url + "/props")).json()
    assert props["default_generation_settings"]["n_ctx"] == 2048
    assert props["total_slots"] == 1


async def test_only_ollama_answers_api_show(
    models: FakeModelServer, http: httpx.AsyncClient
) -> None:
    show = models.url + "/api/show"
    assert (await http.post(show, json={"model": "llama3.1:8b"})).status_code == 404
    models.behave_as("ollama")
    answer = (await http.post(show, json={"model": "llama3.1:8b"})).json()
    assert "num_ctx" not in answer["parameters"]
    assert answer["model_info"]["general.architecture"] == "llama"
    assert answer["model_info"]["llama.context_length"] == OLLAMA_TRAINED_CONTEXT
    models.context_window(8192, trained=32_768)
    answer = (await http.post(show, json={"model": "llama3.1:8b"})).json()
    assert answer["parameters"].splitlines()[0].split() == ["num_ctx", "8192"]
    assert answer["model_info"]["llama.context_length"] == 32_768
    models.served_models = ["qwen3:8b"]
    missing = await http.post(show, json={"model": "llama3.1:8b"})
    assert missing.status_code == 404 and missing.json() == {
        "error": "model 'llama3.1:8b' not found"
    }


async def test_vllm_lists_max_model_len(models: FakeModelServer, http: httpx.AsyncClient) -> None:
    models.served_models = ["qwen", "llama"]
    models.behave_as("vllm")
    models.behave_as("openai", "llama")
    models.context_window(4096, "qwen")
    listed = (await http.get(models.openai_url + "/models", headers=AUTH)).json()["data"]
    qwen, llama = listed
    assert (qwen["owned_by"], qwen["max_model_len"]) == ("vllm", 4096)
    assert "max_model_len" not in llama
    models.context_window(None, "qwen")
    listed = (await http.get(models.openai_url + "/models", headers=AUTH)).json()["data"]
    assert listed[0]["max_model_len"] == VLLM_MAX_MODEL_LEN


async def test_reset_forgets_the_windows(models: FakeModelServer, http: httpx.AsyncClient) -> None:
    models.context_window(10, trained=20)
    models.reset()
    assert (models.windows, models.trained) == ({}, {})
    assert (await post(models, http, chat(200))).status_code == 200
