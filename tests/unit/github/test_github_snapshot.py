"""A commit's files in a bounded number of requests (`bot.github.snapshot`), against the
fake GitHub over real sockets: tree, blobs, the tarball through its codeload redirect, the
Redis blob cache; and what happens when each of them fails."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from bot.forge.cache import MemoryBlobCache
from bot.github.client import RepoClient
from bot.github.snapshot import RedisBlobCache, Snapshot, blob_sha
from tests.support.github_app import github_app
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub, install_app

HEAD = "5eed" * 10
FILES: dict[str, str | bytes] = {f"pkg/m{i}.py": f"VALUE_{i} = {i}\n" for i in range(40)}
FILES["big.bin"] = b"\0" * 2000
LIMIT = 1000  # max_file_bytes in these tests: big.bin is over it


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.reset()
    install_app(fake_github)
    fake_github.add_repo(REPO, installation_id=INSTALLATION_ID, files=FILES)
    fake_github.set_files(REPO, HEAD, FILES)
    return fake_github


@pytest.fixture
async def client(fake: FakeGitHub) -> AsyncIterator[RepoClient]:
    async with github_app(fake) as app, app.for_installation(INSTALLATION_ID, REPO) as repo:
        await repo.rest.repos.async_get(repo.owner, repo.name)  # the token, minted now
        fake.calls.clear()
        yield repo


def content_calls(fake: FakeGitHub) -> dict[str, int]:
    kinds = {"/git/trees/": "tree", "/git/blobs/": "blob", "/tarball/": "tarball"}
    kinds |= {"/codeload/": "codeload", "/contents/": "contents"}
    counts: dict[str, int] = {}
    for call in fake.calls:
        kind = next((k for part, k in kinds.items() if part in call.path), "other")
        counts[kind] = counts.get(kind, 0) + 1
    return counts


async def read_all(snap: Snapshot, count: int = 40) -> dict[str, bytes | None]:
    return {p: await snap.read(p) for p in [f"pkg/m{i}.py" for i in range(count)]}


async def open_head(client: RepoClient, cache: object, **kwargs: object) -> Snapshot:
    return await Snapshot.open(
        client,
        HEAD,
        cache,  # type: ignore[arg-type]
        max_file_bytes=LIMIT,
        archive_max_bytes=int(kwargs.pop("archive_max_bytes", 10_000_000)),  # type: ignore[call-overload]
        **kwargs,  # type: ignore[arg-type]
    )


async def test_forty_files_cost_a_tree_three_blobs_and_one_archive(
    client: RepoClient, fake: FakeGitHub
) -> None:
    async with await open_head(client, MemoryBlobCache()) as snap:
        found = await read_all(snap)
        assert await snap.read("big.bin") is None  # over max_file_bytes: not even read
        assert await snap.read("absent.py") is None  # not in the tree: no request
    assert found == {p: str(FILES[p]).encode() for p in found}
    assert content_calls(fake) == {"tree": 1, "blob": 3, "tarball": 1, "codeload": 1}


async def test_the_redis_cache_serves_a_second_review_without_a_request(
    client: RepoClient, fake: FakeGitHub
) -> None:
    redis = Redis.from_url("redis://127.0.0.1:6379/0")
    prefix = f"test:blobs:{uuid.uuid4().hex}"
    try:
        cache = RedisBlobCache(redis, prefix, max_bytes=1_000_000, ttl_s=60)
        async with await open_head(client, cache) as snap:
            first = await read_all(snap)
        fake.calls.clear()
        client.trees.clear()  # a new job's client has read no tree yet
        async with await open_head(client, cache) as snap:
            second = await read_all(snap)
        assert second == first
        assert content_calls(fake) == {"tree": 1}
    finally:
        keys = [k async for k in redis.scan_iter(match=f"{prefix}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()


async def test_the_redis_cache_stays_under_its_size() -> None:
    redis = Redis.from_url("redis://127.0.0.1:6379/0")
    prefix = f"test:blobs:{uuid.uuid4().hex}"
    try:
        cache = RedisBlobCache(redis, prefix, max_bytes=4_000, ttl_s=60)
        blobs = [os.urandom(640) for _ in range(30)]  # random: zlib cannot shrink them
        for data in blobs:
            await cache.put(blob_sha(data), data)
        total = int(await redis.get(f"{prefix}:blobs:bytes") or 0)
        assert 0 < total <= 4_000
        assert await cache.get(blob_sha(blobs[-1])) == blobs[-1]  # the newest stays
        assert await cache.get(blob_sha(blobs[0])) is None  # the oldest went
    finally:
        keys = [k async for k in redis.scan_iter(match=f"{prefix}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()


async def test_a_corrupt_archive_falls_back_to_blobs(client: RepoClient, fake: FakeGitHub) -> None:
    fake.archive_override = b"\x1f\x8b\x08\x00 this is not a tarball"
    async with await open_head(client, MemoryBlobCache()) as snap:
        found = await read_all(snap)
    assert found == {p: str(FILES[p]).encode() for p in found}
    calls = content_calls(fake)
    assert calls["tarball"] == 1 and calls["blob"] == 40


async def test_an_archive_over_the_limit_is_abandoned(client: RepoClient, fake: FakeGitHub) -> None:
    async with await open_head(client, MemoryBlobCache(), archive_max_bytes=100) as snap:
        found = await read_all(snap, 6)
    assert found == {p: str(FILES[p]).encode() for p in found}
    assert content_calls(fake)["blob"] == 6


async def test_a_missing_blob_is_read_through_contents(
    client: RepoClient, fake: FakeGitHub
) -> None:
    async with await open_head(client, MemoryBlobCache(), blob_reads=5) as snap:
        fake.fail("GET", r".*/git/blobs/.*", status=404, times=1)
        assert await snap.read("pkg/m1.py") == b"VALUE_1 = 1\n"
    assert content_calls(fake) == {"tree": 1, "blob": 1, "contents": 1}


async def test_a_truncated_tree_reads_what_it_does_not_list(
    client: RepoClient, fake: FakeGitHub
) -> None:
    fake.tree_limit = 10
    async with await open_head(client, MemoryBlobCache()) as snap:
        assert snap.truncated
        found = await read_all(snap)
    assert found == {p: str(FILES[p]).encode() for p in found}
    assert content_calls(fake)["contents"] >= 25  # the paths the tree did not list
