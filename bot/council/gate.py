"""The completeness gate's judgement of a schema-valid assessment.

A seat can return a perfectly valid object that is not an answer: a request for more
material, a promise to review later, or no content at all. Such an answer is re-asked with
the reason this module returns (at most twice more; the engine counts).

Deferral phrases alone are not enough to reject an answer: "let me know if ..." at the end
of a real review is politeness. An answer is a deferral when its summary (or, with no
summary, its lens analyses) matches a deferral pattern and it raises nothing of substance:
no finding, and no concern or red flag that is not itself a deferral.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from bot.council.schemas import Assessment

__all__ = ["DEFERRAL_PATTERNS", "check_complete", "is_deferral"]

DEFERRAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bplease (provide|share|send|paste|upload|attach)\b",
        r"\b(could|can|would) you (please )?(provide|share|send|paste|clarify)\b",
        r"\bneed (more|additional|further|the full|the complete) "
        r"(context|information|details|code|files?)\b",
        r"\b(once|when|after|as soon as) you (share|provide|send|paste|upload)\b",
        r"\b(cannot|can't|can not|unable to) (review|assess|evaluate|judge|comment)\b"
        r".{0,40}\bwithout\b",
        r"\bI('ll| will| shall) (review|analy[sz]e|assess|look (at|into)|get back)\b",
        r"\bI'?d be (happy|glad) to\b",
        r"\blet me know\b",
        r"\bno (code|diff|files?|pull request) (was|were|has been|have been) (provided|shared)\b",
    )
)


def is_deferral(text: str) -> bool:
    return any(p.search(text) for p in DEFERRAL_PATTERNS)


def _norm_lens(name: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", name.lower()))


def _missing_lenses(assessment: Assessment, lenses: Sequence[str]) -> list[str]:
    scored = {_norm_lens(s.lens) for s in assessment.lens_scores}
    return [lens for lens in lenses if _norm_lens(lens) not in scored]


def _substance(items: Iterable[str]) -> list[str]:
    return [i for i in items if i.strip() and not is_deferral(i)]


def _has_content(a: Assessment) -> bool:
    return bool(
        a.summary.strip()
        or a.findings
        or any(s.analysis.strip() for s in a.lens_scores)
        or any(c.strip() for c in (*a.concerns, *a.red_flags))
    )


def check_complete(assessment: Assessment, lenses: Sequence[str]) -> str | None:
    """None when the answer is complete, else the reason to send back with the re-ask."""
    if not getattr(assessment, "verdict", None) or not getattr(assessment, "score", None):
        return "Set `verdict` (APPROVE, CONCERNS or REJECT) and `score` (1-10)."
    if not _has_content(assessment):
        return (
            "The answer has no summary, concern, finding or lens analysis. Review the pull "
            "request in the context and answer with your assessment."
        )
    missing = _missing_lenses(assessment, lenses)
    if missing:
        names = ", ".join(f'"{m}"' for m in missing)
        return (
            f"`lens_scores` has no entry for {names}. Score every lens of your brief, using "
            "its name exactly."
        )
    prose = assessment.summary or " ".join(s.analysis for s in assessment.lens_scores)
    raised = assessment.findings or _substance([*assessment.concerns, *assessment.red_flags])
    if is_deferral(prose) and not raised:
        return (
            "The answer asks for more material or promises a later review instead of "
            "reviewing. Everything available is in the context: review it now, and state "
            "any gap as a concern."
        )
    return None
