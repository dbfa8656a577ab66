"""The anonymized peer ranking: each member ranks the others' answers; a Borda count orders
them."""

from __future__ import annotations

import asyncio

from bot.council import prompts
from bot.council.run import Run, in_parallel, structured
from bot.council.schemas import PeerRanking
from bot.council.seats import Seat

__all__ = ["rank"]


async def rank(run: Run) -> None:
    if not run.protocol.ranks(len(run.valid())):
        return
    transcript = run.transcript.text()
    ballots: dict[str, list[str]] = {}

    async def one(seat: Seat, warm: asyncio.Event, leader: bool) -> None:
        others = [s.label for s in run.valid() if s.seat_id != seat.seat_id]
        ranking = await structured(
            run,
            seat,
            prompts.RANK_TOOL,
            transcript,
            prompts.seat_brief(seat, run.valid()),
            prompts.rank_task(others),
            f"rank/{seat.seat_id}/0",
            warm,
            leader,
        )
        if isinstance(ranking, PeerRanking):
            ballots[seat.seat_id] = [label for label in ranking.ranking if label in others]

    await in_parallel(run.valid(), one)
    run.peer_ranking = _borda(run, ballots)


def _borda(run: Run, ballots: dict[str, list[str]]) -> list[str]:
    by_label = {s.label: s.seat_id for s in run.valid()}
    points: dict[str, int] = dict.fromkeys(by_label.values(), 0)
    for ranking in ballots.values():
        for position, label in enumerate(ranking):
            points[by_label[label]] += len(ranking) - position
    return sorted(points, key=lambda seat_id: (-points[seat_id], seat_id))
