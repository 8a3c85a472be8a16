"""ctxbench's own event logs (results/<run>/events/<run_id>.jsonl.gz, or .jsonl as written before) as traces:
re-cost a run, mock or real, under another strategy, window or cache style without calling a model.

The trace is the run's conversation as it happened, in logged order: the task's system prompt, the
user's messages, the agent's responses (the main profile's replies) and the tool results. What a
strategy added (warnings, reset notices, summaries, placeholders) is left out: it was the strategy's,
not the conversation's. A tool result a strategy offloaded (ToolOutputLimits) is restored to its full
recorded content. Recorded usage: the main-profile `llm_call` logged just before each agent response.
The trace id is the task's id, the outcome the run's end (success, score, termination).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.core.errors import ReplayMismatch
from harness.conversation.events import event_log_run_id, read_events
from harness.traces import Trace, TraceError

FORMAT = "ctxbench"
CONVERSATION = {"task": "system", "user": "user", "agent": "assistant", "tool": "tool"}  # origin -> role kept
MAIN_PROFILE = "main"  # harness.models.profiles.MAIN_PROFILE (not imported: a format knows nothing of the runner)


def detect(path: Path, head: Any) -> bool:
    return (event_log_run_id(path) is not None and isinstance(head, dict) and head.get("type") == "run_start"
            and "run_id" in head and "tools_hash" in head)


def _message(event: dict[str, Any], full_results: dict[str, str]) -> dict[str, Any]:
    message = dict(event["message"])
    if message.get("role") == "tool" and message.get("tool_call_id") in full_results:
        message["content"] = full_results[message["tool_call_id"]]
    if message.get("role") == "assistant" and message.get("tool_calls"):
        message["tool_calls"] = [dict(call, function=dict(call.get("function") or {})) for call in message["tool_calls"]]
    return message


def read(path: Path) -> list[Trace]:
    try:
        events = read_events(path)
    except ReplayMismatch as exc:
        raise TraceError(path, str(exc).split(": ", 1)[-1]) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(path, f"cannot read: {exc}") from exc
    start = events[0] if events and events[0].get("type") == "run_start" else None
    if start is None:
        raise TraceError(path, "the first event is not a run_start: not a ctxbench event log")
    task = start.get("task") or {}
    trace_id = str(task.get("task_id") or start.get("run_id"))
    messages: list[dict[str, Any]] = []
    usage: dict[int, dict[str, int | None]] = {}
    full_results: dict[str, str] = {}  # tool_call_id -> the content a strategy offloaded
    last_call: dict[str, Any] | None = None  # the main llm_call logged just before, if ok
    outcome: dict[str, Any] = {}
    for event in events:
        kind = event.get("type")
        if kind == "llm_call":
            last_call = event if event.get("profile") == MAIN_PROFILE and event.get("ok") else None
            continue
        if kind == "tool_output_offloaded" and isinstance(event.get("content"), str):
            full_results[event.get("tool_call_id")] = event["content"]
        elif kind == "run_end":
            outcome = {key: event.get(key) for key in ("success", "score", "termination")}
        elif kind == "message" and event.get("origin") in CONVERSATION:
            message = event.get("message")
            if not isinstance(message, dict) or message.get("role") != CONVERSATION[event["origin"]]:
                raise TraceError(path, f"event {event.get('id')}: a {event.get('origin')} message must have role "
                                       f"{CONVERSATION[event['origin']]!r}", trace=trace_id, index=len(messages))
            if message["role"] == "assistant" and last_call is not None:
                recorded = last_call.get("usage") or {}
                usage[len(messages)] = {name: recorded.get(name)
                                        for name in ("input_tokens", "cached_tokens", "output_tokens")}
            messages.append(_message(event, full_results))
        last_call = None
    profiles = start.get("profiles") or {}
    model = (profiles.get(MAIN_PROFILE) or {}).get("model") if isinstance(profiles, dict) else None
    return [Trace(trace_id=trace_id, source_format=FORMAT, path=str(path), messages=messages,
                  tools=list(start.get("tools") or []), usage=usage, outcome=outcome, model=model)]
