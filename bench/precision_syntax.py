"""Python, Go, JavaScript/TypeScript and Java read with tree-sitter for
bench/precision_truth.py (the grammar wheels load offline; nothing here calls the context
builder).

- Definitions: the top-level and class-level functions, methods, classes, interfaces, types
  and structs (a `const f = () => ...` at the top of a JS/TS module, or a class field
  holding an arrow function, is a function; declarations inside `declare global {}` and
  `namespace` blocks count as top level; Java constructors are left out: `new C()` means
  the class). A definition's lines run from its first decorator or `export` to its end;
  its signature line is its `def`/`func`/`class` line.
- Used names of some lines: what they call (`f()`, `x.f()`, a Python decorator), construct
  (`new C()`, `C{}`, `<Comp/>`), subclass or implement, use as a type (annotations, Go/TS/
  Java type names) or read as an attribute (`x.f`), the name itself on one of the lines;
  not what is read from code outside the repository (`outside_names`).
- Reference lines: where a name is an identifier token (not in a comment or a string, not
  the name of a definition).
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterable, Iterator, Set
from functools import cache
from pathlib import PurePosixPath

from tree_sitter import Language, Node, Parser, Tree

GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "go": ("tree_sitter_go", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "java": ("tree_sitter_java", "language"),
}
EXTENSIONS: dict[str, str] = {
    ".py": "python", ".go": "go", ".java": "java",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
}  # fmt: skip
FAMILY = {"python": "python", "go": "go", "java": "java", "javascript": "js",
          "typescript": "js", "tsx": "js"}  # fmt: skip
GLOBS: dict[str, list[str]] = {
    family: [f"*{ext}" for ext, grammar in EXTENSIONS.items() if FAMILY[grammar] == family]
    for family in set(FAMILY.values())
}


def grammar_of(path: str) -> str | None:
    if path.endswith(".d.ts"):
        return "typescript"
    return EXTENSIONS.get(PurePosixPath(path).suffix)


def family_of(path: str) -> str | None:
    grammar = grammar_of(path)
    return FAMILY[grammar] if grammar else None


@cache
def parser(grammar: str) -> Parser:
    module, function = GRAMMARS[grammar]
    return Parser(Language(getattr(importlib.import_module(module), function)()))


# --- definitions ------------------------------------------------------------------------

_PY_DEFS = frozenset({"function_definition", "class_definition"})
_JS_TYPES = frozenset(
    {"function_declaration", "generator_function_declaration", "class_declaration",
     "abstract_class_declaration", "interface_declaration", "type_alias_declaration",
     "enum_declaration"}
)  # fmt: skip
_JS_CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class"})
_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class"}
)
_JAVA_TYPES = frozenset(
    {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
     "annotation_type_declaration"}
)  # fmt: skip
_JAVA_BODIES = frozenset(
    {"class_body", "interface_body", "enum_body", "enum_body_declarations",
     "annotation_type_body"}
)  # fmt: skip


def _name(node: Node, field_name: str = "name") -> str | None:
    name = node.child_by_field_name(field_name)
    return name.text.decode("utf-8", "replace") if name is not None and name.text else None


def _def(node: Node, outer: Node, field_name: str = "name") -> tuple[str, int, int, int] | None:
    name = _name(node, field_name)
    if not name:
        return None
    return name, outer.start_point.row + 1, node.start_point.row + 1, outer.end_point.row + 1


def definitions_in(root: Node, grammar: str) -> Iterator[tuple[str, int, int, int]]:
    """(name, first line, signature line, last line) of the top- and class-level
    definitions under `root` (the module docstring's rules)."""
    family = FAMILY[grammar]
    if family == "python":
        yield from _python_defs(root)
    elif family == "go":
        yield from _go_defs(root)
    elif family == "js":
        yield from _js_defs(root.children)
    else:
        yield from _java_defs(root.children)


def _python_defs(block: Node) -> Iterator[tuple[str, int, int, int]]:
    for child in block.children:
        node = child
        if child.type == "decorated_definition":
            inner = child.child_by_field_name("definition")
            if inner is None:
                continue
            node = inner
        if node.type not in _PY_DEFS:
            continue
        found = _def(node, child)
        if found:
            yield found
        body = node.child_by_field_name("body")
        if node.type == "class_definition" and body is not None:
            yield from _python_defs(body)


def _go_defs(root: Node) -> Iterator[tuple[str, int, int, int]]:
    for child in root.children:
        if child.type in ("function_declaration", "method_declaration"):
            found = _def(child, child)
            if found:
                yield found
        elif child.type == "type_declaration":
            specs = [c for c in child.children if c.type in ("type_spec", "type_alias")]
            for spec in specs:
                found = _def(spec, child if len(specs) == 1 else spec)
                if found:
                    yield found


def _js_defs(
    nodes: Iterable[Node], outer: Node | None = None
) -> Iterator[tuple[str, int, int, int]]:
    for node in nodes:
        if node.type in _JS_TYPES:
            found = _def(node, outer or node)
            if found:
                yield found
            if node.type in _JS_CLASSES:
                yield from _js_members(node)
        elif node.type in ("lexical_declaration", "variable_declaration"):
            yield from _js_declarators(node, outer or node)
        else:
            yield from _js_inside(node)


def _js_inside(node: Node) -> Iterator[tuple[str, int, int, int]]:
    """The definitions a wrapper holds: `export`, `declare global {}`, `namespace N {}`."""
    if node.type == "export_statement":
        inner = node.child_by_field_name("declaration")
        if inner is not None:
            yield from _js_defs([inner], node)
    elif node.type == "ambient_declaration":
        for child in node.children:
            if child.type == "statement_block":
                yield from _js_defs(child.children)
            else:
                yield from _js_defs([child], node)
    elif node.type == "expression_statement":
        yield from _js_defs([c for c in node.children if c.type == "internal_module"])
    elif node.type in ("internal_module", "module"):
        body = node.child_by_field_name("body")
        if body is not None:
            yield from _js_defs(body.children)


def _js_declarators(node: Node, outer: Node) -> Iterator[tuple[str, int, int, int]]:
    """`const f = () => ...`, `const C = class {...}`: functions and classes."""
    declarators = [c for c in node.children if c.type == "variable_declarator"]
    for d in declarators:
        value = d.child_by_field_name("value")
        name = d.child_by_field_name("name")
        if value is None or name is None or name.type != "identifier":
            continue
        if value.type in _JS_FUNCTION_VALUES:
            found = _def(d, outer if len(declarators) == 1 else d)
            if found:
                yield found
            if value.type == "class":
                yield from _js_members(value)


def _js_members(cls: Node) -> Iterator[tuple[str, int, int, int]]:
    body = cls.child_by_field_name("body")
    for member in body.children if body is not None else []:
        if member.type == "method_definition":
            found = _def(member, member)
        elif member.type in ("public_field_definition", "field_definition"):
            value = member.child_by_field_name("value")
            if value is None or value.type not in _JS_FUNCTION_VALUES:
                continue
            found = _def(
                member, member, "name" if member.child_by_field_name("name") else "property"
            )
        else:
            continue
        if found:
            yield found


def _java_defs(nodes: Iterable[Node]) -> Iterator[tuple[str, int, int, int]]:
    for node in nodes:
        if node.type in _JAVA_TYPES:
            found = _def(node, node)
            if found:
                yield found
            body = node.child_by_field_name("body")
            if body is not None:
                yield from _java_defs(body.children)
        elif node.type == "method_declaration":
            found = _def(node, node)
            if found:
                yield found
        elif node.type in _JAVA_BODIES:
            yield from _java_defs(node.children)


# --- what the added lines use -----------------------------------------------------------

# Node type -> the field holding what it calls or constructs.
_CALLEES = {
    "call": "function",  # Python
    "call_expression": "function",  # Go, JS/TS
    "new_expression": "constructor",  # JS/TS
    "method_invocation": "name",  # Java
    "object_creation_expression": "type",  # Java
    "composite_literal": "type",  # Go
}
# Node type -> the field naming the attribute it reads.
_ATTRIBUTES = {
    "attribute": "attribute",
    "member_expression": "property",
    "selector_expression": "field",
    "field_access": "field",
}
_JSX = frozenset({"jsx_opening_element", "jsx_self_closing_element"})
_DEFINITION_NODES = frozenset(
    {"function_definition", "class_definition", "function_declaration", "method_declaration",
     "type_spec", "type_alias", "class_declaration", "abstract_class_declaration",
     "interface_declaration", "type_alias_declaration", "enum_declaration",
     "method_definition", "variable_declarator", "record_declaration",
     "generator_function_declaration", "public_field_definition", "field_definition",
     "constructor_declaration", "type_parameter"}
)  # fmt: skip


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""


def _last_name(node: Node | None) -> Node | None:
    """The name node at the end of a callee or type: `f`, `x.f`, `pkg.T`, `T<U>`."""
    if node is None:
        return None
    if node.type.endswith("identifier"):
        return node
    if node.type in _ATTRIBUTES:
        return node.child_by_field_name(_ATTRIBUTES[node.type])
    if node.type in ("generic_type", "qualified_type", "scoped_type_identifier"):
        named = [c for c in node.named_children if c.type.endswith("identifier")]
        return named[-1] if named else None
    return None


def _is_definition_name(node: Node) -> bool:
    parent = node.parent
    if parent is None or parent.type not in _DEFINITION_NODES:
        return False
    for field_name in ("name", "property"):
        named = parent.child_by_field_name(field_name)
        if named is not None and named.id == node.id:
            return True
    return parent.type == "type_parameter"


# Where an attribute-like node keeps what it is read from.
_OBJECTS = {
    "attribute": "object",
    "member_expression": "object",
    "selector_expression": "operand",
    "field_access": "object",
    "method_invocation": "object",
}
_JS_GLOBALS = frozenset(
    {"console", "Math", "JSON", "Object", "Array", "Promise", "Number", "String", "Date",
     "window", "document", "process", "Reflect", "Symbol", "Intl", "navigator", "Buffer",
     "localStorage", "sessionStorage", "React", "URL", "Error", "Boolean", "RegExp", "Map",
     "Set", "crypto", "path", "fs", "os", "util", "globalThis", "performance"}
)  # fmt: skip
_JAVA_GLOBALS = frozenset(
    {"System", "Math", "String", "Integer", "Long", "Objects", "Arrays", "Collections",
     "List", "Map", "Set", "Optional", "Stream", "Collectors", "Thread"}
)  # fmt: skip


def outside_names(root: Node, grammar: str) -> frozenset[str]:
    """Names of code from outside the repository that `x.f` may be read from: Python's
    standard-library modules, JS/Java globals, the standard Go packages the file imports.
    What is read from them is not resolved in the repository (`asyncio.gather`,
    `console.log`, `fmt.Println`)."""
    family = FAMILY[grammar]
    if family == "python":
        return frozenset(sys.stdlib_module_names)
    if family == "js":
        return _JS_GLOBALS
    if family == "java":
        return _JAVA_GLOBALS
    names = set()
    specs = [n for c in root.children if c.type == "import_declaration" for n in c.named_children]
    specs += [n for s in specs if s.type == "import_spec_list" for n in s.named_children]
    for spec in (s for s in specs if s.type == "import_spec"):
        path = _text(spec.child_by_field_name("path") or spec).strip('"`')
        alias = spec.child_by_field_name("name")
        if "." not in path.split("/")[0]:
            names.add(_text(alias) if alias is not None else path.rsplit("/", 1)[-1])
    return frozenset(names)


class _Uses:
    """The names a few lines use (see `used_names`)."""

    def __init__(self, grammar: str, rows: Set[int], outside: frozenset[str]) -> None:
        self.grammar, self.rows, self.outside = grammar, rows, outside
        self.found: set[tuple[str, int]] = set()

    def add(self, name_node: Node | None, holder: Node | None = None) -> None:
        if name_node is None or name_node.start_point.row not in self.rows:
            return
        if holder is not None and holder.type in _OBJECTS:
            read_from = holder.child_by_field_name(_OBJECTS[holder.type])
            if read_from is not None and _text(read_from) in self.outside:
                return
        name = _text(name_node)
        if name.isidentifier():
            self.found.add((name, name_node.start_point.row + 1))

    def visit(self, node: Node, in_type: bool) -> None:
        kind = node.type
        if kind in _CALLEES:
            callee = node.child_by_field_name(_CALLEES[kind])
            self.add(_last_name(callee), node if kind == "method_invocation" else callee)
        elif kind in _ATTRIBUTES:
            self.add(node.child_by_field_name(_ATTRIBUTES[kind]), node)
        elif kind == "decorator":
            named = node.named_children
            self.add(_last_name(named[0] if named else None), named[0] if named else None)
        elif kind in _JSX:
            self.add(_last_name(node.child_by_field_name("name")))
        elif kind == "type_identifier" and not _is_definition_name(node):
            self.add(node)
        elif kind == "identifier" and (in_type or _in_heritage(node)):
            parent = node.parent
            if parent is None or parent.type != "attribute":
                self.add(node)


def used_names(root: Node, grammar: str, rows: Set[int]) -> set[tuple[str, int]]:
    """(name, 1-based line) of what the lines `rows` (0-based) call, construct, subclass,
    use as a type or read as an attribute, the name itself on one of those lines."""
    if not rows:
        return set()
    first, last = min(rows), max(rows)
    uses = _Uses(grammar, rows, outside_names(root, grammar))
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, in_type = stack.pop()
        if node.end_point.row < first or node.start_point.row > last:
            continue
        uses.visit(node, in_type)
        # Python annotations are `type` nodes: the names inside are used as types.
        inner = in_type or (grammar == "python" and node.type == "type")
        stack.extend((child, inner) for child in node.children)
    return uses.found


def _in_heritage(node: Node) -> bool:
    parent = node.parent
    if parent is None:
        return False
    if parent.type in ("class_heritage", "extends_clause"):
        return True
    # Python: class A(Base): the superclasses argument list of a class definition.
    grand = parent.parent
    return (
        parent.type == "argument_list"
        and grand is not None
        and grand.type == "class_definition"
        and grand.child_by_field_name("superclasses") == parent
    )


def reference_lines(data: bytes, tree: Tree, name: str) -> frozenset[int]:
    """1-based lines where `name` is an identifier token (not another definition's name)."""
    word = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
    lines: set[int] = set()
    for row, line in enumerate(data.split(b"\n")):
        for match in word.finditer(line):
            node = tree.root_node.descendant_for_point_range(
                (row, match.start()), (row, match.end())
            )
            if (
                node is not None
                and node.type.endswith("identifier")
                and node.text == name.encode()
                and not _is_definition_name(node)
            ):
                lines.add(row + 1)
                break
    return frozenset(lines)
