"""The token estimator: one ratio per kind of text, calibrated from reported usage."""

from __future__ import annotations

from pathlib import Path

from bot.tokens import TokenEstimator, kinds_of, line_kind
from tests.support.model_server import count_tokens

ROOT = Path(__file__).resolve().parents[2]
# Code: the shared phases of a deliberation (about 600 lines of ordinary Python).
CODE = "".join(p.read_text() for p in sorted((ROOT / "bot" / "council" / "phases").glob("*.py")))
PROSE = (ROOT / "agents" / "software-architect.md").read_text()


def test_lines_are_split_into_prose_and_code() -> None:
    assert line_kind("The payments module must round half even, always.") == "prose"
    assert line_kind("    return compute(request.body) if ok else None") == "code"
    assert line_kind("  86 + The words of an added line in the diff") == "code"  # a gutter
    assert line_kind("x = 1") == "code"
    sentence = "A sentence of plain English words here."
    kinds = kinds_of(f"{sentence}\nfoo(bar)\n")
    assert kinds == {"code": len("foo(bar)\n"), "prose": len(sentence) + 1, "data": 0, "gutter": 0}
    numbered = kinds_of("  86 + value = compute(x)")
    assert numbered["gutter"] == len("  86 + ") and numbered["code"] == len("value = compute(x)")
    assert sum(kinds_of(CODE).values()) == len(CODE)


def test_the_fake_counts_code_and_prose_differently_like_real_tokenizers() -> None:
    code_ratio = len(CODE) / count_tokens(CODE)
    prose_ratio = len(PROSE) / count_tokens(PROSE)
    assert 3.5 <= code_ratio <= 4.4
    assert prose_ratio > code_ratio + 0.2


def test_starting_ratios_err_on_the_side_of_bigger() -> None:
    """Uncalibrated, the code ratio is set for dense code (Go, JS: about 3.4 characters a
    token by the fake), so Python, which tokenizes looser, is overestimated by up to 25%."""
    estimator = TokenEstimator()
    for text in (CODE, PROSE):
        assert estimator.estimate(text) >= count_tokens(text)
        assert estimator.estimate(text) <= 1.25 * count_tokens(text)


def test_mixed_calls_calibrate_each_kind() -> None:
    """Every call mixes prose and code in another proportion; the estimator learns both
    ratios from the totals alone, as it does from a provider's usage."""
    estimator = TokenEstimator(3.0)  # far off on purpose, and one ratio for both
    code_lines, prose_lines = CODE.split("\n"), PROSE.split("\n")
    for n in range(60):
        share = (n * 7) % 10 / 10
        text = "\n".join(code_lines[: int(400 * share)] + prose_lines[: int(60 * (1 - share))])
        estimator.observe(kinds_of(text), count_tokens(text))
    # Measured on the code and the prose the calls were made of (the whole of the phases
    # changes with them; the calls saw their first 400 lines).
    for text in ("\n".join(code_lines[:400]), "\n".join(prose_lines[:60])):
        error = abs(estimator.estimate(text) - count_tokens(text)) / count_tokens(text)
        assert error < 0.06, (text[:40], error)
    assert estimator.ratio("prose") > estimator.ratio("code")
    assert estimator.margin <= 0.05  # a calibrated estimator keeps little headroom


def test_the_margin_follows_the_error_within_bounds() -> None:
    estimator = TokenEstimator()
    assert 0.03 <= estimator.margin <= 0.1
    estimator.observe({"code": 10_000}, 6_000)  # the provider counts far more than guessed
    assert estimator.margin == 0.1  # ...so a budget keeps the most headroom, not more
    for _ in range(20):
        estimator.observe({"code": 10_000}, 6_000)
    assert estimator.margin <= 0.05  # ...until the estimates are right again
    assert abs(estimator.estimate_chars(10_000) - 6_000) < 120
