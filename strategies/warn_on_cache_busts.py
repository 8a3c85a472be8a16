"""WarnOnCacheBusts (seed 002): notice when an established cached prefix collapses. Observe-only.

After each main response it reads the cache-read and cache-write tokens. The high-water
mark of read + write is the established prefix; once it is at least `min_prefix_tokens`
(1,024), a later response that reads back less than `collapse_ratio` (half) of it is a
bust: a `cache_bust_warning` event is recorded and a Python `CacheBustWarning` is raised
as a warning. The mark then restarts from that response, so one bust warns once, and a
new prefix that collapses again warns again. A gap longer than `cache_ttl_seconds` since
the previous response is reported as the likely cause (provider-side expiry). It adds no
tools, injects nothing and changes no view. Defaults from paf's
`WarnOnCacheBusts(collapse_ratio=0.5, min_prefix_tokens=1024, cache_ttl_seconds=300)`.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.core.config import option, require
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMResult


class CacheBustWarning(UserWarning):
    """An established prompt-cache prefix stopped being read back."""


@dataclass
class WarnOnCacheBustsConfig:
    collapse_ratio: float = option(0.5, "a response reading back less than this fraction of the established "
                                        "cached prefix is a bust, in (0, 1]")
    min_prefix_tokens: int = option(1024, "cache read + write tokens the prefix must reach before busts count",
                                    tokens=True)
    cache_ttl_seconds: float = option(300.0, "a gap longer than this since the previous response is named "
                                             "as the likely cause (provider-side expiry)")

    def __post_init__(self) -> None:
        require(0.0 < self.collapse_ratio <= 1.0, f"collapse_ratio must be in (0, 1], got {self.collapse_ratio}")
        require(self.min_prefix_tokens >= 1, f"min_prefix_tokens must be at least 1, got {self.min_prefix_tokens}")
        require(self.cache_ttl_seconds > 0, f"cache_ttl_seconds must be positive, got {self.cache_ttl_seconds}")


class WarnOnCacheBusts(Strategy):
    name = "warn_on_cache_busts"
    summary = "observe-only: warn when an established cached prefix collapses"
    source = "seed 002; pydantic-ai-harness WarnOnCacheBusts"
    Config = WarnOnCacheBustsConfig
    standalone = False

    def __init__(self, config: WarnOnCacheBustsConfig | None = None):
        super().__init__(config)
        self.high_water = 0
        self.last_seen: float | None = None

    def on_run_start(self, ctx: "RunContext") -> None:
        self.high_water, self.last_seen = 0, None

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        now = time.monotonic()
        gap = None if self.last_seen is None else now - self.last_seen
        self.last_seen = now
        read = result.usage.cached_tokens
        if read is None:  # the provider reports no caching: nothing to watch
            return
        prefix = read + (result.usage.cache_write_tokens or 0)
        config = self.config
        if self.high_water >= config.min_prefix_tokens and read < config.collapse_ratio * self.high_water:
            cause = "ttl_expired" if gap is not None and gap > config.cache_ttl_seconds else "prefix_changed"
            message = (f"prompt cache bust at request {ctx.requests}: read {read} cached tokens, below "
                       f"{config.collapse_ratio:g} x the established prefix of {self.high_water} tokens ({cause})")
            ctx.emit("cache_bust_warning", request=ctx.requests, cached_tokens=read,
                     established_prefix_tokens=self.high_water, collapse_ratio=config.collapse_ratio,
                     likely_cause=cause, message=message)
            warnings.warn(CacheBustWarning(message), stacklevel=2)
            self.high_water = prefix
            return
        self.high_water = max(self.high_water, prefix)
