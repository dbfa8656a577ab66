"""Numbers out of the schema's range, brought into it: a grammar that drops `minimum` and
`maximum` (llama-cpp-python's drops them for integers) lets a model answer a lens score of
0 where the schema says 1-10, and a re-ask brings the same answer back, every time.

`clamped` takes the answer and the validation errors it raised; when every error is a
number past a bound (`ge`, `le`, `gt`, `lt` on an integer, `ge`/`le` on a float), it gives
the answer with each such number set to the nearest value the schema allows, and one note
per change ("points.0.x: 0 is below the minimum 1; read as 1") for the answer's record.
Any other error (a missing field, a wrong type) leaves it to the re-ask: None.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

__all__ = ["clamped"]

_BOUNDS = {
    "greater_than_equal": ("ge", "below the minimum", 0),
    "less_than_equal": ("le", "above the maximum", 0),
    "greater_than": ("gt", "not above", 1),
    "less_than": ("lt", "not below", -1),
}


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
