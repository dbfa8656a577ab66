"""What a repository's config is checked against that the operator sets: the models a
repository may name, and the caps it may only lower (`bot.config`'s validators read them
through the validation context, `Checks`)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationInfo

from bot.providers import ConfigurationError, ProviderRegistry, parse_model_ref
from bot.safety import strip_invisible
from bot.settings import Settings

__all__ = ["Checks", "allowed_repo_models", "checks", "show"]

SHOWN = 80  # characters of a repo-supplied value echoed in a reason


@dataclass(frozen=True)
class Checks:
    settings: Settings
    allowed: tuple[str, ...]

    def model_ref(self, value: str) -> str:
        text = value.strip()
        if "http" in text.lower() or "://" in text:
            raise ValueError(f"{show(text)}: a repository may not name an endpoint URL")
        if text not in self.allowed:
            raise ValueError(f"{show(text)} is not among the allowed models ({self._listed()})")
        try:
            parse_model_ref(text, self.settings, allow_urls=False)
        except ConfigurationError as err:
            raise ValueError(str(err)) from None
        return text

    def _listed(self) -> str:
        if not self.allowed:
            return "none: the operator sets COUNCIL_ALLOWED_MODELS"
        shown = ", ".join(self.allowed[:10])
        return shown + (", ..." if len(self.allowed) > 10 else "")


def checks(info: ValidationInfo) -> Checks:
    if not isinstance(info.context, Checks):
        raise ValueError("the repo config can only be checked against the operator's settings")
    return info.context


def allowed_repo_models(settings: Settings) -> list[str]:
    """The models a repo may choose: COUNCIL_ALLOWED_MODELS, else the operator's own."""
    if settings.allowed_models:
        return [m.strip() for m in settings.allowed_models]
    return ProviderRegistry(settings).configured_models()


def show(value: object) -> str:
    """A repo-supplied value, short and without invisible characters, to quote in a reason."""
    text = strip_invisible(repr(value))
    return text if len(text) <= SHOWN else text[: SHOWN - 4] + "...'"
