"""The names a file's imports bind, and the package it declares.

Python (`import a.b as x`, `from .m import C as D`, imports inside functions too),
JavaScript/TypeScript (`import D, {A as B} from './m'`, `import * as ns`, `require`,
re-exports `export {A} from './m'`), Go (`import m "example.com/app/models"`), Java
(`import com.x.Foo;`, `import static com.x.Util.bar;`, `com.x.*`) and Kotlin
(`import com.x.Foo as Bar`). What a binding names is resolved to repository files by
bot/context/resolution.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tree_sitter import Node

from bot.context.symbols import Parsed, text_of


@dataclass(frozen=True)
class Binding:
    """`local` is what the file writes; `module` the module, package or path imported from,
    as written; `member` the name imported from it (None: the module itself; "default": a
    JS default export); `wildcard`: every name of `module` (`from m import *`, `a.b.*`)."""

    local: str
    module: str
    member: str | None
    line: int
    wildcard: bool = False


# Python statements that may hold an import (a function's lazy import, `if TYPE_CHECKING:`).
_PY_BLOCKS = frozenset(
    {"module", "block", "function_definition", "class_definition", "decorated_definition",
     "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
     "finally_clause", "with_statement", "for_statement", "while_statement"}
)  # fmt: skip
_JVM_IMPORT = re.compile(r"import\s+(static\s+)?([\w.]+?)(\.\*)?(?:\s+as\s+(\w+))?\s*;?\s*$")
_GO_VERSION = re.compile(r"^v\d+$")


def bindings(parsed: Parsed) -> list[Binding]:
    """Every binding the file's imports make, in file order."""
    family = parsed.family
    if family == "python":
        found = list(_python(parsed.root))
    elif family == "js":
        found = list(_js(parsed.root))
    elif parsed.grammar == "go":
        found = list(_go(parsed.root))
    elif family == "jvm":
        found = list(_jvm(parsed.root))
    else:
        found = []
    return sorted(found, key=lambda b: b.line)


def package_of(parsed: Parsed) -> str | None:
    """The package a Go, Java or Kotlin file declares."""
    for node in parsed.root.named_children:
        if node.type == "package_clause":
            return text_of(node).removeprefix("package").strip() or None
        if node.type in ("package_declaration", "package_header"):
            text = text_of(node).removeprefix("package").strip().rstrip(";").strip()
            return re.sub(r"\s+", "", text) or None
    return None


# --- Python -----------------------------------------------------------------------------


def _python(root: Node) -> Iterator[Binding]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "import_statement":
            yield from _python_import(node)
        elif node.type == "import_from_statement":
            yield from _python_from(node)
        elif node.type in _PY_BLOCKS:
            stack.extend(node.named_children)


def _python_import(node: Node) -> Iterator[Binding]:
    line = node.start_point.row + 1
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            module = text_of(child.child_by_field_name("name"))
            yield Binding(text_of(child.child_by_field_name("alias")), module, None, line)
        else:
            module = text_of(child)
            yield Binding(module.split(".")[0], module, None, line)


def _python_from(node: Node) -> Iterator[Binding]:
    line = node.start_point.row + 1
    module = re.sub(r"\s+", "", text_of(node.child_by_field_name("module_name")))
    if any(c.type == "wildcard_import" for c in node.named_children):
        yield Binding("*", module, None, line, wildcard=True)
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            member = text_of(child.child_by_field_name("name"))
            yield Binding(text_of(child.child_by_field_name("alias")), module, member, line)
        else:
            yield Binding(text_of(child), module, text_of(child), line)


# --- JavaScript and TypeScript ----------------------------------------------------------


def _js(root: Node) -> Iterator[Binding]:
    for node in root.named_children:
        if node.type == "import_statement":
            yield from _js_import(node)
        elif node.type == "export_statement" and node.child_by_field_name("source"):
            yield from _js_reexport(node)
        elif node.type in ("lexical_declaration", "variable_declaration"):
            yield from _js_require(node)


def _spec(node: Node | None) -> str:
    return text_of(node).strip("'\"`") if node is not None else ""


def _js_import(node: Node) -> Iterator[Binding]:
    source, line = _spec(node.child_by_field_name("source")), node.start_point.row + 1
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    for part in clause.named_children if clause is not None else []:
        if part.type == "identifier":
            yield Binding(text_of(part), source, "default", line)
        elif part.type == "namespace_import":
            names = [c for c in part.named_children if c.type == "identifier"]
            if names:
                yield Binding(text_of(names[0]), source, None, line)
        elif part.type == "named_imports":
            yield from _js_specifiers(part, source, line)


def _js_reexport(node: Node) -> Iterator[Binding]:
    source, line = _spec(node.child_by_field_name("source")), node.start_point.row + 1
    clause = next((c for c in node.named_children if c.type == "export_clause"), None)
    if clause is None:
        yield Binding("*", source, None, line, wildcard=True)
        return
    yield from _js_specifiers(clause, source, line)


def _js_specifiers(node: Node, source: str, line: int) -> Iterator[Binding]:
    """`{ a, b as c }` of an import or a re-export: each name, bound as its alias."""
    for spec in node.named_children:
        name = text_of(spec.child_by_field_name("name"))
        alias = spec.child_by_field_name("alias")
        if name:
            yield Binding(text_of(alias) or name, source, name, line)


def _js_require(node: Node) -> Iterator[Binding]:
    for declarator in node.named_children:
        value = declarator.child_by_field_name("value")
        target = declarator.child_by_field_name("name")
        if value is None or target is None or value.type != "call_expression":
            continue
        if text_of(value.child_by_field_name("function")) != "require":
            continue
        arguments = value.child_by_field_name("arguments")
        strings = [c for c in arguments.named_children if c.type == "string"] if arguments else []
        if not strings:
            continue
        source, line = _spec(strings[0]), declarator.start_point.row + 1
        if target.type == "identifier":
            yield Binding(text_of(target), source, None, line)
        elif target.type == "object_pattern":
            yield from _js_pattern(target, source, line)


def _js_pattern(pattern: Node, source: str, line: int) -> Iterator[Binding]:
    for part in pattern.named_children:
        if part.type == "shorthand_property_identifier_pattern":
            yield Binding(text_of(part), source, text_of(part), line)
        elif part.type == "pair_pattern":
            key, value = part.child_by_field_name("key"), part.child_by_field_name("value")
            if key is not None and value is not None and value.type == "identifier":
                yield Binding(text_of(value), source, text_of(key), line)


# --- Go, Java, Kotlin -------------------------------------------------------------------


def _go(root: Node) -> Iterator[Binding]:
    for node in root.named_children:
        if node.type != "import_declaration":
            continue
        specs = [c for c in node.named_children if c.type == "import_spec"]
        for group in (c for c in node.named_children if c.type == "import_spec_list"):
            specs += [c for c in group.named_children if c.type == "import_spec"]
        for spec in specs:
            path = _spec(spec.child_by_field_name("path"))
            alias = text_of(spec.child_by_field_name("name"))
            if not path or alias == "_":
                continue
            line = spec.start_point.row + 1
            if alias == ".":
                yield Binding("*", path, None, line, wildcard=True)
            else:
                yield Binding(alias or go_package_name(path), path, None, line)


def go_package_name(import_path: str) -> str:
    """The name a Go import binds by default: `example.com/app/v2` -> `app`,
    `gopkg.in/yaml.v3` -> `yaml`."""
    parts = [p for p in import_path.split("/") if p]
    if len(parts) > 1 and _GO_VERSION.match(parts[-1]):
        parts.pop()
    last = parts[-1] if parts else import_path
    if last.startswith("go-"):
        last = last[3:]
    return re.split(r"[.-]", last)[0] if "." in last or "-" in last else last


def _jvm(root: Node) -> Iterator[Binding]:
    for node in root.named_children:
        if node.type not in ("import_declaration", "import"):
            continue
        match = _JVM_IMPORT.match(" ".join(text_of(node).split()))
        if match is None:
            continue
        _, path, star, alias = match.groups()  # a static import: `module` names a class
        line = node.start_point.row + 1
        if star:
            yield Binding("*", path, None, line, wildcard=True)
            continue
        module, _, member = path.rpartition(".")
        if module and member:
            yield Binding(alias or member, module, member, line)
