"""Each phase asks for the tokens its answer needs (issue 23, items 1-2): every list of every
answer is bounded (`maxItems`, kept by the strict rewrite and accepted by strict mode), each
answer's budget holds its bounded schema's worst case, and a deliberation over the wire (the
real SDKs through the provider registry, the fake model server answering as
`CouncilScript`) sends each phase its own `max_tokens`, every one under the 8,192 ceiling."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.council import prompts
from bot.council.board import BoardConfig
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.scoring import ReviewSignals
from bot.providers import OutputTool, ProviderRegistry
from bot.providers.schema import tool_schema
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, strict_schema_error
from tests.unit.providers.test_providers import make_settings

ANTHROPIC = "anthropic:claude-opus-4-6"
OPENAI = "openai:gpt-5.4"
CEILING = 8192  # DeliberationRequest.max_tokens's default
TOOLS: dict[str, OutputTool] = {t.name: t for t in prompts.DELIBERATION_TOOLS}

# A text's typical length in characters, by field name (120: one sentence); lists are full.
TYPICAL_CHARS = {
    "summary": 400,
    "brief": 400,
    "recommendation": 400,
    "merged_plan": 600,
    "reasoning": 320,
    "detail": 240,
    "analysis": 200,
    "rationale": 240,
    "key_argument": 200,
    "meta_insight": 200,
    "reason": 160,
    "focus": 160,
    "option_c": 160,
    "point": 160,
    "sides": 160,
    "replacement": 160,
    "suggestion": 120,
    "position": 120,
    "pro": 100,
    "con": 100,
    "condition": 80,
    "title": 60,
    "path": 30,
    "lens": 30,
    "name": 30,
    "option": 30,
    "options": 30,
    "dimension": 20,
    "dimensions": 20,
    "to_member": 10,
    "member": 10,
    "ranking": 10,
    "redebate_members": 10,
    "findings": 4,  # a merge group's ids, "F12"
}
CHARS_PER_TOKEN = 3.5  # English prose in JSON: its keys and quotes cost tokens too


def worst_case(node: dict[str, Any], root: dict[str, Any], name: str = "") -> Any:
    """The answer with every list full and every text at its typical length."""
    if "$ref" in node:
        return worst_case(root["$defs"][node["$ref"].split("/")[-1]], root, name)
    if "anyOf" in node:
        variant = next(v for v in node["anyOf"] if v.get("type") != "null")
        return worst_case(variant, root, name)
    if "enum" in node:
        return max(node["enum"], key=lambda v: len(str(v)))
    kind = str(node.get("type"))
    if kind == "object":
        return {k: worst_case(v, root, k) for k, v in node["properties"].items()}
    if kind == "array":
        return [worst_case(node["items"], root, name) for _ in range(node["maxItems"])]
    if kind == "string":
        return "x" * TYPICAL_CHARS.get(name, 120)
    return {"integer": 100, "number": 0.85, "boolean": False}[kind]


def arrays(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if node.get("type") == "array":
            found.append((path, node))
        for key, value in node.items():
            found += arrays(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += arrays(value, f"{path}[{i}]")
    return found


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_list_of_every_answer_is_bounded_and_strict_mode_takes_it(name: str) -> None:
    tool = TOOLS[name]
    strict = tool_schema(tool.schema, strict=True)
    lists = arrays(strict)
    unbounded = [path for path, node in lists if not isinstance(node.get("maxItems"), int)]
    assert unbounded == []
    # The plain schema (Anthropic's) says the same bounds; OpenAI's strict check takes them.
    assert [n["maxItems"] for _, n in arrays(tool_schema(tool.schema, strict=False))] == [
        n["maxItems"] for _, n in lists
    ]
    assert strict_schema_error(strict) is None


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_each_budget_holds_its_bounded_worst_case_with_headroom(name: str) -> None:
    tool = TOOLS[name]
    strict = tool_schema(tool.schema, strict=True)
    worst = math.ceil(len(json.dumps(worst_case(strict, strict))) / CHARS_PER_TOKEN)
    assert tool.max_tokens is not None
    assert tool.max_tokens >= 1.2 * worst, f"{name}: worst case {worst} tokens"
    assert tool.max_tokens < CEILING
    # The request's max_tokens stays the ceiling.
    assert tool.output_tokens(CEILING) == tool.max_tokens
    assert tool.output_tokens(300) == 300


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


def request(protocol: str, topic: str, **kw: Any) -> DeliberationRequest:
    return DeliberationRequest(
        deliberation_id=f"budgets-{protocol}",
        topic=topic,
        protocol=protocol,
        context="<untrusted-diff>\n+ while True: retry(request)\n</untrusted-diff>",
        signals=ReviewSignals(topic=topic, languages=["python"]),
        models=[ANTHROPIC, OPENAI],
        board=BoardConfig(default_size=3, min_size=2, discussion_rounds=1),
        assessment_timeout_s=10.0,
        **kw,
    )


def asked(models: FakeModelServer) -> dict[str, set[int | None]]:
    """The max_tokens each phase's calls were sent, by the tool they answered with."""
    sent: dict[str, set[int | None]] = {}
    for call in models.calls:
        assert call.request.output_name is not None
        sent.setdefault(call.request.output_name, set()).add(call.request.max_tokens)
    return sent


async def test_a_debate_sends_each_phase_its_own_budget(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    req = request("debate", "Should this cache live in Redis?", debate_mode="standard")
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(req)

    assert advisory.synthesis is not None
    sent = asked(models)
    phases = {"submit_panel", "submit_assessment", "submit_discussion", "submit_judgement"}
    assert phases | {"submit_vote", "submit_synthesis"} <= set(sent)
    for tool, limits in sent.items():
        assert limits == {TOOLS[tool].max_tokens}, tool  # one budget per phase, both APIs
    budgets = [next(iter(v)) for v in sent.values()]
    assert len(set(budgets)) >= 5  # the design and the judge's call both need ~1,000
    assert all(b is not None and b < CEILING for b in budgets)


async def test_a_strategies_deliberation_sends_its_critique_and_reconciliation_theirs(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    scores = {"Root cause strategy": 88, "Minimal fix strategy": 80}
    models.default(CouncilScript(strategy_scores=scores).reply)
    req = request("strategies", "Fix the crash in the retry loop")
    await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(req)

    sent = asked(models)
    assert sent["submit_critique"] == {TOOLS["submit_critique"].max_tokens}
    assert sent["submit_reconciliation"] == {TOOLS["submit_reconciliation"].max_tokens}
    assert sent["submit_assessment"] == {TOOLS["submit_assessment"].max_tokens}
    assert all(b is not None and b < CEILING for v in sent.values() for b in v)
