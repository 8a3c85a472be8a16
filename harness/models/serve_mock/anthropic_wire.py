"""Anthropic's Messages API (`POST /v1/messages`) for serve-mock: a request read into the mock's OpenAI-format
messages, tools and cache marks, the mock's reply written as Anthropic's response, errors in Anthropic's shape.

The translation is the inverse of litellm's (OpenAI format -> Anthropic blocks), so a run through
`anthropic/<model>` gives the mock the messages the in-process client would: `system` (a string or text blocks)
becomes one system message per block; a user turn one tool message per `tool_result` block (named after the
`tool_use` it answers, as the request shows it) and one user message per text block (litellm joins consecutive
user-side messages into one turn); an assistant turn one message, its text as content and each `tool_use` as a
tool call whose arguments are its input as JSON. `cache_control` on a tool, a system block or a content block is a
breakpoint on that tool or on the message the block became; a top-level `cache_control` is automatic caching.

Model names: one containing "summarizer" (e.g. `claude-summarizer`) is answered by the mock summarizer, any
other (e.g. `claude-sonnet-4-6`) by the mock agent. Every malformed body is a 400 `invalid_request_error` naming
the field, raised here as WireError before the mock sees anything.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

import litellm

from harness.models.cache_marks import Breakpoint, CacheMarks
from harness.models.mock.compaction import CompactionRequestError, read_edit, read_summarize
from harness.models.mock.context_editing import read_clear
from harness.models.mock.wire_marks import check_count, read_ttl
from harness.models.provider_compaction import (ANTHROPIC_BETA, ANTHROPIC_CLEAR_EDIT, ANTHROPIC_CONTEXT_BETA,
                                                ANTHROPIC_EDIT, ANTHROPIC_SUMMARIZE_BETA, APPLIED, FIELDS,
                                                applied_edits, compaction_blocks, paused, with_blocks)

ROUTES = ("/v1/messages", "/messages")
# Token counting (free, not billed): the request without max_tokens, answered with {"input_tokens": N}.
COUNT_ROUTES = ("/v1/messages/count_tokens", "/messages/count_tokens")
SUMMARIZER_MARK = "summarizer"
# The mock's faults as Anthropic's statuses (docs/mock.md): Anthropic documents no timeout status; a gateway's
# 504, which litellm maps to its Timeout as it maps a real timeout.
FAULT_STATUS = ((litellm.RateLimitError, 429, "rate_limit_error"), (litellm.Timeout, 504, "timeout_error"),
                (litellm.InternalServerError, 500, "api_error"))
_OVERFLOW = re.compile(r"prompt is too long: \d+ tokens > \d+ maximum")


class WireError(ValueError):
    """A malformed Messages API request; the message names the field."""


@dataclass
class MessagesRequest:
    """A Messages API request as the mock reads it."""

    model: str  # as asked, echoed in the response
    served: str  # the mock model that answers: "summarizer" or "agent"
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    marks: CacheMarks | None  # None: the request carries no marker at all (the provider's default applies)
    user: str  # metadata.user_id: the session when no session header names one
    options: dict[str, Any] | None = None  # the provider's own parameters the mock applies (`context_management`)


def served_model(model: str) -> str:
    return SUMMARIZER_MARK if SUMMARIZER_MARK in model else "agent"


def read_request(body: Any, counting: bool = False) -> MessagesRequest:
    """The request, translated; raises WireError naming the first malformed field. `counting`: a `count_tokens`
    request, which has no max_tokens."""
    if not isinstance(body, dict):
        raise WireError(f"request body: expected a JSON object, got {type(body).__name__}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("model: expected a non-empty string")
    max_tokens = body.get("max_tokens")
    if not counting and (type(max_tokens) is not int or max_tokens < 1):
        raise WireError(f"max_tokens: expected an integer >= 1, got {max_tokens!r}")
    if body.get("stream"):
        raise WireError("stream: serve-mock answers only non-streaming requests")
    if body.get("thread") is not None:
        raise WireError("thread: serve-mock holds no message threads; send the whole history (the SDK's tool runner: "
                        "thread=False)")
    reader = _Reader()
    tools = reader.tools(body.get("tools"))
    reader.system(body.get("system"))
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns:
        raise WireError("messages: expected a non-empty list")
    for index, turn in enumerate(turns):
        reader.turn(turn, f"messages[{index}]")
    automatic = None if body.get("cache_control") is None else _ttl(body["cache_control"], "cache_control")
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise WireError("metadata: expected an object")
    user = (metadata or {}).get("user_id") or ""
    if not isinstance(user, str):
        raise WireError("metadata.user_id: expected a string")
    marks = None
    if reader.markers or automatic is not None:
        _check_count(reader.markers)
        marks = CacheMarks(breakpoints=tuple(reader.breakpoints), automatic=automatic)
    asked = {key: body[key] for key in ("context_management", "compaction") if body.get(key) is not None}
    try:
        if read_summarize(asked.get("compaction"), asked.get("context_management")) is None:
            read_edit(asked.get("context_management"))
            read_clear(asked.get("context_management"))
    except CompactionRequestError as exc:
        raise WireError(str(exc)) from None
    options = asked or None
    return MessagesRequest(model=model, served=served_model(model), messages=reader.messages, tools=tools,
                           marks=marks, user=user, options=options)


# The beta each parameter needs: each context edit's (Anthropic's compaction and context-editing docs; litellm adds
# them with the edits, anthropic/chat/transformation.py `_ensure_context_management_beta_header`), the compaction
# request's (the SDK's `compact_before_next_turn`: "Requires the compact-2026-09-04 beta").
_EDIT_BETAS = {ANTHROPIC_EDIT: ("the compaction edit", ANTHROPIC_BETA),
               ANTHROPIC_CLEAR_EDIT: (f"the {ANTHROPIC_CLEAR_EDIT} edit", ANTHROPIC_CONTEXT_BETA)}
_REQUEST_BETA = ("a compaction request", ANTHROPIC_SUMMARIZE_BETA)


def read_messages(turns: list[Any]) -> list[dict[str, Any]]:
    """Messages API turns (an SDK's history) as the OpenAI-format messages the mock and the view hold, read as a
    request's are; raises WireError naming the first malformed turn."""
    reader = _Reader()
    reader.tools(None)
    for index, turn in enumerate(turns):
        reader.turn(turn, f"messages[{index}]")
    return reader.messages


def check_beta(asked: MessagesRequest, beta_header: str | None) -> None:
    """A context edit or a compaction request is a beta: the request must name its beta in its `anthropic-beta`
    header."""
    betas = {name.strip() for name in (beta_header or "").split(",")}
    options = asked.options or {}
    needed = [("compaction", _REQUEST_BETA)] if "compaction" in options else []
    edits = (options.get("context_management") or {}).get("edits") or ()
    needed += [("context_management", _EDIT_BETAS[kind]) for kind in dict.fromkeys(edit.get("type") for edit in edits)
               if kind in _EDIT_BETAS]
    for key, (what, beta) in needed:
        if beta not in betas:
            raise WireError(f"{key}: {what} needs the beta header anthropic-beta: {beta}")


class _Reader:
    """Builds the OpenAI-format messages and the breakpoints, block by block."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.breakpoints: list[Breakpoint] = []
        self.markers = 0
        self.call_names: dict[str, str] = {}  # tool_use id -> tool name, to name the results

    def mark(self, block: dict[str, Any], where: str, kind: str = "message") -> None:
        """A breakpoint where `block` carries `cache_control`: on the tool or message it became."""
        if block.get("cache_control") is None:
            return
        ttl = _ttl(block["cache_control"], f"{where}.cache_control")
        index = len(self.messages) - 1 if kind == "message" else self.tool_count - 1
        self.markers += 1
        if self.breakpoints and self.breakpoints[-1].block == kind and self.breakpoints[-1].index == index:
            self.breakpoints[-1] = Breakpoint(kind, index, ttl)  # the message's last marker decides
        else:
            self.breakpoints.append(Breakpoint(kind, index, ttl))

    def tools(self, tools: Any) -> list[dict[str, Any]]:
        self.tool_count = 0
        if tools is None:
            return []
        if not isinstance(tools, list):
            raise WireError("tools: expected a list")
        out = []
        for index, tool in enumerate(tools):
            where = f"tools[{index}]"
            if not isinstance(tool, dict):
                raise WireError(f"{where}: expected an object")
            if tool.get("type", "custom") != "custom":
                raise WireError(f"{where}.type: serve-mock serves only custom tools, got {tool.get('type')!r}")
            name, schema = tool.get("name"), tool.get("input_schema")
            if not isinstance(name, str) or not name:
                raise WireError(f"{where}.name: expected a non-empty string")
            if not isinstance(schema, dict):
                raise WireError(f"{where}.input_schema: expected an object")
            function: dict[str, Any] = {"name": name}
            if "description" in tool:
                if not isinstance(tool["description"], str):
                    raise WireError(f"{where}.description: expected a string")
                function["description"] = tool["description"]
            function["parameters"] = schema
            out.append({"type": "function", "function": function})
            self.tool_count += 1
            self.mark(tool, where, kind="tool")
        return out

    def system(self, system: Any) -> None:
        if system is None:
            return
        if isinstance(system, str):
            if system:
                self.messages.append({"role": "system", "content": system})
            return
        if not isinstance(system, list):
            raise WireError("system: expected a string or a list of text blocks")
        for index, block in enumerate(system):
            where = f"system[{index}]"
            self.messages.append({"role": "system", "content": _text(block, where)})
            self.mark(block, where)

    def turn(self, turn: Any, where: str) -> None:
        if not isinstance(turn, dict):
            raise WireError(f"{where}: expected an object")
        role, content = turn.get("role"), turn.get("content")
        if role not in ("user", "assistant"):
            raise WireError(f"{where}.role: expected 'user' or 'assistant', got {role!r}")
        if isinstance(content, str):
            self.messages.append({"role": role, "content": content})
            return
        if not isinstance(content, list) or not content:
            raise WireError(f"{where}.content: expected a string or a non-empty list of content blocks")
        if role == "user":
            for index, block in enumerate(content):
                self.user_block(block, f"{where}.content[{index}]")
        else:
            self.assistant(content, where)

    def user_block(self, block: Any, where: str) -> None:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            self.messages.append({"role": "user", "content": _text(block, where)})
        elif kind == "tool_result":
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str) or not call_id:
                raise WireError(f"{where}.tool_use_id: expected a non-empty string")
            message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id}
            if call_id in self.call_names:
                message["name"] = self.call_names[call_id]
            content = block.get("content", "")
            message["content"] = _result_content(content, f"{where}.content")
            self.messages.append(message)
            for index, part in enumerate(content if isinstance(content, list) else ()):
                self.mark(part, f"{where}.content[{index}]")
        else:
            raise WireError(f"{where}.type: serve-mock reads 'text' and 'tool_result' blocks from a user, got {kind!r}")
        self.mark(block, where)

    def assistant(self, content: list[Any], where: str) -> None:
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        compactions: list[dict[str, Any]] = []
        marked: list[tuple[dict[str, Any], str]] = []
        for index, block in enumerate(content):
            at = f"{where}.content[{index}]"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                texts.append(_text(block, at))
            elif kind == "tool_use":
                calls.append(self.call(block, at))
            elif kind == "compaction":
                compactions.append(_compaction(block, at))
            else:
                raise WireError(f"{at}.type: serve-mock reads 'text', 'tool_use' and 'compaction' blocks from an "
                                f"assistant, got {kind!r}")
            marked.append((block, at))
        message: dict[str, Any] = {"role": "assistant",
                                   "content": texts[0] if len(texts) == 1 else
                                   [{"type": "text", "text": text} for text in texts] if texts else ""}
        if calls:
            message["tool_calls"] = calls
        self.messages.append(with_blocks(message, compactions))  # as litellm returns them (provider_compaction)
        for block, at in marked:
            self.mark(block, at)

    def call(self, block: dict[str, Any], where: str) -> dict[str, Any]:
        call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
        if not isinstance(call_id, str) or not call_id:
            raise WireError(f"{where}.id: expected a non-empty string")
        if not isinstance(name, str) or not name:
            raise WireError(f"{where}.name: expected a non-empty string")
        if not isinstance(arguments, dict):
            raise WireError(f"{where}.input: expected an object")
        self.call_names[call_id] = name
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _compaction(block: dict[str, Any], where: str) -> dict[str, Any]:
    """A compaction block sent back: its summary (null: a failed compaction, a no-op) and its signature, if it has
    one, as the reply carried them."""
    summary = block.get("content")
    if summary is not None and (not isinstance(summary, str) or not summary):
        raise WireError(f"{where}.content: expected a non-empty string or null")
    signed = block.get("signature")
    if signed is not None and not isinstance(signed, str):
        raise WireError(f"{where}.signature: expected a string")
    return {"type": "compaction", "content": summary, **({"signature": signed} if signed is not None else {})}


def _result_content(content: Any, where: str) -> str | list[dict[str, Any]]:
    """A tool result's content: its text, or its text blocks as parts when there are several."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise WireError(f"{where}: expected a string or a list of text blocks")
    texts = [_text(block, f"{where}[{index}]") for index, block in enumerate(content)]
    return texts[0] if len(texts) == 1 else [{"type": "text", "text": text} for text in texts]


def _text(block: Any, where: str) -> str:
    if not isinstance(block, dict) or block.get("type") != "text":
        raise WireError(f"{where}: expected a text block")
    text = block.get("text")
    if not isinstance(text, str):
        raise WireError(f"{where}.text: expected a string")
    return text


def _ttl(marker: Any, where: str) -> str:
    try:
        return read_ttl(marker, where)
    except ValueError as exc:
        raise WireError(str(exc)) from None


def _check_count(markers: int) -> None:
    try:
        check_count(markers)
    except ValueError as exc:
        raise WireError(str(exc)) from None


def response(reply: dict[str, Any], usage: dict[str, Any], model: str, message_id: str) -> dict[str, Any]:
    """The mock's reply and usage (as harness.models.mock.provider reports them) as a Messages API response."""
    content: list[dict[str, Any]] = [dict(block) for block in compaction_blocks(reply)]
    text = reply.get("content")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    calls = reply.get("tool_calls") or []
    for call in calls:
        content.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                        "input": _tool_input(call["function"].get("arguments") or "{}")})
    stop = "compaction" if paused(reply) else "tool_use" if calls else "end_turn"
    edits = applied_edits(reply.get(FIELDS))
    return {"id": message_id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": usage_fields(usage),
            **({APPLIED: edits} if edits is not None else {})}


@dataclass
class Answer:
    """A Messages API request answered: the status and body to send, and the mock's usage when it served one."""

    status: int
    payload: dict[str, Any]
    usage: dict[str, Any] | None = None


def answer(body: Any, beta_header: str | None, serve: Callable[[MessagesRequest], tuple[dict[str, Any], dict[str, Any]]],
           message_id: Callable[[], str]) -> Answer:
    """`POST /v1/messages` as serve-mock's route and an SDK's in-process transport answer it: the body read and
    checked (400 naming the field), `serve` (the mock's reply and usage), the reply as Anthropic's response, an
    overflow or a fault in Anthropic's error shape."""
    try:
        asked = read_request(body)
        check_beta(asked, beta_header)
    except WireError as exc:
        return Answer(400, error("invalid_request_error", f"malformed request: {exc}"))
    try:
        reply, usage = serve(asked)
    except litellm.ContextWindowExceededError as exc:
        return Answer(400, error("invalid_request_error", overflow_message(exc)))
    except litellm.BadRequestError as exc:  # what the mock provider refuses (e.g. a compaction block's signature)
        return Answer(400, error("invalid_request_error", str(exc)))
    except Exception as exc:
        return Answer(*failure(exc))
    return Answer(200, response(reply, usage, asked.model, message_id()), usage)


def answer_count(body: Any, beta_header: str | None,
                 count: Callable[[MessagesRequest], tuple[int, int | None]]) -> Answer:
    """`POST /v1/messages/count_tokens`: the request's input tokens as the mock counts them (free: no usage), and
    for a request asking for the clear_tool_uses edit the count before it (`context_management.original_input_tokens`,
    the docs' "Token counting")."""
    try:
        asked = read_request(body, counting=True)
        check_beta(asked, beta_header)
        tokens, original = count(asked)
        return Answer(200, {"input_tokens": tokens,
                            **({APPLIED: {"original_input_tokens": original}} if original is not None else {})})
    except (WireError, litellm.BadRequestError) as exc:
        return Answer(400, error("invalid_request_error", f"malformed request: {exc}"))


def _tool_input(arguments: str) -> Any:
    """A tool call's input object; arguments that are no JSON object (the mock's malformed-arguments fault) go
    out as their text, as no object can carry them."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return value if isinstance(value, dict) else arguments


def usage_fields(usage: dict[str, Any]) -> dict[str, Any]:
    """The mock's usage in Anthropic's fields: `input_tokens` are those after the last breakpoint, beside
    reads and writes (their sum is the prompt); writes also by TTL in `cache_creation`. A request of several
    sampling steps (a compaction) reports each in `iterations` and its last message step at the top (none when
    it paused after compacting): a compaction step's tokens are only in `iterations` (anthropic SDK beta_usage.py)."""
    steps = usage.get("iterations")
    if steps:
        answer = next((step for step in reversed(steps) if step["type"] == "message"), None)
        top = {key: value for key, value in (answer or _NO_STEP).items() if key != "type"}
        return {**top, "iterations": steps}
    details = usage.get("prompt_tokens_details") or {}
    read = details.get("cached_tokens") or 0
    written = usage.get("cache_creation_input_tokens")
    out: dict[str, Any] = {"input_tokens": usage["prompt_tokens"] - read - (written or 0),
                           "output_tokens": usage["completion_tokens"], "cache_read_input_tokens": read}
    if written is not None:
        by_ttl = details.get("cache_creation_token_details") or {}
        out["cache_creation_input_tokens"] = written
        out["cache_creation"] = {"ephemeral_5m_input_tokens": by_ttl.get("ephemeral_5m_input_tokens", written),
                                 "ephemeral_1h_input_tokens": by_ttl.get("ephemeral_1h_input_tokens", 0)}
    return out


_NO_STEP = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}

# Anthropic's error types by HTTP status (its "Errors" page); any other 4xx is an invalid request.
_ERROR_KINDS = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def error_kind(status: int) -> str:
    """Anthropic's error type for a refusal with this HTTP status."""
    return _ERROR_KINDS.get(status, "invalid_request_error" if status < 500 else "api_error")


def failure(exc: Exception) -> tuple[int, dict[str, Any]]:
    """(status, body) of a request the mock failed: a fault as its status, anything else a 500 naming no internals."""
    for error_type, status, kind in FAULT_STATUS:
        if isinstance(exc, error_type):
            return status, error(kind, str(exc))
    return 500, error("api_error", f"the mock failed ({type(exc).__name__})")


def overflow_message(exc: BaseException) -> str:
    """A context overflow worded as Anthropic words it ("prompt is too long: N tokens > M maximum")."""
    found = _OVERFLOW.search(str(exc))
    return found.group(0) if found else str(exc)
