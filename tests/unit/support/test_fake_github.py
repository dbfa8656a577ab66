"""The fake GitHub API, driven through githubkit over a real port.

Every answer is parsed into githubkit's own response models (generated from GitHub's API
description), so a wrong shape fails here before it can fool a test of the App.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from githubkit.exception import RequestFailed
from githubkit.rest.paginator import Paginator
from githubkit_schemas.latest.models import (
    Commit,
    ContentDirectoryItems,
    ContentFile,
    DiffEntry,
    IssueComment,
    Label,
)
from githubkit_schemas.latest.types import (
    ReposOwnerRepoCheckRunsCheckRunIdPatchBodyPropOutputPropAnnotationsItemsType as Annotation,
)

from tests.support.github_server import (
    APP_ID,
    INSTALLATION_ID,
    REPO,
    SECONDARY_RATE_LIMIT_MESSAGE,
    FakeGitHub,
    app_keypair,
    install_app,
    run_fake_github,
)

OWNER, NAME = REPO.split("/")
HEAD = "c0ffee" * 6 + "abcd"
DIFF = """\
diff --git a/src/app.py b/src/app.py
index 1111111..2222222 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1,3 +1,4 @@
 import os
+import sys
 X = 1
 def main():
diff --git a/docs/new.md b/docs/new.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1 @@
+# New
diff --git a/old.txt b/renamed.txt
similarity index 100%
rename from old.txt
rename to renamed.txt
diff --git a/logo.png b/logo.png
index 4444444..5555555 100644
Binary files a/logo.png and b/logo.png differ
"""
BASE_FILES = {
    "README.md": "# Widgets\n",
    "src/app.py": "import os\nX = 1\ndef main():\n    pass\n",
    "src/util/strings.py": "X = 1\n",
    "old.txt": "old\n",
}
HEAD_FILES = {
    **BASE_FILES,
    "src/app.py": "import os\nimport sys\nX = 1\ndef main():\n    pass\n",
    "docs/new.md": "# New\n",
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGitHub]:
    with run_fake_github() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeGitHub) -> FakeGitHub:
    server.reset()
    install_app(server)
    server.add_repo(REPO, installation_id=INSTALLATION_ID, files=BASE_FILES)
    server.add_pull(
        REPO,
        1,
        title="Add sys",
        body="Imports sys.",
        head_sha=HEAD,
        diff=DIFF,
        files_at_head=HEAD_FILES,
        labels=["architecture"],
        commits=("first", "second"),
    )
    return server


def _app(fake: FakeGitHub) -> GitHub[AppAuthStrategy]:
    private, _ = app_keypair()
    # A cache of its own: githubkit's default one is global, and would keep tokens that a
    # reset fake no longer knows.
    return GitHub(
        AppAuthStrategy(APP_ID, private),
        base_url=fake.url,
        auto_retry=False,
        cache_strategy=MemCacheStrategy(),
    )


@pytest.fixture
async def gh(fake: FakeGitHub) -> AsyncIterator[GitHub[Any]]:
    """An installation client (its token from the fake), retries off: faults show."""
    app = _app(fake)
    installation = app.with_auth(app.auth.as_installation(INSTALLATION_ID))
    async with installation:
        yield installation


async def test_app_routes_take_the_jwt_and_parse(fake: FakeGitHub) -> None:
    app = _app(fake)
    me = (await app.rest.apps.async_get_authenticated()).parsed_data
    assert me is not None and me.slug == fake.app_slug and me.id == APP_ID
    found = (await app.rest.apps.async_get_repo_installation(OWNER, NAME)).parsed_data
    assert found.id == INSTALLATION_ID and found.app_slug == fake.app_slug
    token = (
        await app.rest.apps.async_create_installation_access_token(INSTALLATION_ID)
    ).parsed_data
    assert token.token.startswith("ghs_") and token.expires_at.endswith("Z")
    assert [c.auth for c in fake.calls] == ["app", "app", "app"]


async def test_repository_and_pull_parse(gh: GitHub[Any], fake: FakeGitHub) -> None:
    repo = (await gh.rest.repos.async_get(OWNER, NAME)).parsed_data
    assert repo.full_name == REPO and repo.default_branch == "main"
    pull = (await gh.rest.pulls.async_get(OWNER, NAME, 1)).parsed_data
    assert (pull.number, pull.head.sha, pull.base.ref) == (1, HEAD, "main")
    assert [label.name for label in pull.labels] == ["architecture"]
    assert pull.user.login == "octocat" and pull.changed_files == 4
    diff = await gh.rest.pulls.async_get(
        OWNER, NAME, 1, headers={"Accept": "application/vnd.github.diff"}
    )
    assert diff.text == DIFF
    assert diff.headers["content-type"].startswith("application/vnd.github.diff")
    assert fake.calls[-1].auth == f"installation:{INSTALLATION_ID}"


async def test_pull_files_and_commits_parse(gh: GitHub[Any]) -> None:
    # githubkit's clients have a method named `list`, which shadows the builtin in their
    # return types (mypy sees `list?[...]`); naming the type here restores it.
    files: list[DiffEntry] = (await gh.rest.pulls.async_list_files(OWNER, NAME, 1)).parsed_data
    by_name = {f.filename: f for f in files}
    assert by_name["src/app.py"].status == "modified"
    patch = by_name["src/app.py"].patch
    assert isinstance(patch, str) and patch.startswith("@@ -1,3 +1,4 @@")
    assert by_name["docs/new.md"].status == "added" and by_name["docs/new.md"].additions == 1
    assert by_name["renamed.txt"].previous_filename == "old.txt"
    assert not by_name["logo.png"].patch  # binary: GitHub sends no patch
    commits: list[Commit] = (await gh.rest.pulls.async_list_commits(OWNER, NAME, 1)).parsed_data
    assert [c.commit.message for c in commits] == ["first", "second"]
    assert commits[-1].sha == HEAD and commits[-1].parents[0].sha == commits[0].sha


async def test_contents_file_directory_and_missing(gh: GitHub[Any]) -> None:
    file = (await gh.rest.repos.async_get_content(OWNER, NAME, "src/app.py", ref=HEAD)).parsed_data
    assert isinstance(file, ContentFile) and file.encoding == "base64"
    assert base64.b64decode(file.content).decode() == HEAD_FILES["src/app.py"]
    listing = (await gh.rest.repos.async_get_content(OWNER, NAME, "src")).parsed_data
    assert isinstance(listing, list)
    assert all(isinstance(i, ContentDirectoryItems) for i in listing)
    assert [(i.name, i.type) for i in listing] == [("app.py", "file"), ("util", "dir")]
    with pytest.raises(RequestFailed) as missing:
        await gh.rest.repos.async_get_content(OWNER, NAME, "docs/new.md", ref="main")
    assert missing.value.response.status_code == 404
    assert missing.value.response.json()["message"] == "Not Found"
    raw = await gh.rest.repos.async_get_content(
        OWNER, NAME, "README.md", headers={"Accept": "application/vnd.github.raw"}
    )
    assert raw.content == b"# Widgets\n"


async def test_a_large_file_comes_without_inline_content(gh: GitHub[Any], fake: FakeGitHub) -> None:
    fake.set_files(REPO, "main", {"big.bin": b"\0" * 1_000_001})
    big = (await gh.rest.repos.async_get_content(OWNER, NAME, "big.bin")).parsed_data
    assert isinstance(big, ContentFile)
    assert (big.encoding, big.content, big.size) == ("none", "", 1_000_001)


async def test_tree_recursive_and_truncated(gh: GitHub[Any], fake: FakeGitHub) -> None:
    tree = (await gh.rest.git.async_get_tree(OWNER, NAME, "main", recursive="1")).parsed_data
    blobs = sorted(e.path for e in tree.tree if e.type == "blob")
    assert blobs == sorted(BASE_FILES) and not tree.truncated
    top = (await gh.rest.git.async_get_tree(OWNER, NAME, "main")).parsed_data
    assert sorted(e.path for e in top.tree) == ["README.md", "old.txt", "src"]
    fake.tree_limit = 2
    cut = (await gh.rest.git.async_get_tree(OWNER, NAME, HEAD, recursive="1")).parsed_data
    assert cut.truncated and len(cut.tree) == 2


async def test_compare_parses(gh: GitHub[Any]) -> None:
    compared = (
        await gh.rest.repos.async_compare_commits(OWNER, NAME, f"main...{HEAD}")
    ).parsed_data
    assert compared.status == "ahead" and compared.total_commits == 2
    assert {f.filename for f in compared.files or []} >= {"src/app.py", "docs/new.md"}


async def test_comments_reactions_and_labels(gh: GitHub[Any], fake: FakeGitHub) -> None:
    created = (await gh.rest.issues.async_create_comment(OWNER, NAME, 1, body="hi")).parsed_data
    assert created.user is not None
    assert (created.user.login, created.user.type) == (fake.app_login, "Bot")
    assert created.html_url.endswith(f"#issuecomment-{created.id}")
    updated = (
        await gh.rest.issues.async_update_comment(OWNER, NAME, created.id, body="hi again")
    ).parsed_data
    assert updated.id == created.id and updated.body == "hi again"
    listed: list[IssueComment] = (
        await gh.rest.issues.async_list_comments(OWNER, NAME, 1)
    ).parsed_data
    assert [c.body for c in listed] == ["hi again"]
    reaction = await gh.rest.reactions.async_create_for_issue_comment(
        OWNER, NAME, created.id, content="eyes"
    )
    assert reaction.status_code == 201 and reaction.parsed_data.content == "eyes"
    again = await gh.rest.reactions.async_create_for_issue_comment(
        OWNER, NAME, created.id, content="eyes"
    )
    assert again.status_code == 200  # GitHub answers 200 for a reaction that exists
    assert [r.content for r in fake.reactions(created.id)] == ["eyes"]
    labels: list[Label] = (
        await gh.rest.issues.async_add_labels(OWNER, NAME, 1, labels=["x"])
    ).parsed_data
    assert [label.name for label in labels] == ["architecture", "x"]
    listed_labels: list[Label] = (
        await gh.rest.issues.async_list_labels_on_issue(OWNER, NAME, 1)
    ).parsed_data
    assert [label.name for label in listed_labels] == ["architecture", "x"]


async def test_someone_elses_comment_cannot_be_edited(gh: GitHub[Any], fake: FakeGitHub) -> None:
    theirs = fake.add_comment(REPO, 1, "mine", user="mallory")
    with pytest.raises(RequestFailed) as refused:
        await gh.rest.issues.async_update_comment(OWNER, NAME, theirs, body="taken over")
    assert refused.value.response.status_code == 403
    assert fake.comments(REPO, 1)[0].body == "mine"


async def test_check_run_create_update_and_list(gh: GitHub[Any], fake: FakeGitHub) -> None:
    run = (
        await gh.rest.checks.async_create(
            OWNER,
            NAME,
            name="Council",
            head_sha=HEAD,
            status="in_progress",
            external_id="delib-1",
            output={"title": "Deliberating", "summary": "Phase 1"},
        )
    ).parsed_data
    assert (run.status, run.external_id, run.output.title) == (
        "in_progress",
        "delib-1",
        "Deliberating",
    )
    assert run.app is not None and run.app.id == APP_ID
    done = (
        await gh.rest.checks.async_update(
            OWNER,
            NAME,
            run.id,
            status="completed",
            conclusion="neutral",
            details_url="https://example.com/c",
            output={"title": "Done", "summary": "s", "annotations": [_annotation(1)]},
            actions=[{"label": "Re-convene", "description": "Again", "identifier": "reconvene"}],
        )
    ).parsed_data
    assert (done.status, done.conclusion, done.output.annotations_count) == (
        "completed",
        "neutral",
        1,
    )
    newer = (
        await gh.rest.checks.async_create(OWNER, NAME, name="Council", head_sha=HEAD)
    ).parsed_data
    latest = (
        await gh.rest.checks.async_list_for_ref(OWNER, NAME, HEAD, check_name="Council")
    ).parsed_data
    assert [r.id for r in latest.check_runs] == [newer.id]  # GitHub's default filter: latest
    every = (
        await gh.rest.checks.async_list_for_ref(
            OWNER, NAME, HEAD, check_name="Council", filter_="all"
        )
    ).parsed_data
    assert every.total_count == 2 and {r.id for r in every.check_runs} == {run.id, newer.id}
    state = fake.check_runs(REPO)[0]
    assert (
        state.actions[0]["identifier"] == "reconvene"
        and state.details_url == "https://example.com/c"
    )


async def test_collaborator_permission(gh: GitHub[Any], fake: FakeGitHub) -> None:
    fake.set_permission(REPO, "alice", "write")
    alice = (
        await gh.rest.repos.async_get_collaborator_permission_level(OWNER, NAME, "alice")
    ).parsed_data
    assert alice.permission == "write" and alice.user is not None and alice.user.login == "alice"
    stranger = (
        await gh.rest.repos.async_get_collaborator_permission_level(OWNER, NAME, "bob")
    ).parsed_data
    assert stranger.permission == "read"  # a public repository: anyone reads


async def test_pagination_follows_link_headers(gh: GitHub[Any], fake: FakeGitHub) -> None:
    for n in range(35):
        fake.add_comment(REPO, 1, f"comment {n}", user="someone")
    first = await gh.rest.issues.async_list_comments(OWNER, NAME, 1, per_page=10)
    assert 'rel="next"' in first.headers["link"] and "page=4" in first.headers["link"]
    paginator: Paginator[IssueComment] = gh.rest.paginate(
        gh.rest.issues.async_list_comments, owner=OWNER, repo=NAME, issue_number=1, per_page=10
    )
    everything = [c.body async for c in paginator]
    assert everything == [f"comment {n}" for n in range(35)]
    pages = fake.calls_to("GET", rf"/repos/{REPO}/issues/1/comments")
    assert [c.query.get("page", "1") for c in pages[1:]] == ["1", "2", "3", "4"]


async def test_limits_are_githubs(gh: GitHub[Any], fake: FakeGitHub) -> None:
    with pytest.raises(RequestFailed) as too_long:
        await gh.rest.issues.async_create_comment(OWNER, NAME, 1, body="x" * 65_537)
    body = too_long.value.response.json()
    assert too_long.value.response.status_code == 422 and body["message"] == "Validation Failed"
    assert "maximum is 65536" in body["errors"][0]["message"]
    await gh.rest.issues.async_create_comment(OWNER, NAME, 1, body="x" * 65_536)  # the limit itself
    run = (
        await gh.rest.checks.async_create(OWNER, NAME, name="Council", head_sha=HEAD)
    ).parsed_data
    # githubkit validates these limits itself, so send raw bodies to see GitHub's answers.
    path = f"/repos/{REPO}/check-runs/{run.id}"
    summary = {"output": {"title": "t", "summary": "s" * 65_536}}
    many = {
        "output": {"title": "t", "summary": "s", "annotations": [_annotation(i) for i in range(51)]}
    }
    for payload in (summary, many):
        with pytest.raises(RequestFailed) as refused:
            await gh.arequest("PATCH", path, json=payload)
        assert refused.value.response.status_code == 422
    assert fake.check_runs(REPO)[0].annotations == []


async def test_auth_is_checked(fake: FakeGitHub) -> None:
    async with httpx.AsyncClient(base_url=fake.url) as http:
        anonymous = await http.get(f"/repos/{REPO}/pulls/1")
        assert anonymous.status_code == 401 and anonymous.json()["message"] == "Bad credentials"
        other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        forged = jwt.encode(
            {"iss": str(APP_ID), "iat": 0, "exp": 2**31},
            other_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            algorithm="RS256",
        )
        app_route = await http.get("/app", headers={"Authorization": f"Bearer {forged}"})
        assert app_route.status_code == 401
    fake.add_installation(99, "elsewhere")
    fake.add_repo("elsewhere/secret", installation_id=99, private=True)
    app = _app(fake)
    other = app.with_auth(app.auth.as_installation(INSTALLATION_ID))
    with pytest.raises(RequestFailed) as hidden:
        await other.rest.repos.async_get("elsewhere", "secret")
    assert hidden.value.response.status_code == 404  # not this installation's repository
    fake.expire_tokens()
    with pytest.raises(RequestFailed) as expired:
        await other.rest.repos.async_get(OWNER, NAME)
    assert expired.value.response.status_code == 401


async def test_faults_replace_answers_then_run_out(gh: GitHub[Any], fake: FakeGitHub) -> None:
    fake.rate_limit("POST", rf"/repos/{REPO}/issues/\d+/comments", retry_after=7)
    fake.server_error("GET", rf"/repos/{REPO}/pulls/1", status=503, times=2)
    with pytest.raises(RequestFailed) as limited:
        await gh.rest.issues.async_create_comment(OWNER, NAME, 1, body="hi")
    assert limited.value.response.status_code == 403
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.response.json()["message"] == SECONDARY_RATE_LIMIT_MESSAGE
    for _ in range(2):
        with pytest.raises(RequestFailed):
            await gh.rest.pulls.async_get(OWNER, NAME, 1)
    await gh.rest.pulls.async_get(OWNER, NAME, 1)
    await gh.rest.issues.async_create_comment(OWNER, NAME, 1, body="hi")
    statuses = [
        (c.method, c.status)
        for c in fake.calls
        if c.path != f"/app/installations/{INSTALLATION_ID}/access_tokens"
    ]
    assert statuses == [("POST", 403), ("GET", 503), ("GET", 503), ("GET", 200), ("POST", 201)]
    posted = fake.calls_to("POST", rf"/repos/{REPO}/issues/1/comments")[-1]
    assert posted.json == {"body": "hi"} and posted.time >= fake.calls[0].time


def _annotation(line: int) -> Annotation:
    return {
        "path": "src/app.py",
        "start_line": line + 1,
        "end_line": line + 1,
        "annotation_level": "warning",
        "message": f"finding {line}",
    }
