"""The one place a review is assembled, for the App's worker and the command line alike.

source (local git, a diff file, a pull request through GitHub) + the repository's
configuration and personas + the operator's settings -> context -> council inputs ->
engine run -> the recorded advisory.

This package is also the outer layers' door to what a review is made of: the command line
and the worker (docs/architecture.md: they may import `review`, not `council`, `context`,
`providers` or `config`) take the types and services they need from here by name. Each
name loads its module on first use, so `council --help` pays for none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # what a review produces
    "Advisory": "bot.council.advisory",
    "Resolution": "bot.council.advisory",
    "ProgressEvent": "bot.council.engine",
    # personas and the board
    "Catalog": "bot.council.personas",
    "load_catalog": "bot.council.personas",
    "explain": "bot.council.scoring",
    "score_catalog": "bot.council.scoring",
    "select_board": "bot.council.selection",
    # the repository's configuration
    "AGENTS_DIR": "bot.config",
    "CONFIG_PATH": "bot.config",
    "ConfigIssue": "bot.config",
    "ConfigResult": "bot.config",
    "EffectiveConfig": "bot.config",
    "allowed_repo_models": "bot.config.operator",
    "effective_yaml": "bot.config.show",
    "load_repo_config": "bot.config.load",
    "render_effective": "bot.config.show",
    # the context
    "BuiltContext": "bot.context",
    "DEFAULT_BUDGET": "bot.context",
    # the providers
    "ProviderRegistry": "bot.providers",
    # errors a caller reports as a usage error
    "ConveneError": "bot.council.convene",
    "ConfigurationError": "bot.providers",
    "PreflightFailed": "bot.providers.preflight",
    # the most seats a protocol convenes (a worker's job timeout covers them queueing)
    "BOARD_SIZE": "bot.council.protocols",
    # errors a job explains to the people reading its check run
    "ProviderError": "bot.providers",
}

if TYPE_CHECKING:  # the same names, for type checkers (`X as X`: re-exported)
    from bot.config import (
        AGENTS_DIR as AGENTS_DIR,
    )
    from bot.config import (
        CONFIG_PATH as CONFIG_PATH,
    )
    from bot.config import (
        ConfigIssue as ConfigIssue,
    )
    from bot.config import (
        ConfigResult as ConfigResult,
    )
    from bot.config import (
        EffectiveConfig as EffectiveConfig,
    )
    from bot.config.load import (
        load_repo_config as load_repo_config,
    )
    from bot.config.operator import (
        allowed_repo_models as allowed_repo_models,
    )
    from bot.config.show import (
        effective_yaml as effective_yaml,
    )
    from bot.config.show import (
        render_effective as render_effective,
    )
    from bot.context import (
        DEFAULT_BUDGET as DEFAULT_BUDGET,
    )
    from bot.context import (
        BuiltContext as BuiltContext,
    )
    from bot.council.advisory import (
        Advisory as Advisory,
    )
    from bot.council.advisory import (
        Resolution as Resolution,
    )
    from bot.council.convene import (
        ConveneError as ConveneError,
    )
    from bot.council.engine import (
        ProgressEvent as ProgressEvent,
    )
    from bot.council.personas import (
        Catalog as Catalog,
    )
    from bot.council.personas import (
        load_catalog as load_catalog,
    )
    from bot.council.protocols import (
        BOARD_SIZE as BOARD_SIZE,
    )
    from bot.council.scoring import explain as explain
    from bot.council.scoring import score_catalog as score_catalog
    from bot.council.selection import select_board as select_board
    from bot.providers import (
        ConfigurationError as ConfigurationError,
    )
    from bot.providers import (
        ProviderError as ProviderError,
    )
    from bot.providers import (
        ProviderRegistry as ProviderRegistry,
    )
    from bot.providers.preflight import (
        PreflightFailed as PreflightFailed,
    )

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bot.review' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
