"""Serving a fake: uvicorn on 127.0.0.1 (a free port) with its own event loop in a daemon
thread, so sync tests, async tests and benchmarks can all talk to it over a real socket."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import uvicorn


class ServerThread:
    def __init__(
        self,
        app: Any,
        *,
        name: str,
        probe_path: str = "/",
        on_loop: Callable[[asyncio.AbstractEventLoop], None] | None = None,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._probe_path = probe_path
        self._on_loop = on_loop
        self._on_stop = on_stop
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit this: without it, a response written in two parts
        # waits out the client's delayed ACK (about 40 ms a request on loopback), which
        # would inflate every latency the tests and benchmarks measure.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
            timeout_keep_alive=30,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        if self._on_loop is not None:
            self._on_loop(loop)
        try:
            loop.run_until_complete(self.server.serve(sockets=[self.sock]))
        except BaseException as exc:  # surfaced by start()
            self.error = exc
        finally:
            loop.close()

    def start(self, timeout: float = 10.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.error is not None or not self.thread.is_alive():
                raise RuntimeError(f"the {self.name} did not start") from self.error
            if self.server.started and _answers(self.url + self._probe_path):
                return
            time.sleep(0.02)
        raise RuntimeError(f"the {self.name} did not answer in time")

    def stop(self) -> None:
        if self._on_stop is not None:
            self._on_stop()
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # it answered, even if with 404
    except OSError:
        return False
