"""The effective config shown: as YAML in the layout of `.github/council.yml` (`council
config check`), and as the Markdown of `/council help` with the protocols it can run and
the file's problems."""

from __future__ import annotations

import re
from collections.abc import Sequence

import yaml

from bot.config import (
    CONFIG_PATH,
    ConfigIssue,
    EffectiveConfig,
    RepoConfig,
    effective_names,
    plain,
)
from bot.council.protocols import PROTOCOLS
from bot.safety.markdown import sanitize_markdown

__all__ = ["effective_yaml", "render_effective"]


def effective_yaml(config: EffectiveConfig) -> str:
    """The effective config in the layout of `.github/council.yml`: the file's keys in its
    order, each section's keys read back from where the effective config holds them."""
    layout: dict[str, object] = {}
    for key in RepoConfig.model_fields:
        names = effective_names(key)
        if names is None:
            layout[key] = plain(getattr(config, key))
        else:
            layout[key] = {inner: getattr(config, name) for inner, name in names.items()}
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
