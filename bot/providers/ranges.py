"""Answers past the schema's bounds, brought within them: a grammar that drops `minimum` and
`maximum` (llama-cpp-python's drops them for integers) lets a model answer a lens score of
0 where the schema says 1-10, and a re-ask brings the same answer back, every time; one
that ignores `maxItems` lets a small model list one finding until its window runs out.

`within_items` cuts every list longer than its schema's `maxItems` to the first that many,
with a note per list ("findings: 31 items, more than the maximum 15; the first 15 kept").
`clamped` takes the answer and the validation errors it raised; when every error is a
number past a bound (`ge`, `le`, `gt`, `lt` on an integer, `ge`/`le` on a float), it gives
the answer with each such number set to the nearest value the schema allows, and one note
per change ("points.0.x: 0 is below the minimum 1; read as 1") for the answer's record.
Any other error (a missing field, a wrong type) leaves it to the re-ask: None.
`conformed` reads an answer as its schema through both.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bot.providers.schema import JsonSchema, tool_schema

__all__ = ["clamped", "conformed", "within_items"]

ModelT = TypeVar("ModelT", bound=BaseModel)

_BOUNDS = {
    "greater_than_equal": ("ge", "below the minimum", 0),
    "less_than_equal": ("le", "above the maximum", 0),
    "greater_than": ("gt", "not above", 1),
    "less_than": ("lt", "not below", -1),
}


def conformed(model: type[ModelT], data: Any) -> tuple[ModelT, list[str]]:
    """`data` read as `model`, its lists cut to their bounds and its numbers brought into
    range, with a note per change; the ValidationError of what is wrong besides."""
    data, notes = within_items(tool_schema(model, strict=False), data)
    try:
        return model.model_validate(data), notes
    except ValidationError as err:
        fixed = clamped(data, err.errors(include_url=False, include_input=False))
        if fixed is None:
            raise
        try:
            return model.model_validate(fixed[0]), [*notes, *fixed[1]]
        except ValidationError:
            raise err from None


def within_items(schema: JsonSchema, data: Any) -> tuple[Any, list[str]]:
    """(`data` with each list longer than its schema's `maxItems` cut to the first that
    many, a note per list cut); `data` itself is left as it is."""
    notes: list[str] = []
    return _cut(schema, schema, data, (), notes), notes


def _cut(node: Any, root: JsonSchema, value: Any, loc: tuple[Any, ...], notes: list[str]) -> Any:
    if isinstance(value, list):
        array = _branch(node, root, "array")
        if array is None:
            return value
        limit = array.get("maxItems")
        if isinstance(limit, int) and not isinstance(limit, bool) and len(value) > limit:
            where = ".".join(str(part) for part in loc) or "(the answer)"
            notes.append(
                f"{where}: {len(value)} items, more than the maximum {limit}; "
                f"the first {limit} kept"
            )
            value = value[:limit]
        items = array.get("items")
        return [_cut(items, root, v, (*loc, i), notes) for i, v in enumerate(value)]
    if isinstance(value, dict):
        found = _branch(node, root, "object")
        properties = found.get("properties") if found is not None else None
        if not isinstance(properties, dict):
            return value
        return {
            k: _cut(properties[k], root, v, (*loc, k), notes) if k in properties else v
            for k, v in value.items()
        }
    return value


def _branch(node: Any, root: JsonSchema, kind: str) -> dict[str, Any] | None:
    """The schema of a `kind` ("array", "object") value at `node`: through `$ref`, or the
    first `anyOf`/`oneOf` variant of that kind; None when it has none."""
    for _ in range(32):  # a $ref chain, never a cycle in pydantic's schemas
        if not isinstance(node, dict) or "$ref" not in node:
            break
        node = _referenced(root, node["$ref"])
    if not isinstance(node, dict):
        return None
    for key in ("anyOf", "oneOf"):
        for variant in node.get(key) or []:
            found = _branch(variant, root, kind)
            if found is not None:
                return found
    declared = node.get("type")
    kinds = declared if isinstance(declared, list) else [declared]
    shaped = "items" in node if kind == "array" else "properties" in node
    return node if kind in kinds or shaped else None


def _referenced(root: JsonSchema, ref: object) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        node = (
            node.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(node, dict) else None
        )
    return node


def clamped(data: Any, errors: Sequence[Any]) -> tuple[Any, list[str]] | None:
    """(the answer with its out-of-range numbers clamped, a note per number), or None when
    an error is of another kind (pydantic's `ValidationError.errors()` as `errors`)."""
    if not errors:
        return None
    fixed = copy.deepcopy(data)
    notes: list[str] = []
    for error in errors:
        rule = _BOUNDS.get(str(error.get("type")))
        if rule is None:
            return None
        key, said, step = rule
        bound = (error.get("ctx") or {}).get(key)
        loc = tuple(error.get("loc") or ())
        value = _at(fixed, loc)
        if not isinstance(bound, int | float) or isinstance(value, bool) or not loc:
            return None
        if not isinstance(value, int | float):
            return None
        if step and not (isinstance(value, int) and isinstance(bound, int)):
            return None  # a strict bound on a float has no nearest value
        allowed = bound + step
        _set(fixed, loc, allowed)
        where = ".".join(str(part) for part in loc)
        notes.append(f"{where}: {value} is {said} {bound}; read as {allowed}")
    return fixed, notes


def _at(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _set(data: Any, loc: tuple[Any, ...], value: Any) -> None:
    for part in loc[:-1]:
        data = data[part]
    data[loc[-1]] = value
