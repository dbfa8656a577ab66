"""Recorded outputs ("golden files") and what makes a run of the council repeatable enough
to compare with them byte for byte (tests/service/test_same_behaviour.py).

Two things vary from run to run and are not behaviour:

- Fresh ids. A deliberation's id seeds the anonymized member order (`member_order` in
  bot/council/seats.py shuffles the seats with it), so a fresh `uuid4` would list the seats
  in another order, label them "Member A/B/C" otherwise and send the discussion's
  challenges elsewhere. `FixedIds` stands in for `uuid.uuid4` for the calls made by the
  project's own code (a module named `bot.*`) and nobody else's: the n-th call from one
  place in the code returns `00000000-0000-4000-8000-00000000000n`. Counting per place
  keeps the deliberation's id the same however many ids other places draw first, so moving
  or splitting a module does not change it. Library and test-harness calls (queue names,
  delivery ids, Redis keys) stay random, so runs that share one Redis never collide. (A
  module that imports `uuid4` by name, `from uuid import uuid4`, escapes it.)
- Values of the moment: `normalize` replaces them with fixed placeholders, and nothing else
  (see its docstring for the list).

`CouncilForks` runs `council` as the console script does (`bot.cli.main` with the
arguments, environment and working directory given), each run in a process of its own
forked from one that has imported the model SDKs, SQLAlchemy and the CLI's libraries -
never `bot` itself, which each run imports afresh. The SDK imports are most of a run's
start-up, and three fixtures run the command line six times.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import CodeType
from typing import Any, NoReturn

__all__ = ["CouncilForks", "FixedIds", "normalize"]


class FixedIds:
    """`uuid.uuid4` for the project's code: per calling place, the n-th id is UUID(int=n)
    as a version 4 UUID; every other caller gets `random_uuid4`'s."""

    def __init__(self, random_uuid4: Callable[[], uuid.UUID]) -> None:
        self._random = random_uuid4
        self._counts: dict[CodeType, int] = {}

    def __call__(self) -> uuid.UUID:
        caller = sys._getframe(1)
        if not str(caller.f_globals.get("__name__", "")).startswith("bot."):
            return self._random()
        count = self._counts.get(caller.f_code, 0) + 1
        self._counts[caller.f_code] = count
        return uuid.UUID(int=count, version=4)


# --- the command line, forked from a process that has its libraries imported --------------

PRELOADED = (
    "anthropic",
    "openai",
    "httpx",
    "sqlalchemy.ext.asyncio",
    "aiosqlite",
    "pydantic_settings",
    "structlog",
    "rich.console",
    "typer",
    "yaml",
    "unidiff",
)
_FORKER = """
import importlib, json, os, signal, sys
sys.path[0] = os.getcwd()  # not "": a run's working directory is not searched for modules
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
from tests.support.golden import watch_council_run
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the watchers
for line in sys.stdin:
    if os.fork() == 0:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        watch_council_run(json.loads(line))
"""


def watch_council_run(request: dict[str, Any]) -> NoReturn:
    """Fork the run of `council`, wait for it and write its exit code to `status` (the run
    may end in `os._exit`, as `bot.cli.main` ends a review)."""
    pid = os.fork()
    if pid == 0:
        _run_council(request)
    _, status = os.waitpid(pid, 0)
    done = Path(request["status"])
    done.with_suffix(".tmp").write_text(str(os.waitstatus_to_exitcode(status)))
    done.with_suffix(".tmp").rename(done)
    os._exit(0)


def _run_council(request: dict[str, Any]) -> NoReturn:
    """`council *args` in this (forked) process as the console script runs it, with
    `FixedIds`; stdin from /dev/null, stdout and stderr to files."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        random.seed()  # as a process of its own starts
        for fd, path, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own stdin
        sys.argv = ["council", *request["args"]]
        uuid.uuid4 = FixedIds(uuid.uuid4)
        from bot.cli import main

        main()
        code = 0
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            code = done.code or 0
        else:
            print(done.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class CouncilForks:
    """The forking process (started at once; it imports `PRELOADED` while the caller goes
    on) and the runs of `council` it forks; `close` stops it."""

    def __init__(self, source_root: Path, directory: Path, env: Mapping[str, str]) -> None:
        self._directory = directory
        self._runs = 0
        self._log = directory / "forker.log"
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _FORKER, *PRELOADED],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=source_root,
                env={**env, "PYTHONPATH": str(source_root)},
            )

    async def run(
        self, args: Sequence[str], cwd: Path, env: Mapping[str, str], *, timeout_s: float = 300
    ) -> tuple[int, str, str]:
        """`council *args` in `cwd` with exactly `env`: its exit code, stdout and stderr."""
        self._runs += 1
        base = self._directory / f"council-{self._runs}"
        files = {part: base.with_suffix(f".{part}") for part in ("stdout", "stderr", "status")}
        request = {"args": list(args), "cwd": str(cwd), "env": dict(env)}
        request |= {part: str(path) for part, path in files.items()}
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(request).encode() + b"\n")
        self._process.stdin.flush()
        deadline = time.monotonic() + timeout_s
        while not files["status"].exists():
            if self._process.poll() is not None:
                raise AssertionError(f"the forking process ended: {self._log.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"council {' '.join(args)}: no exit in {timeout_s} s")
            await asyncio.sleep(0.05)
        code = int(files["status"].read_text())
        return code, files["stdout"].read_text(), files["stderr"].read_text()

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)


# --- the normalizer -------------------------------------------------------------------------

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_TIMESTAMP = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
_PORT = re.compile(r"\b(127\.0\.0\.1|localhost):\d{2,5}\b")
# A wall time as the renderers write it ("0.8 s", `f"{ms / 1000:.1f} s"`), and `--json`'s.
_WALL_TIME = re.compile(r"(?<![\w.])\d+\.\d s\b")
_WALL_MS = re.compile(r'("wall_ms": )\d+')


def normalize(text: str, known: Mapping[str, str] | None = None) -> str:
    """`text` with the values of the moment replaced by fixed placeholders:

    - `known`: exact values of this run, longest first, e.g. its temporary directory
      ("<tmp>") and the ids the fake GitHub gave its comment and check run;
    - UUIDs ("<uuid>"), ISO timestamps ("<timestamp>"), local ports ("127.0.0.1:<port>");
    - wall times ("0.8 s" -> "<wall-time>") and `--json`'s "wall_ms" ("<wall-ms>").

    Nothing else: a count, a cost, a word or an order that changes is a difference."""
    for value, placeholder in sorted((known or {}).items(), key=lambda kv: -len(kv[0])):
        if value:
            text = text.replace(value, placeholder)
    text = _UUID.sub("<uuid>", text)
    text = _TIMESTAMP.sub("<timestamp>", text)
    text = _PORT.sub(r"\1:<port>", text)
    text = _WALL_MS.sub(r'\1"<wall-ms>"', text)
    return _WALL_TIME.sub("<wall-time>", text)
