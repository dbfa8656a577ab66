"""A persona's `requires_files` (issue 22, item 4): validated against the kinds of file the
context builder names, reported with its line like any other front matter error."""

from __future__ import annotations

from bot.council.personas import load_persona_texts, parse_persona

PERSONA = """\
---
id: schema-keeper
name: Schema Keeper
division: data
description: Reviews schema changes.
task_types: [database]
review_strengths: [schema design]
requires_files: {kinds}
---
# Schema Keeper

You review schemas.
"""


def test_known_kinds_load() -> None:
    persona = parse_persona(PERSONA.format(kinds="[migration, schema]"), "schema-keeper.md")
    assert persona.requires_files == ("migration", "schema")


def test_no_requirement_is_the_default() -> None:
    text = PERSONA.replace("requires_files: {kinds}\n", "")
    assert parse_persona(text, "schema-keeper.md").requires_files == ()


def test_an_unknown_kind_is_an_issue_naming_the_valid_kinds() -> None:
    catalog = load_persona_texts(
        {"schema-keeper.md": PERSONA.format(kinds="[migrations, schema]")}, builtin=False
    )
    assert "schema-keeper" not in catalog
    (issue,) = catalog.issues
    assert issue.path == "schema-keeper.md" and issue.line == 8
    assert issue.reason.startswith(
        "field 'requires_files': unknown file kind 'migrations'; valid kinds: "
    )
    assert "migration, " in issue.reason and "workflow" in issue.reason


def test_requires_files_must_be_a_list_of_kinds() -> None:
    catalog = load_persona_texts(
        {"schema-keeper.md": PERSONA.format(kinds="migration")}, builtin=False
    )
    (issue,) = catalog.issues
    assert issue.reason == "field 'requires_files' must be a list"
