"""The signals seating by evidence reads (issue 22, item 4): the PR's intent words, what the
added lines do per language, and the kinds of the changed files."""

from __future__ import annotations

import pytest

from bot.context import PullRequestMeta, Signals, build_context
from bot.context.classify import artifact_types, language_of
from bot.context.intent import intent_words
from tests.support.diffs import diff_of


async def signals(diff: str, heads: dict[str, str] | None = None) -> Signals:
    """`heads`: the changed files' texts at head, read as the builder reads them."""
    files = dict(heads or {})

    async def read(path: str) -> bytes | None:
        return files[path].encode() if path in files else None

    built = await build_context(PullRequestMeta(title="t"), diff, list(files), read)
    return built.signals


def said(meta: PullRequestMeta) -> list[tuple[str, str, str]]:
    return [(w.intent, w.word, w.source) for w in intent_words(meta)]


# --- intent ------------------------------------------------------------------------------


def test_conventional_prefixes_and_scopes_are_intent() -> None:
    found = said(
        PullRequestMeta(
            title="fix(auth): reject expired tokens",
            commit_messages=["chore(deps): bump requests", "perf: skip the second pass"],
        )
    )
    assert found[:2] == [("bug-fix", "fix", "title"), ("security", "auth", "title")]
    assert ("dependencies", "deps", "commit") in found
    assert ("dependencies", "bump", "commit") in found
    assert ("performance", "perf", "commit") in found


def test_a_cve_is_security_wherever_it_is() -> None:
    found = said(PullRequestMeta(title="Update parser", body="Addresses CVE-2024-3094."))
    assert found == [("security", "cve-2024-3094", "description")]


def test_a_description_is_read_without_its_template_and_code() -> None:
    body = (
        "<!-- Thanks for the fix! Tell us about security. -->\n"
        "### Bug fix or feature?\n"
        "- [ ] Bug fix\n- [x] Performance improvement\n"
        "> a quoted crash report\n"
        "```\nTraceback: security error\n```\n"
        "Fixes #1234\n"
        "The cache is slow to warm."
    )
    found = said(PullRequestMeta(title="Warm the cache", body=body))
    assert found == [
        ("performance", "performance", "description"),
        ("performance", "slow", "description"),
    ]


def test_identifiers_are_code_not_intent() -> None:
    assert said(PullRequestMeta(title="Rename doc_id and test_auth in get_fix_list")) == []


def test_commits_are_read_by_their_subject() -> None:
    found = said(
        PullRequestMeta(title="Update", commit_messages=["Update totals\n\nfixes a crash"])
    )
    assert found == []


# --- what the added lines do ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "after", "what"),
    [
        ("a/jobs.py", "async with anyio.create_task_group() as tg:\n", "uses anyio."),
        ("a/jobs.py", "pool = ThreadPoolExecutor(4)\n", "uses threads (threadpoolexecutor)"),
        ("a/Cache.java", "synchronized (lock) {\n", "uses java concurrency (synchronized)"),
        (
            "a/cache.rs",
            "tokio::spawn(async move { run().await });\n",
            "uses rust concurrency (tokio::spawn)",
        ),
        ("a/load.ts", "await Promise.all(urls.map(get));\n", "uses promises (promise.all)"),
        ("a/pool.go", "\tvar mu sync.Mutex\n", "uses sync.mutex"),
    ],
)
async def test_concurrency_constructs_per_language(path: str, after: str, what: str) -> None:
    found = await signals(diff_of(path, "", after))
    (evidence,) = [e for e in found.evidence if e.concept == "concurrency"]
    assert evidence.what.startswith(what) and evidence.path == path and evidence.line == 1
    assert "concurrency" in found.areas


@pytest.mark.parametrize(
    ("path", "after"),
    [
        ("a/db.py", "with DB.atomic():\n"),  # a database transaction, not an atomic
        ("a/page.ts", "const done = items.filter(i => i.done);\n"),
        ("a/x.py", "async def get(url):\n    return await fetch(url)\n"),
        ("a/arrow.py", "x = a <- b\n"),  # `<-` is a channel only in Go
        # A word in a data table, a docstring or a comment starts nothing.
        ("a/words.py", 'SYNONYMS = ("threading", "asyncio.gather", "lock()")\n'),
        ("a/x.py", "x = 1  # run it in threading later\n"),
        ("a/x.go", '\tmsg := "go func() { done <- 1 }"  // not a goroutine\n'),
    ],
)
async def test_no_concurrency_where_there_is_none(path: str, after: str) -> None:
    found = await signals(diff_of(path, "", after))
    assert not [e for e in found.evidence if e.concept == "concurrency"]


async def test_a_tenant_passed_along_is_not_an_access_check() -> None:
    passed = await signals(diff_of("a/x.py", "", "delete(index_name(tenant_id), kb_id)\n"))
    assert not [e for e in passed.evidence if e.concept == "security"]
    checked = await signals(diff_of("a/x.py", "", "if doc.tenant_id != tenant_id:\n"))
    (evidence,) = [e for e in checked.evidence if e.concept == "security"]
    assert evidence.line == 1 and "security" in checked.areas


async def test_a_removed_access_check_is_security_evidence_but_not_an_area() -> None:
    before = "def rm(doc, user):\n    if not user.has_perm('delete'):\n        raise Denied\n"
    before += "    doc.delete()\n"
    after = "def rm(doc, user):\n    doc.delete()\n"
    found = await signals(diff_of("a/views.py", before, after))
    (evidence,) = [e for e in found.evidence if e.concept == "security"]
    assert evidence.what.startswith("removes an access check (if not user.has_perm(")
    assert "security" not in found.areas


# --- kinds of file ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind", "present"),
    [
        ("db/migrations/0003_add_age.py", "migration", True),
        ("docs/migration-guide.md", "migration", False),  # a guide is not a migration
        ("src/utils/migration_helper.ts", "migration", False),
        ("prisma/schema.prisma", "schema", True),
        ("web/src/hooks/use-fetch.ts", "frontend-script", True),
        ("web/src/App.tsx", "component", True),
        ("static/site.css", "stylesheet", True),
        ("app/templates/index.html", "template", True),
        ("template/template.go", "template", False),  # a Go package named template
        ("docker/entrypoint.sh", "container", True),
        ("infra/Store.java", "deploy-manifest", False),  # code in a directory named infra
        ("deploy/values.yaml", "deploy-manifest", True),
        (".github/actions/setup/action.yml", "workflow", True),
        ("Makefile", "build", True),
        ("src/core/task/history.ts", "changelog", False),
        ("HISTORY.md", "changelog", True),
        ("docs/index.mdx", "docs", True),
    ],
)
def test_kinds_of_file(path: str, kind: str, present: bool) -> None:
    found = artifact_types(path, language_of(path), is_test=False)
    assert (kind in found) == present, found


async def test_an_orm_model_and_database_queries_are_read_from_the_code() -> None:
    model = diff_of(
        "app/models.py",
        "",
        "from sqlalchemy import Column, Integer\n\n\n"
        "class User(Base):\n    age = Column(Integer)\n",
    )
    found = await signals(model)
    assert {"orm-model", "database-query"} <= set(found.artifact_types)
    assert found.artifact_paths["orm-model"] == "app/models.py"
    path = "api/db/services/common_service.py"
    head = (
        "from peewee import fn\n\n\ndef delete_by_ids(pids):\n"
        "    return Model.delete().where(Model.id.in_(pids)).execute()\n"
    )
    # The database import is an unchanged line: read from the head.
    found = await signals(diff_of(path, "from peewee import fn\n", head), {path: head})
    assert "database-query" in found.artifact_types and "orm-model" not in found.artifact_types
    no_database = diff_of("app/page.py", "", "def f(xs):\n    return xs.filter(ok)\n")
    assert "database-query" not in (await signals(no_database)).artifact_types
