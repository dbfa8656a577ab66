"""Packing: never over budget, never a cut line, deterministic, fair to small files."""

from __future__ import annotations

import asyncio
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.context import BuiltContext, PullRequestMeta, build_context
from bot.tokens import TokenEstimator
from tests.support.diffs import diff_of


def module(name: str, functions: int) -> str:
    return "".join(
        f"def {name}_{i}(x):\n    y = x + {i}\n    return y * 2\n\n\n" for i in range(functions)
    )


REPO = {
    "pkg/big.py": module("big", 400).replace("+ 7", "- 7"),
    "pkg/small.py": module("small", 3).replace("+ 1", "- 1"),
    "pkg/mid.py": module("mid", 40).replace("+ 5", "- 5"),
    "pkg/helper.py": module("helper", 30),
    "tests/test_small.py": "from pkg.small import small_1\n" + module("test", 20),
    "README.md": "# Readme\n" + "Some words about pkg/small.py here.\n" * 200,
}
DIFF = "".join(
    diff_of(p, REPO[p].replace(a, b), REPO[p])
    for p, a, b in (("pkg/big.py", "- 7", "+ 7"), ("pkg/small.py", "- 1", "+ 1"),
                    ("pkg/mid.py", "- 5", "+ 5"))
)  # fmt: skip
ALL_LINES = {line for text in REPO.values() for line in text.split("\n")} | set(DIFF.split("\n"))


async def read(path: str) -> bytes | None:
    return REPO[path].encode() if path in REPO else None


def build(budget: int, diff: str = DIFF, body: str = "A change.") -> BuiltContext:
    return asyncio.run(
        build_context(
            PullRequestMeta(title="t", body=body),
            diff,
            sorted(REPO),
            read,
            budget_tokens=budget,
            estimator=TokenEstimator(),
        )
    )


def _whole_lines(built: BuiltContext) -> None:
    for section in built.sections:
        assert section.text.endswith("\n")
        for line in section.text.split("\n")[:-1]:
            if line.startswith(("[... ", "@@ lines ", "@@ -")) or line == "\u22ee":
                continue  # the builder's own notes, captions, skips and (extended) hunk headers
            if section.kind == "description":
                continue
            line = _ungutter(line)  # every line of a file is numbered, a diff's as in the diff
            assert line in ALL_LINES or line[1:] in ALL_LINES, line


GUTTER = re.compile(r"^ *(\d+)(?: ([+ -])(?: (.*))?)?$")


def _ungutter(line: str) -> str:
    """A numbered diff line as the diff wrote it (`  86 + x` -> `+x`)."""
    m = GUTTER.match(line)
    return f"{m.group(2) or ' '}{m.group(3) or ''}" if m else line


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=1, max_value=40_000))
def test_never_over_budget_and_never_a_cut_line(budget: int) -> None:
    built = build(budget)
    assert built.tokens == sum(s.tokens for s in built.sections)
    assert built.tokens <= built.usable < budget or budget < 5
    estimator = TokenEstimator()
    for section in built.sections:
        assert section.tokens >= estimator.estimate(section.text)
    _whole_lines(built)


def test_every_budget_from_tiny_to_large() -> None:
    previous = -1
    for budget in (1, 10, 100, 300, 600, 1_000, 2_000, 5_000, 10_000, 30_000, 100_000):
        built = build(budget)
        assert built.tokens <= built.usable
        assert built.tokens >= previous  # more budget never packs less
        previous = built.tokens
        _whole_lines(built)


def test_deterministic() -> None:
    first, second = build(3_000), build(3_000)
    assert first.model_dump_json() == second.model_dump_json()


def test_one_huge_file_cannot_starve_the_rest() -> None:
    big = module("huge", 2_000)
    diff = diff_of("pkg/huge.py", "", big) + diff_of("pkg/tiny.py", "", "X = 1\n")
    built = build(6_000, diff=diff)
    sent = {s.path for s in built.sections if s.kind == "diff"}
    assert {"pkg/huge.py", "pkg/tiny.py"} <= sent
    assert any(o.path == "pkg/huge.py" and "did not fit" in o.reason for o in built.omitted)


def test_what_did_not_fit_is_listed_by_path() -> None:
    built = build(2_500)
    reasons = {o.path: o.reason for o in built.omitted}
    assert reasons["README.md"].startswith("guidance: ")
    assert reasons["README.md"].endswith("not included: over the share guidance may take")
    # The changed functions are all in their diffs: the rest of their files is not sent, so
    # not listed as left out either.
    assert "pkg/mid.py" not in reasons
    assert all(o.reason for o in built.omitted)
    # With less room the list names what it can and counts the rest by kind.
    tight = build(800)
    assert tight.omitted[-1].path.endswith(" more")
    assert tight.omitted[-1].reason.startswith("not listed (") and "1 guidance" in (
        tight.omitted[-1].reason
    )


def test_a_long_not_included_list_is_counted_not_dropped() -> None:
    """At a tiny budget the list has room for a few names; the rest are counted by kind,
    and the whole list is charged to the budget."""
    many = "".join(diff_of(f"pkg/m{i}.py", "", module(f"m{i}", 4)) for i in range(60))
    built = build(1_500, diff=many)
    *named, last = built.omitted
    assert named and last.path.endswith(" more") and last.reason.startswith("not listed (")
    counted = sum(int(n.replace(",", "")) for n in re.findall(r"(\d[\d,]*) \w+", last.reason))
    assert counted == int(last.path.split()[0])


def test_generated_vendored_and_lock_files_are_listed_not_sent() -> None:
    diff = (
        diff_of("package-lock.json", "{}\n", "".join(f'"p{i}": {i},\n' for i in range(30)))
        + diff_of("yarn.lock", "a@1:\n", "a@2:\n")
        + diff_of("vendor/lib/x.go", "", "package x\n")
        + diff_of("api/x.pb.go", "", "// Code generated by protoc. DO NOT EDIT.\npackage api\n")
        + diff_of("docs/skip.md", "", "hello\n")
        + diff_of("pkg/small.py", "", "X = 1\n")
    )
    built = asyncio.run(
        build_context(PullRequestMeta(title="t"), diff, [], read, ignore_globs=["docs/**"])
    )
    reasons = {o.path: o.reason for o in built.omitted}
    assert reasons["package-lock.json"].startswith("lock file")
    assert reasons["vendor/lib/x.go"].startswith("vendored")
    assert reasons["api/x.pb.go"].startswith("generated")
    assert reasons["docs/skip.md"].startswith("matches paths.ignore")
    # A lock file's small change (a dependency bumped) is sent, after everything else.
    assert [s.path for s in built.sections if s.kind == "diff"] == ["pkg/small.py", "yarn.lock"]
    (lock,) = [s for s in built.sections if s.path == "yarn.lock"]
    assert "lock file, a small change: sent" in lock.why


def test_lock_files_are_sent_when_nothing_else_changed() -> None:
    diff = diff_of("poetry.lock", "a = 1\n", "a = 2\n")
    built = asyncio.run(build_context(PullRequestMeta(title="t"), diff, [], read))
    assert [s.path for s in built.sections if s.kind == "diff"] == ["poetry.lock"]


def test_changed_code_is_ranked_by_risk() -> None:
    diff = diff_of("docs/guide.md", "", "words\n" * 50) + diff_of(
        "app/auth.py", "", "def login(p):\n    return eval(p)\n"
    )
    built = asyncio.run(build_context(PullRequestMeta(title="t"), diff, [], read))
    assert [s.path for s in built.sections if s.kind == "diff"] == ["app/auth.py", "docs/guide.md"]
