"""PR Council: a council of AI reviewers for pull requests."""

from typing import Any

# The product's command: `council` on the command line, `/council` in a comment, the
# prefix of its Redis keys. Spelled like the `council` protocol, it is a different name,
# written here once (tests/unit/test_house_rules.py excepts this one literal).
COMMAND = "council"


def __getattr__(name: str) -> Any:
    # The version is the installed distribution's (pyproject.toml), read when first asked
    # for: importlib.metadata is not free, and every command imports this package.
    if name == "__version__":
        from importlib.metadata import version

        return version("pr-council")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
