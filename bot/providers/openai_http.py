"""The HTTP client under the OpenAI SDK: openai's own (`DefaultAsyncHttpxClient`, so its
connection limits, redirects and proxies stay the SDK's), with what the SDK cannot know.

- A refusal of the request's format is not retried. The SDK retries a 500 twice, and
  llama-cpp-python refuses `json_schema` with a 500 (its validation error): three requests
  for one answer that cannot change. An error response whose message names the format
  (`bot.providers.negotiation.refuses_format`: the words negotiation steps down on) gets the
  `x-should-retry: false` header the SDK obeys, so negotiation steps down after one request.
  Any other 5xx, and a 429, keep the SDK's retries (and its reading of Retry-After).
- For a local server, a request the server may have taken is never sent again by the SDK.
  A local server (llama-cpp-python, Ollama) runs one request at a time and goes on with a
  request whose client has left; a request sent again would wait behind its own orphan. So a
  connection lost after the request was written (the server's answer cut, or none) ends the
  attempt, surfaced as is; one refused, or lost while connecting or writing, is still retried
  (the server has not got the request: nothing runs there). `local_timeout` is the per-attempt
  timeout of such a server: none but the connect's, so the adapter's call deadline governs
  (its end closes the stream, which stops the server's generation).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai

from bot.providers.errors import body_words
from bot.providers.negotiation import FORMAT_STATUSES, refuses_format

SHOULD_RETRY = "x-should-retry"  # the SDK's own header: "false" stops its retries
# Lost before the server had the whole request: sending it again runs nothing twice.
NOT_TAKEN: tuple[type[httpx2.RequestError], ...] = (
    httpx2.ConnectError,
    httpx2.ConnectTimeout,
    httpx2.PoolTimeout,
    httpx2.WriteError,
    httpx2.WriteTimeout,
    httpx2.ProxyError,
    httpx2.UnsupportedProtocol,
    httpx2.LocalProtocolError,
)


def local_timeout(connect_s: float) -> openai.Timeout:
    """A local server's per-attempt timeout: only connecting is bounded."""
    return openai.Timeout(None, connect=connect_s)


class CouncilHttpClient(openai.DefaultAsyncHttpxClient):
    """openai's default async client; `local`: the server is on the operator's machines."""

    def __init__(self, *, local: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.local = local

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        try:
            response = await super().send(request, **kwargs)
            if response.status_code in FORMAT_STATUSES:
                await response.aread()  # an error's body: the SDK reads it anyway
        except httpx2.RequestError as err:
            if not self.local or isinstance(err, NOT_TAKEN):
                raise  # the SDK's retries
            raise not_resent(err, request) from None
        if response.status_code in FORMAT_STATUSES and refuses_format(
            response.status_code, _words(response)
        ):
            response.headers[SHOULD_RETRY] = "false"
        return response


def not_resent(err: httpx2.RequestError, request: httpx2.Request) -> openai.OpenAIError:
    """The SDK's error for a local request lost after it was sent: an OpenAIError, which the
    SDK raises as is (no retry)."""
    if isinstance(err, httpx2.TimeoutException):
        return openai.APITimeoutError(request=request)
    message = (
        f"the connection was lost after the request was sent ({type(err).__name__}); "
        "not sent again, as the server may still be working on it"
    )
    return openai.APIConnectionError(message=message, request=request)


def _words(response: httpx2.Response) -> str:
    text = response.text
    try:
        body: object = json.loads(text)
    except ValueError:
        body = text
    return body_words(body)
