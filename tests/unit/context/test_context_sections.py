"""Every section says which head lines it shows, and shows exactly those: each numbered line
of its text carries the head's number and the head's text, its caption lists the same runs,
and `council context --json` reports them. Built on a small repository made here, with every
kind of section: the diff, the code around it, a file it names, a related file, a test, the
guidance and the description."""

from __future__ import annotations

import asyncio
import difflib
import re

import pytest

from bot.cli.context import context_json, seats_text
from bot.context import BuiltContext, PullRequestMeta, Section, build_context
from bot.tokens import TokenEstimator

LICENCE = "# Copyright (c) 2024 Example Corp.\n" + "".join(
    f"# Licensed under the Apache License, Version 2.0; see LICENSE, clause {n}.\n"
    for n in range(2, 21)
)
IMPORTS = (
    "import os\nimport re\nimport sys\nimport json\nimport math\n"
    "from collections import (\n    OrderedDict,\n    defaultdict,\n)\n"
    "from decimal import Decimal\nfrom fractions import Fraction\n"
    "from pathlib import Path\nfrom typing import Any\n"
    "from itertools import chain\nfrom functools import cache\n"
)  # 15 lines
UTIL = (
    LICENCE
    + "\n"
    + IMPORTS
    + "\n\n"
    + "".join(
        f"def helper_{i}(value):\n    step = value * {i}\n    return step + {i}\n\n\n"
        for i in range(12)
    )
    + "def normalise_total(items):\n"
    + "    total = sum(item.price for item in items)\n"
    + "    return round(total, 2)\n\n\n"
    + "".join(
        f"def tail_{i}(value):\n    step = value - {i}\n    return step * {i}\n\n\n"
        for i in range(12)
    )
)
SERVICE_BEFORE = (
    '"""Orders: totals and the rest."""\n\n'
    "from pkg.util import normalise_total\n\n\n"
    + "".join(
        f"def before_{i}(order):\n    value = order.count + {i}\n    return value\n\n\n"
        for i in range(30)
    )
    + "def compute(order):\n"
    + "    items = order.items\n"
    + "    total = 0\n"
    + "    return total\n\n\n"
    + "".join(
        f"def after_{i}(order):\n    value = order.count - {i}\n    return value\n\n\n"
        for i in range(30)
    )
)
SERVICE = SERVICE_BEFORE.replace(
    "    total = 0\n",
    "    total = normalise_total(items)\n    settings = open('config/settings.json')\n",
)
REPO = {
    "pkg/__init__.py": "",
    "pkg/util.py": UTIL,
    "pkg/service.py": SERVICE,
    "pkg/api.py": "from pkg.service import compute\n\n\ndef handler(order):\n"
    "    return compute(order)\n",
    "tests/test_service.py": "import pytest\n\nfrom pkg.service import compute\n\n\n"
    "def test_compute():\n    assert compute is not None\n",
    "config/settings.json": '{\n  "currency": "EUR",\n  "rounding": 2\n}\n',
    "README.md": "# Shop\n\nA shop.\n\n## Orders\n\nThe service rounds totals.\n"
    + "".join(f"Line {n} about other things.\n" for n in range(40)),
}
DIFF = "diff --git a/pkg/service.py b/pkg/service.py\n" + "".join(
    difflib.unified_diff(
        SERVICE_BEFORE.splitlines(keepends=True),
        SERVICE.splitlines(keepends=True),
        "a/pkg/service.py",
        "b/pkg/service.py",
    )
)
GUTTER = re.compile(r"^ *(\d+)(?: ([+ -])(?: (.*))?)?$")  # an empty line: its number alone
CAPTION = re.compile(r"^@@ lines (.+) of (\S+) @@$")


def build(budget: int) -> BuiltContext:
    async def read(path: str) -> bytes | None:
        return REPO[path].encode() if path in REPO else None

    return asyncio.run(
        build_context(
            PullRequestMeta(title="Totals are normalised", body="Uses normalise_total."),
            DIFF,
            sorted(REPO),
            read,
            budget_tokens=budget,
            estimator=TokenEstimator(),
        )
    )


def runs(numbers: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in numbers:
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def numbered(section: Section) -> list[tuple[int, str]]:
    """The head lines the text shows by its gutter: a diff's added and context lines (its
    removed lines are old-side), every line of any other section."""
    found = []
    for line in section.text.split("\n"):
        match = GUTTER.match(line)
        if match and (match.group(2) or " ") in "+ ":
            found.append((int(match.group(1)), match.group(3) or ""))
    return found


def caption_runs(section: Section) -> list[tuple[int, int]]:
    first = section.text.split("\n", 1)[0]
    match = CAPTION.match(first)
    assert match, first
    assert match.group(2) == section.path
    bare = re.sub(r"\([^()]*(?:\([^()]*\)[^()]*)*\)", "", match.group(1))  # what each holds
    return [(int(a), int(b)) for a, b in re.findall(r"(\d+)-(\d+)", bare)]


def check_round_trip(built: BuiltContext) -> None:
    rendered = seats_text(built)
    listed = context_json(built)["sections"]
    assert len(listed) == len(built.sections)
    for section, entry in zip(built.sections, listed, strict=True):
        assert section.text in rendered  # the seats read this very text
        assert (entry["kind"], entry["path"]) == (section.kind, section.path)
        if section.path is None or section.path.endswith("/"):
            assert section.lines == {} and entry["lines"] == []
            continue
        shown = section.lines[section.path]
        assert set(section.lines) == {section.path}
        assert entry["lines"] == [[a, b] for a, b in shown]
        lines = numbered(section)
        assert runs([n for n, _ in lines]) == shown, section.kind
        head = REPO[section.path].split("\n")
        for number, text in lines:
            assert head[number - 1] == text, (section.path, number)
        if section.kind != "diff":
            assert caption_runs(section) == shown, section.text.split("\n", 1)[0]
            skips(section)


def skips(section: Section) -> None:
    """A `⋮` line stands exactly where the numbers jump."""
    previous: int | None = None
    skipped = False
    for line in section.text.split("\n")[1:]:
        if line == "\u22ee":
            skipped = True
            continue
        match = GUTTER.match(line)
        if not match:
            continue
        number = int(match.group(1))
        if previous is not None:
            assert skipped == (number != previous + 1), (section.path, previous, number)
        previous, skipped = number, False


@pytest.mark.parametrize("budget", [60_000, 6_000, 2_500, 1_200])
def test_every_section_shows_exactly_the_lines_it_says(budget: int) -> None:
    check_round_trip(build(budget))


def test_every_kind_of_section_is_there_and_numbered() -> None:
    built = build(60_000)
    by = {(s.kind, s.path): s for s in built.sections}
    assert set(by) >= {
        ("description", None),
        ("diff", "pkg/service.py"),
        ("related", "config/settings.json"),  # named in the change
        ("related", "pkg/util.py"),  # defines what the changed `compute` calls
        ("related", "pkg/api.py"),  # calls the changed `compute`
        ("test", "tests/test_service.py"),
        ("guidance", "README.md"),
    }
    assert by[("related", "config/settings.json")].why == "named in pkg/service.py"
    named = by[("related", "config/settings.json")].text.split("\n")
    assert named[:2] == ["@@ lines 1-4 (whole file) of config/settings.json @@", "   1   {"]
    # The changed `compute` is all in the diff: nothing else of its file is sent (the 60
    # other functions of the file are not about the change).
    assert ("code", "pkg/service.py") not in by
    api = by[("related", "pkg/api.py")]
    assert api.why == "calls the changed `compute`"
    assert api.text.split("\n")[:2] == [
        "@@ lines 1-5 (whole file) of pkg/api.py @@",
        "   1   from pkg.service import compute",
    ]


def test_a_related_files_licence_and_imports_are_not_sent() -> None:
    built = build(60_000)
    (util,) = [s for s in built.sections if s.path == "pkg/util.py"]
    head_lines = set(range(1, 20 + 1 + 15 + 2 + 1))  # licence, blank, imports, blanks
    shown = {n for a, b in util.lines["pkg/util.py"] for n in range(a, b + 1)}
    assert not shown & head_lines
    assert "Copyright" not in util.text and "Licensed" not in util.text
    assert "import" not in util.text
    # What it shows is where the change's name is defined, said in the caption.
    definition = UTIL.split("\n").index("def normalise_total(items):") + 1
    assert definition in shown
    assert util.text.split("\n", 1)[0] == (
        "@@ lines 99-101 (function `normalise_total`, lines 99-101, called by the changed "
        "`compute`) of pkg/util.py @@"
    )
    assert len(shown) < 40  # not the whole file: 110 lines past its head


def test_a_short_file_is_sent_whole_but_for_its_imports_save_the_one_the_change_touches() -> None:
    built = build(60_000)
    (test,) = [s for s in built.sections if s.path == "tests/test_service.py"]
    assert test.lines == {"tests/test_service.py": [(3, 3), (6, 7)]}
    assert test.text.split("\n")[:5] == [
        "@@ lines 3-3 (imports compute), 6-7 (after its imports) of tests/test_service.py @@",
        "   3   from pkg.service import compute",  # the function the change is in
        "\u22ee",
        "   6   def test_compute():",
        "   7       assert compute is not None",
    ]


def test_a_hunk_at_the_end_of_a_file_is_not_extended_past_it() -> None:
    before = "".join(f"line_{n} = {n}\n" for n in range(1, 11))
    after = before + "line_11 = 11\n"
    diff = "diff --git a/m.py b/m.py\n" + "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), "a/m.py", "b/m.py"
        )
    )

    async def read(path: str) -> bytes | None:
        return after.encode() if path == "m.py" else None

    built = asyncio.run(build_context(PullRequestMeta(title="t"), diff, ["m.py"], read))
    (section,) = [s for s in built.sections if s.kind == "diff"]
    assert section.lines == {"m.py": [(5, 11)]}  # three more lines above; none below line 11
    assert section.text.endswith("  11 + line_11 = 11\n")
