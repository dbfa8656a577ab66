"""The packing plan: everything to pack, and how it is packed.

`Plan` holds the PR's description (`description`), the items and the changed files listed,
not sent; `Plan.pack` packs them with bot/context/pack.py `Packer` for a given room kept
for the "Not included" list: the description in its share, the items by value with
guidance capped (`Plan.guidance_cap`), the gutter explained once in the first diff
section's heading. `listing_tokens` is what that list costs, so that bot/context/build.py
`build_context` can pack a second time keeping only that room.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.context.models import Omitted, PullRequestMeta, Section
from bot.context.pack import Item, Packer, chunk_lines, not_included
from bot.context.prose import NOT_INCLUDED_HEADING, clean_untrusted
from bot.context.redact import Redactor
from bot.tokens import TokenEstimator

DESCRIPTION_SHARE = 0.1  # of the usable budget, at most
GUIDANCE_SHARE = 0.15  # of the usable budget, at most, for README, CONTRIBUTING, ADRs...
GUIDANCE_RATIO = 0.2  # ...and of the rest of the material (tokens) at most
GUIDANCE_FLOOR = 400  # tokens guidance may take however small the change
# Said once, in the first diff section's heading, so a model reads the gutter right (the
# lines of code and file sections carry theirs as context lines do).
GUTTER_LEGEND = (
    "gutter: the new-side line number of + and context lines and of every line of the other "
    "sections' files (cite these), the old-side number of - lines"
)


@dataclass
class Plan:
    """Everything to pack, packed for a given room for the "Not included" list."""

    estimator: TokenEstimator
    usable: int  # the budget less the margin and the title block
    description: list[Item]
    items: list[Item]
    listed: list[Omitted]  # changed files listed, not sent
    unread: list[Omitted]

    def pack(self, room: int) -> tuple[list[Section], list[Omitted], int]:
        """The sections, the omitted list as sent, and the room it was packed with."""
        packer = Packer(self.estimator, self.usable)
        kept = packer.reserve(room)
        legend = packer.reserve(self.estimator.estimate(f"; {GUTTER_LEGEND}"))
        packer.omitted += self.listed
        share = max(int(self.usable * DESCRIPTION_SHARE), 200)
        packer.tier(self.description, share=share)
        packer.by_value(self.items, caps={"guidance": self.guidance_cap(packer)})
        packer.omitted += self.unread
        omitted = not_included(packer.omitted, self.estimator, kept + packer.left)
        return _with_legend(packer.sections, legend), omitted, kept

    def guidance_cap(self, packer: Packer) -> int:
        """What guidance may take: a share of the rest of the material, so that a small
        change is not read beside pages of README (at least `GUIDANCE_FLOOR` tokens), and
        never more than `GUIDANCE_SHARE` of the budget."""
        material = sum(
            sum(packer.costs(i)) + packer.overhead(i) for i in self.items if i.kind != "guidance"
        )
        share = max(GUIDANCE_FLOOR, int(material * GUIDANCE_RATIO))
        return min(share, int(self.usable * GUIDANCE_SHARE))


def listing_tokens(omitted: list[Omitted], estimator: TokenEstimator) -> int:
    if not omitted:
        return 0
    lines = "".join(f"- {o.path}: {o.reason}\n" for o in omitted)
    return estimator.estimate(f"{NOT_INCLUDED_HEADING}\n{lines}")


def description(meta: PullRequestMeta, redactor: Redactor) -> list[Item]:
    """The PR's own words, each cleaned (branch names are the author's words too)."""

    def clean(text: str) -> str:
        return clean_untrusted(text, redactor)

    parts = []
    if meta.base_ref or meta.head_ref:
        parts.append(f"Merging {clean(meta.head_ref) or '?'} into {clean(meta.base_ref) or '?'}")
    body = clean(meta.body)
    if body:
        parts.append(body)
    commits = [c for c in map(clean, meta.commit_messages) if c]
    if commits:
        parts.append("Commits:\n" + "\n".join(_bullet(c) for c in commits))
    comments = [c for c in map(clean, meta.comments) if c]
    if comments:
        parts.append("Comments:\n" + "\n".join(_bullet(c) for c in comments))
    if not parts:
        return []
    lines = "\n\n".join(parts).split("\n")
    return [Item("description", None, "the PR's own description", chunk_lines(lines))]


def _bullet(text: str) -> str:
    first, *rest = text.split("\n")
    return "\n".join([f"- {first}", *(f"  {line}" for line in rest)])


def _with_legend(sections: list[Section], legend: int) -> list[Section]:
    """The gutter explained once, in the first diff section's heading (its cost reserved)."""
    for n, section in enumerate(sections):
        if section.kind == "diff":
            why = f"{section.why}; {GUTTER_LEGEND}"
            first = section.model_copy(update={"why": why, "tokens": section.tokens + legend})
            return [*sections[:n], first, *sections[n + 1 :]]
    return sections
