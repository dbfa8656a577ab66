"""A commit's files for a review, in a bounded number of GitHub requests.

Reading the related files of a pull request one `contents` call at a time cost ~130
requests a review. A `Snapshot` instead makes:

- one recursive git tree of the commit: every path, with its blob SHA and size;
- reads by blob SHA, in this order: the `BlobCache` (Redis, shared by every worker and
  review; a blob's contents never change), the files of an archive of the commit already
  downloaded, a few single blob reads (a follow-up review misses a handful of files), and
  past those, one tarball of the commit (`GET /repos/o/r/tarball/{ref}`, a redirect to
  codeload), streamed to a temporary directory, bounded in bytes, each member checked
  against its tree SHA.

Every failure falls back to the step before it rather than losing a file: a truncated
tree reads the paths it does not list through `contents`, as before; an archive that is
too large, corrupt or unreadable leaves the files it did not yield to blob reads; a blob
GitHub does not find is read through `contents`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import tarfile
import tempfile
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import quote

import structlog
from githubkit.exception import GitHubException
from redis.asyncio import Redis
from redis.exceptions import RedisError

from bot.forge import BlobCache
from bot.forge.errors import ForgeError, ForgeNotFound
from bot.github.client import RepoClient
from bot.github.errors import as_github_error, github_errors
from bot.github.fetch import AGENTS_DIR, CONFIG_PATH, MAX_AGENT_FILES, read_file
from bot.github.fetch import read_agents as fetch_agents
from bot.github.fetch import read_config as fetch_config
from bot.metrics import GITHUB_BLOB_READS

__all__ = [
    "RedisBlobCache",
    "Snapshot",
    "TreeEntry",
    "blob_sha",
    "read_agents",
    "read_blob",
    "read_config",
    "read_tree",
]

log = structlog.get_logger(__name__)

SYMLINK_MODE = "120000"
CHUNK_BYTES = 1 << 16


@dataclass(frozen=True)
class TreeEntry:
    path: str
    sha: str
    size: int | None
    mode: str = "100644"


def blob_sha(data: bytes) -> str:
    """Git's object id of a blob with these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


async def read_tree(client: RepoClient, ref: str) -> tuple[dict[str, TreeEntry], bool]:
    """Every blob at `ref` by path, and whether GitHub truncated the listing (read once
    per client: a job's personas and guidance come from the same tree)."""
    known: tuple[dict[str, TreeEntry], bool] | None = client.trees.get(ref)
    if known is not None:
        return known
    with github_errors("list the tree"):
        response = await client.rest.git.async_get_tree(
            client.owner, client.name, quote(ref, safe=""), recursive="1"
        )
        tree = response.parsed_data
    entries: dict[str, TreeEntry] = {}
    for item in tree.tree:
        if item.type != "blob" or not item.path or not item.sha:
            continue
        size = item.size if isinstance(item.size, int) else None
        entries[item.path] = TreeEntry(item.path, item.sha, size, str(item.mode or "100644"))
    client.trees[ref] = (entries, bool(tree.truncated))
    return entries, bool(tree.truncated)


async def read_config(client: RepoClient, branch: str, cache: BlobCache) -> str | None:
    """`.github/council.yml` on `branch` (as `fetch.read_config`), from the tree and by
    blob SHA: most reviews read it from the cache, and the tree serves the rest of the job."""
    try:
        entries, truncated = await read_tree(client, branch)
    except ForgeError:  # the path on its own, as before the tree
        log.warning("tree_unreadable", ref=branch, exc_info=True)
        return await fetch_config(client, branch)
    entry = entries.get(CONFIG_PATH)
    if entry is None:
        return await fetch_config(client, branch) if truncated else None
    snapshot = Snapshot(
        client, branch, {CONFIG_PATH: entry}, False, cache, max_file_bytes=1_000_000,
        archive_max_bytes=0, blob_reads=1,
    )  # fmt: skip
    data = await snapshot.read(CONFIG_PATH)
    return None if data is None else data.decode("utf-8", errors="replace")


async def read_agents(
    client: RepoClient, branch: str, cache: BlobCache, *, max_file_bytes: int = 512_000
) -> dict[str, str]:
    """`.github/council/agents/*.md` on `branch` (as `fetch.read_agents`), from the tree
    and by blob SHA: no request at all for a repository without personas, and none for
    personas already in the cache."""
    try:
        entries, truncated = await read_tree(client, branch)
    except ForgeError:  # the directory listing, as before the tree
        log.warning("tree_unreadable", ref=branch, exc_info=True)
        return await fetch_agents(client, branch)
    prefix = f"{AGENTS_DIR}/"
    paths = sorted(
        path
        for path in entries
        if path.startswith(prefix)
        and "/" not in path[len(prefix) :]
        and path.endswith(".md")
        and not path[len(prefix) :].startswith(".")
    )[:MAX_AGENT_FILES]
    if truncated and not paths:  # the listing may have stopped short of them
        return await fetch_agents(client, branch)
    snapshot = Snapshot(
        client,
        branch,
        entries,
        truncated,
        cache,
        max_file_bytes=max_file_bytes,
        archive_max_bytes=0,
        blob_reads=len(paths),
    )
    agents: dict[str, str] = {}
    for path in paths:
        data = await snapshot.read(path)
        if data is not None:
            agents[path] = data.decode("utf-8", errors="replace")
    return agents


async def read_blob(client: RepoClient, sha: str) -> bytes | None:
    """A blob's bytes by SHA, or None when GitHub does not have it."""
    try:
        with github_errors("read a blob"):
            response = await client.rest.git.async_get_blob(client.owner, client.name, sha)
            blob = response.parsed_data
    except ForgeNotFound:
        return None
    if blob.encoding == "base64":
        return base64.b64decode(blob.content)
    return blob.content.encode()


# -- the cache -------------------------------------------------------------------------------


class RedisBlobCache:
    """Blobs in Redis (zlib), shared by every worker: each kept `ttl_s`, and the oldest
    evicted once all of them together pass `max_bytes`. Redis failing is a miss, never an
    error: the cache only saves requests."""

    EVICT_BATCH = 32

    def __init__(self, redis: Redis, prefix: str, *, max_bytes: int, ttl_s: int) -> None:
        self.redis = redis
        self.prefix = f"{prefix}:blob"
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self._index = f"{self.prefix}s:index"  # sorted set of "sha:size", by time stored
        self._total = f"{self.prefix}s:bytes"

    def _key(self, sha: str) -> str:
        return f"{self.prefix}:{sha}"

    async def contains(self, sha: str) -> bool:
        if self.max_bytes <= 0:
            return False
        try:
            return bool(await self.redis.exists(self._key(sha)))
        except (RedisError, OSError):
            return False

    async def get(self, sha: str) -> bytes | None:
        if self.max_bytes <= 0:
            return None
        try:
            packed = await self.redis.get(self._key(sha))
            return None if packed is None else zlib.decompress(cast(bytes, packed))
        except (RedisError, OSError, zlib.error) as error:
            log.warning("blob_cache_unavailable", error=type(error).__name__)
            return None

    async def put(self, sha: str, data: bytes) -> None:
        packed = zlib.compress(data, 6)
        if self.max_bytes <= 0 or len(packed) > self.max_bytes:
            return
        try:
            if not await self.redis.set(self._key(sha), packed, ex=self.ttl_s, nx=True):
                return
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zadd(self._index, {f"{sha}:{len(packed)}": time.time()})
                pipe.incrby(self._total, len(packed))
                pipe.expire(self._index, self.ttl_s)
                pipe.expire(self._total, self.ttl_s)
                total = int((await pipe.execute())[1])
            while total > self.max_bytes:
                oldest = await self.redis.zpopmin(self._index, self.EVICT_BATCH)
                if not oldest:
                    await self.redis.delete(self._total)
                    return
                names = [_text(member).rsplit(":", 1) for member, _ in oldest]
                freed = sum(int(size) for _, size in names)
                await self.redis.delete(*(self._key(old) for old, _ in names))
                total = int(await self.redis.decrby(self._total, freed))
        except (RedisError, OSError) as error:
            log.warning("blob_cache_unavailable", error=type(error).__name__)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# -- the snapshot ----------------------------------------------------------------------------


class Snapshot:
    """The files of one commit (or branch), read as cheaply as GitHub allows.

        async with await Snapshot.open(client, sha, cache) as snap:
            data = await snap.read("src/app.py")

    `blob_reads` single blob reads come before the archive is fetched; `also` are other
    snapshots of the same review whose downloaded archives may hold a blob too."""

    def __init__(
        self,
        client: RepoClient,
        ref: str,
        entries: dict[str, TreeEntry],
        truncated: bool,
        cache: BlobCache,
        *,
        max_file_bytes: int,
        archive_max_bytes: int,
        blob_reads: int = 3,
        also: tuple[Snapshot, ...] = (),
    ) -> None:
        self.client = client
        self.ref = ref
        self.entries = entries
        self.truncated = truncated
        self.cache = cache
        self.max_file_bytes = max_file_bytes
        self.archive_max_bytes = archive_max_bytes
        self.also = also
        self._blob_reads = blob_reads
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._archive: asyncio.Task[dict[str, Path]] | None = None
        self._members: dict[str, Path] = {}
        self.unindexed = 0  # files `read_indexed` declined: no archive, not cached
        self._archive_problem = ""  # why there is no archive to read from, once known

    @classmethod
    async def open(
        cls,
        client: RepoClient,
        ref: str,
        cache: BlobCache,
        *,
        max_file_bytes: int,
        archive_max_bytes: int,
        blob_reads: int = 3,
        also: tuple[Snapshot, ...] = (),
    ) -> Snapshot:
        entries, truncated = await read_tree(client, ref)
        return cls(
            client,
            ref,
            entries,
            truncated,
            cache,
            max_file_bytes=max_file_bytes,
            archive_max_bytes=archive_max_bytes,
            blob_reads=blob_reads,
            also=also,
        )

    @property
    def files(self) -> list[str]:
        return sorted(self.entries)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._archive is not None and not self._archive.done():
            self._archive.cancel()
            # Cancelled, or failed (and logged where it failed).
            with contextlib.suppress(BaseException):
                await self._archive
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None
        self._members = {}

    def local(self, sha: str) -> bytes | None:
        """A blob from this snapshot's downloaded archive, if it has one with that SHA."""
        where = self._members.get(sha)
        if where is None:
            return None
        try:
            return where.read_bytes()
        except OSError:
            return None

    async def expect(self, paths: Iterable[str]) -> None:
        """`paths` are about to be read: when more of them are missing from the cache than
        single blob reads allow, the archive comes at the first miss (a first review of a
        30-file change), else blob reads first (a follow-up push of two files)."""
        misses = 0
        for path in dict.fromkeys(paths):
            entry = self.entries.get(path)
            if entry is not None and not await self.cache.contains(entry.sha):
                misses += 1
        if misses > self._blob_reads:
            self._blob_reads = 0

    async def read(self, path: str) -> bytes | None:
        """The file's bytes, or None: not a file there, a symlink, or over `max_file_bytes`
        (which the context would not take anyway)."""
        entry = self.entries.get(path)
        if entry is None:
            if not self.truncated:
                return None
            GITHUB_BLOB_READS.labels("contents").inc()
            return await read_file(self.client, path, self.ref)
        if entry.mode == SYMLINK_MODE or (
            entry.size is not None and entry.size > self.max_file_bytes
        ):
            return None
        data = await self.cache.get(entry.sha)
        if data is not None:
            GITHUB_BLOB_READS.labels("cache").inc()
            return data
        data = await self._fetch(entry)
        if data is not None:
            await self.cache.put(entry.sha, data)
        return data

    async def read_indexed(self, path: str) -> bytes | None:
        """As `read`, for the name index's pass over the whole tree (bot/context/nameindex.py):
        from the cache, an archive, or the single blob reads left before the archive, but
        never one request a file past that. Without an archive (over `archive_max_bytes`, or
        failed), a file not cached is not read: counted in `unindexed`."""
        entry = self.entries.get(path)
        if (
            entry is None
            or entry.mode == SYMLINK_MODE
            or (entry.size is not None and entry.size > self.max_file_bytes)
        ):
            return None
        data = await self.cache.get(entry.sha)
        if data is not None:
            GITHUB_BLOB_READS.labels("cache").inc()
            return data
        data = await self._fetch(entry, one_by_one=False)
        if data is None:
            self.unindexed += 1
        else:
            await self.cache.put(entry.sha, data)
        return data

    def index_note(self) -> str | None:
        """What the name index could not read, for the "Not included" list; None: nothing."""
        if not self.unindexed:
            return None
        why = self._archive_problem or "the archive of the head could not be read"
        return (
            f"{self.unindexed:,} files not searched for the change's names: {why}, and "
            "past the first few no file is read one request at a time (definitions, callers "
            "and tests in them may be missing)"
        )

    async def _fetch(self, entry: TreeEntry, *, one_by_one: bool = True) -> bytes | None:
        for snapshot in (self, *self.also):
            data = snapshot.local(entry.sha)
            if data is not None:
                GITHUB_BLOB_READS.labels("archive").inc()
                return data
        if self._archive is None and self._blob_reads > 0:
            self._blob_reads -= 1
            return await self._blob(entry)
        if self._archive is None:
            self._archive = asyncio.create_task(self._download())
        try:
            await asyncio.shield(self._archive)
        except Exception:
            log.warning("archive_failed", ref=self.ref, exc_info=True)
        data = self.local(entry.sha)
        if data is not None:
            GITHUB_BLOB_READS.labels("archive").inc()
            return data
        if not one_by_one:
            return None
        return await self._blob(entry)  # not in the archive (or no archive): one by one

    async def _blob(self, entry: TreeEntry) -> bytes | None:
        GITHUB_BLOB_READS.labels("blob").inc()
        data = await read_blob(self.client, entry.sha)
        if data is None:  # GitHub should have it: read the path as before
            GITHUB_BLOB_READS.labels("contents").inc()
            data = await read_file(self.client, entry.path, self.ref)
        return data

    # -- the archive -------------------------------------------------------------------------

    async def _download(self) -> dict[str, Path]:
        """The commit's tarball, streamed to disk and unpacked; {} when there is none to
        use (the reads go on one blob at a time)."""
        if self.archive_max_bytes <= 0:
            self._archive_problem = "archives are turned off (COUNCIL_ARCHIVE_MAX_BYTES=0)"
            return {}
        self._workdir = tempfile.TemporaryDirectory(prefix="council-archive-")
        root = Path(self._workdir.name)
        archive = root / "archive.tar.gz"
        try:
            fetched = await self._stream(archive)
        except (ForgeError, OSError) as error:
            log.warning("archive_unavailable", ref=self.ref, error=str(error))
            self._archive_problem = "the archive of the head could not be downloaded"
            return {}
        if not fetched:
            return {}
        members = await asyncio.to_thread(self._unpack, archive, root)
        archive.unlink(missing_ok=True)
        self._members = members
        return members

    async def _stream(self, archive: Path) -> bool:
        c = self.client
        url = f"/repos/{quote(c.owner)}/{quote(c.name)}/tarball/{quote(self.ref, safe='')}"
        try:
            response = await c.github.arequest("GET", url, stream=True)
        except GitHubException as exc:
            error = as_github_error(exc)
            error.action = "download the archive"
            raise error from exc
        raw = response.raw_response
        size = 0
        try:
            with archive.open("wb") as out:
                async for chunk in raw.aiter_bytes(CHUNK_BYTES):
                    size += len(chunk)
                    if size > self.archive_max_bytes:
                        log.warning("archive_too_large", ref=self.ref, limit=self.archive_max_bytes)
                        self._archive_problem = (
                            "the archive of the head is over COUNCIL_ARCHIVE_MAX_BYTES "
                            f"({self.archive_max_bytes:,} bytes)"
                        )
                        return False
                    out.write(chunk)
        except Exception as error:  # a connection lost mid-way: use what the blobs give
            log.warning("archive_unavailable", ref=self.ref, error=type(error).__name__)
            self._archive_problem = "the archive of the head could not be downloaded"
            return False
        finally:
            await raw.aclose()
        return True

    def _unpack(self, archive: Path, root: Path) -> dict[str, Path]:
        """Members that are files of the tree, under `max_file_bytes`, with the tree's SHA
        (anything else is skipped); whatever came before a corrupt part is kept."""
        members: dict[str, Path] = {}
        budget = self.archive_max_bytes * 4  # unpacked bytes; text compresses ~4:1
        try:
            with tarfile.open(archive, "r|gz") as tar:
                for member in tar:
                    if not member.isfile() or member.size > self.max_file_bytes:
                        continue
                    # GitHub's top directory is `{owner}-{repo}-{shortsha}/`.
                    _, sep, path = member.name.partition("/")
                    entry = self.entries.get(path) if sep else None
                    if entry is None or entry.sha in members or member.size > budget:
                        continue
                    handle = tar.extractfile(member)
                    if handle is None:
                        continue
                    data = handle.read(self.max_file_bytes + 1)
                    if blob_sha(data) != entry.sha:  # moved branch, export-subst...
                        continue
                    where = root / entry.sha
                    where.write_bytes(data)
                    members[entry.sha] = where
                    budget -= len(data)
        except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
            log.warning(
                "archive_unreadable", ref=self.ref, error=type(error).__name__, kept=len(members)
            )
        return members
