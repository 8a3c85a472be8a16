"""Simulated provider prompt caches, computed from per-message hashes and cached token counts.

Both styles work at message granularity (a block is the tool list or one message): a
request is a list of block keys and block token counts, and everything is O(blocks).

* ``openai``: automatic. Prompts of 1,024+ tokens; every prefix of an earlier request is
  cached; a hit is reported in 128-token steps from 1,024 (OpenAI's documented rule).
  No cache-write count is reported (None).
* ``anthropic``: a breakpoint on the last block of each request. A later request reads
  the longest unexpired earlier breakpoint prefix that lies within `lookback` blocks of
  its end, and writes the rest. Entries live `ttl_s` seconds on the simulated clock and
  a read refreshes them. Prefixes under `min_tokens` are never cached.
* ``none``: no cache; cached tokens 0, writes None.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Callable, Hashable, Sequence

from harness.mock.prefix import shared_prefix

CACHE_STYLES = ("anthropic", "openai", "none")


class BlockChain:
    """The blocks of a session's last request with their prefix keys and cumulative tokens.

    A request that starts with the same block objects as the one before (the harness never
    changes a message it has sent) reuses their keys and counts, so it costs O(new blocks);
    after a block replaced in place (a masked result), the blocks behind it keep their own
    key and count and only the running prefix is recomputed. Over HTTP, serve-mock hands on
    the session's earlier objects for equal messages (harness.server), so the same holds.
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


@dataclass
class PrefixCache:
    style: str = "anthropic"
    min_tokens: int = 1024
    step_tokens: int = 128
    ttl_s: float = 300.0
    lookback: int = 20
    _entries: dict[int, tuple[int, float]] = field(default_factory=dict)  # prefix key -> (tokens, expiry)

    def request(self, keys: Sequence[Hashable], tokens: Sequence[int], now: float) -> tuple[int, int | None]:
        """Return (cached read tokens, cache-write tokens or None) and update the cache."""
        chain = BlockChain()
        chain.read([*zip(keys, tokens)], key_of=lambda block: block[0], tokens_of=lambda block: block[1])
        return self.lookup(chain.prefix_keys, chain.cumulative, now)

    def lookup(self, prefix_keys: list[int], cumulative: list[int], now: float) -> tuple[int, int | None]:
        """As `request`, for a request already read into prefix keys and cumulative tokens."""
        if self.style == "none":
            return 0, None
        total = cumulative[-1] if cumulative else 0
        if self.style == "openai":
            return self._openai(prefix_keys, cumulative, total, now), None
        return self._anthropic(prefix_keys, cumulative, total, now)

    def _openai(self, prefix_keys: list[int], cumulative: list[int], total: int, now: float) -> int:
        matched = 0
        entries = self._entries
        for position in range(len(prefix_keys) - 1, -1, -1):
            entry = entries.get(prefix_keys[position])
            if entry is not None and entry[1] >= now:  # live: not yet expired
                matched = cumulative[position]
                break
        if total >= self.min_tokens:
            self._entries.update(zip(prefix_keys, zip(cumulative, repeat(now + self.ttl_s))))
        if total < self.min_tokens or matched < self.min_tokens:
            return 0
        return self.min_tokens + (matched - self.min_tokens) // self.step_tokens * self.step_tokens

    def _anthropic(self, prefix_keys: list[int], cumulative: list[int], total: int, now: float) -> tuple[int, int]:
        if total < self.min_tokens:
            return 0, 0
        read = 0
        entries = self._entries
        first = max(len(prefix_keys) - self.lookback, 0)
        for position in range(len(prefix_keys) - 1, first - 1, -1):
            key = prefix_keys[position]
            entry = entries.get(key)
            if entry is not None and entry[1] >= now:  # live: not yet expired
                read = cumulative[position]
                entries[key] = (read, now + self.ttl_s)
                break
        entries[prefix_keys[-1]] = (total, now + self.ttl_s)
        return read, total - read
