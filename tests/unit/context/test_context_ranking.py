"""Under pressure, what goes first: as the budget falls, guidance is cut before the changed
file's tests, tests before the callers of the changed function, callers before the
definitions it uses, those before the rest of the changed function, and the diff
last. Measured on a change here, at every budget from ample down to a few hundred."""

from __future__ import annotations

import asyncio

from bot.context import BuiltContext, PullRequestMeta, build_context
from bot.tokens import TokenEstimator
from tests.support.diffs import diff_of


def body(prefix: str, count: int, indent: int = 4, var: str = "amount") -> str:
    pad = " " * indent
    return "".join(f"{pad}{prefix}_{i} = {var} * {i} + {i}\n" for i in range(count))


LEDGER_BEFORE = (
    "from pay.rates import Rate\n\n\ndef settle(amount, currency):\n"
    + body("step", 30)
    + "    return Rate.lookup(currency).apply(amount)\n"
)
LEDGER = LEDGER_BEFORE.replace(
    "    return Rate.lookup",
    "    amount = Rate.lookup(currency).round(amount)\n    return Rate.lookup",
)
RATES = (
    'class Rate:\n    """A currency\'s rate."""\n\n'
    + "    @classmethod\n    def lookup(cls, currency):\n"
    + body("r", 30, 8, "currency")
    + "        return cls()\n\n    def apply(self, amount):\n"
    + body("a", 30, 8)
    + "        return amount\n"
)
API = (
    "from pay.ledger import settle\n\n\ndef pay(request):\n"
    + body("p", 20, var="request")
    + "    return settle(request.amount, request.currency)\n"
)
TEST = (
    "from pay.ledger import settle\n\n\ndef test_settle():\n"
    + body("t", 20, var="1")
    + "    assert settle(1.005, 'EUR') == 1.0\n"
)
README = "# Payments\n\n## Ledger\n\n" + "The ledger settles amounts in cents.\n" * 30
REPO = {
    "pay/__init__.py": "",
    "pay/ledger.py": LEDGER,
    "pay/rates.py": RATES,
    "pay/api.py": API,
    "tests/test_ledger.py": TEST,
    "README.md": README,
}
# Least needed first: the order in which they give way.
ORDER = [
    ("guidance", "README.md"),
    ("test", "tests/test_ledger.py"),
    ("related", "pay/api.py"),  # calls the changed `settle`
    ("related", "pay/rates.py"),  # defines `Rate.lookup`, called by the changed line
    ("code", "pay/ledger.py"),  # the rest of the changed `settle`
    ("diff", "pay/ledger.py"),
]


def build(budget: int) -> BuiltContext:
    async def read(path: str) -> bytes | None:
        return REPO[path].encode() if path in REPO else None

    return asyncio.run(
        build_context(
            PullRequestMeta(title="Round the settlement"),
            diff_of("pay/ledger.py", LEDGER_BEFORE, LEDGER),
            sorted(REPO),
            read,
            budget_tokens=budget,
            estimator=TokenEstimator(),
        )
    )


def shown(built: BuiltContext) -> dict[tuple[str, str], int]:
    """Lines shown per (kind, path)."""
    return {
        (s.kind, s.path): sum(last - first + 1 for first, last in s.lines.get(s.path, []))
        for s in built.sections
        if s.path is not None
    }


def test_under_pressure_the_least_needed_gives_way_first() -> None:
    ample = shown(build(60_000))
    assert all(ample.get(what, 0) > 0 for what in ORDER), ample
    assert ample[("related", "pay/rates.py")] >= 30  # the whole short `Rate.lookup`
    cut_at: dict[tuple[str, str], int] = {}  # the highest budget at which it is not whole
    for budget in range(3_000, 300, -100):
        now = shown(build(budget))
        for what in ORDER:
            if now.get(what, 0) < ample[what]:
                cut_at.setdefault(what, budget)
    # Each gives way at a lower budget than the one before it; the diff last (below the
    # budget that holds its hunk and the prompt's frame, if at all).
    cuts = [cut_at.get(what, 0) for what in ORDER]
    assert cuts == sorted(cuts, reverse=True) and len(set(cuts)) == len(cuts), cut_at
    assert cuts[-1] < 800


def test_every_hunk_of_a_long_changed_class_comes_before_the_rest_of_the_class() -> None:
    """A field of a 400-line class is renamed, and with it ten of its methods (cline#5524's
    shape): under pressure the eleven hunks are all sent before the rest of the class body,
    which is the least needed part of the file."""
    methods_before = "".join(
        f"    def set_task_{i}(self, value):\n        self.task_id = value\n"
        + "".join(f"        step_{j} = value * {j}\n" for j in range(30))
        + "\n"
        for i in range(10)
    )
    before = "class Session:\n    task_id = None\n\n" + methods_before
    after = before.replace("task_id", "ulid")
    repo = {"app/session.py": after}

    async def read(path: str) -> bytes | None:
        return repo[path].encode() if path in repo else None

    diff = diff_of("app/session.py", before, after)
    built = asyncio.run(
        build_context(
            PullRequestMeta(title="Rename the task id"),
            diff,
            sorted(repo),
            read,
            budget_tokens=3_000,
            estimator=TokenEstimator(),
        )
    )
    (sent,) = [s for s in built.sections if s.kind == "diff"]
    hunks = diff.count("\n@@ ")
    assert sent.text.count("\n@@ ") + sent.text.startswith("@@ ") == hunks, sent.text[:400]
    code = [s for s in built.sections if s.kind == "code"]
    omitted = {o.path: o.reason for o in built.omitted}
    assert "diff" not in omitted.get("app/session.py", "")
    assert code and "its header and fields" in code[0].why
