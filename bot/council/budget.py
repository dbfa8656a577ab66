"""What a deliberation may spend, held before each call starts: the `Budget` seam.

`SeatCaller` reserves a call's likely cost before the call starts (its input estimate and
the usual size of its model's answers, `bot.council.reserving`; the worst case for a model
never seen), and a budget that would cross one of its caps refuses: the call does not
start. A reservation may ask for more room than it holds (`need_usd`: the call must be able
to answer at least that much); the budget says how much room its caps had left beyond the
hold (`Reservation.room_usd`), and the call's output limit is clipped to it, so that the
call cannot spend past a cap. When the call returns the reservation is settled at what it
actually cost; a call that was never billed releases it. A reservation never settled (its
worker died mid-call, or it was cancelled) stays charged at what it holds, because nobody
knows what the provider billed.

`InMemoryBudget` holds its caps in this process (the command line, tests). The App's budget
lives in the store (`bot.store.spend.StoreBudget`): there reservations are atomic across
workers, against the deliberation's, the pull request's and the installation's daily cap.

Beside the dollar caps, a deliberation may have a cap in tokens (`TokenBudget`): a model
with no known price costs $0 as far as a dollar cap can see, so only tokens bound it. Each
call reserves its tokens (input estimate + its model's usual answer, or the output limit
for a model never seen) the same way, and settles to the tokens it actually used.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "TOKEN_CAP",
    "TOKEN_CAP_SETTING",
    "Budget",
    "CapReached",
    "InMemoryBudget",
    "Refusal",
    "Reservation",
    "TokenBudget",
    "TokenCapReached",
    "TokenReservation",
]


@dataclass(frozen=True)
class Reservation:
    """Money held for one call until it is settled or released."""

    id: str
    amount_usd: float
    label: str  # the step, e.g. "assess/seat-2/0"
    # What every cap still had room for beyond this reservation when it was made (the
    # tightest of them); None: no cap bounds it.
    room_usd: float | None = None


@dataclass(frozen=True)
class CapReached:
    """Why a budget refused a reservation: the cap it would have crossed."""

    cap: str  # e.g. "the deliberation's cost cap"
    limit_usd: float
    charged_usd: float  # spent and held against that cap when it refused
    amount_usd: float  # what the refused call needed room for
    # True: that was the call's worst case (its model never seen); False: the least it
    # could have been sent (its model's usual answer, or the output floor).
    worst_case: bool = True

    def __str__(self) -> str:
        return f"{self.cap} of ${self.limit_usd:.2f}"

    def next_call(self) -> str:
        """What the refused call could have spent, e.g. "could have cost up to $0.1900", or
        what it needed at the least, "needed at least $0.0400"."""
        if self.worst_case:
            return f"could have cost up to ${self.amount_usd:.4f}"
        return f"needed at least ${self.amount_usd:.4f}"


TOKEN_CAP = "the token cap"
TOKEN_CAP_SETTING = "COUNCIL_MAX_SPEND_TOKENS"


@dataclass(frozen=True)
class TokenCapReached:
    """Why a `TokenBudget` refused a reservation: the call could have crossed the cap."""

    limit_tokens: int
    charged_tokens: int  # used and held against the cap when it refused
    amount_tokens: int  # what the refused call needed room for
    cap: str = TOKEN_CAP
    setting: str = TOKEN_CAP_SETTING
    worst_case: bool = True  # as in CapReached

    def __str__(self) -> str:
        return f"{self.cap} of {self.limit_tokens:,} tokens ({self.setting})"

    def next_call(self) -> str:
        if self.worst_case:
            return f"could have used up to {self.amount_tokens:,} tokens"
        return f"needed at least {self.amount_tokens:,} tokens"


# Either kind of cap stops a deliberation the same way (Resolution.COST_LIMIT).
Refusal = CapReached | TokenCapReached


class Budget(Protocol):
    async def reserve(
        self, amount_usd: float, label: str, *, need_usd: float | None = None
    ) -> Reservation | CapReached:
        """Hold `amount_usd` for one call, or refuse (nothing is held) if `need_usd` (at
        least `amount_usd`; None: `amount_usd`) would cross a cap. The reservation says how
        much room the caps had left beyond what it holds."""
        ...

    async def settle(self, reservation: Reservation, actual_usd: float) -> None:
        """The call returned: charge what it cost instead of what was held."""
        ...

    async def release(self, reservation: Reservation) -> None:
        """The call was never billed (refused by the provider before any token): drop it."""
        ...


DELIBERATION_CAP = "the deliberation's cost cap"


@dataclass
class InMemoryBudget:
    """One cap (None: none) over everything reserved through this object.

    `spent_usd` starts at what was paid before (a resumed deliberation's recorded calls).
    Reservations and refusals are kept, in order, for whoever wants to read them."""

    cap_usd: float | None
    spent_usd: float = 0.0
    cap: str = DELIBERATION_CAP
    held: dict[str, Reservation] = field(default_factory=dict)
    reservations: list[Reservation] = field(default_factory=list)
    refusals: list[CapReached] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def charged_usd(self) -> float:
        """Spent, plus held for calls under way (or whose outcome is unknown)."""
        return self.spent_usd + sum(r.amount_usd for r in self.held.values())

    async def reserve(
        self, amount_usd: float, label: str, *, need_usd: float | None = None
    ) -> Reservation | CapReached:
        # No await between the check and the hold: atomic within the event loop.
        need = amount_usd if need_usd is None else max(need_usd, amount_usd)
        charged = self.charged_usd
        if self.cap_usd is not None and charged + need > self.cap_usd:
            refusal = CapReached(self.cap, self.cap_usd, charged, need)
            self.refusals.append(refusal)
            return refusal
        room = None if self.cap_usd is None else self.cap_usd - charged - amount_usd
        reservation = Reservation(f"mem-{next(self._ids)}", amount_usd, label, room)
        self.held[reservation.id] = reservation
        self.reservations.append(reservation)
        return reservation

    async def settle(self, reservation: Reservation, actual_usd: float) -> None:
        if self.held.pop(reservation.id, None) is not None:
            self.spent_usd += actual_usd

    async def release(self, reservation: Reservation) -> None:
        self.held.pop(reservation.id, None)


@dataclass(frozen=True)
class TokenReservation:
    """Tokens held for one call until it is settled or released."""

    id: str
    tokens: int
    label: str
    room_tokens: int | None = None  # as Reservation.room_usd, in tokens


@dataclass
class TokenBudget:
    """A deliberation's cap in tokens (None: none), held in this process: input (cache
    reads and writes included) plus output of every call, reserved before it starts (as the
    dollar budgets are: `need` must fit, `tokens` is held) and settled to what it used.

    `spent_tokens` starts at what the ledger's recorded calls used (a resumed deliberation).
    Synchronous: the check and the hold are atomic within the event loop."""

    cap_tokens: int | None
    spent_tokens: int = 0
    held: dict[str, TokenReservation] = field(default_factory=dict)
    reservations: list[TokenReservation] = field(default_factory=list)
    refusals: list[TokenCapReached] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def charged_tokens(self) -> int:
        return self.spent_tokens + sum(r.tokens for r in self.held.values())

    def reserve(
        self, tokens: int, label: str, *, need: int | None = None
    ) -> TokenReservation | TokenCapReached:
        wanted = tokens if need is None else max(need, tokens)
        charged = self.charged_tokens
        if self.cap_tokens is not None and charged + wanted > self.cap_tokens:
            refusal = TokenCapReached(self.cap_tokens, charged, wanted)
            self.refusals.append(refusal)
            return refusal
        room = None if self.cap_tokens is None else self.cap_tokens - charged - tokens
        reservation = TokenReservation(f"tok-{next(self._ids)}", tokens, label, room)
        self.held[reservation.id] = reservation
        self.reservations.append(reservation)
        return reservation

    def settle(self, reservation: TokenReservation, actual_tokens: int) -> None:
        if self.held.pop(reservation.id, None) is not None:
            self.spent_tokens += actual_tokens

    def release(self, reservation: TokenReservation) -> None:
        self.held.pop(reservation.id, None)
