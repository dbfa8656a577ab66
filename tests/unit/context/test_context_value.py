"""Packing by value: what a reviewer needs first is sent first, and the budget is used, not
exceeded, by the estimator's own count of everything sent."""

from __future__ import annotations

import asyncio
import difflib
import re

from bot.context import BuiltContext, PullRequestMeta, build_context
from bot.context.diff import parse_diff
from bot.context.pack import frame_text, title_text
from bot.context.sections import hunk_value
from bot.context.shown import shown_lines
from bot.council.prompts import ContextSection, render_context
from bot.tokens import TokenEstimator


def diff_of(path: str, before: str, after: str, context: int = 3) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"a/{path}",
        f"b/{path}",
        n=context,
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


def functions(prefix: str, count: int, body: int = 6) -> list[str]:
    out = []
    for i in range(count):
        out.append(f"def {prefix}_{i}(value):")
        out += [f"    step_{j} = value * {j} + {i}" for j in range(body)]
        out += ["    return value", ""]
    return out


def build(
    repo: dict[str, str], diff: str, budget: int, estimator: TokenEstimator | None = None
) -> BuiltContext:
    async def read(path: str) -> bytes | None:
        return repo[path].encode() if path in repo else None

    return asyncio.run(
        build_context(
            PullRequestMeta(title="A change", body="Reworks the module."),
            diff,
            sorted(repo),
            read,
            budget_tokens=budget,
            estimator=estimator or TokenEstimator(),
        )
    )


def rendered_tokens(built: BuiltContext, estimator: TokenEstimator) -> int:
    sections = [
        ContextSection(kind=s.kind, path=s.path, why=s.why, text=s.text) for s in built.sections
    ]
    text = render_context(built.title, sections, [f"{o.path}: {o.reason}" for o in built.omitted])
    return estimator.estimate(text)


# --- hunks within a file -------------------------------------------------------------------


def _module_change() -> tuple[dict[str, str], str]:
    """One file: a new import at the top, reformatted lines in the middle, and a changed
    condition near the end (the risky part)."""
    before = ["import os", "", *functions("f", 40), "def check(user):", "    if user.admin:"]
    before += ["        return True", "    return False", ""]
    after = list(before)
    after.insert(1, "import sys")
    middle = before.index("def f_20(value):") + 1
    after[middle + 1] = after[middle + 1].replace(" * ", "*")  # a formatting-only edit
    after[after.index("    if user.admin:")] = "    if user.admin or user.name == 'root':"
    head = "\n".join(after) + "\n"
    return {"pkg/mod.py": head}, diff_of("pkg/mod.py", "\n".join(before) + "\n", head, context=1)


def test_hunks_are_valued_logic_first_imports_and_formatting_last() -> None:
    _, diff = _module_change()
    (parsed,) = parse_diff(diff)
    imports, formatting, logic = (hunk_value(h, "python", set()) for h in parsed.hunks)
    assert logic > 1.0 > imports
    assert imports > formatting
    assert hunk_value(parsed.hunks[0], "python", {2}) > logic  # a risky pattern's line


def test_under_pressure_the_changed_logic_is_sent_before_the_import() -> None:
    repo, diff = _module_change()
    sizes = []
    for budget in range(300, 2_000, 25):
        built = build(repo, diff, budget)
        shown = shown_lines(built.sections).get("pkg/mod.py", set())
        check = len(repo["pkg/mod.py"].split("\n")) - 3  # the changed condition's line
        sizes.append((budget, check in shown, 2 in shown))
    # Some budget shows the condition without the import; none shows the import alone.
    assert any(logic and not imports for _, logic, imports in sizes)
    assert not any(imports and not logic for _, logic, imports in sizes)


def test_each_hunk_is_extended_with_more_lines_of_the_head() -> None:
    repo, diff = _module_change()
    built = build(repo, diff, 60_000)
    (section,) = [s for s in built.sections if s.kind == "diff"]
    head = repo["pkg/mod.py"].split("\n")
    check = head.index("    if user.admin or user.name == 'root':") + 1
    context = {}  # new-side number -> text, of the context lines the diff section shows
    for line in section.text.split("\n"):
        numbered = re.match(r"^ *(\d+)(?: (.)(?: (.*))?)?$", line)
        if numbered and (numbered.group(2) or " ") == " ":
            context[int(numbered.group(1))] = numbered.group(3) or ""
    # git gave one line of context (n=1); the section shows three more on each side, each
    # numbered as at head and reading as the head reads.
    above = range(check - 4, check - 1)
    assert all(context.get(n) == head[n - 1] for n in above if head[n - 1])
    assert set(above) <= set(context) | {n for n in above if not head[n - 1]}
    assert "@@ -" in section.text and f"+{check - 4}," in section.text


# --- across files ----------------------------------------------------------------------


def test_tests_come_after_the_source_they_test() -> None:
    source = "\n".join(functions("calc", 30)) + "\n"
    test = "\n".join(functions("test_calc", 30)) + "\n"
    repo = {"pkg/calc.py": source, "tests/test_calc.py": test}
    diff = diff_of("pkg/calc.py", "", source) + diff_of("tests/test_calc.py", "", test)
    built = build(repo, diff, 3_000)
    shown = shown_lines(built.sections)
    assert len(shown.get("pkg/calc.py", set())) > len(shown.get("tests/test_calc.py", set()))
    whole = build(repo, diff, 5_500)
    assert len(shown_lines(whole.sections)["pkg/calc.py"]) == len(source.split("\n")) - 1


def test_widened_code_nearest_the_change_comes_first() -> None:
    lines = functions("far", 60, body=4)
    lines[150] = lines[150] + "  # changed"
    before = "\n".join(functions("far", 60, body=4)) + "\n"
    head = "\n".join(lines) + "\n"
    repo = {"pkg/far.py": head}
    diff = diff_of("pkg/far.py", before, head)
    # The definition line 151 is in.
    enclosing = max(n for n, text in enumerate(lines, 1) if text.startswith("def ") and n <= 151)
    assert enclosing < 151 < enclosing + 7
    for budget in (500, 700, 1_000):
        shown = shown_lines(build(repo, diff, budget).sections)["pkg/far.py"]
        assert set(range(enclosing, enclosing + 7)) <= shown  # the whole enclosing function
        assert 1 not in shown and len(lines) not in shown  # the file's ends are farthest
        assert max(abs(n - 151) for n in shown) < 60


def test_guidance_takes_at_most_its_share_and_only_its_relevant_parts() -> None:
    readme = "# Project\n" + "General words about the project.\n" * 300
    readme += "## Payments\nThe payments module must round half even.\n"
    readme += "## Other\n" + "Filler line about other topics.\n" * 300
    source = "\n".join(functions("charge", 10)) + "\n"
    repo = {"README.md": readme, "payments/charge.py": source}
    budget = 6_000
    built = build(repo, diff_of("payments/charge.py", "", source), budget)
    (guide,) = [s for s in built.sections if s.kind == "guidance"]
    assert guide.tokens <= 0.15 * budget
    assert "round half even" in guide.text  # the section that names what the change touches
    assert "General words" not in guide.text and "Filler" not in guide.text  # ...only it
    assert guide.lines == {"README.md": [(302, 303)]}
    assert "@@ lines 302-303 (Payments) of README.md @@" in guide.text
    assert "[... 602 more lines not included: 602 in sections not about the changed areas]" in (
        guide.text
    )
    reasons = {o.path: o.reason for o in built.omitted}
    assert reasons["README.md"] == (
        "guidance: 602 of 604 lines not included: 602 in sections not about the changed areas"
    )
    irrelevant = readme.replace("## Payments\nThe payments module", "## Rounding\nThe module")
    other = build(
        {**repo, "README.md": irrelevant}, diff_of("payments/charge.py", "", source), budget
    )
    assert not [s for s in other.sections if s.kind == "guidance"]  # nothing names the change
    reasons = {o.path: o.reason for o in other.omitted}
    assert reasons["README.md"] == "guidance: no section is about the changed areas"


def test_guidance_is_capped_by_the_change_it_accompanies() -> None:
    """A small change is not read beside pages of guidance: what guidance takes is bounded
    by a fifth of the rest of the material (at least 400 tokens), not by the budget."""
    readme = "".join(
        f"## Charge {n}\nThe charge module rounds half even, rule {n}.\n" + "More on it.\n" * 20
        for n in range(40)
    )
    source = "\n".join(functions("charge", 3)) + "\n"
    repo = {"README.md": readme, "payments/charge.py": source}
    estimator = TokenEstimator()
    built = build(repo, diff_of("payments/charge.py", "", source), 60_000, estimator)
    (guide,) = [s for s in built.sections if s.kind == "guidance"]
    rest = sum(s.tokens for s in built.sections if s.kind != "guidance")
    assert rest < 2_000 and guide.tokens <= max(400, rest // 5)
    assert guide.text.endswith("more lines not included: over the share guidance may take]\n")
    assert "## Charge 0" in guide.text and "## Charge 39" not in guide.text  # first first
    # The same README beside a large change may take more, up to 15% of the budget.
    big = "\n".join(functions("charge", 300)) + "\n"
    large = build(
        {**repo, "payments/charge.py": big}, diff_of("payments/charge.py", "", big), 60_000
    )
    (wide,) = [s for s in large.sections if s.kind == "guidance"]
    assert guide.tokens * 3 < wide.tokens <= 0.15 * 60_000


def test_paths_the_change_names_come_in_as_files_and_listings() -> None:
    script = (
        "const fs = require('fs');\n"
        "const dir = `client/src/locales`;\n"
        "const settings = JSON.parse(fs.readFileSync('client/src/settings.json'));\n"
        "fs.writeFileSync(`client/src/locales/${lang}.json`, data);\n"
    )
    workflow = "on:\n  push:\n    paths:\n      - 'client/src/locales/**'\n"
    repo = {
        ".github/scripts/sync.js": script,
        ".github/workflows/sync.yml": workflow,
        "client/src/settings.json": '{"languages": ["en", "tr"]}\n',
        "client/src/locales/en.json": "{}\n",
        "client/src/locales/tr.json": "{}\n",
        "CONTRIBUTING.md": "# Contributing\n" + "Be nice.\n" * 400,
    }
    diff = diff_of(".github/scripts/sync.js", "", script)
    diff += diff_of(".github/workflows/sync.yml", "", workflow)
    built = build(repo, diff, 8_000)
    by_path = {s.path: s for s in built.sections}
    assert "languages" in by_path["client/src/settings.json"].text
    assert by_path["client/src/settings.json"].why == "named in .github/scripts/sync.js"
    listing = by_path["client/src/locales/"]
    assert listing.text.split() == ["client/src/locales/en.json", "client/src/locales/tr.json"]


# --- the budget ------------------------------------------------------------------------


def test_the_context_uses_90_to_100_percent_of_its_budget_by_the_estimator() -> None:
    repo = {f"pkg/m{i}.py": "\n".join(functions(f"m{i}", 12)) + "\n" for i in range(40)}
    repo["README.md"] = "# Readme\n" + "Words about the project and its parts.\n" * 400
    diff = "".join(diff_of(p, "", t) for p, t in repo.items() if p.endswith(".py"))
    for budget in (2_000, 8_000, 16_000, 32_000):
        estimator = TokenEstimator()
        built = build(repo, diff, budget, estimator)
        used = rendered_tokens(built, estimator)
        assert 0.9 * budget <= used <= budget, (budget, used)
        assert built.omitted  # the list is sent, and charged: it is inside `used`


def test_a_small_change_is_sent_whole_and_uses_what_it_needs() -> None:
    source = "\n".join(functions("tiny", 3)) + "\n"
    repo = {"pkg/tiny.py": source}
    estimator = TokenEstimator()
    built = build(repo, diff_of("pkg/tiny.py", "", source), 60_000, estimator)
    assert rendered_tokens(built, estimator) < 2_000
    assert not built.omitted


def test_what_the_packer_charges_for_frames_is_what_render_context_writes() -> None:
    """The heading, fence and title the packer charges are the ones sent, to the character."""
    repo, diff = _module_change()
    repo["README.md"] = "# Readme\n" + "Words.\n" * 50
    built = build(repo, diff, 60_000)
    sections = [
        ContextSection(kind=s.kind, path=s.path, why=s.why, text=s.text) for s in built.sections
    ]
    rendered = render_context(built.title, sections, [])
    charged = title_text(built.title) + "".join(
        frame_text(s.kind, s.path, s.why) + s.text for s in built.sections
    )
    assert len(rendered) == len(charged) - 2  # the last section has no blank line after it


def test_a_config_value_that_is_a_path_brings_the_file_or_the_listing() -> None:
    config = "output_dir: docs/generated\nschema: config/schema.json\nname: not/a/path/here\n"
    repo = {
        "tool.yml": config,
        "docs/generated/a.md": "# A\n",
        "config/schema.json": '{"type": "object"}\n',
    }
    built = build(repo, diff_of("tool.yml", "", config), 8_000)
    by_path = {s.path: s for s in built.sections}
    assert by_path["docs/generated/"].text == "docs/generated/a.md\n"
    assert '"type": "object"' in by_path["config/schema.json"].text
    assert not any(p and p.startswith("not/") for p in by_path)  # only paths that exist


def test_a_head_the_diff_does_not_match_is_not_used_to_extend_it() -> None:
    """A diff piped in from another checkout: its hunks are shown as git wrote them."""
    repo, diff = _module_change()
    repo["pkg/mod.py"] = repo["pkg/mod.py"].replace("step_", "other_")  # not the diff's head
    built = build(repo, diff, 60_000)
    (section,) = [s for s in built.sections if s.kind == "diff"]
    assert "other_" not in section.text
    assert "@@ -363,3 +364,3 @@" in section.text  # git's own header, one line of context
    assert not [s for s in built.sections if s.kind == "code"]  # nor code read off that head


# --- work that follows what can be sent ----------------------------------------------


def test_a_diff_of_many_budgets_is_read_only_as_far_as_four_budgets() -> None:
    repo = {f"pkg/m{i:03}.py": "\n".join(functions(f"m{i}", 20)) + "\n" for i in range(120)}
    diff = "".join(diff_of(p, "", t) for p, t in repo.items())
    estimator = TokenEstimator()
    built = build(repo, diff, 4_000, estimator)
    unread = [o for o in built.omitted if "not read, the diff before it is already" in o.reason]
    counted = built.omitted[-1]
    # The list names what it can; the rest are counted: together, the files not read.
    assert unread or counted.path.endswith(" more")
    assert 0.9 * 4_000 <= rendered_tokens(built, estimator) <= 4_000
    sent = {s.path for s in built.sections if s.kind == "diff"}
    assert sent and len(sent) < 20  # only a few files fit; the rest cost no chunking


def test_one_huge_file_counts_all_its_hunks_though_few_are_chunked() -> None:
    lines = functions("big", 3_000, body=2)
    before = "\n".join(lines) + "\n"
    after = "\n".join(
        line.replace(" + ", " - ") if n % 20 == 1 else line for n, line in enumerate(lines)
    )
    repo = {"pkg/big.py": after + "\n"}
    diff = diff_of("pkg/big.py", before, after + "\n", context=1)
    (parsed,) = parse_diff(diff)
    built = build(repo, diff, 6_000)
    (note,) = [o for o in built.omitted if o.path == "pkg/big.py" and o.reason.startswith("diff")]
    missing, total = (int(n.replace(",", "")) for n in re.findall(r"[\d,]+", note.reason)[:2])
    assert total == len(parsed.hunks) > 500
    assert 0 < total - missing < 200  # what one budget shows


def test_a_long_hunk_cut_after_its_first_chunks_is_said_to_be_shown_in_part() -> None:
    source = "\n".join(functions("long", 60)) + "\n"
    built = build({"pkg/long.py": source}, diff_of("pkg/long.py", "", source), 1_500)
    (note,) = [o for o in built.omitted if o.path == "pkg/long.py"]
    assert note.reason == "diff: 1 of 1 hunks did not fit the budget (1 shown in part)"
    (section,) = [s for s in built.sections if s.kind == "diff"]
    assert "1 more hunks not included, 1 of them shown in part" in section.text


def test_a_changed_readme_is_not_sent_again_as_guidance_from_the_same_tree() -> None:
    readme = "# Readme\n" + "".join(f"Line {i} about the project.\n" for i in range(300))
    changed = readme.replace("Line 150 about", "Line 150, reworded, about")
    repo = {"README.md": changed}
    built = build(repo, diff_of("README.md", readme, changed), 60_000)
    kinds = sorted(s.kind for s in built.sections if s.path == "README.md")
    assert kinds == ["code", "diff"]  # its diff and the rest of it, once each
