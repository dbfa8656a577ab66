"""The few webhook fields the receiver routes on, as our own small models.

Only these fields are read; everything else in GitHub's payload is ignored (githubkit's
full webhook models reject some of GitHub's own example payloads, and parsing every field
of a 20 KB payload would cost the receiver most of its time).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Fields(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Sender(_Fields):
    login: str
    type: str  # "User", "Bot", "Organization"


class Repository(_Fields):
    full_name: str


class Installation(_Fields):
    id: int


class Account(_Fields):
    login: str | None = None
    slug: str | None = None  # enterprise accounts have a slug instead of a login


class InstallationWithAccount(_Fields):
    id: int
    account: Account | None = None


class Present(_Fields):
    """A field whose presence is what matters (e.g. `issue.pull_request`)."""


class Issue(_Fields):
    number: int
    pull_request: Present | None = None


class Comment(_Fields):
    id: int
    body: str


class IssueCommentEvent(_Fields):
    action: str
    issue: Issue
    comment: Comment
    repository: Repository
    sender: Sender
    installation: Installation | None = None


class Head(_Fields):
    sha: str


class PullRequest(_Fields):
    number: int
    head: Head
    draft: bool = False
    merged: bool | None = None


class Label(_Fields):
    name: str


class PullRequestEvent(_Fields):
    action: str
    pull_request: PullRequest
    label: Label | None = None  # present on labeled / unlabeled
    repository: Repository
    sender: Sender
    installation: Installation | None = None


class PullRequestNumber(_Fields):
    number: int


class CheckRun(_Fields):
    id: int
    name: str
    head_sha: str
    pull_requests: list[PullRequestNumber] = []  # empty for PRs from forks


class RequestedAction(_Fields):
    identifier: str


class CheckRunEvent(_Fields):
    action: str
    check_run: CheckRun
    requested_action: RequestedAction | None = None  # present on requested_action
    repository: Repository
    sender: Sender
    installation: Installation | None = None


class RepositoryName(_Fields):
    full_name: str


class InstallationEvent(_Fields):
    action: str
    installation: InstallationWithAccount
    repositories: list[RepositoryName] | None = None
    sender: Sender


class InstallationRepositoriesEvent(_Fields):
    action: str
    installation: InstallationWithAccount
    repositories_added: list[RepositoryName] = []
    repositories_removed: list[RepositoryName] = []
    sender: Sender
