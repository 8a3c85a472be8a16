"""OpenAI's prompt caching from the GPT-5.6 family on: which models cache this way, and the numbers and request
shapes OpenAI documents for it (docs/caching.md cites each).

Kept apart because the cache policies, the simulated provider and billing all ask the same question of a model
name, and must answer it alike. From GPT-5.6 on, a request may set `prompt_cache_options` (`mode`: `implicit`, one
breakpoint OpenAI places at the end of the newest eligible message plus the latest three explicit ones; `explicit`:
only the request's `prompt_cache_breakpoint` markers) and its writes cost 1.25x the input price. Earlier models
cache on their own, from 1,024 tokens in 128-token steps, and bill writes as plain input.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

STYLE = "openai-breakpoints"  # the caching family's name (cache policies), and the mock's cache style imitating it
FIRST_VERSION = (5, 6)  # the first GPT family with breakpoints and write prices
MODES = ("implicit", "explicit")  # prompt_cache_options.mode; OpenAI's default is implicit
TTL = "30m"  # prompt_cache_options.ttl: its only value, and the lifetime of every breakpoint a request writes
TTL_S = 1800.0
MAX_WRITTEN = 4  # breakpoints one request writes: the latest four explicit, or the implicit one and the latest three
MATCHED = 80  # the latest breakpoints of a conversation that a request's prefix is matched against
WRITE_PRICE_RATIO = 1.25  # a write's price over the uncached input price, where the cost map has none

# `gpt-N` or `gpt-N.M` (one digit N) at the start of the name, then its end or a suffix (`-sol`, a date
# `-2026-07-09`); an `ft:` fine-tune names its base model first. `gpt-4o` or `gpt-5-mini` carry no minor version
# here, and Azure's `gpt-35-turbo` (3.5) is no version 35.
_VERSION = re.compile(r"(?:ft:)?gpt-(\d)(?:\.(\d+))?(?=$|[-:])")


def takes_breakpoints(model: str) -> bool:
    """Whether `model` (a litellm name, with or without its `openai/` or `azure/` prefix) is of the GPT-5.6 family
    or later: as litellm's cost map says where its entry states it (`supports_prompt_cache_breakpoint`: an alias
    such as `gpt-sol-latest`), else by its name: `gpt-5.6`, `gpt-5.6-sol-2026-07-09`, `gpt-5.10`, `gpt-6`,
    `gpt-6.1-terra`; not `gpt-5.5`, `gpt-5`, `gpt-4o`, `gpt-35-turbo` or `o3`."""
    import litellm

    bare = model.rsplit("/", 1)[-1]
    for key in (model, bare):
        stated = (litellm.model_cost.get(key) or {}).get("supports_prompt_cache_breakpoint")
        if isinstance(stated, bool):
            return stated
    match = _VERSION.match(bare.lower())
    return match is not None and (int(match.group(1)), int(match.group(2) or 0)) >= FIRST_VERSION


def breakpoint_marker() -> dict[str, str]:
    """The marker on a content part: its TTL is the request's, so none is written (the SDK's PromptCacheBreakpoint)."""
    return {"mode": "explicit"}


def cache_options(mode: str) -> dict[str, str]:
    """The request's `prompt_cache_options` for `mode`."""
    return {"mode": mode, "ttl": TTL}


def can_carry_breakpoint(message: Mapping[str, Any]) -> bool:
    """Whether a message can end at a breakpoint: a system, user or tool message with content; an assistant's
    output is no block OpenAI takes a breakpoint on (litellm does not move one there), and an empty text part is
    refused. The newest such message is where the implicit breakpoint goes, in ctxbench's reading."""
    return message.get("role") != "assistant" and bool(message.get("content"))


def newest_eligible(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The index of the newest message that can carry a breakpoint (where the implicit one goes), or None."""
    return next((index for index in range(len(messages) - 1, -1, -1) if can_carry_breakpoint(messages[index])), None)
