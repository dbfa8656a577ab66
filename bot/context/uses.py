"""What some lines of a parsed file use, and where a file names a given symbol.

`used_names` reads the changed lines of a file (bot/context/symbols.py parses it): the
names they call, construct, subclass or implement, annotate with (type annotations, Go,
Java, TypeScript, Rust and C types), decorate with, or read as an attribute or field
(`obj.field`, `Model.column` in a query), each with its qualifier when it has one
(`svc.delete` -> `svc`; `?` when the qualifier is an expression: `f().delete`).

`reference_sites` finds where a file names a symbol as code (an identifier, not a comment or
a string), how (called, constructed, subclassed, a type, imported, read) and in which
definition of that file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from bot.context.symbols import Definition, Parsed, innermost, text_of

UseKind = Literal["call", "construct", "base", "type", "decorator", "attribute"]
SiteKind = Literal["call", "construct", "base", "type", "decorator", "attribute", "import", "read"]
COMPLEX = "?"  # the qualifier of `f().name`, `a[0].name`: an expression, not a name

# Stronger first: a name both called and read on a line is reported as called.
_RANK: dict[str, int] = {
    "call": 0, "construct": 1, "base": 2, "decorator": 3, "type": 4, "attribute": 5,
}  # fmt: skip
# node type -> (field of what it calls, what the call is, field of the receiver or None)
_CALLS: dict[str, tuple[str, UseKind, str | None]] = {
    "call_expression": ("function", "call", None),
    "new_expression": ("constructor", "construct", None),
    "method_invocation": ("name", "call", "object"),
    "object_creation_expression": ("type", "construct", None),
    "composite_literal": ("type", "construct", None),
    "invocation_expression": ("function", "call", None),
    "function_call_expression": ("function", "call", None),
    "member_call_expression": ("name", "call", "object"),
    "nullsafe_member_call_expression": ("name", "call", "object"),
    "scoped_call_expression": ("name", "call", "scope"),
    "struct_expression": ("name", "construct", None),
}
# node type -> (field of the object read from, field of the name read)
_ATTRIBUTES: dict[str, tuple[str, str]] = {
    "attribute": ("object", "attribute"),
    "member_expression": ("object", "property"),
    "selector_expression": ("operand", "field"),
    "field_access": ("object", "field"),
    "field_expression": ("value", "field"),
    "member_access_expression": ("expression", "name"),
    "scoped_identifier": ("path", "name"),
    "qualified_identifier": ("scope", "name"),
    "qualified_type": ("package", "name"),
    "scoped_type_identifier": ("scope", "name"),
    "nested_type_identifier": ("module", "name"),
}
_HERITAGE = frozenset(
    {"class_heritage", "extends_clause", "implements_clause", "superclass",
     "super_interfaces", "delegation_specifier", "delegation_specifiers", "base_list",
     "base_clause", "class_interface_clause", "base_class_clause", "extends_interfaces"}
)  # fmt: skip
_TYPE_FIELDS = frozenset({"type", "return_type", "returns", "result", "superclasses", "trait"})
_TYPE_CONTAINERS = frozenset({"type", "user_type", "named_type", "type_annotation"})
_NAMES = frozenset(
    {"identifier", "type_identifier", "field_identifier", "property_identifier", "constant",
     "name", "simple_identifier", "package_identifier", "namespace_identifier",
     "shorthand_property_identifier"}
)  # fmt: skip
_DEFINING = frozenset(
    {"function_definition", "class_definition", "function_declaration", "method_declaration",
     "type_spec", "type_alias", "class_declaration", "abstract_class_declaration",
     "interface_declaration", "type_alias_declaration", "enum_declaration",
     "method_definition", "variable_declarator", "record_declaration",
     "generator_function_declaration", "public_field_definition", "field_definition",
     "constructor_declaration", "type_parameter", "function_item", "struct_item",
     "enum_item", "trait_item", "type_item", "class", "module", "method", "singleton_method",
     "struct_specifier", "class_specifier", "object_declaration", "struct_declaration",
     "trait_declaration", "parameter", "required_parameter", "optional_parameter",
     "formal_parameter", "parameter_declaration", "field_declaration", "enum_constant",
     "property_declaration", "class_parameter", "typed_parameter", "default_parameter",
     "typed_default_parameter", "simple_parameter", "assignment", "enum_entry"}
)  # fmt: skip
_IMPORTS = frozenset(
    {"import_statement", "import_from_statement", "import_declaration", "import_spec",
     "import", "namespace_use_declaration", "use_declaration", "using_directive"}
)  # fmt: skip
_CONSTRUCTIONS = frozenset(
    {"new_expression", "object_creation_expression", "composite_literal", "struct_expression"}
)
_SIMPLE = re.compile(r"^[\w$]+(?:\s*(?:\.|::|\?\.|->)\s*[\w$]+)*$")


@dataclass(frozen=True)
class UsedName:
    """A repository name the changed lines may use."""

    name: str
    qualifier: str | None  # `svc` of `svc.delete`; COMPLEX for an expression; None: bare
    kind: UseKind
    line: int

    @property
    def root(self) -> str | None:
        """The qualifier's first name: `self` of `self.repo`, `pkg` of `pkg.sub`."""
        if self.qualifier is None or self.qualifier == COMPLEX:
            return None
        return re.split(r"\s*(?:\.|::|\?\.|->)\s*", self.qualifier, maxsplit=1)[0]


@dataclass(frozen=True)
class Site:
    """Where a file names a symbol."""

    line: int
    kind: SiteKind
    enclosing: Definition | None  # the innermost definition of that file around it


def used_names(parsed: Parsed, runs: Sequence[tuple[int, int]]) -> list[UsedName]:
    """What the lines of `runs` ([(first, last), ...], 1-based) use, in line order; each
    (name, qualifier, line) once, with its strongest use."""
    rows = {n - 1 for first, last in runs for n in range(first, last + 1)}
    if not rows:
        return []
    walker = _Walker(parsed, rows)
    walker.walk()
    found = sorted(walker.found.values(), key=lambda u: (u.line, u.name, u.qualifier or ""))
    return found


class _Walker:
    def __init__(self, parsed: Parsed, rows: set[int]) -> None:
        self.parsed, self.rows = parsed, rows
        self.first, self.last = min(rows), max(rows)
        self.found: dict[tuple[str, str | None, int], UsedName] = {}

    def walk(self) -> None:
        stack: list[tuple[Node, str | None]] = [(self.parsed.root, None)]
        while stack:
            node, context = stack.pop()
            if node.end_point.row < self.first or node.start_point.row > self.last:
                continue
            self.visit(node, context)
            for index, child in enumerate(node.children):
                if child.is_named:
                    stack.append((child, self.context(node, index, child, context)))

    def context(self, node: Node, index: int, child: Node, context: str | None) -> str | None:
        """Whether names under `child` are types or bases."""
        if node.type in _HERITAGE or child.type in _HERITAGE:
            return "base"
        field = node.field_name_for_child(index)
        if field == "superclasses" or (field == "superclass" and node.type == "class"):
            return "base"
        if field in _TYPE_FIELDS or child.type in _TYPE_CONTAINERS:
            return context or "type"
        if node.type in ("decorator", "marker_annotation", "annotation"):
            return "decorator"
        return context

    def add(self, name: Node | None, kind: UseKind, qualifier: str | None) -> None:
        if name is None or name.start_point.row not in self.rows:
            return
        text = text_of(name)
        if not _is_name(text):
            return
        key = (text, qualifier, name.start_point.row + 1)
        known = self.found.get(key)
        if known is None or _RANK[kind] < _RANK[known.kind]:
            self.found[key] = UsedName(text, qualifier, kind, name.start_point.row + 1)

    def visit(self, node: Node, context: str | None) -> None:
        kind = node.type
        if kind in _CALLS and not (kind == "call_expression" and self.parsed.grammar == "kotlin"):
            self.call(node)
        elif kind == "call" and self.parsed.grammar == "python":
            self.callee(node.child_by_field_name("function"), "call")
        elif kind == "call" and self.parsed.grammar == "ruby":
            self.ruby_call(node)
        elif kind == "call_expression":  # Kotlin: the callee is the first child
            self.callee(node.named_children[0] if node.named_children else None, "call")
        elif kind in _ATTRIBUTES or kind == "navigation_expression":
            self.attribute(node, context)
        elif kind in ("jsx_opening_element", "jsx_self_closing_element"):
            name = node.child_by_field_name("name")
            if name is not None and text_of(name)[:1].isupper():
                self.callee(name, "construct")
        elif kind in _NAMES and (context or kind == "type_identifier"):
            if not _is_definition_name(node):
                self.name(node, context or "type")
        elif kind == "string_content" and context == "type" and self.parsed.grammar == "python":
            self.add(node, "type", None)  # a forward reference: `"User"`

    def name(self, node: Node, context: str) -> None:
        parent = node.parent
        if parent is not None and (parent.type in _ATTRIBUTES or parent.type in _CALLS):
            return  # its qualified form is read where the parent is visited
        if parent is not None and parent.type == "navigation_expression":
            return
        kind: UseKind = context if context in ("base", "type", "decorator") else "type"  # type: ignore[assignment]
        self.add(node, kind, None)

    def call(self, node: Node) -> None:
        field, kind, receiver_field = _CALLS[node.type]
        callee = node.child_by_field_name(field)
        if callee is None and node.type == "object_creation_expression":
            callee = next((c for c in node.named_children if c.type in _NAMES), None)
        if receiver_field is not None:
            receiver = node.child_by_field_name(receiver_field)
            self.add(callee, kind, _qualifier(receiver) if receiver is not None else None)
            return
        self.callee(callee, kind)

    def callee(self, callee: Node | None, kind: UseKind) -> None:
        if callee is None:
            return
        while callee.type in ("generic_type", "generic_name", "parenthesized_expression"):
            inner = callee.named_children
            if not inner:
                return
            callee = inner[0]
        name, qualifier = split_name(callee)
        self.add(name, kind, qualifier)

    def ruby_call(self, node: Node) -> None:
        method, receiver = node.child_by_field_name("method"), node.child_by_field_name("receiver")
        if receiver is not None and text_of(method) == "new":
            self.callee(receiver, "construct")
            return
        self.add(method, "call", _qualifier(receiver) if receiver is not None else None)

    def attribute(self, node: Node, context: str | None) -> None:
        parent = node.parent
        if parent is not None and _callee_of(parent) is not None and _callee_of(parent) == node:
            return  # read as the call's callee
        name, qualifier = split_name(node)
        kind: UseKind = "attribute"
        if context in ("base", "type", "decorator"):
            kind = context  # type: ignore[assignment]
        self.add(name, kind, qualifier)


def split_name(node: Node) -> tuple[Node | None, str | None]:
    """`f` -> (f, None); `a.b.f` -> (f, "a.b"); `pkg.T` -> (T, "pkg"); `x[0].f` -> (f, "?")."""
    if node.type == "navigation_expression":
        named = node.named_children
        if len(named) < 2:
            return None, None
        return _last_identifier(named[-1]), _qualifier(named[0])
    if node.type in _ATTRIBUTES:
        object_field, name_field = _ATTRIBUTES[node.type]
        if node.type == "field_expression" and node.child_by_field_name("value") is None:
            object_field = "argument"  # C and C++
        name = node.child_by_field_name(name_field)
        receiver = node.child_by_field_name(object_field)
        return _last_identifier(name), _qualifier(receiver) if receiver is not None else None
    if node.type in _NAMES or node.type.endswith("identifier"):
        return node, None
    return None, None


def _last_identifier(node: Node | None) -> Node | None:
    while node is not None and node.type not in _NAMES and not node.type.endswith("identifier"):
        named = node.named_children
        node = named[-1] if named else None
    return node


def _qualifier(node: Node | None) -> str:
    if node is None:
        return COMPLEX
    text = re.sub(r"\s+", "", text_of(node))
    return text if _SIMPLE.match(text) else COMPLEX


def _callee_of(node: Node) -> Node | None:
    callee = None
    if node.type in _CALLS:
        callee = node.child_by_field_name(_CALLS[node.type][0])
    elif node.type == "call":
        callee = node.child_by_field_name("function") or node.child_by_field_name("method")
    if callee is None and node.type == "call_expression" and node.named_children:
        callee = node.named_children[0]  # Kotlin names no field
    return callee


def _is_name(text: str) -> bool:
    return bool(text) and (text[0].isalpha() or text[0] in "_$") and len(text) <= 200


def _is_definition_name(node: Node) -> bool:
    parent = node.parent
    if parent is None or parent.type not in _DEFINING:
        return False
    for field in ("name", "property", "pattern", "left", "declarator"):
        named = parent.child_by_field_name(field)
        if named is not None and named.id == node.id:
            return True
    if parent.type in ("type_parameter", "class_parameter", "enum_entry"):
        return True
    first = next((c for c in parent.named_children if c.type in _NAMES), None)
    return parent.type in ("parameter", "class_parameter", "property_declaration") and (
        first is not None and first.id == node.id
    )


# --- where a file names a symbol --------------------------------------------------------


def reference_sites(
    parsed: Parsed, name: str, defs: Sequence[Definition], *, limit: int = 20
) -> list[Site]:
    """Lines where `name` is an identifier of code (not a comment, a string, or the name of
    a definition), at most `limit`, each with how it is used and its enclosing definition."""
    word = re.compile(rb"(?<![\w$])" + re.escape(name.encode()) + rb"(?![\w$])")
    sites: list[Site] = []
    root = parsed.root
    for row, line in enumerate(parsed.data.split(b"\n")):
        if name.encode() not in line:
            continue
        for match in word.finditer(line):
            node = root.descendant_for_point_range((row, match.start()), (row, match.end()))
            if node is None or text_of(node) != name or not _is_reference(node):
                continue
            sites.append(Site(row + 1, site_kind(node), innermost(defs, row + 1)))
            break
        if len(sites) >= limit:
            break
    return sites


def _is_reference(node: Node) -> bool:
    return (node.type in _NAMES or node.type.endswith("identifier")) and not _is_definition_name(
        node
    )


def site_kind(node: Node) -> SiteKind:
    """How the identifier `node` is used."""
    holder, parent = node, node.parent
    if parent is not None and (
        parent.type in _ATTRIBUTES or parent.type == "navigation_expression"
    ):
        name, _ = split_name(parent)
        if name is not None and name.id == node.id:
            holder, parent = parent, parent.parent
    for ancestor in _ancestors(node, 6):
        if ancestor.type in _IMPORTS:
            return "import"
        if ancestor.type in _HERITAGE:
            return "base"
    if parent is None:
        return "read"
    callee = _callee_of(parent)
    if callee is not None and callee.id == holder.id:
        return "construct" if parent.type in _CONSTRUCTIONS else "call"
    if parent.type in ("decorator", "marker_annotation", "annotation"):
        return "decorator"
    if node.type == "type_identifier" or parent.type in _TYPE_CONTAINERS:
        return "type"
    return "attribute" if holder is not node else "read"


def _ancestors(node: Node, depth: int) -> list[Node]:
    found: list[Node] = []
    parent = node.parent
    while parent is not None and len(found) < depth:
        found.append(parent)
        parent = parent.parent
    return found
