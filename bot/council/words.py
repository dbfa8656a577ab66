"""Words that say nothing about what a text is about: the one list of stop words.

Pure data, for the council's title matching (`findings`) and persona scoring (`scoring`),
and for the topic keywords the review pipeline extracts.
"""

from __future__ import annotations

__all__ = ["REVIEW_QUESTION_WORDS", "STOP_WORDS"]

# English function words, and verbs every sentence about code uses.
STOP_WORDS = frozenset(
    {
        "a",
        "about",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "here",
        "how",
        "in",
        "into",
        "is",
        "it",
        "its",
        "may",
        "might",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "than",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "those",
        "to",
        "too",
        "use",
        "used",
        "uses",
        "using",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "why",
        "will",
        "with",
        "would",
        "your",
    }
)
# Words every review question has: they say nothing about which specialists to seat.
REVIEW_QUESTION_WORDS = STOP_WORDS | frozenset(
    {
        "change",
        "changes",
        "code",
        "correct",
        "designed",
        "merge",
        "merged",
        "pull",
        "request",
        "review",
        "reviewer",
        "safe",
        "well",
    }
)
