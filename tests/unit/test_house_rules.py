"""The house rules for new code: a module holds at most 600 lines, no module reads another
module's private names, no two modules import each other (at load time, deferred or for
types), and no protocol's
name is written outside `bot/council/protocols/` (a protocol is a module); and a function
holds at most 60 lines (a few typer commands' signatures not counted: `TYPER_COMMANDS`).

The modules that broke a rule before the rules were checked are listed with what they
held then (`OVER_600`: their line counts; `PRIVATE_USES`; `CYCLES`; `PROTOCOL_LITERALS`;
`LONG_FUNCTIONS`: the functions' lines):
a listed module may shrink but not grow, and a list may only shrink - the test fails when
an entry is gone, so it is taken off - until the restructuring that clears them (one
package per concern, a protocol per module).

Private names: `from bot.x import _name`, and `_name` read off an imported `bot` module
(`markdown._inline`). Cycles: among every import a module writes (at its top, inside a
function, under `if TYPE_CHECKING:`), the strongly connected components of more than one
module; `from package import module` is an import of that module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOT = ROOT / "bot"
MAX_LINES = 600

OVER_600: dict[str, int] = {}
PRIVATE_USES: frozenset[tuple[str, str]] = frozenset()
CYCLES: frozenset[frozenset[str]] = frozenset()
# A protocol is a module: its name is written as a literal only in bot/council/protocols/.
# The modules that still write one, with how many such literals each holds (a convening
# kind, a debate mode or the app's name that is spelled like a protocol counts too); an
# entry may only go down, and comes off when it reaches none.
PROTOCOL_LITERALS: dict[str, int] = {}
PROTOCOL_PACKAGE = "bot.council.protocols"
# The one stated exception: the product's command, `council` (`council review`, `/council`,
# its Redis keys' prefix), is spelled like the `council` protocol but is another name. It
# is written once, `COMMAND` in bot/__init__.py, and every other module imports it.
COMMAND_MODULE = "bot"


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


def _imports(module: str, tree: ast.Module | None = None) -> Iterator[str]:
    """The bot modules `module` imports anywhere in it: at load time, deferred or for types."""
    for node in ast.walk(tree or TREES[module]):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            named = [f"{source}.{a.name}" for a in node.names]
            modules = [t for t in named if t in MODULES]
            # `from bot.cli import report` imports the module report (its package is
            # loaded already); `from bot.x import name` imports bot.x.
            targets = modules if len(modules) == len(named) else [source, *modules]
        else:
            continue
        for target in targets:
            if target in MODULES and target != module:
                yield target


def cycles() -> set[frozenset[str]]:
    graph = {m: set(_imports(m)) for m in MODULES}
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


def test_no_import_cycle_deferred_or_for_types_included() -> None:
    found = cycles()
    assert not sorted(sorted(c) for c in found - CYCLES), "import cycles between modules"
    assert not sorted(sorted(c) for c in CYCLES - found), "gone: take them off CYCLES"


def protocol_literals(names: frozenset[str]) -> dict[str, int]:
    """How many string literals equal to a protocol's name each module outside the
    protocols package holds."""
    found: dict[str, int] = {}
    for module, tree in TREES.items():
        if module == PROTOCOL_PACKAGE or module.startswith(PROTOCOL_PACKAGE + "."):
            continue
        count = sum(
            1
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in names
        )
        if count:
            found[module] = count
    return found


def test_no_protocol_name_outside_the_protocols_package() -> None:
    from bot.council.protocols import NAMES

    found = protocol_literals(frozenset(NAMES))
    assert found.pop(COMMAND_MODULE, 0) == 1, "bot/__init__.py writes only `COMMAND`"
    new = sorted((m, n) for m, n in found.items() if n > PROTOCOL_LITERALS.get(m, 0))
    assert not new, f"protocol names written outside {PROTOCOL_PACKAGE} (module, count): {new}"
    fewer = sorted(
        (m, PROTOCOL_LITERALS[m], found.get(m, 0))
        for m in PROTOCOL_LITERALS
        if found.get(m, 0) < PROTOCOL_LITERALS[m]
    )
    assert not fewer, f"fewer now: lower or remove their PROTOCOL_LITERALS entries: {fewer}"


def test_the_checks_see_what_they_look_for() -> None:
    """Each check finds a planted breach (so an empty list means there is none)."""
    tree = ast.parse("from bot.render import markdown\nx = markdown._inline\n")
    TREES["bot.__probe__"] = tree
    MODULES["bot.__probe__"] = BOT / "__init__.py"
    try:
        assert ("bot.__probe__", "bot.render.markdown._inline") in private_uses()
    finally:
        del TREES["bot.__probe__"], MODULES["bot.__probe__"]
    TREES["bot.__probe__"] = ast.parse('mode = "debate"\n')
    MODULES["bot.__probe__"] = BOT / "__init__.py"
    try:
        assert protocol_literals(frozenset({"debate"}))["bot.__probe__"] == 1
    finally:
        del TREES["bot.__probe__"], MODULES["bot.__probe__"]


# GitHub code only in bot/github/ and in at most 4 wiring modules, one per delivery path
# (issue 24, item 7): everything else reaches a forge through `bot.forge`. `GITHUB_KNOWN`
# lists the modules that still import GitHub code; it only shrinks.
GITHUB_WIRING = frozenset({"bot.action.run", "bot.queue.deps", "bot.review.pull", "bot.web.forge"})
GITHUB_KNOWN: frozenset[str] = frozenset()


def github_importers() -> set[str]:
    """Modules outside bot/github/ that import it: at load time, deferred or for types."""
    found: set[str] = set()
    for module, tree in TREES.items():
        if module == "bot.github" or module.startswith("bot.github."):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(module, node)
                targets = [source, *(f"{source}.{a.name}" for a in node.names)]
            else:
                continue
            if any(t == "bot.github" or t.startswith("bot.github.") for t in targets):
                found.add(module)
    return found


def test_github_code_stays_in_bot_github_and_its_wiring() -> None:
    assert len(GITHUB_WIRING) <= 4
    importers = github_importers() - GITHUB_WIRING
    assert not sorted(importers - GITHUB_KNOWN), "GitHub imported outside bot/github/"
    assert not sorted(GITHUB_KNOWN - importers), "gone: take them off GITHUB_KNOWN"


def test_the_github_check_sees_a_deferred_import() -> None:
    tree = ast.parse("def f() -> None:\n    from bot.github.fetch import fetch_pull\n")
    TREES["bot.__probe__"] = tree
    MODULES["bot.__probe__"] = BOT / "__init__.py"
    try:
        assert "bot.__probe__" in github_importers()
    finally:
        del TREES["bot.__probe__"], MODULES["bot.__probe__"]
    TREES["bot.__probe__"] = ast.parse('mode = "debate"\n')
    MODULES["bot.__probe__"] = BOT / "__init__.py"
    try:
        assert protocol_literals(frozenset({"debate"}))["bot.__probe__"] == 1
    finally:
        del TREES["bot.__probe__"], MODULES["bot.__probe__"]


# --- functions at most 60 lines ----------------------------------------------------------

MAX_FUNCTION_LINES = 60
# Typer commands whose signature - one `Annotated[..., typer.Option(...)]` a parameter -
# is excepted: their lines are counted from the first statement of the body, which is held
# to the limit like any function's. At most `MAX_TYPER_COMMANDS` of them.
TYPER_COMMANDS = frozenset(
    {"bot.cli.agents.agents", "bot.cli.eval.evaluate", "bot.cli.review.review"}
)
MAX_TYPER_COMMANDS = 4
# The functions (methods and nested functions too, by qualified name) longer than the limit
# when it was first checked, with their lines: each may shrink but not grow, and the list
# may only shrink - the test fails when an entry is within the limit, so it is taken off.
LONG_FUNCTIONS: dict[str, int] = {}


def _defs(
    prefix: str, node: ast.AST
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}.{child.name}", child
            yield from _defs(f"{prefix}.{child.name}", child)
        elif isinstance(child, ast.ClassDef):
            yield from _defs(f"{prefix}.{child.name}", child)
        else:
            yield from _defs(prefix, child)


def function_lines(
    trees: dict[str, ast.Module], commands: frozenset[str] = TYPER_COMMANDS
) -> dict[str, int]:
    """Every function in `trees` -> its lines, from `def` to its last line (decorators not
    counted); a typer command of `commands` from the first statement of its body."""
    lines: dict[str, int] = {}
    for module, tree in trees.items():
        for name, node in _defs(module, tree):
            start = node.body[0].lineno if name in commands else node.lineno
            lines[name] = max(lines.get(name, 0), (node.end_lineno or start) - start + 1)
    return lines


def test_no_function_passes_60_lines_and_none_listed_grows() -> None:
    long = {f: n for f, n in function_lines(TREES).items() if n > MAX_FUNCTION_LINES}
    new = sorted((f, n) for f, n in long.items() if f not in LONG_FUNCTIONS)
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines: {new}"
    grown = sorted(
        (f, LONG_FUNCTIONS[f], n) for f, n in long.items() if n > LONG_FUNCTIONS.get(f, n)
    )
    assert not grown, f"listed functions that grew (function, listed, now): {grown}"
    cleared = sorted(set(LONG_FUNCTIONS) - set(long))
    assert not cleared, (
        f"within {MAX_FUNCTION_LINES} lines now, take them off LONG_FUNCTIONS: {cleared}"
    )


def test_only_a_few_typer_commands_have_their_signature_excepted() -> None:
    assert len(TYPER_COMMANDS) <= MAX_TYPER_COMMANDS
    defs = {name: node for module, tree in TREES.items() for name, node in _defs(module, tree)}
    for name in TYPER_COMMANDS:
        parameters = defs[name].args.args + defs[name].args.kwonlyargs
        assert parameters, name
        for parameter in parameters:
            annotation = ast.unparse(parameter.annotation) if parameter.annotation else ""
            assert "typer." in annotation, f"{name}: {parameter.arg} is no typer option"


def test_the_function_check_counts_every_function() -> None:
    """Methods and nested functions are counted; a typer command from its body."""
    body = "\n".join(f"        x = {i}" for i in range(60))
    inner = "        def inner() -> None:\n            pass\n"
    source = f"class C:\n    def m(self) -> None:\n{body}\n{inner}"
    signature = "".join(f"    a{i}: int = 0,\n" for i in range(70))
    source += f"def command(\n{signature}) -> None:\n    pass\n"
    tree = {"bot.__probe__": ast.parse(source)}
    lines = function_lines(tree, frozenset({"bot.__probe__.command"}))
    assert lines == {
        "bot.__probe__.C.m": 63,
        "bot.__probe__.C.m.inner": 2,
        "bot.__probe__.command": 1,
    }
    assert function_lines(tree, frozenset())["bot.__probe__.command"] == 73


def test_the_cycle_check_sees_a_deferred_and_a_type_checking_import() -> None:
    """`bot.__a__` imports `bot.__b__` at its top; `bot.__b__` imports it back inside a
    function, then only for types: both are cycles; `from package import module` is not
    an import of the package."""
    backs = (
        "def f() -> None:\n    from bot import __a__\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot.__a__ import X\n",
    )
    for back in backs:
        TREES["bot.__a__"] = ast.parse("from bot.__b__ import y\nX = 1\n")
        TREES["bot.__b__"] = ast.parse(back)
        MODULES["bot.__a__"] = MODULES["bot.__b__"] = BOT / "__init__.py"
        try:
            assert frozenset({"bot.__a__", "bot.__b__"}) in cycles(), back
            assert not any("bot" in c for c in cycles())
        finally:
            del TREES["bot.__a__"], TREES["bot.__b__"], MODULES["bot.__a__"], MODULES["bot.__b__"]
