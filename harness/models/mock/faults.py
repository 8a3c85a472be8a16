"""Seeded fault injection for the mock provider: what real providers do to a benchmark run.

A fault is drawn per request from the run seed, the session (the run), the request's index within
that session and the attempt (0 first, then 1 for its first retry, ...), so a retry can succeed and a
run meets the same faults every time, in process or over HTTP: the client tells its index and attempt
(harness.models.llm's X-Ctxbench-Request and X-Ctxbench-Attempt headers), so a restarted serve-mock draws the
same faults as the one before it. A client that tells neither (a plain OpenAI client)
gets the session's own count of the requests it received as the index, with attempt 0.
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any

import litellm

from harness.core.config import require
from harness.core.tokens import stable_hash

ERROR_FAULTS = ("rate_limit", "server_error", "timeout")


@dataclass(frozen=True)
class Faults:
    """Probabilities per request. The three errors exclude each other; malformed_tool_args
    garbles the arguments of a reply's tool calls (the request itself succeeds)."""

    rate_limit: float = 0.0
    server_error: float = 0.0
    timeout: float = 0.0
    malformed_tool_args: float = 0.0

    def __post_init__(self) -> None:
        for name in (*ERROR_FAULTS, "malformed_tool_args"):
            value = getattr(self, name)
            require(0.0 <= value <= 1.0, f"{name} must be a probability in [0, 1], got {value}")
        total = sum(getattr(self, name) for name in ERROR_FAULTS)
        require(total <= 1.0, f"rate_limit + server_error + timeout must be at most 1, got {total:g}")

    @functools.cached_property
    def active(self) -> bool:
        """Whether any fault can be drawn: asked of every request, worked out once (ours)."""
        return any((self.rate_limit, self.server_error, self.timeout, self.malformed_tool_args))


@dataclass(frozen=True)
class Draw:
    """The faults of one request: an error to raise instead of replying, and/or garbled arguments."""

    error: str | None
    malformed: bool


NO_FAULT = Draw(None, False)  # read-only: one for every request of a session without faults


def draw(faults: Faults, *, seed: int, session: str, index: int, attempt: int = 0) -> Draw:
    """The faults of attempt `attempt` of request `index` of `session`."""
    if not faults.active:
        return NO_FAULT
    rng = random.Random(stable_hash(["fault", seed, session, index, attempt]))
    roll = rng.random()
    error = None
    for name in ERROR_FAULTS:
        rate = getattr(faults, name)
        if roll < rate:
            error = name
            break
        roll -= rate
    return Draw(error, rng.random() < faults.malformed_tool_args)


def raise_error(kind: str, model: str) -> None:
    """Raise the litellm exception a real provider's fault of this kind maps to."""
    message = f"mock fault injection: {kind.replace('_', ' ')}"
    if kind == "rate_limit":
        raise litellm.RateLimitError(message=message, llm_provider="mock", model=model)
    if kind == "server_error":
        raise litellm.InternalServerError(message=message, llm_provider="mock", model=model)
    raise litellm.Timeout(message=message, model=model, llm_provider="mock")


def garble_tool_calls(reply: dict[str, Any]) -> dict[str, Any]:
    """The reply with each tool call's arguments cut in half: no longer valid JSON."""
    calls = reply.get("tool_calls")
    if not calls:
        return reply
    garbled = []
    for call in calls:
        arguments = call["function"]["arguments"] or "{}"
        garbled.append({**call, "function": {**call["function"], "arguments": arguments[: len(arguments) // 2]}})
    return {**reply, "tool_calls": garbled}
