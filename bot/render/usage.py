"""How an advisory's usage reads, the same in the comment, the terminal, the check run and
the JSON: what it cost (a model nobody knows the price of is "unknown", never "$0"), and
what the reader should know about the tokens (reasoning, answers cut off, and the part no
server counted: a server that reports no usage has its calls counted by the estimator, and
that part is said to be an estimate wherever tokens are shown).

A model priced at $0 (a local server) is priced: its calls cost $0 and say so plainly.
"""

from __future__ import annotations

from pydantic import JsonValue

from bot.council.advisory import UsageSummary

__all__ = ["cost_known", "cost_text", "estimated_note", "usage_json", "usage_notes"]


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
    """Phrases about the tokens, only where they apply: e.g. "about 9,800 of the 12,400
    tokens are estimated: ...", "1,234 of the output tokens were reasoning", "1 answer cut
    off at the output limit (re-asked ...)"."""
    notes: list[str] = []
    estimated = estimated_note(usage)
    if estimated:
        notes.append(estimated)
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


def _estimated_calls(usage: UsageSummary) -> str:
    """ "3 of 16 calls", "all 3 calls", "the call"."""
    n, calls = usage.estimated_calls, usage.calls
    if n < calls:
        return f"{n} of {calls} calls"
    return "the call" if n == 1 else f"all {n} calls"


def estimated_note(usage: UsageSummary) -> str | None:
    """ "about 9,800 of the 12,400 tokens are estimated: the server reported no usage for 3
    of 16 calls"; None when the servers counted every call's tokens."""
    if usage.estimated_calls <= 0:
        return None
    return (
        f"about {usage.estimated_tokens:,} of the {usage.tokens:,} tokens are estimated: the "
        f"server reported no usage for {_estimated_calls(usage)}"
    )


def usage_json(usage: UsageSummary) -> dict[str, JsonValue]:
    """The advisory's usage in `--json` (stable names): every count, what it cost, and how
    much of it the token estimator counted (`estimated_calls`, `estimated_tokens`: calls
    whose server reported no usage, and their tokens, which the other counts include)."""
    return {
        "calls": usage.calls,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "truncated": usage.truncated,
        # What the priced calls cost; the calls of `unpriced_models` are not in it.
        "cost_usd": round(usage.cost_usd, 6),
        "cost_known": cost_known(usage),
        "unpriced_models": list(usage.unpriced_models),
        "wall_ms": usage.wall_ms,
        "tokens": usage.tokens,
        "estimated_calls": usage.estimated_calls,
        "estimated_tokens": usage.estimated_tokens,
    }
