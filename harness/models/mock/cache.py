"""Simulated provider prompt caches, computed from per-message hashes and cached token counts.

A request is read as a chain of blocks (the tool list, then one block per message: harness.models.mock.provider),
each with its prefix key and cumulative tokens, and everything is O(new blocks).

* ``openai``: automatic. Prompts of 1,024+ tokens; every prefix of an earlier request is
  cached; a hit is reported in 128-token steps from 1,024 (OpenAI's documented rule).
  No cache-write count is reported (None).
* ``anthropic``: only at the request's breakpoints (harness.models.cache_marks). From each breakpoint the
  cache is checked backwards for the longest live entry within a lookback of 20 content blocks
  (`Layout` says how many blocks a message is); the prefix at each breakpoint past the read is
  written, for the breakpoint's TTL (5 minutes or 1 hour on the simulated clock; a read refreshes
  an entry for its own TTL). Prefixes under the model's minimum (`anthropic_min_tokens`) are never
  cached. Writes are reported in total and at the 1-hour TTL; no breakpoint, no cache.
* ``openai-breakpoints``: OpenAI's GPT-5.6 family and later (harness.models.openai_breakpoints). Only at
  breakpoints: the request's explicit ones and, in implicit mode, one at the newest message that can carry one.
  A read is the longest prefix of the request that one of the conversation's latest 80 breakpoints wrote, matched
  whole at that breakpoint however far back (never a shorter unmarked prefix, never rounded); the request writes
  the implicit breakpoint and its latest three explicit ones, or its latest four explicit ones, each prefix from
  1,024 tokens, for 30 minutes (a read refreshes its entry). Writes are reported.
* ``none``: no cache; cached tokens 0, writes None.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Callable, Hashable, NamedTuple, Protocol, Sequence

from harness.models import openai_breakpoints
from harness.models.mock.prefix import shared_prefix

CACHE_STYLES = ("anthropic", "openai", openai_breakpoints.STYLE, "none")


class BlockChain:
    """The blocks of a session's last request with their prefix keys and cumulative tokens.

    A request that starts with the same block objects as the one before (the harness never
    changes a message it has sent) reuses their keys and counts, so it costs O(new blocks);
    after a block replaced in place (a masked result), the blocks behind it keep their own
    key and count and only the running prefix is recomputed. Over HTTP, serve-mock hands on
    the session's earlier objects for equal messages (harness.models.serve_mock.server), so the same holds.
    """

    def __init__(self) -> None:
        self.blocks: list[Any] = []
        self.block_keys: list[Hashable] = []
        self.block_tokens = array("q")
        self.prefix_keys = array("q")
        self.cumulative = array("q")

    def read(self, blocks: list[Any], key_of: Callable[[Any], Hashable], tokens_of: Callable[[Any], int]) -> int:
        """Take `blocks` as the current request; returns its total tokens. `blocks` is kept as it is (a fresh
        list the caller does not change afterwards), and the keys and counts are updated in place: a position's
        old key and count are read before they are overwritten, so nothing per request copies the whole chain."""
        old, keys, tokens = self.blocks, self.block_keys, self.block_tokens
        shared = shared_prefix(old, blocks)
        del self.prefix_keys[shared:], self.cumulative[shared:]
        running_key = self.prefix_keys[-1] if shared else 0
        running_tokens = self.cumulative[-1] if shared else 0
        kept = len(old)
        for position in range(shared, len(blocks)):
            block = blocks[position]
            if position < kept and block is old[position]:
                key, size = keys[position], tokens[position]
            else:
                key, size = key_of(block), tokens_of(block)
                if position < kept:
                    keys[position], tokens[position] = key, size
            if position >= kept:
                keys.append(key)
                tokens.append(size)
            running_key = hash((running_key, key))
            running_tokens += size
            self.prefix_keys.append(running_key)
            self.cumulative.append(running_tokens)
        del keys[len(blocks):], tokens[len(blocks):]
        self.blocks = blocks
        return running_tokens


# Anthropic's cache lifetimes (harness.models.cache_marks.TTLS), and OpenAI's one, for its breakpoints sent to a mock
# of Anthropic's style
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0, openai_breakpoints.TTL: openai_breakpoints.TTL_S}
LOOKBACK_BLOCKS = 20  # boundaries checked per breakpoint, the breakpoint's own counted as the first
# Anthropic's minimum cacheable prompt length by model (name fragment, tokens; first match wins); any other
# Claude model (Sonnet 4.6, 4.5, 4, 3.7; Opus 4.1, 4) caches from 1,024 tokens. Sources: docs/mock.md.
ANTHROPIC_MIN_TOKENS = (("opus-4-6", 4096), ("opus-4-5", 4096), ("haiku-4-5", 4096), ("3-5-haiku", 2048),
                        ("3-haiku", 2048))
DEFAULT_MIN_TOKENS = 1024


def anthropic_min_tokens(model: str) -> int:
    """The shortest prefix Anthropic caches for `model` (a litellm name such as `claude-haiku-4-5-20251001`)."""
    name = model.rsplit("/", 1)[-1]
    return next((tokens for fragment, tokens in ANTHROPIC_MIN_TOKENS if fragment in name), DEFAULT_MIN_TOKENS)


class CacheUse(NamedTuple):
    """What one request did to the cache: tokens read, tokens written (None: the provider reports no writes)
    and the part of those written for the 1-hour TTL (the rest: 5 minutes)."""

    read: int
    written: int | None
    written_1h: int = 0


class Layout(Protocol):
    """How a request's blocks map to Anthropic's content blocks, for the lookback and tool breakpoints.

    Boundaries are numbered as slots: slot j < `tools` ends tool j, slot `tools` + i ends message i."""

    tools: int

    def message_blocks(self, index: int) -> int:
        """Content blocks of message `index`."""

    def tool_prefix(self, index: int) -> tuple[int, int]:
        """(prefix key, tokens) of the tool list up to tool `index`, for `index` < tools - 1."""


class _OneBlockEach:
    """The layout of a request without tools whose every message is one content block (`PrefixCache.request`)."""

    tools = 0

    def message_blocks(self, index: int) -> int:
        return 1

    def tool_prefix(self, index: int) -> tuple[int, int]:
        raise IndexError(index)


@dataclass
class PrefixCache:
    style: str = "anthropic"
    min_tokens: int = DEFAULT_MIN_TOKENS
    step_tokens: int = 128
    ttl_s: float = TTL_SECONDS["5m"]  # the OpenAI style's entry lifetime
    _entries: dict[int, tuple[int, float, float]] = field(default_factory=dict)  # key -> (tokens, expiry, ttl_s)
    _inside_tools: bool = False  # whether an entry ends inside a tool list: only then does a lookback look there
    _latest: dict[int, None] = field(default_factory=dict)  # openai-breakpoints: keys of the latest, oldest first

    def request(self, keys: Sequence[Hashable], tokens: Sequence[int], now: float,
                breakpoints: Sequence[tuple[int, str]] | None = None) -> CacheUse:
        """A request of blocks given by key and tokens, each one content block; `breakpoints`: (block index,
        TTL), by default one on the last block for 5 minutes. Returns what it did to the cache."""
        chain = BlockChain()  # an empty tool list first, as the provider reads a request
        chain.read([(0, 0), *zip(keys, tokens)], key_of=lambda block: block[0], tokens_of=lambda block: block[1])
        if breakpoints is None:
            breakpoints = ((len(keys) - 1, "5m"),)
        return self.lookup(chain.prefix_keys, chain.cumulative, now, breakpoints, _OneBlockEach())

    def lookup(self, prefix_keys: Sequence[int], cumulative: Sequence[int], now: float,
               breakpoints: Sequence[tuple[int, str]] = (), layout: Layout = _OneBlockEach()) -> CacheUse:
        """As `request`, for a request already read into prefix keys and cumulative tokens (position 0 the tool
        list, empty or not, then one per message); `breakpoints`: (slot, TTL) in ascending slots (`Layout`)."""
        if self.style == "none":
            return CacheUse(0, None)
        total = cumulative[-1] if cumulative else 0
        if self.style == "openai":
            return CacheUse(self._openai(prefix_keys, cumulative, total, now), None)
        return self._anthropic(prefix_keys, cumulative, now, breakpoints, layout)

    def _openai(self, prefix_keys: Sequence[int], cumulative: Sequence[int], total: int, now: float) -> int:
        matched = 0
        entries = self._entries
        for position in range(len(prefix_keys) - 1, -1, -1):
            entry = entries.get(prefix_keys[position])
            if entry is not None and entry[1] >= now:  # live: not yet expired
                matched = cumulative[position]
                break
        if total >= self.min_tokens:
            self._entries.update(zip(prefix_keys, zip(cumulative, repeat(now + self.ttl_s), repeat(self.ttl_s))))
        if total < self.min_tokens or matched < self.min_tokens:
            return 0
        return self.min_tokens + (matched - self.min_tokens) // self.step_tokens * self.step_tokens

    def at_breakpoints(self, prefix_keys: Sequence[int], cumulative: Sequence[int], now: float,
                       explicit: Sequence[int], implicit: int | None) -> CacheUse:
        """The ``openai-breakpoints`` style for a request read into prefix keys and cumulative tokens (position 0
        the tool list, then one per message): `explicit`, the positions of its breakpoints in ascending order;
        `implicit`, the position of OpenAI's own (implicit mode), or None."""
        entries, latest, ttl_s = self._entries, self._latest, openai_breakpoints.TTL_S
        read, read_key = 0, None
        for key in latest:  # the conversation's latest breakpoints, at most 80: no lookback limit
            tokens, expiry, _ = entries[key]
            if expiry >= now and tokens > read and _holds(prefix_keys, cumulative, key, tokens):
                read, read_key = tokens, key
        if read_key is not None:
            entries[read_key] = (read, now + ttl_s, ttl_s)
        last = openai_breakpoints.MAX_WRITTEN
        written_at = sorted({implicit, *explicit[-(last - 1):]} if implicit is not None else explicit[-last:])
        base = read
        written = 0
        for position in written_at:
            tokens, key = cumulative[position], prefix_keys[position]
            if tokens < self.min_tokens:
                continue
            entries[key] = (tokens, now + ttl_s, ttl_s)
            latest.pop(key, None)
            latest[key] = None
            if tokens > base:
                written += tokens - base
                base = tokens
        while len(latest) > openai_breakpoints.MATCHED:  # the oldest breakpoint is matched no more
            oldest = next(iter(latest))
            del latest[oldest], entries[oldest]
        return CacheUse(read, written)

    def _anthropic(self, prefix_keys: Sequence[int], cumulative: Sequence[int], now: float,
                   breakpoints: Sequence[tuple[int, str]], layout: Layout) -> CacheUse:
        tools = layout.tools

        def at(slot: int) -> tuple[int, int]:
            position = slot - tools + 1  # the chain's position 0 is the (whole) tool list
            if position >= 0:
                return prefix_keys[position], cumulative[position]
            return layout.tool_prefix(slot)

        entries = self._entries
        # no entry ends before the last tool unless one was written there: the lookback stops at the whole list
        read_slot, read, read_key = (-1 if self._inside_tools else max(tools - 2, -1)), 0, 0
        for slot, _ in reversed(breakpoints):
            distance = 0
            while slot > read_slot and distance < LOOKBACK_BLOCKS:
                key, tokens = at(slot)
                entry = entries.get(key)
                if entry is not None and entry[1] >= now:  # live: not yet expired
                    read_slot, read, read_key = slot, tokens, key
                    break
                distance += layout.message_blocks(slot - tools) if slot >= tools else 1
                slot -= 1
        if read:
            ttl_s = entries[read_key][2]
            entries[read_key] = (read, now + ttl_s, ttl_s)
        base = read
        written = written_1h = 0
        for slot, ttl in breakpoints:
            key, tokens = at(slot)
            if tokens <= base or tokens < self.min_tokens:
                continue
            ttl_s = TTL_SECONDS[ttl]
            entries[key] = (tokens, now + ttl_s, ttl_s)
            self._inside_tools = self._inside_tools or slot < tools - 1
            written += tokens - base
            if ttl == "1h":
                written_1h += tokens - base
            base = tokens
        return CacheUse(read, written, written_1h)


def _holds(prefix_keys: Sequence[int], cumulative: Sequence[int], key: int, tokens: int) -> bool:
    """Whether the request's prefix of `tokens` tokens is the one keyed `key` (found by its length: O(log n))."""
    position = bisect_left(cumulative, tokens)
    while position < len(cumulative) and cumulative[position] == tokens:
        if prefix_keys[position] == key:
            return True
        position += 1
    return False
