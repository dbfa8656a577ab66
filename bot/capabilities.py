"""What a model accepts and costs: the data model of the capability table.

It lives at the top level, importing nothing of ours, because both the settings (operators
extend the table with COUNCIL_MODEL_CAPABILITIES) and the providers (who look models up in
it, bot.providers.capabilities) need it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Family = Literal["anthropic", "openai"]
StructuredMode = Literal["tool", "json_schema", "json_object", "text"]
# Where a model's prices came from: the built-in table, the operator's table
# (COUNCIL_MODEL_CAPABILITIES), the endpoint's own prices, a local server (free), or nowhere.
PriceSource = Literal["table", "operator", "endpoint", "local", "unknown"]


class ModelCapabilities(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    family: Family
    # Exact model name, or a prefix ending in "*" ("claude-sonnet-4*").
    match: str
    context_window: int = Field(gt=0)
    max_output_tokens: int = Field(default=8192, gt=0)
    accepts_temperature: bool = True
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    structured: StructuredMode = "text"
    # Shortest prefix the provider will cache; breakpoints on shorter prefixes are skipped.
    min_cache_tokens: int = 1024
    # USD per million tokens.
    input_price: float = Field(ge=0)
    output_price: float = Field(ge=0)
    cache_write_price: float = Field(ge=0)
    cache_read_price: float = Field(ge=0)
    known: bool = True
    price_source: PriceSource = "table"

    @property
    def priced(self) -> bool:
        """False when nothing says what a call costs: its cost is shown as unknown."""
        return self.price_source != "unknown"

    def matches(self, family: Family, model: str) -> int:
        """Length of the match (0: no match) so the most specific entry wins."""
        if family != self.family:
            return 0
        if self.match.endswith("*"):
            prefix = self.match[:-1]
            return len(prefix) if model.startswith(prefix) else 0
        return len(self.match) + 1000 if model == self.match else 0
