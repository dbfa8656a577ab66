"""Context by symbol: what a change touches, what it uses, and who uses what it touches.

The API, in the order the context builder calls it (one `SymbolAnalysis` per change):

    analysis = SymbolAnalysis(repo_files, read_file, heads, changes)
    changed = analysis.changed_symbols(path)          # per changed file; no I/O
    used = await analysis.resolve_used(path)          # per changed file
    refs = await analysis.references(changed)         # for the changed symbols

- `repo_files`, `read_file`: the head tree's paths and its reader, as `build_context` takes
  them (bot/context/models.py `ReadFile`). `heads`: the changed files' texts at head (path
  -> text; they are not read again). `changes`: per changed file, its added line runs at
  head `[(first, last), ...]` (`BuiltContext.changed_lines`).
- Optional: `blob_sha(path)` (a tree's blob SHAs: bot/github/snapshot.py `TreeEntry.sha`,
  `git ls-tree`) with `cache` (get/set; what each blob yields is kept there, so the next
  change of the same repository reads and parses only the blobs it has not seen; an
  in-memory cache by default); `grep` (bot/review/gitgrep.py: `git grep` over a local
  checkout instead of the text pass); `limits`.
- `changed_symbols(path)` -> `ChangedSymbol`s: the innermost definitions the added lines
  touch (bot/context/symbols.py): a changed method, not its class, unless the class header
  or a field changed; each with its lines, signature end and doc comment.
- `resolve_used(path)` -> `UsedResult`: `used`, the definitions the changed lines call,
  construct, extend, annotate with or read a field of (bot/context/usedefs.py says in what
  order names are resolved), each a `UsedDefinition` with the definitions (path and line
  ranges), how it was found (`via`), where the file uses it, and a `why` ("called by the
  changed `resolve_entities`", "defines `CommonService`, used by the changed
  `delete_docs`"); `unresolved`, the names not resolved because they are defined in more
  than `limits.ambiguous` places or held by too many files to look up (for "Not
  included").
- `references(symbols)` -> one `SymbolReferences` per symbol: the files that name it
  (other files, and its own file outside it), code first, then tests, configuration,
  documentation, nearest first; at most `limits.files_per_symbol` files, each with its
  reference lines, the enclosing definition of each and a `why` ("calls the changed
  `resolve_entities`"); `seen` counts every file that names it, so a bounded list says so.
  A symbol whose name is defined in more than `limits.ambiguous` places (a `get` method),
  or is a name every file uses (`main`, `__init__`'s class is followed instead), is not
  followed: `skipped` says why.

The first awaited call runs the one text pass over the tree for every name any changed
file uses or defines (bot/context/nameindex.py): each file is read once per analysis (a
file parsed later is read again only when the texts kept from the pass passed
`KEEP_BYTES`). `stats` says what it cost. `used_names(path)` gives the names before any
resolution, each with the import that binds it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bot.context.bindings import Binding, bindings, package_of
from bot.context.classify import is_test_path
from bot.context.models import ReadFile
from bot.context.nameindex import FactsCache, Grep, IndexStats, NameIndex
from bot.context.paths import name as path_name
from bot.context.paths import parent as path_parent
from bot.context.paths import suffix as path_suffix
from bot.context.resolution import JS_CONFIG_NAMES, Resolver, distance, go_modules, js_aliases
from bot.context.symbols import (
    FUNCTION_KINDS,
    ChangedSymbol,
    Definition,
    family_of,
    innermost,
    parse,
    symbols_touched,
)
from bot.context.symbols import definitions as definitions_of
from bot.context.usedefs import AMBIGUOUS, Found, Source, UseResolver, Via
from bot.context.uses import Site, SiteKind, UsedName, UseKind, reference_sites, used_names

__all__ = [
    "Limits",
    "ReferencingFile",
    "Role",
    "SymbolAnalysis",
    "SymbolReferences",
    "Unresolved",
    "UsedDefinition",
    "UsedResult",
]

_DOCS = frozenset({".md", ".rst", ".txt", ".adoc", ".markdown"})
_CONFIG = frozenset(
    {".yml", ".yaml", ".json", ".toml", ".ini", ".cfg", ".conf", ".env", ".properties",
     ".xml", ".gradle", ".tf", ".hcl"}
)  # fmt: skip
_CONFIG_NAMES = frozenset({"dockerfile", "makefile", "procfile", "justfile"})
MAX_CONFIGS = 20  # go.mod, tsconfig.json files read, at most
_ROLE_ORDER: dict[str, int] = {"code": 0, "test": 1, "configuration": 2, "documentation": 3}
# Names that mean something else in every file: not followed.
_UNFOLLOWED = frozenset({"constructor", "main", "init", "New", "String", "Error", "toString"})
_USE_PHRASES: dict[str, str] = {
    "call": "called by", "construct": "constructed by", "base": "extended by",
    "decorator": "decorates", "type": "used by", "attribute": "read by",
}  # fmt: skip
_SITE_PHRASES: dict[str, str] = {
    "call": "calls", "construct": "constructs", "base": "extends", "import": "imports",
    "decorator": "decorates with", "type": "uses as a type", "attribute": "uses",
    "read": "uses",
}  # fmt: skip
_SITE_ORDER = ("call", "construct", "base", "decorator", "type", "import", "attribute", "read")

Role = Literal["code", "test", "configuration", "documentation"]


@dataclass(frozen=True)
class Limits:
    ambiguous: int = AMBIGUOUS  # a name defined in more places is not resolved
    files_per_symbol: int = 10  # referencing files kept per changed symbol
    sites_per_file: int = 5  # reference lines kept per referencing file
    tries_per_symbol: int = 40  # files parsed, at most, to find those
    # Files holding a changed name, at most, to look for its other definitions in (until more
    # than `ambiguous` are found: it is then not followed).
    reference_lookup: int = 20_000


@dataclass(frozen=True)
class UsedDefinition:
    """A definition (or several candidates, best first) a changed file uses."""

    name: str  # as used: `delete` of `svc.delete`
    qualifier: str | None
    kind: UseKind  # the strongest use: called, constructed, extended, a type, read
    lines: tuple[int, ...]  # where the changed file uses it
    users: tuple[str, ...]  # the changed symbols that use it
    definitions: tuple[Definition, ...]
    via: Via
    binding: Binding | None  # the import that binds the name (or its qualifier)
    why: str


@dataclass(frozen=True)
class Unresolved:
    name: str
    qualifier: str | None
    lines: tuple[int, ...]
    reason: str  # "ambiguous" or "too common"
    count: int  # definitions found, or files holding the name
    why: str


@dataclass(frozen=True)
class UsedResult:
    path: str
    used: tuple[UsedDefinition, ...]
    unresolved: tuple[Unresolved, ...]


@dataclass(frozen=True)
class ReferencingFile:
    path: str
    role: Role
    sites: tuple[Site, ...]  # line, how, and the enclosing definition of each
    why: str


@dataclass(frozen=True)
class SymbolReferences:
    symbol: ChangedSymbol
    name: str  # the name followed (a constructor's: its class)
    files: tuple[ReferencingFile, ...]
    # Files that name it: those kept, and those not read holding it as a word (the text
    # pass); more than `files` when the list is bounded.
    seen: int
    skipped: str | None = None  # why it was not followed

    @property
    def bounded(self) -> bool:
        return self.seen > len(self.files)


class SymbolAnalysis:
    """The symbol analysis of one change (see the module docstring)."""

    def __init__(
        self,
        repo_files: Sequence[str],
        read_file: ReadFile,
        heads: Mapping[str, str],
        changes: Mapping[str, Sequence[tuple[int, int]]],
        *,
        blob_sha: Callable[[str], str | None] | None = None,
        cache: FactsCache | None = None,
        grep: Grep | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.repo_files = list(repo_files)
        self.limits = limits or Limits()
        self.index = NameIndex(repo_files, read_file, blob_sha=blob_sha, cache=cache, grep=grep)
        self.changes = {p: list(runs) for p, runs in changes.items()}
        self._sources: dict[str, Source] = {}
        self._changed: dict[str, list[ChangedSymbol]] = {}
        self._uses: dict[str, list[UsedName]] = {}
        for path, text in heads.items():
            self.index.provide(path, text.encode("utf-8", "replace"))
            self._load(path, text)
        self._resolver: UseResolver | None = None
        self._kinds: dict[str, Role | None] = {}  # path -> its role to its own family
        self._preparing = asyncio.Lock()

    @property
    def stats(self) -> IndexStats:
        return self.index.stats

    def _load(self, path: str, text: str) -> None:
        parsed = parse(path, text)
        if parsed is None:
            return
        defs = definitions_of(parsed)
        self._sources[path] = Source(path, parsed, defs, bindings(parsed), package_of(parsed))
        runs = self.changes.get(path, [])
        self._changed[path] = symbols_touched(defs, parsed.data, runs)
        self._uses[path] = used_names(parsed, runs)

    def changed_symbols(self, path: str) -> list[ChangedSymbol]:
        """The definitions a changed file's added lines touch (its text must be in
        `heads`)."""
        return list(self._changed.get(path, []))

    def used_names(self, path: str) -> list[tuple[UsedName, Binding | None]]:
        """The names a changed file's added lines use, each with the import that binds it
        (or its qualifier's first name), before any resolution."""
        src = self._sources.get(path)
        if src is None:
            return []
        return [(u, src.bound(u.root or u.name)) for u in self._uses.get(path, [])]

    # --- the pass -----------------------------------------------------------------------

    async def prepare(self) -> None:
        """Reads go.mod and tsconfig files and runs the text pass, once (the other awaited
        calls call it)."""
        async with self._preparing:
            if self._resolver is None:
                await self._prepare()

    async def _prepare(self) -> None:
        resolver = Resolver(
            self.repo_files,
            go_modules(await self._texts(p for p in self.repo_files if path_name(p) == "go.mod")),
            js_aliases(await self._texts(self._js_configs())),
        )
        names: set[str] = set()
        keep: set[str] = set()
        for path, src in self._sources.items():
            for use in self._uses.get(path, []):
                names.add(use.name)
                if use.root:
                    names.add(use.root)
            names.update(self._followed(s) for s in self._changed.get(path, []))
            for binding in src.bindings:
                target = resolver.target(binding, path)
                keep.update(target.paths if target is not None else ())
            if src.family in ("go", "jvm"):
                keep.update(resolver.same_package(path))
        await self.index.scan(names, keep=keep)
        self._resolver = UseResolver(self.index, resolver, self._sources, self.limits.ambiguous)

    async def _texts(self, paths: Iterable[str]) -> dict[str, str]:
        wanted = list(paths)[:MAX_CONFIGS]
        return {p: d.decode("utf-8", "replace") for p in wanted if (d := await self.index.read(p))}

    def _js_configs(self) -> list[str]:
        """The tsconfig/jsconfig files of the changed JS/TS files' directories and their
        ancestors."""
        dirs: set[str] = set()
        for path, src in self._sources.items():
            if src.family == "js":
                parent = path_parent(path)
                while parent and parent not in dirs:
                    dirs.add(parent)
                    parent = path_parent(parent)
                dirs.add("")
        return [
            p for p in self.repo_files if path_name(p) in JS_CONFIG_NAMES and path_parent(p) in dirs
        ]

    # --- used definitions ---------------------------------------------------------------

    async def resolve_used(self, path: str) -> UsedResult:
        await self.prepare()
        assert self._resolver is not None
        src = self._sources.get(path)
        if src is None:
            return UsedResult(path, (), ())
        groups: dict[tuple[str, str | None], list[UsedName]] = {}
        for use in sorted(self._uses.get(path, []), key=lambda u: u.qualifier is not None):
            groups.setdefault((use.name, use.qualifier), []).append(use)
        merged: dict[tuple[Definition, ...], list[tuple[list[UsedName], Found]]] = {}
        failed: dict[str, tuple[list[UsedName], Found]] = {}  # by name: `x.get`, `y.get`
        for uses in groups.values():
            found = await self._resolver.resolve(src, uses[0])
            if found.definitions and found.via is not None:
                merged.setdefault(found.definitions, []).append((uses, found))
            elif found.reason in ("ambiguous", "too common"):
                before = failed.get(uses[0].name, ([], found))[0]
                failed[uses[0].name] = (before + uses, found)
        used = [self._used(src, entries) for entries in merged.values()]
        used.sort(key=lambda u: (min(u.lines), u.name))
        unresolved = [self._unresolved(uses, found) for uses, found in failed.values()]
        return UsedResult(path, tuple(used), tuple(sorted(unresolved, key=lambda u: u.lines)))

    def _used(self, src: Source, entries: list[tuple[list[UsedName], Found]]) -> UsedDefinition:
        uses = [u for group, _ in entries for u in group]
        strongest = min(uses, key=lambda u: _USE_ORDER.index(u.kind))
        found = next(f for group, f in entries if strongest in group)
        users = tuple(dict.fromkeys(u for u in (self._user(src.path, x.line) for x in uses) if u))
        name, qualifier = strongest.name, strongest.qualifier
        if found.owner is not None and found.definitions == (found.owner,):
            name, qualifier = found.owner.name, None  # a class read through its fields
        assert found.via is not None
        return UsedDefinition(
            name, qualifier, strongest.kind, tuple(sorted({u.line for u in uses})), users,
            found.definitions, found.via, src.bound(strongest.root or strongest.name),
            _used_why(uses, strongest, found, users),
        )  # fmt: skip

    def _user(self, path: str, line: int) -> str:
        symbol = innermost([s.definition for s in self._changed.get(path, [])], line)
        return symbol.qualified if symbol is not None else ""

    @staticmethod
    def _unresolved(uses: list[UsedName], found: Found) -> Unresolved:
        use = uses[0]
        shown = f"{use.qualifier}.{use.name}" if use.qualifier else use.name
        if found.reason == "ambiguous":
            why = f"defined in {found.count:,} places"
        else:
            why = f"named in {found.count:,} files, too many to look up"
        if use.qualifier:  # the list names the bare name: say how the change wrote it
            why = f"`{shown}`: `{use.name}` is {why}"
        lines = tuple(sorted({u.line for u in uses}))
        return Unresolved(use.name, use.qualifier, lines, found.reason or "", found.count, why)

    # --- references ---------------------------------------------------------------------

    def _role(self, path: str, family: str | None) -> Role | None:
        """What a file that names a symbol of `family` is to it: code or a test of that
        family, configuration, documentation; None for code of another family."""
        if path not in self._kinds:
            self._kinds[path] = role_of(path, self.index.family(path))
        kind = self._kinds[path]
        if kind in ("code", "test") and (family is None or self.index.family(path) != family):
            return None
        return kind

    async def references(self, symbols: Sequence[ChangedSymbol]) -> list[SymbolReferences]:
        await self.prepare()
        return [await self._references_of(s) for s in symbols]

    @staticmethod
    def _followed(symbol: ChangedSymbol) -> str:
        """The name a symbol is referenced by: a constructor's is its class's."""
        d = symbol.definition
        if d.kind == "constructor" or d.name in ("__init__", "constructor", "initialize"):
            return d.parent or d.name
        return d.name

    async def _references_of(self, symbol: ChangedSymbol) -> SymbolReferences:
        d, name = symbol.definition, self._followed(symbol)
        if name in _UNFOLLOWED or (name.startswith("__") and name.endswith("__")) or len(name) < 3:
            return SymbolReferences(symbol, name, (), 0, "a name every file uses")
        estimated = self.index.estimated(name)
        if estimated is not None:
            why = f"`{name}` is named in about {estimated} files, too many to follow"
            return SymbolReferences(symbol, name, (), estimated, why)
        family = family_of(d.path)
        holders = [p for p in self.index.files_with(name) if self._role(p, family) is not None]
        lookup = await self.index.lookup(
            name,
            family=family,
            max_candidates=self.limits.reference_lookup,
            enough=self.limits.ambiguous,
            count_all=False,
        )
        homes = {x.path for x in lookup.definitions if x.path != d.path}
        if lookup.count > self.limits.ambiguous:
            why = f"`{name}` is defined in more than {self.limits.ambiguous} places"
            return SymbolReferences(symbol, name, (), len(holders), why)
        candidates = [p for p in holders if p not in homes]
        ordered = sorted(
            candidates,
            key=lambda p: (_ROLE_ORDER[self._role(p, family) or "code"], distance(p, d.path), p),
        )
        kept: list[ReferencingFile] = []
        rejected = 0  # files read that name it only in a comment or a string
        for path in ordered[: self.limits.tries_per_symbol]:
            if len(kept) >= self.limits.files_per_symbol:
                break
            found = await self._referencing(path, name, d, self._role(path, family) or "code")
            if found is not None:
                kept.append(found)
            elif path != d.path:
                rejected += 1
        own = any(f.path == d.path for f in kept)
        seen = len([p for p in candidates if p != d.path]) - rejected + int(own)
        return SymbolReferences(symbol, name, tuple(kept), seen)

    async def _referencing(
        self, path: str, name: str, d: Definition, role: Role
    ) -> ReferencingFile | None:
        limit = self.limits.sites_per_file
        if role in ("configuration", "documentation"):
            data = await self.index.read(path)
            sites = _text_sites(data or b"", name, limit)
        else:
            parsed = await self.index.parsed(path)
            if parsed is None:
                return None
            defs = list((await self.index.facts(path)).definitions or ())
            sites = [
                s
                for s in reference_sites(parsed, name, defs, limit=limit + 5)
                if not (path == d.path and d.start <= s.line <= d.end)
            ][:limit]
        if not sites:
            return None
        return ReferencingFile(path, role, tuple(sites), _site_why(sites, name, role))


_USE_ORDER: tuple[UseKind, ...] = ("call", "construct", "base", "decorator", "type", "attribute")


def role_of(path: str, family: str | None) -> Role | None:
    """What a file is: documentation, configuration, or (of a language `family`) a test or
    code; None for anything else."""
    suffix = path_suffix(path).lower()
    if suffix in _DOCS:
        return "documentation"
    if suffix in _CONFIG or path_name(path).lower() in _CONFIG_NAMES:
        return "configuration"
    if family is None:
        return None
    return "test" if is_test_path(path) else "code"


def _text_sites(data: bytes, name: str, limit: int) -> list[Site]:
    word = re.compile(rb"(?<![\w$])" + re.escape(name.encode()) + rb"(?![\w$])")
    sites = []
    for row, line in enumerate(data.split(b"\n")):
        if word.search(line):
            sites.append(Site(row + 1, "read", None))
            if len(sites) >= limit:
                break
    return sites


def _site_why(sites: Sequence[Site], name: str, role: Role) -> str:
    if role in ("configuration", "documentation"):
        return f"names the changed `{name}`"
    kinds: list[SiteKind] = [s.kind for s in sites]
    strongest = min(kinds, key=_SITE_ORDER.index)
    return f"{_SITE_PHRASES[strongest]} the changed `{name}`"


def _used_why(uses: Sequence[UsedName], use: UsedName, found: Found, users: Sequence[str]) -> str:
    """ "called by the changed `f`"; "defines `C`, used by the changed `f`"; for a class
    reached through its members, which ones: "(`Document.kb_id`, `Document.query`)"."""
    user = f"the changed `{users[0]}`" if users else "the change"
    first = found.definitions[0]
    if found.owner is not None and found.definitions == (found.owner,):
        shown = dict.fromkeys(f"`{u.qualifier}.{u.name}`" for u in uses if u.qualifier)
        why = f"defines `{first.name}`, used by {user} ({', '.join(list(shown)[:3])})"
    elif first.kind in FUNCTION_KINDS:
        why = f"{_USE_PHRASES[use.kind]} {user}"
    else:
        why = f"defines `{first.name}`, {_USE_PHRASES[use.kind]} {user}"
    if found.via == "index" and found.count > 1:
        why += f" (one of {found.count} definitions of `{use.name}`)"
    return why
