"""Cache markers as a request brings them over the wire (litellm's OpenAI-format `cache_control`; for OpenAI's
GPT-5.6 family and later, `prompt_cache_breakpoint` on a content part and `prompt_cache_options`), read back into
the request's CacheMarks and taken off its messages and tools.

The simulated provider caches where the marks say, and the mock agent reads the request as it would read it
without markers: a marker changes what the provider caches, never what the model sees. A message's marker may
sit on the message itself, on a content part, or on a tool call (litellm maps each to an Anthropic block's
`cache_control`); a marker on a message whose content is a string arrives with that string as one text part,
which is turned back into the string. Anthropic caches at block granularity; the mock at message granularity:
a marker anywhere in a message is a breakpoint at the message's end (docs/mock.md). One request marks in one
dialect: Anthropic's markers beside OpenAI's are refused.
"""
from __future__ import annotations

from typing import Any

from harness.models import openai_breakpoints
from harness.models.cache_marks import TTLS, Breakpoint, CacheMarks

MAX_BREAKPOINTS = 4  # blocks with cache_control one request may have (Anthropic refuses a fifth)


class MarkerError(ValueError):
    """A malformed cache marker or too many of them; the message names where, and `param` the field when known."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


def read_ttl(marker: Any, where: str) -> str:
    """The TTL of a `cache_control` marker (`{"type": "ephemeral", "ttl"?: "5m" | "1h"}`), "5m" by default."""
    if not isinstance(marker, dict) or marker.get("type") != "ephemeral":
        raise MarkerError(f"{where}: expected {{\"type\": \"ephemeral\"}} with an optional \"ttl\", got {marker!r}")
    ttl = marker.get("ttl", "5m")
    if ttl not in TTLS:
        raise MarkerError(f"{where}.ttl: must be one of {', '.join(TTLS)}, got {ttl!r}")
    return ttl


def check_count(markers: int) -> None:
    if markers > MAX_BREAKPOINTS:
        raise MarkerError(f"cache_control: a maximum of {MAX_BREAKPOINTS} blocks with cache_control may be "
                          f"provided, found {markers}")


def read_marks(messages: list[Any], tools: list[Any], cache_control: Any = None,
               prompt_cache_key: Any = None, prompt_cache_options: Any = None
               ) -> tuple[list[Any], list[Any], CacheMarks | None]:
    """(messages, tools, marks) of an OpenAI-format request: messages and tools without their markers (the
    given objects where they had none), and the marks, or None for a request with no marker and no
    `prompt_cache_key` at all (cached as a request without marks is: MockProvider.serve). OpenAI's markers give
    marks with a mode (`prompt_cache_options.mode`, else OpenAI's default, implicit). Raises MarkerError naming a
    malformed marker."""
    messages, breakpoints, mode = _read_openai(messages, prompt_cache_options)
    clean_messages, clean_tools, marks = _read_anthropic(messages, tools, cache_control, prompt_cache_key)
    if mode is None:
        return clean_messages, clean_tools, marks
    if marks is not None and (marks.breakpoints or marks.automatic is not None):
        raise MarkerError("cache_control: a request with prompt_cache_breakpoint or prompt_cache_options marks "
                          "with those only", "cache_control")
    return clean_messages, clean_tools, CacheMarks(breakpoints=breakpoints, prompt_cache_key=prompt_cache_key,
                                                   prompt_cache_mode=mode)


def _read_anthropic(messages: list[Any], tools: list[Any], cache_control: Any,
                    prompt_cache_key: Any) -> tuple[list[Any], list[Any], CacheMarks | None]:
    """`read_marks` for litellm's `cache_control` markers (and the key)."""
    markers = 0
    tool_breakpoints: list[Breakpoint] = []
    clean_tools = tools
    for index, tool in enumerate(tools):
        if isinstance(tool, dict) and "cache_control" in tool:
            ttl = read_ttl(tool["cache_control"], f"tools[{index}].cache_control")
            if clean_tools is tools:
                clean_tools = list(tools)
            clean_tools[index] = {key: value for key, value in tool.items() if key != "cache_control"}
            tool_breakpoints.append(Breakpoint("tool", index, ttl))
            markers += 1
    message_breakpoints: list[Breakpoint] = []
    clean_messages = messages
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue  # not a message: the caller's validation names it
        stripped, ttl, found = _strip_message(message, f"messages[{index}]")
        if found:
            if clean_messages is messages:
                clean_messages = list(messages)
            clean_messages[index] = stripped
            message_breakpoints.append(Breakpoint("message", index, ttl))
            markers += found
    automatic = None if cache_control is None else read_ttl(cache_control, "cache_control")
    if prompt_cache_key is not None and not isinstance(prompt_cache_key, str):
        raise MarkerError(f"prompt_cache_key: must be a string, got {prompt_cache_key!r}")
    if not markers and automatic is None and prompt_cache_key is None:
        return messages, tools, None
    check_count(markers)
    return clean_messages, clean_tools, CacheMarks(breakpoints=(*tool_breakpoints, *message_breakpoints),
                                                   automatic=automatic, prompt_cache_key=prompt_cache_key)


def _read_openai(messages: list[Any], options: Any) -> tuple[list[Any], tuple[Breakpoint, ...], str | None]:
    """(messages without OpenAI's breakpoint markers, the breakpoints, the mode) of a request: the mode is None
    when it has neither markers nor `prompt_cache_options` (Anthropic's dialect or none)."""
    mode = None if options is None else read_options(options)
    breakpoints = []
    clean = messages
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            continue
        where = f"messages[{index}]"
        parts, found = [], False
        for number, part in enumerate(message["content"]):
            if isinstance(part, dict) and "prompt_cache_breakpoint" in part:
                _read_breakpoint(part["prompt_cache_breakpoint"], f"{where}.content[{number}].prompt_cache_breakpoint")
                if message.get("role") == "assistant":
                    raise MarkerError(f"{where}.content[{number}].prompt_cache_breakpoint: an assistant message "
                                      "cannot carry a cache breakpoint",
                                      f"{where}.content[{number}].prompt_cache_breakpoint")
                part = {key: value for key, value in part.items() if key != "prompt_cache_breakpoint"}
                found = True
            parts.append(part)
        if found:
            if clean is messages:
                clean = list(messages)
            text = (parts[0]["text"] if len(parts) == 1 and set(parts[0]) == {"type", "text"}
                    and parts[0]["type"] == "text" else None)
            clean[index] = {**message, "content": parts if text is None else text}  # a string sent as one part
            breakpoints.append(Breakpoint("message", index, openai_breakpoints.TTL))
    if breakpoints and mode is None:
        mode = openai_breakpoints.MODES[0]  # OpenAI's default
    return clean, tuple(breakpoints), mode


def read_options(options: Any) -> str:
    """The mode of `prompt_cache_options` (`{"mode"?: "implicit" | "explicit", "ttl"?: "30m"}`, the SDK's
    PromptCacheOptions), implicit by default."""
    if not isinstance(options, dict):
        raise MarkerError(f"prompt_cache_options: expected an object, got {options!r}", "prompt_cache_options")
    unknown = sorted(set(options) - {"mode", "ttl"})
    if unknown:
        raise MarkerError(f"prompt_cache_options: unknown field(s) {unknown}; it takes mode and ttl",
                          "prompt_cache_options")
    mode = options.get("mode", openai_breakpoints.MODES[0])
    if mode not in openai_breakpoints.MODES:
        raise MarkerError(f"prompt_cache_options.mode: expected one of {', '.join(openai_breakpoints.MODES)}, "
                          f"got {mode!r}", "prompt_cache_options.mode")
    if options.get("ttl", openai_breakpoints.TTL) != openai_breakpoints.TTL:
        raise MarkerError(f"prompt_cache_options.ttl: {openai_breakpoints.TTL} is the only value, got "
                          f"{options['ttl']!r}", "prompt_cache_options.ttl")
    return mode


def _read_breakpoint(marker: Any, where: str) -> None:
    """A `prompt_cache_breakpoint` (`{"mode": "explicit", "ttl"?: ...}`, the SDK's PromptCacheBreakpoint); of its
    TTLs the mock simulates the request's 30m only."""
    if not isinstance(marker, dict) or marker.get("mode") != "explicit" or set(marker) - {"mode", "ttl"}:
        raise MarkerError(f"{where}: expected {{\"mode\": \"explicit\"}} with an optional \"ttl\", got {marker!r}",
                          where)
    if marker.get("ttl", openai_breakpoints.TTL) != openai_breakpoints.TTL:
        raise MarkerError(f"{where}.ttl: the mock simulates the {openai_breakpoints.TTL} lifetime only, got "
                          f"{marker['ttl']!r}", f"{where}.ttl")


def _strip_items(items: Any, where: str) -> tuple[Any, str, int]:
    """(the list without its items' markers, the TTL of its last marker, how many there were); a value that is no
    list, or holds no marker, comes back as it is with a count of 0."""
    if not isinstance(items, list) or not any(isinstance(item, dict) and "cache_control" in item for item in items):
        return items, "5m", 0
    clean, ttl, found = [], "5m", 0
    for number, item in enumerate(items):
        if isinstance(item, dict) and "cache_control" in item:
            ttl = read_ttl(item["cache_control"], f"{where}[{number}].cache_control")
            item = {key: value for key, value in item.items() if key != "cache_control"}
            found += 1
        clean.append(item)
    return clean, ttl, found


def _strip_message(message: dict[str, Any], where: str) -> tuple[dict[str, Any], str, int]:
    """(the message without markers, the TTL of its last marker, how many markers it had)."""
    found = 0
    ttl = "5m"
    stripped = message
    if "cache_control" in message:
        ttl = read_ttl(message["cache_control"], f"{where}.cache_control")
        stripped = {key: value for key, value in message.items() if key != "cache_control"}
        found += 1
    content = message.get("content")
    parts, part_ttl, marked = _strip_items(content, f"{where}.content")
    if marked:
        ttl, found = part_ttl, found + marked
        if len(parts) == 1 and parts[0].get("type") == "text" and set(parts[0]) == {"type", "text"}:
            parts = parts[0]["text"]  # a string content, sent as one text part to carry its marker
        stripped = {**stripped, "content": parts}
    calls, call_ttl, marked = _strip_items(message.get("tool_calls"), f"{where}.tool_calls")
    if marked:
        ttl, found = call_ttl, found + marked
        stripped = {**stripped, "tool_calls": calls}
    return stripped, ttl, found
