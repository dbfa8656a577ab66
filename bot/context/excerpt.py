"""Which lines of a file to show beside a change, without a parser: a file's head (its
licence header and its import block) is found and left out, and the lines near the names
the change touches are found by name.

- A licence header: the leading comment blocks (`#`, `//`, `/* */`, `<!-- -->`...) up to the
  last of them that mentions a licence, a copyright or an SPDX identifier.
- An import block: Python imports (with their parenthesised continuations, and the
  `try:`/`if TYPE_CHECKING:` around them), JavaScript/TypeScript imports, re-exports and
  `require`s, Go's `package` and `import (...)`, Java/Kotlin `package` and imports; the
  blank lines after either belong to it.
- The change's names (`ChangeNames`): the definitions its changed lines are in or define,
  the identifiers of its changed lines, and the other names its files define.
- `name_ranges`: the lines of a file near those names, a definition of one with the lines
  after it, a use of one with a few lines either side; the caller shows them first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LICENCE = re.compile(r"licen[cs]e|copyright|spdx-license-identifier|\(c\)\s*\d{4}", re.I)
IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
# A definition line and the name it defines: Python, JS/TS, Go, Rust, Java/Kotlin, C-like.
DEFINITION = re.compile(
    r"^\s*(?:export\s+)?(?:default\s+)?(?:(?:public|private|protected|internal|static|final"
    r"|abstract|async|override|suspend|open|data|sealed|pub(?:\([\w ]+\))?|unsafe|extern)\s+)*"
    r"(?:def|class|function\*?|func|interface|type|struct|enum|trait|impl|fun|object|record"
    r"|const|let|var|fn)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)"
)
# A method of a class body, JS or Java style: `  name(args) {`, `  public Foo name(args) {`.
METHOD = re.compile(
    r"^\s+(?:[\w<>\[\], ?]+\s+)?([A-Za-z_$][\w$]*)\s*\([^;]*\)\s*(?::\s*[^{;]+)?"
    r"(?:throws\s+[\w., ]+)?\{\s*$"
)
_NOT_NAMES = frozenset(
    {"and", "any", "args", "as", "assert", "async", "await", "bool", "boolean", "break", "byte",
     "case", "catch", "char", "class", "const", "continue", "data", "default", "def", "defer",
     "del", "delete", "do", "double", "elif", "else", "enum", "err", "error", "except", "export",
     "extends", "false", "fallthrough", "final", "finally", "float", "for", "from", "func",
     "function", "get", "go", "goto", "if", "impl", "implements", "import", "in", "init",
     "instanceof", "int", "interface", "is", "kwargs", "lambda", "len", "let", "long", "map",
     "main", "match", "mod", "new", "nil", "none", "nonlocal", "not", "null", "number", "object",
     "or", "package", "pass", "print", "private", "protected", "public", "raise", "range",
     "return", "self", "set", "short", "static", "str", "string", "struct", "super", "switch",
     "this", "throw", "throws", "true", "try", "type", "typeof", "undefined", "unsafe", "use",
     "value", "var", "void", "while", "with", "yield", "None", "True", "False", "cls", "ctx"}
)  # fmt: skip
MIN_NAME = 3  # characters: shorter identifiers name too much
MAX_USES = 10  # a name used on more lines of a file than this does not make a line relevant
DEFINITION_AFTER = 14  # lines shown after a definition's first line
DEFINITION_BEFORE = 2  # ...and before it (decorators, annotations, a doc comment's end)
USE_AROUND = 4  # lines shown either side of a use
MERGE_GAP = 2  # ranges this close are one (a skip line costs about what a line does)
MAX_LABEL_NAMES = 3


@dataclass(frozen=True)
class Head:
    """Lines at the top of a file that say little about a change: `what` is "licence
    header" or "imports"."""

    first: int  # 1-based, inclusive
    last: int
    what: str


@dataclass(frozen=True)
class Shown:
    """A range of lines to show and what it holds; `weight` scales its value (1.0: as
    relevant as a file's best part)."""

    first: int
    last: int
    label: str = ""
    weight: float = 1.0


@dataclass(frozen=True)
class ChangeNames:
    """`changed`: the definitions the changed lines are in or define; `used`: the other
    identifiers of the changed lines; `defined`: the other names the changed files define."""

    changed: frozenset[str] = frozenset()
    used: frozenset[str] = frozenset()
    defined: frozenset[str] = frozenset()


# --- a file's head -----------------------------------------------------------------------


def file_head(lines: Sequence[str], language: str | None) -> list[Head]:
    """The licence header and the import block at the top of a file, if any."""
    heads: list[Head] = []
    start = 1
    licence = licence_header(lines)
    if licence is not None:
        heads.append(Head(licence[0], _blank_after(lines, licence[1]), "licence header"))
        start = heads[-1].last + 1
    imports = import_block(lines, start, language)
    if imports is not None:
        heads.append(Head(imports[0], _blank_after(lines, imports[1]), "imports"))
    return heads


def licence_header(lines: Sequence[str]) -> tuple[int, int] | None:
    """The leading comment blocks up to the last that mentions a licence, if one does."""
    found: tuple[int, int] | None = None
    first: int | None = None
    closing: str | None = None  # the end of the block comment we are in
    for n, line in enumerate(lines, start=1):
        stripped = line.strip()
        if closing is not None:
            if closing in stripped:
                closing = None
        elif not stripped:
            continue
        elif stripped.startswith(("/*", "<!--", "{-")):
            end = {"/*": "*/", "<!": "-->", "{-": "-}"}[stripped[:2]]
            closing = None if end in stripped[2:] else end
        elif not stripped.startswith(("#", "//", "--", ";;", "%")) or stripped.startswith("#["):
            break
        first = n if first is None else first
        if LICENCE.search(line):
            found = (first, n)
        elif found is not None and n == found[1] + 1:
            found = (first, n)  # the rest of the block that mentions it
    if found is None:
        return None
    # The whole of the last block: up to its end (the comment it is in closes, or the
    # next line is not a comment).
    last = found[1]
    while last < len(lines) and _comment_line(lines[last]) and lines[last].strip():
        last += 1
    return found[0], last


def _comment_line(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(("#", "//", "/*", "*", "<!--", "-->", "--", ";;")) and not (
        stripped.startswith("#[")
    )


def _blank_after(lines: Sequence[str], last: int) -> int:
    while last < len(lines) and not lines[last].strip():
        last += 1
    return last


_PY_IMPORT = re.compile(r"^\s*(?:import\s+[\w.]|from\s+[\w.]+\s+import\b)")
_PY_GUARD = re.compile(
    r"^(?:try\s*:|except\b[^:]*:|else\s*:|finally\s*:|if\s+(?:typing\.)?TYPE_CHECKING\s*:)"
    r"\s*(?:#.*)?$|^\s+pass\s*$"
)
_JS_IMPORT = re.compile(
    r"""^(?:import\b(?!\s*\()|export\s+(?:\*|type\s*\{|\{)[^;]*\bfrom\b"""
    r"""|(?:const|let|var)\s+[\w${}\s,:]+=\s*require\s*\(|require\s*\(|["']use \w+["'];?$)"""
)
_GO_IMPORT = re.compile(r"^(?:package\s+\w+|import\s+(?:[\w.]+\s+)?\"[^\"]*\"|import\s*\()")
_JAVA_IMPORT = re.compile(r"^(?:package\s+[\w.]+\s*;?|import\s+(?:static\s+)?[\w.*]+\s*;?)\s*$")
_IMPORTS = {
    "python": _PY_IMPORT,
    "javascript": _JS_IMPORT,
    "typescript": _JS_IMPORT,
    "go": _GO_IMPORT,
    "java": _JAVA_IMPORT,
    "kotlin": _JAVA_IMPORT,
}


def import_block(lines: Sequence[str], start: int, language: str | None) -> tuple[int, int] | None:
    """The first run of import statements from line `start` on, with their continuations
    and the blank lines and comments between them; before it only blank lines, comments,
    a module docstring or a directive may stand."""
    pattern = _IMPORTS.get(language or "")
    if pattern is None:
        return None
    first: int | None = None
    last = 0
    n = start
    while n <= len(lines):
        line = lines[n - 1]
        stripped = line.strip()
        if pattern.match(line) or (language == "python" and first and _PY_GUARD.match(line)):
            first = n if first is None else first
            n = _statement_end(lines, n, language)
            last = n
        elif not stripped or _comment_line(line):
            pass
        elif (
            first is None
            and language == "python"
            and stripped[:4].lstrip("rRuUbB")[:3]
            in (
                '"""',
                "'''",
            )
        ):
            n = _docstring_end(lines, n)
        else:
            break
        n += 1
    return (first, last) if first is not None else None


def _statement_end(lines: Sequence[str], n: int, language: str | None) -> int:
    """The last line of the import statement starting at line `n` (a bracketed list of
    names, a Go import block, a JS import whose names span lines)."""
    line = lines[n - 1]
    if language == "go":
        if re.match(r"^import\s*\(\s*$", line):
            return next((m for m in range(n + 1, len(lines) + 1) if lines[m - 1].strip() == ")"), n)
        return n
    depth = _depth(line)
    js = language in ("javascript", "typescript")
    ended = re.search(r"""\bfrom\b|["']\s*;?\s*$""", line) is not None
    if js and line.lstrip().startswith("import") and depth <= 0 and not ended:
        depth = 1  # `import x,` continued: up to its `from`
    m = n
    while depth > 0 and m < len(lines):
        m += 1
        depth += _depth(lines[m - 1])
        if language in ("javascript", "typescript") and re.search(r"\bfrom\s*[\"']", lines[m - 1]):
            break
    return m


def _depth(line: str) -> int:
    code = line.split("#", 1)[0] if line.lstrip().startswith(("from", "import")) else line
    return code.count("(") + code.count("{") - code.count(")") - code.count("}")


def _docstring_end(lines: Sequence[str], n: int) -> int:
    text = lines[n - 1].strip().lstrip("rRuUbB")
    quote = text[:3]
    if text.count(quote) >= 2 and len(text) >= 6:
        return n
    for m in range(n + 1, len(lines) + 1):
        if quote in lines[m - 1]:
            return m
    return len(lines)


# --- the change's names ------------------------------------------------------------------


def names_in(text: str) -> set[str]:
    """The identifiers of `text` worth finding elsewhere (not keywords, not too short)."""
    return {
        w
        for w in IDENTIFIER.findall(text)
        if len(w) >= MIN_NAME and w not in _NOT_NAMES and not w.startswith("__")
    }


_STRING = re.compile(r"""(["'`])(?:\\.|(?!\1).)*\1""")
_LINE_COMMENT = re.compile(r"(?:^|\s)(?:#|//).*$")
# A name as code writes it: called, an attribute, or shaped like no word of prose is
# (`snake_case`, `camelCase`, `PascalCase`, `with2digits`).
_CODE_NAME = re.compile(
    r"(?:(?<=\.)[A-Za-z_$][\w$]*|[A-Za-z_$][\w$]*(?=\s*\()"
    r"|[A-Za-z$]*(?:_|\d|[a-z][A-Z])[\w$]*)"
)


def code_names(text: str) -> set[str]:
    """The names a changed line of code uses: in its code (its strings and comments left
    out), those written as only code writes them (see `_CODE_NAME`), so that the words of
    a docstring or a comment are not taken for names."""
    stripped = text.strip()
    if not stripped or stripped.startswith(("*", "/*", "#", "//", "<!--")):
        return set()
    code = _LINE_COMMENT.sub("", _STRING.sub("", text))
    return names_in(" ".join(m.group(0) for m in _CODE_NAME.finditer(code)))


def defined_name(line: str) -> str | None:
    """The name a definition line defines (`def f(`, `class C`, `func (r T) M(`...)."""
    match = DEFINITION.match(line) or METHOD.match(line)
    if match is None:
        return None
    name = match.group(1)
    return name if name not in _NOT_NAMES and len(name) >= MIN_NAME else None


def definitions(lines: Sequence[str]) -> list[tuple[str | None, int] | None]:
    """Per line: None when blank, else the name it defines (or None) and its indentation."""
    return [(defined_name(line), _indent(line)) if line.strip() else None for line in lines]


def enclosing_definition(
    found: Sequence[tuple[str | None, int] | None], number: int, reach: int = 400
) -> str | None:
    """The name of the nearest definition at or above line `number` that is indented less
    than it (or is that line), looking at most `reach` lines up; `found` is the file's
    `definitions`."""
    if not 1 <= number <= len(found):
        return None
    indent = 1 << 30  # a definition encloses the lines indented more than it
    for m in range(number, max(number - reach, 0), -1):
        line = found[m - 1]
        if line is None:
            continue
        name, level = line
        if name is not None and (m == number or level < indent):
            return name
        indent = min(indent, level)
    return None


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip())


def change_names(files: Iterable[tuple[Sequence[str], list[int], list[str]]]) -> ChangeNames:
    """The names of a change from each changed file's (head lines, head-side numbers of
    its changed lines, the text of its changed lines)."""
    changed: set[str] = set()
    used: set[str] = set()
    defined: set[str] = set()
    for lines, numbers, texts in files:
        for text in texts:
            used |= code_names(text)
            name = defined_name(text)
            if name is not None:
                changed.add(name)
        found = definitions(lines)
        for number in set(numbers):
            name = enclosing_definition(found, number)
            if name is not None:
                changed.add(name)
        defined.update(line[0] for line in found if line is not None and line[0] is not None)
    return ChangeNames(
        frozenset(changed), frozenset(used - changed), frozenset(defined - changed - used)
    )


# --- the lines near them -------------------------------------------------------------------


def name_ranges(lines: Sequence[str], names: ChangeNames, heads: Sequence[Head]) -> list[Shown]:
    """The ranges of `lines` near the change's names, outside the file's head, merged: a
    definition of one (weight 1.2, or 0.7 for a name the changed files merely define), a use
    of one (1.0, or 0.6), and in the head an import line that names a changed definition
    (1.0, that line alone: the change touches it)."""
    in_head = {n for h in heads for n in range(h.first, h.last + 1)}
    hits = _hits(lines, names, in_head)
    clipped = []
    for first, last, name, weight, what in hits:
        kept = [n for n in range(max(first, 1), min(last, len(lines)) + 1) if n not in in_head]
        if what == "imports":
            kept = [first]
        for a, b in _runs(kept):
            clipped.append((a, b, name, weight, what))
    return _merge(clipped, in_head)


def _hits(
    lines: Sequence[str], names: ChangeNames, in_head: set[int]
) -> list[tuple[int, int, str, float, str]]:
    """(first, last, name, weight, what) of each definition, use or import of a name."""
    wanted = names.changed | names.used
    every = wanted | names.defined
    hits: list[tuple[int, int, str, float, str]] = []
    uses: dict[str, list[int]] = {}
    for number, line in enumerate(lines, start=1):
        found = names_in(line) & every
        if not found:
            continue
        if number in in_head:  # a name it imports, not one in a module's path
            for name in sorted(names_in(_STRING.sub("", line)) & names.changed):
                hits.append((number, number, name, 1.0, "imports"))
            continue
        defines = defined_name(line)
        for name in sorted(found):
            if name == defines:
                weight = 1.2 if name in wanted else 0.7
                first, last = number - DEFINITION_BEFORE, number + DEFINITION_AFTER
                hits.append((first, last, name, weight, "defines"))
            else:
                uses.setdefault(name, []).append(number)
    for name, numbers in uses.items():
        if len(numbers) > MAX_USES:
            continue
        weight = 1.0 if name in wanted else 0.6
        for number in numbers:
            hits.append((number - USE_AROUND, number + USE_AROUND, name, weight, "uses"))
    return hits


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


def _merge(hits: list[tuple[int, int, str, float, str]], in_head: set[int]) -> list[Shown]:
    """Hits joined where they overlap or nearly touch (never across a line of the head);
    a range's weight is its best hit's, its label the names it defines and uses."""
    groups: list[tuple[int, int, list[tuple[str, str]], float]] = []
    for first, last, name, weight, what in sorted(hits):
        near = bool(groups) and first <= groups[-1][1] + MERGE_GAP + 1
        if near and not any(n in in_head for n in range(groups[-1][1] + 1, first)):
            a, b, named, best = groups[-1]
            named.append((what, name))
            groups[-1] = (a, max(b, last), named, max(best, weight))
        else:
            groups.append((first, last, [(what, name)], weight))
    return [Shown(a, b, _label(named), weight) for a, b, named, weight in groups]


def _label(named: list[tuple[str, str]]) -> str:
    """`defines f; uses g; uses h`: what a range holds, definitions first."""
    order = {"defines": 0, "imports": 1, "uses": 2}
    found = sorted(dict.fromkeys(named), key=lambda wn: order[wn[0]])
    return "; ".join(f"{what} {name}" for what, name in found[:MAX_LABEL_NAMES])
