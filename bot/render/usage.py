"""How an advisory's usage reads, the same in the comment, the terminal, the check run and
the JSON: what it cost (a model nobody knows the price of is "unknown", never "$0"), and
what the reader should know about the tokens (reasoning, answers cut off).

A model priced at $0 (a local server) is priced: its calls cost $0 and say so plainly.
"""

from __future__ import annotations

from bot.council.advisory import UsageSummary

__all__ = ["cost_known", "cost_text", "usage_notes"]


def cost_known(usage: UsageSummary) -> bool:
    """False when some call's cost is unknown (its model has no price)."""
    return not usage.unpriced_models


def cost_text(usage: UsageSummary, *, digits: int = 4) -> str:
    """What the calls cost, put after a label ("Cost: ..."): "$0.0123"; "$0.0123 + unknown
    (no price for ollama-less:foo)" where some calls had no price; "unknown (no price for
    ollama-less:foo)" where nothing that cost anything was priced."""
    known = f"${usage.cost_usd:.{digits}f}"
    if not usage.unpriced_models:
        return known
    missing = f"(no price for {', '.join(usage.unpriced_models)})"
    if usage.cost_usd > 0:
        return f"{known} + unknown {missing}"
    return f"unknown {missing}"


def usage_notes(usage: UsageSummary) -> list[str]:
    """Phrases about the tokens, only where they apply: e.g. "1,234 of the output tokens
    were reasoning", "1 answer cut off at the output limit (re-asked ...)"."""
    notes: list[str] = []
    if usage.reasoning_tokens > 0:
        notes.append(f"{usage.reasoning_tokens:,} of the output tokens were reasoning")
    if usage.truncated > 0:
        n = usage.truncated
        # Re-asked while the step had re-asks left (a last attempt cut off is not).
        notes.append(
            f"{n} answer{'' if n == 1 else 's'} cut off at the output limit "
            "(re-asked for a shorter one while re-asks remained)"
        )
    return notes
