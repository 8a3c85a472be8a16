"""OpenAI chat messages: the shape most agent logs already have (and the one `Trace` uses).

A file holds one of:
* a JSON list of messages: one trace, named after the file;
* a JSON list of conversations, each a list of messages or an object with `messages`;
* a JSON object with `messages` (one trace), or JSONL with one such object per line.
A conversation object may carry `tools` (or legacy `functions`), `model`, and an id in `id`,
`task_id` or `conversation_id`; without one a trace is named `<file stem>-<n>` (n from 1: the
line of a JSONL file, the position in a JSON list).

Messages: `tool_calls` and `tool` results; the legacy `function_call` / `function` role become a
tool call (id `function_call_<index>`) and its result; `developer` becomes `system`; content given
as a list of parts joins its text parts with a newline, any other part (image, audio, file)
becomes `[<type> part]`. A `usage` object on an assistant message (a saved response's
`prompt_tokens` / `completion_tokens` / `prompt_tokens_details.cached_tokens`, or the Responses
API's `input_tokens` / `output_tokens`) is kept as that message's recorded usage.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.traces import Message, Trace, TraceError, check_trace
from harness.traces.anthropic_messages import claims as anthropic_claims
from harness.traces.records import Fail, load_json_records, messages_with_errors, model_name, record_id

FORMAT = "openai"
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
TEXT_PARTS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal"}


def _is_messages(value: Any) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(m, dict) and m.get("role") in ROLES for m in value))


def _conversation(record: Any) -> bool:
    """Whether one record (a message list or an object with `messages`) is OpenAI chat, not Anthropic."""
    messages = record.get("messages") if isinstance(record, dict) else record
    return _is_messages(messages) and not anthropic_claims(record)


def detect(path: Path, head: Any) -> bool:
    """A message list, a list of conversations, or an object / JSONL record with `messages`."""
    if isinstance(head, list) and head and isinstance(head[0], (list, dict)) and "role" not in head[0]:
        return _conversation(head[0])
    return _conversation(head)


def read(path: Path) -> list[Trace]:
    """Every conversation in the file, each checked (TraceError names file, trace, message)."""
    path = Path(path)
    traces = []
    for default, record in load_json_records(path):
        trace_id = record_id(record, default)
        messages = record.get("messages") if isinstance(record, dict) else record
        if not isinstance(messages, list):
            raise TraceError(path, "a conversation is a list of messages or an object with a `messages` list",
                             trace=trace_id)
        if anthropic_claims(record):
            raise TraceError(path, "this conversation is Anthropic Messages (system separate, tool_use blocks): "
                             "use --format anthropic", trace=trace_id)
        converted, usage = convert_messages(messages, path, trace_id)
        traces.append(check_trace(Trace(
            trace_id=trace_id, source_format=FORMAT, path=str(path), messages=converted,
            tools=_tools(record if isinstance(record, dict) else {}, path, trace_id), usage=usage,
            model=model_name(record))))
    return traces


def convert_messages(raw: list[Any], path: Path | str, trace_id: str) -> tuple[list[Message], dict[int, dict]]:
    """OpenAI-shaped messages (legacy forms included) as `Trace` messages, with recorded usage.
    Shared with the formats whose trajectories are OpenAI messages (tau-bench)."""
    messages: list[Message] = []
    usage: dict[int, dict] = {}
    legacy_open: list[tuple[str, str]] = []  # (call id, function name) of unanswered function_calls
    for index, message, fail in messages_with_errors(raw, path, trace_id, ROLES):
        role = message["role"]
        content = content_text(message.get("content"), fail)
        if role == "assistant":
            out: Message = {"role": "assistant", "content": content if content is not None else message.get("refusal")}
            calls = [_tool_call(call, fail) for call in message.get("tool_calls") or []]
            if message.get("function_call"):
                legacy = _legacy_call(message["function_call"], f"function_call_{index}", fail)
                legacy_open.append((legacy["id"], legacy["function"]["name"]))
                calls.append(legacy)
            if calls:
                out["tool_calls"] = calls
            recorded = _usage(message.get("usage"))
            if recorded:
                usage[index] = recorded
        elif role == "function":
            out = {"role": "tool", "tool_call_id": _answer_legacy(legacy_open, message.get("name"), fail),
                   "name": message.get("name") or "", "content": content or ""}
        elif role == "tool":
            out = {"role": "tool", "tool_call_id": message.get("tool_call_id"),
                   "name": message.get("name") or _call_name(messages, message.get("tool_call_id")),
                   "content": content or ""}
        else:
            out = {"role": "system" if role == "developer" else role, "content": content or ""}
        messages.append(out)
    return messages, usage


def content_text(content: Any, fail: Fail) -> str | None:
    """A string, None, or a list of parts joined: text parts' text, others `[<type> part]`."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise fail(f"content must be a string or a list of parts, got {type(content).__name__}")
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str):
            raise fail("a content part is an object with a `type`")
        field = TEXT_PARTS.get(kind)
        texts.append(str(part.get(field) or "") if field else f"[{kind} part]")
    return "\n".join(texts)


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments as the JSON string `Trace` holds (logs that parsed them keep an object)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _tool_call(call: Any, fail: Fail) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not (isinstance(function, dict) and isinstance(call.get("id"), str) and call["id"]
            and isinstance(function.get("name"), str) and function["name"]):
        raise fail("a tool call needs an id and a function name")
    if function.get("arguments") is None:
        raise fail(f"tool call {call['id']!r} has no arguments")
    return {"id": call["id"], "type": "function",
            "function": {"name": function["name"], "arguments": arguments_text(function["arguments"])}}


def _legacy_call(call: Any, call_id: str, fail: Fail) -> dict[str, Any]:
    if not (isinstance(call, dict) and isinstance(call.get("name"), str) and call["name"]):
        raise fail("a function_call needs a name")
    return {"id": call_id, "type": "function",
            "function": {"name": call["name"], "arguments": arguments_text(call.get("arguments") or "{}")}}


def _answer_legacy(open_calls: list[tuple[str, str]], name: Any, fail: Fail) -> str:
    """The id of the latest unanswered function_call of that name (the legacy API pairs by name)."""
    for position in range(len(open_calls) - 1, -1, -1):
        if open_calls[position][1] == name:
            return open_calls.pop(position)[0]
    raise fail(f"function result {name!r} answers no earlier function_call")


def _call_name(messages: list[Message], call_id: Any) -> str:
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            if call["id"] == call_id:
                return call["function"]["name"]
    return ""


def _usage(usage: Any) -> dict[str, int | None] | None:
    """A saved response's usage (Chat Completions or Responses names) in `Trace.usage` terms."""
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
    if not isinstance(prompt, int):
        return None
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
    return {"input_tokens": prompt, "cached_tokens": details.get("cached_tokens"),
            "cache_write_tokens": None,
            "output_tokens": usage.get("completion_tokens", usage.get("output_tokens"))}


def _tools(record: dict[str, Any], path: Path, trace_id: str) -> list[dict[str, Any]]:
    """`tools` as recorded, or legacy `functions` wrapped as function tools."""
    tools = record.get("tools")
    if tools is None and isinstance(record.get("functions"), list):
        tools = [{"type": "function", "function": f} for f in record["functions"]]
    if tools is None:
        return []
    if not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise TraceError(path, "`tools` must be a list of tool schemas", trace=trace_id)
    return tools
