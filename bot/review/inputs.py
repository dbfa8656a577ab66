"""From a change to the council's inputs, shared by the worker and the command line.

`pull_context` reads a pull request through the GitHub API; `council_inputs` turns a built
context into the prompt sections and scoring signals the engine takes. Both the App and
`council review` (local or `--pr`) go through here, so they see exactly the same material.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.context.build import build_context
from bot.context.models import BuiltContext, PullRequestMeta
from bot.context.summary import describe_signals
from bot.council.prompts import ContextSection
from bot.council.scoring import PersonaRecord, ReviewSignals, review_task_type
from bot.providers import CapabilityTable, ProviderRegistry
from bot.settings import Settings
from bot.store.db import Database
from bot.store.records import persona_track_records

if TYPE_CHECKING:  # githubkit is heavy; the local `council review` never needs it
    from bot.github.client import RepoClient
    from bot.github.fetch import PullInfo

DEFAULT_TOPIC = (
    "Review this pull request: is it correct, safe and well designed, and should it merge?"
)
# Tokens a seat writes per call, for the estimate (assessments are the longest answers).
_WORD = re.compile(r"[a-z][a-z0-9+#.-]{2,}")
# Words every review question has: they say nothing about which specialists to seat.
_STOP = frozenset(
    {
        "the",
        "and",
        "for",
        "this",
        "that",
        "with",
        "should",
        "would",
        "could",
        "review",
        "reviewer",
        "pull",
        "request",
        "change",
        "changes",
        "merge",
        "merged",
        "code",
        "correct",
        "safe",
        "well",
        "designed",
        "does",
        "what",
        "which",
        "how",
        "why",
        "its",
        "are",
        "was",
        "is",
        "into",
        "from",
        "about",
        "our",
        "your",
        "their",
        "there",
        "here",
        "will",
        "can",
        "not",
    }
)


@dataclass
class PullContext:
    built: BuiltContext
    notes: list[str] = field(default_factory=list)


async def pull_context(
    client: RepoClient, pull: PullInfo, *, budget_tokens: int, ignore_globs: Sequence[str] = ()
) -> PullContext:
    """Diff, commits and files at the head commit (a fork's head too: GitHub serves a PR's
    head commit from the base repository), packed to the budget."""
    from bot.github.fetch import commit_messages, fetch_diff, list_tree, read_file

    files, truncated = await list_tree(client, pull.head_sha)
    diff = await fetch_diff(client, pull.number)
    meta = PullRequestMeta(
        title=pull.title,
        body=pull.body,
        commit_messages=await commit_messages(client, pull.number),
        base_ref=pull.base_ref,
        head_ref=pull.head_ref,
    )

    def reader(path: str) -> Awaitable[bytes | None]:
        return read_file(client, path, pull.head_sha)

    built = await build_context(
        meta, diff.text, files, reader, budget_tokens=budget_tokens, ignore_globs=ignore_globs
    )
    notes = []
    if truncated:
        notes.append(
            "GitHub truncated the repository tree: related files may be missing from the context."
        )
    if diff.rebuilt_from_files and diff.files_without_patch:
        notes.append(
            "GitHub did not show the changes of: " + ", ".join(diff.files_without_patch[:20])
        )
    return PullContext(built, notes)


def council_inputs(
    built: BuiltContext, topic: str
) -> tuple[list[ContextSection], ReviewSignals, list[str]]:
    """The built context as the council takes it: prompt sections, scoring signals, and the
    left-out lines. The CLI and the App's worker both convert here."""
    sections = [
        ContextSection(kind=s.kind, path=s.path, why=s.why, text=s.text) for s in built.sections
    ]
    if not sections:
        sections = [ContextSection(kind="diff", text="(the diff is empty)")]
    sections.insert(
        0,
        ContextSection(
            kind="signals",
            why="what automated analysis of the change found",
            text=describe_signals(built.signals),
        ),
    )
    found = built.signals
    # Risky patterns name what to look for ("shell-injection"); scoring reads them as terms.
    flagged = {r.kind for r in found.risky_patterns}
    if found.trojan_source:
        flagged.add("trojan-source")
    signals = ReviewSignals(
        topic=topic,
        languages=tuple(found.languages),
        frameworks=tuple(found.frameworks),
        areas=tuple(found.areas),
        artifact_types=tuple(found.artifact_types),
        keywords=tuple(sorted((set(_WORD.findall(topic.lower())) - _STOP) | flagged)),
        dominant_area=found.dominant_area,
    )
    omitted = [f"{o.path}: {o.reason}" for o in built.omitted]
    return sections, signals, omitted


def context_budget(settings: Settings, models: list[str]) -> int:
    """The configured budget, capped to half the smallest window among the seated models:
    the other half is for rules, transcript and the answer. The context builder keeps the
    estimator's margin inside this budget."""
    table = CapabilityTable(settings.model_capabilities)
    registry = ProviderRegistry(settings, table=table)
    windows = [
        table.lookup(ref.family, ref.model).context_window for ref in map(registry.resolve, models)
    ]
    cap = int(min(windows) * 0.5) if windows else settings.context_tokens
    return min(settings.context_tokens, cap)


async def track_records(db: Database, signals: ReviewSignals) -> list[PersonaRecord]:
    """The personas' recorded outcomes on this change's task type (board scoring's memory)."""
    found = await persona_track_records(db, [review_task_type(signals)])
    return [
        PersonaRecord(
            persona_id=r.persona_id,
            task_type=r.task_type,
            outcomes=r.outcomes,
            success_rate=r.success_rate,
            top_for_task_type=r.top_for_task_type,
        )
        for r in found
    ]
