"""The repository's configuration, `.github/council.yml`: its model, validation and merge
with the operator's settings into the `EffectiveConfig` a worker uses.

Loading is best effort and never fatal. Every problem becomes a `ConfigIssue` naming the
key (a dotted path such as `board.min_size` or `seats[1].model`; `""` for the file as a
whole), the reason, and the YAML line when known. Only the invalid part is dropped - a key,
a list item, or a pinned seat - so its default applies while every valid key is kept. A
file that cannot be read as one YAML mapping (syntax error, a list, too large, too deeply
nested, an alias "bomb") yields the defaults and one issue.

The repository may narrow what the operator set, never widen it: models only from
`COUNCIL_ALLOWED_MODELS` (or, when that is empty, the operator's configured models), never
an endpoint URL; `max_cost_usd`, `max_pr_cost_usd` and `context.max_tokens` only lower the
operator's values.

Pure: no I/O. The caller fetches the file (from the default branch, never the PR head).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import ErrorDetails

from bot.council.board import BoardConfig, PinnedSeat
from bot.council.protocols import (
    BOARD_SIZE,
    DEFAULT_BOARD_SIZE,
    DEFAULT_DEBATE_MODE,
    DEFAULT_DISCUSSION_ROUNDS,
    DISCUSSION_ROUNDS,
    PROTOCOLS,
    DebateMode,
    ProtocolName,
)
from bot.providers import ConfigurationError, ProviderRegistry, parse_model_ref
from bot.safety import strip_invisible
from bot.safety.markdown import sanitize_markdown
from bot.settings import Settings

__all__ = [
    "AGENTS_DIR",
    "CONFIG_PATH",
    "MAX_CONFIG_CHARS",
    "ROOT_KEY",
    "ConfigIssue",
    "ConfigResult",
    "EffectiveConfig",
    "GateMode",
    "RepoConfig",
    "allowed_repo_models",
    "effective_yaml",
    "load_repo_config",
    "render_effective",
]

CONFIG_PATH = ".github/council.yml"
AGENTS_DIR = ".github/council/agents"  # the repo's own personas, beside the config
ROOT_KEY = ""  # the key of an issue about the file as a whole
MAX_CONFIG_CHARS = 64 * 1024
# A config is a few dozen values; these bound what a hostile file can make us walk.
MAX_DEPTH = 16
MAX_NODES = 10_000  # counted after alias expansion, so an anchors bomb stops here
_SHOWN = 80  # characters of a repo-supplied value echoed in a reason

GateMode = Literal["verdict", "advisory"]
CommentMode = Literal["full", "compact"]  # as `bot.render.markdown` reads them
Severity = Literal["critical", "major", "minor", "nit"]
KeyPath = tuple[str | int, ...]


# --- field types -------------------------------------------------------------------------


def _one_or_many(value: object) -> object:
    """`trigger_labels: architecture` means a list of one."""
    return [value] if isinstance(value, str) else value


def _check_model_ref(value: str, info: ValidationInfo) -> str:
    return _checks(info).model_ref(value)


Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=50)]
Glob = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200, pattern=r"^\S.*$")
]
PersonaId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
# The report's language goes into prompts: a name, not a sentence.
Language = Annotated[
    str, StringConstraints(max_length=40, pattern=r"^[A-Za-z][A-Za-z()-]*( [A-Za-z()-]+){0,2}$")
]
RepoModelRef = Annotated[str, AfterValidator(_check_model_ref)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BoardSection(_Section):
    default_size: int = Field(default=DEFAULT_BOARD_SIZE, ge=BOARD_SIZE[0], le=BOARD_SIZE[1])
    min_size: int = Field(default=3, ge=BOARD_SIZE[0], le=BOARD_SIZE[1])
    discussion_rounds: int = Field(
        default=DEFAULT_DISCUSSION_ROUNDS, ge=DISCUSSION_ROUNDS[0], le=DISCUSSION_ROUNDS[1]
    )

    @field_validator("min_size")
    @classmethod
    def _not_above_size(cls, value: int, info: ValidationInfo) -> int:
        # An invalid default_size is absent here; its default then applies.
        size = info.data.get("default_size", BoardConfig().default_size)
        if value > size:
            raise ValueError(f"must not exceed board.default_size ({size})")
        return value


class DebateSection(_Section):
    # quick: one cycle, no judge; standard: a judge, at most 2 cycles; full: at most 3
    # cycles and an outside opinion. `/council debate --quick|--standard|--full` overrides it.
    mode: DebateMode = DEFAULT_DEBATE_MODE


class SeatSection(_Section):
    persona: PersonaId
    model: RepoModelRef | None = None


class PathsSection(_Section):
    ignore: Annotated[list[Glob], BeforeValidator(_one_or_many)] = Field(
        default_factory=list, max_length=100
    )


class ContextConfig(_Section):
    max_tokens: int | None = Field(default=None, ge=1_000)

    @field_validator("max_tokens")
    @classmethod
    def _only_lower(cls, value: int | None, info: ValidationInfo) -> int | None:
        checks = _checks(info)
        cap = checks.settings.context_tokens
        if value is not None and value > cap:
            raise ValueError(f"may only lower the operator's budget of {cap} tokens, not raise it")
        return value


class RepoConfig(_Section):
    """`.github/council.yml` as written. Validate with `context=` (see `load_repo_config`)."""

    protocol: ProtocolName = "board"
    push_protocol: ProtocolName = "quick"
    trigger_labels: Annotated[list[Label], BeforeValidator(_one_or_many)] = Field(
        default_factory=lambda: ["architecture"], max_length=20
    )
    auto_review_on_push: bool = True
    # A push to a reviewed PR reviews only the new commits (bot.review.rereview).
    incremental_reviews: bool = True
    review_drafts: bool = False
    gate: GateMode = "verdict"
    board: BoardSection = Field(default_factory=BoardSection)
    debate: DebateSection = Field(default_factory=DebateSection)
    seats: list[SeatSection] = Field(default_factory=list, max_length=9)
    models: Annotated[list[RepoModelRef], BeforeValidator(_one_or_many)] = Field(
        default_factory=list, max_length=9
    )
    chair_model: RepoModelRef | None = None
    # The chair model also sits as a voting member (assesses, votes); it still synthesizes.
    chair_votes: bool = False
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_pr_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    paths: PathsSection = Field(default_factory=PathsSection)
    context: ContextConfig = Field(default_factory=ContextConfig)
    language: Language | None = None
    # The sticky comment: `full` (the visible part, then collapsed sections) or `compact`
    # (the visible part only); how many findings it lists, and from which severity up.
    comment: CommentMode = "full"
    max_findings: int = Field(default=7, ge=1, le=50)
    min_severity: Severity = "minor"
    # Anchored findings from `inline_min_severity` up as one review (event COMMENT) with a
    # comment on each one's line; `/council --inline` turns it on for one run.
    inline_comments: bool = False
    inline_min_severity: Severity = "major"

    @field_validator("max_cost_usd", "max_pr_cost_usd")
    @classmethod
    def _only_lower(cls, value: float | None, info: ValidationInfo) -> float | None:
        # The operator's setting of the same name: COUNCIL_MAX_COST_USD, COUNCIL_MAX_PR_COST_USD.
        cap: float | None = getattr(_checks(info).settings, str(info.field_name))
        if value is not None and cap is not None and value > cap:
            raise ValueError(f"may only lower the operator's cap of ${cap:g}, not raise it")
        return value


_PATTERN_REASONS = {
    "persona": "must be a persona id (lowercase letters, digits and '-')",
    "language": "must be the name of a language, e.g. English or pt-BR",
    "ignore": "must be a glob on one line",
}

# Known keys per section, for "did you mean" on an unknown key.
_SECTIONS: dict[KeyPath, type[BaseModel]] = {
    (): RepoConfig,
    ("board",): BoardSection,
    ("debate",): DebateSection,
    ("seats",): SeatSection,
    ("paths",): PathsSection,
    ("context",): ContextConfig,
}


# --- what the worker uses ----------------------------------------------------------------


class ConfigIssue(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str  # dotted path, list items as [i]; ROOT_KEY for the whole file
    reason: str
    line: int | None = None  # 1-based line in the YAML file

    def __str__(self) -> str:
        return f"{self.key}: {self.reason}" if self.key else self.reason


class EffectiveConfig(BaseModel):
    """The repo's config merged with the operator's settings: what a deliberation runs with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    protocol: ProtocolName = "board"
    push_protocol: ProtocolName = "quick"
    trigger_labels: list[str] = Field(default_factory=lambda: ["architecture"])
    auto_review_on_push: bool = True
    # A push to a reviewed PR reviews only the new commits (bot.review.rereview).
    incremental_reviews: bool = True
    review_drafts: bool = False
    gate: GateMode = "verdict"
    board: BoardConfig = Field(default_factory=BoardConfig)
    debate_mode: DebateMode = DEFAULT_DEBATE_MODE  # `debate.mode`
    seats: list[PinnedSeat] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)  # empty: the operator's models
    chair_model: str | None = None  # None: the engine's choice
    chair_votes: bool = False  # the chair model also sits as a voting member
    max_cost_usd: float | None = None  # the effective cap; None: no cap
    # The effective cap over all the deliberations of one pull request; None: no cap.
    max_pr_cost_usd: float | None = None
    ignore_paths: list[str] = Field(default_factory=list)
    context_max_tokens: int = 60_000
    language: str | None = None  # None: English
    comment: CommentMode = "full"
    max_findings: int = Field(default=7, ge=1, le=50)
    min_severity: Severity = "minor"
    inline_comments: bool = False  # review comments on the findings' lines
    inline_min_severity: Severity = "major"  # the least severe finding posted inline

    def is_trigger_label(self, name: str) -> bool:
        """GitHub treats label names case-insensitively; so do we."""
        wanted = name.strip().casefold()
        return any(label.casefold() == wanted for label in self.trigger_labels)


class ConfigResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    config: EffectiveConfig
    issues: list[ConfigIssue] = Field(default_factory=list)


# --- checks that need the operator's settings --------------------------------------------


@dataclass(frozen=True)
class _Checks:
    settings: Settings
    allowed: tuple[str, ...]

    def model_ref(self, value: str) -> str:
        text = value.strip()
        if "http" in text.lower() or "://" in text:
            raise ValueError(f"{_show(text)}: a repository may not name an endpoint URL")
        if text not in self.allowed:
            raise ValueError(f"{_show(text)} is not among the allowed models ({self._listed()})")
        try:
            parse_model_ref(text, self.settings, allow_urls=False)
        except ConfigurationError as err:
            raise ValueError(str(err)) from None
        return text

    def _listed(self) -> str:
        if not self.allowed:
            return "none: the operator sets COUNCIL_ALLOWED_MODELS"
        shown = ", ".join(self.allowed[:10])
        return shown + (", ..." if len(self.allowed) > 10 else "")


def _checks(info: ValidationInfo) -> _Checks:
    if not isinstance(info.context, _Checks):
        raise ValueError("the repo config can only be checked against the operator's settings")
    return info.context


def allowed_repo_models(settings: Settings) -> list[str]:
    """The models a repo may choose: COUNCIL_ALLOWED_MODELS, else the operator's own."""
    if settings.allowed_models:
        return [m.strip() for m in settings.allowed_models]
    return ProviderRegistry(settings).configured_models()


def _show(value: object) -> str:
    """A repo-supplied value, short and without invisible characters, to quote in a reason."""
    text = strip_invisible(repr(value))
    return text if len(text) <= _SHOWN else text[: _SHOWN - 4] + "...'"


# --- YAML, read defensively --------------------------------------------------------------


class _Unreadable(Exception):
    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


@dataclass
class _Parsed:
    data: object
    lines: dict[KeyPath, int]
    issues: list[ConfigIssue]


def _scan(text: str) -> None:
    """Bound the nesting before composing (PyYAML's composer recurses per level); the
    event parser itself is a state machine, so this pass is safe on any input."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _Unreadable(f"nested more than {MAX_DEPTH} levels deep", _line(event))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _line(item: yaml.Event | yaml.Node) -> int | None:
    mark = item.start_mark
    return None if mark is None else mark.line + 1


def _walk(root: yaml.Node) -> tuple[dict[KeyPath, int], list[ConfigIssue]]:
    """Map each key and list item to its line, counting nodes as if aliases were copied."""
    lines: dict[KeyPath, int] = {}
    issues: list[ConfigIssue] = []
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, ())]
    visited = 0
    while stack:
        node, path = stack.pop()
        visited += 1
        # Aliases can nest a collection in itself: bound the depth here too, not only in _scan.
        if visited > MAX_NODES or len(path) > MAX_DEPTH:
            raise _Unreadable(f"expands to more than {MAX_NODES} values (YAML aliases?)")
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
                child = (*path, key)
                lines[child] = _line(key_node) or 0
                if key in seen:
                    issues.append(_issue(child, "duplicate key; the last one is used", lines))
                seen.add(key)
                stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                lines[(*path, index)] = _line(item) or 0
                stack.append((item, (*path, index)))
    return lines, issues


def _compose(text: str) -> _Parsed:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return _Parsed(None, {}, [])
        lines, issues = _walk(node)
        return _Parsed(loader.construct_document(node), lines, issues)
    finally:
        loader.dispose()


def _parse(text: str) -> _Parsed:
    if len(text) > MAX_CONFIG_CHARS:
        raise _Unreadable(f"larger than {MAX_CONFIG_CHARS // 1024} KiB")
    try:
        _scan(text)
        return _compose(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "not valid YAML"
        raise _Unreadable(
            f"YAML error: {problem}", None if mark is None else mark.line + 1
        ) from None
    except yaml.YAMLError as err:
        raise _Unreadable(f"YAML error: {type(err).__name__}") from None


# --- validation, best effort -------------------------------------------------------------


def _dotted(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _nearest_line(path: KeyPath, lines: dict[KeyPath, int]) -> int | None:
    for end in range(len(path), 0, -1):
        line = lines.get(path[:end])
        if line:
            return line
    return None


def _issue(path: KeyPath, reason: str, lines: dict[KeyPath, int]) -> ConfigIssue:
    return ConfigIssue(key=_dotted(path), reason=reason, line=_nearest_line(path, lines))


def _error_issue(error: ErrorDetails, lines: dict[KeyPath, int]) -> ConfigIssue:
    path = tuple(error["loc"])
    if error["type"] == "invalid_key":
        # A mapping key that YAML read as a number, boolean or null (`1:`, `yes:`, `~:`).
        path = (*path[:-1], str(path[-1]))
        return _issue(path, "keys must be text", lines)
    return _issue(path, _reason(error), lines)


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
        return _PATTERN_REASONS.get(field, "has a form that is not allowed")
    message = error["msg"]
    return message.removeprefix("Value error, ")


def _unknown_key(path: KeyPath) -> str:
    section = _SECTIONS.get(tuple(p for p in path[:-1] if isinstance(p, str)))
    if section is None:
        return "unknown key"
    close = difflib.get_close_matches(str(path[-1]), list(section.model_fields), n=1)
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
        section = _SECTIONS.get(tuple(p for p in path[:-1] if isinstance(p, str)))
        field = section.model_fields.get(path[-1]) if section else None
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


def _errors(data: dict[Any, Any], checks: _Checks) -> list[ErrorDetails]:
    try:
        RepoConfig.model_validate(data, context=checks)
    except ValidationError as err:
        return err.errors(include_url=False, include_input=False)
    return []


def _validate(
    data: dict[Any, Any],
    checks: _Checks,
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
            reason = f"{_show(persona)} is already pinned; this seat is ignored"
        elif personas is not None and persona not in personas:
            reason = f"no persona {_show(persona)} in the catalog or .github/council/agents/"
        if reason:
            issues.append(_issue(("seats", index, "persona"), reason, lines))
            targets.add(("seats", index))
        seen.add(persona)
    return issues, targets


def _merge(repo: RepoConfig, settings: Settings) -> EffectiveConfig:
    return EffectiveConfig(
        protocol=repo.protocol,
        push_protocol=repo.push_protocol,
        trigger_labels=list(dict.fromkeys(repo.trigger_labels)),
        auto_review_on_push=repo.auto_review_on_push,
        incremental_reviews=repo.incremental_reviews,
        review_drafts=repo.review_drafts,
        gate=repo.gate,
        board=BoardConfig(**repo.board.model_dump()),
        debate_mode=repo.debate.mode,
        seats=[PinnedSeat(persona=seat.persona, model=seat.model) for seat in repo.seats],
        models=list(repo.models),
        chair_model=repo.chair_model,
        chair_votes=repo.chair_votes,
        max_cost_usd=repo.max_cost_usd if repo.max_cost_usd is not None else settings.max_cost_usd,
        max_pr_cost_usd=(
            repo.max_pr_cost_usd if repo.max_pr_cost_usd is not None else settings.max_pr_cost_usd
        ),
        ignore_paths=list(repo.paths.ignore),
        context_max_tokens=repo.context.max_tokens or settings.context_tokens,
        language=repo.language,
        comment=repo.comment,
        max_findings=repo.max_findings,
        min_severity=repo.min_severity,
        inline_comments=repo.inline_comments,
        inline_min_severity=repo.inline_min_severity,
    )


def load_repo_config(
    text: str | None, settings: Settings, *, personas: Collection[str] | None = None
) -> ConfigResult:
    """Validate `.github/council.yml` (None: the repo has none) and merge it with the
    operator's settings. Never raises on bad input: problems come back as issues.

    `personas`: the persona ids available to this repo (the catalog and its
    `.github/council/agents/`); given, a seat pinning any other id is an issue and dropped
    (the engine refuses to convene with an unknown pinned persona)."""
    checks = _Checks(settings, tuple(allowed_repo_models(settings)))
    defaults = RepoConfig.model_validate({}, context=checks)
    if text is None or not text.strip():
        return ConfigResult(config=_merge(defaults, settings))
    try:
        parsed = _parse(text)
    except _Unreadable as err:
        issue = ConfigIssue(
            key=ROOT_KEY, reason=f"{err.reason}; all defaults are used", line=err.line
        )
        return ConfigResult(config=_merge(defaults, settings), issues=[issue])
    if parsed.data is None:
        return ConfigResult(config=_merge(defaults, settings), issues=parsed.issues)
    if not isinstance(parsed.data, dict):
        kind = type(parsed.data).__name__
        reason = f"the file must be a mapping of keys, not a {kind}; all defaults are used"
        issue = ConfigIssue(key=ROOT_KEY, reason=reason, line=1)
        return ConfigResult(config=_merge(defaults, settings), issues=[issue])
    repo, issues = _validate(parsed.data, checks, parsed.lines, personas)
    found = sorted([*parsed.issues, *issues], key=lambda i: i.line or 0)
    return ConfigResult(config=_merge(repo, settings), issues=found)


# --- showing it ----------------------------------------------------------------------------


def effective_yaml(config: EffectiveConfig) -> str:
    """The effective config in the layout of `.github/council.yml`."""
    layout: dict[str, object] = {
        "protocol": config.protocol,
        "push_protocol": config.push_protocol,
        "trigger_labels": config.trigger_labels,
        "auto_review_on_push": config.auto_review_on_push,
        "incremental_reviews": config.incremental_reviews,
        "review_drafts": config.review_drafts,
        "gate": config.gate,
        "board": config.board.model_dump(),
        "debate": {"mode": config.debate_mode},
        "seats": [seat.model_dump() for seat in config.seats],
        "models": config.models,
        "chair_model": config.chair_model,
        "chair_votes": config.chair_votes,
        "max_cost_usd": config.max_cost_usd,
        "max_pr_cost_usd": config.max_pr_cost_usd,
        "paths": {"ignore": config.ignore_paths},
        "context": {"max_tokens": config.context_max_tokens},
        "language": config.language,
        "comment": config.comment,
        "max_findings": config.max_findings,
        "min_severity": config.min_severity,
        "inline_comments": config.inline_comments,
        "inline_min_severity": config.inline_min_severity,
    }
    dumped: str = yaml.safe_dump(layout, sort_keys=False, default_flow_style=False)
    return dumped


def _fenced(info: str, body: str) -> str:
    """A code block no backtick run inside `body` can close."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body.rstrip()}\n{fence}"


def _protocols(config: EffectiveConfig) -> str:
    """Every protocol of the table, marked where this repository's config uses it."""
    lines = [
        "**Protocols** (`protocol` runs on a trigger label and for `/council`, "
        "`push_protocol` on new pushes; a `/council` command may name any of them):"
    ]
    for name, protocol in PROTOCOLS.items():
        keys = [key for key in ("protocol", "push_protocol") if getattr(config, key) == name]
        used = f" ({', '.join(f'`{key}`' for key in keys)})" if keys else ""
        lines.append(f"- `{name}`{used}: {protocol.summary}")
    return "\n".join(lines)


def render_effective(config: EffectiveConfig, issues: Sequence[ConfigIssue] = ()) -> str:
    """Markdown for `/council help`: the effective config as YAML, the protocols it can
    run, then any problems."""
    parts = [
        f"**Effective configuration** (`{CONFIG_PATH}` on the default branch, within the "
        "operator's limits; empty `models` and a null `chair_model` mean the operator's "
        "defaults, a null `max_cost_usd` or `max_pr_cost_usd` no cap):",
        _fenced("yaml", effective_yaml(config)),
        _protocols(config),
    ]
    if issues:
        listed = "\n".join(
            f"line {issue.line}: {issue}" if issue.line else str(issue) for issue in issues
        )
        parts.append(f"**Problems in `{CONFIG_PATH}`** (the defaults are used for these keys):")
        parts.append(_fenced("text", listed))
    return sanitize_markdown("\n\n".join(parts))
