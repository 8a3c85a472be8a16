"""The simulated clock of one run: model latency, tool durations and user delays, in seconds.

The clock belongs to the run (harness.run.runner advances it), not to a provider. Real sessions
spend most of their time outside the model: a test run takes minutes, a user answers after
minutes, and a provider's prompt cache (Anthropic's lives 5 minutes) expires meanwhile. So
every model request, tool call and user message advances the clock, each by a seeded draw,
and the clock's reading is sent with each request: the mock provider (in process, or
`serve-mock` over HTTP, where it travels in the CLOCK_HEADER, never in the messages) expires
its cache on it. A real provider keeps its own time; the clock then only feeds metrics, and a
real request advances it by its measured latency.

Draws are deterministic: a hash of the run's task, seed, the tool's name and how many calls of
that name came before, so the k-th `run_tests` of a task takes as long under every strategy.
Durations are log-uniform in a [low, high] range (tens of seconds to minutes spread evenly
over orders of magnitude). Every figure here is ours (no source states one), marked so.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Any, Sequence

from harness.core.config import require
from harness.core.fast_json import canonical_json
from harness.core.tokens import stable_digest

CLOCK_HEADER = "X-Ctxbench-Clock-S"  # the run's clock when a request is sent (request header)
LATENCY_HEADER = "X-Ctxbench-Latency-S"  # serve-mock's simulated latency of its answer (response header)

Range = tuple[float, float]


def simulated_latency_s(uncached_input: int, output: int) -> float:
    """Seconds a mock request takes on the simulated clock (ours: 1 s, plus prefill of uncached
    input at 10k tokens/s, plus decoding at 50 tokens/s)."""
    return 1.0 + uncached_input / 10_000 + output / 50


def draw_s(span: Range, *key: Any) -> float:
    """A log-uniform draw from `span` (seconds), fixed by `key`."""
    low, high = span
    if high <= low or low <= 0:
        return float(low)
    return _log_uniform(low, high, stable_digest(["clock", *key]))


def _log_uniform(low: float, high: float, digest: bytes) -> float:
    """The point of [low, high] (low < high) that a draw's hash picks, log-uniformly: by the hash's first 13 hex
    digits, read from its first 7 bytes with the last 4 bits dropped (ours: no hex text made)."""
    unit = (int.from_bytes(digest[:7], "big") >> 4) / 16 ** 13
    return low * math.exp(unit * math.log(high / low))


class _CountedDraws:
    """`draw_s(span, *key, n)` for n = 0, 1, 2, ... of one key, from the hash state of the key's canonical JSON
    made once: the JSON of ["clock", *key, n] is that of ["clock", *key] with ",n]" for its "]" (ours: a run draws
    one duration per tool call, and hashing the whole list each time was ~1% of its CPU)."""

    def __init__(self, key: Sequence[Any]):
        prefix = canonical_json(["clock", *key])
        self._state = blake2b(prefix[:-1] + b",", digest_size=12)

    def draw_s(self, span: Range, count: int) -> float:
        low, high = span
        if high <= low or low <= 0:
            return float(low)
        state = self._state.copy()
        state.update(b"%d]" % count)
        return _log_uniform(low, high, state.digest())


def _check_range(value: Any, where: str) -> Range:
    require(isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value),
            f"{where} must be [low, high] in seconds, got {value!r}")
    low, high = float(value[0]), float(value[1])
    require(0 <= low <= high, f"{where} must have 0 <= low <= high, got {value!r}")
    return low, high


def _check_scale(value: Any, where: str) -> float:
    require(isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0,
            f"{where} must be a number >= 0, got {value!r}")
    return float(value)


@dataclass
class ClockConfig:
    """How long tools and users take (`--clock`); the families' own tables are the defaults (ours).

    tool_scale / user_scale multiply every tool duration / user delay (0: they take no time); tool_durations
    overrides a tool's [low, high] seconds in every family;
    user_delay_s overrides every family's [low, high] seconds before a later user message.
    """

    tool_scale: float = 1.0
    user_scale: float = 1.0
    tool_durations: dict[str, Any] = field(default_factory=dict)
    user_delay_s: Any = None

    def __post_init__(self) -> None:
        self.tool_scale = _check_scale(self.tool_scale, "tool_scale")
        self.user_scale = _check_scale(self.user_scale, "user_scale")
        require(isinstance(self.tool_durations, dict), "tool_durations must map tool names to [low, high] seconds")
        self.tool_ranges = {str(name): _check_range(span, f"tool_durations.{name}")
                            for name, span in self.tool_durations.items()}
        self.user_range = None if self.user_delay_s is None else _check_range(self.user_delay_s, "user_delay_s")


class RunClock:
    """One run's simulated time and its parts (model requests, tools, users), in seconds."""

    def __init__(self, config: ClockConfig, key: Sequence[Any]):
        self.config = config
        self.key = list(key)  # the run's task and seed: what the draws depend on
        self.now_s = 0.0
        self._tools: Counter[str] = Counter()  # calls of each tool so far
        self._tool_draws: dict[str, _CountedDraws] = {}  # of each tool called so far
        self._users = 0  # later user messages so far

    def tool(self, name: str, family_range: Range) -> float:
        """Advance by one call of tool `name` (its family's [low, high] unless overridden); returns its seconds."""
        span = self.config.tool_ranges.get(name, family_range)
        draws = self._tool_draws.get(name)
        if draws is None:
            draws = self._tool_draws[name] = _CountedDraws([*self.key, "tool", name])
        seconds = draws.draw_s(span, self._tools[name]) * self.config.tool_scale
        self._tools[name] += 1
        self.now_s += seconds
        return seconds

    def user(self, family_range: Range) -> float:
        """Advance by the user's delay before a later message; returns its seconds."""
        span = self.config.user_range or family_range
        seconds = draw_s(span, *self.key, "user", self._users) * self.config.user_scale
        self._users += 1
        self.now_s += seconds
        return seconds

    def model(self, seconds: float) -> None:
        """Advance by a model request's duration (simulated by the mock, measured for a real provider)."""
        self.now_s += seconds
