"""What one deliberation job carries from step to step: its dependencies, its request, the
installation's forge and the job's reads through it, its log, and when it started."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import structlog

from bot.forge import Forge
from bot.pr.ports import RepoReads
from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobRequest
from bot.settings import Settings
from bot.store.db import Database


@dataclass
class JobContext:
    deps: WorkerDeps
    request: JobRequest
    job_id: str
    forge: Forge
    reads: RepoReads
    started: float = field(default_factory=time.monotonic)
    log: Any = None  # a bound structlog logger

    def __post_init__(self) -> None:
        if self.log is None:
            self.log = structlog.get_logger("bot.queue").bind(
                delivery_id=self.request.delivery_id,
                repo=self.request.repo,
                pr=self.request.pr_number,
                job_id=self.job_id,
            )

    @property
    def key(self) -> str:
        """The deliberation's key: the job id, or the first job's when this one resumes it."""
        return self.request.deliberation_key or self.job_id

    @property
    def settings(self) -> Settings:
        return self.deps.settings

    @property
    def db(self) -> Database:
        return self.deps.db

    @property
    def automatic(self) -> bool:
        """Label and push triggers: nobody asked, so they are skipped more readily."""
        return self.request.trigger in AUTOMATIC

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started


AUTOMATIC = ("label", "push")
