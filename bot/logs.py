"""Structured logging: one event per line on stderr, never a secret.

Log calls pass ids and reasons, not request text; as a second line of defence every
rendered line (exception tracebacks included) goes through the context builder's redactor.
"""

from __future__ import annotations

import logging
import sys

import structlog

from bot.context.redact import Redactor


def _identity(
    logger: object, name: str, event: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    return event


def redacting(renderer: structlog.typing.Processor) -> structlog.typing.Processor:
    """`renderer`, with any secret in the line it renders replaced by `[REDACTED:<kind>]`."""

    def render(
        logger: structlog.typing.WrappedLogger, name: str, event: structlog.typing.EventDict
    ) -> structlog.typing.ProcessorReturnValue:
        line = renderer(logger, name, event)
        return Redactor().redact(line) if isinstance(line, str) else line

    return render


def configure_logging(level: str = "INFO", *, json_lines: bool = False) -> None:
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json_lines
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info if json_lines else _identity,
            redacting(renderer),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
