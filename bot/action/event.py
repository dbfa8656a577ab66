"""The workflow's environment and its event, decided the way the App decides a webhook.

`decide` routes the event payload with the App's own router (`bot.web.routing.route`: the
`pull_request` actions, the `/council` grammar of `bot.commands`, bots and issues left
out), then applies what only the Action has to ask: a fork's `pull_request` run has a
read-only token and no secrets, so it is left alone with a note for the job summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.queue.jobs import JobRequest
from bot.web.routing import Ignored, InvalidPayload, route

__all__ = [
    "ACTIONS_LOGIN",
    "ActionEnv",
    "ActionEnvError",
    "Decision",
    "Note",
    "decide",
]

# Who the workflow's GITHUB_TOKEN writes as: the sticky comment is found by this author.
ACTIONS_LOGIN = "github-actions[bot]"
# The triggers a workflow run can carry out; the rest need the App (its database, buttons).
ACTION_TRIGGERS = frozenset({"command", "label", "push", "help", "cancel"})

FORK_NOTE = (
    "This pull request comes from a fork. Under `pull_request`, GitHub gives a fork's "
    "workflow run a read-only token and no secrets, so the council cannot post or call a "
    "model, and it never runs a fork's code with secrets (which is why it does not use "
    "`pull_request_target`). Someone with write access can comment `/council` on the pull "
    "request: that runs under `issue_comment`, in the base repository, and reads the change "
    "through the API without checking it out."
)
NO_SECRETS_NOTE = (
    "No model provider key reached this run (`anthropic-api-key`, `openai-api-key`, or "
    "`models` with an endpoint), so the council did not convene. Workflows triggered by "
    "Dependabot or from forks get no secrets under `pull_request`; otherwise, add the key "
    "as a repository secret and pass it to the action."
)


class ActionEnvError(ValueError):
    """A variable the Actions runner sets is missing: not running in a workflow job."""


@dataclass(frozen=True, kw_only=True)
class ActionEnv:
    """What the Actions runner tells the job (its documented default variables)."""

    event_name: str
    event_path: Path
    token: str
    repository: str
    server_url: str = "https://github.com"
    run_id: str = ""
    step_summary: Path | None = None
    login: str = ACTIONS_LOGIN

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ActionEnv:
        required = ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_TOKEN", "GITHUB_REPOSITORY")
        missing = [name for name in required if not environ.get(name)]
        if missing:
            raise ActionEnvError(
                f"missing {', '.join(missing)}: `council action` runs in a GitHub Actions job "
                "(pass `github-token: ${{ github.token }}`, the action's default)"
            )
        summary = environ.get("GITHUB_STEP_SUMMARY")
        return cls(
            event_name=environ["GITHUB_EVENT_NAME"],
            event_path=Path(environ["GITHUB_EVENT_PATH"]),
            token=environ["GITHUB_TOKEN"],
            repository=environ["GITHUB_REPOSITORY"],
            server_url=(environ.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/"),
            run_id=environ.get("GITHUB_RUN_ID", ""),
            step_summary=Path(summary) if summary else None,
            login=environ.get("COUNCIL_ACTION_LOGIN") or ACTIONS_LOGIN,
        )

    @property
    def run_url(self) -> str | None:
        """The workflow run's page: the check run's details link."""
        if not self.run_id:
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"

    @property
    def delivery_id(self) -> str:
        """What the App's logs call a delivery: here, the workflow run."""
        return f"actions-run-{self.run_id or 'local'}"


@dataclass(frozen=True)
class Note:
    """Nothing to do in this run, and why (for the job summary); `fork`: a fork's PR."""

    reason: str
    fork: bool = False


Decision = JobRequest | Note


class _Repo(BaseModel):
    model_config = ConfigDict(extra="ignore")
    full_name: str


class _Head(BaseModel):
    model_config = ConfigDict(extra="ignore")
    repo: _Repo | None = None  # null when the fork was deleted


class _Pull(BaseModel):
    model_config = ConfigDict(extra="ignore")
    head: _Head


class _PullEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")
    pull_request: _Pull
    repository: _Repo


def decide(event_name: str, body: bytes, *, delivery_id: str, has_secrets: bool) -> Decision:
    """The job request the App would queue for this event, or a `Note` saying why there is
    nothing to do. Raises `InvalidPayload` for a payload the router cannot read."""
    routed = route(event_name, delivery_id, body)
    if isinstance(routed, Ignored):
        return Note(f"Nothing to do: {routed.reason}.")
    if routed.trigger not in ACTION_TRIGGERS:
        return Note(
            f"Nothing to do: the `{routed.trigger}` trigger is the App's, not the action's."
        )
    if event_name == "pull_request":
        if _from_fork(body):
            return Note(FORK_NOTE, fork=True)
        if not has_secrets:
            return Note(NO_SECRETS_NOTE, fork=True)
    return routed


def _from_fork(body: bytes) -> bool:
    try:
        event = _PullEvent.model_validate_json(body)
    except ValidationError:
        raise InvalidPayload("missing or invalid field(s): pull_request.head") from None
    head = event.pull_request.head.repo
    return head is None or head.full_name.lower() != event.repository.full_name.lower()
