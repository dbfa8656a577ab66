"""Plausible council answers derived from the request, for engine tests and benchmarks.

The fake model server calls `CouncilScript.reply` for every request; it reads which tool the
request forces and which seat is asking (the seat's brief is in the last user message) and
answers in that schema. Tests change the knobs: verdicts per persona, votes, judge decisions,
and how the lens scores name the lenses (`lens_names`, `lens_limit`: what real models do).
The chair's merge of the findings answers `merge_groups` (none by default).
`CouncilScript.answer` is the same answer from the tool name and the messages' text alone,
for fakes that never see an HTTP request (`tests.support.fake_provider`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.support.model_server import FakeRequest, Reply
from tests.support.strategy_answers import StrategyAnswers

_LENSES = re.compile(r"Your lenses \(score each one\):\n((?:- .*\n?)+)")
_SEATED = re.compile(r"seated as: (.+?)\.\n")
_LABEL = re.compile(r"You are (Member [A-Z]+) of the council")


def lenses_of(text: str) -> list[str]:
    match = _LENSES.search(text)
    if not match:
        return []
    return [line[2:].strip() for line in match.group(1).splitlines() if line.startswith("- ")]


def persona_of(text: str) -> str:
    match = _SEATED.search(text)
    return match.group(1) if match else ""


def label_of(text: str) -> str:
    match = _LABEL.search(text)
    return match.group(1) if match else ""


# Words models put in place of a lens name's own.
_LENS_SYNONYMS = (
    ("behaviour", "behavior"),
    ("modelling", "modeling"),
    ("efficiency", "performance"),
    ("races", "race conditions"),
    ("mutable state", "state"),
    ("indexes", "indexing"),
    ("hot-path", "hot path"),
    ("against", "vs."),
    (" plan", " strategy"),
    (" use", " usage"),
)
# What models add in parentheses.
_QUALIFIERS = ("in this change", "new code paths", "incl. tests", "as implemented")


def _capital(name: str) -> str:
    return name[:1].upper() + name[1:]


def paraphrase_lens(name: str, index: int) -> str:
    """How a model rewrites the `index`-th lens name of its brief, deterministically:
    synonyms, then by turns Title Case with "&"; a qualifier in parentheses; the halves of
    "X and Y" swapped (else "and side effects" added); "risks" (or "assessment") added."""
    text = name
    for word, synonym in _LENS_SYNONYMS:
        text = text.replace(word, synonym)
    shape = index % 4
    if shape == 0:
        return " ".join(_capital(w) for w in text.split()).replace(" And ", " & ")
    if shape == 1:
        return f"{_capital(text)} ({_QUALIFIERS[index // 4 % len(_QUALIFIERS)]})"
    if shape == 2:
        first, sep, second = text.partition(" and ")
        if sep and "," not in first:
            return _capital(f"{second} & {first}")
        return f"{_capital(text)} and side effects"
    return f"{_capital(text)} {'assessment' if 'risk' in text else 'risks'}"


_SENTENCES = {
    "APPROVED": "The council approves merging as is.",
    "APPROVED_WITH_CONDITIONS": "The council advises merging once the retry is bounded.",
    "ESCALATE": "The council is split; a person must decide.",
    "REJECTED": "The council rejects the change until the retry is bounded.",
}


@dataclass
class CouncilScript(StrategyAnswers):
    """Knobs: default verdict/vote, and overrides by persona name (what the seat is seated as)."""

    verdict: str = "APPROVE"
    vote: str = "APPROVE"
    verdicts: dict[str, str] = field(default_factory=dict)
    votes: dict[str, str] = field(default_factory=dict)
    judge: list[str] = field(default_factory=lambda: ["CONVERGED"])
    findings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    red_flags: dict[str, list[str]] = field(default_factory=dict)
    # An assessment's merge_conditions by persona (none by default: concerns are not).
    merge_conditions: dict[str, list[str]] = field(default_factory=dict)
    latency_s: float = 0.0
    first_token_s: float | None = None
    panelists: int = 3
    judged: int = 0
    # "paraphrase": each lens score names its lens as a model would (`paraphrase_lens`),
    # listed from the second lens on, the first last (models reorder too).
    lens_names: Literal["exact", "paraphrase"] = "exact"
    # Score only the first N lenses of the brief; None: all of them.
    lens_limit: int | None = None
    # The chair's merge groups (ids "F1", "F2", ... as the merge task lists them); none by
    # default: every finding stands alone. "invalid": an answer that fails the schema.
    merge_groups: list[list[str]] | Literal["invalid"] = field(default_factory=list)
    # --- debate knobs ---
    # The panel designer's answers in turn (the last one repeats); empty: `panelists`
    # panelists with distinct lenses and stances. `is_choice`/`options`: what it says of
    # the question.
    panel_answers: list[dict[str, Any]] = field(default_factory=list)
    is_choice: bool = False
    options: list[str] = field(default_factory=list)
    designed: int = 0
    # The judge's other fields (confidence, framing_issues, hidden_assumptions,
    # blind_spots, meta_insight), merged into every judgement.
    judge_fields: dict[str, Any] = field(default_factory=dict)
    # A panelist's position after each discussion round, by persona (index round - 1; the
    # last repeats); a change adds a SHIFT whose `changed_by` is `shift_evidence[persona]`
    # (default: one that cites a file and line). Unset: no position is given.
    positions: dict[str, list[str]] = field(default_factory=dict)
    shift_evidence: dict[str, str] = field(default_factory=dict)
    # The tradeoff dimensions a panelist raises in each discussion reply, by persona.
    dimensions: dict[str, list[str]] = field(default_factory=dict)
    # The chair's decision guide for a debate: (condition, path) pairs.
    decision_guide: list[tuple[str, str]] = field(
        default_factory=lambda: [("If latency is the top priority", "Redis")]
    )
    # --- `council eval`'s judge (tool submit_match) ---
    # (fragment of the reference comment, fragment of the candidate, confidence): a pair
    # whose texts contain both fragments is a match at that confidence; any other is not.
    judge_matches: list[tuple[str, str, float]] = field(default_factory=list)

    def reply(self, request: FakeRequest) -> Reply:
        data = self.answer(request.output_name, request.messages_text)
        if data is None:
            return Reply(text="OK", latency_s=self.latency_s, first_token_s=self.first_token_s)
        return Reply(json=data, latency_s=self.latency_s, first_token_s=self.first_token_s)

    def answer(self, tool: str | None, text: str) -> dict[str, Any] | None:
        """The answer to a call that forces `tool`, read from the text of its messages (the
        seat's brief among them); None for a plain call or a tool the council has not."""
        build = {
            "submit_assessment": self._assessment,
            "submit_discussion": self._discussion,
            "submit_vote": self._vote,
            "submit_judgement": self._judgement,
            "submit_panel": self._panel,
            "submit_ranking": self._ranking,
            "submit_synthesis": self._synthesis,
            "submit_merge": self._merge,
            "submit_outside_opinion": self._outside,
            "submit_task_type": self._task_type,
            "submit_critique": self._critique,
            "submit_reconciliation": self._reconciliation,
            "submit_match": self._judge_match,
        }.get(tool or "")
        return build(text) if build else None

    def _assessment(self, text: str) -> dict[str, Any]:
        persona = persona_of(text)
        verdict = self.verdicts.get(persona, self.verdict)
        return {
            "verdict": verdict,
            "score": 8 if verdict == "APPROVE" else 5 if verdict == "CONCERNS" else 3,
            "summary": f"{persona} reviewed the change and finds it {verdict.lower()}.",
            "lens_scores": self._lens_scores(lenses_of(text)),
            "red_flags": self.red_flags.get(persona, []),
            "concerns": [f"{persona}: error handling in the new path"]
            if verdict != "APPROVE"
            else [],
            "recommendations": ["Add a regression test for the new branch."],
            "merge_conditions": self.merge_conditions.get(persona, []),
            "questions": [{"to_member": None, "question": "Is the retry bounded?"}],
            "confidence": 80,
            "findings": self.findings.get(persona, []),
        }

    def _judge_match(self, text: str) -> dict[str, Any]:
        reference = re.search(r"<reference-comment[^>]*>(.*?)</reference-comment>", text, re.S)
        candidate = re.search(r"<candidate-comment[^>]*>(.*?)</candidate-comment>", text, re.S)
        ours, theirs = (
            (reference.group(1) if reference else ""),
            (candidate.group(1) if candidate else ""),
        )
        for golden, found, confidence in self.judge_matches:
            if golden in ours and found in theirs:
                return {"match": True, "confidence": confidence}
        return {"match": False, "confidence": 0.1}

    def _lens_scores(self, lenses: list[str]) -> list[dict[str, Any]]:
        """One entry per lens scored; the analysis names the lens as the brief does, so a
        test can tell which lens an entry was matched to."""
        scored = lenses if self.lens_limit is None else lenses[: self.lens_limit]
        paraphrase = self.lens_names == "paraphrase"
        entries: list[dict[str, Any]] = [
            {
                "lens": paraphrase_lens(lens, i) if paraphrase else lens,
                "score": 7,
                "analysis": f"Checked {lens} in the diff.",
            }
            for i, lens in enumerate(scored)
        ]
        return entries[1:] + entries[:1] if paraphrase else entries

    def _discussion(self, text: str) -> dict[str, Any]:
        me = label_of(text)
        other = "Member A" if me != "Member A" else "Member B"
        debate = self._debate_position(text)
        shifts: list[dict[str, Any]] = debate.pop("messages", [])
        return {
            "messages": [
                *shifts,
                {
                    "type": "CHALLENGE",
                    "to_member": other,
                    "point": "The retry is unbounded.",
                    "reasoning": "The loop has no cap.",
                    "original_position": None,
                    "new_position": None,
                    "changed_by": None,
                },
                {
                    "type": "AGREE",
                    "to_member": None,
                    "point": "Tests are needed.",
                    "reasoning": "Every member asked for them.",
                    "original_position": None,
                    "new_position": None,
                    "changed_by": None,
                },
            ]
        } | debate

    def _debate_position(self, text: str) -> dict[str, Any]:
        """The debate fields of a discussion reply: the position after this round (a SHIFT
        message when it changed) and the dimensions raised; none unless a knob sets them."""
        persona = persona_of(text)
        found: dict[str, Any] = {}
        if persona in self.dimensions:
            found["dimensions"] = self.dimensions[persona]
        said = self.positions.get(persona)
        if not said:
            return found
        told = re.search(r"Discussion round (\d+)", text)
        n = int(told.group(1)) if told else 1
        now = said[min(n - 1, len(said) - 1)]
        assessed = self.verdicts.get(persona, self.verdict)
        before = said[min(n - 2, len(said) - 1)] if n > 1 else assessed
        found |= {"position": now, "confidence": 70 + n}
        if now != before:
            evidence = self.shift_evidence.get(
                persona, "The cap in app/cache.py:L12 bounds it after all."
            )
            shift = {
                "type": "SHIFT",
                "to_member": None,
                "point": f"I now hold {now}.",
                "reasoning": evidence,
                "original_position": before,
                "new_position": now,
                "changed_by": evidence,
            }
            found["messages"] = [shift]
        return found

    def _vote(self, text: str) -> dict[str, Any]:
        persona = persona_of(text)
        # A panelist votes where it last stood in the debate, as a model does, unless told.
        said = self.positions.get(persona) or [self.vote]
        stood = said[-1] if said[-1] in ("APPROVE", "REJECT") else self.vote
        vote = self.votes.get(persona, stood)
        return {
            "vote": vote,
            "confidence": 0.8,
            "rationale": f"{persona} votes {vote}.",
            # An approval as is by default (a test adds conditions where it wants them).
            "conditions": [] if vote == "APPROVE" else ["Bound the retry loop."],
            "suggestions": ["Add the regression test."] if vote == "APPROVE" else [],
        }

    def _judgement(self, text: str) -> dict[str, Any]:
        decision = self.judge[min(self.judged, len(self.judge) - 1)]
        self.judged += 1
        return {
            "decision": decision,
            "reasoning": "Positions are clear.",
            "redebate_members": ["Member A"] if decision == "PARTIAL" else [],
            "focus": None if decision == "CONVERGED" else "Is the retry bounded?",
            "option_c": None,
        } | self.judge_fields

    def _outside(self, text: str) -> dict[str, Any]:
        return {
            "position": "REJECT",
            "key_argument": "An outside view: the cache adds an operational dependency.",
            "risks": ["Redis becomes a single point of failure."],
            "conditions": ["A load test showing the latency gain."],
            "agrees_with_panel": False,
        }

    def _panel(self, text: str) -> dict[str, Any]:
        self.designed += 1
        if self.panel_answers:
            return self.panel_answers[min(self.designed - 1, len(self.panel_answers) - 1)]
        stances = ["adversarial", "constructive", "neutral", "adversarial"]
        return {
            "is_choice": self.is_choice,
            "options": self.options,
            "panelists": [
                {
                    "name": f"Panelist {i + 1}",
                    "lens": f"lens {i + 1}",
                    "stance": stances[i],
                    "brief": f"Argue from lens {i + 1}.",
                }
                for i in range(self.panelists)
            ],
        }

    def _ranking(self, text: str) -> dict[str, Any]:
        labels = sorted(set(re.findall(r"Member [A-Z]+", text)))
        me = label_of(text)
        return {"ranking": [label for label in labels if label != me], "reasoning": "By accuracy."}

    def _merge(self, text: str) -> dict[str, Any]:
        if self.merge_groups == "invalid":
            return {"groups": "F1 and F2"}  # not a list of groups: the answer fails validation
        return {
            "groups": [
                {"findings": group, "reason": "The same defect in the same code."}
                for group in self.merge_groups
            ]
        }

    def _synthesis(self, text: str) -> dict[str, Any]:
        # The chair is told the resolution (prompts.synth_task) and writes for it.
        told = re.search(r"The council's resolution is ([A-Z_]+)", text)
        return {
            "verdict_sentence": _SENTENCES.get(
                told.group(1) if told else "", "The council advises merging once fixed."
            ),
            "consensus": ["Tests are needed for the new branch."],
            "divergence": [
                {
                    "point": "Whether the retry must be bounded now",
                    "sides": ["Member A: yes", "Member B: later"],
                }
            ],
            "recommendation": "Bound the retry and add a regression test.",
            "tradeoff_map": _tradeoff_map(text),
            "action_items": ["Bound the retry loop.", "Add a regression test."],
            # A debate's chair is asked for a decision guide (prompts.synth_task).
            "decision_guide": [
                {"condition": condition, "path": path} for condition, path in self.decision_guide
            ]
            if "Add a decision guide" in text
            else [],
        }


def _tradeoff_map(text: str) -> list[dict[str, Any]]:
    """A tradeoff map over the options the chair is told the choice is between (none when
    it is told of no choice), as a chair would write it: latency and operability."""
    told = re.search(r"The question is a choice between options \((.+?)\): add", text)
    if not told:
        return []
    options = [o.strip() for o in told.group(1).split(",")]
    return [
        {
            "dimension": dimension,
            "options": [
                {"option": o, "pro": f"{o}: good {dimension}", "con": f"{o}: costly {dimension}"}
                for o in options
            ],
        }
        for dimension in ("latency", "operability")
    ]
