"""Anthropic Messages: `{system, messages, tools}` requests as teams log them.

A file holds one such object (one trace), a JSON list of them, JSONL with one per line, or a bare
list of Anthropic messages. Content is a string or content blocks:
* `text` blocks join with a newline; `thinking` / `redacted_thinking` blocks are dropped (the API
  strips earlier turns' thinking from the context window, docs "context windows"); any other block
  (image, document, server tool blocks) becomes `[<type> block]`;
* assistant `tool_use` ({id, name, input}) -> a tool call with `input` as JSON arguments;
* user `tool_result` ({tool_use_id, content: str | blocks, is_error}) -> a `tool` message (named
  after its tool_use); a user message mixing results and other blocks gives the tool messages
  first, then one user message with the rest. `is_error` is not kept (OpenAI tool messages have
  no such flag; the text of the result is).
`system` (string or text blocks) becomes the first message; `tools` ({name, description,
input_schema}) become function tools. A `usage` on an assistant message (a saved response) is its
recorded usage: input = input_tokens + cache_read_input_tokens + cache_creation_input_tokens
(Anthropic's input_tokens excludes both), cached = cache reads, cache writes = cache creation, the
hour-long writes (`cache_creation.ephemeral_1h_input_tokens`) where recorded. The per-turn conversions
(assistant_message, user_messages, recorded_usage) serve the claude-code format too: its entries hold
Anthropic messages.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.traces import Message, Trace, TraceError, check_trace
from harness.traces.records import Fail, load_json_records, messages_with_errors, model_name, record_id

FORMAT = "anthropic"
ROLES = ("user", "assistant")
DROPPED = ("thinking", "redacted_thinking")
# Block types only Anthropic's API has: one of them (or a separate `system`) tells this format apart.
ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
                              "web_search_tool_result", "document", "search_result", "mcp_tool_use",
                              "mcp_tool_result"})


def claims(record: Any) -> bool:
    """Whether a conversation (an object with `messages`, or a message list) is Anthropic Messages:
    a separate `system` (OpenAI has none), or roles user/assistant only with an Anthropic-only block
    (tool_use, tool_result, thinking, ..., or an image with a `source`)."""
    messages = record.get("messages") if isinstance(record, dict) else record
    if isinstance(record, dict) and "system" in record and isinstance(messages, list):
        return True
    if not (isinstance(messages, list) and messages
            and all(isinstance(m, dict) and m.get("role") in ROLES for m in messages)):
        return False
    return any(_anthropic_block(block) for m in messages if isinstance(m.get("content"), list)
               for block in m["content"])


def _anthropic_block(block: Any) -> bool:
    return isinstance(block, dict) and (block.get("type") in ANTHROPIC_BLOCKS
                                        or (block.get("type") == "image" and "source" in block))


def detect(path: Path, head: Any) -> bool:
    """One request object, a JSONL record, a list of requests, or a bare Anthropic message list."""
    if isinstance(head, list) and head and isinstance(head[0], dict) and "messages" in head[0]:
        return claims(head[0])
    return claims(head)


def read(path: Path) -> list[Trace]:
    """Every conversation in the file as OpenAI-shaped traces (TraceError names file, trace, message)."""
    path = Path(path)
    traces = []
    for default, record in load_json_records(path):
        trace_id = record_id(record, default)
        meta = record if isinstance(record, dict) else {}
        messages = record.get("messages") if isinstance(record, dict) else record
        if not isinstance(messages, list):
            raise TraceError(path, "a conversation is an object with a `messages` list", trace=trace_id)
        system = _text(meta.get("system"), lambda problem: TraceError(path, f"system: {problem}", trace=trace_id))
        converted, usage = _convert(messages, path, trace_id, offset=1 if system else 0)
        if system:
            converted.insert(0, {"role": "system", "content": system})
        traces.append(check_trace(Trace(
            trace_id=trace_id, source_format=FORMAT, path=str(path), messages=converted,
            tools=_tools(meta.get("tools"), path, trace_id), usage=usage,
            model=model_name(record))))
    return traces


def _convert(raw: list[Any], path: Path, trace_id: str, offset: int) -> tuple[list[Message], dict[int, dict]]:
    """Anthropic messages as OpenAI messages; errors name the index in the file's `messages`."""
    messages: list[Message] = []
    usage: dict[int, dict] = {}
    names: dict[str, str] = {}  # tool_use id -> tool name, for the results that answer it
    for _, message, fail in messages_with_errors(raw, path, trace_id, ROLES):
        if message["role"] == "assistant":
            recorded = recorded_usage(message.get("usage"))
            if recorded:
                usage[offset + len(messages)] = recorded
            messages.append(assistant_message(message.get("content"), names, fail))
        else:
            messages.extend(user_messages(message.get("content"), names, fail))
    return messages, usage


def assistant_message(content: Any, names: dict[str, str], fail: Fail) -> Message:
    """An assistant turn's content (string or blocks) as one OpenAI assistant message; each tool_use's
    name is kept in `names` for the results that answer it."""
    blocks = _blocks(content, fail)
    calls = [_tool_call(block, names, fail) for block in blocks if block.get("type") == "tool_use"]
    out: Message = {"role": "assistant",
                    "content": _text([b for b in blocks if b.get("type") != "tool_use"], fail) or
                    (None if calls else "")}
    if calls:
        out["tool_calls"] = calls
    return out


def user_messages(content: Any, names: dict[str, str], fail: Fail) -> list[Message]:
    """A user turn's content as OpenAI messages: a `tool` message per tool_result (answering a tool_use in
    `names`), then one user message with the other blocks, if any (or with the empty content)."""
    blocks = _blocks(content, fail)
    messages: list[Message] = []
    rest = []
    for block in blocks:
        if block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            if call_id not in names:
                raise fail(f"tool_result {call_id!r} answers no earlier tool_use")
            messages.append({"role": "tool", "tool_call_id": call_id, "name": names[call_id],
                             "content": _text(block.get("content"), fail)})
        elif block.get("type") == "tool_use":
            raise fail("a tool_use block belongs in an assistant message")
        else:
            rest.append(block)
    if rest or len(blocks) == 0:
        messages.append({"role": "user", "content": _text(rest, fail)})
    return messages


def _blocks(content: Any, fail: Fail) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise fail(f"content must be a string or a list of blocks, got {type(content).__name__}")
    for block in content:
        if not (isinstance(block, dict) and isinstance(block.get("type"), str)):
            raise fail("a content block is an object with a `type`")
    return content


def _text(content: Any, fail: Fail) -> str:
    """A string, or blocks: text joined by newlines, thinking dropped, others `[<type> block]`."""
    if content is None:
        return ""
    parts = []
    for block in _blocks(content, fail):
        kind = block["type"]
        if kind == "text":
            parts.append(str(block.get("text") or ""))
        elif kind not in DROPPED:
            parts.append(f"[{kind} block]")
    return "\n".join(parts)


def _tool_call(block: dict[str, Any], names: dict[str, str], fail: Fail) -> dict[str, Any]:
    call_id, name = block.get("id"), block.get("name")
    if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
        raise fail("a tool_use block needs an id and a name")
    names[call_id] = name
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(block.get("input") or {}, ensure_ascii=False)}}


def recorded_usage(usage: Any) -> dict[str, int | None] | None:
    """Anthropic usage in `Trace.usage` terms: input counts cache reads and writes too; the writes kept
    for an hour (`cache_creation.ephemeral_1h_input_tokens`) where the usage records them."""
    if not (isinstance(usage, dict) and isinstance(usage.get("input_tokens"), int)):
        return None
    read_tokens = usage.get("cache_read_input_tokens")
    written = usage.get("cache_creation_input_tokens")
    recorded = {"input_tokens": usage["input_tokens"] + (read_tokens or 0) + (written or 0),
                "cached_tokens": read_tokens, "cache_write_tokens": written,
                "output_tokens": usage.get("output_tokens")}
    creation = usage.get("cache_creation")
    if isinstance(creation, dict) and isinstance(creation.get("ephemeral_1h_input_tokens"), int):
        recorded["cache_write_1h_tokens"] = creation["ephemeral_1h_input_tokens"]
    return recorded


def _tools(tools: Any, path: Path, trace_id: str) -> list[dict[str, Any]]:
    """Anthropic tool definitions as OpenAI function tools (server tools, with no schema, skipped)."""
    if tools is None:
        return []
    if not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise TraceError(path, "`tools` must be a list of tool definitions", trace=trace_id)
    return [{"type": "function", "function": {"name": t.get("name"), "description": t.get("description", ""),
                                              "parameters": t["input_schema"]}}
            for t in tools if "input_schema" in t]
