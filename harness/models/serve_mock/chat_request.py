"""The OpenAI chat-completions request body serve-mock accepts, checked field by field before the mock reads it.

OpenAI's documented request schema, for what the mock reads (model, messages, tools, seed, user, the cache fields) in
full and for
every other documented argument by its type and range, as OpenAI's API refuses them: an argument it does not
know is refused too ("Unrecognized request argument supplied"). Each refusal is a 400 naming the field, e.g.
`messages[1].content`. A valid body is handed on unchanged: the mock sees exactly what was sent.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from harness.models.serve_mock.http_bounds import BadRequest
from harness.core.user_files import INT64_MAX

ROUTES = ("/v1/chat/completions", "/chat/completions")
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_PART_TYPES = {  # content part types each role may send
    "system": ("text",), "developer": ("text",), "tool": ("text",), "assistant": ("text", "refusal"),
    "user": ("text", "image_url", "input_audio", "file"),
}
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class ChatRequest:
    """What the mock reads of a valid body."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    seed: int | None
    user: str
    cache_control: Any = None  # Anthropic-style automatic caching asked of the mock (harness.models.mock.wire_marks reads it)
    prompt_cache_key: str | None = None
    prompt_cache_options: Any = None  # OpenAI's, from GPT-5.6 on (read by harness.models.mock.wire_marks)


def _invalid(param: str, message: str) -> BadRequest:
    return BadRequest(400, f"{param}: {message}", param)


def _describe(value: Any) -> str:
    kind = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kind.get(type(value), "a number")


def _is_integer(value: Any) -> bool:
    return type(value) is int


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _string(param: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _invalid(param, f"expected a string, got {_describe(value)}")
    return value


def _object(param: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _invalid(param, f"expected an object, got {_describe(value)}")
    return value


def _array(param: str, value: Any, *, non_empty: bool = False) -> list[Any]:
    if not isinstance(value, list):
        raise _invalid(param, f"expected an array, got {_describe(value)}")
    if non_empty and not value:
        raise _invalid(param, "expected a non-empty array, got []")
    return value


def _boolean(param: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _invalid(param, f"expected a boolean, got {_describe(value)}")
    return value


def _number_in(low: float, high: float) -> Callable[[str, Any], Any]:
    def check(param: str, value: Any) -> Any:
        if not _is_number(value) or not low <= value <= high:
            raise _invalid(param, f"expected a number from {low:g} to {high:g}, got {_shown(value)}")
        return value
    return check


def _integer_in(low: int, high: int) -> Callable[[str, Any], Any]:
    def check(param: str, value: Any) -> Any:
        if not _is_integer(value) or not low <= value <= high:
            raise _invalid(param, f"expected an integer from {low} to {high}, got {_shown(value)}")
        return value
    return check


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, (int, float, str)) and len(repr(value)) <= 40 else _describe(value)


def _one_of(*choices: str) -> Callable[[str, Any], Any]:
    def check(param: str, value: Any) -> Any:
        if value not in choices:
            raise _invalid(param, f"expected one of {', '.join(choices)}, got {_shown(value)}")
        return value
    return check


def _string_map(param: str, value: Any) -> dict[str, Any]:
    for key, item in _object(param, value).items():
        _string(f"{param}.{key}", item)
    return value


def _stop(param: str, value: Any) -> Any:
    if isinstance(value, list):
        if len(value) > 4:
            raise _invalid(param, f"expected at most 4 sequences, got {len(value)}")
        for index, item in enumerate(value):
            _string(f"{param}[{index}]", item)
        return value
    return _string(param, value)


def _logit_bias(param: str, value: Any) -> Any:
    for key, item in _object(param, value).items():
        _number_in(-100, 100)(f"{param}.{key}", item)
    return value


def _typed_object(param: str, value: Any) -> dict[str, Any]:
    """An object with a string `type` (response_format, prediction, ...)."""
    _string(f"{param}.type", _object(param, value).get("type"))
    return value


def _strings(param: str, value: Any) -> list[Any]:
    for index, item in enumerate(_array(param, value)):
        _string(f"{param}[{index}]", item)
    return value


def _tool_choice(param: str, value: Any) -> Any:
    if isinstance(value, str):
        return _one_of("none", "auto", "required")(param, value)
    choice = _typed_object(param, value)
    if choice["type"] == "function":
        _string(f"{param}.function.name", _object(f"{param}.function", choice.get("function")).get("name"))
    return value


def _function_call(param: str, value: Any) -> Any:
    if isinstance(value, str):
        return _one_of("none", "auto")(param, value)
    _string(f"{param}.name", _object(param, value).get("name"))
    return value


def _functions(param: str, value: Any) -> Any:
    for index, function in enumerate(_array(param, value)):
        _function_definition(f"{param}[{index}]", function)
    return value


def _stream(param: str, value: Any) -> Any:
    if _boolean(param, value):
        raise _invalid(param, "serve-mock answers whole responses only; send stream false or leave it out")
    return value


def _n(param: str, value: Any) -> Any:
    if _integer_in(1, 128)(param, value) != 1:
        raise _invalid(param, f"serve-mock answers one choice; send n 1 or leave it out, got {value}")
    return value


# Documented arguments the mock does not read: checked by type and range, as OpenAI checks them.
_OTHER_ARGUMENTS: dict[str, Callable[[str, Any], Any]] = {
    "temperature": _number_in(0, 2),
    "top_p": _number_in(0, 1),
    "frequency_penalty": _number_in(-2, 2),
    "presence_penalty": _number_in(-2, 2),
    "max_tokens": _integer_in(1, INT64_MAX),
    "max_completion_tokens": _integer_in(1, INT64_MAX),
    "n": _n,
    "stream": _stream,
    "stream_options": _object,
    "stop": _stop,
    "logit_bias": _logit_bias,
    "logprobs": _boolean,
    "top_logprobs": _integer_in(0, 20),
    "response_format": _typed_object,
    "tool_choice": _tool_choice,
    "parallel_tool_calls": _boolean,
    "function_call": _function_call,
    "functions": _functions,
    "metadata": _string_map,
    "store": _boolean,
    "service_tier": _string,
    "reasoning_effort": _string,
    "verbosity": _string,
    "modalities": _strings,
    "audio": _object,
    "prediction": _typed_object,
    "web_search_options": _object,
    "prompt_cache_retention": _one_of("in_memory", "24h"),
    "safety_identifier": _string,
}
_READ_ARGUMENTS = ("model", "messages", "tools", "seed", "user", "cache_control", "prompt_cache_key",
                   "prompt_cache_options")


def validate_chat_request(body: Any) -> ChatRequest:
    """The body's fields the mock reads, once the whole body is a valid chat-completions request."""
    if not isinstance(body, dict):
        raise BadRequest(400, f"request body must be a JSON object, got {_describe(body)}")
    for name in body:
        if name not in _OTHER_ARGUMENTS and name not in _READ_ARGUMENTS:
            raise BadRequest(400, f"Unrecognized request argument supplied: {name[:100]}", name[:100])
    for name, check in _OTHER_ARGUMENTS.items():
        if body.get(name) is not None:  # OpenAI takes null as leaving an argument out
            check(name, body[name])
    if "model" not in body:
        raise _invalid("model", "required; serve-mock serves mock-agent and mock-summarizer")
    model = _string("model", body["model"])
    if "messages" not in body:
        raise _invalid("messages", "required")
    messages = _array("messages", body["messages"], non_empty=True)
    for index, message in enumerate(messages):
        _message(f"messages[{index}]", message)
    tools = body.get("tools")
    if tools is not None:
        for index, tool in enumerate(_array("tools", tools)):
            _tool(f"tools[{index}]", tool)
    seed = body.get("seed")
    if seed is not None:
        _integer_in(-INT64_MAX - 1, INT64_MAX)("seed", seed)
    user = body.get("user")
    if user is not None:
        _string("user", user)
    prompt_cache_key = cache_key(body)
    return ChatRequest(model=model, messages=messages, tools=tools or [], seed=seed, user=user or "",
                       cache_control=body.get("cache_control"), prompt_cache_key=prompt_cache_key,
                       prompt_cache_options=body.get("prompt_cache_options"))


def cache_key(body: dict[str, Any]) -> str | None:
    """The body's `prompt_cache_key`, a string or None, once `prompt_cache_options` and `prompt_cache_retention` are
    not both given (the first's ttl supersedes the second: OpenAI refuses both; the Responses route's too)."""
    key = body.get("prompt_cache_key")
    if key is not None:
        _string("prompt_cache_key", key)
    if body.get("prompt_cache_options") is not None and body.get("prompt_cache_retention") is not None:
        raise _invalid("prompt_cache_options", "prompt_cache_options.ttl supersedes prompt_cache_retention; "
                       "send one of them, not both")
    return key


def _message(param: str, message: Any) -> None:
    _object(param, message)
    if "role" not in message:
        raise _invalid(f"{param}.role", "required")
    role = _one_of(*ROLES)(f"{param}.role", message["role"])
    if message.get("name") is not None:
        _string(f"{param}.name", message["name"])
    has_calls = message.get("tool_calls") is not None or message.get("function_call") is not None
    _content(f"{param}.content", message.get("content"), role, may_be_empty=role == "assistant" and has_calls)
    if role == "assistant":
        _assistant_fields(param, message)
    elif has_calls:
        raise _invalid(f"{param}.tool_calls", f"only an assistant message has tool calls, not a {role} message")
    if role == "tool":
        _string(f"{param}.tool_call_id", message.get("tool_call_id"))
    elif message.get("tool_call_id") is not None:
        raise _invalid(f"{param}.tool_call_id", f"only a tool message has a tool_call_id, not a {role} message")
    if role == "function":
        _string(f"{param}.name", message.get("name"))


def _content(param: str, content: Any, role: str, *, may_be_empty: bool) -> None:
    """A string, a non-empty array of the role's typed parts, or null where the message carries calls instead."""
    if isinstance(content, str):
        return
    if content is None:
        if may_be_empty or role == "function":
            return
        raise _invalid(param, f"a {role} message needs content (a string or an array of parts), got null")
    for index, part in enumerate(_array(param, content, non_empty=True)):
        _content_part(f"{param}[{index}]", part, _PART_TYPES.get(role, ("text",)))


def _content_part(param: str, part: Any, types: tuple[str, ...]) -> None:
    kind = _one_of(*types)(f"{param}.type", _object(param, part).get("type"))
    if kind in ("text", "refusal"):
        _string(f"{param}.{kind}", part.get(kind))
    else:
        _object(f"{param}.{kind}", part.get(kind))


def _assistant_fields(param: str, message: dict[str, Any]) -> None:
    calls = message.get("tool_calls")
    if calls is not None:
        for index, call in enumerate(_array(f"{param}.tool_calls", calls)):
            _tool_call(f"{param}.tool_calls[{index}]", call)
    if message.get("function_call") is not None:
        call = _object(f"{param}.function_call", message["function_call"])
        _string(f"{param}.function_call.name", call.get("name"))
        _string(f"{param}.function_call.arguments", call.get("arguments"))
    if message.get("refusal") is not None:
        _string(f"{param}.refusal", message["refusal"])


def _tool_call(param: str, call: Any) -> None:
    _string(f"{param}.id", _object(param, call).get("id"))
    _one_of("function")(f"{param}.type", call.get("type"))
    function = _object(f"{param}.function", call.get("function"))
    _string(f"{param}.function.name", function.get("name"))
    _string(f"{param}.function.arguments", function.get("arguments"))


def _tool(param: str, tool: Any) -> None:
    _one_of("function")(f"{param}.type", _object(param, tool).get("type"))
    _function_definition(f"{param}.function", tool.get("function"))


def _function_definition(param: str, function: Any) -> None:
    name = _string(f"{param}.name", _object(param, function).get("name"))
    if not _TOOL_NAME.fullmatch(name):
        raise _invalid(f"{param}.name", f"expected 1-64 letters, digits, underscores or dashes, got {_shown(name)}")
    if function.get("description") is not None:
        _string(f"{param}.description", function["description"])
    if function.get("parameters") is not None:
        _object(f"{param}.parameters", function["parameters"])
    if function.get("strict") is not None:
        _boolean(f"{param}.strict", function["strict"])
