"""What finding a server's structured-output mode costs, per server kind of the fake.

For each kind: the first structured call of a fresh process (which negotiates: refused modes
are tried and stepped past; the SDK retries a 5xx twice unless it names the format) against
a later call (which uses the remembered mode), in wall time and requests sent. The fake
answers at once, so the times are the protocol's own overhead.

Run: `python bench/negotiation.py`. Writes bench/results/negotiation.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import BaseModel, ConfigDict

from bot.providers import Message, ModelCall, OutputTool, ProviderRegistry, SystemBlock
from bot.providers.negotiation import ProcessModes
from bot.settings import Settings
from tests.support.model_server import SERVER_KINDS, FakeModelServer, run_fake_model_server

MODEL = "local-model"


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: str
    score: int


TOOL = OutputTool("submit_answer", "Answer.", Answer)
CALL: ModelCall[Answer] = ModelCall(
    system=[SystemBlock(text="You review code.")],
    messages=[Message(role="user", content="Give a verdict and a score.")],
    output=TOOL,
    max_tokens=256,
)


async def one_kind(server: FakeModelServer, kind: str) -> dict[str, Any]:
    server.reset()
    server.behave_as(kind, MODEL)  # type: ignore[arg-type]
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        endpoints={"box": {"base_url": server.openai_url, "local": True}},
    )  # default retries (2), as a user gets them
    registry = ProviderRegistry(settings, modes=ProcessModes())
    adapter = registry.get(f"box:{MODEL}")
    started = time.perf_counter()
    await adapter.call(CALL)
    first = time.perf_counter() - started
    first_requests = len(server.calls)
    later = []
    for _ in range(5):
        started = time.perf_counter()
        await adapter.call(CALL)
        later.append(time.perf_counter() - started)
    mode = adapter.structured_mode
    await registry.aclose()
    return {
        "kind": kind,
        "mode": mode,
        "first_call_s": first,
        "first_call_requests": first_requests,
        "later_call_s": statistics.median(later),
        "later_call_requests": (len(server.calls) - first_requests) / 5,
    }


async def measure() -> list[dict[str, Any]]:
    with run_fake_model_server() as server:
        return [await one_kind(server, kind) for kind in SERVER_KINDS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "negotiation.json"
    )
    args = parser.parse_args()
    rows = asyncio.run(measure())
    print("Structured-output negotiation, first call of a process against a later one")
    print(f"  {'server kind':<18} {'mode':<12} {'first call':>16} {'later call':>16}")
    for r in rows:
        print(
            f"  {r['kind']:<18} {r['mode']:<12} "
            f"{r['first_call_s'] * 1000:>7.0f} ms, {r['first_call_requests']} req "
            f"{r['later_call_s'] * 1000:>7.0f} ms, {r['later_call_requests']:g} req"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
