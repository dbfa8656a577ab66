"""The debate's panel: its design (one call to a designer, re-asked once when the design
breaks the panel rules), the seats it makes, and who sits outside it.

- `panel_problems`: the panel rules a design breaks (distinct lenses after normalisation,
  at least one adversarial and one constructive panelist, a choice names its options);
  convening re-asks the designer once with them and otherwise proceeds, saying so.
- `choice_options`: the options of a question that really is a choice. Whether to merge
  the pull request is a verdict, not a choice: a design whose options are only "Merge" /
  "Do not merge", "Approve" / "Reject" or "Yes" / "No" is no choice, whatever the designer
  said, and gets no tradeoff map.
- `outside_model`: the model a `full` debate asks for an outside opinion (None with a
  single model).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from bot.council import prompts
from bot.council.calls import SeatCaller
from bot.council.protocols import ANSWER_TRIES
from bot.council.request import ConveneRequest
from bot.council.schemas import PanelDesign
from bot.council.seats import Seat
from bot.providers import Message, ModelCall

__all__ = [
    "WORD",
    "choice_options",
    "design_panel",
    "normalize_lens",
    "outside_model",
    "panel_problems",
    "panel_seats",
]

# Words that make two lens names differ without making them different lenses.
_FILLER = frozenset(
    {"a", "an", "and", "the", "of", "for", "in", "on", "to", "&", "analysis", "analyst", "lens"}
)
# A word of a lens, an option or a position, lowercased.
WORD = re.compile(r"[a-z0-9]+")


def normalize_lens(lens: str) -> str:
    """A lens name reduced to its words: lowercase, punctuation and filler words gone,
    and a trailing plural 's' dropped ("Security Analysis" and "security" are one)."""
    words = [w for w in WORD.findall(lens.lower()) if w not in _FILLER]
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words)


def panel_problems(panel: PanelDesign) -> list[str]:
    """The panel rules `panel` breaks, each said so the designer can fix it."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    for i, p in enumerate(panel.panelists, start=1):
        key = normalize_lens(p.lens)
        if key in seen:
            problems.append(
                f"panelists {seen[key]} and {i} have the same lens ({p.lens!r}); "
                "every lens must be distinct"
            )
        else:
            seen[key] = i
    stances = {p.stance for p in panel.panelists}
    for stance, does in (("adversarial", "finds problems"), ("constructive", "finds value")):
        if stance not in stances:
            problems.append(f"no {stance} panelist (one that {does})")
    if panel.is_choice and len(panel.options) < 2:
        problems.append("the question is said to be a choice, but fewer than 2 options are named")
    return problems


# What an option that only answers "should it merge?" starts with, once a negation ("do
# not", "don't") and words such as "it" or "the PR" are dropped: a verdict on the change.
_VERDICT_STEMS = ("merg", "approv", "reject", "accept", "ship", "block", "decline", "yes")
_NOT_AN_OPTION = frozenset({"do", "don", "dont", "t", "not", "no", "never", "it", "this"})


def _is_verdict(option: str) -> bool:
    """Whether `option` is a verdict on the change ("Merge", "Do not merge", "Approve with
    fixes", "Reject", "Yes", "No") rather than an option of its own ("Redis")."""
    words = [w for w in WORD.findall(option.lower()) if w not in _NOT_AN_OPTION]
    return not words or words[0].startswith(_VERDICT_STEMS)


def choice_options(panel: PanelDesign) -> list[str]:
    """The options of the question when it is a choice: the designer said so and named at
    least 2 options that are not verdicts on the change (those options, in its order);
    else none: not a choice."""
    if not panel.is_choice:
        return []
    own = [o for o in panel.options if o.strip() and not _is_verdict(o)]
    return own if len(own) >= 2 else []


def outside_model(
    models: Sequence[str], panel_models: Sequence[str], chair_model: str | None
) -> str | None:
    """The model for a `full` debate's outside opinion: a configured model no panelist
    sits on; else the chair model if no panelist sits on it; else the least-seated model
    other than the officers' (the judge's and chair's). None with a single model."""
    configured = list(dict.fromkeys([*models, *([chair_model] if chair_model else [])]))
    if len(configured) < 2:
        return None
    seated = Counter(panel_models)
    for model in configured:
        if model not in seated:
            return model
    officer = chair_model or models[0]
    others = [m for m in configured if m != officer]
    return min(others, key=lambda m: seated[m]) if others else None


async def design_panel(
    request: ConveneRequest, caller: SeatCaller, count: int, designer: Seat
) -> tuple[PanelDesign | None, list[str]]:
    """The designed panel, and a note when it still breaks the panel rules after the one
    re-ask that names its problems (the debate then runs with the better design); None
    when no answer was a valid design."""
    kept: tuple[PanelDesign, list[str]] | None = None
    call: ModelCall[Any] = ModelCall(
        system=request.system,
        messages=prompts.messages(
            "", prompts.designer_brief(), prompts.design_task(request.topic, count)
        ),
        output=prompts.DESIGN_TOOL,
        tools=prompts.tools_for(request.protocol),
        max_tokens=prompts.DESIGN_TOOL.output_tokens(request.max_tokens),
        deadline_s=request.deadline_s,
        label="designer/submit_panel",
    )
    for attempt in range(ANSWER_TRIES):
        outcome = await caller.call(designer, f"design/designer/{attempt}", call)
        if outcome.ok and isinstance(outcome.output, PanelDesign):
            problems = panel_problems(outcome.output)
            if not problems:
                return outcome.output, []
            if kept is None or len(problems) < len(kept[1]):
                kept = (outcome.output, problems)
            call = replace(
                call,
                messages=[
                    *call.messages,
                    Message(role="assistant", content=outcome.text or "(no answer)"),
                    Message(role="user", content=prompts.redesign_task(problems)),
                ],
            )
        elif outcome.truncated:  # the same request would be cut off again: ask for less
            call = replace(
                call,
                messages=[
                    *call.messages,
                    Message(role="assistant", content=outcome.text or "(no answer)"),
                    Message(role="user", content=prompts.reask_shorter()),
                ],
            )
    if kept is not None:
        panel, problems = kept
        return panel, [
            "The debate panel still breaks the panel rules after one re-ask ("
            + "; ".join(problems)
            + "); the debate ran with it."
        ]
    return None, []


def panel_seats(panel: PanelDesign, models: Sequence[str]) -> list[Seat]:
    seats = []
    for i, p in enumerate(panel.panelists):
        seats.append(
            Seat(
                seat_id=f"seat-{i + 1}",
                persona_id=f"panelist-{i + 1}",
                persona_name=p.name,
                division=p.stance,
                persona_text=f"{p.brief}\nYour stance: {p.stance}.",
                lenses=(p.lens,),
                model=models[i % len(models)],
            )
        )
    return seats
