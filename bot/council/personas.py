"""The persona catalog: Markdown files with YAML front matter, loaded into `Persona` models.

The built-in catalog ships inside the package (`bot._agents`, which is the repo's top-level
`agents/` directory, see pyproject.toml) and is read through importlib.resources, so it is
found the same way in a source checkout, an editable install and a wheel. A repository may
add or override personas by id (`.github/council/agents/*.md`, read through the GitHub API,
hence `load_persona_texts` for in-memory files). A broken file never hides the others: it
becomes a `PersonaIssue` naming the file, the line and the reason.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

import yaml
from frontmatter.default_handlers import SafeLoader, YAMLHandler
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from bot.council.evidence import FILE_KINDS

BUILTIN_PACKAGE = "bot._agents"
PERSONA_SUFFIX = ".md"

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class Persona(BaseModel):
    """One reviewer voice. `review_strengths` are its lenses; `text` is sent whole."""

    model_config = ConfigDict(frozen=True)

    id: Slug
    name: Text
    division: Slug
    description: Text
    task_types: tuple[Text, ...] = Field(min_length=1)
    review_strengths: tuple[Text, ...] = Field(min_length=1)
    languages: tuple[Text, ...] = ()
    frameworks: tuple[Text, ...] = ()
    artifact_types: tuple[Text, ...] = ()
    # Kinds of changed file of which one must be in the change for the persona to be seated
    # by its score (bot/council/evidence.py); () for a persona with something to say on any.
    requires_files: tuple[Slug, ...] = ()
    default_model: Text | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    text: Text
    # Where it was read from: a file path, or the name given to `load_persona_texts`.
    source: str

    @property
    def lenses(self) -> tuple[str, ...]:
        return self.review_strengths


class _FrontMatter(BaseModel):
    """The front matter as written: lists, unknown keys rejected (a typo is an error)."""

    model_config = ConfigDict(extra="forbid")

    id: Slug
    name: Text
    division: Slug
    description: Text
    task_types: list[Text] = Field(min_length=1)
    review_strengths: list[Text] = Field(min_length=1)
    languages: list[Text] = []
    frameworks: list[Text] = []
    artifact_types: list[Text] = []
    requires_files: list[Slug] = []
    default_model: Text | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)

    @field_validator("requires_files")
    @classmethod
    def _known_kinds(cls, kinds: list[str]) -> list[str]:
        unknown = [k for k in kinds if k not in FILE_KINDS]
        if unknown:
            raise ValueError(
                f"unknown file kind {', '.join(repr(k) for k in unknown)}; valid kinds: "
                f"{', '.join(sorted(FILE_KINDS))}"
            )
        return kinds


class PersonaIssue(BaseModel):
    """Why one persona file did not load. `line` is 1-based in the file, when known."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.reason}"


class Catalog(BaseModel):
    """Personas by id (sorted by id) and the issues met while loading them."""

    model_config = ConfigDict(frozen=True)

    personas: dict[str, Persona] = {}
    issues: tuple[PersonaIssue, ...] = ()

    def __len__(self) -> int:
        return len(self.personas)

    def __contains__(self, persona_id: object) -> bool:
        return persona_id in self.personas

    def get(self, persona_id: str) -> Persona | None:
        return self.personas.get(persona_id)

    def ids(self) -> list[str]:
        return list(self.personas)

    def by_division(self) -> dict[str, list[Persona]]:
        groups: dict[str, list[Persona]] = {}
        for persona in self.personas.values():
            groups.setdefault(persona.division, []).append(persona)
        return dict(sorted(groups.items()))

    def overridden_by(self, other: Catalog) -> Catalog:
        """This catalog with `other`'s personas added or replacing ours by id."""
        return _merge([self, other])


class PersonaFileError(Exception):
    """A persona file that cannot load; carries the line for the issue report."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


@dataclass
class _Layer:
    """The personas of one directory (or one in-memory set), duplicates removed."""

    personas: list[Persona] = field(default_factory=list)
    issues: list[PersonaIssue] = field(default_factory=list)


def load_catalog(extra_dirs: Sequence[Path] = (), *, builtin: bool = True) -> Catalog:
    """The packaged catalog (when `builtin`), then each of `extra_dirs`, later ids winning."""
    layers = [_builtin_layer()] if builtin else []
    layers.extend(_dir_layer(Path(d)) for d in extra_dirs)
    return _merge_layers(layers)


def load_persona_texts(files: Mapping[str, str], *, builtin: bool = True) -> Catalog:
    """Like `load_catalog`, with one extra layer given as file name -> file content.

    This is how a repo's `.github/council/agents/*.md`, fetched through the API, is loaded.
    Names not ending in `.md` are ignored, as they would be in a directory.
    """
    layers = [_builtin_layer()] if builtin else []
    named = sorted((name, text) for name, text in files.items() if _is_persona_name(name))
    layers.append(_parse_layer(named))
    return _merge_layers(layers)


def parse_persona(text: str, source: str) -> Persona:
    """Parse one persona file; raise `PersonaFileError` (reason and line) when invalid."""
    front, body, body_line = _split(text)
    data = _load_yaml(front.text, front.first_line)
    meta = _validate(data, front)
    body = body.strip()
    if not body:
        raise PersonaFileError("persona text after the front matter is empty", body_line)
    return Persona(**meta.model_dump(), text=body, source=source)


@dataclass(frozen=True)
class _FrontText:
    text: str
    # The file line on which `text` begins (the line of the opening `---`).
    first_line: int


def _split(text: str) -> tuple[_FrontText, str, int]:
    boundary = YAMLHandler.FM_BOUNDARY
    assert boundary is not None
    text = text.removeprefix("\ufeff")
    opening = boundary.match(text)
    if opening is None:
        raise PersonaFileError("no YAML front matter: the file must start with '---'", 1)
    closing = boundary.search(text, opening.end())
    if closing is None:
        raise PersonaFileError("front matter is not closed by a '---' line", 1)
    front = _FrontText(text[opening.end() : closing.start()], _line_of(text, opening.end()))
    return front, text[closing.end() :], _line_of(text, closing.start()) + 1


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _load_yaml(front: str, first_line: int) -> dict[str, Any]:
    try:
        data = yaml.load(front, Loader=SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = None if mark is None else first_line + mark.line
        raise PersonaFileError(f"invalid YAML: {exc.problem or exc}", line) from exc
    except yaml.YAMLError as exc:
        raise PersonaFileError(f"invalid YAML: {exc}", first_line) from exc
    if not isinstance(data, dict):
        raise PersonaFileError("front matter must be a mapping of fields", first_line)
    return data


def _validate(data: dict[str, Any], front: _FrontText) -> _FrontMatter:
    try:
        return _FrontMatter.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(error["loc"])
        reason = _describe(loc, error["type"], error["msg"])
        if len(exc.errors()) > 1:
            reason += f" (and {len(exc.errors()) - 1} more)"
        raise PersonaFileError(reason, _field_line(front, loc)) from exc


def _describe(loc: tuple[int | str, ...], kind: str, message: str) -> str:
    name = str(loc[0]) if loc else "front matter"
    if kind == "missing":
        return f"missing field '{name}'"
    if kind == "extra_forbidden":
        return f"unknown field '{name}'"
    if kind == "list_type":
        return f"field '{name}' must be a list"
    if kind == "string_pattern_mismatch":
        return f"field '{name}' must be lowercase letters, digits and '-'"
    where = name if len(loc) < 2 else f"{name}[{loc[1]}]"
    if kind == "value_error":  # a validator's own sentence
        message = message.removeprefix("Value error, ")
    return f"field '{where}': {message}"


def _field_line(front: _FrontText, loc: tuple[int | str, ...]) -> int:
    """The file line of the field (or list item) at `loc`; the opening line if absent."""
    node = yaml.compose(front.text, Loader=SafeLoader)
    line = front.first_line
    for key in loc:
        child = _child(node, key)
        if child is None:
            break
        node, line = child[0], front.first_line + child[1]
    return line


def _child(node: yaml.Node | None, key: int | str) -> tuple[yaml.Node, int] | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if key_node.value == key:
                return value_node, key_node.start_mark.line
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        item = node.value[key]
        return item, item.start_mark.line
    return None


def _parse_layer(files: Iterable[tuple[str, str]]) -> _Layer:
    """Parse files in the given order; a repeated id keeps the first and reports the rest."""
    layer = _Layer()
    seen: dict[str, str] = {}
    for source, text in files:
        try:
            persona = parse_persona(text, source)
        except PersonaFileError as exc:
            layer.issues.append(PersonaIssue(path=source, line=exc.line, reason=exc.reason))
            continue
        if persona.id in seen:
            line = _id_line(text)
            reason = f"duplicate id '{persona.id}' (already defined in {seen[persona.id]})"
            layer.issues.append(PersonaIssue(path=source, line=line, reason=reason))
            continue
        seen[persona.id] = source
        layer.personas.append(persona)
    return layer


def _id_line(text: str) -> int:
    front, _, _ = _split(text)
    return _field_line(front, ("id",))


def _builtin_layer() -> _Layer:
    try:
        root = importlib.resources.files(BUILTIN_PACKAGE)
        entries = sorted(
            (e for e in root.iterdir() if _is_persona_name(e.name)), key=lambda e: e.name
        )
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError) as exc:
        return _Layer(issues=[_missing_builtin(f"not installed ({exc})")])
    if not entries:
        return _Layer(issues=[_missing_builtin("it holds no persona files")])
    return _parse_layer((_traversable_source(e), e.read_text(encoding="utf-8")) for e in entries)


def _missing_builtin(why: str) -> PersonaIssue:
    return PersonaIssue(path=BUILTIN_PACKAGE, line=None, reason=f"built-in catalog: {why}")


def _traversable_source(entry: Traversable) -> str:
    # Files on disk (every install we make) report their real path; zipped ones their name.
    return str(entry) if isinstance(entry, Path) else f"{BUILTIN_PACKAGE}/{entry.name}"


def _dir_layer(directory: Path) -> _Layer:
    if not directory.is_dir():
        issue = PersonaIssue(path=str(directory), line=None, reason="not a directory")
        return _Layer(issues=[issue])
    files = sorted(p for p in directory.iterdir() if _is_persona_name(p.name) and p.is_file())
    texts: list[tuple[str, str]] = []
    unreadable: list[PersonaIssue] = []
    for path in files:
        try:
            texts.append((str(path), path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            unreadable.append(PersonaIssue(path=str(path), line=None, reason=f"unreadable: {exc}"))
    layer = _parse_layer(texts)
    layer.issues = sorted([*unreadable, *layer.issues], key=lambda i: (i.path, i.line or 0))
    return layer


def _is_persona_name(name: str) -> bool:
    # `name` may be a repo path (".github/council/agents/x.md"); hidden files are skipped.
    base = PurePosixPath(name).name
    return base.endswith(PERSONA_SUFFIX) and not base.startswith(".")


def _merge_layers(layers: Sequence[_Layer]) -> Catalog:
    personas: dict[str, Persona] = {}
    issues: list[PersonaIssue] = []
    for layer in layers:
        personas.update((p.id, p) for p in layer.personas)
        issues.extend(layer.issues)
    return Catalog(personas=dict(sorted(personas.items())), issues=tuple(issues))


def _merge(catalogs: Sequence[Catalog]) -> Catalog:
    layers = [_Layer(list(c.personas.values()), list(c.issues)) for c in catalogs]
    return _merge_layers(layers)
