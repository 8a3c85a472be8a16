"""Differential tests: compaction_ladder's steps against pydantic-ai-harness's own tiers on the same
crafted histories, wherever docs/conformance.md says the rule comes from the library.

Each step is compared alone, with the seed's own additions switched off where they would filter
(clear_tool_max_tokens 0, min_clear_tokens 0) and sizes far from either side's token estimate (the
library estimates characters / 4, ctxbench counts with tiktoken), so only the library's rule decides:
ClearToolResults.compact (which results are cleared, the placeholder), ClampOversizedMessages.compact
(which parts are clamped, the kept head and tail, the marker), SlidingWindowCompaction.compact (which
messages stay, the first user request put back).
"""
from __future__ import annotations

import asyncio
import json
import random

import pytest

from adapter_helpers import requires
from reset_helpers import context, tool_call
from strategies.adapters import PYDANTIC_AI_HARNESS
from strategies.compaction_ladder import CompactionLadder
from tests.strategies.test_adapter_pydantic_ai import flat_library, pai_messages

pytestmark = requires(PYDANTIC_AI_HARNESS)
SEEDS = range(8)


def crafted(seed: int, exchanges: int = 14) -> list[dict]:
    """A history after the system prompt and first user message: tool steps with 1-3 parallel calls, some
    huge results and runaway texts or arguments, user turns between; it ends with a user prompt, so every
    message before is settled (the seed's turn-in-progress rule is not what is compared here)."""
    rng = random.Random(seed)
    chat: list[dict] = []
    for n in range(exchanges):
        calls = [tool_call(f"c{n}-{k}", "read_file", {"path": f"f{n}-{k}", "note": "z" * rng.choice([5, 30_000])})
                 for k in range(rng.randint(1, 3))]
        text = rng.choice(["", f"step {n}", "w" * 40_000])
        chat.append({"role": "assistant", "content": text, "tool_calls": calls})
        chat.extend({"role": "tool", "tool_call_id": c["id"], "name": "read_file",
                     "content": f"{n} " + "x" * rng.choice([200, 8_000, 60_000])} for c in calls)
        if rng.random() < 0.25:
            chat.append({"role": "assistant", "content": f"answer {n}"})
            chat.append({"role": "user", "content": f"next question {n}"})
    chat.append({"role": "user", "content": "and now?"})
    return chat


def ladder_view(chat: list[dict]):
    ctx = context()
    for message in chat:
        origin = {"assistant": "agent", "tool": "tool"}.get(message["role"], "user")
        ctx.add_message(message, origin=origin)
    return ctx


def rows_of_view(ctx) -> list[tuple]:
    return [row(m) for m in ctx.view.to_messages()]


def row(message: dict) -> tuple:
    """(role, text, (call id, arguments as JSON data)...): the library re-serializes arguments it keeps."""
    calls = tuple((c["id"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or ())
    return message["role"], message.get("content") or None, calls


def library_rows(tier, ctx) -> list[tuple]:
    """The library tier's answer for the same messages, as rows (its own types converted independently)."""
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.tools import RunContext
    from pydantic_ai.usage import RunUsage

    history = pai_messages(ctx.view.to_messages(), {})
    run = RunContext(deps=None, model=FunctionModel(lambda *_: None), usage=RunUsage(), messages=list(history))
    return flat_library(asyncio.run(tier.compact(list(history), run)))


def ladder(**compact) -> CompactionLadder:
    return CompactionLadder.from_config({"clear_tool_max_tokens": 0, "min_clear_tokens": 0, **compact})


@pytest.mark.parametrize("keep_pairs", [0, 2, 6, 40])
@pytest.mark.parametrize("seed", SEEDS)
def test_clear_clears_what_clear_tool_results_clears(seed, keep_pairs):
    """_clear_tool_results.py ClearToolResults.compact: every returned pair but the last keep_pairs,
    content replaced by its placeholder (keep_pairs above the pairs present clears none)."""
    from pydantic_ai_harness.compaction import ClearToolResults

    ctx = ladder_view(crafted(seed))
    expected = library_rows(ClearToolResults(max_tokens=1, keep_pairs=keep_pairs), ctx)
    ladder(clear_tool_keep_pairs=keep_pairs)._clear(ctx, 0, "test")
    assert rows_of_view(ctx) == expected


@pytest.mark.parametrize("seed", SEEDS)
def test_clamp_clamps_what_clamp_oversized_messages_clamps(seed):
    """_clamp_oversized_messages.py ClampOversizedMessages.compact: model-response text and tool-call
    arguments over the limit keep 2,000 + 2,000 characters around its marker; tool results and user
    messages are never clamped."""
    from pydantic_ai_harness.compaction import ClampOversizedMessages

    ctx = ladder_view(crafted(seed))
    expected = library_rows(ClampOversizedMessages(max_part_tokens=2_000), ctx)
    ladder()._clamp(ctx, 4_000, "test")  # the ladder's limit: half the pass's target
    assert rows_of_view(ctx) == expected
    assert any(r != row(m) for r, m in zip(expected, ladder_view(crafted(seed)).view.to_messages()))


@pytest.mark.parametrize("max_messages,keep", [(20, 8), (12, 5), (30, 20)])
@pytest.mark.parametrize("seed", SEEDS)
def test_window_keeps_what_sliding_window_compaction_keeps(seed, max_messages, keep):
    """_sliding_window_compaction.py SlidingWindowCompaction.compact: over max_messages (pydantic-ai
    messages), cut to the last keep_messages without splitting a tool call from its result, and put the
    first user request back in front."""
    from pydantic_ai_harness.compaction import SlidingWindowCompaction

    ctx = ladder_view(crafted(seed, exchanges=20))
    expected = library_rows(SlidingWindowCompaction(max_messages=max_messages, keep_messages=keep), ctx)
    strategy = ladder(window_max_messages=max_messages, window_keep_messages=keep)
    strategy._window(ctx, 10**9, "test")
    assert rows_of_view(ctx) == expected
    assert len(expected) < len(ladder_view(crafted(seed, exchanges=20)).view.ids)
