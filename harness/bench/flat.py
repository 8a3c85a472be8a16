"""The flat figure: harness time per request with a ~400k-token context divided by that with a
~10k-token context, both of the same number of messages. Harness time per request is the
CPU time (every thread of the process) of one runner step with the mock: build the view
and its hash, send it through litellm to the mock provider (window check, prefix cache,
simulated agent reply, usage), log the llm_call, the reply and a tool result of ~200 tokens
(the same new content at both sizes); its one-time tokenization is done before the clock
starts. Median of 20 steps; each size is measured in 3 fresh sessions and its lowest median taken.
Goal <= 1.5. The same with the message count growing too (10k tokens in 20 messages vs
400k in 400) is printed for information: a request still checks each message's identity.
"""
from __future__ import annotations

import statistics
import tempfile

from harness.bench import common
from harness.bench.common import BenchOptions, Figure
from harness.bench.session import Session

FLAT_REPEATS = 3  # fresh sessions per context size; the lowest median is taken


def figures(options: BenchOptions) -> list[Figure]:
    return flat()


def per_request_seconds(tokens: int, messages: int, steps: int = 20, warm: int = 5) -> tuple[float, int]:
    """Median harness CPU seconds per request at this context size, and the context's tokens mid-way."""
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(tmp, tokens, messages, steps + warm)
        times = []
        for index in range(steps + warm):
            if index == warm + steps // 2:
                size = session.ctx.prompt_tokens_estimate()
            times.append(session.step(index))
        session.close()
    return statistics.median(times[warm:]), size


def _best_per_request_seconds(tokens: int, messages: int) -> tuple[float, int]:
    """The lowest of FLAT_REPEATS medians (fresh sessions): a noisy burst of the host only adds time."""
    return min(per_request_seconds(tokens, messages) for _ in range(FLAT_REPEATS))


def flat() -> list[Figure]:
    common.warm_up()
    small, small_size = _best_per_request_seconds(10_000, 200)
    big, big_size = _best_per_request_seconds(400_000, 200)
    few, few_size = _best_per_request_seconds(10_000, 20)
    many, many_size = _best_per_request_seconds(400_000, 400)
    return [
        Figure("flat per-request (200 messages)", big / small, 1.5,
               note=f"{big * 1000:.2f}ms at {big_size:,} tokens / {small * 1000:.2f}ms at {small_size:,} tokens"),
        Figure("  info: 20 -> 400 messages", many / few, 1.5,
               note=f"{many * 1000:.2f}ms at {many_size:,} tokens / {few * 1000:.2f}ms at {few_size:,} tokens "
                    "(identity checks over the message list)"),
    ]
