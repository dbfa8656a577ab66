"""The strategies protocol's lenses (bot/council/protocols/strategies/seating.py): each task
type's 2-3 strategy lenses in seat order, each with its prompt style and the temperature
that style asks for. Pure data and one small record type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.council.protocols.strategies.schemas import TASK_TYPES, TaskType
from bot.council.seats import ReviewStrategy

__all__ = ["LENSES", "STYLE_TEMPERATURES", "Lens"]

STYLE_TEMPERATURES: Mapping[str, float] = {
    "analytical": 0.2,
    "critical": 0.3,
    "pragmatic": 0.5,
    "holistic": 0.6,
    "creative": 0.8,
}
_STYLE_TEXT = {
    "analytical": "Reason systematically: decompose the change, trace it step by step, and "
    "prefer what you can show from the diff.",
    "critical": "Reason adversarially: look for edge cases, failure modes and what could go "
    "wrong, and assume nothing works until the code shows it.",
    "pragmatic": "Reason pragmatically: the simplest change that works, the smallest diff, "
    "what can ship now and what can wait.",
    "holistic": "Reason about the whole system: how the change fits the codebase, its "
    "boundaries and what it does to the code around it.",
    "creative": "Reason laterally: consider approaches the change did not take, and whether "
    "one of them would serve better.",
}


@dataclass(frozen=True)
class Lens:
    key: str  # "root-cause"
    title: str  # "Root cause"
    style: str  # a key of STYLE_TEMPERATURES
    mandate: str  # the lens's own success criterion and risk focus
    lenses: tuple[str, ...]  # what its assessment scores (the completeness gate's lenses)

    @property
    def temperature(self) -> float:
        return STYLE_TEMPERATURES[self.style]

    @property
    def persona_name(self) -> str:
        return f"{self.title} strategy"

    def strategy(self) -> ReviewStrategy:
        return ReviewStrategy(
            name=self.title.lower(), text=f"{_STYLE_TEXT[self.style]} {self.mandate}"
        )


def _lens(key: str, style: str, mandate: str, *lenses: str) -> Lens:
    return Lens(key, key.replace("-", " ").capitalize(), style, mandate, lenses)


# The lenses each task type seats, in seat order (2-3, each with a distinct style).
LENSES: Mapping[TaskType, tuple[Lens, ...]] = {
    "bug-fix": (
        _lens(
            "root-cause",
            "analytical",
            "Find the root cause and judge whether the change fixes it rather than a symptom.",
            "root cause",
            "correctness",
        ),
        _lens(
            "minimal-fix",
            "pragmatic",
            "Judge whether this is the smallest safe fix and what in it is not needed for the fix.",
            "scope of the fix",
            "simplicity",
        ),
        _lens(
            "regression-guard",
            "critical",
            "Find what the fix could break and whether a test would catch the bug coming back.",
            "regressions",
            "tests",
        ),
    ),
    "feature": (
        _lens(
            "alternatives",
            "creative",
            "Weigh the approach against the designs it did not take.",
            "design alternatives",
            "user value",
        ),
        _lens(
            "specification",
            "analytical",
            "Check the behaviour against what the feature must do, edge cases included.",
            "requirements",
            "edge cases",
        ),
        _lens(
            "system-fit",
            "holistic",
            "Judge how the feature fits the system: interfaces, coupling, operations.",
            "integration",
            "maintainability",
        ),
    ),
    "refactor": (
        _lens(
            "system-impact",
            "holistic",
            "Judge what the restructuring does to the code around it and to its boundaries.",
            "structure",
            "coupling",
        ),
        _lens(
            "simplicity",
            "pragmatic",
            "Judge whether the result is simpler and whether the churn pays for itself.",
            "simplicity",
            "churn",
        ),
        _lens(
            "behavior-preservation",
            "critical",
            "Find any behaviour the refactoring changes, and the tests that pin it.",
            "behavior preserved",
            "tests",
        ),
    ),
    "architecture": (
        _lens(
            "long-term-design",
            "holistic",
            "Judge the design by where it leaves the system in a year.",
            "design",
            "evolvability",
        ),
        _lens(
            "incremental-migration",
            "pragmatic",
            "Judge whether the change can land in safe steps, and how it is rolled back.",
            "migration path",
            "rollback",
        ),
        _lens(
            "risk-first",
            "critical",
            "Start from what fails first under this design and how bad it is.",
            "failure modes",
            "operational risk",
        ),
    ),
    "performance": (
        _lens(
            "measure-first",
            "analytical",
            "Ask what the change measurably improves, and how it is measured.",
            "measurement",
            "hot paths",
        ),
        _lens(
            "algorithmic",
            "creative",
            "Judge the complexity and consider faster approaches.",
            "complexity",
            "alternatives",
        ),
        _lens(
            "resource-cost",
            "critical",
            "Find the memory, I/O and contention costs and the worst case.",
            "resources",
            "worst case",
        ),
    ),
    "security": (
        _lens(
            "threat-model",
            "analytical",
            "Model who can reach the changed code and with what input.",
            "attack surface",
            "trust boundaries",
        ),
        _lens(
            "least-privilege",
            "critical",
            "Check that each part gets only the access it needs, and what a mistake exposes.",
            "privileges",
            "exposure",
        ),
        _lens(
            "defense-in-depth",
            "holistic",
            "Judge the layers: what still holds when one check fails.",
            "layered controls",
            "failure containment",
        ),
    ),
    "dependency": (
        _lens(
            "supply-chain",
            "critical",
            "Judge the new or updated packages: source, maintenance, known advisories.",
            "provenance",
            "advisories",
        ),
        _lens(
            "compatibility",
            "analytical",
            "Find what the version change breaks in the code that uses it.",
            "breaking changes",
            "usage",
        ),
        _lens(
            "upgrade-path",
            "pragmatic",
            "Judge whether this is the right step now, and what follows.",
            "upgrade scope",
            "follow-ups",
        ),
    ),
    "docs": (
        _lens(
            "accuracy",
            "analytical",
            "Check every claim the text makes against the code it documents.",
            "accuracy",
            "completeness",
        ),
        _lens(
            "reader",
            "pragmatic",
            "Read as the person the text is for: can they do what it promises?",
            "clarity",
            "usefulness",
        ),
    ),
    "tests-only": (
        _lens(
            "coverage",
            "analytical",
            "Find what the tests cover and the behaviour they still miss.",
            "coverage",
            "assertions",
        ),
        _lens(
            "test-design",
            "critical",
            "Judge whether the tests can fail: flakiness, over-mocking, brittle assertions.",
            "reliability",
            "test design",
        ),
    ),
}
if set(LENSES) != set(TASK_TYPES):  # pragma: no cover - caught on import
    raise AssertionError("every task type needs its lenses")
