"""Seating by evidence (issue 22, items 4 and 5): a change's diff and its PR's words go
through the context builder, `council_inputs` and the board, and the board that comes out
seats a file-kind persona only when such a file changed, reads the PR's title, description
and commit subjects, calls the concurrency seat on the constructs of the added lines, and
says why in its "Why this board" note. `strategies` classifies from the PR's words, never
from the council's own default question."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.context import PullRequestMeta, build_context
from bot.context.classify import ARTIFACT_KINDS
from bot.council.boardplan import SeatedBoard, seat_board
from bot.council.evidence import FILE_KINDS
from bot.council.personas import load_catalog
from bot.council.protocols.strategies.report import Classification
from bot.council.protocols.strategies.seating import classify
from bot.council.scoring import ReviewSignals, ScoredPersona, explain, score_catalog
from bot.review.inputs import DEFAULT_TOPIC, council_inputs
from bot.review.local import read_branch
from bot.review.localrepo import change_meta
from tests.support.cli import git
from tests.support.diffs import diff_of

CATALOG = load_catalog()
PYTHON_CHANGE = diff_of(
    "app/billing.py",
    "def total(items):\n    return sum(items)\n",
    'def total(items):\n    """Sum the items."""\n    return sum(i.price for i in items)\n',
)


async def _absent(path: str) -> bytes | None:
    return None


@dataclass
class Board:
    signals: ReviewSignals
    scored: dict[str, ScoredPersona]
    seated: SeatedBoard

    @property
    def ids(self) -> list[str]:
        return self.seated.selection.ids

    @property
    def why(self) -> str:
        return next(n for n in self.seated.notes if n.startswith("Why this board: "))


async def board(
    diff: str,
    *,
    title: str = "Update",
    body: str = "",
    commits: Sequence[str] = (),
    topic: str = DEFAULT_TOPIC,
    pinned: Sequence[str] = (),
    add: Sequence[str] = (),
) -> Board:
    meta = PullRequestMeta(title=title, body=body, commit_messages=list(commits))
    built = await build_context(meta, diff, [], _absent)
    _, signals, _ = council_inputs(built, topic)
    scored = score_catalog(CATALOG, signals)
    seated = seat_board(
        scored,
        size=5,
        min_size=3,
        pinned=pinned,
        add=add,
        languages=signals.languages,
        signals=signals,
    )
    return Board(signals, {s.id: s for s in scored}, seated)


# --- the kinds a persona may require ------------------------------------------------------


def test_the_council_knows_every_kind_the_context_builder_names() -> None:
    assert FILE_KINDS == ARTIFACT_KINDS


def test_the_file_kind_personas_declare_their_evidence() -> None:
    required = {p.id: set(p.requires_files) for p in CATALOG.personas.values()}
    assert required["migration-safety"] == {"migration", "schema", "orm-model", "sql"}
    assert required["database-engineer"] >= {"migration", "sql", "database-query"}
    assert {"component", "stylesheet", "template"} <= required["frontend-engineer"]
    assert required["accessibility-reviewer"] == {"component", "stylesheet", "template"}
    assert {"package-manifest", "lockfile"} <= required["supply-chain-guardian"]
    assert {"dockerfile", "workflow", "kubernetes-manifest", "terraform"} <= required[
        "platform-engineer"
    ]
    assert {"markdown", "readme", "changelog", "docs"} <= required["docs-reviewer"]
    # The personas with something to say on any change require nothing.
    for free in ("correctness-reviewer", "appsec-reviewer", "concurrency-analyst"):
        assert required[free] == set()


# --- the gate -----------------------------------------------------------------------------

MIGRATION_TITLE = "Add a migration for the users table"
MIGRATION_COMMITS = ["migration: backfill the ages\n\nschema change follows"]


async def test_the_migration_seat_does_not_sit_on_words_alone() -> None:
    found = await board(PYTHON_CHANGE, title=MIGRATION_TITLE, commits=MIGRATION_COMMITS)
    assert "migration-safety" not in found.ids
    gated = found.scored["migration-safety"]
    assert gated.total == 0
    assert gated.missing_evidence == "no migration, schema, ORM model or SQL file changed"
    explained = "\n".join(explain(list(found.scored.values()), details=True))
    assert "not eligible: no migration, schema, ORM model or SQL file changed" in explained


async def test_the_migration_seat_sits_when_a_migration_changed() -> None:
    migration = diff_of(
        "app/migrations/0002_user_age.py",
        "",
        "from django.db import migrations, models\n\n\n"
        "class Migration(migrations.Migration):\n"
        "    operations = [migrations.AddField('user', 'age', models.IntegerField(null=True))]\n",
    )
    found = await board(migration, title=MIGRATION_TITLE, commits=MIGRATION_COMMITS)
    assert "migration-safety" in found.ids
    assert found.scored["migration-safety"].missing_evidence is None
    assert "migration-safety (app/migrations/0002_user_age.py changed)" in found.why


async def test_a_models_directory_of_machine_learning_code_is_not_a_schema() -> None:
    model = diff_of(
        "model/models/llama/model.py",
        "def forward(x):\n    return x\n",
        "import torch\n\n\ndef forward(x):\n    return torch.relu(x)\n",
    )
    found = await board(model, title="Improve the llama model")
    assert "orm-model" not in found.signals.artifact_types
    assert "migration-safety" not in found.ids and "database-engineer" not in found.ids


async def test_the_frontend_seats_need_a_frontend_file() -> None:
    title, body = "ui: fix the button label and its css", "The browser shows it."
    found = await board(PYTHON_CHANGE, title=title, body=body)
    for persona in ("frontend-engineer", "accessibility-reviewer"):
        assert persona not in found.ids
        assert found.scored[persona].missing_evidence is not None
    component = diff_of(
        "web/src/components/Button.tsx",
        "export const Button = () => <button>Save</button>;\n",
        'export const Button = () => <button aria-label="Save">Save</button>;\n',
    )
    found = await board(component, title=title, body=body)
    assert "frontend-engineer" in found.ids
    assert found.scored["accessibility-reviewer"].missing_evidence is None
    assert "frontend-engineer (web/src/components/Button.tsx changed)" in found.why


async def test_the_platform_seat_needs_a_pipeline_container_or_deployment_file() -> None:
    settings = diff_of("app/settings.py", 'REGION = "eu"\n', 'REGION = "us"\n')
    found = await board(settings, title="deploy: move the containers to the new region")
    assert "platform-engineer" not in found.ids
    assert found.scored["platform-engineer"].missing_evidence is not None
    docker = diff_of("Dockerfile", "FROM python:3.11\n", "FROM python:3.12-slim\n")
    found = await board(docker, title="deploy: move the containers to the new region")
    assert "platform-engineer" in found.ids
    assert "platform-engineer (Dockerfile changed)" in found.why


async def test_a_docstring_does_not_seat_the_docs_reviewer_a_readme_does() -> None:
    found = await board(PYTHON_CHANGE, title="docs: explain the total")
    assert "docs-reviewer" not in found.ids
    assert found.scored["docs-reviewer"].missing_evidence is not None
    readme = diff_of("README.md", "# Billing\n", "# Billing\n\nRun `make total`.\n")
    found = await board(readme, title="docs: explain the total")
    assert "docs-reviewer" in found.ids
    assert "docs-reviewer (README.md changed)" in found.why


async def test_a_pin_or_an_add_still_sits_and_the_note_says_its_evidence_is_absent() -> None:
    found = await board(PYTHON_CHANGE, pinned=["migration-safety"], add=["docs-reviewer"])
    assert found.ids[:2] == ["migration-safety", "docs-reviewer"]
    assert (
        "migration-safety is pinned by the configuration (its evidence is absent: no "
        "migration, schema, ORM model or SQL file changed)"
    ) in found.why
    assert "docs-reviewer was added for this run (its evidence is absent: no " in found.why


# --- the PR's own words ------------------------------------------------------------------


async def test_the_title_description_and_commit_subjects_reach_the_signals() -> None:
    found = await board(
        PYTHON_CHANGE,
        title="fix: off-by-one in the totals",
        body=(
            "<!-- Describe your change -->\n### Type of change\n"
            "- [ ] Security fix\n- [x] Performance improvement\nCloses #12"
        ),
        commits=["perf(billing): batch the lookups\n\nthe auth module is untouched", "tidy up"],
    )
    said = {(t.intent, t.word, t.source) for t in found.signals.intent}
    assert ("bug-fix", "fix", "title") in said
    assert ("performance", "performance", "description") in said
    assert ("performance", "perf", "commit") in said
    # An unchecked template box, a comment and a commit's body are not the PR's intent.
    assert not {i for i, _, _ in said} & {"security"}
    assert "performance-engineer" in found.ids
    assert "performance-engineer: the title says" not in found.why  # the title says "fix"
    assert "performance-engineer: a commit subject says 'perf'" in found.why
    assert "correctness-reviewer owns correctness: the title says 'fix'" in found.why


async def test_a_cve_in_a_commit_subject_seats_security() -> None:
    plain = await board(PYTHON_CHANGE, title="Update billing")
    assert "appsec-reviewer" not in plain.ids
    found = await board(
        PYTHON_CHANGE, title="Update billing", commits=["Harden totals (CVE-2024-3094)"]
    )
    assert "appsec-reviewer" in found.ids
    assert "appsec-reviewer: a commit subject says 'cve-2024-3094'" in found.why


async def test_the_default_question_says_nothing_a_question_asked_does() -> None:
    found = await board(PYTHON_CHANGE)
    # "...should it merge?": no keyword, no "decision" concept from the council's own words.
    assert found.signals.keywords == ()
    assert found.scored["devils-advocate"].semantic == 0
    asked = await board(PYTHON_CHANGE, topic="Should this cache live in Redis instead?")
    assert "cache" in asked.signals.keywords
    assert asked.scored["devils-advocate"].semantic > 0


async def test_an_access_check_beside_the_change_is_security_evidence() -> None:
    before = (
        "def remove(doc_ids, tenant_id):\n"
        "    for doc_id in doc_ids:\n"
        "        doc = get(doc_id)\n"
        "        if doc.tenant_id != tenant_id:\n"
        "            raise Forbidden()\n"
        "        delete(doc)\n"
    )
    after = before.replace("        doc = get(doc_id)\n", "        doc = cache[doc_id]\n")
    found = await board(diff_of("api/docs.py", before, after), title="perf: cache the lookups")
    assert "appsec-reviewer" in found.ids
    assert (
        "appsec-reviewer: it sits beside an access check (if doc.tenant_id != tenant_id:) "
        "in api/docs.py:4"
    ) in found.why


# --- concurrency -------------------------------------------------------------------------

TRIO = (
    "graphrag/utils.py",
    "async def drop(edges):\n    async with trio.open_nursery() as nursery:\n"
    "        for edge in edges:\n            nursery.start_soon(delete, edge)\n",
    "async def drop(edges):\n    async with trio.open_nursery() as nursery:\n"
    "        for edge in edges:\n"
    "            nursery.start_soon(trio.to_thread.run_sync, delete, edge)\n",
    "it uses trio (nursery.start_soon) in graphrag/utils.py:4",
)
ASYNCIO = (
    "app/fetch.py",
    "async def fetch_all(urls):\n    return [await fetch(u) for u in urls]\n",
    "async def fetch_all(urls):\n    return await asyncio.gather(*(fetch(u) for u in urls))\n",
    "it uses asyncio.gather in app/fetch.py:2",
)
GO = (
    "server/pull.go",
    "func pull(ids []string) {\n\tfor _, id := range ids {\n\t\tfetch(id)\n\t}\n}\n",
    "func pull(ids []string) {\n\tdone := make(chan error)\n\tfor _, id := range ids {\n"
    "\t\tgo func(id string) { done <- fetch(id) }(id)\n\t}\n}\n",
    "it uses goroutines (go func) in server/pull.go:4",
)


@pytest.mark.parametrize(("path", "before", "after", "cited"), [TRIO, ASYNCIO, GO])
async def test_concurrency_constructs_call_the_concurrency_seat(
    path: str, before: str, after: str, cited: str
) -> None:
    found = await board(diff_of(path, before, after), title="Speed up the deletes")
    assert "concurrency-analyst" in found.ids
    assert found.scored["concurrency-analyst"].total >= 7  # seated by evidence, not filler
    assert f"concurrency signals seated concurrency-analyst: {cited}" in found.why


async def test_async_code_without_a_concurrency_construct_does_not_call_it() -> None:
    plain = diff_of(
        "app/fetch.py",
        "async def fetch_one(url):\n    return await get(url)\n",
        "async def fetch_one(url):\n    return (await get(url)).strip()\n",
    )
    found = await board(plain, title="Strip the body")
    assert not [e for e in found.signals.evidence if e.concept == "concurrency"]
    assert found.scored["concurrency-analyst"].semantic == 0


# --- strategies --------------------------------------------------------------------------


async def test_a_default_review_of_a_fix_is_a_bug_fix_not_architecture() -> None:
    found = await board(PYTHON_CHANGE, title="fix: totals ignored the price")
    decided = classify(found.signals, DEFAULT_TOPIC)
    assert isinstance(decided, Classification)
    assert decided.task_type == "bug-fix"
    assert "title: fix" in decided.evidence
    assert not any("designed" in e or "architecture" in e for e in decided.evidence)


async def test_a_default_review_without_words_is_left_to_the_call_not_architecture() -> None:
    found = await board(PYTHON_CHANGE, title="Update billing")
    decided = classify(found.signals, DEFAULT_TOPIC)
    assert not isinstance(decided, Classification)  # nothing says: one cheap call decides
    candidates, evidence = decided
    assert evidence == [] and candidates[0] != "architecture"


async def test_a_question_asked_still_reads_its_words() -> None:
    topic = "Is this design right?"
    found = await board(PYTHON_CHANGE, title="Update billing", topic=topic)
    decided = classify(found.signals, topic)
    assert isinstance(decided, Classification)
    assert decided.task_type == "architecture"


# --- a local checkout's commit subjects ---------------------------------------------------


def test_a_local_branch_passes_its_commit_subjects(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "feature")
    for n, subject in enumerate(["perf: cache the totals", "fix: a typo in the cache key"]):
        (repo / "a.py").write_text(f"x = {n + 2}\n")
        git(repo, "commit", "-q", "-am", f"{subject}\n\nbody {n}")
    change = read_branch("main", repo)
    assert change.subjects == ("fix: a typo in the cache key", "perf: cache the totals")
    meta = change_meta(change)
    assert meta.title == "fix: a typo in the cache key"
    assert meta.commit_messages == list(change.subjects)


def test_a_diff_files_name_is_not_the_authors_intent(tmp_path: Path) -> None:
    """`council review --diff fix-auth-perf.diff`: the title is the reviewer's own label
    ("Diff from ..."), shown but never read as intent; a branch's subject is."""
    from bot.context.intent import intent_words
    from bot.review.local import read_diff_file

    named = tmp_path / "fix-auth-perf.diff"
    named.write_text(diff_of("app/x.py", "a = 1\n", "a = 2\n"))
    change = read_diff_file(str(named))
    meta = change_meta(change)
    assert meta.title == f"Diff from {named}" and not meta.title_authored
    assert intent_words(meta) == []
    authored = PullRequestMeta(title="fix: auth check is too slow")
    assert {w.intent for w in intent_words(authored)} >= {"bug-fix", "security", "performance"}
