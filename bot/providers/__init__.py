"""Model providers: one small interface, one adapter per API family (see base.py)."""

from bot.providers.base import (
    BadRequest,
    CallResult,
    ConfigurationError,
    ContextTooLong,
    ErrorKind,
    InvalidOutput,
    Message,
    ModelCall,
    OutputTool,
    Provider,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    Refused,
    ServerError,
    StartedCall,
    SystemBlock,
    Unreachable,
    Usage,
)
from bot.providers.capabilities import CapabilityTable, ModelCapabilities, cost_usd
from bot.providers.refs import ModelRef, parse_model_ref
from bot.providers.registry import ProviderRegistry, detect_ollama
from bot.providers.worstcase import worst_case_cost

__all__ = [
    "BadRequest",
    "CallResult",
    "CapabilityTable",
    "ConfigurationError",
    "ContextTooLong",
    "ErrorKind",
    "InvalidOutput",
    "Message",
    "ModelCall",
    "ModelCapabilities",
    "ModelRef",
    "OutputTool",
    "Provider",
    "ProviderError",
    "ProviderRegistry",
    "ProviderTimeout",
    "RateLimited",
    "Refused",
    "ServerError",
    "StartedCall",
    "SystemBlock",
    "Unreachable",
    "Usage",
    "cost_usd",
    "detect_ollama",
    "parse_model_ref",
    "worst_case_cost",
]
