"""Definitions in a source file, and the ones a change touches.

Files are read with tree-sitter through the grammars bot/context/widen.py loads (Python,
JavaScript, TypeScript/TSX, Go, Java, Rust, Ruby, C, C++, C#, PHP, Kotlin). The
definitions are the top-level and class-level ones (what another file can name): functions,
methods, constructors, classes, structs, interfaces, traits, enums, records, objects, type
aliases and modules; nothing defined inside a function body. Each carries its lines at head
(1-based, inclusive), the last line of its signature, its docstring or doc comment, and for
a class-like one the part before its first member (header, docstring, fields: a data
model's columns).

`changed_symbols` maps a change's added line runs to the innermost definitions they touch:
a changed method rather than its class, the class when its header or a field changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from tree_sitter import Node, Tree

from bot.context.classify import language_of
from bot.context.paths import suffix as path_suffix
from bot.context.widen import grammar_for, parser_for

Kind = Literal[
    "function", "method", "constructor", "class", "struct", "interface", "trait", "enum",
    "record", "object", "type", "module",
]  # fmt: skip
CLASS_KINDS = frozenset(
    {"class", "struct", "interface", "trait", "enum", "record", "object", "module"}
)
FUNCTION_KINDS = frozenset({"function", "method", "constructor"})

# grammar -> the family whose files may name each other's definitions.
FAMILIES: dict[str, str] = {
    "python": "python", "javascript": "js", "typescript": "js", "tsx": "js", "go": "go",
    "java": "jvm", "kotlin": "jvm", "rust": "rust", "ruby": "ruby", "c": "c", "cpp": "c",
    "csharp": "csharp", "php": "php",
}  # fmt: skip
# grammar -> its table of definition node types below.
_TABLE_OF = {
    "python": "python", "javascript": "js", "typescript": "js", "tsx": "js", "go": "go",
    "java": "java", "kotlin": "kotlin", "rust": "rust", "ruby": "ruby", "c": "c", "cpp": "c",
    "csharp": "csharp", "php": "php",
}  # fmt: skip
_KINDS: dict[str, dict[str, Kind]] = {
    "python": {"function_definition": "function", "class_definition": "class"},
    "js": {
        "function_declaration": "function", "generator_function_declaration": "function",
        "class_declaration": "class", "abstract_class_declaration": "class",
        "interface_declaration": "interface", "type_alias_declaration": "type",
        "enum_declaration": "enum", "method_definition": "method",
        "abstract_method_signature": "method",
    },
    "go": {"function_declaration": "function", "method_declaration": "method"},
    "java": {
        "class_declaration": "class", "interface_declaration": "interface",
        "enum_declaration": "enum", "record_declaration": "record",
        "annotation_type_declaration": "interface", "method_declaration": "method",
        "constructor_declaration": "constructor",
    },
    "kotlin": {
        "class_declaration": "class", "object_declaration": "object",
        "function_declaration": "function", "type_alias": "type",
    },
    "rust": {
        "function_item": "function", "struct_item": "struct", "union_item": "struct",
        "enum_item": "enum", "trait_item": "trait", "type_item": "type",
    },
    "ruby": {"method": "function", "singleton_method": "method", "class": "class",
             "module": "module"},
    "c": {
        "function_definition": "function", "struct_specifier": "struct",
        "union_specifier": "struct", "enum_specifier": "enum", "class_specifier": "class",
    },
    "csharp": {
        "class_declaration": "class", "struct_declaration": "struct",
        "interface_declaration": "interface", "record_declaration": "record",
        "enum_declaration": "enum", "method_declaration": "method",
        "constructor_declaration": "constructor",
    },
    "php": {
        "function_definition": "function", "method_declaration": "method",
        "class_declaration": "class", "interface_declaration": "interface",
        "trait_declaration": "trait", "enum_declaration": "enum",
    },
}  # fmt: skip
# A definition inside one of these starts where the wrapper starts (decorators, `export`,
# `template <...>`, `declare`).
_WRAPPERS = frozenset(
    {"decorated_definition", "export_statement", "template_declaration", "ambient_declaration"}
)
# Nodes that hold definitions without being one (namespaces, impl blocks, header guards).
_SCOPES = frozenset(
    {"internal_module", "module", "statement_block", "expression_statement",
     "namespace_definition", "declaration_list", "linkage_specification",
     "namespace_declaration", "file_scoped_namespace_declaration", "compound_statement",
     "mod_item", "impl_item", "companion_object", "class_body", "enum_class_body",
     "enum_body", "enum_body_declarations", "preproc_if", "preproc_ifdef", "preproc_else",
     "preproc_elif", "body_statement", "field_declaration_list"}
)  # fmt: skip
_BODY_TYPES = frozenset({"class_body", "enum_class_body"})
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_C_DECLARATORS = frozenset(
    {"function_declarator", "pointer_declarator", "reference_declarator", "declarator"}
)


@dataclass(frozen=True)
class Definition:
    """One definition at head. Lines are 1-based and inclusive."""

    path: str
    name: str
    kind: Kind
    parent: str | None  # the enclosing class (or impl's type) of a method or member
    start: int  # its first line: decorators, `export`, annotations included
    end: int
    signature_end: int  # the last line of its signature (`def ...:`, `func ... {`)
    doc: tuple[int, int] | None = None  # docstring, or the doc comment right above
    fields_end: int | None = None  # class-like: the last line before its first member

    @property
    def qualified(self) -> str:
        return f"{self.parent}.{self.name}" if self.parent else self.name

    @property
    def first(self) -> int:
        """Its first line, its doc comment above it included."""
        return min(self.start, self.doc[0]) if self.doc else self.start

    def contains(self, line: int) -> bool:
        return self.start <= line <= self.end


@dataclass(frozen=True)
class Parsed:
    path: str
    grammar: str
    data: bytes
    tree: Tree

    @property
    def root(self) -> Node:
        return self.tree.root_node

    @property
    def family(self) -> str:
        return FAMILIES[self.grammar]


@dataclass(frozen=True)
class ChangedSymbol:
    """A definition the change touches, and its changed lines."""

    definition: Definition
    lines: tuple[int, ...]
    added: bool  # every line of it is added: a new definition

    @property
    def path(self) -> str:
        return self.definition.path

    @property
    def name(self) -> str:
        return self.definition.name


def grammar_of(path: str) -> str | None:
    suffix = path_suffix(path).lower()
    return _grammar_of_suffix(suffix) if suffix else grammar_for(language_of(path), path)


@cache
def _grammar_of_suffix(suffix: str) -> str | None:
    return grammar_for(language_of(f"x{suffix}"), f"x{suffix}")


def family_of(path: str) -> str | None:
    grammar = grammar_of(path)
    return FAMILIES[grammar] if grammar else None


def parse(path: str, data: bytes | str) -> Parsed | None:
    """The file's syntax tree, or None when no grammar reads it."""
    grammar = grammar_of(path)
    if grammar is None:
        return None
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    return Parsed(path, grammar, raw, parser_for(grammar).parse(raw))


def text_of(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def definitions(parsed: Parsed) -> list[Definition]:
    """The top-level and class-level definitions, in file order."""
    extractor = _Extractor(parsed)
    found = list(extractor.visit(parsed.root.named_children, None, None))
    return sorted(found, key=lambda d: (d.start, -d.end, d.name))


def innermost(defs: Iterable[Definition], line: int) -> Definition | None:
    """The smallest definition holding `line` (its doc comment counts as its own)."""
    around = [d for d in defs if d.first <= line <= d.end]
    return min(around, key=lambda d: (d.end - d.first, -d.start)) if around else None


def changed_symbols(
    path: str, text: str | bytes, runs: Sequence[tuple[int, int]]
) -> list[ChangedSymbol]:
    """The innermost definitions the added line runs `[(first, last), ...]` touch, in file
    order. Blank added lines touch nothing; a line outside every definition neither."""
    parsed = parse(path, text)
    if parsed is None:
        return []
    return symbols_touched(definitions(parsed), parsed.data, runs)


def symbols_touched(
    defs: Sequence[Definition], data: bytes, runs: Sequence[tuple[int, int]]
) -> list[ChangedSymbol]:
    """`changed_symbols` over definitions already found."""
    lines = data.split(b"\n")
    touched: dict[Definition, list[int]] = {}
    for first, last in runs:
        for line in range(max(first, 1), min(last, len(lines)) + 1):
            if not lines[line - 1].strip():
                continue
            found = innermost(defs, line)
            if found is not None:
                touched.setdefault(found, []).append(line)
    changed = {line for first, last in runs for line in range(first, last + 1)}
    out = [
        ChangedSymbol(d, tuple(found), all(n in changed for n in range(d.start, d.end + 1)))
        for d, found in touched.items()
    ]
    return sorted(out, key=lambda s: (s.definition.start, s.definition.end))


# --- extraction -------------------------------------------------------------------------


class _Extractor:
    def __init__(self, parsed: Parsed) -> None:
        self.parsed = parsed
        self.table = _TABLE_OF[parsed.grammar]
        self.kinds = _KINDS[self.table]
        self.lines = parsed.data.split(b"\n")

    def visit(
        self, nodes: Iterable[Node], parent: str | None, outer: Node | None
    ) -> Iterator[Definition]:
        for node in nodes:
            kind = node.type
            if kind in _WRAPPERS:
                inner = node.child_by_field_name("definition") or node.child_by_field_name(
                    "declaration"
                )
                children = [inner] if inner is not None else node.named_children
                yield from self.visit(children, parent, outer or node)
            elif kind in self.kinds:
                yield from self.definition(node, self.kinds[kind], parent, outer or node)
            else:
                yield from self.special(node, parent, outer)

    def special(self, node: Node, parent: str | None, outer: Node | None) -> Iterator[Definition]:
        kind = node.type
        if kind == "type_declaration" and self.table == "go":
            yield from self.go_types(node)
        elif kind == "type_definition" and self.table == "c":
            yield from self.c_typedef(node)
        elif kind in ("lexical_declaration", "variable_declaration") and self.table == "js":
            yield from self.js_declarators(node, parent, outer or node)
        elif kind in ("public_field_definition", "field_definition") and parent:
            value = node.child_by_field_name("value")
            if value is not None and value.type in _JS_FUNCTION_VALUES:
                yield from self.definition(node, "method", parent, outer or node, body=value)
        elif kind in _SCOPES:
            scope_parent = parent
            if kind == "impl_item":
                scope_parent = _bare_type(node.child_by_field_name("type")) or parent
            body = node.child_by_field_name("body")
            children = body.named_children if body is not None else node.named_children
            yield from self.visit(children, scope_parent, None)

    def definition(
        self, node: Node, kind: Kind, parent: str | None, outer: Node, body: Node | None = None
    ) -> Iterator[Definition]:
        name, scope = self.name_of(node)
        if not name:
            return
        if self.table == "c" and kind in CLASS_KINDS and node.child_by_field_name("body") is None:
            return  # `struct x;` or `struct x y;`: a use, not a definition
        kind = self.refine(node, kind, parent or scope)
        body = body if body is not None else _body_of(node)
        members: list[Definition] = []
        if kind in CLASS_KINDS and body is not None:
            members = list(self.visit(body.named_children, name, None))
        yield self.make(node, outer, name, kind, parent or scope, body, members)
        yield from members

    def make(
        self,
        node: Node,
        outer: Node,
        name: str,
        kind: Kind,
        parent: str | None,
        body: Node | None,
        members: list[Definition],
    ) -> Definition:
        start, end = outer.start_point.row + 1, max(outer.end_point.row, node.end_point.row) + 1
        signature = _signature_end(node, body)
        fields_end = None
        if kind in CLASS_KINDS:
            direct = [m.first for m in members if m.parent == name]
            fields_end = max(min(direct) - 1, signature) if direct else end
        return Definition(
            self.parsed.path, name, kind, parent, start, end, min(signature, end),
            self.doc_of(node, body, start, kind), fields_end,
        )  # fmt: skip

    def refine(self, node: Node, kind: Kind, parent: str | None) -> Kind:
        if kind == "function" and parent:
            return "method"
        if self.table == "kotlin" and kind == "class":
            header = text_of(node).split("{", 1)[0]
            if "interface" in header.split():
                return "interface"
            if "enum" in header.split():
                return "enum"
        return kind

    def name_of(self, node: Node) -> tuple[str | None, str | None]:
        """The definition's name, and the scope a qualified name gives (`A::f`: `A`)."""
        if self.table == "c" and node.type == "function_definition":
            return _c_function_name(node)
        if node.type == "method_declaration" and self.table == "go":
            receiver = node.child_by_field_name("receiver")
            return text_of(node.child_by_field_name("name")) or None, _receiver_type(receiver)
        named = node.child_by_field_name("name")
        if named is None and node.type == "type_alias":
            named = node.child_by_field_name("type")
        if named is None and node.type in ("public_field_definition", "field_definition"):
            named = node.child_by_field_name("property")
        if named is None:
            named = next((c for c in node.named_children if c.type == "identifier"), None)
        if named is not None and named.type == "scope_resolution":  # Ruby `class A::B`
            named = named.child_by_field_name("name")
        return (text_of(named) or None), None

    def go_types(self, node: Node) -> Iterator[Definition]:
        specs = [c for c in node.named_children if c.type in ("type_spec", "type_alias")]
        for spec in specs:
            name = text_of(spec.child_by_field_name("name"))
            if not name:
                continue
            shape = spec.child_by_field_name("type")
            kind: Kind = "type"
            if shape is not None and shape.type == "struct_type":
                kind = "struct"
            elif shape is not None and shape.type == "interface_type":
                kind = "interface"
            outer = node if len(specs) == 1 else spec
            yield self.make(spec, outer, name, kind, None, shape, [])

    def c_typedef(self, node: Node) -> Iterator[Definition]:
        shape = node.child_by_field_name("type")
        declarator = node.child_by_field_name("declarator")
        if shape is None or shape.child_by_field_name("body") is None or declarator is None:
            return
        kind: Kind = "enum" if shape.type == "enum_specifier" else "struct"
        name = text_of(declarator) if declarator.type == "type_identifier" else ""
        if name:
            yield self.make(node, node, name, kind, None, shape.child_by_field_name("body"), [])

    def js_declarators(self, node: Node, parent: str | None, outer: Node) -> Iterator[Definition]:
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        for declarator in declarators:
            value = declarator.child_by_field_name("value")
            named = declarator.child_by_field_name("name")
            if value is None or named is None or named.type != "identifier":
                continue
            wrapper = outer if len(declarators) == 1 else declarator
            if value.type in _JS_FUNCTION_VALUES:
                body = value.child_by_field_name("body")
                yield self.make(value, wrapper, text_of(named), "function", parent, body, [])
            elif value.type == "class":
                body = value.child_by_field_name("body")
                members = list(self.visit(_named(body), text_of(named), None))
                yield self.make(value, wrapper, text_of(named), "class", parent, body, members)
                yield from members

    def doc_of(
        self, node: Node, body: Node | None, start: int, kind: Kind
    ) -> tuple[int, int] | None:
        if self.table == "python":
            return _python_docstring(body)
        markers = ("#",) if self.table == "ruby" else ("//", "/*", "*", "*/")
        if self.table == "php":
            markers = (*markers, "#")
        first = last = None
        line = start - 1  # the line above, 1-based
        while line >= 1:
            text = self.lines[line - 1].strip()
            if self.table == "rust" and text.startswith(b"#["):
                line -= 1
                continue
            if not text or not text.startswith(tuple(m.encode() for m in markers)):
                break
            first, last = line, last or line
            line -= 1
        return (first, last) if first is not None and last is not None else None


def _named(node: Node | None) -> list[Node]:
    return node.named_children if node is not None else []


def _body_of(node: Node) -> Node | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    return next((c for c in node.named_children if c.type in _BODY_TYPES), None) or next(
        (c for c in node.named_children if c.type == "function_body"), None
    )


def _signature_end(node: Node, body: Node | None) -> int:
    if body is None:
        return node.end_point.row + 1
    before = body.prev_sibling
    while before is not None and before.type in _COMMENTS:
        before = before.prev_sibling
    if before is None or before.start_point.row < node.start_point.row:
        return body.start_point.row + 1
    return before.end_point.row + 1


def _python_docstring(body: Node | None) -> tuple[int, int] | None:
    if body is None or not body.named_children:
        return None
    first = body.named_children[0]
    inner = first.named_children[0] if first.named_children else None
    if first.type == "expression_statement" and inner is not None and inner.type == "string":
        return first.start_point.row + 1, first.end_point.row + 1
    return None


def _c_function_name(node: Node) -> tuple[str | None, str | None]:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type in _C_DECLARATORS:
        declarator = declarator.child_by_field_name("declarator")
    scope = None
    while declarator is not None and declarator.type == "qualified_identifier":
        scope = text_of(declarator.child_by_field_name("scope")) or scope
        declarator = declarator.child_by_field_name("name")
    if declarator is None:
        return None, None
    return text_of(declarator) or None, scope


def _receiver_type(receiver: Node | None) -> str | None:
    """`(s *Service)` -> `Service`; `(l List[T])` -> `List`."""
    if receiver is None:
        return None
    for parameter in receiver.named_children:
        found = _bare_type(parameter.child_by_field_name("type"))
        if found:
            return found
    return None


def _bare_type(node: Node | None) -> str | None:
    while node is not None and node.type in ("pointer_type", "generic_type", "reference_type"):
        inner = node.child_by_field_name("type")
        if inner is None and node.named_children:
            inner = node.named_children[0]
        node = inner
    if node is None:
        return None
    text = text_of(node)
    return text.split("<", 1)[0].split("[", 1)[0].strip() or None
