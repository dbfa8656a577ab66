"""A built context as the council takes it: prompt sections, scoring signals, the budget
and the personas' track records. Shared by every review, from the App or the command line.
"""

from __future__ import annotations

import re

from bot.context.models import BuiltContext
from bot.context.prose import clean_untrusted
from bot.context.summary import describe_signals
from bot.council.evidence import DEFAULT_TOPIC, CodeEvidence, IntentTerm, asked
from bot.council.prompts import ContextSection, render_context
from bot.council.scoring import ReviewSignals
from bot.council.words import REVIEW_QUESTION_WORDS as _STOP
from bot.providers import ProviderRegistry
from bot.providers.window import window_of
from bot.settings import Settings

__all__ = [
    "DEFAULT_TOPIC",
    "QUESTION_MAX_CHARS",
    "context_budget",
    "council_inputs",
    "review_topic",
    "seats_context",
]
_WORD = re.compile(r"[a-z][a-z0-9+#.-]{2,}")


# A question is a sentence or a paragraph: what is longer (a pasted file, a log) is clipped
# before it is sent to every seat, stored and shown; the topic then ends by saying so.
QUESTION_MAX_CHARS = 500
# A clip inside a word steps back to the word's start when one is this close.
_CLIP_WORD_BACK = 40


def review_topic(question: str | None) -> str:
    """The question before the council: the one asked (`/council <question>`, `--question`),
    cleaned like the PR's own words (hidden text out, secrets redacted) before it is sent,
    stored or shown; the default review question when none is asked (or nothing is left).
    A question longer than `QUESTION_MAX_CHARS` is clipped (after the cleaning, so no secret
    is cut where the redactor would miss it) and ends "… (clipped from N characters)"."""
    cleaned = clean_untrusted(question or "")
    if not cleaned:
        return DEFAULT_TOPIC
    if len(cleaned) <= QUESTION_MAX_CHARS:
        return cleaned
    kept = cleaned[:QUESTION_MAX_CHARS]
    if not cleaned[QUESTION_MAX_CHARS].isspace():
        start = QUESTION_MAX_CHARS - _CLIP_WORD_BACK
        space = max(kept.rfind(blank, start) for blank in " \n\t")
        if space > 0:
            kept = kept[:space]
    return f"{kept.rstrip()}… (clipped from {len(cleaned):,} characters)"


def council_inputs(
    built: BuiltContext, topic: str
) -> tuple[list[ContextSection], ReviewSignals, list[str]]:
    """The built context as the council takes it: prompt sections, scoring signals, and the
    left-out lines. The CLI and the App's worker both convert here. The topic's words are
    keywords only when someone asked it (not the default question, whose words say nothing
    about the change); the PR's intent words and what its added lines do are evidence
    (bot/council/evidence.py)."""
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
    words = set(_WORD.findall(topic.lower())) - _STOP if asked(topic) else set()
    signals = ReviewSignals(
        topic=topic,
        languages=tuple(found.languages),
        frameworks=tuple(found.frameworks),
        areas=tuple(found.areas),
        artifact_types=tuple(found.artifact_types),
        keywords=tuple(sorted(words | flagged)),
        dominant_area=found.dominant_area,
        intent=tuple(
            IntentTerm(intent=w.intent, word=w.word, source=w.source) for w in found.intent
        ),
        evidence=tuple(
            CodeEvidence(concept=e.concept, what=e.what, path=e.path, line=e.line)
            for e in found.evidence
        ),
        artifact_paths=dict(found.artifact_paths),
    )
    omitted = [f"{o.path}: {o.reason}" for o in built.omitted]
    return sections, signals, omitted


def seats_context(built: BuiltContext) -> str:
    """The context block every seat reads, as `prepare_review` (bot/review/assemble.py)
    renders it for a review with nothing added to it (no findings still open): for
    `council context --show`."""
    sections, _, omitted = council_inputs(built, DEFAULT_TOPIC)
    return render_context(built.title, sections, omitted)


def context_budget(settings: Settings, models: list[str], wanted: int | None = None) -> int:
    """`wanted` (default: the operator's COUNCIL_CONTEXT_TOKENS), capped to half the smallest
    window among the seated models: the other half is for rules, transcript and the answer.
    A window is the one its server said (`bot.providers.window.discover`, which a review
    runs first), the endpoint's setting, the table's, or the default for an unknown model.
    The context builder keeps the estimator's margin inside this budget."""
    budget = settings.context_tokens if wanted is None else wanted
    if not models:
        return budget
    registry = ProviderRegistry(settings)  # builds no client: no SDK is imported
    windows = [window_of(registry, model).tokens for model in models]
    return min(budget, int(min(windows) * 0.5))
