"""The ground truth of bench/context_precision.py: what a reviewer of a change needs to read,
found with the bench's own tree-sitter analysis (bench/precision_syntax.py) of the
repository at the change's head; nothing here calls the context builder.

- Diff lines: per file, the head-side lines its hunks span (git's three context lines
  included); added lines are the `+` lines.
- Used definitions: the names the added lines use (`used_names`), each resolved to the
  definitions of that name in the same language family (Python, Go, JS/TS, Java) anywhere
  in the head tree (a name index of the tree, built only for the names asked: `git grep`
  finds the files that hold a name as a word, those are parsed, cached by blob). A name
  defined in more than `AMBIGUOUS` places is skipped as ambiguous, and so is a definition
  that encloses the use (recursion, a class naming itself).
- Changed symbols: per added line, the innermost definition around it.
- Referencing files of a changed symbol: other files of its language family where its name
  is an identifier token; at most `MAX_REFERENCING` files a symbol, non-test files first,
  then nearest by path (directory steps), then by path; a file that defines a symbol of
  the same name itself is not one (its uses mean its own). A symbol whose name is defined
  in more than `AMBIGUOUS` places, a dunder name or a name such as `constructor` or `main`
  is skipped. Names are matched, not types: a method `progress` is referenced by every
  `x.progress` of the family, whatever `x` is.
"""

from __future__ import annotations

import re
import subprocess
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from tree_sitter import Tree

from bench.precision_metrics import Definition, Reference, UsedDefinition, needed_lines
from bench.precision_syntax import (
    FAMILY,
    GLOBS,
    definitions_in,
    family_of,
    grammar_of,
    parser,
    reference_lines,
    used_names,
)

AMBIGUOUS = 5  # a name defined in more places than this is not resolved
MAX_REFERENCING = 10  # referencing files counted per changed symbol
MAX_GREP_CANDIDATES = 60  # files checked token by token per changed symbol, at most
MAX_FILE_BYTES = 1_000_000  # a larger code file is generated or bundled: not read
_SKIPPED_SYMBOLS = frozenset({"constructor", "main", "init", "New", "String", "Error"})
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|testdata|e2e)/|(^|/)test_[^/]*\.py$|_test\.(py|go)$"
    r"|\.(test|spec)\.[jt]sx?$|Tests?\.java$"
)


def is_test(path: str) -> bool:
    return _TEST_PATH.search(path) is not None


# --- reading a repository at a commit ---------------------------------------------------


def git(git_dir: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, check=True
    )
    return done.stdout.decode("utf-8", "replace")


class Blobs:
    """Blobs by object id through one `git cat-file --batch`, with the definitions found in
    each kept (blobs recur from commit to commit) and the last parsed trees cached."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._batch = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._definitions: dict[tuple[str, str], list[tuple[str, int, int, int]]] = {}
        self._trees: OrderedDict[str, tuple[bytes, Tree]] = OrderedDict()

    def read(self, blob: str) -> bytes:
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(f"{blob}\n".encode())
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) < 3:
            return b""
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)
        return data if header[1] == b"blob" else b""

    def parsed(self, blob: str, grammar: str) -> tuple[bytes, Tree]:
        if blob in self._trees:
            self._trees.move_to_end(blob)
            return self._trees[blob]
        data = self.read(blob)
        found = (data, parser(grammar).parse(data))
        self._trees[blob] = found
        if len(self._trees) > 256:
            self._trees.popitem(last=False)
        return found

    def definitions(self, blob: str, grammar: str) -> list[tuple[str, int, int, int]]:
        key = (blob, grammar)
        if key not in self._definitions:
            _, tree = self.parsed(blob, grammar)
            self._definitions[key] = list(definitions_in(tree.root_node, grammar))
        return self._definitions[key]

    def close(self) -> None:
        self._batch.kill()
        self._batch.wait()


@dataclass
class Checkout:
    """A commit's tree: its code files' blob ids (those of at most `MAX_FILE_BYTES`),
    definitions found by name on demand."""

    blobs: Blobs
    commit: str
    entries: dict[str, str] = field(default_factory=dict)  # path -> blob id

    def __post_init__(self) -> None:
        listed = git(self.blobs.git_dir, "ls-tree", "-r", "-z", "-l", self.commit)
        for entry in listed.split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if (
                len(parts) == 4
                and parts[1] == "blob"
                and grammar_of(path)
                and int(parts[3]) <= MAX_FILE_BYTES
            ):
                self.entries[path] = parts[2]

    def grep(self, names: Iterable[str], family: str) -> dict[str, list[str]]:
        """Files of the family holding each name as a word: name -> paths."""
        wanted = sorted(set(names))
        found: dict[str, list[str]] = {n: [] for n in wanted}
        if not wanted:
            return found
        args = ["grep", "-I", "-o", "-w", "-F"]
        for name in wanted:
            args += ["-e", name]
        try:
            out = git(self.blobs.git_dir, *args, self.commit, "--", *GLOBS[family])
        except subprocess.CalledProcessError:
            return found  # exit 1: nothing matched
        seen: set[tuple[str, str]] = set()
        prefix = f"{self.commit}:"
        for line in out.splitlines():
            rest = line.removeprefix(prefix)
            path, _, name = rest.rpartition(":")
            if name in found and (name, path) not in seen and path in self.entries:
                seen.add((name, path))
                found[name].append(path)
        return found

    def definitions_of(self, names: Iterable[str], family: str) -> dict[str, list[Definition]]:
        """Every definition of each name in the family's files (only files that hold the
        name are parsed: a definition names itself)."""
        holders = self.grep(names, family)
        out: dict[str, list[Definition]] = {}
        for name, paths in holders.items():
            defs = []
            for path in paths:
                grammar = grammar_of(path)
                assert grammar is not None
                for found, start, signature, end in self.blobs.definitions(
                    self.entries[path], grammar
                ):
                    if found == name:
                        defs.append(Definition(path, name, start, signature, end))
            out[name] = defs
        return out

    def text_and_tree(self, path: str) -> tuple[bytes, Tree] | None:
        grammar = grammar_of(path)
        blob = self.entries.get(path)
        if grammar is None or blob is None:
            return None
        return self.blobs.parsed(blob, grammar)


def path_distance(a: str, b: str) -> int:
    """Steps between two files' directories."""
    pa, pb = PurePosixPath(a).parent.parts, PurePosixPath(b).parent.parts
    common = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        common += 1
    return len(pa) + len(pb) - 2 * common


# --- one change -------------------------------------------------------------------------


@dataclass
class Truth:
    diff_lines: dict[str, set[int]]
    used: list[UsedDefinition]
    changed: list[Definition]
    references: list[Reference]

    def needed(self) -> dict[str, set[int]]:
        return needed_lines(self.diff_lines, self.used, self.changed, self.references)


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def diff_lines(diff: str) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """Per file at head: the lines its hunks span (context included), and its added lines."""
    spans: dict[str, set[int]] = {}
    added: dict[str, set[int]] = {}
    path: str | None = None
    header = False  # between `diff --git` and the file's first hunk
    number = 0
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            path, header = None, True
        elif header and line.startswith("+++ "):
            target = line[4:]
            path = target[2:] if target.startswith("b/") else None
        elif path is not None and (match := _HUNK.match(line)):
            header = False
            number = int(match.group(1))
            count = int(match.group(2) if match.group(2) is not None else 1)
            spans.setdefault(path, set()).update(range(number, number + count))
        elif path is not None and line[:1] == "+":
            added.setdefault(path, set()).add(number)
            number += 1
        elif path is not None and line[:1] == " ":
            number += 1
    return spans, added


def ground_truth(checkout: Checkout, diff: str) -> Truth:
    """What the change's reader needs, at the checkout (its head)."""
    spans, added = diff_lines(diff)
    changed: dict[tuple[str, int], Definition] = {}
    uses: dict[str, set[tuple[str, str, int]]] = {}  # family -> (name, path, line)
    for path, lines in added.items():
        parsed = checkout.text_and_tree(path)
        grammar = grammar_of(path)
        if parsed is None or grammar is None:
            continue
        family = FAMILY[grammar]
        _, tree = parsed
        defs = [
            Definition(path, name, a, s, b)
            for name, a, s, b in checkout.blobs.definitions(checkout.entries[path], grammar)
        ]
        for line in lines:
            around = [d for d in defs if d.start <= line <= d.end]
            if around:
                inner = min(around, key=lambda d: d.end - d.start)
                changed[(path, inner.start)] = inner
        rows = {n - 1 for n in lines}
        for name, line in used_names(tree.root_node, grammar, rows):
            uses.setdefault(family, set()).add((name, path, line))
    used: list[UsedDefinition] = []
    for family, found in sorted(uses.items()):
        index = checkout.definitions_of({name for name, _, _ in found}, family)
        for name in sorted({n for n, _, _ in found}):
            at = [(p, line) for n, p, line in found if n == name]
            candidates = [
                d
                for d in index.get(name, [])
                if not all(d.path == p and d.start <= line <= d.end for p, line in at)
            ]
            if 0 < len(index.get(name, [])) <= AMBIGUOUS and candidates:
                used.append(UsedDefinition(name, family, tuple(candidates)))
    symbols = sorted(changed.values(), key=lambda d: (d.path, d.start))
    return Truth(spans, used, symbols, referencing(checkout, symbols))


def referencing(checkout: Checkout, symbols: Sequence[Definition]) -> list[Reference]:
    """The references of each changed symbol (the module docstring's rules)."""
    out: list[Reference] = []
    by_family: dict[str, list[Definition]] = {}
    for s in symbols:
        family = family_of(s.path)
        if family and not (s.name.startswith("__") or s.name in _SKIPPED_SYMBOLS):
            by_family.setdefault(family, []).append(s)
    for family, wanted in sorted(by_family.items()):
        names = {s.name for s in wanted}
        index = checkout.definitions_of(names, family)
        holders = checkout.grep(names, family)
        done: set[str] = set()
        for s in wanted:
            if s.name in done or len(index.get(s.name, [])) > AMBIGUOUS:
                continue
            done.add(s.name)
            # A file with its own definition of the name means its own by it.
            homes = {d.path for d in index.get(s.name, [])}
            candidates = sorted(
                (p for p in holders.get(s.name, []) if p not in homes),
                key=lambda p: (is_test(p), path_distance(p, s.path), p),
            )
            kept = 0
            for path in candidates[:MAX_GREP_CANDIDATES]:
                parsed = checkout.text_and_tree(path)
                if parsed is None:
                    continue
                lines = reference_lines(*parsed, s.name)
                if not lines:
                    continue
                out.append(Reference(s.name, path, lines))
                kept += 1
                if kept >= MAX_REFERENCING:
                    break
    return out
