"""The repository's configuration, `.github/council.yml`: its keys (`RepoConfig`, the one
table of them: type, default, bounds, in the file's order) and the `EffectiveConfig` a
worker runs with, the file merged with the operator's settings.

The package: `bot.config.load` validates a file best effort (every problem a `ConfigIssue`
with its key and line, only the invalid part dropped) and merges it; `bot.config.yamlfile`
reads the YAML defensively; `bot.config.operator` holds what the operator allows;
`bot.config.show` prints the effective config in the file's layout. How the file's keys
land in the effective config, and back, is read off these models (`effective_names`).

The repository may narrow what the operator set, never widen it: models only from
`COUNCIL_ALLOWED_MODELS` (or, when that is empty, the operator's configured models), never
an endpoint URL; `max_cost_usd`, `max_pr_cost_usd` and `context.max_tokens` only lower the
operator's values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from bot.config.operator import checks
from bot.council.board import BoardConfig, PinnedSeat
from bot.council.protocols import DEFAULT_DEBATE_MODE, DebateMode, names
from bot.council.protocols.roles import DEFAULT, ON_PUSH

__all__ = [
    "AGENTS_DIR",
    "CONFIG_PATH",
    "MAX_CONFIG_CHARS",
    "OPERATOR_CAPS",
    "PATTERN_REASONS",
    "ROOT_KEY",
    "ConfigIssue",
    "ConfigResult",
    "EffectiveConfig",
    "GateMode",
    "KeyPath",
    "RepoConfig",
    "effective_names",
    "plain",
    "section",
]

CONFIG_PATH = ".github/council.yml"
AGENTS_DIR = ".github/council/agents"  # the repo's own personas, beside the config
ROOT_KEY = ""  # the key of an issue about the file as a whole
MAX_CONFIG_CHARS = 64 * 1024

GateMode = Literal["verdict", "advisory"]
CommentMode = Literal["full", "compact"]  # as `bot.render.markdown` reads them
Severity = Literal["critical", "major", "minor", "nit"]
KeyPath = tuple[str | int, ...]
# The repository's caps the operator's setting of the same name bounds (COUNCIL_MAX_COST_USD,
# COUNCIL_MAX_PR_COST_USD); unset in the file, the operator's value applies.
OPERATOR_CAPS = ("max_cost_usd", "max_pr_cost_usd")


# --- field types -------------------------------------------------------------------------


def _one_or_many(value: object) -> object:
    """`trigger_labels: architecture` means a list of one."""
    return [value] if isinstance(value, str) else value


def _check_model_ref(value: str, info: ValidationInfo) -> str:
    return checks(info).model_ref(value)


def _registered(value: object) -> str:
    """A protocol of the table as it is when the file is read (a registered one too)."""
    known = names()
    if isinstance(value, str) and value in known:
        return value
    quoted = [repr(name) for name in known]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    raise ValueError(f"Input should be {listed}")


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
ProtocolRef = Annotated[str, PlainValidator(_registered)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # The effective config's name for each key of the section, where it holds them one by
    # one; None: it holds the section whole, under the section's name.
    EFFECTIVE: ClassVar[Mapping[str, str] | None] = None


class BoardSection(BoardConfig):
    """The board's settings as the engine takes them (`BoardConfig`), checked together; the
    effective config holds them whole."""

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
    EFFECTIVE = {"mode": "debate_mode"}


class SeatSection(_Section):
    persona: PersonaId
    model: RepoModelRef | None = None


class PathsSection(_Section):
    ignore: Annotated[list[Glob], BeforeValidator(_one_or_many)] = Field(
        default_factory=list, max_length=100
    )
    EFFECTIVE = {"ignore": "ignore_paths"}


class ContextConfig(_Section):
    max_tokens: int | None = Field(default=None, ge=1_000)
    EFFECTIVE = {"max_tokens": "context_max_tokens"}

    @field_validator("max_tokens")
    @classmethod
    def _only_lower(cls, value: int | None, info: ValidationInfo) -> int | None:
        cap = checks(info).settings.context_tokens
        if value is not None and value > cap:
            raise ValueError(f"may only lower the operator's budget of {cap} tokens, not raise it")
        return value


class RepoConfig(_Section):
    """`.github/council.yml` as written, in the file's order: every key of the file is
    declared here once. Validate with `context=` (see `bot.config.load`)."""

    protocol: ProtocolRef = DEFAULT
    push_protocol: ProtocolRef = ON_PUSH
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

    @field_validator(*OPERATOR_CAPS)
    @classmethod
    def _only_lower(cls, value: float | None, info: ValidationInfo) -> float | None:
        cap: float | None = getattr(checks(info).settings, str(info.field_name))
        if value is not None and cap is not None and value > cap:
            raise ValueError(f"may only lower the operator's cap of ${cap:g}, not raise it")
        return value


PATTERN_REASONS = {
    "persona": "must be a persona id (lowercase letters, digits and '-')",
    "language": "must be the name of a language, e.g. English or pt-BR",
    "ignore": "must be a glob on one line",
}


def section(path: tuple[str, ...]) -> type[BaseModel] | None:
    """The model of the section at `path` (`()`: the file; `("seats",)`: a seat), read off
    `RepoConfig`; None where there is no section."""
    model: type[BaseModel] = RepoConfig
    for key in path:
        field = model.model_fields.get(key)
        found = _model_of(field.annotation) if field is not None else None
        if found is None:
            return None
        model = found
    return model


def _model_of(annotation: object) -> type[BaseModel] | None:
    """The section model an annotation holds: `BoardSection`, `list[SeatSection]`."""
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def effective_names(key: str) -> Mapping[str, str] | None:
    """The effective config's name for each key of the file's section `key`, where it holds
    them one by one (`debate.mode` is `debate_mode`); None: it holds `key` as it is."""
    effective = getattr(_model_of(RepoConfig.model_fields[key].annotation), "EFFECTIVE", None)
    return effective if isinstance(effective, Mapping) else None


def plain(value: object) -> object:
    """A section (or a list of them) as data: what the effective config's models take and
    the file's layout shows."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


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

    protocol: ProtocolRef = DEFAULT
    push_protocol: ProtocolRef = ON_PUSH
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
