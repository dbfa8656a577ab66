"""What a review covered, when it is not simply the pull request's whole diff.

Carried on the `Advisory` (so an advisory kept for later publishing renders the same) and
rendered by `bot.render.scope` in the comment's header area and the check run's summary:

- `LargeDiff`: GitHub refused the diff (more than 300 files or 20,000 lines) and it was
  built from the paginated files API; the files that came without a patch (binary, or too
  large for GitHub to show) were not reviewed, and are named with the reason.
- `Rereview`: a push to a reviewed pull request was reviewed incrementally, against the
  last advisory's head: how many new commits, and what became of the earlier findings
  (fixed, still open) and what is new.
- `full_review_reason`: why a push that could have been an incremental re-review was
  reviewed in full (the reviewed head was rewritten by a force-push).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EarlierFinding", "LargeDiff", "Rereview", "ReviewScope", "SkippedFile"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class SkippedFile(_Frozen):
    path: str
    reason: str  # "binary", "too large for GitHub to show"


class LargeDiff(_Frozen):
    refused: str  # why GitHub refused the diff: "more than 300 files"
    files: int  # files the files API listed
    capped: bool = False  # the files API's 3,000-file limit was reached
    skipped: list[SkippedFile] = Field(default_factory=list)


class EarlierFinding(_Frozen):
    path: str
    line: int | None = None
    title: str
    severity: str
    status: Literal["fixed", "open", "new"]


class Rereview(_Frozen):
    since: str  # the head SHA of the last advisory
    commits: int  # new commits since it
    findings: list[EarlierFinding] = Field(default_factory=list)

    def of(self, status: str) -> list[EarlierFinding]:
        return [f for f in self.findings if f.status == status]


class ReviewScope(_Frozen):
    large_diff: LargeDiff | None = None
    rereview: Rereview | None = None
    full_review_reason: str | None = None
