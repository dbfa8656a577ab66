"""Repository paths as strings: `a/b/c.py` -> name `c.py`, parent `a/b`, stem `c`, suffix
`.py`. PurePosixPath gives the same answers for repository paths (relative, `/`-separated,
no `.` or `..`), at several times the cost; related-file discovery runs these over every
path of the repository."""

from __future__ import annotations


def name(path: str) -> str:
    return path.rpartition("/")[2]


def parent(path: str) -> str:
    """The directory ("" at the root, where PurePosixPath says ".")."""
    return path.rpartition("/")[0]


def suffix(path: str) -> str:
    base = name(path)
    dot = base.rfind(".")
    return base[dot:] if 0 < dot < len(base) - 1 else ""


def stem(path: str) -> str:
    base = name(path)
    tail = suffix(base)
    return base[: -len(tail)] if tail else base


def parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]
