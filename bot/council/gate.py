"""The completeness gate's judgement of a schema-valid assessment.

A seat can return a perfectly valid object that is not an answer: a request for more
material, a promise to review later, or no content at all. Such an answer is re-asked with
the reason this module returns (at most twice more; the engine counts) and then dropped.

Deferral phrases alone are not enough to reject an answer: "let me know if ..." at the end
of a real review is politeness. An answer is a deferral when its summary (or, with no
summary, its lens analyses) matches a deferral pattern and it raises nothing of substance:
no finding, and no concern or red flag that is not itself a deferral.

Models rarely repeat a lens name word for word ("Security (authn/authz)" for
"authentication and authorization"), so each `lens_scores` entry is matched to a lens of the
brief (`match_lens_names`) and renamed to it. A real answer that still leaves lenses
unscored after the re-asks is kept, those lenses marked "not scored" (`Gated.answered`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from bot.council.schemas import Assessment, LensScore

__all__ = [
    "DEFERRAL_PATTERNS",
    "LENS_MATCH_THRESHOLD",
    "Gated",
    "check_complete",
    "gate_assessment",
    "is_deferral",
    "lens_similarity",
    "match_lens_names",
]

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


# --- matching lens names ------------------------------------------------------------------

# A lens_scores entry matches a lens of the brief above this similarity (`lens_similarity`).
# Two-word names that share one word score 0.5 ("backward compatibility" / "browser
# compatibility", "rollout plan" / "rollback plan": different things); a paraphrase that
# keeps the lens's words and adds or drops a qualifier scores 0.67 or more ("Observability
# (logging, metrics, tracing)" 0.70, "Query performance and indexing" 0.67).
LENS_MATCH_THRESHOLD = 0.6

_STOPWORDS = frozenset({
    "a", "an", "and", "as", "at", "by", "for", "in", "its", "of", "on", "or", "the", "to",
    "versus", "vs", "with",
})  # fmt: skip
# Qualifiers a model adds to a name without changing what it names ("Design quality",
# "Rollback strategy", "ORM usage"); dropped unless nothing else is left.
_FILLER = frozenset({
    "analysis", "approach", "assessment", "code", "concern", "consideration", "issue",
    "management", "overall", "practice", "quality", "review", "strategy", "use",
})  # fmt: skip
# Abbreviations and word forms models write for the words lens names use.
_ALIASES = {
    "a11y": "accessibility",
    "async": "asynchronous",
    "auth": "authentication",
    "authn": "authentication",
    "authz": "authorization",
    "cfg": "configuration",
    "config": "configuration",
    "crypto": "cryptography",
    "db": "database",
    "dep": "dependency",
    "deps": "dependency",
    "doc": "documentation",
    "docs": "documentation",
    "env": "environment",
    "i18n": "internationalization",
    "k8s": "kubernetes",
    "o11y": "observability",
    "perf": "performance",
    "perms": "permissions",
    "semver": "semantic versioning",
    "ui": "user interface",
    "usage": "use",
    "used": "use",
    "using": "use",
    "ux": "user experience",
}


def _stem(word: str) -> str:
    """A crude singular / bare form, the same for both names compared."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) >= 7 and word.endswith("ing"):
        return word[:-3]
    return word


def _lens_words(name: str) -> tuple[str, ...]:
    """The words that say what a lens name names: case, punctuation, "&"/"and", plurals,
    hyphens and underscores, abbreviations and filler qualifiers made alike."""
    text = name.lower().replace("&", " and ").replace("i/o", " io ")
    words = [
        _stem(part)
        for raw in re.findall(r"[a-z0-9]+", text)
        for part in _ALIASES.get(raw, raw).split()
        if part not in _STOPWORDS
    ]
    content = tuple(w for w in words if w not in _FILLER)
    return content or tuple(words)


def _word_similarity(a: str, b: str) -> float:
    if a == b:
        return 1.0
    short, long = sorted((a, b), key=len)
    if len(short) >= 5 and long.startswith(short):  # "index" / "indexing"
        return 1.0
    ratio = SequenceMatcher(None, a, b).ratio()  # "behavior" / "behaviour"
    return ratio if ratio >= 0.8 else 0.0


def _covered(words: Sequence[str], other: Sequence[str]) -> float:
    return sum(max(_word_similarity(w, o) for o in other) for w in words)


def lens_similarity(a: str, b: str) -> float:
    """0-1: how surely two lens names name the same lens. The mean of how much of the
    shorter name the other covers and the overlap of both (Dice), over their words."""
    wa, wb = _lens_words(a), _lens_words(b)
    if not wa or not wb:
        return 0.0
    if wa == wb:
        return 1.0
    ca, cb = _covered(wa, wb), _covered(wb, wa)
    containment = max(ca / len(wa), cb / len(wb))
    dice = (ca + cb) / (len(wa) + len(wb))
    return min(1.0, (containment + dice) / 2)


def match_lens_names(names: Sequence[str], lenses: Sequence[str]) -> list[str | None]:
    """For each entry name, the lens of `lenses` it scores, or None.

    One entry matches at most one lens and one lens at most one entry, the closest pairs
    first: the same words (`_lens_words`), then similarity of at least
    `LENS_MATCH_THRESHOLD`. What is left is paired in the order of both lists, only when as
    many entries as lenses are left; an entry that names an already matched lens (a second
    score for it) is not paired."""
    brief = list(dict.fromkeys(lenses))
    lens_words = [_lens_words(lens) for lens in brief]
    pairs: list[tuple[float, bool, int, int]] = []
    for i, name in enumerate(names):
        words = _lens_words(name)
        for j, lens in enumerate(brief):
            same = bool(words) and words == lens_words[j]
            similarity = 1.0 if same else lens_similarity(name, lens)
            if similarity >= LENS_MATCH_THRESHOLD:
                pairs.append((similarity, same, i, j))
    matched: list[str | None] = [None] * len(names)
    taken: set[int] = set()
    for _, _, i, j in sorted(pairs, key=lambda p: (-p[0], not p[1], p[2], p[3])):
        if matched[i] is None and j not in taken:
            matched[i] = brief[j]
            taken.add(j)
    named = {i for _, _, i, _ in pairs}  # entries that name some lens of the brief
    left = [i for i in range(len(names)) if matched[i] is None and i not in named]
    rest = [lens for j, lens in enumerate(brief) if j not in taken]
    if left and len(left) == len(rest):
        for i, lens in zip(left, rest, strict=True):
            matched[i] = lens
    return matched


def _canonical(
    scores: Sequence[LensScore], lenses: Sequence[str]
) -> tuple[list[LensScore], list[str]]:
    """The entries renamed to the brief's lenses, in the brief's order (entries that match
    no lens after them, as written), and the lenses no entry scores."""
    matched = match_lens_names([s.lens for s in scores], lenses)
    by_lens = {lens: s for s, lens in zip(scores, matched, strict=True) if lens is not None}
    brief = list(dict.fromkeys(lenses))
    named = [by_lens[lens].model_copy(update={"lens": lens}) for lens in brief if lens in by_lens]
    extra = [s for s, lens in zip(scores, matched, strict=True) if lens is None]
    return [*named, *extra], [lens for lens in brief if lens not in by_lens]


# --- the judgement --------------------------------------------------------------------------


@dataclass(frozen=True)
class Gated:
    """The gate's judgement of one schema-valid assessment."""

    # The answer with its lens entries renamed to the brief's lenses (what is kept).
    assessment: Assessment
    # Why to re-ask it; None: complete.
    reason: str | None
    # The brief's lenses no entry scores.
    missing: list[str] = field(default_factory=list)
    # A real answer - verdict, score and substance, not a deferral - worth keeping after
    # the re-asks even with lenses missing.
    answered: bool = False


def _substance(items: Iterable[str]) -> list[str]:
    return [i for i in items if i.strip() and not is_deferral(i)]


def _has_content(a: Assessment) -> bool:
    return bool(
        a.summary.strip()
        or a.findings
        or any(s.analysis.strip() for s in a.lens_scores)
        or any(c.strip() for c in (*a.concerns, *a.red_flags))
    )


def gate_assessment(assessment: Assessment, lenses: Sequence[str]) -> Gated:
    """Judge `assessment` against the seat's `lenses`: complete, to re-ask, and whether it
    is a real answer (kept after the re-asks, its missing lenses not scored)."""
    if not getattr(assessment, "verdict", None) or not getattr(assessment, "score", None):
        return Gated(assessment, "Set `verdict` (APPROVE, CONCERNS or REJECT) and `score` (1-10).")
    if not _has_content(assessment):
        return Gated(
            assessment,
            "The answer has no summary, concern, finding or lens analysis. Review the pull "
            "request in the context and answer with your assessment.",
        )
    prose = assessment.summary or " ".join(s.analysis for s in assessment.lens_scores)
    raised = assessment.findings or _substance([*assessment.concerns, *assessment.red_flags])
    if is_deferral(prose) and not raised:
        return Gated(
            assessment,
            "The answer asks for more material or promises a later review instead of "
            "reviewing. Everything available is in the context: review it now, and state "
            "any gap as a concern.",
        )
    scores, missing = _canonical(assessment.lens_scores, lenses)
    kept = assessment.model_copy(update={"lens_scores": scores})
    if not missing:
        return Gated(kept, None, answered=True)
    names = ", ".join(f'"{m}"' for m in missing)
    reason = (
        f"`lens_scores` has no entry for {names}. Score every lens of your brief, using its "
        "name exactly; give `score` null for a lens that does not apply to this change."
    )
    return Gated(kept, reason, missing, answered=True)


def check_complete(assessment: Assessment, lenses: Sequence[str]) -> str | None:
    """None when the answer is complete, else the reason to send back with the re-ask."""
    return gate_assessment(assessment, lenses).reason
