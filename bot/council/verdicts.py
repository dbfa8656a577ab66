"""The chair's verdict sentence must say what the resolution says. No model here.

The chair is told the resolution and its conditions (prompts.synth_task), but a model can
still write "approve as is" above a REJECTED result. After the call, `settled_synthesis`
reads the sentence for cues and replaces a contradicting one by `verdict_sentence`, a
deterministic sentence for the resolution.

Cues (lower-cased, per clause; a cue with a negation among the 4 words before it in its
clause - not, no, never, without, cannot, n't - is negated):
- reject: "reject", "block" (not "non-blocking"), "do/must/should not merge", "not be
  merged", "not ready", and a negated "approve"/"merge";
- conditional: "condition(s/al)", "once", "provided", "only if/after/when", "subject to",
  "until", "before merging", "not as is"; a negated "condition" ("without conditions") is an
  as-is cue instead;
- as is: "as is"/"as-is" not negated, "unconditional(ly)", "ready/safe to merge", "lgtm";
- approve: "approve", "approval", "merge" (as a verb to do), not negated;
- escalate: "escalate", "split", "tie", "deadlock", "a person/human/maintainer must decide".

A sentence contradicts its resolution when:
- APPROVED: it has a reject, conditional or escalate cue;
- APPROVED_WITH_CONDITIONS: it has a reject, as-is or escalate cue, or no conditional cue;
- ESCALATE: it has an as-is cue, or no escalate cue;
- REJECTED: it has no reject cue, or an as-is cue ("reject; approve once X" is fine).
Other resolutions have no verdict and keep the chair's sentence. An empty sentence is
replaced too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.council.advisory import Resolution
from bot.council.schemas import Synthesis

__all__ = ["contradicts", "settled_synthesis", "verdict_sentence"]

_NEGATORS = frozenset(
    {"not", "no", "never", "without", "cannot", "can't", "don't", "doesn't", "won't", "nor"}
)
_CLAUSE = re.compile(r"[.;:!?,—–()]|\bbut\b")
_REJECT = re.compile(
    r"\breject\w*|(?<!non-)\bblock(s|ed|ing|er)?\b|\b(do|must|should|cannot|can't|don't)\s+not\s+"
    r"(be\s+)?merge|\bnot\s+be\s+merged|\bnot\s+ready\b|\bmust\s+not\s+land|"
    r"\bshould\s+not\s+land|\bnot\s+land\b"
)
_CONDITIONAL = re.compile(
    r"\bcondition(s|al|ally)?\b|\bonce\b|\bprovided\b|\bonly\s+(if|after|when|once)\b|"
    r"\bsubject\s+to\b|\buntil\b|\bbefore\s+merg\w*"
)
_AS_IS = re.compile(
    r"\bas[\s-]is\b|\bunconditional(ly)?\b|\bready\s+to\s+merge\b|\bsafe\s+to\s+merge\b|\blgtm\b"
)
_APPROVE = re.compile(r"\bapprov\w*|\bmerge[sd]?\b")
_ESCALATE = re.compile(
    r"\bescalat\w*|\bsplit\b|\btie[ds]?\b|\bdeadlock\w*|"
    r"\b(person|human|maintainer|people|reviewer)s?\s+(must|should|needs?\s+to|to)\s+decide"
)


@dataclass(frozen=True)
class _Cues:
    reject: bool
    conditional: bool
    as_is: bool
    approve: bool
    escalate: bool


def _negated(clause: str, start: int) -> bool:
    before = clause[:start].replace("’", "'").split()[-4:]
    return any(w.strip("\"'") in _NEGATORS or w.endswith("n't") for w in before)


def _cues(sentence: str) -> _Cues:
    reject = conditional = as_is = approve = escalate = False
    for clause in _CLAUSE.split(" ".join(sentence.lower().split())):
        if not clause or not clause.strip():
            continue
        if _REJECT.search(clause):
            reject = True
        if _ESCALATE.search(clause):
            escalate = True
        if re.search(r"\bnot\s+as[\s-]is\b", clause):
            conditional = True
        for m in _CONDITIONAL.finditer(clause):
            if _negated(clause, m.start()):
                as_is = True  # "without conditions", "no conditions"
            else:
                conditional = True
        for m in _AS_IS.finditer(clause):
            if not _negated(clause, m.start()):
                as_is = True
        for m in _APPROVE.finditer(clause):
            if _negated(clause, m.start()):
                reject = True  # "does not approve", "cannot merge"
            else:
                approve = True
    return _Cues(reject, conditional, as_is, approve, escalate)


def contradicts(resolution: Resolution, sentence: str) -> bool:
    """Whether the chair's sentence says something else than `resolution` (module doc)."""
    if not resolution.is_verdict:
        return False
    if not sentence.strip():
        return True
    c = _cues(sentence)
    if resolution is Resolution.APPROVED:
        return c.reject or c.conditional or c.escalate
    if resolution is Resolution.APPROVED_WITH_CONDITIONS:
        return c.reject or c.as_is or c.escalate or not c.conditional
    if resolution is Resolution.ESCALATE:
        return c.as_is or not c.escalate
    # REJECTED
    return not c.reject or c.as_is


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def verdict_sentence(
    resolution: Resolution, approvals: int, rejections: int, conditions: int
) -> str:
    """The deterministic verdict sentence of a resolution (used when the chair's contradicts)."""
    if resolution is Resolution.APPROVED:
        return f"The council approves this change as is ({approvals} for, {rejections} against)."
    if resolution is Resolution.APPROVED_WITH_CONDITIONS:
        return (
            f"The council approves this change only once the {_count(conditions, 'condition')} "
            "below are met; not as is."
        )
    if resolution is Resolution.ESCALATE:
        return (
            f"The council is split ({approvals} for, {rejections} against); a person must decide."
        )
    if resolution is Resolution.REJECTED:
        return (
            f"The council rejects this change ({rejections} against, {approvals} for); "
            "do not merge it in its current form."
        )
    return ""


def settled_synthesis(
    synthesis: Synthesis,
    resolution: Resolution,
    *,
    approvals: int,
    rejections: int,
    conditions: int,
) -> tuple[Synthesis, bool]:
    """The synthesis with a verdict sentence that agrees with `resolution`, and whether the
    chair's sentence was replaced."""
    if not contradicts(resolution, synthesis.verdict_sentence):
        return synthesis, False
    sentence = verdict_sentence(resolution, approvals, rejections, conditions)
    return synthesis.model_copy(update={"verdict_sentence": sentence}), True
