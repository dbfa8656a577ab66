"""The house rules for new code: a module holds at most 600 lines, no module reads another
module's private names, and no two modules import each other at load time.

The modules that broke a rule before the rules were checked are listed with what they
held then (`OVER_600`: their line counts; `PRIVATE_USES`; `CYCLES`): a listed module may
shrink but not grow, and a list may only shrink - the test fails when an entry is gone, so
it is taken off - until the restructuring that clears them (one package per concern, a
protocol per module).

Private names: `from bot.x import _name`, and `_name` read off an imported `bot` module
(`markdown._inline`). Cycles: among the imports a module runs when it is loaded (the top
of the module, not under `if TYPE_CHECKING:` and not inside a function), the strongly
connected components of more than one module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOT = ROOT / "bot"
MAX_LINES = 600

OVER_600: dict[str, int] = {
    "bot.config": 711,
    "bot.council.engine": 1143,
    "bot.council.scoring": 655,
    "bot.render.markdown": 1044,
    "bot.render.transcript": 663,
    "bot.review.inline": 791,
    "bot.safety": 652,
}
PRIVATE_USES: frozenset[tuple[str, str]] = frozenset(
    {
        ("bot.council.critique", "bot.council.engine._Run"),
        ("bot.council.critique", "bot.council.engine._in_parallel"),
        ("bot.render.debate", "bot.render.markdown._capped"),
        ("bot.render.debate", "bot.render.markdown._details"),
        ("bot.render.debate", "bot.render.markdown._inline"),
        ("bot.render.debate", "bot.render.markdown._table"),
        ("bot.render.strategies", "bot.render.markdown._capped"),
        ("bot.render.strategies", "bot.render.markdown._details"),
        ("bot.render.strategies", "bot.render.markdown._table"),
    }
)
CYCLES: frozenset[frozenset[str]] = frozenset(
    {
        frozenset({"bot.render", "bot.render.checks", "bot.render.debate", "bot.render.markdown"}),
    }
)


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_name(p): p for p in sorted(BOT.rglob("*.py"))}
TREES: dict[str, ast.Module] = {
    m: ast.parse(p.read_text(encoding="utf-8")) for m, p in MODULES.items()
}


def _lines(module: str) -> int:
    return len(MODULES[module].read_text(encoding="utf-8").splitlines())


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".")
    if MODULES[module].name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _aliases(module: str, tree: ast.Module, found: set[tuple[str, str]]) -> dict[str, str]:
    """The names `module` binds to bot modules; each private name it imports from another
    bot module goes into `found`."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in node.names if a.name[:4] == "bot."})
        elif isinstance(node, ast.ImportFrom) and _absolute(module, node).startswith("bot"):
            source = _absolute(module, node)
            for alias in node.names:
                if _private(alias.name) and source != module:
                    found.add((module, f"{source}.{alias.name}"))
                if f"{source}.{alias.name}" in MODULES:
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
    return aliases


def private_uses() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for module, tree in TREES.items():
        aliases = _aliases(module, tree, found)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and isinstance(node.value, ast.Name)
                and aliases.get(node.value.id, module) != module
            ):
                found.add((module, f"{aliases[node.value.id]}.{node.attr}"))
    return found


def _load_time_imports(module: str) -> Iterator[str]:
    """The bot modules `module` imports when it is loaded."""
    for node in TREES[module].body:
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            targets = [source, *(f"{source}.{a.name}" for a in node.names)]
        else:
            continue
        for target in targets:
            if target in MODULES and target != module:
                yield target


def cycles() -> set[frozenset[str]]:
    graph = {m: set(_load_time_imports(m)) for m in MODULES}
    # A package's __init__ runs before any of its modules: importing bot.a.b loads bot.a.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_no_module_passes_600_lines_and_none_listed_grows() -> None:
    over = {m: _lines(m) for m in MODULES if _lines(m) > MAX_LINES}
    new = sorted(m for m in over if m not in OVER_600)
    assert not new, f"modules over {MAX_LINES} lines: {[(m, over[m]) for m in new]}"
    grown = sorted(
        (m, OVER_600[m], n) for m, n in over.items() if m in OVER_600 and n > OVER_600[m]
    )
    assert not grown, f"listed modules that grew (module, listed, now): {grown}"
    cleared = sorted(set(OVER_600) - set(over))
    assert not cleared, f"no longer over {MAX_LINES} lines, take them off OVER_600: {cleared}"


def test_no_module_reads_another_modules_private_names() -> None:
    uses = private_uses()
    assert not sorted(uses - PRIVATE_USES), "private names read across modules"
    assert not sorted(PRIVATE_USES - uses), "gone: take them off PRIVATE_USES"


def test_no_import_cycle_at_load_time() -> None:
    found = cycles()
    assert not sorted(sorted(c) for c in found - CYCLES), "import cycles at load time"
    assert not sorted(sorted(c) for c in CYCLES - found), "gone: take them off CYCLES"


def test_the_checks_see_what_they_look_for() -> None:
    """Each check finds a planted breach (so an empty list means there is none)."""
    tree = ast.parse("from bot.render import markdown\nx = markdown._inline\n")
    TREES["bot.__probe__"] = tree
    MODULES["bot.__probe__"] = BOT / "__init__.py"
    try:
        assert ("bot.__probe__", "bot.render.markdown._inline") in private_uses()
    finally:
        del TREES["bot.__probe__"], MODULES["bot.__probe__"]
