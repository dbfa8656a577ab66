"""A line of untrusted text unable to start a block of its own (a heading, a quote, a
table, a rule, a setext underline, a fence, an HTML block), so model text cannot pass for
the product's own words wherever it lands.
"""

from __future__ import annotations

import re

# One list marker (`-`, `+`, `*`, `1.`, `1)` followed by a blank), after indentation: a
# list item's content can start a block again (`- ## x`).
_MARKER = re.compile(r"[ \t]*+(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t]|$)")
# Thematic breaks, setext underlines and table delimiter rows (`---`, `* * *`, `===`,
# `|:--|--|`) are nothing but these characters; the match is the last other character.
_NOT_RULE = re.compile(r"[^-*_=+:| \t][-*_=+:| \t]*+$")
# ATX heading, block quote, HTML block, table row, fence.
_OPENS_BLOCK = re.compile(r"[#>|<]|`{3}|~{3}")
_CONTAINER = re.compile(r"(?:[ \t]*+>)*+[ \t]*+")
_ORDERED = re.compile(r"[0-9]{1,9}(?=[.)](?:[ \t]|$))")


def neutralize_line(line: str) -> str:
    """`line` unable to start a heading, a quote, a table, a rule, a setext underline, a
    fence or an HTML block, also inside the list items it may open (`1. * * *`): a
    backslash before the character that would (it renders as nothing, wherever the line
    lands). Linear: where the rule characters run to the end is found once."""
    other = _NOT_RULE.search(line)
    rule_from = other.start() + 1 if other else 0  # from here on, only rule characters
    text_end = len(line.rstrip(" \t"))
    at = 0
    while True:
        if at >= rule_from and text_end > at:  # the rest is a rule, underline or delimiter
            at = _after_blanks(line, at)
            return line[:at] + "\\" + line[at:]
        marker = _MARKER.match(line, at)
        if marker is None:
            break
        at = marker.end()
    at = _after_blanks(line, at)
    if _OPENS_BLOCK.match(line, at):
        return line[:at] + "\\" + line[at:]
    return line


def _after_blanks(line: str, at: int) -> int:
    while at < len(line) and line[at] in " \t":
        at += 1
    return at


def escape_lead(text: str, *, every_line: bool = True) -> str:
    """`text`, which replaces a link and may land at the start of a line, unable to start a
    block there: a list marker is escaped too (`1\\.`, `\\-`), then whatever `neutralize_line`
    escapes. With `every_line`, every later line of it (a link's text may span lines) gets
    the same after its quote markers."""
    first, newline, tail = text.partition("\n")
    if not every_line:
        return _escape_start(first) + newline + tail
    rest = tail.split("\n") if newline else []
    lines = [_escape_start(first)]
    for line in rest:
        at = _CONTAINER.match(line)
        cut = at.end() if at else 0
        lines.append(line[:cut] + _escape_start(line[cut:]))
    return "\n".join(lines)


def _escape_start(line: str) -> str:
    ordered = _ORDERED.match(line)
    if ordered:
        return line[: ordered.end()] + "\\" + line[ordered.end() :]
    if re.match(r"[-+*](?:[ \t]|$)", line):
        return "\\" + line
    return neutralize_line(line)
