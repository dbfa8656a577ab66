"""JSON schemas for structured output, and reading JSON out of free text.

OpenAI's strict mode accepts a subset of JSON Schema: every object closes its properties
(`additionalProperties: false`) and lists all of them as required; optional values are
expressed as nullable. Maps cannot be expressed at all, so our schemas use lists.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

JsonSchema = dict[str, Any]


class SchemaError(ValueError):
    """A schema that strict structured output cannot express (e.g. a map field)."""


def model_schema(model: type[BaseModel]) -> JsonSchema:
    """The plain JSON schema of a pydantic model (Anthropic tool `input_schema`)."""
    return model.model_json_schema()


def strict_schema(model: type[BaseModel]) -> JsonSchema:
    """The model's schema rewritten for OpenAI strict mode."""
    schema = copy.deepcopy(model.model_json_schema())
    _make_strict(schema, path=model.__name__)
    if schema.get("type") != "object":
        raise SchemaError(f"{model.__name__}: the root of a strict schema must be an object")
    return schema


# How many times each (schema class name, strict) was built in this process: `tool_schema`
# builds each once; the tests read this to prove it.
SCHEMA_BUILDS: Counter[tuple[str, bool]] = Counter()


@lru_cache(maxsize=256)
def tool_schema(model: type[BaseModel], *, strict: bool) -> JsonSchema:
    """The schema the adapters send for `model`, built once per process and class: the
    plain schema (Anthropic's `input_schema`) or the strict one (OpenAI, Ollama).

    Building one costs milliseconds of CPU (pydantic's generation and the strict rewrite),
    and every call of a deliberation sends the same few, so they are cached. The returned
    dict is shared by every request body: callers put it into a body as it is and never
    change it (tests/unit/providers/test_schema_cache.py checks a whole deliberation leaves
    it as built)."""
    SCHEMA_BUILDS[(model.__name__, strict)] += 1
    return strict_schema(model) if strict else model_schema(model)


@lru_cache(maxsize=256)
def schema_chars(model: type[BaseModel], *, strict: bool) -> int:
    """`len(str(...))` of `tool_schema(model, strict=strict)`: what the adapters count."""
    return len(str(tool_schema(model, strict=strict)))


def _make_strict(node: Any, *, path: str) -> None:
    if isinstance(node, list):
        for index, item in enumerate(node):
            _make_strict(item, path=f"{path}[{index}]")
        return
    if not isinstance(node, dict):
        return
    # Strict mode rejects defaults; titles are noise to the model.
    node.pop("default", None)
    if "title" in node and not isinstance(node["title"], dict | list):
        node.pop("title")
    if node.get("type") == "object" or "properties" in node:
        _close_object(node, path=path)
    for key, value in list(node.items()):
        if key == "properties":
            for name, prop in value.items():
                _make_strict(prop, path=f"{path}.{name}")
        elif isinstance(value, dict | list):
            _make_strict(value, path=f"{path}.{key}")


def _close_object(node: dict[str, Any], *, path: str) -> None:
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) or extra is True:
        raise SchemaError(f"{path}: maps are not allowed in strict schemas; use a list")
    properties: dict[str, Any] = node.setdefault("properties", {})
    node["additionalProperties"] = False
    node["required"] = list(properties)


def extract_json(text: str) -> Any:
    """The first JSON object in `text`: a fenced ```json block, the whole text, or the
    first balanced `{...}`. Raises ValueError when there is none."""
    stripped = text.strip()
    # Control characters inside strings (a raw newline in a string of code) are read as
    # written: strict parsing refused the outer object, and an inner one was taken instead.
    for candidate in (_fenced(stripped), stripped):
        if candidate:
            try:
                return json.loads(candidate, strict=False)
            except json.JSONDecodeError:
                pass
    decoder = json.JSONDecoder(strict=False)
    for index, char in enumerate(stripped):
        if char == "{":
            try:
                value, _ = decoder.raw_decode(stripped, index)
            except json.JSONDecodeError:
                continue
            return value
    raise ValueError("no JSON object found in the answer")


def _fenced(text: str) -> str | None:
    start = text.find("```")
    if start < 0:
        return None
    body_start = text.find("\n", start)
    end = text.find("```", body_start + 1)
    if body_start < 0 or end < 0:
        return None
    return text[body_start + 1 : end].strip()


def schema_instructions(name: str, schema: JsonSchema) -> str:
    """What a model without native structured output is told, appended to the task."""
    return (
        f"Answer with one JSON object only, no prose, that validates against this JSON "
        f"schema (named {name}):\n```json\n{json.dumps(schema, separators=(',', ':'))}\n```"
    )
