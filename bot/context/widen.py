"""Hunks widened to the enclosing function or class.

tree-sitter with the per-language grammar wheels (they load offline) finds the innermost
definition around each change; other text falls back to indentation. A widened span never
exceeds the per-hunk limit, and spans are whole lines by construction.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache

from tree_sitter import Language, Node, Parser

# language -> (module, function) of its grammar wheel.
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "kotlin": ("tree_sitter_kotlin", "language"),
}
_JS_DEFS = frozenset(
    {"function_declaration", "generator_function_declaration", "method_definition",
     "class_declaration", "abstract_class_declaration", "arrow_function", "function_expression",
     "function", "interface_declaration", "enum_declaration", "type_alias_declaration",
     "internal_module", "module"}
)  # fmt: skip
DEFINITIONS: dict[str, frozenset[str]] = {
    "python": frozenset({"function_definition", "class_definition"}),
    "javascript": _JS_DEFS,
    "typescript": _JS_DEFS,
    "tsx": _JS_DEFS,
    "go": frozenset({"function_declaration", "method_declaration", "type_declaration",
                     "func_literal"}),
    "java": frozenset({"method_declaration", "constructor_declaration", "class_declaration",
                       "interface_declaration", "enum_declaration", "record_declaration"}),
    "rust": frozenset({"function_item", "impl_item", "struct_item", "enum_item", "trait_item",
                       "mod_item"}),
    "ruby": frozenset({"method", "singleton_method", "class", "module"}),
    "c": frozenset({"function_definition", "struct_specifier", "enum_specifier"}),
    "cpp": frozenset({"function_definition", "class_specifier", "struct_specifier",
                      "enum_specifier"}),
    "csharp": frozenset({"method_declaration", "constructor_declaration", "class_declaration",
                         "struct_declaration", "interface_declaration", "record_declaration",
                         "enum_declaration", "property_declaration",
                         "local_function_statement"}),
    "php": frozenset({"function_definition", "method_declaration", "class_declaration",
                      "interface_declaration", "trait_declaration"}),
    "kotlin": frozenset({"function_declaration", "class_declaration", "object_declaration"}),
}  # fmt: skip
# A definition inside one of these is shown with it (decorators, `const f = () => ...`).
_WRAPPERS = frozenset(
    {"decorated_definition", "variable_declarator", "lexical_declaration",
     "variable_declaration", "export_statement", "template_declaration"}
)  # fmt: skip
_NAME_TYPES = frozenset(
    {"identifier", "simple_identifier", "type_identifier", "name", "constant",
     "field_identifier", "property_identifier"}
)  # fmt: skip
WIDEN_LIMIT = 150  # lines per hunk
TOP_LEVEL_CONTEXT = 10  # lines either side of a change outside any definition


@dataclass(frozen=True)
class Span:
    start: int  # 1-based, inclusive
    end: int
    label: str


def grammar_for(language: str | None, path: str) -> str | None:
    if language == "typescript" and path.endswith(".tsx"):
        return "tsx"
    return language if language in _GRAMMARS else None


@cache
def _parser(grammar: str) -> Parser:
    module, function = _GRAMMARS[grammar]
    return Parser(Language(getattr(importlib.import_module(module), function)()))


def parser_for(grammar: str) -> Parser:
    """The (shared) parser of a grammar `grammar_for` names."""
    return _parser(grammar)


def widen(
    path: str,
    language: str | None,
    text: str,
    changes: list[tuple[int, int]],
    *,
    limit: int = WIDEN_LIMIT,
) -> list[Span]:
    """Spans of `text` (the file at head) around each changed line range, merged."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    total = len(lines)
    grammar = grammar_for(language, path)
    root = _parser(grammar).parse(text.encode("utf-8", "replace")).root_node if grammar else None
    spans = []
    for start, end in changes:
        start, end = max(1, min(start, total)), max(1, min(end, total))
        if end - start + 1 > limit:
            continue  # the hunk alone is as much as a hunk may show
        if root is not None and grammar is not None:
            span = _syntax_span(root, DEFINITIONS[grammar], lines, start, end, limit)
        else:
            span = _indent_span(lines, start, end, limit)
        spans.append(span)
    return merge(spans)


def _syntax_span(
    root: Node, kinds: frozenset[str], lines: list[str], start: int, end: int, limit: int
) -> Span:
    total = len(lines)
    # Points within the changed lines' text (tree-sitter columns are bytes), so the node
    # found is inside them, not the one that owns the line break after.
    first, last = lines[start - 1], lines[end - 1]
    indent = len(first) - len(first.lstrip())
    stop = max(len(last.rstrip().encode("utf-8", "replace")) - 1, 0)
    if start == end:
        indent = min(indent, stop)
    node: Node | None = root.descendant_for_point_range((start - 1, indent), (end - 1, stop))
    while node is not None and node.type not in kinds:
        node = node.parent
    if node is None:
        return _window(start, end, total, TOP_LEVEL_CONTEXT, "lines around the change")
    size = node.end_point[0] - node.start_point[0] + 1
    if size > limit:
        return _window(
            start, end, total, (limit - (end - start + 1)) // 2,
            f"part of {_describe(node)} ({size} lines, over the {limit}-line limit)",
        )  # fmt: skip
    label = _describe(node)
    while node.parent is not None and node.parent.type in _WRAPPERS:
        parent = node.parent
        if parent.end_point[0] - parent.start_point[0] + 1 > limit:
            break
        node = parent
    return Span(node.start_point[0] + 1, node.end_point[0] + 1, label)


def _describe(node: Node) -> str:
    kind = node.type.replace("_definition", "").replace("_declaration", "").replace("_item", "")
    kind = kind.replace("_specifier", "").replace("_", " ")
    name = _name_of(node)
    return f"{kind} {name}" if name else kind


def _name_of(node: Node) -> str | None:
    named = node.child_by_field_name("name")
    if named is None:
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.type not in _NAME_TYPES:
            declarator = declarator.child_by_field_name("declarator")
        named = declarator
    if named is None:
        named = next((c for c in node.named_children if c.type in _NAME_TYPES), None)
    if named is None or named.text is None:
        return None
    return named.text.decode("utf-8", "replace")[:80]


def _window(start: int, end: int, total: int, pad: int, label: str) -> Span:
    pad = max(pad, 0)
    return Span(max(1, start - pad), min(total, end + pad), label)


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def _indent_span(lines: list[str], start: int, end: int, limit: int) -> Span:
    """The outermost indented block around the change that fits the limit."""
    best = _window(start, end, len(lines), TOP_LEVEL_CONTEXT, "lines around the change")
    first = next((i for i in range(start - 1, min(end, len(lines))) if lines[i].strip()), None)
    if first is None:
        return best
    level = _indent(lines[first])
    i = start - 2
    while i >= 0 and level > 0:
        if lines[i].strip() and _indent(lines[i]) < level:
            level = _indent(lines[i])
            block_end = _block_end(lines, end, level)
            if block_end - i > limit:
                break
            best = Span(i + 1, block_end, "enclosing block (by indentation)")
        i -= 1
    return best


def _block_end(lines: list[str], end: int, level: int) -> int:
    """The last line of a block opened at `level`: up to the next line at or above that
    level, which is included when it closes the block (`}`, `end`, `)`)."""
    for j in range(end, len(lines)):
        line = lines[j]
        if line.strip() and _indent(line) <= level:
            closes = line.strip()[:1] in ("}", ")", "]") or line.strip().startswith("end")
            return j + 1 if closes else j
    return len(lines)


def merge(spans: list[Span]) -> list[Span]:
    """Overlapping or touching spans joined; labels kept once each, in order."""
    merged: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if merged and span.start <= merged[-1].end + 1:
            last = merged[-1]
            labels = last.label.split("; ")
            label = last.label if span.label in labels else f"{last.label}; {span.label}"
            merged[-1] = Span(last.start, max(last.end, span.end), label)
        else:
            merged.append(span)
    return merged
