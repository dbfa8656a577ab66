"""The `/council` command grammar: which comment lines are commands, and what they ask for.

Pure: a comment body in, a `Command` or None out. The rules follow what GitHub renders, so
a command is something the reader sees as a line of plain text, never as code or a quote:

- A command line starts with `/council` after at most three spaces (four spaces or a tab
  make an indented code block in Markdown, so such a line is never a command). The word is
  followed by whitespace or the end of the line: `/councilor` and `/council,` are not
  commands.
- Lines inside fenced code blocks (``` or ~~~, three or more, closed by a fence of the same
  character at least as long; an unclosed fence runs to the end of the comment) and inside
  HTML comments (`<!-- ... -->`, which GitHub hides) are skipped. A quoted line
  (`> /council`) does not start with `/council`, so it is not a command either.
- Case does not matter for `/council` and its keywords. The first command line wins; a
  command is one line (the question ends at the end of that line).
- After `/council`: nothing -> convene with the configured protocol; `help` or `cancel` as
  the first word -> that command (the rest of the line is ignored); a protocol name as the
  first word -> convene with that protocol, the rest of the line (if any) is the question;
  any other words -> convene with the configured protocol and those words as the question.
- After `debate`, a mode flag may come first: `--quick`, `--standard` or `--full`
  (`/council debate --full should this cache live in Redis?`).
- After `board`, seat adjustments may come first: `+persona` seats that persona, `-persona`
  keeps it off the board, for this run (`/council board +appsec-reviewer -docs-reviewer`).
- `--inline` anywhere after `/council` (a word of its own, any case) posts the findings as
  review comments on their lines for this run (`/council quick --inline is it safe?`); it is
  taken out of the line before the rest is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from bot.council.protocols import DEBATE_MODES, DebateMode, names
from bot.council.protocols.roles import DEBATING, SEATING

# The protocols and the debate modes are read from the protocol table, which is pure: the
# webhook receiver, the one user of this module on the hot path, does not pay for the
# engine and its model SDKs.
CommandKind = Literal["convene", "help", "cancel"]

_COMMAND = re.compile(r" {0,3}/council(?:[ \t]+(?P<rest>.*?))?[ \t]*", re.IGNORECASE)
_FENCE_OPEN = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)")
_HTML_COMMENT_OPEN = re.compile(r" {0,3}<!--")
_SEAT_CHANGE = re.compile(r"(?P<sign>[+-])(?P<persona>[a-z][a-z0-9_-]{0,63})")
_INLINE_FLAG = re.compile(r"(?<!\S)--inline(?!\S)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Command:
    kind: CommandKind
    protocol: str | None = None  # None: the repo's configured protocol
    question: str | None = None
    mode: DebateMode | None = None  # debate only; None: the repo's debate.mode
    board_add: tuple[str, ...] = ()  # board only: personas seated for this run
    board_remove: tuple[str, ...] = ()  # board only: personas kept off for this run
    inline: bool = False  # `--inline`: findings as review comments for this run


def _either(words: tuple[str, ...]) -> str:
    """`a`, `b` or `c`"""
    quoted = [f"`{word}`" for word in words]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def grammar_help() -> str:
    """The commands, with the protocols and debate modes of the table as it is now."""
    flags = _either(tuple(f"--{mode}" for mode in DEBATE_MODES))
    modes = "; ".join(f"`{mode}` {rule.summary}" for mode, rule in DEBATE_MODES.items())
    return _GRAMMAR.format(protocols=_either(names()), flags=flags, modes=modes)


_GRAMMAR = f"""\
**Council commands** (in a comment on a pull request, on a line of their own):

| command | what it does |
| --- | --- |
| `/council` | convene the council with the repository's configured protocol |
| `/council <question>` | convene and ask the council this question |
| `/council <protocol> [question]` | convene with {{protocols}} |
| `/council {DEBATING} --full [question]` | a debate in a mode ({{flags}}): {{modes}} |
| `/council {SEATING} +persona -persona [question]` | adjust the board for this run: seat \
`+` personas, keep `-` personas off |
| `/council --inline [...]` | also post the findings as review comments on their lines, \
for this run (anywhere after `/council`) |
| `/council help` | show this help and the repository's effective configuration |
| `/council cancel` | stop the deliberation running on this pull request |

The command must start the line (up to three spaces before it are fine); lines in code \
blocks, in quotes (`> /council`) and in HTML comments are not commands. The first command \
in a comment wins. Only people with write or admin access to the repository can convene \
the council. Example: `/council {DEBATING} should this cache live in Redis?`
"""
# With the built-in protocols (`/council help` builds it again: `grammar_help`).
GRAMMAR_HELP = grammar_help()


def parse_command(body: str) -> Command | None:
    """The first command in a comment body, or None if it has none."""
    if "/council" not in body.lower():  # cheap exit for the common comment
        return None
    for line in _visible_lines(body):
        match = _COMMAND.fullmatch(line)
        if match is not None:
            rest = match.group("rest") or ""
            without = _INLINE_FLAG.sub(" ", rest)
            command = _command_from(" ".join(without.split()) if without != rest else rest)
            if without != rest and command.kind == "convene":
                command = replace(command, inline=True)
            return command
    return None


def _command_from(rest: str) -> Command:
    words = rest.split(maxsplit=1)
    if not words:
        return Command(kind="convene")
    first = words[0].lower()
    if first in ("help", "cancel"):
        return Command(kind="help" if first == "help" else "cancel")
    if first in names():
        tail = words[1].strip() if len(words) > 1 else ""
        if first == DEBATING:
            return _debate(tail)
        if first == SEATING:
            return _board(tail)
        return Command(kind="convene", protocol=first, question=tail or None)
    return Command(kind="convene", question=rest.strip())


def _debate(tail: str) -> Command:
    """`--quick`, `--standard` or `--full` first (any case); another `--word` is part of
    the question, as any text is."""
    words = tail.split(maxsplit=1)
    mode: DebateMode | None = None
    if words and words[0].lower() in _MODE_FLAGS:
        mode = _MODE_FLAGS[words[0].lower()]
        tail = words[1].strip() if len(words) > 1 else ""
    return Command(kind="convene", protocol=DEBATING, question=tail or None, mode=mode)


_MODE_FLAGS: dict[str, DebateMode] = {f"--{m}": rule.name for m, rule in DEBATE_MODES.items()}


def _board(tail: str) -> Command:
    """Leading `+persona` / `-persona` words adjust the board; the rest is the question.
    A persona both added and removed is removed (the later word does not win: keeping a
    persona off is the safer reading of a contradiction)."""
    add: list[str] = []
    remove: list[str] = []
    words = tail.split()
    taken = 0
    for word in words:
        change = _SEAT_CHANGE.fullmatch(word.lower())
        if change is None:
            break
        persona = change.group("persona")
        target = add if change.group("sign") == "+" else remove
        if persona not in target:
            target.append(persona)
        taken += 1
    question = " ".join(words[taken:]) if taken else tail
    return Command(
        kind="convene",
        protocol=SEATING,
        question=question or None,
        board_add=tuple(p for p in add if p not in remove),
        board_remove=tuple(remove),
    )


def _visible_lines(body: str) -> list[str]:
    """The lines of `body` that Markdown renders as text: not code fences, not comments."""
    visible: list[str] = []
    fence: str | None = None  # the open fence's characters, e.g. "````"
    in_html_comment = False
    for line in body.splitlines():
        if fence is not None:
            if _closes_fence(line, fence):
                fence = None
        elif in_html_comment:
            in_html_comment = "-->" not in line
        elif (opened := _opens_fence(line)) is not None:
            fence = opened
        elif _HTML_COMMENT_OPEN.match(line):
            in_html_comment = "-->" not in line[line.index("<!--") + 4 :]
        else:
            visible.append(line)
    return visible


def _opens_fence(line: str) -> str | None:
    match = _FENCE_OPEN.fullmatch(line)
    if match is None:
        return None
    fence = match.group("fence")
    # CommonMark: a backtick fence's info string cannot contain a backtick.
    if fence[0] == "`" and "`" in match.group("info"):
        return None
    return fence


def _closes_fence(line: str, fence: str) -> bool:
    stripped = line.strip()
    indent = len(line) - len(line.lstrip(" "))
    return (
        indent <= 3
        and len(stripped) >= len(fence)
        and stripped == fence[0] * len(stripped)
        and not line.startswith("\t")
    )
