"""The outside opinion: one call to a configured model not on the panel, where the
protocol's mode asks for one."""

from __future__ import annotations

from bot.council import prompts
from bot.council.protocols import NEUTRAL_DIVISION
from bot.council.protocols.debate.panel import outside_model
from bot.council.protocols.debate.record import outside_section
from bot.council.protocols.debate.report import OutsideRecord
from bot.council.protocols.debate.state import debate_state, mode_rule
from bot.council.run import Run, structured
from bot.council.schemas import OutsideOpinion
from bot.council.seats import Seat

__all__ = ["outside"]


async def outside(run: Run) -> None:
    """One call to a configured model that is not on the panel, given the debate so
    far, for an independent opinion (full mode only). With a single model there is
    none: the advisory says the debate ran without one."""
    mode = mode_rule(run)
    if mode is None or not mode.outside_opinion:
        return
    model = outside_model(run.request.models, [s.model for s in run.order], run.request.chair_model)
    if model is None:
        note = (
            "Full debate without an outside opinion: only one model is configured, "
            "so no model outside the panel could give one."
        )
        debate_state(run).outside = OutsideRecord(note=note)
        run.notes.append(note)
        return
    seat = Seat(
        seat_id="outside",
        label="Outside reviewer",
        persona_id="outside",
        persona_name="Outside reviewer",
        division=NEUTRAL_DIVISION,
        persona_text="Outside reviewer",
        lenses=("independent opinion",),
        model=model,
        role="outside",
    )
    run.progress("outside", None, "started", seat.persona_name)
    opinion = await structured(
        run,
        seat,
        prompts.OUTSIDE_TOOL,
        run.transcript.text(),
        prompts.outside_brief(seat),
        prompts.outside_task(run.request.topic),
        f"outside/{seat.seat_id}/0",
    )
    if isinstance(opinion, OutsideOpinion):
        seated = model in {s.model for s in run.order}
        debate_state(run).outside = OutsideRecord(
            model=model,
            opinion=opinion,
            note=f"{model} also seats a panelist: every configured model is on the panel."
            if seated
            else None,
        )
        run.transcript.add(outside_section(opinion))
    else:
        debate_state(run).outside = OutsideRecord(
            model=model, note=f"{model} gave no valid opinion."
        )
