"""Chat-format messages and tools as OpenAI Responses API items, and back: one translation for the client
(harness.models.responses_api) and for serve-mock's Responses route (harness.models.serve_mock.responses_wire), so a
request over HTTP reaches the mock as the same messages the in-process client hands it.

Chat -> items (openai SDK 3.63 types/responses): a system, developer or user message is a `message` item with its
role (easy_input_message_param.py); an assistant message is its compaction items (harness.models.provider_compaction),
then a `message` item with its text (one with empty text only when it has nothing else), then one `function_call` per
tool call, `call_id` the call's id (response_function_tool_call_param.py); a tool result is a `function_call_output`
with the call's id and the tool's `name` (response_input_item_param.py:168-193). Text content stays a string; a list of
text parts becomes `input_text` parts (`output_text` for an assistant). A chat tool is a `function` tool, `strict`
null when the chat tool says nothing (function_tool_param.py: required, nullable).

Items -> chat reverses it: an assistant message gathers the compaction items, the `message` item and the function
calls of one assistant turn. An assistant message that holds nothing but compaction items (the last of a
`/responses/compact` window) joins the assistant turn sent after it, as the items alone cannot tell them apart; the
provider sees the same context either way, since a compaction item's message is replaced by its summary
(harness.models.mock.responses_compaction). Items are checked as they are read: a malformed one is an ItemError
naming its field (`input[3].call_id`), which serve-mock answers with a 400.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.models.provider_compaction import OPENAI_COMPACTION, compaction_items, with_items

INPUT_ROLES = ("system", "developer", "user", "assistant")
BREAKPOINT = "prompt_cache_breakpoint"  # OpenAI's cache marker on a content part (GPT-5.6 and later)


class ItemError(ValueError):
    """A malformed Responses item or tool; `param` names the field."""

    def __init__(self, param: str, message: str):
        super().__init__(f"{param}: {message}")
        self.param = param


# --- chat -> items ------------------------------------------------------------------------------------------------

def input_items(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The Responses `input` of a chat-format request."""
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            output = {"type": "function_call_output", "call_id": message.get("tool_call_id"),
                      "output": _parts(message.get("content"), "input_text")}
            if message.get("name"):
                output["name"] = message["name"]
            items.append(output)
        elif role == "assistant":
            items.extend(_assistant_items(message))
        elif role in INPUT_ROLES:
            items.append({"type": "message", "role": role, "content": _parts(message.get("content"), "input_text")})
        else:
            raise ValueError(f"a chat message of role {role!r} has no Responses item")
    return items


def _assistant_items(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    items = [dict(item) for item in compaction_items(message)]
    calls = message.get("tool_calls") or ()
    content = message.get("content")
    if content or not (calls or items):
        items.append({"type": "message", "role": "assistant", "content": _parts(content, "output_text")})
    for call in calls:
        function = call.get("function") or {}
        items.append({"type": "function_call", "call_id": call.get("id"), "name": function.get("name"),
                      "arguments": function.get("arguments") or ""})
    return items


def _parts(content: Any, kind: str) -> str | list[dict[str, Any]]:
    """Text content as the Responses API takes it: a string as it is, text parts as `kind` parts (with their
    `prompt_cache_breakpoint`: openai SDK types/responses/response_input_text_param.py:32)."""
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") != "text":
            raise ValueError(f"only text content parts have a Responses form, got {part!r:.80}")
        marker = {BREAKPOINT: part[BREAKPOINT]} if BREAKPOINT in part else {}
        parts.append({"type": kind, "text": part.get("text", ""), **marker})
    return parts


def function_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Chat tools (`{"type": "function", "function": {...}}`) as Responses function tools."""
    out = []
    for tool in tools or ():
        function = tool.get("function") or {}
        converted = {"type": "function", "name": function.get("name"), "parameters": function.get("parameters"),
                     "strict": function.get("strict")}
        if "description" in function:
            converted["description"] = function["description"]
        out.append(converted)
    return out


# --- items -> chat ------------------------------------------------------------------------------------------------

def chat_tools(tools: Any, where: str = "tools") -> list[dict[str, Any]]:
    """Responses function tools as chat tools; raises ItemError for a malformed one or another kind of tool."""
    if tools is None:
        return []
    out = []
    for index, tool in enumerate(_list(tools, where)):
        at = f"{where}[{index}]"
        _object(tool, at)
        if tool.get("type") != "function":
            raise ItemError(f"{at}.type", f"serve-mock serves function tools only, got {tool.get('type')!r}")
        function: dict[str, Any] = {"name": _text(tool.get("name"), f"{at}.name", empty=False)}
        if tool.get("description") is not None:
            function["description"] = _text(tool["description"], f"{at}.description")
        parameters = tool.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise ItemError(f"{at}.parameters", "expected an object or null")
        function["parameters"] = parameters
        if tool.get("strict") is not None:
            if not isinstance(tool["strict"], bool):
                raise ItemError(f"{at}.strict", "expected a boolean or null")
            function["strict"] = tool["strict"]
        out.append({"type": "function", "function": function})
    return out


def chat_messages(items: Any, where: str = "input", *, output: bool = False) -> list[dict[str, Any]]:
    """Input items as chat-format messages; raises ItemError naming the first malformed field. `output`: a
    response's output items, whose message text comes in parts and is read as one string (as litellm joins it)."""
    if isinstance(items, str):  # the API's shorthand: one user message
        return [{"role": "user", "content": items}]
    reader = _Reader(output)
    for index, item in enumerate(_list(items, where)):
        reader.item(item, f"{where}[{index}]")
    reader.close()
    return reader.messages


class _Reader:
    """Builds chat messages item by item; `turn` is the assistant message being gathered."""

    def __init__(self, output: bool) -> None:
        self.output = output
        self.messages: list[dict[str, Any]] = []
        self.turn: dict[str, Any] | None = None
        self.call_names: dict[str, str] = {}

    def item(self, item: Any, where: str) -> None:
        _object(item, where)
        kind = item.get("type", "message")
        if kind == OPENAI_COMPACTION:
            self.compaction(item, where)
        elif kind == "function_call":
            self.function_call(item, where)
        elif kind == "message" and item.get("role") == "assistant":
            self.assistant_text(item, where)
        elif kind == "message":
            self.close()
            role = item.get("role")
            if role not in INPUT_ROLES:
                raise ItemError(f"{where}.role", f"expected one of {', '.join(INPUT_ROLES)}, got {role!r}")
            self.messages.append({"role": role, "content": _content(item.get("content"), f"{where}.content",
                                                                    ("input_text",), self.output)})
        elif kind == "function_call_output":
            self.close()
            self.messages.append(self.tool_result(item, where))
        else:
            raise ItemError(f"{where}.type", f"serve-mock reads messages, function calls and their outputs, and "
                                             f"compaction items, got {kind!r}")

    def open(self) -> dict[str, Any]:
        if self.turn is None:
            self.turn = {"role": "assistant", "content": ""}
            self.messages.append(self.turn)
        return self.turn

    def close(self) -> None:
        self.turn = None

    def compaction(self, item: dict[str, Any], where: str) -> None:
        if self.turn is not None and (self.turn["content"] or self.turn.get("tool_calls")):
            self.close()  # a compaction item starts an assistant turn
        _text(item.get("encrypted_content"), f"{where}.encrypted_content", empty=False)
        if item.get("id") is not None:
            _text(item["id"], f"{where}.id")
        kept = {key: item[key] for key in ("type", "id", "encrypted_content") if item.get(key) is not None}
        turn = self.open()
        turn.update(with_items(turn, [*compaction_items(turn), kept]))

    def assistant_text(self, item: dict[str, Any], where: str) -> None:
        if self.turn is not None and (self.turn["content"] or self.turn.get("tool_calls")):
            self.close()
        self.open()["content"] = _content(item.get("content"), f"{where}.content", ("output_text", "input_text"),
                                          self.output)

    def function_call(self, item: dict[str, Any], where: str) -> None:
        call_id = _text(item.get("call_id"), f"{where}.call_id", empty=False)
        name = _text(item.get("name"), f"{where}.name", empty=False)
        arguments = _text(item.get("arguments"), f"{where}.arguments")
        self.call_names[call_id] = name
        turn = self.open()
        turn.setdefault("tool_calls", []).append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})

    def tool_result(self, item: dict[str, Any], where: str) -> dict[str, Any]:
        call_id = _text(item.get("call_id"), f"{where}.call_id", empty=False)
        message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id}
        name = item.get("name") or self.call_names.get(call_id)
        if name is not None:
            message["name"] = _text(name, f"{where}.name")
        message["content"] = _content(item.get("output"), f"{where}.output", ("input_text", "output_text"))
        return message


def _content(content: Any, where: str, kinds: tuple[str, ...], joined: bool = False) -> str | list[dict[str, Any]]:
    """A string, or text parts as chat text parts (the inverse of `_parts`), or as one string when `joined`."""
    if isinstance(content, str):
        return content
    parts = []
    for index, part in enumerate(_list(content, where)):
        at = f"{where}[{index}]"
        _object(part, at)
        if part.get("type") not in kinds:
            raise ItemError(f"{at}.type", f"serve-mock reads {' and '.join(kinds)} parts, got {part.get('type')!r}")
        marker = {BREAKPOINT: part[BREAKPOINT]} if BREAKPOINT in part else {}  # read by the cache marks' reader
        parts.append({"type": "text", "text": _text(part.get("text"), f"{at}.text"), **marker})
    return "".join(part["text"] for part in parts) if joined else parts


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ItemError(where, "expected an array")
    return value


def _object(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise ItemError(where, "expected an object")


def _text(value: Any, where: str, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise ItemError(where, "expected a non-empty string" if not empty else "expected a string")
    return value

