"""Build a run's context by hand (no model call) to test strategies on exact histories."""
from __future__ import annotations

import json
from typing import Any

from harness import api
from harness.conversation.context import RunContext
from harness.conversation.events import EventLog
from harness.models.profiles import build_profiles
from harness.conversation.view import fold

SYSTEM = "You are a test agent."


def make_ctx(window: int = 200_000) -> RunContext:
    ctx = RunContext(EventLog(), build_profiles(api.mock_profiles(window=window)), run_id="test", seed=0)
    ctx.add_message({"role": "system", "content": SYSTEM}, origin="task")
    return ctx


def user(ctx: RunContext, text: str) -> int:
    """A genuine user prompt: a new turn begins."""
    ctx.turn_start = True
    return ctx.add_message({"role": "user", "content": text}, origin="user")["id"]


def exchange(ctx: RunContext, name: str, args: dict[str, Any], result: str) -> tuple[int, int]:
    """One assistant tool call and its result; returns (call message id, result message id)."""
    call_id = f"call_{len(ctx.log)}"
    call = ctx.add_message({"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]},
        origin="agent")["id"]
    result_id = ctx.add_message({"role": "tool", "tool_call_id": call_id, "name": name, "content": result},
                                origin="tool")["id"]
    ctx.turn_start = False
    return call, result_id


def words(count: int, tag: str = "w") -> str:
    """Text of about `count` tokens, distinct per tag."""
    return tag + " " + " ".join(f"w{i}" for i in range(count // 2))


def pairing_intact(ctx: RunContext) -> bool:
    """Every tool result in the view has its call in the view before it, and every call its result."""
    seen_calls: set[str] = set()
    answered: set[str] = set()
    for message in ctx.view.to_messages():
        for call in message.get("tool_calls") or ():
            seen_calls.add(call["id"])
        if message.get("role") == "tool":
            if message["tool_call_id"] not in seen_calls:
                return False
            answered.add(message["tool_call_id"])
    return seen_calls == answered


def replays(ctx: RunContext) -> bool:
    """The log alone rebuilds the live view."""
    return fold(ctx.log.events).to_messages() == ctx.view.to_messages()
