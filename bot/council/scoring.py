"""Board scoring: rank every persona against a change's signals (bot/council/selection.py
seats the board from the scores).

Four layers (docs/deliberation.md, "Board scoring"), each small and explainable:

- semantic: the change's *concepts* (signal terms normalized through `CONCEPTS`, so
  "latency" and "performance" are one thing) against the persona's normalized task types:
  exact +4, partial +2, else the concept named in its specialty text (description) +1.
- heuristic: the change's *raw terms* (keywords, areas, artifact types as written) against
  the persona's task types as written: exact +3, else partial +1; a term partly named in
  the specialty text +1; the persona's division matching the dominant area +2.
- metadata: signal languages and frameworks listed by the persona +3 each, artifact types
  +2, concepts named by a review strength +2; any of these only partly matching +1.
- memory: the persona's track record on this kind of change (`memory_score`).

Layers 3-4 count only when semantic + heuristic > 0: metadata alone (say, "it's Python")
must not seat a persona with nothing to say about the change. A persona that requires a kind
of file the change lacks (`requires_files`, bot/council/evidence.py) scores 0 and is not
eligible: only a pin or a person's add seats it. Everything is pure and
deterministic; ties break by persona id.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from bot.council.concepts import AREA_DIVISIONS, CONCEPTS, KNOWN_TERMS
from bot.council.evidence import CodeEvidence, IntentTerm, asked, intent_terms, missing_files
from bot.council.personas import Catalog, Persona
from bot.council.words import STOP_WORDS

SEMANTIC_EXACT, SEMANTIC_PARTIAL, SEMANTIC_SPECIALTY = 4, 2, 1
HEURISTIC_EXACT, HEURISTIC_PARTIAL, HEURISTIC_SPECIALTY, HEURISTIC_DIVISION = 3, 1, 1, 2
META_LANGUAGE, META_FRAMEWORK, META_ARTIFACT, META_STRENGTH, META_PARTIAL = 3, 3, 2, 2, 1
MEMORY_MAX = 5.0
GENERAL_TASK_TYPE = "general"


class ReviewSignals(BaseModel):
    """What a change is about, as the context builder extracts it (all terms free text)."""

    model_config = ConfigDict(frozen=True)

    topic: str = ""
    languages: tuple[str, ...] = ()
    frameworks: tuple[str, ...] = ()
    # Touched areas: "security", "database", "public-api", "ci-cd", "docs-only", ...
    areas: tuple[str, ...] = ()
    # Kinds of files touched: "migration", "dockerfile", "workflow", "openapi", ...
    artifact_types: tuple[str, ...] = ()
    # Keywords from the topic text.
    keywords: tuple[str, ...] = ()
    dominant_area: str | None = None
    # The evidence (bot/council/evidence.py): the PR's intent words, what its added lines
    # do, and a changed path per kind of `artifact_types`.
    intent: tuple[IntentTerm, ...] = ()
    evidence: tuple[CodeEvidence, ...] = ()
    artifact_paths: dict[str, str] = Field(default_factory=dict)


class PersonaRecord(BaseModel):
    """A persona's recorded outcomes on one task type (docs/deliberation.md, "Outcomes")."""

    model_config = ConfigDict(frozen=True)

    persona_id: str
    task_type: str
    outcomes: int = Field(ge=0)
    success_rate: float = Field(ge=0.0, le=1.0)
    top_for_task_type: bool = False


class ScoredPersona(BaseModel):
    """One persona's layer scores. `metadata` and `memory` are as counted (0 when gated)."""

    model_config = ConfigDict(frozen=True)

    persona: Persona
    semantic: int
    heuristic: int
    metadata: int
    memory: float
    total: float
    # The metadata score before gating: orders zero-scored personas when a board is filled.
    affinity: int = 0
    # Each point awarded, in words, for `council agents --explain`.
    reasons: tuple[str, ...] = ()
    # Why the persona may not be seated by its score: none of the kinds of file it requires
    # changed (bot/council/evidence.py); it scores 0 and no fill seats it. None: eligible.
    missing_evidence: str | None = None

    @property
    def id(self) -> str:
        return self.persona.id

    @property
    def division(self) -> str:
        return self.persona.division


# --- term handling -------------------------------------------------------------------


def _slug(term: str) -> str:
    """Lowercase, words joined by '-'; keeps '.', '+', '#' (next.js, c++, c#)."""
    words = re.split(r"[\s_/]+", term.strip().lower())
    return "-".join(w.strip("-") for w in words if w.strip("-"))


def normalize(term: str) -> str:
    """The concept a term stands for ("Latency" -> "performance", "JWT" -> "security")."""
    slug = _slug(term)
    return CONCEPTS.get(slug, slug)


def _tokens(term: str) -> frozenset[str]:
    return frozenset(t for t in re.split(r"[-.\s]+", term) if len(t) >= 3)


def _partial(a: str, b: str) -> bool:
    """Different slugs that share a word or contain one another ("api" ~ "public-api")."""
    if a == b or not a or not b:
        return False
    shorter, longer = sorted((a, b), key=len)
    return bool(_tokens(a) & _tokens(b)) or (len(shorter) >= 4 and shorter in longer)


@cache
def _mention_pattern(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<![a-z0-9])" + re.escape(phrase) + r"(?![a-z0-9])")


def _mentions(text: str, term: str) -> bool:
    """`term` (a slug) appears as a phrase in `text` (lowercased)."""
    return bool(term) and bool(_mention_pattern(term.replace("-", " ")).search(text))


# Parts of compound terms ("docs-only", "tests-only") that say nothing about a specialty.
_FILLER_WORDS = STOP_WORDS | {"only", "code", "file"}


def _mentions_partly(text: str, term: str) -> bool:
    """A word of `term` (4+ letters) starts a word in `text` ("migration" ~ "migrations")."""
    words = [w for w in re.split(r"[-.\s]+", term) if len(w) >= 4 and w not in _FILLER_WORDS]
    return any(re.search(r"(?<![a-z0-9])" + re.escape(w), text) for w in words)


def _specialty(persona: Persona) -> str:
    return f"{persona.name} {persona.description}".lower().replace("-", " ")


def _words(text: str) -> list[str]:
    """Topic words and adjacent pairs ("race condition" -> "race-condition"), slugged."""
    words = [w.strip(".-") for w in re.findall(r"[a-z0-9][a-z0-9+#.-]*", text.lower())]
    return _with_pairs([w for w in words if w])


def _with_pairs(words: list[str]) -> list[str]:
    return words + [f"{a}-{b}" for a, b in itertools.pairwise(words)]


def signal_terms(signals: ReviewSignals) -> list[str]:
    """Raw terms (slugged): keywords, areas, artifact types, the PR's intent and what its
    added lines do, plus the words of a question someone asked that the concept table knows
    (other topic words are noise: "the", "this", "PR"; the default question's are all)."""
    found = (*signals.keywords, *signals.areas, *signals.artifact_types)
    found += (*intent_terms(signals.intent), *(e.concept for e in signals.evidence))
    listed = {_slug(t) for t in found}
    topic = (
        {w for w in _words(signals.topic) if w in KNOWN_TERMS} if asked(signals.topic) else set()
    )
    return sorted((listed | topic) - {""})


def signal_concepts(signals: ReviewSignals) -> list[str]:
    """The change's concepts: raw terms normalized, plus languages and frameworks that the
    concept table maps (say, "sql" -> database, "react" -> frontend)."""
    concepts = {normalize(t) for t in signal_terms(signals)}
    for item in (*signals.languages, *signals.frameworks):
        if _slug(item) in CONCEPTS:
            concepts.add(CONCEPTS[_slug(item)])
    return sorted(concepts)


def divisions_for_area(area: str) -> frozenset[str]:
    """The divisions whose personas a (dominant) area calls for."""
    concept = normalize(area)
    return AREA_DIVISIONS.get(concept, frozenset({concept}))


def review_task_type(signals: ReviewSignals) -> str:
    """The task type outcomes are recorded under: the dominant area's concept."""
    if signals.dominant_area and _slug(signals.dominant_area):
        return normalize(signals.dominant_area)
    return GENERAL_TASK_TYPE


# --- the four layers -----------------------------------------------------------------


def _semantic(persona: Persona, concepts: Sequence[str]) -> tuple[int, list[str]]:
    task_concepts = {normalize(t) for t in persona.task_types}
    specialty = _specialty(persona)
    score, reasons = 0, []
    for concept in concepts:
        if concept in task_concepts:
            score += SEMANTIC_EXACT
            reasons.append(f"semantic +{SEMANTIC_EXACT}: '{concept}' is a task type")
        elif any(_partial(concept, t) for t in task_concepts):
            score += SEMANTIC_PARTIAL
            reasons.append(f"semantic +{SEMANTIC_PARTIAL}: '{concept}' partly a task type")
        elif _mentions(specialty, concept):
            score += SEMANTIC_SPECIALTY
            reasons.append(f"semantic +{SEMANTIC_SPECIALTY}: '{concept}' in its specialty")
    return score, reasons


def _heuristic(
    persona: Persona, terms: Sequence[str], dominant: str | None
) -> tuple[int, list[str]]:
    task_types = {_slug(t) for t in persona.task_types}
    specialty = _specialty(persona)
    score, reasons = 0, []
    for term in terms:
        if term in task_types:
            score += HEURISTIC_EXACT
            reasons.append(f"heuristic +{HEURISTIC_EXACT}: '{term}' exact task type")
        elif any(_partial(term, t) for t in task_types):
            score += HEURISTIC_PARTIAL
            reasons.append(f"heuristic +{HEURISTIC_PARTIAL}: '{term}' partial task type")
        if _mentions_partly(specialty, term):
            score += HEURISTIC_SPECIALTY
            reasons.append(f"heuristic +{HEURISTIC_SPECIALTY}: '{term}' partly in specialty")
    if dominant is not None and persona.division in divisions_for_area(dominant):
        score += HEURISTIC_DIVISION
        reasons.append(f"heuristic +{HEURISTIC_DIVISION}: division fits dominant '{dominant}'")
    return score, reasons


def _match_list(
    wanted: Iterable[str], offered: Iterable[str], exact: int, label: str
) -> tuple[int, list[str]]:
    offered_slugs = {compact(o) for o in offered}
    score, reasons = 0, []
    for item in sorted({compact(w) for w in wanted} - {""}):
        if item in offered_slugs:
            score += exact
            reasons.append(f"metadata +{exact}: {label} '{item}'")
        elif any(_partial(item, o) for o in offered_slugs):
            score += META_PARTIAL
            reasons.append(f"metadata +{META_PARTIAL}: {label} '{item}' partly")
    return score, reasons


def compact(term: str) -> str:
    # "Next.js" and "nextjs", "C#" and "c#": compare case-blind without dots.
    return _slug(term).replace(".", "")


def _strength_concepts(persona: Persona) -> set[str]:
    """Concepts a persona's lenses name: each word, and each pair of adjacent words."""
    found: set[str] = set()
    for strength in persona.review_strengths:
        words = [w for w in re.split(r"[^a-z0-9+#]+", strength.lower()) if w]
        found.update(normalize(g) for g in _with_pairs(words))
    return found


def _metadata(
    persona: Persona, signals: ReviewSignals, concepts: Sequence[str]
) -> tuple[int, list[str]]:
    lang = _match_list(signals.languages, persona.languages, META_LANGUAGE, "language")
    frame = _match_list(signals.frameworks, persona.frameworks, META_FRAMEWORK, "framework")
    art = _match_list(signals.artifact_types, persona.artifact_types, META_ARTIFACT, "artifact")
    score = lang[0] + frame[0] + art[0]
    reasons = [*lang[1], *frame[1], *art[1]]
    lenses = _strength_concepts(persona)
    for concept in concepts:
        if concept in lenses:
            score += META_STRENGTH
            reasons.append(f"metadata +{META_STRENGTH}: lens covers '{concept}'")
        elif any(_partial(concept, lens) for lens in lenses):
            score += META_PARTIAL
            reasons.append(f"metadata +{META_PARTIAL}: lens partly covers '{concept}'")
    return score, reasons


def memory_score(persona_id: str, task_type: str, records: Iterable[PersonaRecord]) -> float:
    """clamp(success_rate * 3 * min(outcomes / 5, 1) + (1 if top for the task type), 0, 5)."""
    task_type = normalize(task_type)
    mine = [
        r for r in records if r.persona_id == persona_id and normalize(r.task_type) == task_type
    ]
    if not mine:
        return 0.0
    # One record per persona and task type is expected; if the store sends more, trust the
    # one with the most evidence.
    best = max(mine, key=lambda r: (r.outcomes, r.success_rate, r.top_for_task_type))
    raw = best.success_rate * 3.0 * min(best.outcomes / 5, 1.0)
    raw += 1.0 if best.top_for_task_type else 0.0
    return min(max(raw, 0.0), MEMORY_MAX)


@dataclass(frozen=True)
class _Change:
    """The signals, digested once per scoring run."""

    signals: ReviewSignals
    concepts: tuple[str, ...]
    terms: tuple[str, ...]
    dominant: str | None
    task_type: str

    @classmethod
    def of(cls, signals: ReviewSignals) -> _Change:
        task_type = review_task_type(signals)
        return cls(
            signals=signals,
            concepts=tuple(signal_concepts(signals)),
            terms=tuple(signal_terms(signals)),
            dominant=None if task_type == GENERAL_TASK_TYPE else task_type,
            task_type=task_type,
        )


def _score(persona: Persona, change: _Change, records: Sequence[PersonaRecord]) -> ScoredPersona:
    semantic, why_semantic = _semantic(persona, change.concepts)
    heuristic, why_heuristic = _heuristic(persona, change.terms, change.dominant)
    metadata, why_metadata = _metadata(persona, change.signals, change.concepts)
    memory = memory_score(persona.id, change.task_type, records)
    reasons = [*why_semantic, *why_heuristic]
    counted = semantic + heuristic > 0
    if counted:
        reasons += why_metadata
        if memory:
            reasons.append(f"memory +{memory:.2f}: track record on '{change.task_type}'")
    elif metadata or memory:
        reasons.append("metadata and memory not counted: no semantic or heuristic match")
    missing = missing_files(persona.requires_files, change.signals.artifact_types)
    if missing is not None:  # not eligible: it scores nothing (bot/council/evidence.py)
        why = (f"not eligible: {missing}", *reasons)
        return ScoredPersona(
            persona=persona, semantic=0, heuristic=0, metadata=0, memory=0.0, total=0.0,
            reasons=why, missing_evidence=missing,
        )  # fmt: skip
    return ScoredPersona(
        persona=persona,
        semantic=semantic,
        heuristic=heuristic,
        metadata=metadata if counted else 0,
        memory=memory if counted else 0.0,
        total=semantic + heuristic + (metadata + memory if counted else 0.0),
        affinity=metadata,
        reasons=tuple(reasons),
    )


def score_catalog(
    catalog: Catalog | Iterable[Persona],
    signals: ReviewSignals,
    records: Sequence[PersonaRecord] = (),
) -> list[ScoredPersona]:
    """Every persona scored, highest total first, ties by persona id."""
    personas = catalog.personas.values() if isinstance(catalog, Catalog) else catalog
    change = _Change.of(signals)
    return sorted((_score(p, change, records) for p in personas), key=rank_key)


def rank_key(scored: ScoredPersona) -> tuple[float, str]:
    return (-scored.total, scored.id)


# --- explaining ----------------------------------------------------------------------


def explain(scored: Sequence[ScoredPersona], *, details: bool = False) -> list[str]:
    """One line per persona with its layer scores (for `council agents --explain`)."""
    lines = []
    for rank, s in enumerate(sorted(scored, key=rank_key), start=1):
        lines.append(
            f"{rank:>2}. {s.id:<28} {s.division:<16} total {_num(s.total):>5} = "
            f"semantic {s.semantic} + heuristic {s.heuristic} + metadata {s.metadata} "
            f"+ memory {_num(s.memory)}"
        )
        if details:
            lines.extend(f"      {reason}" for reason in s.reasons)
    return lines


def _num(value: float) -> str:
    return str(int(value)) if math.isclose(value, round(value)) else f"{value:.2f}"
