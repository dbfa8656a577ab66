"""The chair's verdict sentence must say what the resolution says. No model here.

The chair is told the resolution and its conditions (prompts.synth_task), but a model can
still write "approve as is" above a REJECTED result. After the call, `settled_synthesis`
reads the sentence for cues and replaces a contradicting one by `verdict_sentence`, a
deterministic sentence for the resolution.

Reading. The sentence is lower-cased, contractions are opened ("can't", "cannot" -> "can
not"; "shouldn't" -> "should not"; "won't" -> "will not"), "as-is" reads "as is", and it is
cut into clauses at . ; : ! ? , ( ) dashes and "but". The negators are not, no, never,
without, nor, neither, nothing, nobody, none.

Negation binds to the word it governs:
- Bound words: an action ("approve"/"approval", "accept", "merge" - not "merge request/
  conflict/condition..." -, "mergeable", "land", "ship", "go in/ahead"), a "block" word,
  "reject", "escalate", "ready" and "ready/safe/good/fine/ok to merge" (or land, ship, go).
  One is negated by a negator among the 4 words before it in its clause unless another bound
  word stands between (the negator binds to that one): "not merge", "cannot be merged",
  "does not approve", "nothing blocks", "no reason to reject", "not ready to merge".
- A condition word ("condition(s/al/ally/ed)", "subject to") and "until", "unless",
  "before", "once", "yet" are negated only when a negator governs them directly, with only
  filler words between and no bound word ("without conditions", "with no further
  conditions", "no merge conditions", "not conditional", "not subject to", "not until",
  "not before", "not yet"). So a negated action does not reach a later "until", "unless",
  "before" or "once": "should not merge until X" negates "merge", not "until".
- What follows a negated action, "not ready" or a "reject" not negated in its clause is
  inside its negation: "as is" there reads "not as is", and "without", "before", "yet" and a
  negated condition word there are conditions ("cannot approve as is", "reject as is", "do
  not merge without a test", "must not land before X", "do not merge yet", "cannot merge
  without conditions").

Cues:
- reject: "reject" not negated. A soft reject (a refusal a condition may qualify): a negated
  action or readiness; a "block" word not negated (not "non-blocking", not a "try/except/
  finally/catch/code/else/if/with block"); "hold off/back", "on hold", "request changes",
  "changes requested", "needs (more) changes/work", not negated; a negated "until",
  "unless", "before", "once" or "yet" ("not before X", "not yet");
- conditional: "condition(s/al/ally/ed)" and "subject to" not negated, "once", "provided",
  "until", "unless", "only if/after/when/once", "before" an action ("before merging",
  "before it can merge"), "after" a plain action ("merge after X", "approve it after X", "be
  merged after X"; not "the fix landed after X"), "not as is"/"not unconditionally", what
  reads as a condition inside a negated action's negation (above), and "first" in a
  sentence with a soft reject ("do not merge; fix X first");
- as is: "as is" and "unconditional(ly)" not negated and not inside a negated action's
  negation, and a negated condition word outside one ("without conditions", "no
  conditions", "not subject to"); "lgtm" and "ready/safe/good/fine/ok to merge" (land, ship,
  go) count only in a sentence with no conditional cue ("ready to merge once X" is
  conditional);
- escalate: "escalate" not negated, "split" (not "be split", not "split into/up/of/the/
  it..."), "tie(d)" (not "tied to/up/the/it..."), "deadlock", "a person/human/maintainer/
  reviewer must (should, needs to, has to, to) decide".

A soft reject in a sentence with a conditional cue is a conditional reject ("it should not
merge until X", "block until X", "only after X, not before"): it agrees with
APPROVED_WITH_CONDITIONS and with REJECTED. "reject" itself names the REJECTED resolution
and no condition softens it ("rejected until X" is a rejection).

A sentence contradicts its resolution when:
- APPROVED: it has a reject or soft reject, a conditional or an escalate cue;
- APPROVED_WITH_CONDITIONS: it has "reject", an as-is or an escalate cue, or no conditional
  cue (so a soft reject with no condition contradicts it);
- ESCALATE: it has an as-is cue, or no escalate cue;
- REJECTED: it has neither a reject nor a soft reject, or it has an as-is cue ("reject;
  approve once X" is fine).
Other resolutions have no verdict and keep the chair's sentence. An empty sentence is
replaced too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.council.advisory import Resolution
from bot.council.schemas import Synthesis

__all__ = ["contradicts", "settled_synthesis", "verdict_sentence"]

_NEGATORS = frozenset(
    {"not", "no", "never", "without", "nor", "neither", "nothing", "nobody", "none"}
)
_WINDOW = 4  # a negator reaches an action at most this many words after it
# Words a negator looks through to the condition word it governs ("no further conditions").
_FILLER = frozenset(
    {
        "a", "an", "the", "any", "be", "been", "being", "is", "are", "was", "were", "yet",
        "ever", "further", "other", "more", "outstanding", "remaining", "extra", "additional",
        "open", "real", "special", "strict", "hard", "formal", "explicit", "merge",
        "made", "need", "needed", "for", "with", "come", "comes", "really", "strictly", "new",
    }
)  # fmt: skip
_OPENINGS = (
    (re.compile(r"[’‘`]"), "'"),
    (re.compile(r"\b(can't|cannot)\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bshan't\b"), "shall not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
    (re.compile(r"\bas-is\b"), "as is"),
)
_CLAUSE = re.compile(r"[.;:!?,—–()]|\s-+\s|\bbut\b")
_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")

_ACTION = re.compile(
    r"approv\w*|accept(s|ed|ing)?|merg(e|es|ed|ing)|mergeable|land(s|ed)?|ship(s|ped|ping)?"
)
_MERGE_NOUNS = frozenset(
    {"request", "requests", "conflict", "conflicts", "condition", "conditions", "queue",
     "commit", "commits", "base", "window", "train", "method", "strategy"}
)  # fmt: skip
_BLOCK = re.compile(r"block(s|ed|ing|er|ers)?")
_CODE_BLOCK = frozenset({"try", "except", "finally", "catch", "code", "else", "if", "with"})
_READINESS = frozenset({"ready", "safe", "good", "fine", "ok", "okay"})
_CONDITION = frozenset({"condition", "conditions", "conditional", "conditionally", "conditioned"})
# Words between "before"/"after" and its action: "before it can merge", "merge this change after".
_LINKS = frozenset(
    {"it", "this", "that", "the", "change", "pr", "can", "may", "will", "could", "should", "is",
     "be"}
)  # fmt: skip
_BASE_ACTIONS = frozenset({"merge", "approve", "land", "ship", "accept"})
_REFUSAL = re.compile(
    r"\bhold (off|back)\b|\bon hold\b|\brequest(s|ed|ing)? changes\b|\bchanges requested\b|"
    r"\bneeds? (more )?(changes|work)\b"
)
_ESCALATE = re.compile(
    r"\bescalat\w*|\bdeadlock\w*|"
    r"(?<!\bbe )(?<!\bbeen )\bsplit\b"
    r"(?! (into|up|out|off|of|in|the|this|that|it|them|its|these|those)\b)|"
    r"\btie[ds]?\b(?! (to|into|up|in|the|this|that|it|them|back|together|with)\b)|"
    r"\b(person|human|maintainer|people|reviewer)s? "
    r"(must|should|needs? to|has to|have to|to) decide"
)


@dataclass(frozen=True)
class _Cues:
    reject: bool  # "reject" itself: no condition softens it
    soft_reject: bool  # a refusal a condition may qualify ("should not merge until X")
    conditional: bool
    as_is: bool
    escalate: bool


def _action(w: Sequence[str], i: int) -> bool:
    nxt = w[i + 1] if i + 1 < len(w) else ""
    if w[i] == "go":
        return nxt in {"in", "ahead"}
    if not _ACTION.fullmatch(w[i]):
        return False
    return not (w[i].startswith("merg") and nxt in _MERGE_NOUNS)


def _block(w: Sequence[str], i: int) -> bool:
    return bool(_BLOCK.fullmatch(w[i])) and (i == 0 or w[i - 1] not in _CODE_BLOCK)


def _ready_to(w: Sequence[str], i: int) -> bool:
    """ "ready/safe/good... to (or for) merge/land/ship/go"."""
    return (
        w[i] in _READINESS
        and i + 2 < len(w)
        and w[i + 1] in {"to", "for"}
        and (_action(w, i + 2) or w[i + 2] == "go")
    )


def _ready(w: Sequence[str], i: int) -> bool:
    return w[i] == "ready" or _ready_to(w, i)


class _Clause:
    """One clause's words and what its negators govern (module doc)."""

    def __init__(self, words: list[str]) -> None:
        self.w = words
        self.binds = {
            i
            for i in range(len(words))
            if _action(words, i)
            or _block(words, i)
            or _ready(words, i)
            or words[i].startswith(("reject", "escalat"))
        }
        # After a negated action or a "reject": inside its negation ("reject as is").
        self.scope = next((i for i in range(len(words)) if self.refuses(i)), len(words))

    def negated(self, i: int) -> bool:
        """A negator among the `_WINDOW` words before, with no other bound word between."""
        for j in range(i - 1, max(-1, i - 1 - _WINDOW), -1):
            if j in self.binds:
                return False
            if self.w[j] in _NEGATORS:
                return True
        return False

    def governed(self, i: int) -> bool:
        """A negator directly before, with only filler words between."""
        for j in range(i - 1, -1, -1):
            if self.w[j] in _NEGATORS:
                return True
            if j in self.binds or self.w[j] not in _FILLER:
                return False  # "not merge until X": the negator binds to "merge"
        return False

    def refused(self, i: int) -> bool:
        """A negated action or readiness: "not merge", "cannot be merged", "not ready"."""
        return (_action(self.w, i) or _ready(self.w, i)) and self.negated(i)

    def refuses(self, i: int) -> bool:
        """A negated action or readiness, or "reject" not negated."""
        return self.refused(i) or (self.w[i].startswith("reject") and not self.negated(i))

    def after_action(self, i: int) -> bool:
        """ "merge after X", "approve it after X", "be merged after X" (not "it landed after")."""
        j = i - 1
        while j >= 0 and i - j <= 3 and self.w[j] in _LINKS:
            j -= 1
        if j < 0 or not _action(self.w, j):
            return False
        return self.w[j] in _BASE_ACTIONS or (j > 0 and self.w[j - 1] == "be")

    def before_action(self, i: int) -> bool:
        """ "before merging", "before it lands", "before it can merge"."""
        for k in range(i + 1, min(len(self.w), i + 4)):
            if _action(self.w, k):
                return True
            if self.w[k] not in _LINKS:
                return False
        return False


def _conditional(c: _Clause, i: int) -> bool:
    """A conditional cue that no negator governs (module doc)."""
    w, inside = c.w, i > c.scope
    nxt = w[i + 1] if i + 1 < len(w) else ""
    return (
        w[i] in {"once", "until", "unless", "provided"}
        or (w[i] == "only" and nxt in {"if", "after", "when", "once"})
        or (w[i] == "before" and (inside or c.before_action(i)))
        or (w[i] == "after" and c.after_action(i))
        or (w[i] in {"without", "yet"} and inside)  # "do not merge without a test", "... yet"
    )


@dataclass
class _Reading:
    reject: bool = False
    soft_reject: bool = False
    conditional: bool = False
    strong_as_is: bool = False
    weak_as_is: bool = False
    escalate: bool = False
    first: bool = False

    def read(self, c: _Clause) -> None:
        for i in range(len(c.w)):
            self._refusal(c, i)
            self._condition(c, i)
        joined = " ".join(c.w)
        for m in _REFUSAL.finditer(joined):  # "hold off", "request changes", "needs work"
            self.soft_reject = self.soft_reject or not c.negated(joined[: m.start()].count(" "))
        for m in _ESCALATE.finditer(joined):
            at = joined[: m.start()].count(" ")
            if not (m.group().startswith("escalat") and c.negated(at)):
                self.escalate = True

    def _refusal(self, c: _Clause, i: int) -> None:
        if c.refused(i):
            self.soft_reject = True
        elif c.w[i].startswith("reject"):
            self.reject = self.reject or not c.negated(i)
        elif _block(c.w, i):
            self.soft_reject = self.soft_reject or not c.negated(i)
        elif _ready_to(c.w, i) and i <= c.scope:
            self.weak_as_is = True  # "ready to merge"

    def _condition(self, c: _Clause, i: int) -> None:
        word, inside = c.w[i], i > c.scope
        nxt = c.w[i + 1] if i + 1 < len(c.w) else ""
        if word in {"until", "unless", "before", "once", "yet"} and c.governed(i):
            self.soft_reject = self.conditional = True  # "not until X", "not before X"
        elif _conditional(c, i):
            self.conditional = True
        elif word in _CONDITION or (word == "subject" and nxt == "to"):
            if c.governed(i) and not inside:
                self.strong_as_is = True  # "without conditions", "not subject to"
            else:
                self.conditional = True
        elif (word == "as" and nxt == "is") or word.startswith("unconditional"):
            if c.negated(i) or inside:
                self.conditional = True  # "not as is", "cannot approve as is"
            else:
                self.strong_as_is = True
        elif word == "lgtm":
            self.weak_as_is = True
        elif word == "first":
            self.first = True

    def cues(self) -> _Cues:
        conditional = self.conditional or (self.first and self.soft_reject)
        as_is = self.strong_as_is or (self.weak_as_is and not conditional)
        return _Cues(self.reject, self.soft_reject, conditional, as_is, self.escalate)


def _cues(sentence: str) -> _Cues:
    text = " ".join(sentence.lower().split())
    for pattern, opened in _OPENINGS:
        text = pattern.sub(opened, text)
    reading = _Reading()
    for clause in _CLAUSE.split(text):
        words = _WORD.findall(clause)
        if words:
            reading.read(_Clause(words))
    return reading.cues()


def contradicts(resolution: Resolution, sentence: str) -> bool:
    """Whether the chair's sentence says something else than `resolution` (module doc)."""
    if not resolution.is_verdict:
        return False
    if not sentence.strip():
        return True
    c = _cues(sentence)
    if resolution is Resolution.APPROVED:
        return c.reject or c.soft_reject or c.conditional or c.escalate
    if resolution is Resolution.APPROVED_WITH_CONDITIONS:
        return c.reject or c.as_is or c.escalate or not c.conditional
    if resolution is Resolution.ESCALATE:
        return c.as_is or not c.escalate
    # REJECTED
    return not (c.reject or c.soft_reject) or c.as_is


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
