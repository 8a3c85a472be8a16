"""The adapters figure: per installed adapter (the real libraries, strategies/adapters/), the CPU of its own hooks per
request minus the library's own time in them (`library_cpu_s`), on a conversation of 400 messages over one
of 40 (the flat figure's sessions, ~10k tokens, configs under which the library looks but does not act).
Goal <= 1.5: converting the view costs O(new messages). The note gives the library's time and the
native strategy's it mirrors.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from typing import Any

from harness.bench import common
from harness.bench.common import BenchOptions, Figure
from harness.bench.flat import FLAT_REPEATS
from harness.bench.session import Session


def figures(options: BenchOptions) -> list[Figure]:
    return adapters()


# The adapters that convert the view on every request, each with a config under which the library
# looks but does not act at these sizes (so the figure times conversion, not compaction), and the
# native strategy it mirrors (its CPU per request is printed beside).
ADAPTER_BENCH: dict[str, tuple[dict[str, Any], str]] = {
    "pai.tiered_compaction": ({}, "compaction_ladder"),
    "inspect.compaction_edit": ({}, "clear_tool_uses"),
    "inspect.compaction_trim": ({}, "compaction_ladder"),
    "inspect.compaction_summary": ({}, "llm_summarizing"),
    "openhands.llm_summarizing": ({"max_size": 100_000}, "llm_summarizing"),
    "strands.sliding_window": ({"per_turn": True, "window_size": 100_000}, "compaction_ladder"),
    "strands.summarizing": ({}, "llm_summarizing"),
    "langchain.summarization": ({}, "llm_summarizing"),
    "langchain.clear_tool_uses": ({}, "clear_tool_uses"),
}


def _strategy_per_request(name: str, config: dict[str, Any], messages: int, steps: int = 20,
                          warm: int = 5) -> tuple[float, float]:
    """Median CPU seconds per request of a strategy's own hooks (before_request and after_response)
    on a conversation of `messages` messages, and of the library's share of them (library_cpu_s)."""
    from strategies import StrategySpec, build_strategy

    with tempfile.TemporaryDirectory() as tmp:
        session = Session(tmp, 10_000, messages, steps + warm)
        ctx = session.ctx
        strategy = build_strategy(StrategySpec(name, config))
        strategy.on_run_start(ctx)
        own, library = [], []
        for index in range(steps + warm):
            started, inside = time.thread_time(), ctx.library_cpu_s
            strategy.before_request(ctx)
            hooks = time.thread_time() - started
            session.step(index)
            started = time.thread_time()
            strategy.after_response(ctx, _last_result(ctx))
            hooks += time.thread_time() - started
            spent = ctx.library_cpu_s - inside
            own.append(hooks - spent)
            library.append(spent)
        session.close()
    return statistics.median(own[warm:]), statistics.median(library[warm:])


def _last_result(ctx: Any) -> Any:
    """The LLMResult of the request just made, as after_response receives it."""
    from harness.models.llm import LLMResult

    return LLMResult(ctx.view.message(ctx.last_message_id("agent")), ctx.last_usage, None, None, 0.0)


def adapters() -> list[Figure]:
    """Per installed adapter: its own CPU per request at 400 messages over that at 40 (goal <= 1.5: the
    conversion is O(new messages)); the note gives its own and the library's time per request, and the
    native strategy's it mirrors, at 400 messages."""
    from strategies import strategy_class

    common.warm_up()
    figures = []
    for name, (config, native) in ADAPTER_BENCH.items():
        library = strategy_class(name).library
        if library is None or not library.available():
            continue
        few = min(_strategy_per_request(name, config, 40)[0] for _ in range(FLAT_REPEATS))
        many, inside = min(_strategy_per_request(name, config, 400) for _ in range(FLAT_REPEATS))
        mirror = min(_strategy_per_request(native, {}, 400)[0] for _ in range(FLAT_REPEATS))
        figures.append(Figure(f"adapter {name} own cost 40 -> 400 messages", many / max(few, 1e-9), 1.5,
                              note=f"own {many * 1000:.3f}ms at 400 messages, {few * 1000:.3f}ms at 40; "
                                   f"{library.label} itself {inside * 1000:.3f}ms; native {native} "
                                   f"{mirror * 1000:.3f}ms"))
    return figures
