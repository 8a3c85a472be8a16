"""Where a request asks its provider to cache: the breakpoints a cache policy places and the simulated provider
honours, kept beside the request's messages rather than written into them.

Kept apart so that the event log's messages are never touched and the mock keeps reading the same message
objects request after request. On the wire they become the provider's own markers: litellm's `cache_control` on
a content part, on a tool, or on the request itself (Anthropic's automatic caching).
"""
from __future__ import annotations

from dataclasses import dataclass

TTLS = ("5m", "1h")  # Anthropic's cache lifetimes; a read refreshes an entry for its own TTL


@dataclass(frozen=True)
class Breakpoint:
    """A cache breakpoint on one block: the tool at `index` of the tool list (`block="tool"`), or the message at
    `index` of the request's messages (`block="message"`; the system prompt is message 0 when there is one)."""

    block: str
    index: int
    ttl: str = "5m"


@dataclass(frozen=True)
class CacheMarks:
    """The cache requests of one request: block breakpoints, Anthropic's top-level automatic caching (a breakpoint
    on the last cacheable block, with its TTL) or None, and OpenAI's per-conversation `prompt_cache_key` or None."""

    breakpoints: tuple[Breakpoint, ...] = ()
    automatic: str | None = None
    prompt_cache_key: str | None = None


NO_MARKS = CacheMarks()
