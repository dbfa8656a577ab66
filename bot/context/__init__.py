"""From a change to what the council reads: parsing, ranking, packing, signals, redaction.

No network I/O: files come in as data (`read_file`), so the CLI and the App use it alike.
"""

from bot.context.build import DEFAULT_BUDGET, build_context
from bot.context.models import (
    BuiltContext,
    ChangedFile,
    CodeLocation,
    DependencyChange,
    GuidanceSource,
    Omitted,
    PullRequestMeta,
    ReadFile,
    RiskyPattern,
    Section,
    Signals,
)
from bot.context.nameindex import FactsCache, Indexing, MemoryFactsCache
from bot.context.prose import clean_untrusted

__all__ = [
    "DEFAULT_BUDGET",
    "BuiltContext",
    "ChangedFile",
    "CodeLocation",
    "DependencyChange",
    "FactsCache",
    "GuidanceSource",
    "Indexing",
    "MemoryFactsCache",
    "Omitted",
    "PullRequestMeta",
    "ReadFile",
    "RiskyPattern",
    "Section",
    "Signals",
    "build_context",
    "clean_untrusted",
]
