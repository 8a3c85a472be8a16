"""What a request used and what that costs: usage read from any provider's fields (OpenAI's or Anthropic's, as
litellm reports them, the mock's included), and prices from litellm's cost map.

Below both the client (harness.models.llm) and the simulated provider (harness.models.mock), which bill and report alike.
Usage fields a provider did not report stay None (unknown), never 0.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

from harness.core.errors import ConfigError, did_you_mean
from harness.models import openai_breakpoints

# The mock bills as this real model (a current Claude Sonnet entry of litellm's cost map).
DEFAULT_PRICE_MODEL = "claude-sonnet-4-6"


def quiet_litellm() -> Any:
    """litellm, imported at its first use (seconds of imports that listing strategies or reading a
    profile's fields does not need), quiet about its debug hints."""
    import litellm

    litellm.suppress_debug_info = True
    return litellm


@dataclass
class Usage:
    """Tokens of one request. input_tokens includes cached reads and cache writes; cache_write_1h_tokens: the part
    of the cache writes made with the 1h TTL (billed 2x input rather than 1.25x), when the provider splits them."""

    input_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    output_tokens: int | None = None
    cache_write_1h_tokens: int | None = None

    def as_dict(self) -> dict[str, int | None]:
        return {"input_tokens": self.input_tokens, "cached_tokens": self.cached_tokens,
                "cache_write_tokens": self.cache_write_tokens, "output_tokens": self.output_tokens,
                "cache_write_1h_tokens": self.cache_write_1h_tokens}

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> "Usage":
        """The usage `as_dict` wrote (or a recorded one in the same names); missing names are None."""
        return cls(fields.get("input_tokens"), fields.get("cached_tokens"), fields.get("cache_write_tokens"),
                   fields.get("output_tokens"), fields.get("cache_write_1h_tokens"))


def field_reader(obj: Any) -> Callable[[str], Any]:
    """How to read `obj`'s fields by name (None for a missing one): a mapping's own `get`, an object's attributes.
    Taken once per object, so the mock's usage and replies in process (plain dicts, ~20 fields a request) are
    read by `dict.get` alone, without a Python call per field."""
    if type(obj) is dict:
        return obj.get
    if obj is None:
        return _nothing
    if isinstance(obj, Mapping):  # after the exact dict: the ABC check is slow
        return obj.get
    return lambda name: getattr(obj, name, None)


def _nothing(name: str) -> None:
    return None


def normalize_usage(usage: Any) -> Usage:
    """Map litellm's usage (OpenAI or Anthropic shaped) to input/cached/cache-write/output, with the cache writes'
    1h part from Anthropic's TTL split (`cache_creation.ephemeral_1h_input_tokens`, which litellm keeps as
    `prompt_tokens_details.cache_creation_token_details`)."""
    field = field_reader(usage)
    detail = field_reader(field("prompt_tokens_details"))
    cached = detail("cached_tokens")
    if cached is None:
        cached = field("cache_read_input_tokens")
    write = detail("cache_write_tokens")
    if write is None:
        write = field("cache_creation_input_tokens")
    split = field_reader(detail("cache_creation_token_details") or field("cache_creation"))
    return Usage(
        input_tokens=field("prompt_tokens"),
        cached_tokens=cached,
        cache_write_tokens=write,
        output_tokens=field("completion_tokens"),
        cache_write_1h_tokens=split("ephemeral_1h_input_tokens"),
    )


def anthropic_usage(fields: Mapping[str, Any]) -> Usage:
    """Usage in Anthropic's own response fields (a Messages API response read off the wire by an SDK's transport), as
    litellm reads them (anthropic/chat/transformation.py `calculate_usage`: a compaction's `iterations` summed)."""
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    return normalize_usage(AnthropicConfig().calculate_usage(fields, None))


def responses_usage(fields: Mapping[str, Any]) -> Usage:
    """Usage in OpenAI's Responses fields (a Responses API response read off the wire by an SDK's transport), as
    litellm maps them to chat usage (responses/utils.py `transform_response_api_usage_to_chat_usage`)."""
    from litellm.responses.utils import ResponseAPILoggingUtils

    return normalize_usage(ResponseAPILoggingUtils.transform_response_api_usage_to_chat_usage(dict(fields)))


@dataclass(frozen=True)
class Pricing:
    """USD per token, from litellm's cost map; cache_write is a 5m write's (OpenAI's 30m write's), cache_write_1h a
    1h write's. A write without a cost-map price costs the input price (OpenAI's writes before GPT-5.6: no fee),
    or 1.25x it for an OpenAI model of the GPT-5.6 family or later (harness.models.openai_breakpoints)."""

    model: str
    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float

    @classmethod
    def for_model(cls, model: str) -> "Pricing | None":
        entry = quiet_litellm().model_cost.get(model)
        if entry is None and "/" in model:
            entry = quiet_litellm().model_cost.get(model.split("/", 1)[1])
        if not entry or entry.get("input_cost_per_token") is None:
            return None
        price_in = float(entry["input_cost_per_token"])
        write = entry.get("cache_creation_input_token_cost")
        if write is None and entry.get("litellm_provider") in ("openai", "azure") \
                and openai_breakpoints.takes_breakpoints(model):
            write = price_in * openai_breakpoints.WRITE_PRICE_RATIO
        return cls(
            model=model,
            input=price_in,
            output=float(entry.get("output_cost_per_token") or 0.0),
            cache_read=float(entry.get("cache_read_input_token_cost") or price_in),
            cache_write=float(write or price_in),
            cache_write_1h=float(entry.get("cache_creation_input_token_cost_above_1hr")
                                 or entry.get("cache_creation_input_token_cost") or price_in),
        )

    def cost(self, usage: Usage) -> tuple[float, float]:
        """(cost with cache prices, cost had nothing been cached)."""
        total_in = usage.input_tokens or 0
        cached = usage.cached_tokens or 0
        written = usage.cache_write_tokens or 0
        written_1h = min(usage.cache_write_1h_tokens or 0, written)
        out = usage.output_tokens or 0
        fresh = max(total_in - cached - written, 0)
        with_cache = (fresh * self.input + cached * self.cache_read + (written - written_1h) * self.cache_write
                      + written_1h * self.cache_write_1h + out * self.output)
        uncached = total_in * self.input + out * self.output
        return with_cache, uncached


def check_price_model(name: str) -> None:
    """A model to bill as must have prices in litellm's cost map: a typo would leave every cost unknown."""
    if Pricing.for_model(name) is None:
        priced = (key for key, entry in quiet_litellm().model_cost.items()
                  if isinstance(entry, dict) and entry.get("input_cost_per_token") is not None)
        raise ConfigError(f"price_model {name!r} has no prices in litellm's cost map (litellm.model_cost)"
                          f"{did_you_mean(name, priced)}")

def litellm_prices(model: str, pricing: Pricing | None) -> dict[str, float]:
    """Custom per-token prices to give litellm with each request to a model its cost map does not know.

    litellm prices every response itself (the harness ignores that figure: cost comes from the
    profile's `Pricing`). For a model missing from its cost map it first tries many generalizations
    of the name, on every request, in the calling thread and again in its logging thread; that costs
    more CPU than the rest of a small request. Given its documented custom prices
    (`input_cost_per_token`, `output_cost_per_token`: litellm parameters, not sent to the provider)
    it uses them instead. Models it knows, or without a price, get none: nothing changes for them.
    """
    if pricing is None:
        return {}
    try:
        quiet_litellm().get_model_info(model)
    except Exception:  # litellm raises a bare Exception for unknown models
        return {"input_cost_per_token": pricing.input, "output_cost_per_token": pricing.output}
    return {}
