"""Context speed, cold and cached: the symbol analysis alone and the whole context build.

A 1,000-line change in synthetic repositories of 5,000 and 50,000 files; the analysis is
bot/context/symbolic.py `SymbolAnalysis`, the build bot/context/build.py `build_context`.

The repository: Python, TypeScript, Go and Java modules (45/25/20/10 %) of about 150 lines
(5 KB) each, plus Markdown and YAML files (one file in 20), generated from a fixed seed.
Each module defines classes and functions with distinct names, imports a few other modules
and calls what they define, reads fields of its models, and calls the methods every code
base has (`get`, `save`, `load`, `close`, ...). Files are read from memory through an
async reader, as `build_context` reads them; blob SHAs are git's.

The change: 1,000 added lines over 5 files (a new function or method in each of 5 modules
of the four languages, calling what their modules import and define); for the whole build,
a unified diff of the 5 files as `git diff` writes it, their texts at head the reader's.

Measured, per repository size (median of `--repeats` runs each), for the analysis alone
(the builder's sequence: `changed_symbols`, `resolve_used` per changed file, `references`
of every changed symbol) and for the whole build (`build_context(meta, diff, repo_files,
read_file, indexing=Indexing(blob_sha=..., cache=...))` at the default budget, with the
built context's tokens and sections):
- cold: a fresh `MemoryFactsCache`: every file read and cut into words, candidates parsed;
- cached: a second run of the same change sharing the first one's cache (a worker's next
  review of the same repository, as bot/review/sources.py passes its `FACTS`: each file's
  words, names and definitions by blob SHA);
- with `--git`, the analysis alone: the tree written to a git repository and files read
  through `git cat-file --batch` (bot/review/localrepo.py), no cache: the text pass over
  them ("git, read"), and `git grep` as the text pass ("git grep");
- with `--profile`, a cold and a cached build under cProfile: bot/'s 10 functions with the
  most cumulative time (a coroutine's leaves out its waits and the tasks it gathers).

Goals, for the whole build: under 1 s at 5,000 files, under 5 s at 50,000, on 2 cores.

Run: `python bench/symbols.py [--sizes 5000 50000] [--repeats 3] [--git] [--profile]`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import difflib
import functools
import hashlib
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.context import BuiltContext, Indexing, MemoryFactsCache, PullRequestMeta, build_context
from bot.context.symbolic import SymbolAnalysis
from bot.review.gitgrep import GitGrep
from bot.review.localrepo import LocalRepo

GOALS_S = {5_000: 1.0, 50_000: 5.0}
VERBS = ["get", "load", "save", "build", "parse", "render", "fetch", "update", "create",
         "delete", "find", "sync", "check", "apply", "merge", "format", "send", "read",
         "write", "resolve", "compute", "collect", "index", "scan", "open", "close"]  # fmt: skip
NOUNS = ["user", "order", "item", "account", "invoice", "report", "session", "token", "page",
         "record", "entry", "event", "job", "task", "queue", "cache", "file", "path", "node",
         "graph", "edge", "rule", "policy", "price", "tax", "cart", "stock", "batch", "chunk",
         "frame", "layer", "model", "view", "route", "query", "field", "table", "column",
         "schema", "config", "option", "metric", "alert", "log", "trace", "span", "plan",
         "step", "stage", "build", "release", "tag", "branch", "commit", "review", "comment",
         "thread", "message", "mail", "note", "label", "group", "team", "role"]  # fmt: skip
COMMON_METHODS = ["get", "save", "load", "close", "run", "update", "delete", "to_dict", "validate"]
FIELDS = ["id", "name", "value", "status", "created_at", "owner", "total", "kind", "data"]
LANGUAGES = [("python", 45), ("typescript", 25), ("go", 20), ("java", 10)]
EXTENSIONS = {"python": ".py", "typescript": ".ts", "go": ".go", "java": ".java"}


@dataclass
class Module:
    path: str
    language: str
    package: str  # Python dotted module, TS path without extension, Go dir, Java package
    classes: list[str]
    functions: list[str]


def camel(*words: str) -> str:
    return "".join(w.capitalize() for w in words)


class Generator:
    def __init__(self, files: int, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.files = files
        self.modules: list[Module] = []
        self.used_names: set[str] = set()
        self.calls: dict[str, list[str]] = {}

    def unique(self, make: str) -> str:
        name = make
        while name in self.used_names:
            name = f"{make}_{self.rng.randrange(10_000)}"
        self.used_names.add(name)
        return name

    def plan(self) -> None:
        codes = int(self.files * 0.95)
        weights = [w for _, w in LANGUAGES]
        for i in range(codes):
            language = self.rng.choices([lang for lang, _ in LANGUAGES], weights)[0]
            area = f"{self.rng.choice(NOUNS)}s{i % 97}"
            stem = f"{self.rng.choice(NOUNS)}_{i}"
            self.modules.append(self.module(language, area, stem))

    def module(self, language: str, area: str, stem: str) -> Module:
        r = self.rng
        classes = [
            self.unique(
                camel(
                    r.choice(NOUNS),
                    r.choice(NOUNS),
                    r.choice(["Service", "Model", "Store", "Client"]),
                )
            )
            for _ in range(2)
        ]
        functions = [
            self.unique(f"{r.choice(VERBS)}_{r.choice(NOUNS)}_{r.choice(NOUNS)}") for _ in range(5)
        ]
        if language != "python":
            functions = [
                camel(*f.split("_"))[0].lower() + camel(*f.split("_"))[1:] for f in functions
            ]
        if language == "go":
            functions = [f[0].upper() + f[1:] for f in functions]
        ext = EXTENSIONS[language]
        if language == "python":
            return Module(
                f"src/{area}/{stem}{ext}", language, f"src.{area}.{stem}", classes, functions
            )
        if language == "typescript":
            return Module(
                f"web/src/{area}/{stem}{ext}",
                language,
                f"web/src/{area}/{stem}",
                classes,
                functions,
            )
        if language == "go":
            return Module(f"pkg/{area}/{stem}{ext}", language, f"pkg/{area}", classes, functions)
        package = f"com.acme.{area}"
        return Module(
            f"java/src/main/java/com/acme/{area}/{classes[0]}{ext}",
            language,
            package,
            classes,
            functions,
        )

    def peers(self, module: Module, count: int) -> list[Module]:
        same = [
            m
            for m in self.rng.sample(self.modules, min(40, len(self.modules)))
            if m.language == module.language and m is not module
        ]
        return same[:count]

    def render(self, module: Module) -> str:
        peers = self.peers(module, 3)
        self.calls[module.path] = list(module.functions) + [self.callable(module, p) for p in peers]
        render = {
            "python": self.python,
            "typescript": self.typescript,
            "go": self.go,
            "java": self.java,
        }
        return render[module.language](module, peers)

    def callable(self, module: Module, peer: Module) -> str:
        if module.language == "go":
            return f"{peer.package.rsplit('/', 1)[-1]}.{peer.functions[0]}"
        if module.language == "java":
            return f"{peer.classes[0]}.{peer.functions[0]}"
        return peer.functions[0]

    def added_block(self, m: Module, lines: int) -> list[str]:
        """A new function of about `lines` lines calling what the module can call."""
        calls = self.calls[m.path]
        name = f"changed_{m.functions[0]}" if m.language == "python" else f"changed{m.functions[0]}"
        head, indent, semi, tail = {
            "python": (
                [f"def {name}(item, store):", "    value = None"],
                "    ",
                "",
                ["    return value", ""],
            ),
            "typescript": (
                [f"export function {name}(item: any, store: any): any {{", "  let value: any;"],
                "  ",
                ";",
                ["  return value;", "}", ""],
            ),
            "go": (
                [f"func {name}(item *{m.classes[0]}, store Store) int {{", "\tvar value int"],
                "\t",
                "",
                ["\treturn value", "}", ""],
            ),
            "java": (
                [
                    f"    public static int {name}(Item item, Store store) {{",
                    "        int value = 0;",
                ],
                "        ",
                ";",
                ["        return value;", "    }"],
            ),
        }[m.language]
        body: list[str] = []
        while len(head) + len(body) + len(tail) < lines:
            body += self.body(calls, indent, semi, 1)
        return head + body + tail

    def body(self, calls: list[str], indent: str, semi: str, count: int) -> list[str]:
        r = self.rng
        lines = []
        for _ in range(count):
            lines.append(
                f"{indent}value = {r.choice(calls)}(item.{r.choice(FIELDS)}, "
                f"{r.choice(FIELDS)}){semi}"
            )
            lines.append(f"{indent}store.{r.choice(COMMON_METHODS)}(value){semi}")
        return lines

    def python(self, m: Module, peers: list[Module]) -> str:
        r = self.rng
        out = ['"""A module."""', "import logging", ""]
        calls = list(m.functions)
        for p in peers:
            out.append(f"from {p.package} import {p.classes[0]}, {p.functions[0]}")
            calls += [p.functions[0]]
        out += ["", ""]
        for cls in m.classes:
            out += [f"class {cls}(Base):", f'    """{cls}."""', ""]
            out += [f"    {f}: int = 0" for f in r.sample(FIELDS, 4)]
            for method in r.sample(COMMON_METHODS, 3):
                out += ["", f"    def {method}(self, item, store):"]
                out += self.body(calls, "        ", "", 3)
                out += ["        return value"]
            out += ["", ""]
        for fn in m.functions:
            out += [f"def {fn}(item, store):", f'    """{fn}."""']
            out += self.body(calls, "    ", "", 4)
            if peers:
                out += [f"    model = {peers[0].classes[0]}()", "    return model.save(value)"]
            out += ["", ""]
        return "\n".join(out) + "\n"

    def typescript(self, m: Module, peers: list[Module]) -> str:
        out = []
        calls = list(m.functions)
        for p in peers:
            rel = "../" + "/".join(p.package.split("/")[-2:])
            out.append(f'import {{ {p.classes[0]}, {p.functions[0]} }} from "{rel}";')
            calls.append(p.functions[0])
        out.append("")
        for cls in m.classes:
            out += [f"export class {cls} {{"] + [f"  {f}: number = 0;" for f in FIELDS[:4]]
            for method in self.rng.sample(COMMON_METHODS, 3):
                out += [f"  {method}(item: any, store: any): any {{", "    let value: any;"]
                out += [*self.body(calls, "    ", ";", 3), "    return value;", "  }"]
            out += ["}", ""]
        for fn in m.functions:
            out += [f"export function {fn}(item: any, store: any): any {{", "  let value: any;"]
            out += [*self.body(calls, "  ", ";", 4), "  return value;", "}", ""]
        return "\n".join(out) + "\n"

    def go(self, m: Module, peers: list[Module]) -> str:
        out = [f"package {m.package.rsplit('/', 1)[-1]}", "", "import ("]
        calls = list(m.functions)
        for p in {p.package: p for p in peers if p.package != m.package}.values():
            out.append(f'\t"example.com/acme/{p.package}"')
            calls.append(f"{p.package.rsplit('/', 1)[-1]}.{p.functions[0]}")
        out += [")", ""]
        for cls in m.classes:
            out += (
                [f"// {cls} is a thing.", f"type {cls} struct {{"]
                + [f"\t{f.capitalize()} int" for f in FIELDS[:4]]
                + ["}", ""]
            )
            for method in self.rng.sample(COMMON_METHODS, 2):
                out += [
                    f"func (s *{cls}) {method.capitalize()}(item *{cls}, store Store) int {{",
                    "\tvar value int",
                ]
                out += [*self.body(calls, "\t", "", 3), "\treturn value", "}", ""]
        for fn in m.functions:
            out += [f"func {fn}(item *{m.classes[0]}, store Store) int {{", "\tvar value int"]
            out += [*self.body(calls, "\t", "", 4), "\treturn value", "}", ""]
        return "\n".join(out) + "\n"

    def java(self, m: Module, peers: list[Module]) -> str:
        out = [f"package {m.package};", ""]
        calls = [f"{m.classes[0]}.{f}" for f in m.functions]
        for p in peers:
            out.append(f"import {p.package}.{p.classes[0]};")
            calls.append(f"{p.classes[0]}.{p.functions[0]}")
        out += ["", f"/** {m.classes[0]}. */", f"public class {m.classes[0]} {{"]
        out += [f"    private int {f};" for f in FIELDS[:4]]
        for fn in m.functions:
            out += [
                "",
                f"    public static int {fn}(Item item, Store store) {{",
                "        int value = 0;",
            ]
            out += [*self.body(calls, "        ", ";", 4), "        return value;", "    }"]
        out.append("}")
        return "\n".join(out) + "\n"

    def repository(self) -> dict[str, str]:
        self.plan()
        files = {m.path: self.render(m) for m in self.modules}
        for i in range(self.files - len(files)):
            noun = self.rng.choice(self.modules)
            if i % 2:
                files[f"docs/{i}.md"] = (
                    f"# {noun.classes[0]}\n\nCall `{noun.functions[0]}` to do it.\n"
                )
            else:
                files[f"deploy/{i}.yaml"] = f"job: {noun.package}\nentry: {noun.functions[1]}\n"
        return files

    def change(
        self, files: dict[str, str], lines: int = 1_000, count: int = 5
    ) -> dict[str, tuple[str, list[tuple[int, int]]]]:
        """path -> (its text at head, added runs): a new function in each of `count`
        modules (two of each language, in turn), `lines` added lines in all."""
        picked: list[Module] = []
        for pair in zip(
            *([m for m in self.modules if m.language == lang][:2] for lang, _ in LANGUAGES),
            strict=False,
        ):
            picked += pair
        changed = {}
        for m in picked[:count]:
            old = files[m.path].rstrip("\n").split("\n")
            block = self.added_block(m, lines // count - 2)
            at = len(old) - 1 if m.language == "java" else len(old)  # Java: inside the class
            new = old[:at] + block + old[at:]
            # and a line changed in the body of the module's first function and of a
            # method (names every module has), which other files call.
            edits = [
                self.body_line(new, f" {m.functions[0]}("),
                self.body_line(new, " get(", " Get(", " save(", " Save("),
            ]
            comment = "#" if m.language == "python" else "//"
            for n in edits:
                if n is not None:
                    new[n - 1] += f"  {comment} changed"
            runs = sorted([(n, n) for n in edits if n is not None] + [(at + 1, at + len(block))])
            changed[m.path] = ("\n".join(new) + "\n", runs)
        return changed

    @staticmethod
    def body_line(lines: list[str], *heads: str) -> int | None:
        """The 1-based number of the second body line of the first definition whose line
        holds one of `heads`."""
        for i, line in enumerate(lines):
            if any(h in line for h in heads) and line.rstrip().endswith(("{", ":")):
                return i + 3
        return None


def cost(analysis: SymbolAnalysis) -> str:
    return f"(read {analysis.stats.read:,} files, parsed {analysis.stats.parsed:,})"


def git_sha(text: str) -> str:
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


Runs = list[tuple[int, int]]
Reader = Callable[[str], Awaitable[bytes | None]]


def unified_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """The change of one file as `git diff` writes it (both texts end with a newline)."""
    a, b = old.split("\n")[:-1], new.split("\n")[:-1]
    index = f"index {git_sha(old)[:7]}..{git_sha(new)[:7]} 100644"
    out = [f"diff --git a/{path} b/{path}", index, f"--- a/{path}", f"+++ b/{path}"]
    # No junk heuristic: the added runs are exactly the inserted and edited lines.
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        out.append(f"@@ -{hunk_range(first[1], last[2])} +{hunk_range(first[3], last[4])} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [f" {line}" for line in a[a1:a2]]
            else:
                out += [f"-{line}" for line in a[a1:a2]] + [f"+{line}" for line in b[b1:b2]]
    return "\n".join(out) + "\n"


def hunk_range(start: int, stop: int) -> str:
    """A hunk header's `first,count` for the 0-based lines [start, stop)."""
    count = stop - start
    return str(start + 1) if count == 1 else f"{start + 1 if count else start},{count}"


Build = Callable[[MemoryFactsCache], Awaitable[tuple[float, BuiltContext]]]


async def build(
    diff: str, files: list[str], read: Reader, shas: dict[str, str], cache: MemoryFactsCache
) -> tuple[float, BuiltContext]:
    """One whole build of the change (its seconds), its index sharing `cache`."""
    meta = PullRequestMeta(title="Add the changed functions", body="In five modules.")
    start = time.perf_counter()
    built = await build_context(
        meta, diff, files, read, indexing=Indexing(blob_sha=shas.get, cache=cache)
    )
    return time.perf_counter() - start, built


def built_summary(built: BuiltContext) -> str:
    kinds = Counter(s.kind for s in built.sections)
    by_kind = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
    return (
        f"{built.tokens:,} tokens of {built.usable:,} usable, {len(built.sections)} sections "
        f"({by_kind}), {len(built.omitted)} listed not included"
    )


def goal_note(elapsed: float, goal: float | None) -> str:
    return f"  goal {goal} s: {'met' if elapsed < goal else 'MISSED'}" if goal else ""


async def profile_builds(run: Build) -> None:
    """A cold and a cached build under cProfile: bot/'s top functions by cumulative time."""
    cache = MemoryFactsCache()
    for label in ("cold", "cached"):
        profiler = cProfile.Profile()
        profiler.enable()
        elapsed, _ = await run(cache)
        profiler.disable()
        print(f"  profile, whole build {label} ({elapsed:.2f} s under the profiler):")
        print(f"    {'cumulative':>10} {'own':>7} {'calls':>9}  function")
        for line in top_functions(pstats.Stats(profiler), 10):
            print(f"    {line}")


def top_functions(stats: pstats.Stats, count: int) -> list[str]:
    """The `count` functions of bot/ with the most cumulative time."""
    root = str(Path(__file__).resolve().parent.parent / "bot") + "/"
    table: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    rows = sorted((r for r in table.items() if r[0][0].startswith(root)), key=lambda r: -r[1][3])
    return [
        f"{ct:9.3f}s {tt:6.3f}s {nc:9,}  bot/{path[len(root) :]}:{line} {name}"
        for (path, line, name), (_, nc, tt, ct, _) in rows[:count]
    ]


async def analyse(
    files: list[str], read: Reader, heads: dict[str, str], changes: dict[str, Runs], **options: Any
) -> tuple[float, SymbolAnalysis, dict[str, int]]:
    start = time.perf_counter()
    analysis = SymbolAnalysis(files, read, heads, changes, **options)
    used = refs = unresolved = 0
    symbols = []
    for path in changes:
        symbols += analysis.changed_symbols(path)
    for path in changes:
        result = await analysis.resolve_used(path)
        used += len(result.used)
        unresolved += len(result.unresolved)
    for found in await analysis.references(symbols):
        refs += len(found.files)
    elapsed = time.perf_counter() - start
    return (
        elapsed,
        analysis,
        {
            "symbols": len(symbols),
            "used": used,
            "unresolved": unresolved,
            "referencing_files": refs,
        },
    )


async def run_size(size: int, repeats: int, use_git: bool, profile: bool) -> None:
    gen = Generator(size)
    t = time.perf_counter()
    tree = gen.repository()
    change = gen.change(tree)
    diff = "".join(unified_diff(path, tree[path], text) for path, (text, _) in change.items())
    for path, (text, _) in change.items():
        tree[path] = text
    total = sum(len(t) for t in tree.values())
    added = sum(b - a + 1 for _, runs in change.values() for a, b in runs)
    print(
        f"\n{size:,} files ({total / 1e6:.0f} MB), change: {added} added lines "
        f"in {len(change)} files (generated in {time.perf_counter() - t:.1f} s)"
    )
    data = {p: t.encode() for p, t in tree.items()}
    shas = {p: git_sha(t) for p, t in tree.items()}

    async def read(path: str) -> bytes | None:
        return data.get(path)

    heads = {p: text for p, (text, _) in change.items()}
    changes = {p: runs for p, (_, runs) in change.items()}
    files = sorted(tree)
    colds, cacheds = [], []
    for _ in range(repeats):
        cache = MemoryFactsCache()
        cold, analysis, counts = await analyse(
            files, read, heads, changes, blob_sha=shas.get, cache=cache
        )
        cached, again, _ = await analyse(
            files, read, heads, changes, blob_sha=shas.get, cache=cache
        )
        colds.append(cold)
        cacheds.append(cached)
    goal = GOALS_S.get(size)
    cold, cached = statistics.median(colds), statistics.median(cacheds)
    print(f"  the analysis alone, found: {counts}")
    print(f"  cold:   {cold:6.2f} s  {cost(analysis)}{goal_note(cold, goal)}")
    print(f"  cached: {cached:6.2f} s  {cost(again)}{goal_note(cached, goal)}")
    if use_git:
        await run_git(tree, files, heads, changes, repeats)
    run = functools.partial(build, diff, files, read, shas)
    await run_build(run, diff, repeats, goal)
    if profile:
        await profile_builds(run)


async def run_build(run: Build, diff: str, repeats: int, goal: float | None) -> None:
    """The whole build, cold (a fresh cache) and cached (the first build's cache again)."""
    colds, cacheds = [], []
    for _ in range(repeats):
        cache = MemoryFactsCache()
        cold, first = await run(cache)
        cached, second = await run(cache)
        colds.append(cold)
        cacheds.append(cached)
    added = sum(b - a + 1 for runs in first.changed_lines.values() for a, b in runs)
    print(f"  the whole build (the diff: {len(diff):,} characters, {added} added lines)")
    cold, cached = statistics.median(colds), statistics.median(cacheds)
    print(f"  cold:   {cold:6.2f} s  {built_summary(first)}{goal_note(cold, goal)}")
    print(f"  cached: {cached:6.2f} s  {built_summary(second)}{goal_note(cached, goal)}")


async def run_git(tree: dict[str, str], files: list[str], heads, changes, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for path, text in tree.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        for args in (
            ["init", "-q"],
            ["add", "."],
            ["-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "tree"],
        ):
            await asyncio.to_thread(
                subprocess.run, ["git", *args], cwd=root, check=True, capture_output=True
            )
        for label, grep in (("git, read", None), ("git grep", GitGrep(root))):
            times = []
            for _ in range(repeats):
                async with LocalRepo(root) as local:
                    elapsed, analysis, counts = await analyse(
                        local.files, local.read, heads, changes, grep=grep
                    )
                times.append(elapsed)
            print(
                f"  {label + ':':10}{statistics.median(times):6.2f} s  {cost(analysis)}  {counts}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 50_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--git", action="store_true", help="also time git grep over a git repository"
    )
    parser.add_argument("--profile", action="store_true", help="also profile the whole build")
    args = parser.parse_args()
    for size in args.sizes:
        asyncio.run(run_size(size, args.repeats, args.git, args.profile))


if __name__ == "__main__":
    main()
