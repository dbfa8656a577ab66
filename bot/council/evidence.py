"""Seating by evidence: what a persona needs to see in a change before it may sit, and the
evidence the board's note cites.

- File kinds. A persona whose subject is a kind of file (migrations, schema files and ORM
  models; frontend files; dependency manifests and lock files; pipelines, containers and
  deployment manifests; documentation files) lists the kinds in its front matter
  (`requires_files`, agents/*.md); it is seated by its score only when a changed file is one
  of them (`missing_files`). A docstring, a word in a commit subject or a settings module
  does not seat it. A pinned seat, or one a person adds for a run, still sits, and the note
  says its evidence is absent.
- The PR's words. Intent words of the title, description and commit subjects ("fix",
  "perf", "CVE-..."; bot/context/intent.py) are signals (`IntentTerm`); the council's own
  default question is not (`asked`): its words ("...well designed...") say nothing about
  the change.
- What the added lines do (`CodeEvidence`, bot/context/constructs.py): trio, asyncio,
  goroutines and channels, threads are concurrency evidence; tenant checks and auth code
  are security evidence; and so on.

`FILE_KINDS` are the kinds bot/context/classify.py names a changed file (its
`ARTIFACT_KINDS`; the council may not import the context builder, so a test holds the two
lists together).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from bot.council.protocols.strategies.schemas import TaskType

__all__ = [
    "DEFAULT_TOPIC",
    "FILE_KINDS",
    "SEATING_INTENTS",
    "CodeEvidence",
    "IntentTerm",
    "asked",
    "cite",
    "file_cited",
    "intent_points",
    "intent_terms",
    "missing_files",
]

# The question before the council when nobody asked one (bot/review/inputs.py `review_topic`).
DEFAULT_TOPIC = (
    "Review this pull request: is it correct, safe and well designed, and should it merge?"
)

# What each kind is called in a sentence ("no migration, SQL, schema or ORM model file").
KIND_LABELS: dict[str, str] = {
    "migration": "migration", "sql": "SQL", "schema": "schema", "orm-model": "ORM model",
    "database-query": "database query", "dockerfile": "Dockerfile", "container": "container",
    "compose": "compose", "kubernetes-manifest": "Kubernetes manifest",
    "helm-chart": "Helm chart", "terraform": "Terraform", "deploy-manifest": "deployment",
    "workflow": "CI pipeline", "build": "build", "openapi": "OpenAPI",
    "protobuf": "protobuf", "graphql-schema": "GraphQL schema", "json-schema": "JSON schema",
    "lockfile": "lock", "changelog": "changelog", "readme": "README", "adr": "ADR",
    "architecture-doc": "architecture document", "markdown": "Markdown", "docs": "docs",
    "benchmark": "benchmark", "fixture": "test fixture", "snapshot": "snapshot",
    "type-stubs": "type stub", "component": "UI component", "stylesheet": "stylesheet",
    "template": "markup template", "frontend-script": "frontend script",
    "alerting-rules": "alerting", "dashboard": "dashboard",
    "feature-flag-config": "feature flag", "config": "config",
    "package-manifest": "dependency manifest", "requirements": "requirements", "test": "test",
    "source": "source",
}  # fmt: skip
FILE_KINDS = frozenset(KIND_LABELS)

# Intents (bot/context/intent.py `INTENTS`) that are scoring terms. "feature" is not: every
# change adds something, and no persona's subject is "a feature" (strategies reads it).
SEATING_INTENTS = frozenset(
    {"bug-fix", "performance", "security", "concurrency", "refactor", "documentation",
     "dependencies", "testing"}
)  # fmt: skip
# The PR's intents as `strategies` task types (`classify` in
# bot/council/protocols/strategies/seating.py); a headline word (the title, a commit
# subject) counts more than one in the description.
INTENT_TASK_TYPES: dict[str, TaskType] = {
    "bug-fix": "bug-fix",
    "feature": "feature",
    "refactor": "refactor",
    "performance": "performance",
    "security": "security",
    "dependencies": "dependency",
    "documentation": "docs",
    "testing": "tests-only",
}
_HEADLINE = ("title", "commit")
_SOURCE_NAMES = {
    "title": "the title",
    "commit": "a commit subject",
    "description": "the description",
}
# Citation order: the author's headline words first, then what the code does.
_SOURCE_ORDER = ("title", "commit", "code", "description")


class IntentTerm(BaseModel):
    """An intent word of the PR's own ("fix" in the title) and the intent it names."""

    model_config = ConfigDict(frozen=True)

    intent: str
    word: str
    source: str  # "title", "description", "commit"


class CodeEvidence(BaseModel):
    """What the change's code does: a concept ("concurrency"), what it does ("uses trio
    (nursery.start_soon)") and where."""

    model_config = ConfigDict(frozen=True)

    concept: str
    what: str
    path: str
    line: int


def asked(topic: str) -> bool:
    """Whether the topic is a question someone asked (not the default review question)."""
    return bool(topic.strip()) and topic.strip() != DEFAULT_TOPIC


def intent_terms(intent: Iterable[IntentTerm]) -> set[str]:
    """The scoring terms the PR's words give."""
    return {t.intent for t in intent if t.intent in SEATING_INTENTS}


def intent_points(intent: Iterable[IntentTerm]) -> tuple[Counter[TaskType], list[str]]:
    """Per task type, 2 points for each of its words in a headline and 1 in the description
    (two words at most count), and the evidence, "title: fix" per word."""
    points: Counter[TaskType] = Counter()
    evidence: list[str] = []
    words: dict[TaskType, list[str]] = {}
    for term in intent:
        kind = INTENT_TASK_TYPES.get(term.intent)
        if kind is None or term.word in words.get(kind, []):
            continue
        words.setdefault(kind, []).append(term.word)
        if len(words[kind]) <= 2:
            points[kind] += 2 if term.source in _HEADLINE else 1
        evidence.append(f"{term.source}: {term.word}")
    return points, evidence


def _or(items: Sequence[str]) -> str:
    items = list(dict.fromkeys(items))
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def missing_files(requires: Sequence[str], artifact_types: Iterable[str]) -> str | None:
    """Why a persona may not be seated by its score ("no migration, SQL, schema or ORM
    model file changed"), or None when one of the kinds it requires changed (or it
    requires none)."""
    if not requires or set(requires) & set(artifact_types):
        return None
    return f"no {_or([KIND_LABELS.get(k, k) for k in requires])} file changed"


def file_cited(requires: Sequence[str], artifact_paths: Mapping[str, str]) -> str | None:
    """The changed file that lets a file-kind persona sit ("db/migrations/0003.py
    changed"), or None."""
    for kind in requires:
        path = artifact_paths.get(kind)
        if path:
            return f"{path} changed"
    return None


def cite(
    concept: str,
    intent: Sequence[IntentTerm],
    evidence: Sequence[CodeEvidence],
    normalize: Callable[[str], str],
) -> str | None:
    """The best evidence for `concept` (a normalized scoring concept), in words: "the title
    says 'fix'", "it uses trio (nursery.start_soon) in graphrag/utils.py:442"; None when
    neither the PR's words nor its added lines name it. `normalize` maps an intent or an
    evidence concept to the scoring concept it stands for (bot/council/scoring.py
    `normalize`: "bug-fix" -> "correctness")."""
    found: dict[str, str] = {}
    for term in intent:
        if normalize(term.intent) == concept:
            who = _SOURCE_NAMES.get(term.source, term.source)
            found.setdefault(term.source, f"{who} says '{term.word}'")
    for item in evidence:
        if normalize(item.concept) == concept:
            found.setdefault("code", f"it {item.what} in {item.path}:{item.line}")
    return next((found[s] for s in _SOURCE_ORDER if s in found), None)
