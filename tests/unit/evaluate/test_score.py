"""The scoring's pieces: line overlap, the one-to-one matching, the figures, the readers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.evaluate.dataset import DatasetError, Golden, load
from bot.evaluate.run import Predicted
from bot.evaluate.score import Counts, Judged, greedy_match, overlaps, score


def found(path: str = "a.py", start: int | None = 10, end: int | None = 12) -> Predicted:
    return Predicted(path, start, end, "title", "detail")


def test_overlap_needs_the_same_file_and_overlapping_lines() -> None:
    golden = Golden("x", "a.py", 11, 20)
    assert overlaps(golden, found())
    assert overlaps(golden, found("./a.py", 20, 20))
    assert not overlaps(golden, found(start=1, end=10))
    assert not overlaps(golden, found("b.py"))
    assert overlaps(golden, found(start=None, end=None))  # file-wide covers the file
    assert not overlaps(Golden("x"), found())  # Martian's: no location


def test_matching_is_one_to_one_by_confidence() -> None:
    judged = [
        Judged(0, 0, True, 0.6),
        Judged(0, 1, True, 0.9),
        Judged(1, 1, True, 0.8),
        Judged(1, 0, True, 0.5),
        Judged(2, 2, False, 0.99),
    ]
    chosen = greedy_match(judged)
    assert [(j.golden, j.found) for j in chosen] == [(0, 1), (1, 0)]


def test_figures_and_their_sum_over_prs() -> None:
    goldens = [Golden("g0", "a.py", 10, 10), Golden("g1", "a.py", 50, 50), Golden("g2")]
    predictions = [found(), found(start=30, end=31)]
    counts = score(goldens, predictions, [Judged(0, 0, True, 0.9), Judged(1, 1, True, 0.7)])
    assert counts.figures() == {
        "precision": 1.0,
        "recall": 0.6667,
        "f1": 0.8,
        "location_accuracy": 0.5,
    }
    total = counts + Counts(goldens=1, predictions=2)
    assert total.figures()["precision"] == 0.5 and total.figures()["recall"] == 0.5
    assert Counts().figures() == {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "location_accuracy": None,
    }


def test_the_readers(tmp_path: Path) -> None:
    aacr = tmp_path / "a.json"
    aacr.write_text(
        json.dumps(
            {
                "prs": [
                    {
                        "githubPrUrl": "https://github.com/o/n/pull/3",
                        "source_commit": "b",
                        "target_commit": "h",
                        "comments": [
                            {"path": "x", "from_line": 9, "to_line": 7, "note": "swap"},
                            {"path": "x", "from_line": 1, "to_line": 1, "side": "left"},
                        ],
                    }
                ]
            }
        )
    )
    (sample,) = load(aacr)
    assert (sample.repo, sample.number, sample.base, sample.head) == ("o/n", 3, "b", "h")
    assert sample.comments == [Golden("swap", "x", 7, 9)]
    martian = tmp_path / "m.json"
    martian.write_text(
        json.dumps([{"url": "https://github.com/o/n/pull/4", "comments": [{"comment": "c"}]}])
    )
    (sample,) = load(martian)
    assert (sample.base, sample.head) == ("HEAD", "refs/pull/4/head")
    assert sample.comments == [Golden("c")]
    martian.write_text(json.dumps([{"comments": []}]))
    with pytest.raises(DatasetError):
        load(martian, "martian")
