"""Replaying a recorded session as its agent ran it, to check the simulated bill against the recorded one.

`ctxbench traces --calibrate` replays each trace under `none` with what the recorded agent had (ours, each a
default an explicit option overrides):
- the recorded model's provider's cache (the mock's cache style: Anthropic's for Claude, OpenAI's otherwise)
  and its list prices (litellm's cost map), so simulated and recorded costs use one price list;
- the cache breakpoints the recorded agent placed (`RECORDED_POLICIES`: Claude Code's own placement for its
  sessions; OpenAI's automatic caching with a conversation key for Codex's);
- a window no recorded request reaches (twice the largest), since the recorded session ran whole;
- its recorded clock and its own context resets (harness.traces.replay does both in every replay);
- a stand-in for what the log does not hold: coding agents' logs keep the conversation but not the system
  prompt or the tool schemas their requests began with. The first recorded request's input minus the
  simulated one is that unrecorded prefix; a system message of filler tokens as long stands in for it (its
  size is reported, so the first request matches by construction and the rest measure the conversation).
"""
from __future__ import annotations

import copy
from collections.abc import Collection
from typing import Any

from harness.core.errors import ConfigError
from harness.core.tokens import MESSAGE_OVERHEAD_TOKENS, count_message, count_tools
from harness.models.cache_policy import (CLAUDE_CODE_ONE_MESSAGE_FROM, MARKED_FAMILIES, OPENAI_BREAKPOINTS,
                                         provider_family)
from harness.models.mock import DEFAULT_MOCK_WINDOW
from harness.models.usage import Pricing
from harness.traces import Trace

# The cache policy of the agent that wrote each format's sessions (harness.models.cache_policy); Claude Code's
# options follow the session (recorded_policy).
RECORDED_POLICIES = {"claude-code": "claude-code", "codex": "auto"}
CALIBRATION_STRATEGY = "none"
# The options a user may set on the command line that calibration otherwise chooses per trace.
CHOSEN = ("cache_style", "price_model", "cache_policy", "window")
FILLER = " x"  # one token per repetition in litellm's bundled tokenizer (harness.core.tokens)


def check_strategies(labels: list[str]) -> None:
    """Calibration compares the recorded bill with the same requests: the recorded agent's, under `none`."""
    if labels != [CALIBRATION_STRATEGY]:
        raise ConfigError(f"--calibrate replays under {CALIBRATION_STRATEGY} alone (the recorded agent's own "
                          f"requests, to compare with what it was billed), got --strategies {','.join(labels)}")


def cache_style(model: str | None) -> str:
    """The mock's cache style imitating the recorded model's provider (Anthropic's for a model it cannot place)."""
    if model is None:
        return "anthropic"
    family = provider_family(model)
    if family in MARKED_FAMILIES:
        return "anthropic"
    return OPENAI_BREAKPOINTS if family == OPENAI_BREAKPOINTS else "openai"


def calibration_profiles(trace: Trace, profiles: dict[str, dict[str, Any]],
                         chosen: Collection[str] = ()) -> dict[str, dict[str, Any]]:
    """The profiles replaying `trace` as recorded; `chosen`: the options (CHOSEN) the user set, kept as given."""
    unknown = sorted(set(chosen) - set(CHOSEN))
    if unknown:
        raise ValueError(f"unknown calibration options {unknown}")
    profiles = copy.deepcopy(profiles)
    main = profiles["main"]
    mock = main.setdefault("mock", {})
    if "cache_style" not in chosen:
        mock["cache"] = cache_style(trace.model)
    if "price_model" not in chosen and trace.model and Pricing.for_model(trace.model) is not None:
        main["price_model"] = trace.model
    if "cache_policy" not in chosen and trace.source_format in RECORDED_POLICIES:
        main["cache_policy"] = recorded_policy(trace)
    if "window" not in chosen:
        largest = max((usage.get("input_tokens") or 0 for usage in trace.usage.values()), default=0)
        mock["window"] = max(mock.get("window") or DEFAULT_MOCK_WINDOW, 2 * largest)
    return profiles


def recorded_policy(trace: Trace) -> Any:
    """The recorded agent's placement, with the options its session shows: for Claude Code, the 1h TTL where its
    recorded writes used it (a subscriber's main thread), and two marked messages for versions before 2.1.59."""
    policy = RECORDED_POLICIES[trace.source_format]
    if policy != "claude-code":
        return policy
    options: dict[str, Any] = {"name": policy}
    if any(usage.get("cache_write_1h_tokens") for usage in trace.usage.values()):
        options["ttl"] = "1h"
    version = _version(trace.agent_version)
    if version is not None and version < CLAUDE_CODE_ONE_MESSAGE_FROM:
        options["messages"] = 2
    return options if len(options) > 1 else policy


def _version(text: str | None) -> tuple[int, ...] | None:
    """"2.1.38" -> (2, 1, 38); None for a version that is not dotted numbers."""
    parts = (text or "").split(".")
    return tuple(int(part) for part in parts) if all(part.isdigit() for part in parts) else None


def unrecorded_prefix(trace: Trace) -> int:
    """Tokens the first recorded request held beyond what the trace shows of it (0 if it held less, or if the
    trace records no usage): the system prompt and tool schemas a session log leaves out."""
    first = next((position for position in sorted(trace.usage) if trace.usage[position].get("input_tokens")), None)
    if first is None:
        return 0
    start = max((reset for reset in trace.resets if reset <= first), default=0)
    kept = [message for message in trace.messages[:start] if message["role"] == "system"] + trace.messages[start:first]
    shown = count_tools(trace.tools) + sum(count_message(message) for message in kept)
    return max(trace.usage[first]["input_tokens"] - shown, 0)


def filler_message(tokens: int) -> dict[str, Any] | None:
    """A system message counted as `tokens` tokens (None under the framing a message costs anyway)."""
    words = tokens - MESSAGE_OVERHEAD_TOKENS
    if words <= 0:
        return None
    return {"role": "system", "content": FILLER * words}
