"""Helpers for the seed-000 tests: a run context without a runner, and a run with any environment."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import api
from harness.conversation.context import RunContext
from harness.models.profiles import MAIN_PROFILE
from harness.conversation.events import EventLog
from harness.models.llm import LLMClient, LLMResult
from harness.models.usage import Usage
from harness.models.profiles import build_profiles
from harness.run.runner import Cell, _loop, crash_termination
from harness.conversation.view import fold
from strategies import StrategySpec, build_strategy
from tasks.base import ToolCall
from tasks.suites import load_tasks

SYSTEM = {"role": "system", "content": "You are an agent."}


def context(profiles: dict[str, Any] | None = None, **main: Any) -> RunContext:
    """A RunContext over an in-memory log whose view holds the system prompt and one user message."""
    data = profiles or {"main": {"model": "mock/agent", **main}, "summary": {"model": "mock/summarizer"}}
    ctx = RunContext(EventLog(), build_profiles(data), run_id="test", seed=0)
    ctx.add_message(SYSTEM, origin="task")
    ctx.add_message({"role": "user", "content": "Do the task."}, origin="user")
    return ctx


def success(ctx: RunContext, strategy: Any, message: dict[str, Any], input_tokens: int | None) -> dict[str, Any]:
    """Record a successful main request with its reply (and its typed action), as the runner does, and tell the
    strategy."""
    result = LLMResult(message, Usage(input_tokens=input_tokens), None, None, 0.0)
    calls = [ToolCall.from_message(raw) for raw in message.get("tool_calls") or []]
    event = ctx.record_response({"profile": MAIN_PROFILE}, result, payload=strategy.action_payload(calls))
    strategy.after_response(ctx, result)
    return event


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def run_environment(tmp_path: Path, environment: Any, strategy: str, config: dict[str, Any] | None = None,
                    task_id: str = "chained_lookup-3", **profile_options: Any) -> tuple[str, str | None, list[dict]]:
    """Run one environment (possibly a test subclass) under a strategy with mock profiles; return
    (termination, error, events)."""
    task = next(t for t in load_tasks("default") if t.task_id == task_id)
    extra = profile_options.pop("extra", None)
    profiles = api.mock_profiles(extra=extra, **profile_options)
    spec = StrategySpec(strategy, config or {})
    cell = Cell(task=task, strategy=spec, seed=0, profiles=profiles, events_dir=str(tmp_path))
    log = EventLog(tmp_path / "events.jsonl")
    built = build_profiles(profiles)
    ctx = RunContext(log, built, run_id=cell.run_id, seed=0)
    main = LLMClient(built["main"], session=cell.run_id, seed=0)
    try:
        termination, error = _loop(cell, ctx, main, environment, build_strategy(spec))
    except Exception as exc:  # as run_cell: a strategy's error or give-up ends the run
        termination, error = crash_termination(exc), f"{type(exc).__name__}: {exc}"
    finally:
        log.close()
        main.end_session()
        ctx.close()
    return termination, error, log.events


def view_after(events: list[dict], event_id: int) -> list[dict]:
    """The messages of the view right after event `event_id`, folded from the log."""
    view = fold(events[: event_id + 1])
    return [{"id": i, **view.message(i)} for i in view.ids]
