"""`.github/council.yml` read defensively: bounded in size, depth and (after aliases) nodes,
every key and list item mapped to its line, and an issue placed at the line of the key it
is about."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import yaml

from bot.config import MAX_CONFIG_CHARS, ConfigIssue, KeyPath

__all__ = ["MAX_DEPTH", "MAX_NODES", "Parsed", "Unreadable", "issue_at", "parse"]

# A config is a few dozen values; these bound what a hostile file can make us walk.
MAX_DEPTH = 16
MAX_NODES = 10_000  # counted after alias expansion, so an anchors bomb stops here


class Unreadable(Exception):
    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


@dataclass
class Parsed:
    data: object
    lines: dict[KeyPath, int]
    issues: list[ConfigIssue]


def parse(text: str) -> Parsed:
    """The file's data, the line of each key, and its duplicate keys; `Unreadable` when it
    is too large, too deep, expands too far or is not YAML."""
    if len(text) > MAX_CONFIG_CHARS:
        raise Unreadable(f"larger than {MAX_CONFIG_CHARS // 1024} KiB")
    try:
        _scan(text)
        return _compose(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "not valid YAML"
        raise Unreadable(
            f"YAML error: {problem}", None if mark is None else mark.line + 1
        ) from None
    except yaml.YAMLError as err:
        raise Unreadable(f"YAML error: {type(err).__name__}") from None


def issue_at(path: KeyPath, reason: str, lines: dict[KeyPath, int]) -> ConfigIssue:
    """An issue about the key at `path`, on its line (or its nearest parent's)."""
    return ConfigIssue(key=_dotted(path), reason=reason, line=_nearest_line(path, lines))


def _scan(text: str) -> None:
    """Bound the nesting before composing (PyYAML's composer recurses per level); the
    event parser itself is a state machine, so this pass is safe on any input."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise Unreadable(f"nested more than {MAX_DEPTH} levels deep", _line(event))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _line(item: yaml.Event | yaml.Node) -> int | None:
    mark = item.start_mark
    return None if mark is None else mark.line + 1


def _walk(root: yaml.Node) -> tuple[dict[KeyPath, int], list[ConfigIssue]]:
    """Map each key and list item to its line, counting nodes as if aliases were copied."""
    lines: dict[KeyPath, int] = {}
    issues: list[ConfigIssue] = []
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, ())]
    visited = 0
    while stack:
        node, path = stack.pop()
        visited += 1
        # Aliases can nest a collection in itself: bound the depth here too, not only in _scan.
        if visited > MAX_NODES or len(path) > MAX_DEPTH:
            raise Unreadable(f"expands to more than {MAX_NODES} values (YAML aliases?)")
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
                child = (*path, key)
                lines[child] = _line(key_node) or 0
                if key in seen:
                    issues.append(issue_at(child, "duplicate key; the last one is used", lines))
                seen.add(key)
                stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                lines[(*path, index)] = _line(item) or 0
                stack.append((item, (*path, index)))
    return lines, issues


def _compose(text: str) -> Parsed:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Parsed(None, {}, [])
        lines, issues = _walk(node)
        return Parsed(loader.construct_document(node), lines, issues)
    finally:
        loader.dispose()


def _dotted(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _nearest_line(path: KeyPath, lines: dict[KeyPath, int]) -> int | None:
    for end in range(len(path), 0, -1):
        line = lines.get(path[:end])
        if line:
            return line
    return None
