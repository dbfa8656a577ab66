"""The design lives in the repository: code and tests cite only files that are in it.

Three rules over every Python file under `bot/` and `tests/` (and, for the first, every other
text file there but the fixtures, which are GitHub's data):

- No path outside the checkout: not the directory the checkout sits in by its absolute name,
  not a sibling folder (`../shared/...`), and no `Path(__file__)` that climbs above the
  repository's root (`parents[k]`, `.parent` chains). Fixtures a test needs live in
  `tests/fixtures/`.
- A design document a comment or docstring cites is a file of the repository: a capitalized
  `NAME.md` (`ARCHITECTURE.md`) must be one (by name, anywhere in the tree), unless it is a
  file of the repositories the council reviews (`REVIEWED_REPO_FILES`: guidance it reads in
  them, never a design document of ours); a `docs/<name>.md` must exist, and the section it
  names after it (`docs/deliberation.md, "Resolve"`) must be one of that document's headings.
- No citation of design material that is not in the repository: the original design orders'
  seeds (`seed 001`) and "the spec".

The design documents are `docs/architecture.md`, `docs/deliberation.md` and
`docs/operations.md`; README.md is the product page and links into them.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.webhooks import FIXTURES as WEBHOOKS

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()  # names what it looks for: not scanned
SCANNED = ("bot", "tests")
FIXTURES = ROOT / "tests" / "fixtures"
TEXT_SUFFIXES = frozenset({".py", ".md", ".html", ".j2", ".txt", ".toml", ".yml", ".yaml", ".ini"})

# Files of the repositories under review that comments name when they say what the council
# reads there (agent instructions); they are not documents of this repository.
REVIEWED_REPO_FILES = frozenset({"AGENTS.md", "CLAUDE.md"})

DOCUMENT = re.compile(r"(?<![\w/.-])([A-Z][A-Z0-9_-]*\.md)\b")
DOCS_CITATION = re.compile(r"(?<![\w.-])(docs/[\w/-]+\.md)\b(?:,\s*\"([^\"]+)\")?")
EXTERNAL_DESIGN = re.compile(r"\bseed \d{3}\b|\bthe spec\b", re.IGNORECASE)


def outside_markers(root: Path = ROOT) -> list[str]:
    """Text that names a place outside the checkout."""
    markers = ["../shared/", "shared/spec/", "shared/fixtures/"]
    if root.parent != Path(root.anchor):
        markers.append(f"{root.parent}/")
    return markers


def scanned_files(suffixes: frozenset[str] = TEXT_SUFFIXES) -> list[Path]:
    return [
        path
        for base in SCANNED
        for path in sorted((ROOT / base).rglob("*"))
        if path.is_file()
        and path.suffix in suffixes
        and FIXTURES not in path.parents
        and path != THIS
    ]


def repository_names() -> frozenset[str]:
    """The base names of the repository's files (tracked or not yet), `.git` aside."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return frozenset(Path(name).name for name in listed if (ROOT / name).exists())


def prose(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python source."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                yield node.body[0].lineno, docstring


def _climb(node: ast.expr) -> int | None:
    """How many directories `Path(__file__)...` climbs in `node`, or None if it is not one."""
    steps = 0
    while True:
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            index = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if node.value.attr != "parents" or not isinstance(index, int):
                return None
            steps += index + 1
            node = node.value.value
        elif isinstance(node, ast.Attribute) and node.attr == "parent":
            steps += 1
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value  # .resolve(), .absolute()
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            uses_file = any(isinstance(a, ast.Name) and a.id == "__file__" for a in node.args)
            return steps if node.func.id == "Path" and uses_file else None
        else:
            return None


def climbs_out(source: str, relative: Path) -> list[int]:
    """Lines where `Path(__file__)` climbs above the root of a file at `relative`."""
    depth = len(relative.parts)  # `depth` steps up from the file is the root
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript | ast.Attribute):
            climbed = _climb(node)
            if climbed is not None and climbed > depth:
                lines.append(node.lineno)
    return sorted(set(lines))


def headings(document: Path) -> frozenset[str]:
    text = document.read_text(encoding="utf-8")
    return frozenset(m.strip() for m in re.findall(r"^#+ (.+)$", text, re.MULTILINE))


def citation_problems(source: str, names: frozenset[str], root: Path = ROOT) -> list[str]:
    """What the comments and docstrings of `source` cite that the repository lacks."""
    problems = []
    for line, text in prose(source):
        for name in DOCUMENT.findall(text):
            if name not in names and name not in REVIEWED_REPO_FILES:
                problems.append(f"{line}: {name} is not in the repository")
        for document, section in DOCS_CITATION.findall(text):
            if not (root / document).is_file():
                problems.append(f"{line}: {document} is not in the repository")
            elif section and section not in headings(root / document):
                problems.append(f'{line}: {document} has no section "{section}"')
        for found in EXTERNAL_DESIGN.findall(text):
            problems.append(f"{line}: cites {found!r}, which is not in the repository")
    return problems


def test_no_file_names_a_path_outside_the_repository() -> None:
    markers = outside_markers()
    found = []
    for path in scanned_files():
        relative = path.relative_to(ROOT)
        text = path.read_text(encoding="utf-8")
        found += [f"{relative}: {m}" for m in markers if m in text]
        if path.suffix == ".py":
            found += [
                f"{relative}:{n}: Path(__file__) above the root" for n in climbs_out(text, relative)
            ]
    assert found == []


def test_every_cited_document_is_in_the_repository() -> None:
    names = repository_names()
    found = [
        f"{path.relative_to(ROOT)}:{problem}"
        for path in scanned_files(frozenset({".py"}))
        for problem in citation_problems(path.read_text(encoding="utf-8"), names)
    ]
    assert found == []


def test_the_design_documents_are_in_the_repository_and_readme_links_them() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("architecture", "deliberation", "operations"):
        assert (ROOT / "docs" / f"{name}.md").is_file()
        assert f"(docs/{name}.md" in readme, f"README does not link docs/{name}.md"


def test_the_webhook_fixtures_the_tests_read_are_in_the_repository() -> None:
    assert ROOT in WEBHOOKS.parents
    assert (WEBHOOKS / "issue_comment" / "created.with-installation.payload.json").is_file()


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('"""Cites ARCHITECTURE.md."""\n', ["1: ARCHITECTURE.md is not in the repository"]),
        ("# seed 001, section 6\n", ["1: cites 'seed 001', which is not in the repository"]),
        ('"""As the spec says."""\n', ["1: cites 'the spec', which is not in the repository"]),
        ('"""See docs/missing.md."""\n', ["1: docs/missing.md is not in the repository"]),
        ("# README.md and AGENTS.md are fine\n", []),
        ('X = "ARCHITECTURE.md"  # data, not a citation\n', []),
    ],
)
def test_the_citation_check_catches_what_it_should(source: str, expected: list[str]) -> None:
    assert citation_problems(source, frozenset({"README.md"})) == expected


def test_a_section_cited_must_be_a_heading_of_the_document(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Resolve\n", encoding="utf-8")
    good = '"""(docs/guide.md, "Resolve")."""\n'
    bad = '"""(docs/guide.md, "Vote")."""\n'
    assert citation_problems(good, frozenset(), tmp_path) == []
    assert citation_problems(bad, frozenset(), tmp_path) == [
        '1: docs/guide.md has no section "Vote"'
    ]


def test_climbing_above_the_root_is_caught() -> None:
    source = (
        "from pathlib import Path\n"
        "A = Path(__file__).resolve().parents[1] / 'fixtures'\n"
        "B = Path(__file__).resolve().parents[3] / 'shared'\n"
        "C = Path(__file__).parent.parent.parent\n"
        "D = Path(__file__).parent.parent.parent.parent\n"
    )
    assert climbs_out(source, Path("tests/support/webhooks.py")) == [3, 5]
    assert outside_markers(Path("/srv/checkout")) == [
        "../shared/",
        "shared/spec/",
        "shared/fixtures/",
        "/srv/",
    ]
