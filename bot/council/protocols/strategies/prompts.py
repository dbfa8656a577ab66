"""The `strategies` protocol's tools and task texts.

Its tools join `bot.council.prompts.DELIBERATION_TOOLS` (a strategies deliberation sends
them with the others of its phases: `tools_for`), so every call of a deliberation
still sends one tool list (the cached prefix never changes). Imports nothing of
`bot.council.prompts` (which imports this module for the tool list).
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.context.prose import fence_untrusted
from bot.council.protocols.strategies.report import RUBRIC
from bot.council.protocols.strategies.schemas import (
    TASK_TYPES,
    CritiqueReply,
    Reconciliation,
    TaskTypeAnswer,
)
from bot.providers import OutputTool

__all__ = [
    "CRITIQUE_TOOL",
    "RECONCILE_TOOL",
    "STRATEGY_TOOLS",
    "TASK_TYPE_TOOL",
    "classify_brief",
    "classify_task",
    "critique_task",
    "reconcile_brief",
    "reconcile_task",
]

TASK_TYPE_TOOL = OutputTool(
    "submit_task_type", "Say what kind of task the pull request is.", TaskTypeAnswer
)
CRITIQUE_TOOL = OutputTool(
    "submit_critique", "Submit your cross-critique of the other analyses.", CritiqueReply
)
RECONCILE_TOOL = OutputTool(
    "submit_reconciliation", "Reconcile the close analyses.", Reconciliation
)
STRATEGY_TOOLS: tuple[OutputTool, ...] = (TASK_TYPE_TOOL, CRITIQUE_TOOL, RECONCILE_TOOL)

_RUBRIC_TEXT = ", ".join(f"{name} 0-{weight}" for name, weight in RUBRIC)


def classify_brief() -> str:
    return (
        "You sort pull requests by the kind of task they are, so that the council can seat "
        "the reviewing strategies that task calls for."
    )


def classify_task(topic: str, candidates: Sequence[str], evidence: Sequence[str]) -> str:
    listed = ", ".join(candidates or TASK_TYPES)
    seen = "; ".join(evidence) or "none that decide"
    return (
        f"The question before the council:\n{fence_untrusted('question', topic)}\n\n"
        f"The change's signals ({seen}) do not say clearly what kind of task it is. From "
        f"the pull request above, choose the one it mainly is, among: {listed}. Answer "
        "with the task type and one sentence why."
    )


def critique_task(
    round_no: int, max_rounds: int, others: Sequence[tuple[str, str]], topic: str
) -> str:
    """`others`: (member label, its strategy's name) of every other analysis."""
    listed = "\n".join(f"- {label}: {strategy}" for label, strategy in others)
    return (
        f"Cross-critique round {round_no} of at most {max_rounds} on the question:\n"
        f"{fence_untrusted('question', topic)}\n\n"
        f"Critique each of these members' analyses (above), through your own strategy:\n"
        f"{listed}\n\n"
        "For each one, as HUNTER say what it missed that your strategy catches (with "
        "severity, and file and line of the new side where you can); as SKEPTIC list its "
        "claims the diff does not support (a deliberate trade-off is not a flaw); as REFEREE "
        f"score its analysis on the rubric ({_RUBRIC_TEXT}; 100 in all) and give an "
        "adjustment from -15 to +15 for what the critique showed, with the reason. Then "
        "give your own verdict now (APPROVE, CONCERNS or REJECT) and position. Change your "
        "verdict only for evidence: list in new_evidence the files and lines you had not "
        "cited before that changed or confirmed it. Agreeing with the others is not "
        "evidence."
    )


def reconcile_brief(label: str) -> str:
    return (
        f"You chair this council ({label}). The strategies' analyses scored close to each "
        "other after the cross-critique: reconcile them from the anonymized record above."
    )


def reconcile_task(leader: str, others: Sequence[tuple[str, str, float | None]]) -> str:
    """`others`: (member label, strategy name, score after critique) of every analysis."""
    listed = "\n".join(
        f"- {label} ({strategy}): {'not scored' if score is None else f'{score:.0f}/100'}"
        for label, strategy, score in others
    )
    return (
        f"The analyses after the cross-critique:\n{listed}\n\n"
        f"{leader} leads. Merge into its plan the compatible elements of the others that "
        "improve it without bloating it (say whose each one is), say for each other "
        "analysis why its approach is not adopted, and name a conflict that stays open "
        "with its trade-off (or null)."
    )
