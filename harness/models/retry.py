"""Retries of transient provider failures: exponential backoff with jitter, bounded in count and time.

Rate limits, server errors, timeouts and dropped connections are retried; anything else (a bad
request, a context-window error, an authentication failure) is raised at once. When the bounds
are spent the last error is raised, and the run it belongs to ends `error` with it recorded as
`transient` (an outage, not a result: `--resume` reruns it).
"""
from __future__ import annotations

import functools
import random
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from harness.core.config import require

T = TypeVar("T")


@functools.cache
def retryable_errors() -> tuple[type[BaseException], ...]:
    """The transient failures, as litellm maps them and as openai, httpx or the socket layer raise them
    unmapped; imported at the first check, so reading a retry policy needs none of those libraries."""
    import harness  # noqa: F401  (offline environment before litellm loads)
    import httpx
    import litellm
    import openai

    return (
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        litellm.Timeout,
        litellm.APIConnectionError,
        openai.RateLimitError,
        openai.InternalServerError,
        openai.APIConnectionError,  # APITimeoutError included
        httpx.TransportError,  # timeouts, refused and dropped connections
        ConnectionError,
        TimeoutError,
    )


@dataclass(frozen=True)
class RetryPolicy:
    """How a profile retries. Delay before retry n (1-based): min(max_delay_s, initial_delay_s *
    multiplier**(n-1)), scaled down by up to `jitter` (a fraction) at random; no retry starts once
    max_total_s would be passed."""

    max_retries: int = 6
    initial_delay_s: float = 1.0
    multiplier: float = 2.0
    max_delay_s: float = 30.0
    max_total_s: float = 300.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        require(self.max_retries >= 0, f"max_retries must be 0 or more, got {self.max_retries}")
        require(self.initial_delay_s >= 0, f"initial_delay_s must be 0 or more, got {self.initial_delay_s}")
        require(self.multiplier >= 1, f"multiplier must be at least 1, got {self.multiplier}")
        require(self.max_delay_s >= self.initial_delay_s,
                f"max_delay_s must be at least initial_delay_s, got {self.max_delay_s}")
        require(self.max_total_s >= 0, f"max_total_s must be 0 or more, got {self.max_total_s}")
        require(0 <= self.jitter <= 1, f"jitter must be in [0, 1], got {self.jitter}")

    def delay(self, retry: int, rng: random.Random) -> float:
        base = min(self.max_delay_s, self.initial_delay_s * self.multiplier ** (retry - 1))
        return base * (1 - self.jitter * rng.random())


def is_retryable(error: BaseException) -> bool:
    """A transient failure: a rate limit, a server error, a timeout or a transport failure; raised after
    the retries, it is an outage of the provider, not an outcome of the run."""
    return isinstance(error, retryable_errors())


RetryListener = Callable[[int, float, BaseException], None]


def call_with_retries(call: Callable[[], T], policy: RetryPolicy, *, rng: random.Random,
                      on_retry: RetryListener | None = None, sleep: Callable[[float], None] = time.sleep) -> T:
    """Run `call`, retrying transient failures within the policy; `on_retry(n, delay_s, error)` is
    told of each retry before its wait."""
    started = time.monotonic()
    retry = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if not is_retryable(exc) or retry >= policy.max_retries:
                raise
            retry += 1
            delay = policy.delay(retry, rng)
            if time.monotonic() - started + delay > policy.max_total_s:
                raise
            if on_retry is not None:
                on_retry(retry, delay, exc)
            sleep(delay)
