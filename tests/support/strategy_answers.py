"""The fake answers of the `strategies` protocol's own calls (classification, cross-critique,
reconciliation), mixed into `tests.support.council_answers.CouncilScript`.

Knobs, keyed by a strategy seat's persona name ("Root cause strategy"):
- `task_type`: what the classification call answers (`task_types_asked` counts the calls);
- `strategy_scores`: the rubric total every referee gives an analysis (70 by default),
  spread over the five dimensions by weight;
- `strategy_adjustments`: the adjustment referees give an analysis, per round (the last
  repeats; 0 by default);
- `strategy_verdicts`: a critic's own verdict per round (the last repeats; by default its
  assessment's verdict);
- `strategy_evidence`: the new evidence a critic cites per round, as "path:line" (none by
  default: a changed verdict with none is a flip with no new evidence);
- `hunter_severity`: the severity of every HUNTER point per round (the last repeats;
  "minor" by default: only "critical" and "major" keep a round from converging). Each
  point has its own location, so it is new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_SEATED = re.compile(r"seated as: (.+?)\.\n")
_ROUND = re.compile(r"Cross-critique round (\d+) of")
_TARGET = re.compile(r"^- (Member [A-Z]+): (.+)$", re.MULTILINE)
_RECONCILED = re.compile(r"^- (Member [A-Z]+) \((.+?)\): ", re.MULTILINE)
_LEADER = re.compile(r"(Member [A-Z]+) leads\.")
_WEIGHTS = (("correctness", 30), ("completeness", 20), ("elegance", 15), ("robustness", 20))


def rubric(total: int) -> dict[str, int]:
    """`total` (0-100) spread over the rubric's dimensions by weight."""
    total = max(0, min(100, total))
    dims = {name: round(total * weight / 100) for name, weight in _WEIGHTS}
    dims["integration"] = max(0, min(15, total - sum(dims.values())))
    return dims


def _nth(values: list[Any], n: int, default: Any) -> Any:
    return values[min(n - 1, len(values) - 1)] if values else default


@dataclass
class StrategyAnswers:
    task_type: str = "feature"
    task_types_asked: int = 0
    strategy_scores: dict[str, int] = field(default_factory=dict)
    strategy_adjustments: dict[str, list[int]] = field(default_factory=dict)
    strategy_verdicts: dict[str, list[str]] = field(default_factory=dict)
    strategy_evidence: dict[str, list[list[str]]] = field(default_factory=dict)
    hunter_severity: list[str] = field(default_factory=lambda: ["minor"])
    reconcile_unresolved: str | None = None

    def _task_type(self, text: str) -> dict[str, Any]:
        self.task_types_asked += 1
        return {"task_type": self.task_type, "reason": "The description says what it does."}

    def _own_default(self, persona: str) -> str:
        verdicts: dict[str, str] = getattr(self, "verdicts", {})
        return verdicts.get(persona, getattr(self, "verdict", "APPROVE"))

    def _critique(self, text: str) -> dict[str, Any]:
        seated = _SEATED.search(text)
        persona = seated.group(1) if seated else ""
        found = _ROUND.search(text)
        n = int(found.group(1)) if found else 1
        task = text[text.rfind("Cross-critique round") :]
        critiques = []
        for i, (member, target) in enumerate(_TARGET.findall(task)):
            total = self.strategy_scores.get(target, 70)
            critiques.append(
                {
                    "member": member,
                    "hunter": [
                        {
                            "severity": _nth(self.hunter_severity, n, "minor"),
                            "path": "app/client.py",
                            "line": 100 * n + 10 * i + len(persona),
                            "point": f"{persona} finds what {target} missed in round {n}.",
                        }
                    ],
                    "skeptic": [f"{target}'s claim about the retry is not in the diff."],
                    "referee": rubric(total),
                    "adjustment": _nth(self.strategy_adjustments.get(target, []), n, 0),
                    "reason": f"{target} scored {total}.",
                }
            )
        evidence = _nth(self.strategy_evidence.get(persona, []), n, [])
        return {
            "critiques": critiques,
            "verdict": _nth(self.strategy_verdicts.get(persona, []), n, self._own_default(persona)),
            "position": f"{persona} holds its position in round {n}.",
            "new_evidence": [
                {
                    "path": e.split(":")[0],
                    "line": int(e.split(":")[1]) if ":" in e else None,
                    "point": "This line shows it.",
                }
                for e in evidence
            ],
        }

    def _reconciliation(self, text: str) -> dict[str, Any]:
        leader = _LEADER.search(text)
        lead = leader.group(1) if leader else ""
        others = [(m, s) for m, s in _RECONCILED.findall(text) if m != lead]
        return {
            "merged_plan": f"Adopt {lead}'s plan with the others' checks.",
            "complementary": [
                {"member": m, "element": f"Add the {s} check to the plan."} for m, s in others
            ],
            "dropped": [
                {"member": m, "reason": f"{s} covers less of the change."} for m, s in others
            ],
            "unresolved": self.reconcile_unresolved,
        }
