"""The string path helpers answer as PurePosixPath does for repository paths."""

from __future__ import annotations

from pathlib import PurePosixPath

from hypothesis import given
from hypothesis import strategies as st

from bot.context import paths

_PART = st.text(alphabet="abcXYZ019_-.", min_size=1, max_size=8).filter(
    lambda p: p not in (".", "..")
)


@given(st.lists(_PART, min_size=1, max_size=5))
def test_the_helpers_agree_with_pure_posix_path(parts: list[str]) -> None:
    path = "/".join(parts)
    pure = PurePosixPath(path)
    assert paths.name(path) == pure.name
    assert paths.parent(path) == ("" if str(pure.parent) == "." else str(pure.parent))
    assert paths.suffix(path) == pure.suffix
    assert paths.stem(path) == pure.stem
    assert paths.parts(path) == list(pure.parts)
