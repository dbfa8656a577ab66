"""New, removed and upgraded dependencies, read from the diff of a manifest.

Only the changed lines are seen (plus the hunk's context for pom.xml), so each format is
read line by line: a removed line gives the old version, an added line the new one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

from bot.context.classify import is_requirements
from bot.context.diff import Hunk
from bot.context.models import DependencyChange

_PEP508 = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*"
    r"((?:===?|>=|<=|~=|!=|>|<)\s*[^;#\s,\"']+(?:\s*,\s*(?:===?|>=|<=|~=|!=|>|<)\s*[^;#\s,\"']+)*)?"
)
_QUOTED_PEP508 = re.compile(r"""^\s*["']([A-Za-z0-9][^"']*)["']\s*,?\s*(?:#.*)?$""")
_TOML_KEY = re.compile(
    r"""^\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)["']?\s*=\s*"""
    r"""(?:["']([^"']+)["']|\{[^}]*\bversion\s*=\s*["']([^"']+)["'])"""
)
_JSON_PAIR = re.compile(r"""^\s*"([^"]+)"\s*:\s*"([^"]*)"\s*,?\s*$""")
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([A-Za-z0-9][\w.~/-]*\.[\w.~/-]+)\s+(v\d[^\s]*)")
_GEM = re.compile(r"""^\s*gem\s+["']([^"']+)["'](?:\s*,\s*["']([^"']+)["'])?""")
_XML_TAG = re.compile(r"<(groupId|artifactId|version)>\s*([^<\s]+)\s*</\1>")
_VERSIONISH = re.compile(r"^(?:[\^~<>=!*]|\d|v\d|latest$|workspace:|npm:|file:|git|https?:)")
# Keys that look like `name = "version"` but are the project's own metadata.
_NOT_DEPENDENCIES = frozenset(
    {"name", "version", "description", "license", "edition", "authors", "readme", "homepage",
     "repository", "documentation", "python", "requires-python", "rust-version", "resolver",
     "main", "module", "types", "type", "private", "node", "npm", "packagemanager",
     "target-version", "line-length", "build-backend", "author", "keywords", "workspaces"}
)  # fmt: skip

Pairs = Iterable[tuple[str, str | None]]


def dependency_changes(path: str, hunks: list[Hunk]) -> list[DependencyChange]:
    """What a manifest's diff adds, removes or re-versions; [] for other files."""
    reader = _reader_for(path)
    if reader is None:
        return []
    if reader is _pom_marker:
        old, new = _pom(hunks)
    else:
        old = dict(_read_lines(reader, hunks, "-"))
        new = dict(_read_lines(reader, hunks, "+"))
    changes = []
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name, _ABSENT), new.get(name, _ABSENT)
        if before == after:
            continue  # a line moved or was reformatted
        changes.append(
            DependencyChange(
                manifest=path,
                name=name,
                old=None if before is _ABSENT else (before or "*"),
                new=None if after is _ABSENT else (after or "*"),
            )
        )
    return changes


_ABSENT = "\0absent"


def reads_dependencies(path: str) -> bool:
    """Whether `dependency_changes` reads this file's diff (a manifest it knows)."""
    return _reader_for(path) is not None


def _reader_for(path: str) -> Callable[[str], Pairs] | None:
    name = PurePosixPath(path).name.lower()
    if is_requirements(path):
        return _requirement
    return {
        "pyproject.toml": _pyproject,
        "package.json": _package_json,
        "go.mod": _go_mod,
        "cargo.toml": _cargo,
        "gemfile": _gemfile,
        "pom.xml": _pom_marker,
    }.get(name)


def _read_lines(reader: Callable[[str], Pairs], hunks: list[Hunk], side: str) -> Pairs:
    for hunk in hunks:
        for line in hunk.lines:
            if line.startswith(side):
                yield from reader(line[1:])


def _requirement(line: str) -> Pairs:
    text = line.split("#", 1)[0].strip()
    if not text or text.startswith("-"):
        return
    match = _PEP508.match(text)
    if match:
        yield _python_name(match.group(1)), _spec(match.group(2))


def _pyproject(line: str) -> Pairs:
    quoted = _QUOTED_PEP508.match(line)
    if quoted:
        yield from _requirement(quoted.group(1))
        return
    pair = _TOML_KEY.match(line)
    if pair and pair.group(1).lower() not in _NOT_DEPENDENCIES:
        version = pair.group(2) or pair.group(3)
        if version and _VERSIONISH.match(version):
            yield _python_name(pair.group(1)), version


def _package_json(line: str) -> Pairs:
    pair = _JSON_PAIR.match(line)
    if pair and pair.group(1).lower() not in _NOT_DEPENDENCIES and _VERSIONISH.match(pair.group(2)):
        yield pair.group(1), pair.group(2)


def _go_mod(line: str) -> Pairs:
    if line.lstrip().startswith(("module ", "go ", "toolchain ", "replace ", "exclude ")):
        return
    match = _GO_REQUIRE.match(line)
    if match:
        yield match.group(1), match.group(2)


def _cargo(line: str) -> Pairs:
    pair = _TOML_KEY.match(line)
    if pair and pair.group(1).lower() not in _NOT_DEPENDENCIES:
        version = pair.group(2) or pair.group(3)
        if version and _VERSIONISH.match(version):
            yield pair.group(1), version


def _gemfile(line: str) -> Pairs:
    match = _GEM.match(line)
    if match:
        yield match.group(1), match.group(2)


def _pom_marker(line: str) -> Pairs:
    return iter(())  # pom.xml needs the hunk's context: see `_pom`


def _pom(hunks: list[Hunk]) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """A changed `<version>` belongs to the nearest `<artifactId>` before it in the hunk."""
    old: dict[str, str | None] = {}
    new: dict[str, str | None] = {}
    for hunk in hunks:
        artifact: dict[str, str] = {}  # side -> artifact id (" " lines set both sides)
        for line in hunk.lines:
            side = line[:1]
            for tag, value in _XML_TAG.findall(line):
                sides = ("-", "+") if side == " " else (side,)
                for s in sides:
                    if tag == "artifactId":
                        artifact[s] = value
                        if side != " ":
                            (old if s == "-" else new).setdefault(value, None)
                    elif tag == "version" and side in "+-" and s in artifact:
                        (old if s == "-" else new)[artifact[s]] = value
    return old, new


def _python_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _spec(spec: str | None) -> str | None:
    return re.sub(r"\s+", "", spec) if spec else None
