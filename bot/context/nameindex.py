"""Where names are written and defined across a tree, without parsing the tree.

One text pass (`NameIndex.scan`) reads each file once and finds which of the names wanted
it holds as a word: its bytes are cut into word tokens (a byte table and `split`, several
times faster than a regex alternation over the names) and the set meets the names'. With a
local checkout, `git grep -w -F` can stand in for the pass (`grep=`, see
bot/review/gitgrep.py): names a sample of the tree shows in many files are left out of it
(their every match would be a line of output) and are "too common".

Only files that hold a name are looked at further: a cheap pattern at each place a file
names it says whether that line may define it (a `def`/`func`/`class`/... keyword before
the name, or a method's shape for the languages that declare methods without a keyword),
and only those files are parsed (bot/context/symbols.py).

What a file yields depends only on its bytes, so it is cached by blob SHA when the caller
can give one (`blob_sha(path)`): its words, the names it was seen not to define, its
definitions and package. A cached file is not read again for the pass. The cache is
anything with `get(key)` and `set(key, value)`; a bounded in-memory one by default.

Bounds: files over 512 KB, binaries, lock files, vendored and generated paths (what
bot/context/classify.py `exclusion` says, the `@generated` mark included) are not indexed;
texts are kept between the pass and the parse up to `keep_bytes`; a name held by more than
`max_candidates` files is not looked up (`Lookup.too_common`).
"""

from __future__ import annotations

import asyncio
import re
import string
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Protocol

from bot.context.bindings import package_of
from bot.context.classify import exclusion
from bot.context.models import ReadFile
from bot.context.paths import suffix as path_suffix
from bot.context.symbols import Definition, Parsed, definitions, family_of, grammar_of, parse

MAX_FILE_BYTES = 512_000
MAX_CANDIDATES = 200  # files holding a name, at most, for its definitions to be looked up
KEEP_BYTES = 64_000_000  # texts kept between the pass and the parses
READ_CONCURRENCY = 16
BATCH = 64
MAX_TREES = 64  # parsed files kept for reference lookups
SAMPLE_FILES = 400  # files read to tell the names too common to `grep`

# Names tell each other apart by these bytes (ASCII word characters, `$`, and UTF-8).
_WORD_BYTES = frozenset((string.ascii_letters + string.digits + "_$").encode())
_TO_SPACES = bytes(c if c in _WORD_BYTES or c >= 128 else 32 for c in range(256))
_BINARY_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".ico", ".webp", ".bmp", ".pdf", ".zip", ".gz", ".tgz",
     ".bz2", ".xz", ".7z", ".jar", ".war", ".class", ".so", ".dylib", ".dll", ".exe", ".o",
     ".a", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp3", ".mp4", ".mov", ".wav", ".ogg",
     ".webm", ".pyc", ".wasm", ".bin", ".dat", ".db", ".sqlite", ".parquet", ".npy", ".pkl"}
)  # fmt: skip
# What precedes a name a line defines: a keyword (`def `, `func (r *T) `, `fun <T> Foo.`,
# `class `), or for the languages that declare a method by its shape, modifiers and types
# from the start of the line (`public static User `, `async `, `int A::`); and what follows
# it then: `(`, `<T>(`, `= (...) =>`, `= function`.
_KEYWORD_BEFORE = re.compile(
    rb"\b(?:def|class|func|function\*?|fun|fn|struct|enum|interface|trait|type|typealias"
    rb"|record|object|module|mod|union|namespace|protocol)[ \t]+(?:\([^)\n]*\)[ \t]*)?"
    rb"(?:<[^>\n]*>[ \t]*)?(?:[\w$]+\.)*$"
)
_SHAPE_BEFORE = re.compile(
    rb"[ \t]*(?:(?:@[\w.]+(?:\([^)\n]*\))?|[\w$<>\[\],.?&]+)[ \t]+)*\*?(?:[\w$]+::)*"
)
_SHAPE_AFTER = re.compile(
    rb"[ \t]*(?:<[^>\n]*>)?[ \t]*(?:\(|(?::[^=\n]*)?=[ \t]*(?:async\b[ \t]*)?"
    rb"(?:function\b|\(|[\w$]+[ \t]*=>))"
)
_GO_BLOCK_AFTER = re.compile(rb"[ \t]+(?:struct|interface)\b")
_SHAPE_FAMILIES = frozenset({"js", "jvm", "c", "csharp", "php"})

# Finds, for each of some names, the files that hold it as a word: path -> names found;
# None when it could not run (the text pass is used instead).
Grep = Callable[[Sequence[str]], Awaitable[dict[str, set[str]] | None]]


@dataclass(frozen=True)
class FileFacts:
    """What one blob yields. `skipped` says why a file is not indexed ("large",
    "binary", "generated"); the other fields are None until computed."""

    words: bytes | None = None  # its distinct word tokens, newline-separated
    lacks: frozenset[str] = frozenset()  # names it holds and was seen not to define
    definitions: tuple[Definition, ...] | None = None
    package: str | None = None
    skipped: str | None = None


class FactsCache(Protocol):
    def get(self, key: str) -> FileFacts | None: ...

    def set(self, key: str, value: FileFacts) -> None: ...


class MemoryFactsCache:
    """Facts by blob SHA in this process, the oldest let go past `max_bytes` (about: a
    file's words, and 200 bytes a definition)."""

    def __init__(self, max_bytes: int = 256_000_000) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, FileFacts] = OrderedDict()
        self._bytes = 0

    def get(self, key: str) -> FileFacts | None:
        return self._items.get(key)

    def set(self, key: str, value: FileFacts) -> None:
        old = self._items.pop(key, None)
        self._bytes += _size(value) - (_size(old) if old is not None else 0)
        self._items[key] = value
        while self._bytes > self.max_bytes and self._items:
            _, dropped = self._items.popitem(last=False)
            self._bytes -= _size(dropped)

    def __len__(self) -> int:
        return len(self._items)


def _size(facts: FileFacts) -> int:
    return 100 + len(facts.words or b"") + 200 * len(facts.definitions or ())


@dataclass(frozen=True)
class Lookup:
    """The definitions of a name found in the tree (within the files asked about)."""

    name: str
    definitions: tuple[Definition, ...]
    files: int  # files holding the name as a word, among those asked about
    too_common: bool = False  # held by more than `max_candidates` files: not looked up
    unparsed: int = 0  # past `enough` definitions: files that may define it, not parsed
    complete: bool = True  # every candidate was looked at (else `count` is a lower bound)

    @property
    def count(self) -> int:
        """How many definitions it has (past `enough`, an estimate: a file each)."""
        return len(self.definitions) + self.unparsed


@dataclass(frozen=True)
class Indexing:
    """How a deployment lets the index read its tree (all optional): `blob_sha` and `cache`
    (what each blob yields, kept across reviews of the same repository: a worker's, beside
    its blob cache), `grep` (a local checkout's `git grep` as the pass), `read` (the
    reader for the pass and the parses, when reading every file through the builder's
    reader would cost a request each: it answers None for a file it will not fetch), and
    `unsearched` (after the analysis: a sentence on what the index could not read, for
    the "Not included" list, or None)."""

    blob_sha: Callable[[str], str | None] | None = None
    cache: FactsCache | None = None
    grep: Grep | None = None
    read: ReadFile | None = None
    unsearched: Callable[[], str | None] | None = None


@dataclass
class IndexStats:
    files: int = 0  # files the index covers
    read: int = 0  # files read (each once)
    from_cache: int = 0  # files whose words came from the cache
    parsed: int = 0
    scanned_bytes: int = 0
    grep: bool = False  # the pass was `grep`'s
    reads: Counter[str] = field(default_factory=Counter)  # reads per path


class NameIndex:
    """The names of a tree at one commit, for one analysis: `scan` once with every name
    wanted, then `files_with`, `lookup`, `facts`, `parsed`."""

    def __init__(
        self,
        repo_files: Sequence[str],
        read_file: ReadFile,
        *,
        blob_sha: Callable[[str], str | None] | None = None,
        cache: FactsCache | None = None,
        grep: Grep | None = None,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_candidates: int = MAX_CANDIDATES,
        keep_bytes: int = KEEP_BYTES,
    ) -> None:
        self.files = [p for p in dict.fromkeys(repo_files) if indexable(p)]
        self._file_set = frozenset(self.files)
        self._read_file, self._blob_sha, self._grep = read_file, blob_sha, grep
        self._cache: FactsCache = cache if cache is not None else MemoryFactsCache()
        self.max_file_bytes, self.max_candidates = max_file_bytes, max_candidates
        self._keep_bytes = keep_bytes
        self._kept = 0
        self._texts: dict[str, bytes | None] = {}
        self._facts: dict[str, FileFacts] = {}
        self._trees: OrderedDict[str, Parsed] = OrderedDict()
        # name -> language family (None: not code) -> the files holding it, in tree order
        self._hits: dict[str, dict[str | None, list[str]]] = {}
        self._families = {p: family_of(p) for p in self.files}
        self._order = {p: i for i, p in enumerate(self.files)}
        self._wanted: set[bytes] = set()
        self._common: dict[str, int] = {}  # names not grepped -> estimated files
        self._limit = asyncio.Semaphore(READ_CONCURRENCY)
        self.failures: dict[str, str] = {}
        self.stats = IndexStats(files=len(self.files))

    # --- the pass -----------------------------------------------------------------------

    async def scan(self, names: Iterable[str], *, keep: Iterable[str] = ()) -> None:
        """The one text pass: which files hold each name. Texts of files in `keep` and of
        files that hold a name are kept for the parses that follow (up to `keep_bytes`)."""
        wanted = sorted({n for n in names if n})
        self._hits = {n: {} for n in wanted}
        keep_set = set(keep)
        if not wanted:
            return
        if self._grep is not None and await self._scan_by_grep(wanted):
            return
        wanted_bytes = {n.encode(): n for n in wanted}
        self._wanted = set(wanted_bytes)
        for start in range(0, len(self.files), BATCH):
            batch = self.files[start : start + BATCH]
            found = await asyncio.gather(
                *(self._scan_one(p, wanted_bytes, keep_set) for p in batch)
            )
            for path, names in zip(batch, found, strict=True):
                self._add_hits(path, names)

    async def _scan_by_grep(self, wanted: list[str]) -> bool:
        """`grep` for the names, but those a sample of the tree says are in many files
        (`get`, `id`): every match of those is a line of output, and the index would not
        look them up anyway. Those are `too_common`, their count an estimate."""
        assert self._grep is not None
        common = await self._estimate_common(wanted)
        found = await self._grep([n for n in wanted if n not in common])
        if found is None:
            return False
        self.stats.grep = True
        self._common = common
        for path in self.files:
            self._add_hits(path, [n for n in found.get(path, ()) if n in self._hits])
        return True

    async def _estimate_common(self, wanted: list[str]) -> dict[str, int]:
        """Names a sample of the files says more than twice `max_candidates` files hold:
        name -> the estimated number."""
        if len(self.files) <= 2 * SAMPLE_FILES:
            return {}
        step = len(self.files) / SAMPLE_FILES
        sample = [self.files[int(i * step)] for i in range(SAMPLE_FILES)]
        counts: Counter[bytes] = Counter()
        wanted_bytes = {n.encode() for n in wanted}
        for data in await asyncio.gather(*(self.read(p) for p in sample)):
            counts.update(wanted_bytes & words_of(data or b""))
        scale = len(self.files) / SAMPLE_FILES
        estimates = {n.decode(): round(c * scale) for n, c in counts.items()}
        return {n: e for n, e in estimates.items() if e > 2 * self.max_candidates}

    def estimated(self, name: str) -> int | None:
        """For a name left out of `grep` as too common: about how many files hold it."""
        return self._common.get(name)

    def _add_hits(self, path: str, names: Iterable[str]) -> None:
        family = self._families.get(path)
        for name in names:
            self._hits[name].setdefault(family, []).append(path)

    async def _scan_one(self, path: str, wanted: dict[bytes, str], keep: set[str]) -> list[str]:
        facts = self._cached(path)
        if facts is not None and facts.words is not None:
            self.stats.from_cache += 1
            hits = self._wanted.intersection(facts.words.split(b"\n"))
            return [wanted[h] for h in hits]
        if facts is not None and facts.skipped:
            return []
        data = self._texts[path] if path in self._texts else await self._load(path, keep=False)
        if data is None:
            return []
        words = words_of(data)
        self.stats.scanned_bytes += len(data)
        if self._key(path):  # kept for the next analysis of this blob
            joined = b"\n".join(words)
            self._remember(path, replace(facts, words=joined) if facts else FileFacts(joined))
        hits = wanted.keys() & words
        if path in keep or hits:
            self._keep(path, data)
        return [wanted[h] for h in hits]

    def files_with(self, name: str, family: str | None = None) -> list[str]:
        """The files holding `name` as a word (the pass must have asked for it), in tree
        order; of one language family when `family` is given."""
        by_family = self._hits.get(name, {})
        if family is not None:
            return list(by_family.get(family, ()))
        found = [p for paths in by_family.values() for p in paths]
        return sorted(found, key=self._order.__getitem__) if len(by_family) > 1 else found

    def family(self, path: str) -> str | None:
        """The path's language family (bot/context/symbols.py `FAMILIES`)."""
        if path not in self._families:
            self._families[path] = family_of(path)
        return self._families[path]

    def scanned(self, name: str) -> bool:
        return name in self._hits

    # --- reading ------------------------------------------------------------------------

    def provide(self, path: str, data: bytes) -> None:
        """A text the caller already has (a changed file at head): used, not read."""
        if self._skip_reason(path, data) is None:
            self._texts[path] = data

    async def read(self, path: str) -> bytes | None:
        """The file's bytes (read once; kept while the budget lasts); None when absent or
        not indexable (large, binary, generated)."""
        if path in self._texts:
            return self._texts[path]
        return await self._load(path, keep=True)

    async def _load(self, path: str, *, keep: bool) -> bytes | None:
        async with self._limit:
            try:
                data = await self._read_file(path)
            except Exception as error:  # any reader failure: the file is left out
                self.failures[path] = type(error).__name__
                data = None
        self.stats.read += 1
        self.stats.reads[path] += 1
        skipped = self._skip_reason(path, data)
        if skipped is not None or data is None:
            self._texts[path] = None
            if skipped is not None:
                self._remember(path, FileFacts(skipped=skipped))
            return None
        if keep:
            self._keep(path, data)
        return data

    def _skip_reason(self, path: str, data: bytes | None) -> str | None:
        if data is None:
            return None
        if len(data) > self.max_file_bytes:
            return "large"
        if b"\0" in data[:8192]:
            return "binary"
        if b"generated" not in data[:2000].lower():  # every generated mark says so
            return None
        head = data[:2000].decode("utf-8", "replace")
        return "generated" if exclusion(path, head, ()) == "generated" else None

    def _keep(self, path: str, data: bytes) -> None:
        if path in self._texts:
            return
        if self._kept + len(data) <= self._keep_bytes:
            self._texts[path] = data
            self._kept += len(data)

    def forget(self, path: str) -> None:
        """Let a kept text go (it is read again if asked for)."""
        data = self._texts.pop(path, None)
        self._kept -= len(data) if data else 0

    # --- facts --------------------------------------------------------------------------

    def _key(self, path: str) -> str | None:
        return self._blob_sha(path) if self._blob_sha is not None else None

    def _cached(self, path: str) -> FileFacts | None:
        if path in self._facts:
            return self._facts[path]
        key = self._key(path)
        facts = self._cache.get(key) if key else None
        if facts is not None:
            self._facts[path] = facts
        return facts

    def _remember(self, path: str, facts: FileFacts) -> None:
        self._facts[path] = facts
        key = self._key(path)
        if key:
            self._cache.set(key, facts)

    async def may_define(self, path: str, name: str) -> bool:
        """Whether the file may define `name` (when it does, this says so): its
        definitions when it was parsed, else a pattern around each place it names it."""
        facts = self._cached(path) or FileFacts()
        if facts.definitions is not None:
            return any(d.name == name for d in facts.definitions)
        if name in facts.lacks:
            return False
        data = await self.read(path)
        if data is None:
            return False
        if may_define(data, name, self.family(path)):
            return True
        facts = self._cached(path) or facts
        self._remember(path, replace(facts, lacks=facts.lacks | {name}))
        return False

    async def facts(self, path: str) -> FileFacts:
        """The file's definitions and package, parsed once per blob."""
        facts = self._cached(path) or FileFacts()
        if facts.definitions is not None:
            defs = tuple(d if d.path == path else replace(d, path=path) for d in facts.definitions)
            return replace(facts, definitions=defs)
        parsed = await self.parsed(path)
        if parsed is None:
            return replace(facts, definitions=())
        facts = replace(
            self._cached(path) or facts,
            definitions=tuple(definitions(parsed)),
            package=package_of(parsed),
        )
        self._remember(path, facts)
        return facts

    async def parsed(self, path: str) -> Parsed | None:
        if path in self._trees:
            self._trees.move_to_end(path)
            return self._trees[path]
        if grammar_of(path) is None:
            return None
        data = await self.read(path)
        if data is None:
            return None
        parsed = parse(path, data)
        self.stats.parsed += 1
        if parsed is not None:
            self._trees[path] = parsed
            if len(self._trees) > MAX_TREES:
                self._trees.popitem(last=False)
        return parsed

    # --- definitions by name ------------------------------------------------------------

    async def lookup(
        self,
        name: str,
        *,
        family: str | None = None,
        within: Iterable[str] | None = None,
        max_candidates: int | None = None,
        enough: int | None = None,
        count_all: bool = True,
    ) -> Lookup:
        """The definitions of `name` in the files that hold it: of a language family, or
        among `within`. The files are those of the pass when it asked for `name`, else
        `within` itself (which must then be given). Past `enough` definitions, the other
        files that may define it are counted (one each), not parsed; or with `count_all`
        false, not even looked at (`Lookup.complete` is then false)."""
        if name in self._common:
            return Lookup(name, (), self._common[name], too_common=True)
        candidates = self._candidates(name, family, within)
        bound = self.max_candidates if max_candidates is None else max_candidates
        if len(candidates) > bound:
            return Lookup(name, (), len(candidates), too_common=True)
        found: list[Definition] = []
        unparsed = 0
        for path in candidates:
            if not await self.may_define(path, name):
                continue
            if enough is not None and len(found) >= enough:
                unparsed += 1
                if not count_all:
                    return Lookup(
                        name, tuple(found), len(candidates), unparsed=unparsed, complete=False
                    )
                continue
            facts = await self.facts(path)
            found += [d for d in facts.definitions or () if d.name == name]
        return Lookup(name, tuple(found), len(candidates), unparsed=unparsed)

    def _candidates(self, name: str, family: str | None, within: Iterable[str] | None) -> list[str]:
        if self.scanned(name):
            if family is not None:
                candidates = self.files_with(name, family)
            else:
                by_family = self._hits[name]
                candidates = [p for f, paths in by_family.items() if f is not None for p in paths]
            if within is not None:
                allowed = set(within)
                candidates = [p for p in candidates if p in allowed]
            return candidates
        candidates = [p for p in within or () if p in self._file_set]
        return [p for p in candidates if (self.family(p) == family if family else self.family(p))]


def indexable(path: str) -> bool:
    """Whether the pass reads this path at all (not a lock file, vendored, generated by its
    path, or a binary by its extension)."""
    if path_suffix(path).lower() in _BINARY_SUFFIXES:
        return False
    return exclusion(path, "", ()) is None


def may_define(data: bytes, name: str, family: str | None) -> bool:
    """Whether a line of `data` may define `name` (see `_KEYWORD_BEFORE`): checked at each
    place the text names it, so a file is not parsed for a name it only uses."""
    for match in _word(name).finditer(data):
        start = data.rfind(b"\n", 0, match.start()) + 1
        end = data.find(b"\n", match.end())
        before, after = data[start : match.start()], data[match.end() : end if end >= 0 else None]
        if _KEYWORD_BEFORE.search(before):
            return True
        shaped = family in _SHAPE_FAMILIES and _SHAPE_BEFORE.fullmatch(before)
        if shaped and _SHAPE_AFTER.match(after):
            return True
        if family == "go" and not before.strip() and _GO_BLOCK_AFTER.match(after):
            return True
    return False


@lru_cache(maxsize=4096)
def _word(name: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<![\w$])" + re.escape(name.encode()) + rb"(?![\w$])")


def words_of(data: bytes) -> set[bytes]:
    """The word tokens of a text, as the pass cuts them."""
    return set(data.translate(_TO_SPACES).split())
