"""The package table of docs/architecture.md holds: every import in `bot/` is one it allows.

Every module under `bot/` is parsed with `ast`; every import is collected, absolute and
relative, at the top of a module, under `if TYPE_CHECKING:` and inside functions alike (an
import deferred for start-up time is still a dependency). Each module belongs to a unit:
its package (`bot/council/engine.py` -> `council`) or, for a module at the top of `bot/`,
itself (`bot/settings.py` -> `settings`). An import between two units must be allowed by
`MAY_IMPORT`, the table's "may import" column, unless it is one of these:

- Leaves (`LEAVES`): pure modules, no I/O, importing nothing of ours but other leaves and
  nothing from outside the standard library but pydantic (for data models). Any module may
  import a leaf:
  - `bot/__init__.py`: the product's command name and its version (stdlib only);
  - `bot/safety/` (the package and every module in it): making untrusted text safe to
    publish (stdlib only);
  - `bot/tokens.py`: the one token estimator (stdlib only; the table lists it for context
    and council, and providers and review read it too);
  - `bot/commands.py`: the `/council` command grammar (stdlib and the protocol table);
  - `bot/context/redact.py` and `bot/context/prose.py`: secrets and hidden text out of
    untrusted text (stdlib), so the receiver cleans a `/council` question as it routes it
    and every log line is redacted;
  - `bot/capabilities.py`: the capability table's data model, shared by settings and
    providers (pydantic only);
  - the protocol registry (`bot/council/protocols/`: the package, its modules and each
    protocol's table entry, `protocols/debate/__init__.py`; not the modules inside a
    protocol's package, which hold its phases, run state and report) and
    `bot/council/board.py`: the protocol table and what a deliberation is asked to seat,
    which the repo config validates against (stdlib; pydantic and the protocol table).
- Process infrastructure (`INFRASTRUCTURE`): the one settings object (`bot/settings.py`),
  logging set-up (`bot/logs.py`) and the metric objects (`bot/metrics.py`). Every unit that
  runs a process or talks to a service may use them; the pure units (`PURE`: context,
  council, render, which take data and do no I/O) may not.

And the command line's own rule: it "imports heavy modules only inside the command that
needs them", and web and queue only for `serve` and `worker`, so `bot/cli/` imports
`bot.web` and `bot.queue` only from `bot/cli/app_commands.py`, inside a function.

`KNOWN` lists the violations that are still there, each a (module, imported module) pair;
the test fails when one of them is gone, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOT = ROOT / "bot"

DOCUMENT = ROOT / "docs" / "architecture.md"


def package_table(text: str) -> dict[str, frozenset[str]]:
    """The "may import" column of the "Packages" table: unit -> the units it may import.

    A row's first cell names the package (`bot/review/`) or module (`bot/settings.py`); its
    last cell lists the units in backticks, "-" for none; words outside backticks explain.
    """
    section = text[text.index("\n## Packages\n") :]
    section = section[: section.index("\n## ", 1)]
    rows: dict[str, frozenset[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        where = re.fullmatch(r"`bot/(\w+)(?:/|\.py)`", cells[0])
        if line.startswith("|") and where is not None:
            assert where.group(1) not in rows, f"{where.group(1)} has two rows"
            rows[where.group(1)] = frozenset(re.findall(r"`(\w+)`", cells[-1]))
    return rows


# The table of docs/architecture.md ("Packages"), one entry per row: a change of the table
# is a change of the architecture, and this test holds the code to it.
MAY_IMPORT: dict[str, frozenset[str]] = package_table(DOCUMENT.read_text(encoding="utf-8"))
LEAVES = frozenset(
    {
        "bot",
        "bot.safety",
        "bot.tokens",
        "bot.commands",
        "bot.context.redact",
        "bot.context.prose",
        "bot.capabilities",
        "bot.council.protocols",
        "bot.council.board",
    }
)
# Leaves that are packages: every module directly in them is a leaf too (a subpackage's
# `__init__`, a protocol's table entry, but not the modules inside it).
LEAF_PACKAGES = frozenset({"bot.council.protocols", "bot.safety"})
LEAF_LIBRARIES = frozenset({"pydantic"})
INFRASTRUCTURE = frozenset({"settings", "logs", "metrics"})
PURE = frozenset({"context", "council", "render"})
# The command line reaches these only for `serve`, `worker` and `replay`.
CLI_APP_ONLY = frozenset({"web", "queue"})
CLI_APP_MODULE = "bot.cli.app_commands"

# Violations still there, each a (module, imported module) pair; none today. A new one
# added here must say why and be removed by the change that follows it.
KNOWN: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, "bot.cli.review"
    imported: str  # the module imported, "bot.council.advisory"
    line: int
    in_function: bool

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported}"


def is_leaf(module: str) -> bool:
    """A leaf, or a module directly in a leaf package (`bot.council.protocols.board`,
    `bot.council.protocols.debate`; not `bot.council.protocols.debate.record`)."""
    return module in LEAVES or any(
        module.startswith(f"{p}.") and "." not in module[len(p) + 1 :] for p in LEAF_PACKAGES
    )


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def unit(module: str) -> str:
    """`bot.council.engine` -> "council"; `bot.settings` -> "settings"; `bot` -> "bot"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "bot"


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, node.module] if node.module else package)


def _targets(module: str, is_package: bool, node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = _base(module, is_package, node)
        for alias in node.names:
            # `from bot.council import prompts` imports the module bot.council.prompts.
            sub = f"{base}.{alias.name}"
            yield sub if is_module(sub) else base


def _walk(node: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        yield child, in_function
        inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        yield from _walk(child, inside)


def imports_in(module: str, source: str, *, is_package: bool = False) -> Iterator[Import]:
    for node, in_function in _walk(ast.parse(source)):
        for target in _targets(module, is_package, node):
            yield Import(module, target, getattr(node, "lineno", 0), in_function)


def imports_of(path: Path) -> Iterator[Import]:
    source = path.read_text(encoding="utf-8")
    yield from imports_in(module_name(path), source, is_package=path.name == "__init__.py")


def all_imports() -> list[Import]:
    return [i for path in sorted(BOT.rglob("*.py")) for i in imports_of(path)]


def ours(imports: list[Import]) -> list[Import]:
    return [i for i in imports if i.imported == "bot" or i.imported.startswith("bot.")]


def allowed(i: Import) -> bool:
    source, target = unit(i.module), unit(i.imported)
    if source == target or is_leaf(i.imported):
        return True
    if target in INFRASTRUCTURE:
        return source not in PURE and not is_leaf(i.module)
    return target in MAY_IMPORT.get(source, frozenset())


def violations() -> set[tuple[str, str]]:
    return {(i.module, i.imported) for i in ours(all_imports()) if not allowed(i)}


def test_every_module_belongs_to_a_row_of_the_table() -> None:
    known = set(MAY_IMPORT) | INFRASTRUCTURE | {unit(leaf) for leaf in LEAVES} | {"bot"}
    units = {unit(module_name(path)) for path in BOT.rglob("*.py")}
    assert units - known == set(), "a new package or top-level module: add it to the table"


def test_every_import_is_allowed_by_the_table() -> None:
    unexpected = [
        str(i)
        for i in ours(all_imports())
        if not allowed(i) and (i.module, i.imported) not in KNOWN
    ]
    assert unexpected == [], "imports the package table does not allow (docs/architecture.md)"


def test_known_violations_are_still_there() -> None:
    """Fixing one is good news: strike it from KNOWN, so the list only shrinks."""
    assert KNOWN - violations() == set()


def test_leaves_import_only_the_standard_library_pydantic_and_other_leaves() -> None:
    found = []
    for path in sorted(BOT.rglob("*.py")):
        if not is_leaf(module_name(path)):
            continue
        for i in imports_of(path):
            top = i.imported.split(".")[0]
            if top == "bot":
                if not is_leaf(i.imported):
                    found.append(str(i))
            elif top not in sys.stdlib_module_names and top not in LEAF_LIBRARIES:
                found.append(str(i))
    assert found == []


def test_infrastructure_imports_only_leaves() -> None:
    found = [
        str(i)
        for path in sorted(BOT.glob("*.py"))
        if unit(module_name(path)) in INFRASTRUCTURE
        for i in ours(list(imports_of(path)))
        if not is_leaf(i.imported)
    ]
    assert found == []


def test_the_cli_reaches_web_and_queue_only_inside_serve_worker_and_replay() -> None:
    found = [
        str(i)
        for i in ours(all_imports())
        if unit(i.module) == "cli"
        and unit(i.imported) in CLI_APP_ONLY
        and (i.module != CLI_APP_MODULE or not i.in_function)
    ]
    assert found == []


def test_the_collector_sees_every_kind_of_import() -> None:
    """Relative, deferred and type-only imports count as much as top-level ones."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import engine\n"
        "from ..render import checks\n"
        "if TYPE_CHECKING:\n"
        "    from bot.store.db import Database\n"
        "def run() -> None:\n"
        "    import bot.queue.jobs\n"
    )
    found = {
        (i.imported, i.in_function) for i in ours(list(imports_in("bot.council.probe", source)))
    }
    assert found == {
        ("bot.council.engine", False),
        ("bot.render.checks", False),
        ("bot.store.db", False),
        ("bot.queue.jobs", True),
    }


def test_the_table_is_read_from_the_document() -> None:
    """Every row of the table is read, and its column as written."""
    text = DOCUMENT.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `bot/")]
    assert len(MAY_IMPORT) == len(rows) > 10
    assert MAY_IMPORT["settings"] == frozenset()
    assert MAY_IMPORT["context"] == frozenset({"tokens"})
    probe = (
        "\n## Packages\n\n| package | owns | may import |\n| --- | --- | --- |\n"
        "| `bot/x.py` | a thing | - |\n| `bot/y/` | `z` data | `x`, `w` (its types) |\n\n## Next\n"
    )
    assert package_table(probe) == {"x": frozenset(), "y": frozenset({"x", "w"})}
