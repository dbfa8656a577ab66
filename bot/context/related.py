"""Related material: what the changed code imports, what imports it, its tests, and the
repository's own guidance. Each comes with the reason it is there.

Finding importers means reading other files; reads are bounded (nearest files first), so
a huge repository costs a fixed number of reads, not a scan.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from bot.context.classify import is_test_path, language_of
from bot.context.diff import ParsedFile
from bot.context.imports import (
    JS_EXTENSIONS,
    JS_LANGUAGES,
    go_imports,
    go_package_dir,
    js_imports,
    normalized_path,
    python_imports,
    python_module_index,
    resolve_js,
    resolve_python,
)
from bot.context.models import ReadFile
from bot.context.paths import name as path_name
from bot.context.paths import parent as path_parent
from bot.context.redact import Redactor
from bot.context.resolution import GoModule, go_modules

MAX_FILE_BYTES = 512_000
MAX_IMPORTER_READS = 120
MAX_RELATED = 40
TESTS_PER_FILE = 2
GO_FILES_PER_PACKAGE = 2
READ_CONCURRENCY = 8

RelatedKind = Literal["related", "test", "guidance"]


@dataclass(frozen=True)
class Related:
    path: str
    kind: RelatedKind
    why: str


class FileReader:
    """Reads files at head once each: decoded, redacted; None for absent, binary or huge."""

    def __init__(self, read_file: ReadFile, redactor: Redactor) -> None:
        self._read = read_file
        self._redactor = redactor
        self._cache: dict[str, str | None] = {}
        self._limit = asyncio.Semaphore(READ_CONCURRENCY)
        self.failures: dict[str, str] = {}
        self.too_large: set[str] = set()  # read, and over MAX_FILE_BYTES: not used

    async def text(self, path: str) -> str | None:
        if path not in self._cache:
            self._cache[path] = await self._load(path)
        return self._cache[path]

    def forget(self, paths: Sequence[str]) -> None:
        """Let go of texts read that are not needed any more (read again if asked)."""
        for path in paths:
            self._cache.pop(path, None)

    def forget_all(self) -> None:
        self._cache.clear()

    async def texts(self, paths: Sequence[str]) -> dict[str, str]:
        unique = list(dict.fromkeys(paths))
        found = await asyncio.gather(*(self.text(p) for p in unique))
        return {p: t for p, t in zip(unique, found, strict=True) if t is not None}

    async def peek(self, path: str) -> str | None:
        """The text, neither redacted nor kept: for what is read from it (import names), never
        sent. A failure is listed as for `text`."""
        if path in self._cache:
            return self._cache[path]
        return await self._load(path, redact=False)

    async def _load(self, path: str, *, redact: bool = True) -> str | None:
        async with self._limit:
            try:
                data = await self._read(path)
            except Exception as error:  # any reader failure: list the file, go on
                # The type only: a reader's message may carry a URL or a token.
                self.failures[path] = type(error).__name__
                return None
        if data is not None and len(data) > MAX_FILE_BYTES:
            self.too_large.add(path)
            return None
        if data is None or b"\0" in data[:8192]:
            return None
        text = data.decode("utf-8", "replace").replace("\r\n", "\n")
        return self._redactor.redact(text) if redact else text


async def discover(
    changed: list[ParsedFile],
    heads: dict[str, str],
    repo_files: Sequence[str],
    reader: FileReader,
) -> list[Related]:
    """Related files in rank order of the changed files they belong to: tests, imports,
    importers; each path once, the changed files themselves never."""
    changed_paths = {f.path for f in changed}
    files = [p for p in repo_files if p not in changed_paths]
    file_set = set(repo_files)
    code = [f for f in changed if f.info.change != "deleted" and f.info.excluded is None]
    tests = _tests_by_stem(files)
    go_mods = await _go_modules(repo_files, reader)
    index = python_module_index(list(repo_files))
    scope = _Scope(file_set, index, go_mods)
    importers = await _importers(code, files, scope, reader)
    found: dict[str, Related] = {}
    for parsed in code:
        if not parsed.info.is_test:
            for path in _tests_for(parsed.path, tests):
                found.setdefault(path, Related(path, "test", f"tests {parsed.path}"))
        text = heads.get(parsed.path, "")
        for path in _imported(parsed, text, scope, files):
            if path not in changed_paths:
                found.setdefault(path, Related(path, "related", f"imported by {parsed.path}"))
        for path in importers.get(parsed.path, []):
            kind: RelatedKind = "test" if is_test_path(path) else "related"
            found.setdefault(path, Related(path, kind, f"imports {parsed.path}"))
    return list(found.values())[:MAX_RELATED]


# --- tests by naming convention ------------------------------------------------------

_TEST_AFFIXES = re.compile(
    r"^(?:test_|tests_|Test(?=[A-Z]))|(?:_test|_tests|_spec|\.test|\.spec|Tests?|Spec)$"
)


def subject_stem(path: str) -> str:
    """`tests/test_auth.py`, `auth.test.ts`, `AuthTest.java` -> `auth`."""
    name = path_name(path)
    stem = name.split(".")[0] if not name.startswith(".") else name
    for suffix in (".test", ".spec"):
        if f"{suffix}." in name:
            stem = name[: name.index(suffix)]
    return _TEST_AFFIXES.sub("", stem).lower()


def _tests_by_stem(files: Sequence[str]) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for path in files:
        if is_test_path(path):
            index.setdefault(subject_stem(path), []).append(path)
    return index


def _tests_for(path: str, tests: dict[str, list[str]]) -> list[str]:
    p = PurePosixPath(path)
    stem = (p.parent.name if p.stem == "__init__" else p.stem).lower()
    lang = language_of(path)
    candidates = [t for t in tests.get(stem, []) if language_of(t) == lang or lang is None]
    return sorted(candidates, key=lambda t: (-_closeness(t, path), t))[:TESTS_PER_FILE]


def _closeness(a: str, b: str) -> int:
    """Leading directories two paths share."""
    shared = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if x != y:
            break
        shared += 1
    return shared


def _nearest_first(candidates: list[str], targets: Iterable[str]) -> list[str]:
    """Candidates sorted by the most leading directories shared with any target, then by
    path; linear in the candidates (a prefix set, not every pair)."""
    prefixes: set[tuple[str, ...]] = set()
    for target in targets:
        parts = tuple(target.split("/")[:-1])
        prefixes.update(parts[:k] for k in range(len(parts) + 1))

    def closeness(path: str) -> int:
        parts = tuple(path.split("/")[:-1])
        return next(k for k in range(len(parts), -1, -1) if parts[:k] in prefixes)

    return sorted(candidates, key=lambda p: (-closeness(p), p))


# --- imports, both ways ----------------------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """What resolving an import needs: the files, Python's module index, Go's modules."""

    files: set[str]
    python: dict[str, str]
    go: list[GoModule]


async def _go_modules(repo_files: Sequence[str], reader: FileReader) -> list[GoModule]:
    mods = [p for p in repo_files if p == "go.mod" or p.endswith("/go.mod")]
    return go_modules(await reader.texts(mods[:10]))


def _imported(parsed: ParsedFile, text: str, scope: _Scope, files: Sequence[str]) -> list[str]:
    language = parsed.info.language
    text = text or "\n".join(t for _, t in parsed.added_lines)
    if language == "python":
        found = [resolve_python(n, parsed.path, scope.python) for n in python_imports(text)]
    elif language in JS_LANGUAGES:
        found = [resolve_js(s, parsed.path, scope.files) for s in js_imports(text)]
    elif language == "go":
        found = [p for d in _go_dirs(go_imports(text), scope.go) for p in _go_files(d, files)]
    else:
        return []
    return list(dict.fromkeys(p for p in found if p and p != parsed.path))


def _go_dirs(imports: list[str], go_mods: list[GoModule]) -> list[str]:
    dirs = []
    for path in imports:
        for mod in go_mods:
            directory = go_package_dir(path, mod.path, mod.directory)
            if directory is not None:
                dirs.append(directory)
                break
    return dirs


def _go_files(directory: str, files: Sequence[str]) -> list[str]:
    inside = [
        p
        for p in files
        if p.endswith(".go") and not p.endswith("_test.go") and _parent(p) == directory
    ]
    return sorted(inside)[:GO_FILES_PER_PACKAGE]


def _parent(path: str) -> str:
    return path_parent(path)


async def _importers(
    code: list[ParsedFile], files: Sequence[str], scope: _Scope, reader: FileReader
) -> dict[str, list[str]]:
    """changed path -> files that import it, from the nearest candidates of its language."""
    targets = {f.path: f for f in code if f.info.language in ("python", "go", *JS_LANGUAGES)}
    if not targets:
        return {}
    families = {_family(t) for t in targets}
    candidates = _nearest_first([p for p in files if _family(p) in families], targets)
    texts = await reader.texts(candidates[:MAX_IMPORTER_READS])
    found: dict[str, list[str]] = {}
    for path in candidates[:MAX_IMPORTER_READS]:
        text = texts.get(path)
        if text is None:
            continue
        for target in _imports_in(path, text, scope, targets.keys()):
            if target in targets:
                found.setdefault(target, []).append(path)
    return found


def _imports_in(path: str, text: str, scope: _Scope, targets: Iterable[str]) -> set[str]:
    family = _family(path)
    if family == "python":
        return {p for n in python_imports(text) if (p := resolve_python(n, path, scope.python))}
    if family == "js":
        return {p for s in js_imports(text) if (p := resolve_js(s, path, scope.files))}
    if family == "go":
        dirs = set(_go_dirs(go_imports(text), scope.go))
        return {t for t in targets if t.endswith(".go") and _parent(t) in dirs}
    return set()


def _family(path: str) -> str | None:
    if path.endswith(".py"):
        return "python"
    if path.endswith(JS_EXTENSIONS):
        return "js"
    if path.endswith(".go"):
        return "go"
    return None


# --- guidance -----------------------------------------------------------------------

_GUIDANCE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rx, re.IGNORECASE), why)
    for rx, why in (
        (r"^(?:.*/)?(?:AGENTS|CLAUDE)\.md$", "instructions for AI agents in this repository"),
        (r"^\.github/copilot-instructions\.md$", "instructions for AI reviewers"),
        (r"^(?:\.github/|docs/)?CONTRIBUTING(?:\.md|\.rst|\.txt)?$", "how to contribute"),
        (r"^(?:docs?/)?ARCHITECTURE(?:\.md|\.rst|\.txt)?$", "the architecture"),
        (r"^README(?:\.md|\.rst|\.txt)?$", "the project README"),
        (r"^docs?/adr/[^/]+\.(?:md|rst|txt)$", "an architecture decision record"),
    )
)
MAX_ADRS = 5
_GUIDANCE_NAMES = ("AGENTS", "CLAUDE", "COPILOT-INSTRUCTIONS", "CONTRIBUTING", "ARCHITECTURE",
                   "README")  # fmt: skip


def _maybe_guidance(path: str) -> bool:
    """Whether `path` could match `_GUIDANCE` at all (a superset, for speed)."""
    return path_name(path).upper().startswith(_GUIDANCE_NAMES) or "adr/" in path.lower()


def guidance(repo_files: Sequence[str], changed: Sequence[str]) -> list[Related]:
    """Guidance files, most specific first: agent instructions nearest the change, then
    contributing, architecture, README, the most recent ADRs."""
    dirs = {_parent(p) for p in changed}
    found: list[tuple[int, int, str, str]] = []
    for path in repo_files:
        if not _maybe_guidance(path):
            continue  # most paths: a string test instead of six patterns
        for order, (rx, why) in enumerate(_GUIDANCE):
            if rx.match(path) and _applies(path, dirs):
                found.append((order, -_parent(path).count("/") - bool(_parent(path)), path, why))
                break
    found.sort()
    adrs = [f for f in found if f[3].startswith("an architecture")]
    # The highest-numbered (most recent) ADRs.
    recent = {f[2] for f in sorted(adrs, key=lambda f: f[2], reverse=True)[:MAX_ADRS]}
    return [
        Related(path, "guidance", why)
        for _, _, path, why in found
        if not why.startswith("an architecture") or path in recent
    ]


def _applies(path: str, dirs: set[str]) -> bool:
    """Agent instructions in a subdirectory apply only to changes under it."""
    name = PurePosixPath(path).name.upper()
    parent = _parent(path)
    if name not in ("AGENTS.MD", "CLAUDE.MD") or not parent:
        return True
    return any(d == parent or d.startswith(parent + "/") for d in dirs)


# --- paths the change names ------------------------------------------------------------

MAX_NAMED_FILES = 8
MAX_NAMED_LISTINGS = 4
# A quoted path-like string: "client/src/locales", './i18n/index.js', 'docs/**/*.md'.
_QUOTED_PATH = re.compile(r"""["'`]([\w@.${}*-]*/[\w@.${}*/ -]*|[\w@-]+\.[A-Za-z]{1,6})["'`]""")
# A YAML list entry or mapping value that is a path (a workflow's `paths:`, a config key).
_YAML_PATH = re.compile(r"""^\s*(?:-\s+|[\w.-]+:\s+)["']?([\w@.*-]+/[\w@.*/-]*)["']?\s*(?:#.*)?$""")


@dataclass(frozen=True)
class Named:
    path: str
    kind: Literal["file", "listing"]
    why: str


def named_paths(changed: list[ParsedFile], repo_files: Sequence[str]) -> list[Named]:
    """Files and directories the added lines name literally, that exist at head and are not
    changed themselves: a path in a string, a workflow's `paths:` entry, a config value.
    Relative paths are tried from the changed file's directory, then from the root; a
    template or glob is cut at its first wildcard (`locales/${lang}.json` names `locales`)."""
    files = set(repo_files)
    changed_paths = {f.path for f in changed}
    dirs = _directories(repo_files)
    found: dict[str, Named] = {}
    for parsed in changed:
        base = _parent(parsed.path)
        for _, text in parsed.added_lines:
            for literal in _literals(text):
                for candidate in _candidates(literal, base):
                    if candidate in changed_paths or candidate in found:
                        break
                    if candidate in files:
                        found[candidate] = Named(candidate, "file", f"named in {parsed.path}")
                        break
                    if candidate in dirs:
                        found[candidate] = Named(candidate, "listing", f"named in {parsed.path}")
                        break
    named = [n for n in found.values() if n.kind == "file"][:MAX_NAMED_FILES]
    return named + [n for n in found.values() if n.kind == "listing"][:MAX_NAMED_LISTINGS]


def _literals(text: str) -> list[str]:
    out = [m.group(1) for m in _QUOTED_PATH.finditer(text)]
    yaml = _YAML_PATH.match(text)
    if yaml:
        out.append(yaml.group(1))
    return out


def _candidates(literal: str, base: str) -> list[str]:
    """Repository paths a literal may mean, most likely first."""
    cut = re.split(r"[*${}]", literal, maxsplit=1)[0]
    if cut != literal:  # a template or glob: the directory before the wildcard
        cut = cut.rsplit("/", 1)[0] if "/" in cut else ""
    cut = cut.strip().rstrip("/")
    if not cut or cut in (".", ".."):
        return []
    out = []
    if base and not cut.startswith("/"):
        out.append(str(PurePosixPath(base) / cut))
    out.append(cut.lstrip("/"))
    return [_normal(c) for c in out if _normal(c)]


def _normal(path: str) -> str:
    return normalized_path(path) or ""


def _directories(repo_files: Sequence[str]) -> set[str]:
    dirs: set[str] = set()
    for path in repo_files:
        parent = _parent(path)
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = _parent(parent)
    return dirs
