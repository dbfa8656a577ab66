"""What an advisory says when seats were lost (docs/deliberation.md, "Lost seats").

- **Limited advisory** (1 of N seats answered): there is no council, only one reviewer's
  opinion. The resolution stays NO_QUORUM (one seat never approves alone, so the check run
  is never green on it: neutral) and the reason opens with "Limited advisory: 1 of N seats
  answered", names what is missing, and says the one answer is shown without synthesis.
- **Partial synthesis** (some seats lost, 2 or more answered): the chair's synthesis says
  "Partial consensus (N/M seats)" before the points the answering seats share, and its
  Divergence names each missing view and why it is missing. Nobody guesses what a missing
  seat would have said.

The text added here is the council's own (deterministic), like the verdict sentence
`bot.council.verdicts` may replace; everything else in the synthesis is the chair's.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.council.advisory import Advisory, Resolution, SeatReport, SeatState
from bot.council.schemas import Divergence, Synthesis

__all__ = [
    "LIMITED_PREFIX",
    "PARTIAL_CONSENSUS",
    "limited_advisory",
    "missing_view",
    "partial_synthesis",
]

LIMITED_PREFIX = "Limited advisory"
PARTIAL_CONSENSUS = "Partial consensus"
_STATES = {
    SeatState.TIMED_OUT: "it timed out",
    SeatState.ERROR: "its call failed",
    SeatState.INVALID: "its answer stayed incomplete after the re-asks",
    SeatState.SKIPPED: "it was never called",
    # A seat whose vote did not come keeps its assessment (it is valid, not missing).
    SeatState.NO_VOTE: "its vote did not come",
    SeatState.ABSTAINED: "its vote did not come",
    SeatState.OK: "it gave no assessment",
}
_ERROR_CHARS = 120


def _why(seat: SeatReport) -> str:
    why = _STATES.get(seat.state, seat.state.value)
    if seat.error:
        error = " ".join(seat.error.split())
        if len(error) > _ERROR_CHARS:
            error = error[: _ERROR_CHARS - 1].rstrip() + "…"
        why += f" ({error})"
    return why


def _view(seat: SeatReport) -> str:
    lenses = f"{', '.join(seat.lenses[:2])}; " if seat.lenses else ""
    return f"the {seat.persona_name} view ({lenses}{seat.model})"


def missing_view(seat: SeatReport) -> str:
    """ "the Security reviewer view (security, authn; anthropic:...) is missing: it timed out"."""
    return f"{_view(seat)} is missing: {_why(seat)}"


def limited_advisory(advisory: Advisory) -> Advisory:
    """The advisory of a council where exactly one seat of two or more answered: its reason
    says so first. Any other advisory is returned as it is."""
    valid, lost = advisory.valid_seats(), advisory.lost_seats()
    if advisory.resolution is not Resolution.NO_QUORUM or len(valid) != 1 or not lost:
        return advisory
    (one,) = valid
    # Each missing seat by its model: a council's seats share one persona name.
    missing = "; ".join(
        f"{s.persona_name} on {s.model} ({_STATES.get(s.state, s.state.value)})" for s in lost
    )
    limited = (
        f"{LIMITED_PREFIX}: 1 of {len(advisory.seats)} seats answered. Only "
        f"{one.persona_name}'s answer ({one.model}) is shown, without synthesis: treat it as "
        "one reviewer's opinion, not the council's; one seat never approves alone. "
        f"Missing: {missing}."
    )
    reason = f"{limited} {advisory.reason}" if advisory.reason else limited
    return advisory.model_copy(update={"reason": reason, "partial": True})


def partial_synthesis(synthesis: Synthesis, seats: Sequence[SeatReport]) -> Synthesis:
    """The chair's synthesis of a council that lost seats (but kept at least 2): "Partial
    consensus (N/M seats)" first among the consensus, and one Divergence point per missing
    view. A synthesis of a full council is returned as it is."""
    valid = [s for s in seats if s.is_valid]
    lost = [s for s in seats if not s.is_valid]
    if not lost or len(valid) < 2:
        return synthesis
    names = ", ".join(s.persona_name for s in lost)
    head = (
        f"{PARTIAL_CONSENSUS} ({len(valid)}/{len(seats)} seats): the points below are shared "
        f"by the {len(valid)} seats that answered; missing: {names}."
    )
    missing = [
        Divergence(
            point=missing_view(s)[0].upper() + missing_view(s)[1:],
            sides=["Not represented: this advisory does not guess what it would have said."],
        )
        for s in lost
    ]
    return synthesis.model_copy(
        update={
            "consensus": [head, *synthesis.consensus],
            "divergence": [*synthesis.divergence, *missing],
        }
    )
