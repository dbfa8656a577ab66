"""The chair's synthesis, its verdict sentence held to the resolution."""

from __future__ import annotations

from bot.council import prompts
from bot.council.partial import partial_synthesis
from bot.council.protocols.debate.panel import choice_options
from bot.council.protocols.debate.state import mode_rule
from bot.council.resolution import settled_conditions
from bot.council.run import Run, seat_report, structured
from bot.council.schemas import Synthesis
from bot.council.verdicts import settled_synthesis

__all__ = ["synthesize"]


async def synthesize(run: Run) -> None:
    run.progress("synthesize", None, "started")
    chair = run.convened.chair
    result = run.resolution
    assert result is not None
    # Whether the question is a choice: the debate's panel designer said (and named
    # options of its own: `choice_options`); elsewhere the chair reads the question itself.
    panel = run.convened.panel
    options = choice_options(panel) if panel is not None else []
    choice = bool(options) if panel is not None else None
    synthesis = await structured(
        run,
        chair,
        prompts.SYNTH_TOOL,
        run.transcript.text(),
        prompts.chair_brief(chair),
        prompts.synth_task(
            run.request.topic,
            result.resolution.value,
            choice,
            result.all_conditions,
            options=options,
            decision_guide=mode_rule(run) is not None,
        ),
        f"synthesize/{chair.seat_id}/0",
    )
    if isinstance(synthesis, Synthesis):
        if choice is False:  # no choice, no tradeoff map: whatever the chair wrote
            synthesis = synthesis.model_copy(update={"tradeoff_map": []})
        # The verdict sentence must say what the resolution says (bot.council.verdicts).
        run.synthesis, replaced = settled_synthesis(
            synthesis,
            result.resolution,
            approvals=result.approvals,
            rejections=result.rejections,
            conditions=len(settled_conditions(result, synthesis)),
        )
        if replaced:
            run.notes.append(
                "The chair's verdict sentence contradicted the resolution; "
                "it was replaced by the resolution's own."
            )
    else:
        run.notes.append("The chair's synthesis failed; the record below is complete.")
    if run.synthesis is not None:
        run.synthesis = _council_text(run, run.synthesis)
    elif run.weighting:
        run.notes.append(run.weighting)


def _council_text(run: Run, synthesis: Synthesis) -> Synthesis:
    """The council's own words in the chair's synthesis: the partial-synthesis wording
    (bot.council.partial) and what the model strengths weighed (bot.council.strengths)."""
    synthesis = partial_synthesis(
        synthesis, [seat_report(run.records[s.seat_id]) for s in run.order]
    )
    if run.weighting:
        said = f"{synthesis.recommendation.strip()} {run.weighting}".strip()
        synthesis = synthesis.model_copy(update={"recommendation": said})
    return synthesis
