"""The repository's own configuration and personas, read as the App reads them.

The App reads `.github/council.yml` and `.github/council/agents/*.md` from the default
branch through the API (never from the PR head); `council review --pr` does the same; a
local `council review` reads them from the working tree (or `--config FILE`). Whatever
the source, one `RepoSetup` comes out, and it says where it came from and what was wrong.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bot.config import AGENTS_DIR, CONFIG_PATH, ConfigResult, EffectiveConfig
from bot.config.load import load_repo_config
from bot.council.personas import Catalog, load_catalog, load_persona_texts
from bot.settings import Settings

# The personas' directory relative to the configuration file (`council/agents` beside
# `.github/council.yml`), for a local review or `--config FILE`.
AGENTS_BESIDE_CONFIG = PurePosixPath(AGENTS_DIR).relative_to(PurePosixPath(CONFIG_PATH).parent)


class SetupError(ValueError):
    """A configuration file the user named that cannot be read at all."""


@dataclass(frozen=True)
class RepoSetup:
    loaded: ConfigResult
    catalog: Catalog
    config_source: str  # e.g. ".github/council.yml on main", or "defaults (...)"
    persona_source: str | None = None  # where the repo's own personas came from, if any
    persona_problems: list[str] = field(default_factory=list)

    @property
    def config(self) -> EffectiveConfig:
        return self.loaded.config

    def problems(self) -> list[str]:
        """Every problem in the repo's files, one line each, as a user should read them."""
        found = [
            f"{CONFIG_PATH}"
            + (f":{issue.line}" if issue.line else "")
            + f": {issue} (the default is used)"
            for issue in self.loaded.issues
        ]
        return found + self.persona_problems

    def describe(self) -> str:
        """One line: which files this review is configured by."""
        text = f"configuration: {self.config_source}"
        if self.persona_source:
            text += f"; personas: {self.persona_source}"
        return text


def local_setup(
    settings: Settings, *, root: Path | None = None, config_file: Path | None = None
) -> RepoSetup:
    """From the working tree: `<root>/.github/council.yml` (or `config_file`) and the
    `council/agents/` directory beside it."""
    path = config_file if config_file is not None else (root or Path.cwd()) / CONFIG_PATH
    text = _read_local(path, required=config_file is not None)
    agents = path.parent / AGENTS_BESIDE_CONFIG
    has_agents = agents.is_dir()
    catalog = load_catalog([agents] if has_agents else [])
    source = str(path) if text is not None else f"defaults (no {path})"
    return _setup(
        text,
        settings,
        catalog,
        source,
        persona_source=str(agents) if has_agents else None,
    )


ReadAgents = Callable[[], Awaitable[Mapping[str, str]]]


async def remote_setup(
    text: str | None,
    read_agents: ReadAgents,
    settings: Settings,
    base: Catalog,
    branch: str,
) -> RepoSetup:
    """From the default branch through the API: the repo's personas override the packaged
    catalog (`base`) by id, and the config is validated against the result."""
    files = await read_agents()
    catalog = base
    persona_source = None
    if files:
        repo = load_persona_texts(dict(files), builtin=False)
        catalog = base.overridden_by(repo)
        persona_source = f"{AGENTS_DIR} on {branch} ({len(repo)} loaded)"
    source = f"{CONFIG_PATH} on {branch}" if text is not None else f"defaults (no {CONFIG_PATH})"
    return _setup(text, settings, catalog, source, persona_source=persona_source)


def _setup(
    text: str | None,
    settings: Settings,
    catalog: Catalog,
    source: str,
    *,
    persona_source: str | None,
) -> RepoSetup:
    loaded = load_repo_config(text, settings, personas=catalog.ids())
    return RepoSetup(
        loaded=loaded,
        catalog=catalog,
        config_source=source,
        persona_source=persona_source,
        persona_problems=[f"persona {issue}" for issue in catalog.issues],
    )


def _read_local(path: Path, *, required: bool) -> str | None:
    if not path.exists():
        if required:
            raise SetupError(f"--config: {path} does not exist")
        return None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SetupError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise SetupError(f"{path}: cannot read: {error.strerror or type(error).__name__}") from None
