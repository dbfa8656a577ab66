"""The keys of `.github/council.yml` are declared once, in `RepoConfig`: the README's
example names exactly those keys, section by section; the effective config takes every
one of them (merging refuses a key it does not hold); and `protocol`'s comment lists the
protocol table's names."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel

from bot.config import EffectiveConfig, RepoConfig, effective_names, section
from bot.config.show import effective_yaml
from bot.council.protocols import NAMES

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    after = text.split("#### Repository configuration: `.github/council.yml`", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", after, re.DOTALL)
    assert found is not None
    return found.group(1)


def written(data: object, path: tuple[str, ...] = ()) -> set[str]:
    """The dotted keys of a file's data (a list's first item stands for its items)."""
    if isinstance(data, list) and data:
        return written(data[0], path)
    if not isinstance(data, dict) or (path and section(path) is None):
        return set()
    keys = {".".join((*path, key)) for key in data}
    for key, value in data.items():
        keys |= written(value, (*path, key))
    return keys


def declared(model: type[BaseModel] = RepoConfig, path: tuple[str, ...] = ()) -> set[str]:
    keys = set()
    for key in model.model_fields:
        keys.add(".".join((*path, key)))
        inner = section((*path, key))
        keys |= declared(inner, (*path, key)) if inner is not None else set()
    return keys


def test_the_readme_example_names_exactly_the_files_keys() -> None:
    assert written(yaml.safe_load(readme_example())) == declared()


def test_the_effective_layout_is_the_files() -> None:
    layout = written(yaml.safe_load(effective_yaml(EffectiveConfig())))
    assert layout == {key for key in declared() if not key.startswith("seats.")}


def test_every_key_of_the_file_lands_in_the_effective_config() -> None:
    effective = set(EffectiveConfig.model_fields)
    for key in RepoConfig.model_fields:
        names = effective_names(key)
        assert set(names.values()) <= effective if names is not None else key in effective


def test_the_protocol_comment_lists_the_table() -> None:
    (line,) = [line for line in readme_example().splitlines() if line.startswith("protocol:")]
    assert " | ".join(NAMES) in line
