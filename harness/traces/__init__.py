"""Recorded agent trajectories ("traces"), read from the formats teams already have.

Each format is one module in this package exposing:

    FORMAT: str                                   # the name users pass to --format, and a row's `family`
    def detect(path: Path, head: Any) -> bool     # whether a file holds this format (head: parsed JSON
                                                  # of a .json file, the first JSONL record, or None)
    def read(path: Path) -> list[Trace]           # every trace in the file, or TraceError

`load_traces(paths, fmt)` finds each file's format (or uses the one given) and returns the traces.
Every format becomes the same plain data (`Trace`): OpenAI-style chat messages, so the replay
(harness.trace_replay) knows no format and a format knows nothing of the replay.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import ConfigError

Message = dict[str, Any]


class TraceError(ConfigError):
    """A trace that cannot be read: names the file, the trace and the message index (exit 2)."""

    def __init__(self, path: Path | str, problem: str, *, trace: str | None = None, index: int | None = None):
        where = str(path)
        if trace is not None:
            where += f", trace {trace!r}"
        if index is not None:
            where += f", message {index}"
        super().__init__(f"{where}: {problem}")


@dataclass
class Trace:
    """One recorded trajectory as OpenAI chat messages.

    `messages`: system / user / assistant / tool messages in recorded order. An assistant message
    has `content` (str or None) and optionally `tool_calls` ([{id, type: "function", function:
    {name, arguments: JSON string}}]); a tool message has `tool_call_id`, `name` and `content` (str).
    Content is always a string (formats with content blocks join their text parts). Consecutive
    assistant messages that a format splits are kept as recorded; the replay treats each assistant
    message as one model response.
    `usage`: recorded usage per assistant message, keyed by that message's index in `messages`
    ({"input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens"}: ints or None), where the
    format records it (Inspect model events, mini-swe-agent stats, ctxbench logs); empty otherwise.
    `recorded_input_tokens`: the trace's total recorded input tokens over every model call, where
    the format records them (summed from per-call usage, or a total such as SWE-agent's
    `tokens_sent`, which counts calls that left no message too), else None.
    `outcome`: the recorded result if any (tau-bench `reward`, SWE-agent exit status, Inspect score).
    """

    trace_id: str
    source_format: str
    path: str
    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)  # OpenAI function-tool schemas, when recorded
    usage: dict[int, dict[str, int | None]] = field(default_factory=dict)
    recorded_input_tokens: int | None = None
    outcome: dict[str, Any] = field(default_factory=dict)
    model: str | None = None  # the model that recorded it, when known


ROLES = ("system", "user", "assistant", "tool")


def check_trace(trace: Trace) -> Trace:
    """Refuse what no replay can follow, naming file, trace and message index (TraceError)."""
    if not trace.messages:
        raise TraceError(trace.path, "the trace holds no messages", trace=trace.trace_id)
    if not any(m.get("role") == "assistant" for m in trace.messages):
        raise TraceError(trace.path, "the trace holds no assistant message to replay", trace=trace.trace_id)
    open_calls: set[str] = set()
    for index, message in enumerate(trace.messages):
        def bad(problem: str) -> TraceError:
            return TraceError(trace.path, problem, trace=trace.trace_id, index=index)

        role = message.get("role")
        if role not in ROLES:
            raise bad(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        content = message.get("content")
        if not (isinstance(content, str) or (content is None and role == "assistant")):
            raise bad(f"content must be a string, got {type(content).__name__}")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if not (isinstance(function, dict) and isinstance(call.get("id"), str) and call["id"]
                        and isinstance(function.get("name"), str) and isinstance(function.get("arguments"), str)):
                    raise bad("a tool call needs an id, a function name and arguments as a string")
                open_calls.add(call["id"])
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                raise bad(f"tool result {call_id!r} answers no earlier tool call")
    return trace
