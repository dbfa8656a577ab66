"""The chair's merge groups, checked: which are joined, and what is refused and why.

The chair answers the merge task (bot/council/prompts.py `merge_task`) with groups of the
ids `merge_candidates` gave (bot/council/findings.py, whose module docstring has the
rules). `resolve_groups` turns them into findings to join (`merge_findings`) and a
`GroupRefusal` for each group it did not take whole, which the engine adds to the
advisory's notes: a group is never changed silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.council.findings import FindingKey, MergeCandidate, linked_parts

__all__ = ["ChairGroups", "GroupRefusal", "resolve_groups"]


@dataclass(frozen=True)
class GroupRefusal:
    """What the code did not do of one of the chair's groups, and why."""

    group: tuple[str, ...]  # the ids as the chair gave them (an unknown one clipped)
    outcome: str  # "was not merged", "was merged without F9", ...
    reasons: tuple[str, ...]

    def note(self) -> str:
        """E.g. "The chair's group F3, F7 was not merged: F7 is not a finding it was shown."."""
        return (
            f"The chair's group {', '.join(self.group)} {self.outcome}: {'; '.join(self.reasons)}."
        )


@dataclass(frozen=True)
class ChairGroups:
    """The chair's groups as findings to join (`merge_findings`), and what was refused."""

    groups: list[list[FindingKey]]
    refusals: list[GroupRefusal]

    def notes(self) -> list[str]:
        return [r.note() for r in self.refusals]


def _shown(raw: str) -> str:
    # An id as the chair wrote it, short: it is model text going into a note.
    one = " ".join(raw.split())
    return one if len(one) <= 12 else one[:11] + "…"


def _ids(members: Iterable[MergeCandidate]) -> str:
    return ", ".join(c.id for c in members)


def resolve_groups(
    candidates: Sequence[MergeCandidate], groups: Iterable[Sequence[str]]
) -> ChairGroups:
    """The chair's groups of ids as findings to join, and a `GroupRefusal` for every group
    the code did not take whole: an id it was not shown or one an earlier group merged is
    left out, and a group is merged in the parts `linked_parts` joins (see the docstring of
    bot/council/findings.py); a part of one finding joins nothing. A group of one id is
    ignored."""
    by_id = {c.id.casefold(): c for c in candidates}
    index = {c.id: n for n, c in enumerate(candidates)}
    merged_in: dict[str, str] = {}  # id -> the ids of the group it was merged in
    out: list[list[FindingKey]] = []
    refusals: list[GroupRefusal] = []
    for group in groups:
        written = [(raw, by_id.get(raw.strip().casefold())) for raw in group if raw.strip()]
        shown = list(dict.fromkeys(c.id if c else _shown(raw) for raw, c in written))
        if len(shown) < 2:
            continue  # one id: nothing to merge, nothing refused
        members: list[int] = []
        reasons: list[str] = []
        for raw, found in written:
            if found is None:
                reasons.append(f"{_shown(raw)} is not a finding it was shown")
            elif found.id in merged_in:
                reasons.append(f"{found.id} is in the earlier group {merged_in[found.id]}")
            elif index[found.id] not in members:
                members.append(index[found.id])
        linked = linked_parts([candidates[n].finding for n in members])
        parts = [[members[i] for i in part] for part in linked]
        kept = [[candidates[n] for n in part] for part in parts if len(part) > 1]
        if len(parts) > 1:
            listed = " and ".join(_ids(candidates[n] for n in part) for part in parts)
            reasons.append(f"{listed} share no file, title word or code name")
        for part in kept:
            out.append([c.key for c in part])
            merged_in.update((c.id, _ids(part)) for c in part)
        if reasons:
            refusals.append(_refusal(shown, kept, reasons))
    return ChairGroups(out, refusals)


def _refusal(
    shown: Sequence[str], kept: Sequence[Sequence[MergeCandidate]], reasons: Sequence[str]
) -> GroupRefusal:
    joined = {c.id for part in kept for c in part}
    left = [fid for fid in shown if fid not in joined]
    if not kept:
        outcome = "was not merged"
    else:
        outcome = "was merged"
        if len(kept) > 1:
            outcome += " as " + " and ".join(_ids(part) for part in kept)
        if left:
            outcome += f" without {', '.join(left)}"
    return GroupRefusal(tuple(shown), outcome, tuple(reasons))
