"""Loading `.github/council.yml`, best effort: every problem an issue with its key and
line, only the invalid part dropped (a key, a list item, a pinned seat) so its default
applies, and the rest merged with the operator's settings into the `EffectiveConfig`.

Pure: no I/O. The caller fetches the file (from the default branch, never the PR head).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from bot.config import (
    OPERATOR_CAPS,
    PATTERN_REASONS,
    ROOT_KEY,
    ConfigIssue,
    ConfigResult,
    EffectiveConfig,
    KeyPath,
    RepoConfig,
    effective_names,
    plain,
    section,
)
from bot.config.operator import Checks, allowed_repo_models, show
from bot.config.yamlfile import Unreadable, issue_at, parse
from bot.settings import Settings

__all__ = ["load_repo_config"]


def load_repo_config(
    text: str | None, settings: Settings, *, personas: Collection[str] | None = None
) -> ConfigResult:
    """Validate `.github/council.yml` (None: the repo has none) and merge it with the
    operator's settings. Never raises on bad input: problems come back as issues.

    `personas`: the persona ids available to this repo (the catalog and its
    `.github/council/agents/`); given, a seat pinning any other id is an issue and dropped
    (the engine refuses to convene with an unknown pinned persona)."""
    checks = Checks(settings, tuple(allowed_repo_models(settings)))
    defaults = RepoConfig.model_validate({}, context=checks)
    if text is None or not text.strip():
        return ConfigResult(config=merge(defaults, settings))
    try:
        parsed = parse(text)
    except Unreadable as err:
        issue = ConfigIssue(
            key=ROOT_KEY, reason=f"{err.reason}; all defaults are used", line=err.line
        )
        return ConfigResult(config=merge(defaults, settings), issues=[issue])
    if parsed.data is None:
        return ConfigResult(config=merge(defaults, settings), issues=parsed.issues)
    if not isinstance(parsed.data, dict):
        kind = type(parsed.data).__name__
        reason = f"the file must be a mapping of keys, not a {kind}; all defaults are used"
        issue = ConfigIssue(key=ROOT_KEY, reason=reason, line=1)
        return ConfigResult(config=merge(defaults, settings), issues=[issue])
    repo, issues = _validate(parsed.data, checks, parsed.lines, personas)
    found = sorted([*parsed.issues, *issues], key=lambda i: i.line or 0)
    return ConfigResult(config=merge(repo, settings), issues=found)


def merge(repo: RepoConfig, settings: Settings) -> EffectiveConfig:
    """The file's keys where the effective config holds them (`effective_names`), the
    operator's values where the repository left a cap unset."""
    values: dict[str, object] = {}
    for key in RepoConfig.model_fields:
        value = getattr(repo, key)
        names = effective_names(key)
        if names is None:
            values[key] = plain(value)
        else:
            values.update({name: getattr(value, inner) for inner, name in names.items()})
    values["trigger_labels"] = list(dict.fromkeys(repo.trigger_labels))
    for cap in OPERATOR_CAPS:
        if values[cap] is None:
            values[cap] = getattr(settings, cap)
    values["context_max_tokens"] = values["context_max_tokens"] or settings.context_tokens
    return EffectiveConfig.model_validate(values)


def _validate(
    data: dict[Any, Any],
    checks: Checks,
    lines: dict[KeyPath, int],
    personas: Collection[str] | None,
) -> tuple[RepoConfig, list[ConfigIssue]]:
    """One validation reports every error (pydantic does not stop at the first); all the
    failing parts are dropped at once, so the paths in the issues are those of the file,
    and the rest is validated again. Should that still fail, all defaults are used."""
    issues, targets = _seat_issues(data, lines, personas)
    errors = _errors(data, checks)
    issues.extend(_error_issue(error, lines) for error in errors)
    targets |= {_target(data, tuple(error["loc"])) for error in errors}
    if () not in targets:
        _drop(data, targets)
        if not _errors(data, checks):
            return RepoConfig.model_validate(data, context=checks), issues
    issues.append(ConfigIssue(key=ROOT_KEY, reason="too many problems; all defaults are used"))
    return RepoConfig.model_validate({}, context=checks), issues


def _errors(data: dict[Any, Any], checks: Checks) -> list[ErrorDetails]:
    try:
        RepoConfig.model_validate(data, context=checks)
    except ValidationError as err:
        return err.errors(include_url=False, include_input=False)
    return []


def _error_issue(error: ErrorDetails, lines: dict[KeyPath, int]) -> ConfigIssue:
    path = tuple(error["loc"])
    if error["type"] == "invalid_key":
        # A mapping key that YAML read as a number, boolean or null (`1:`, `yes:`, `~:`).
        path = (*path[:-1], str(path[-1]))
        return issue_at(path, "keys must be text", lines)
    return issue_at(path, _reason(error), lines)


def _reason(error: ErrorDetails) -> str:
    path = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        return _unknown_key(path)
    if error["type"] == "missing":
        return "required"
    if error["type"] == "string_type":
        # `language: no` is the boolean false to YAML.
        return "must be text (quote it)"
    if error["type"] == "string_pattern_mismatch":
        field = next((p for p in reversed(path) if isinstance(p, str)), "")
        return PATTERN_REASONS.get(field, "has a form that is not allowed")
    message = error["msg"]
    return message.removeprefix("Value error, ")


def _unknown_key(path: KeyPath) -> str:
    found = section(tuple(p for p in path[:-1] if isinstance(p, str)))
    if found is None:
        return "unknown key"
    close = difflib.get_close_matches(str(path[-1]), list(found.model_fields), n=1)
    return f"unknown key; did you mean {close[0]!r}?" if close else "unknown key"


def _existing(data: object, path: KeyPath) -> KeyPath:
    """The longest prefix of `path` present in `data`: what to drop for this error
    (a missing required key drops the item that lacks it)."""
    found: list[str | int] = []
    node = data
    for part in path:
        if not _has(node, part):
            break
        node = node[part]  # type: ignore[index]
        found.append(part)
    return tuple(found)


def _target(data: object, loc: KeyPath) -> KeyPath:
    """What to drop for an error at `loc`: the key or item itself, or, for a required key
    (a seat's persona), the item that needs it."""
    path = _existing(data, loc)
    if path and isinstance(path[-1], str):
        model = section(tuple(p for p in path[:-1] if isinstance(p, str)))
        field = model.model_fields.get(path[-1]) if model else None
        if field is not None and field.is_required():
            return path[:-1]
    return path


def _has(node: object, part: str | int) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _drop(data: dict[Any, Any], paths: Iterable[KeyPath]) -> None:
    """Delete every path; deepest first, list items from the end, so indices stay valid."""
    by_parent: dict[KeyPath, set[str | int]] = {}
    for path in paths:
        by_parent.setdefault(path[:-1], set()).add(path[-1])
    for parent in sorted(by_parent, key=len, reverse=True):
        container: Any = data
        for part in parent:
            container = container[part]
        keys = by_parent[parent]
        ordered = sorted(keys, key=lambda k: k if isinstance(k, int) else 0, reverse=True)
        for key in ordered:
            del container[key]


def _seat_issues(
    data: dict[Any, Any], lines: dict[KeyPath, int], personas: Collection[str] | None
) -> tuple[list[ConfigIssue], set[KeyPath]]:
    """Pinned seats the engine could not seat: a persona pinned twice (the first seat
    stands) or, when the catalog is known, a persona it does not have."""
    seats = data.get("seats")
    if not isinstance(seats, list):
        return [], set()
    issues: list[ConfigIssue] = []
    targets: set[KeyPath] = set()
    seen: set[str] = set()
    for index, seat in enumerate(seats):
        persona = seat.get("persona") if isinstance(seat, dict) else None
        if not isinstance(persona, str):
            continue
        reason = None
        if persona in seen:
            reason = f"{show(persona)} is already pinned; this seat is ignored"
        elif personas is not None and persona not in personas:
            reason = f"no persona {show(persona)} in the catalog or .github/council/agents/"
        if reason:
            issues.append(issue_at(("seats", index, "persona"), reason, lines))
            targets.add(("seats", index))
        seen.add(persona)
    return issues, targets
