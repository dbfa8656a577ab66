"""Blobs kept in this process for a review, whichever forge they came from
(`bot.forge.BlobCache`; the App's worker shares its blobs through Redis instead)."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["MemoryBlobCache"]


class MemoryBlobCache:
    """Blobs in this process, oldest dropped past `max_bytes` (`council review --pr`)."""

    def __init__(self, max_bytes: int = 64_000_000) -> None:
        self.max_bytes = max_bytes
        self._blobs: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0

    async def contains(self, sha: str) -> bool:
        return sha in self._blobs

    async def get(self, sha: str) -> bytes | None:
        data = self._blobs.get(sha)
        if data is not None:
            self._blobs.move_to_end(sha)
        return data

    async def put(self, sha: str, data: bytes) -> None:
        if sha in self._blobs or len(data) > self.max_bytes:
            return
        self._blobs[sha] = data
        self._bytes += len(data)
        while self._bytes > self.max_bytes:
            _, dropped = self._blobs.popitem(last=False)
            self._bytes -= len(dropped)
