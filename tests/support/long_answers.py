"""Long, realistic council answers: what a capable model writes on an ordinary PR.

`LongCouncilScript` answers like `CouncilScript`, but each seat writes a 4-sentence
summary, long lens analyses, four or five findings of 2-4 sentences with suggestions (the
same issues seen by several seats, in overlapping words, as real boards do), concerns,
recommendations, long discussion messages, votes with conditions, and a chair's synthesis
with a long recommendation and seven action items. `long_advisory` runs the engine on it
in-process (`FakeProviders`) for a protocol and a board size: the renderers and
`bench/advisory.py` measure the comment on these.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bot.council.advisory import Advisory
from bot.council.board import BoardConfig, PinnedSeat
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.protocols import ProtocolName
from bot.council.scoring import ReviewSignals
from tests.support.council_answers import CouncilScript, label_of, lenses_of, persona_of
from tests.support.fake_provider import DEFAULT_MODELS as MODELS
from tests.support.fake_provider import FakeProviders

__all__ = [
    "ISSUES",
    "LongCouncilScript",
    "all_titles",
    "long_advisory",
    "long_advisory_sync",
    "repetition",
    "sentences",
]

# (severity, path, line, title, detail, suggestion): the issues of a 225-line PR that adds
# a retrying HTTP client to a payment service. Seats pick overlapping subsets.
ISSUES: tuple[tuple[str, str, int, str, str, str], ...] = (
    (
        "critical",
        "payments/client.py",
        88,
        "Retry loop has no upper bound on attempts",
        "The while loop in send_with_retry retries every 5xx and timeout forever, because "
        "the attempt counter is reset inside the except branch. Under a sustained upstream "
        "outage each request holds a worker and a connection indefinitely, which exhausts "
        "the pool within minutes. This is the failure mode that took the checkout down in "
        "the last incident review.",
        "Cap attempts at a small constant (for example 5), keep the counter outside the "
        "try block, and raise a typed PaymentUnavailable after the last attempt.",
    ),
    (
        "major",
        "payments/client.py",
        97,
        "Backoff has no jitter, so retries synchronise",
        "The delay doubles from a fixed base with no randomisation, so every client that "
        "saw the same failure retries at the same instants. Synchronised retries turn a "
        "short blip into a thundering herd against the payment provider. The provider's "
        "documentation asks clients to add full jitter.",
        "Use full jitter: sleep a random time between zero and the capped exponential delay.",
    ),
    (
        "major",
        "payments/client.py",
        104,
        "Non-idempotent POST is retried without an idempotency key",
        "create_charge is retried on timeouts, but a timeout does not mean the charge "
        "failed. Without an Idempotency-Key header the provider may charge the customer "
        "twice. The tests only cover the happy path, so nothing catches a double charge.",
        "Send a stable Idempotency-Key per logical charge and only retry POSTs that carry one.",
    ),
    (
        "major",
        "payments/client.py",
        71,
        "Timeouts are not set on the session",
        "The aiohttp session is created without a ClientTimeout, so a slow provider can "
        "hold a request for the library default of five minutes. Combined with the retry "
        "loop, a single request can run for hours.",
        "Set connect and total timeouts on the session and make them configurable.",
    ),
    (
        "minor",
        "payments/tests/test_client.py",
        12,
        "Tests do not cover the retry exhaustion path",
        "The new tests mock a provider that succeeds on the second try. No test asserts "
        "what happens when every attempt fails, which is exactly the path with the bug.",
        "Add a test where every attempt fails and assert the typed error and the attempt count.",
    ),
    (
        "minor",
        "payments/client.py",
        120,
        "Log line leaks the card fingerprint",
        "The warning logged on each retry includes the full request payload, and the "
        "payload carries the card fingerprint. Logs are retained for 90 days and are "
        "readable by the whole engineering team.",
        "Log the charge id and the attempt number only.",
    ),
    (
        "nit",
        "payments/client.py",
        15,
        "Module docstring still describes the old client",
        "The docstring says the client never retries, which is no longer true after this change.",
        "Update the docstring to describe the retry policy.",
    ),
    (
        "nit",
        "payments/client.py",
        42,
        "Magic number for the base delay",
        "The base delay of 0.2 seconds is written inline in two places.",
        "Name it RETRY_BASE_DELAY_S once.",
    ),
)

_REWORDINGS = (
    ("Retry loop has no upper bound on attempts", "Unbounded retries in send_with_retry"),
    ("Backoff has no jitter, so retries synchronise", "Exponential backoff lacks jitter"),
    ("Timeouts are not set on the session", "No client timeout on the aiohttp session"),
)


_SUMMARIES = (
    "The retry loop in payments/client.py has no upper bound and the backoff has no jitter, "
    "so a provider outage would exhaust the connection pool.",
    "An outage at the provider would keep every worker retrying forever, because the "
    "attempt counter is reset on each failure.",
    "The helper retries POSTs that are not idempotent and never gives up, which is risky "
    "for a payment path.",
    "The new tests cover only the happy path and would not catch the unbounded retry.",
)
_CLOSINGS = (
    "Once the loop is bounded and a failing-provider test exists, the change is a clear "
    "improvement.",
    "With a cap on attempts and jitter on the delay I would approve it.",
    "The fixes are small; the design itself is sound.",
    "None of this is hard to fix, but it must be fixed before merging.",
)
_ANALYSES = (
    "The helper, however, retries without a bound and without jitter.",
    "The POST path has no idempotency key, so a retried timeout may charge twice.",
    "The session has no timeout, so one slow call can block a worker for minutes.",
    "The exhaustion path is untested; the mock always succeeds on the second try.",
    "Each retry logs the full payload, card fingerprint included.",
)


def _reworded(title: str, seat: int) -> str:
    if seat % 2:
        for old, new in _REWORDINGS:
            if title == old:
                return new
    return title


_CANDIDATE = re.compile(r"^(F\d+) \| [^|]+ \| ([^|]+) \| ", re.MULTILINE)


@dataclass
class LongCouncilScript(CouncilScript):
    """Long answers; every seat writes like a capable model (see the module docstring)."""

    def _merge(self, text: str) -> dict[str, Any]:
        """As a capable chair merges: the seats' findings at one location are the same
        issue here (each issue of `ISSUES` has its own lines), however they are worded."""
        by_location: dict[str, list[str]] = {}
        for fid, location in _CANDIDATE.findall(text):
            by_location.setdefault(location.strip(), []).append(fid)
        groups = [ids for ids in by_location.values() if len(ids) > 1]
        reason = "The same defect in the same code, in other words."
        return {"groups": [{"findings": ids, "reason": reason} for ids in groups]}

    def _seat_no(self, text: str) -> int:
        persona = persona_of(text) or label_of(text)
        return sum(map(ord, persona)) % 7

    def _assessment(self, text: str) -> dict[str, Any]:
        base = super()._assessment(text)
        n = self._seat_no(text)
        persona = persona_of(text) or "This member"
        picks = [ISSUES[(n + k) % len(ISSUES)] for k in range(5)]
        if ISSUES[0] not in picks:
            picks[0] = ISSUES[0]  # everyone sees the unbounded retry
        base["verdict"] = "CONCERNS"
        base["score"] = 5
        base["summary"] = (
            f"{persona} finds the change well structured but not safe to merge as written. "
            + _SUMMARIES[n % len(_SUMMARIES)]
            + " "
            + _CLOSINGS[n % len(_CLOSINGS)]
        )
        base["lens_scores"] = [
            {
                "lens": lens,
                "score": 5 + (i % 3),
                "analysis": (
                    f"Under {lens}, the change moves retries into one helper, which is the "
                    f"right place for them. {_ANALYSES[(n + i) % len(_ANALYSES)]} I read the "
                    f"diff of payments/client.py with {lens} in mind."
                ),
            }
            for i, lens in enumerate(lenses_of(text))
        ]
        base["concerns"] = [
            "The retry loop is unbounded and will hold workers during an outage.",
            "Retrying create_charge without an idempotency key risks double charges.",
            "The retry path is untested: no test makes every attempt fail.",
        ]
        base["recommendations"] = [
            "Bound the retries at five attempts and raise a typed error after the last one.",
            "Add full jitter to the backoff.",
            "Add a test where the provider fails every attempt.",
        ]
        base["findings"] = [
            {
                "severity": sev,
                "path": path,
                "start_line": line,
                "end_line": line + 6,
                "title": _reworded(title, n),
                "detail": detail,
                "suggestion": suggestion,
            }
            for sev, path, line, title, detail, suggestion in picks
        ]
        return base

    def _discussion(self, text: str) -> dict[str, Any]:
        me = label_of(text)
        other = "Member A" if me != "Member A" else "Member B"
        return {
            "messages": [
                {
                    "type": "CHALLENGE",
                    "to_member": other,
                    "point": "The retry loop must be bounded before merging, not in a follow-up.",
                    "reasoning": "The counter is reset inside the except branch, so the loop "
                    "never ends during an outage. A follow-up would leave checkout exposed "
                    "for at least a release. Bounding it is a three-line change.",
                    "original_position": None,
                    "new_position": None,
                    "changed_by": None,
                },
                {
                    "type": "AGREE",
                    "to_member": None,
                    "point": "A test where every attempt fails is needed.",
                    "reasoning": "Every member asked for it, and it is the path with the bug.",
                    "original_position": None,
                    "new_position": None,
                    "changed_by": None,
                },
            ]
        }

    def _vote(self, text: str) -> dict[str, Any]:
        base = super()._vote(text)
        base["vote"] = "APPROVE"
        base["rationale"] = (
            "The design is right and the fixes are small. "
            + _CLOSINGS[self._seat_no(text) % len(_CLOSINGS)]
        )
        base["conditions"] = [
            "Bound the retry loop at five attempts and raise a typed error after the last.",
            "Add a test where every attempt fails.",
        ]
        return base

    def _synthesis(self, text: str) -> dict[str, Any]:
        base = super()._synthesis(text)
        base["consensus"] = [
            "The retry loop in send_with_retry is unbounded and must be capped.",
            "The backoff needs jitter to avoid synchronised retries.",
            "The retry exhaustion path needs a test.",
        ]
        base["divergence"] = [
            {
                "point": "Whether the idempotency key belongs in this PR",
                "sides": [
                    "Member A: yes, a retried POST without it can double-charge today.",
                    "Member C: it is a separate change; disable POST retries here instead.",
                ],
            }
        ]
        base["recommendation"] = (
            "Merge once the retry loop in payments/client.py is bounded at a small number of "
            "attempts with full jitter, and a test makes every attempt fail. The idempotency "
            "key can follow in its own PR if POST retries are disabled until then. The "
            "members agree the structure of the change is sound; the open items are about "
            "failure behaviour, not design. Logging of the payload should be reduced to the "
            "charge id before this reaches production."
        )
        base["action_items"] = [
            "Bound the retry loop at five attempts and raise a typed error after the last.",
            "Add full jitter to the exponential backoff.",
            "Add a test where every attempt fails.",
            "Disable retries of create_charge until it sends an idempotency key.",
            "Set connect and total timeouts on the aiohttp session.",
            "Stop logging the request payload on retries.",
            "Update the module docstring to describe the retry policy.",
        ]
        base["conditions"] = [
            "Bound the retry loop at five attempts and raise a typed error after the last.",
            "Add a test where every attempt fails.",
        ]
        return base


CONTEXT = "```diff\n" + "+    response = await session.post(url, json=payload)\n" * 225 + "```\n"


# Pinned so a board of any size is seated (scoring alone seats fewer on this small diff).
BOARD = (
    "correctness-reviewer",
    "sre-reliability",
    "appsec-reviewer",
    "concurrency-analyst",
    "test-engineer",
    "performance-engineer",
    "maintainability-reviewer",
    "api-contract-reviewer",
    "devils-advocate",
)


async def long_advisory(protocol: ProtocolName, seats: int) -> Advisory:
    """A deliberation of `protocol` with `seats` seats on `LongCouncilScript`: board seats
    for `board`, one model a seat for `council`; `quick` and `debate` seat what they do."""
    models = [f"fake:m{i}" for i in range(seats)] if protocol == "council" else list(MODELS)
    fake = FakeProviders(LongCouncilScript(), models=models)
    pinned = [PinnedSeat(persona=p) for p in BOARD[:seats]] if protocol == "board" else []
    request = DeliberationRequest(
        deliberation_id=f"long-{protocol}-{seats}",
        topic="Review this pull request: add retries to the payment client",
        protocol=protocol,
        context=CONTEXT,
        models=models,
        pinned=pinned,
        signals=ReviewSignals(topic="review", languages=("python",), areas=("reliability",)),
        board=BoardConfig(default_size=seats, min_size=min(3, seats), discussion_rounds=2),
    )
    return await Engine(fake, load_catalog(), InMemoryLedger()).deliberate(request)


def long_advisory_sync(protocol: ProtocolName, seats: int) -> Advisory:
    return asyncio.run(long_advisory(protocol, seats))


_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|\s\|\s")


_WHO = re.compile(r"^\d+ seats?( member [a-z]+)*$")


def sentences(text: str) -> list[str]:
    """The sentences (and table cells) of `text`, normalized, of 30 characters or more;
    "2 seats (Member A, Member B)" is who said it, not a point."""
    out = []
    for part in _SPLIT.split(text):
        norm = " ".join(re.sub(r"[^\w\s]", " ", part.casefold()).split())
        if len(norm) >= 30 and not _WHO.match(norm):
            out.append(norm)
    return out


def repetition(text: str, titles: Iterable[str]) -> tuple[int, int]:
    """How often the most repeated finding title appears in `text`, and how often the most
    repeated sentence does."""
    folded = text.casefold()
    title_max = max((folded.count(t.casefold()) for t in titles if t), default=0)
    counts = Counter(sentences(text))
    return title_max, max(counts.values(), default=0)


def all_titles() -> list[str]:
    return [issue[3] for issue in ISSUES] + [new for _, new in _REWORDINGS]
