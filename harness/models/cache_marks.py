"""Where a request asks its provider to cache: the breakpoints a cache policy places and the simulated provider
honours, kept beside the request's messages rather than written into them.

Kept apart so that the event log's messages are never touched and the mock keeps reading the same message
objects request after request. On the wire they become the provider's own markers: litellm's `cache_control` on
a content part, on a tool, or on the request itself (Anthropic's automatic caching); for OpenAI's GPT-5.6 family and
later, `prompt_cache_breakpoint` on a content part and the request's `prompt_cache_options`.
"""
from __future__ import annotations

from dataclasses import dataclass

TTLS = ("5m", "1h")  # Anthropic's cache lifetimes; a read refreshes an entry for its own TTL


@dataclass(frozen=True)
class Breakpoint:
    """A cache breakpoint on one block: the tool at `index` of the tool list (`block="tool"`), or the message at
    `index` of the request's messages (`block="message"`; the system prompt is message 0 when there is one); `ttl`
    is Anthropic's (TTLS), or OpenAI's one lifetime `30m` (harness.models.openai_breakpoints)."""

    block: str
    index: int
    ttl: str = "5m"


@dataclass(frozen=True, repr=False)
class CacheMarks:
    """The cache requests of one request: block breakpoints, Anthropic's top-level automatic caching (a breakpoint
    on the last cacheable block, with its TTL) or None, OpenAI's per-conversation `prompt_cache_key` or None, and
    OpenAI's `prompt_cache_options.mode` (GPT-5.6 and later: `implicit` or `explicit`; None: no options sent, which
    OpenAI reads as implicit). Marks with a mode are OpenAI's dialect: breakpoints become `prompt_cache_breakpoint`."""

    breakpoints: tuple[Breakpoint, ...] = ()
    automatic: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_mode: str | None = None

    def __repr__(self) -> str:
        """The dataclass's text, the mode only when set: the response cache keys a request by this text, so marks
        of the families before the mode existed keep their keys (harness.models.llm)."""
        mode = f", prompt_cache_mode={self.prompt_cache_mode!r}" if self.prompt_cache_mode is not None else ""
        return (f"CacheMarks(breakpoints={self.breakpoints!r}, automatic={self.automatic!r}, "
                f"prompt_cache_key={self.prompt_cache_key!r}{mode})")


NO_MARKS = CacheMarks()
