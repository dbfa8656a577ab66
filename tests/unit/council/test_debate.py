"""The debate's rules and report as pure code (bot.council.protocols.debate.record), its
repo config key (`debate.mode`) and the README's table of its modes (issue 12, parts 2, 3 and 5)."""

from __future__ import annotations

import re
from pathlib import Path

from bot.config.load import load_repo_config
from bot.config.show import render_effective
from bot.council.protocols import DEBATE_MODES, debate_mode, phases_text, planned_calls
from bot.council.protocols.debate.panel import normalize_lens, outside_model, panel_problems
from bot.council.protocols.debate.record import DebateRecord, build_report, cites_evidence
from bot.council.protocols.debate.report import DebateReport
from bot.council.schemas import (
    Assessment,
    DiscussionMessage,
    DiscussionReply,
    PanelDesign,
    PanelistDesign,
    Vote,
)
from bot.council.seats import Seat
from bot.settings import Settings

ROOT = Path(__file__).resolve().parents[3]
A, B = "anthropic:claude-sonnet-5-5", "openai:gpt-5.4"


def panel(
    *lenses_and_stances: tuple[str, str], choice: bool = False, options: tuple[str, ...] = ()
) -> PanelDesign:
    return PanelDesign(
        panelists=[
            PanelistDesign(name=f"P{i}", lens=lens, stance=stance, brief="b")
            for i, (lens, stance) in enumerate(lenses_and_stances)
        ],
        is_choice=choice,
        options=list(options),
    )


# --- the panel rules -----------------------------------------------------------------------


def test_lenses_are_compared_after_normalisation() -> None:
    assert normalize_lens("Security Analysis") == normalize_lens("security") == "security"
    assert normalize_lens("Cost & Operations") == normalize_lens("cost and operation")
    assert normalize_lens("latency") != normalize_lens("cost")


def test_a_panel_that_keeps_the_rules_has_no_problems() -> None:
    assert panel(("security", "adversarial"), ("developer experience", "constructive")).panelists
    good = panel(("security", "adversarial"), ("developer experience", "constructive"))
    assert panel_problems(good) == []


def test_each_broken_rule_is_named() -> None:
    bad = panel(("Security", "adversarial"), ("security analysis", "adversarial"))
    assert panel_problems(bad) == [
        "panelists 1 and 2 have the same lens ('security analysis'); every lens must be distinct",
        "no constructive panelist (one that finds value)",
    ]
    only_constructive = panel(("cost", "constructive"), ("latency", "neutral"))
    assert panel_problems(only_constructive) == [
        "no adversarial panelist (one that finds problems)"
    ]
    choice = panel(("cost", "constructive"), ("risk", "adversarial"), choice=True, options=("X",))
    assert panel_problems(choice) == [
        "the question is said to be a choice, but fewer than 2 options are named"
    ]


# --- the outside model ---------------------------------------------------------------------


def test_the_outside_opinion_prefers_a_model_off_the_panel() -> None:
    C = "openai:gpt-5.4-mini"
    assert outside_model([A, B, C], [A, B, A], None) == C
    assert outside_model([A, B], [A, A, A], None) == B
    # Every model sits: the least-seated one that is not the officers'.
    assert outside_model([A, B], [A, B, A], None) == B
    assert outside_model([A, B], [A, B, A], B) == A
    # A chair model no panelist sits on.
    assert outside_model([A], [A, A, A], B) == B
    # A single model: none.
    assert outside_model([A], [A, A, A], None) is None
    assert outside_model([A, A], [A, A, A], A) is None


def test_evidence_is_a_file_a_line_or_a_numbered_finding() -> None:
    for cited in ("see app/cache.py", "cache.py is wrong", "at L12", "lines 4-9", "finding #3"):
        assert cites_evidence(cited), cited
    for bare in ("I feel differently now.", "On reflection, e.g. the cost.", "Fine."):
        assert not cites_evidence(bare), bare


# --- the report ----------------------------------------------------------------------------


def seat(n: int, label: str) -> Seat:
    return Seat(
        seat_id=f"seat-{n}",
        label=label,
        persona_id=f"panelist-{n}",
        persona_name=f"Panelist {n}",
        division="adversarial" if n == 1 else "constructive",
        persona_text="p",
        lenses=(f"lens {n}",),
        model=A,
    )


def assessment(verdict: str, confidence: int) -> Assessment:
    return Assessment(
        verdict=verdict,
        score=6,
        summary="s",
        lens_scores=[],
        confidence=confidence,
    )


def message(kind: str, point: str, to: str | None = None, why: str = "r") -> DiscussionMessage:
    return DiscussionMessage(type=kind, to_member=to, point=point, reasoning=why)


def test_the_report_tracks_positions_shifts_contention_and_the_signals() -> None:
    s1, s2, s3 = seat(1, "Member A"), seat(2, "Member B"), seat(3, "Member C")
    replies = {
        1: {
            "seat-1": DiscussionReply(
                messages=[message("CHALLENGE", "The cache is unbounded.", "Member B")],
                position="REJECT",
                confidence=90,
            ),
            "seat-2": DiscussionReply(
                messages=[message("CHALLENGE", "Redis adds a dependency.", "Member C")],
                position="APPROVE",
                confidence=60,
            ),
            "seat-3": DiscussionReply(messages=[], position="APPROVE", confidence=70),
        },
        2: {
            # Member B gives in, citing nothing: flagged.
            "seat-2": DiscussionReply(
                messages=[message("SHIFT", "I now reject.", why="You convinced me.")],
                position="REJECT",
            ),
        },
    }
    report = build_report(
        DebateRecord(
            rule=debate_mode("standard"),
            seats=[s1, s2, s3],
            assessments={
                "seat-1": assessment("APPROVE", 80),
                "seat-2": assessment("APPROVE", 80),
                "seat-3": assessment("APPROVE", 75),
            },
            replies=replies,
            judged=[],
            cycles=2,
            exit="max_cycles",
        )
    )
    history = {
        h.seat_id: [(p.position, p.shifted, p.unsupported) for p in h.positions]
        for h in report.positions
    }
    assert history["seat-1"] == [
        ("APPROVE", False, False),
        ("REJECT", True, True),  # its reply cites no file, line or finding either
        ("REJECT", False, False),
    ]
    assert history["seat-2"] == [
        ("APPROVE", False, False),
        ("APPROVE", False, False),
        ("REJECT", True, True),
    ]
    assert history["seat-3"] == [("APPROVE", False, False)] * 3
    outcomes = {p.point: (p.challenger, p.challenged, p.outcome) for p in report.contention}
    assert outcomes == {
        # Member B shifted after Member A's challenge.
        "The cache is unbounded.": ("seat-1", "seat-2", "shifted"),
        # Member B shifted too (the challenger): shifted, not resolved.
        "Redis adds a dependency.": ("seat-2", "seat-3", "shifted"),
    }
    c = report.confidence
    assert (c.lean, c.consensus, c.panelists) == ("REJECT", 2, 3)
    assert (c.spread_min, c.spread_max) == (60, 90)
    assert (c.cycles, c.max_cycles, c.shifts, c.unsupported_shifts) == (2, 2, 2, 2)
    assert [m.stance for m in report.committee] == ["adversarial", "constructive", "constructive"]


def test_a_challenge_between_members_who_end_agreeing_is_resolved_else_unresolved() -> None:
    s1, s2 = seat(1, "Member A"), seat(2, "Member B")
    replies = {
        1: {
            "seat-1": DiscussionReply(
                messages=[message("CHALLENGE", "Bound the cache.", "Member B")], position="APPROVE"
            ),
            "seat-2": DiscussionReply(
                messages=[message("CHALLENGE", "Tests are thin.", "Member A")],
                position="CONCERNS",
            ),
        }
    }
    record = DebateRecord(
        rule=debate_mode("quick"),
        seats=[s1, s2],
        assessments={"seat-1": assessment("APPROVE", 70), "seat-2": assessment("CONCERNS", 70)},
        replies=replies,
        judged=[],
        cycles=1,
        exit="single_cycle",
    )
    outcomes = {p.point: p.outcome for p in build_report(record).contention}
    assert outcomes == {"Bound the cache.": "unresolved", "Tests are thin.": "unresolved"}
    agreeing = DebateRecord(
        **{
            **record.__dict__,
            "assessments": {
                "seat-1": assessment("APPROVE", 70),
                "seat-2": assessment("APPROVE", 70),
            },
        }
    )
    replies[1]["seat-2"] = DiscussionReply(
        messages=[message("CHALLENGE", "Tests are thin.", "Member A")], position="APPROVE"
    )
    assert {p.outcome for p in build_report(agreeing).contention} == {"resolved"}


# --- the repo config ------------------------------------------------------------------------


def settings() -> Settings:
    return Settings.model_validate(
        {"models": ["openai:gpt-5.4"], "anthropic_api_key": None, "openai_api_key": None}
    )


def test_debate_mode_is_a_repo_key_validated_and_shown_in_help() -> None:
    assert load_repo_config(None, settings()).config.debate_mode == "standard"
    result = load_repo_config("debate:\n  mode: full\n", settings())
    assert result.issues == [] and result.config.debate_mode == "full"
    assert "debate:\n  mode: full" in render_effective(result.config)
    bad = load_repo_config("protocol: debate\ndebate:\n  mode: deep\n", settings())
    (issue,) = bad.issues
    assert (issue.key, issue.line) == ("debate.mode", 3)
    assert "'quick', 'standard' or 'full'" in issue.reason
    assert bad.config.debate_mode == "standard" and bad.config.protocol == "debate"
    typo = load_repo_config("debate:\n  mdoe: full\n", settings())
    assert [i.key for i in typo.issues] == ["debate.mdoe"] and "mode" in typo.issues[0].reason


# --- the README ------------------------------------------------------------------------------


def readme_modes() -> dict[str, list[str]]:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| mode | phases |"))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_readme_lists_each_modes_phases_and_maximum_calls() -> None:
    rows = readme_modes()
    assert sorted(rows) == sorted(DEBATE_MODES)
    for mode, (phases, calls) in rows.items():
        assert phases == f"`{phases_text('debate', mode)}`", mode
        counts = [int(n) for n in re.findall(r"\b(\d+) with", calls)]
        most = 2 if mode == "full" else 1
        expected = [
            len(planned_calls("debate", seats=n, rounds=1, mode=mode, models=most)) for n in (3, 4)
        ]
        assert counts[:2] == expected, mode


def test_a_shift_citing_only_what_the_panelist_had_cited_brings_no_new_evidence() -> None:
    s1 = seat(1, "Member A")
    before = assessment("APPROVE", 70).model_copy(
        update={"summary": "The cache in app/cache.py at L12 looks fine."}
    )

    def shifted(why: str) -> DebateReport:
        reply = DiscussionReply(
            messages=[message("SHIFT", "I now reject.", why=why)], position="REJECT"
        )
        return build_report(
            DebateRecord(
                rule=debate_mode("quick"),
                seats=[s1],
                assessments={"seat-1": before},
                replies={1: {"seat-1": reply}},
                judged=[],
                cycles=1,
                exit="single_cycle",
            )
        )

    assert shifted("As I said, app/cache.py at L12.").positions[0].positions[1].unsupported
    assert not shifted("Member B showed app/cache.py at L40.").positions[0].positions[1].unsupported
    assert not shifted("app/store.py breaks it.").positions[0].positions[1].unsupported


def test_the_vote_ends_each_history_and_the_consensus_counts_the_votes() -> None:
    """Where the verdict counts votes, the history ends with each vote and the decision
    confidence's consensus is the votes' (not the last stated position): a vote that turns
    from where the panelist stood without new evidence is a flagged shift."""
    s1, s2 = seat(1, "Member A"), seat(2, "Member B")
    replies = {
        1: {
            "seat-1": DiscussionReply(messages=[], position="REJECT", confidence=90),
            "seat-2": DiscussionReply(messages=[], position="APPROVE", confidence=70),
        }
    }
    votes = {
        "seat-1": Vote(vote="APPROVE", confidence=0.6, rationale="Fine on reflection."),
        "seat-2": Vote(
            vote="APPROVE", confidence=0.8, rationale="The cap in app/cache.py:L12 bounds it."
        ),
    }
    report = build_report(
        DebateRecord(
            rule=debate_mode("standard"),
            seats=[s1, s2],
            assessments={"seat-1": assessment("REJECT", 80), "seat-2": assessment("APPROVE", 80)},
            replies=replies,
            judged=[],
            cycles=1,
            exit="max_cycles",
            votes=votes,
        )
    )
    history = {
        h.seat_id: [(p.position, p.vote, p.shifted, p.unsupported) for p in h.positions]
        for h in report.positions
    }
    assert history["seat-1"][-1] == ("APPROVE", True, True, True)  # turned, citing nothing
    assert history["seat-2"][-1] == ("APPROVE", True, False, False)
    c = report.confidence
    assert (c.lean, c.consensus, c.panelists) == ("APPROVE", 2, 2)
    assert (c.spread_min, c.spread_max) == (60, 80)
