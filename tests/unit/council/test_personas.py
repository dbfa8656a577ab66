"""The persona catalog and its loader: the shipped files, broken files, overrides, packaging."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.council.personas import (
    Catalog,
    Persona,
    PersonaFileError,
    load_catalog,
    load_persona_texts,
    parse_persona,
)

REPO = Path(__file__).resolve().parents[3]
AGENTS_DIR = REPO / "agents"

VALID = """\
---
id: {id}
name: {name}
division: testing
description: Checks that tests fail when the code breaks.
task_types: [testing]
review_strengths: [assertions, isolation, edge cases]
---
# {name}

You look at tests.
"""


def persona_file(persona_id: str, name: str = "A Persona") -> str:
    return VALID.format(id=persona_id, name=name)


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the shipped catalog ---------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> Catalog:
    return load_catalog()


def test_shipped_catalog_loads_every_file_without_issues(shipped: Catalog) -> None:
    files = sorted(p.stem for p in AGENTS_DIR.glob("*.md"))
    assert shipped.issues == ()
    assert sorted(shipped.ids()) == files
    assert len(shipped) >= 14
    assert len(shipped.by_division()) >= 6


def test_every_shipped_persona_is_complete(shipped: Catalog) -> None:
    for persona in shipped.personas.values():
        words = len(persona.text.split())
        assert 250 <= words <= 450, (persona.id, words)
        assert 3 <= len(persona.review_strengths) <= 5, persona.id
        assert len(set(persona.review_strengths)) == len(persona.review_strengths)
        for heading in ("What you look for", "What you leave to others", "How you grade"):
            assert f"## {heading}" in persona.text, (persona.id, heading)
        assert Path(persona.source).name == f"{persona.id}.md"


def test_shipped_personas_say_different_things(shipped: Catalog) -> None:
    texts = [p.text for p in shipped.personas.values()]
    assert len(set(texts)) == len(texts)
    # No two seats share a paragraph, nor a lens, nor a description.
    paragraphs = [para for t in texts for para in t.split("\n\n") if len(para) > 80]
    assert len(set(paragraphs)) == len(paragraphs)
    lenses = [lens for p in shipped.personas.values() for lens in p.review_strengths]
    assert len(set(lenses)) == len(lenses)
    descriptions = [p.description for p in shipped.personas.values()]
    assert len(set(descriptions)) == len(descriptions)


def test_shipped_catalog_covers_the_review_divisions(shipped: Catalog) -> None:
    divisions = set(shipped.by_division())
    for division in ("security", "performance", "architecture", "api-design", "testing"):
        assert division in divisions
    assert {"reliability", "data", "frontend", "maintainability", "product"} <= divisions
    assert "devils-advocate" in shipped


# --- one file --------------------------------------------------------------------------


def test_parse_persona_reads_every_field() -> None:
    text = """\
---
id: cache-critic
name: Cache Critic
division: performance
description: Distrusts caches.
task_types: [caching, latency]
review_strengths: [invalidation, bounds, keys]
languages: [python]
frameworks: [redis-py]
artifact_types: [source]
default_model: anthropic:claude-sonnet-4-5
temperature: 0.3
---

# Cache Critic

Every cache is a bug.
---
(a horizontal rule in the body is not front matter)
"""
    persona = parse_persona(text, "cache-critic.md")
    assert persona == Persona(
        id="cache-critic",
        name="Cache Critic",
        division="performance",
        description="Distrusts caches.",
        task_types=("caching", "latency"),
        review_strengths=("invalidation", "bounds", "keys"),
        languages=("python",),
        frameworks=("redis-py",),
        artifact_types=("source",),
        default_model="anthropic:claude-sonnet-4-5",
        temperature=0.3,
        text="# Cache Critic\n\nEvery cache is a bug.\n---\n"
        "(a horizontal rule in the body is not front matter)",
        source="cache-critic.md",
    )
    assert persona.lenses == persona.review_strengths


BROKEN = {
    # name: (content, expected line, expected reason fragment)
    "bad-yaml.md": (
        "---\nid: bad-yaml\nname: Bad\ndivision: testing\ndescription: [unclosed\n"
        "task_types: [testing]\n---\ntext\n",
        6,
        "invalid YAML",
    ),
    "missing.md": (
        "---\nid: missing\nname: Missing\ndescription: d\ntask_types: [testing]\n"
        "review_strengths: [a]\n---\ntext\n",
        1,
        "missing field 'division'",
    ),
    "not-a-list.md": (
        "---\nid: not-a-list\nname: N\ndivision: testing\ndescription: d\n"
        "task_types: testing\nreview_strengths: [a]\n---\ntext\n",
        6,
        "field 'task_types' must be a list",
    ),
    "bad-item.md": (
        "---\nid: bad-item\nname: N\ndivision: testing\ndescription: d\n"
        "task_types: [testing]\nreview_strengths:\n  - fine\n  - {nested: map}\n---\ntext\n",
        9,
        "field 'review_strengths[1]'",
    ),
    "typo.md": (
        "---\nid: typo\nname: T\ndivision: testing\ndescription: d\ntask_types: [testing]\n"
        "review_strengths: [a]\ntemprature: 0.2\n---\ntext\n",
        8,
        "unknown field 'temprature'",
    ),
    "hot.md": (
        "---\nid: hot\nname: H\ndivision: testing\ndescription: d\ntask_types: [testing]\n"
        "review_strengths: [a]\ntemperature: 9\n---\ntext\n",
        8,
        "field 'temperature'",
    ),
    "bad-id.md": (
        "---\nid: Bad Id\nname: B\ndivision: testing\ndescription: d\ntask_types: [testing]\n"
        "review_strengths: [a]\n---\ntext\n",
        2,
        "field 'id' must be lowercase",
    ),
    "empty.md": (
        "---\nid: empty\nname: E\ndivision: testing\ndescription: d\ntask_types: [testing]\n"
        "review_strengths: [a]\n---\n\n   \n",
        9,
        "persona text after the front matter is empty",
    ),
    "no-front-matter.md": ("# Just markdown\n", 1, "no YAML front matter"),
    "unclosed.md": ("---\nid: unclosed\n", 1, "not closed"),
    "scalar.md": ("---\njust a string\n---\ntext\n", 1, "must be a mapping"),
}


def test_broken_files_are_reported_by_file_line_and_reason_while_others_load(
    tmp_path: Path,
) -> None:
    for name, (content, _, _) in BROKEN.items():
        write(tmp_path, name, content)
    write(tmp_path, "good.md", persona_file("good"))
    write(tmp_path, "notes.txt", "not a persona, ignored")

    catalog = load_catalog([tmp_path], builtin=False)

    assert catalog.ids() == ["good"]
    reported = {Path(issue.path).name: issue for issue in catalog.issues}
    assert sorted(reported) == sorted(BROKEN)
    for name, (_, line, reason) in BROKEN.items():
        issue = reported[name]
        assert issue.line == line, (name, issue)
        assert reason in issue.reason, (name, issue)
        assert str(issue).startswith(f"{tmp_path / name}:{line}: ")


def test_yaml_error_line_points_into_the_file() -> None:
    text = "---\nid: x\nname: X\n  bad: indent: here\n---\nbody\n"
    with pytest.raises(PersonaFileError) as caught:
        parse_persona(text, "x.md")
    assert caught.value.line == 4
    assert caught.value.reason.startswith("invalid YAML")


def test_duplicate_id_in_one_directory_keeps_the_first_by_name(tmp_path: Path) -> None:
    write(tmp_path, "a.md", persona_file("same", name="First"))
    write(tmp_path, "b.md", persona_file("same", name="Second"))

    catalog = load_catalog([tmp_path], builtin=False)

    assert catalog.personas["same"].name == "First"
    (issue,) = catalog.issues
    assert (Path(issue.path).name, issue.line) == ("b.md", 2)
    assert issue.reason == f"duplicate id 'same' (already defined in {tmp_path / 'a.md'})"


def test_undecodable_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "latin1.md").write_bytes(b"---\nid: x\nname: caf\xe9\n---\n")
    write(tmp_path, "good.md", persona_file("good"))
    catalog = load_catalog([tmp_path], builtin=False)
    assert catalog.ids() == ["good"]
    (issue,) = catalog.issues
    assert issue.path.endswith("latin1.md")
    assert "unreadable" in issue.reason


def test_missing_extra_directory_is_an_issue_not_a_crash(tmp_path: Path) -> None:
    catalog = load_catalog([tmp_path / "nope"])
    assert len(catalog) >= 14
    (issue,) = catalog.issues
    assert issue.path == str(tmp_path / "nope")
    assert issue.reason == "not a directory"


# --- layers ------------------------------------------------------------------------------


def test_extra_dir_overrides_builtin_by_id_and_adds_new_ones(
    tmp_path: Path, shipped: Catalog
) -> None:
    override = write(tmp_path, "mine.md", persona_file("appsec-reviewer", name="Our AppSec"))
    write(tmp_path, "extra.md", persona_file("house-rules", name="House Rules"))

    catalog = load_catalog([tmp_path])

    assert len(catalog) == len(shipped) + 1
    assert catalog.personas["appsec-reviewer"].name == "Our AppSec"
    assert catalog.personas["appsec-reviewer"].source == str(override)
    assert catalog.personas["house-rules"].division == "testing"
    assert catalog.ids() == sorted(catalog.ids())
    assert catalog.personas["test-engineer"] == shipped.personas["test-engineer"]


def test_later_extra_dirs_win(tmp_path: Path) -> None:
    write(tmp_path / "one", "p.md", persona_file("p", name="One"))
    write(tmp_path / "two", "p.md", persona_file("p", name="Two"))
    catalog = load_catalog([tmp_path / "one", tmp_path / "two"], builtin=False)
    assert catalog.personas["p"].name == "Two"


def test_in_memory_texts_load_like_files(shipped: Catalog) -> None:
    files = {
        ".github/council/agents/house.md": persona_file("house", name="House"),
        ".github/council/agents/appsec.md": persona_file("appsec-reviewer", name="Ours"),
        ".github/council/agents/broken.md": "---\nid: x\nname: a: b\n---\ntext\n",
        ".github/council/agents/README.txt": "ignored",
    }

    catalog = load_persona_texts(files)

    assert len(catalog) == len(shipped) + 1
    assert catalog.personas["house"].source == ".github/council/agents/house.md"
    assert catalog.personas["appsec-reviewer"].name == "Ours"
    (issue,) = catalog.issues
    assert (issue.path, issue.line) == (".github/council/agents/broken.md", 3)

    alone = load_persona_texts(files, builtin=False)
    assert alone.ids() == ["appsec-reviewer", "house"]


def test_overridden_by_merges_catalogs(shipped: Catalog) -> None:
    repo = load_persona_texts({"x.md": persona_file("test-engineer", name="Ours")}, builtin=False)
    merged = shipped.overridden_by(repo)
    assert merged.personas["test-engineer"].name == "Ours"
    assert len(merged) == len(shipped)


def test_personas_are_immutable(shipped: Catalog) -> None:
    persona = shipped.personas["appsec-reviewer"]
    with pytest.raises(ValueError, match="frozen"):
        persona.name = "changed"  # type: ignore[misc]
    assert hash(persona) == hash(shipped.personas["appsec-reviewer"])


# --- packaging -------------------------------------------------------------------------


def _can_build_without_isolation() -> bool:
    # setuptools builds wheels itself from 70.1 on; before that it needs `wheel`.
    major, minor = (
        int(x) for x in re.findall(r"\d+", importlib.metadata.version("setuptools"))[:2]
    )
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


def _copy_project(destination: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    destination.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, destination / name)
    shutil.copytree(REPO / "bot", destination / "bot", symlinks=True, ignore=ignore)
    shutil.copytree(AGENTS_DIR, destination / "agents", ignore=ignore)
    return destination


@pytest.mark.slow
def test_non_editable_install_ships_the_catalog(tmp_path: Path) -> None:
    source = _copy_project(tmp_path / "src")
    target = tmp_path / "site"
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet"]
    command += ["--disable-pip-version-check", "--target", str(target)]
    if _can_build_without_isolation():
        command.append("--no-build-isolation")
    subprocess.run([*command, str(source)], check=True, timeout=120, cwd=tmp_path)

    installed = target / "bot" / "_agents"
    assert installed.is_dir() and not installed.is_symlink()
    assert sorted(p.name for p in installed.glob("*.md")) == sorted(
        p.name for p in AGENTS_DIR.glob("*.md")
    )
    # Load through the default location in a fresh interpreter that imports the installed
    # copy first, not this checkout.
    probe = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bot;"
        "from bot.council.personas import load_catalog; c = load_catalog();"
        "print(json.dumps({'bot': bot.__file__, 'ids': c.ids(),"
        " 'sources': [p.source for p in c.personas.values()],"
        " 'issues': [str(i) for i in c.issues]}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(target)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    loaded = json.loads(result.stdout)
    assert loaded["issues"] == []
    assert loaded["bot"].startswith(str(target))
    assert loaded["ids"] == sorted(p.stem for p in AGENTS_DIR.glob("*.md"))
    assert all(s.startswith(str(installed)) for s in loaded["sources"])
