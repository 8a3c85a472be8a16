"""OpenAI's Responses API for serve-mock: `POST /v1/responses` and `POST /v1/responses/compact`, a request read into
the mock's chat-format messages, tools and options, the mock's answer written as the API's response.

The items are read by the same translation the client writes them with (harness.models.responses_items), so a run
through the Responses route hands the mock the messages the in-process client hands it; `instructions`, a system
message inserted into the model's context (openai SDK types/responses/response_create_params.py), becomes a leading
system message. The mock reads `context_management` and `truncation` (its options: harness.models.mock.provider), the
tools, the cache key, and OpenAI's `prompt_cache_breakpoint` markers with `prompt_cache_options` (GPT-5.6 and later,
read back as on the chat route: harness.models.mock.wire_marks); every other documented argument is checked by its type, as the API checks it, and an unknown
one refused ("Unknown parameter"). serve-mock keeps no state a request could point to: `previous_response_id`,
`conversation` and `background` are refused; the client sends its whole input each time. A compaction item this
provider did not make is refused before the mock reads anything (harness.models.mock.responses_compaction).

Model names: one containing "summarizer" is answered by the mock summarizer, any other (`gpt-5.6`, `mock-agent`) by
the mock agent. Refusals are 4xx in OpenAI's error shape naming `param`; the seed travels in its ctxbench header (the
API has no seed field), as for Anthropic's route.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import litellm

from harness.models.mock.compaction import CompactionRequestError
from harness.models.mock.responses_compaction import check_item, check_truncation, read_threshold
from harness.models.mock.wire_marks import MarkerError, read_marks
from harness.models.responses_items import ItemError, chat_messages, chat_tools, input_items
from harness.models.serve_mock.anthropic_wire import Answer, MessagesRequest, served_model
from harness.models.serve_mock.chat_request import (_OTHER_ARGUMENTS as CHAT_ARGUMENTS, _boolean, _integer_in, _invalid,
                                                    _object, _string, _strings, _typed_object, cache_key)
from harness.models.serve_mock.http_bounds import BadRequest, error_payload
from harness.core.user_files import INT64_MAX

ROUTES = ("/v1/responses", "/responses")
COMPACT_ROUTES = ("/v1/responses/compact", "/responses/compact")
# The mock's faults as the statuses of serve-mock's OpenAI routes (docs/mock.md).
FAULT_STATUS = ((litellm.RateLimitError, 429, "rate_limit_error"), (litellm.Timeout, 408, "timeout"),
                (litellm.InternalServerError, 500, "server_error"))
INTERNAL = "the mock failed to answer this request (an internal error)"


def _stateless(param: str, value: Any) -> Any:
    raise _invalid(param, "serve-mock keeps no responses or conversations: send the whole input each time")


def _no_background(param: str, value: Any) -> Any:
    if _boolean(param, value):
        raise _invalid(param, "serve-mock answers in the foreground only; send background false or leave it out")
    return value


def _tool_choice(param: str, value: Any) -> Any:
    """Responses' tool choice: a mode, or an object with a `type` (a function's is named at its top level)."""
    if isinstance(value, str):
        return CHAT_ARGUMENTS["tool_choice"](param, value)
    choice = _typed_object(param, value)
    if choice["type"] == "function":
        _string(f"{param}.name", choice.get("name"))
    return value


# Documented arguments the mock does not read (types/responses/response_create_params.py and
# response_compact_params.py), checked by type and range.
_SHARED = {name: CHAT_ARGUMENTS[name] for name in ("service_tier", "safety_identifier", "prompt_cache_retention")}
_SHARED.update({"image": _object, "previous_response_id": _stateless})
_CREATE = {**_SHARED, **{name: CHAT_ARGUMENTS[name] for name in ("temperature", "top_p", "metadata", "store",
                                                                  "parallel_tool_calls", "stream", "top_logprobs")},
           "max_output_tokens": _integer_in(16, INT64_MAX), "max_tool_calls": _integer_in(1, INT64_MAX),
           "tool_choice": _tool_choice, "text": _object, "reasoning": _object, "include": _strings,
           "prompt": _object, "stream_options": _object, "conversation": _stateless, "background": _no_background}
_CACHE = ("prompt_cache_key", "prompt_cache_options")
_READ = ("model", "input", "instructions", "tools", "user", "context_management", "truncation", *_CACHE)
_COMPACT_READ = ("model", "input", "instructions", *_CACHE)


def read_request(body: Any, compact: bool = False) -> MessagesRequest:
    """The request, checked and translated, as the mock reads any route's (`marks`: the cache key, if any);
    raises BadRequest naming the first malformed field."""
    if not isinstance(body, dict):
        raise BadRequest(400, "request body must be a JSON object")
    documented, read = (_SHARED, _COMPACT_READ) if compact else (_CREATE, _READ)
    for name in body:
        if name not in documented and name not in read:
            raise BadRequest(400, f"Unknown parameter: '{name[:100]}'.", name[:100], code="unknown_parameter")
    for name, check in documented.items():
        if body.get(name) is not None:  # the API takes null as leaving an argument out
            check(name, body[name])
    if "model" not in body:
        raise _invalid("model", "required")
    model = _string("model", body["model"])
    instructions = body.get("instructions")
    key = cache_key(body)
    try:
        messages = chat_messages(body.get("input", []))
        if instructions is not None:
            messages.insert(0, {"role": "system", "content": _string("instructions", instructions)})
        tools = chat_tools(body.get("tools"))
        options = {name: body[name] for name in ("context_management", "truncation") if body.get(name) is not None}
        read_threshold(options.get("context_management"))
        check_truncation(options.get("truncation"))
        _check_items(body.get("input"))
        messages, tools, marks = read_marks(messages, tools, None, key, body.get("prompt_cache_options"))
    except (ItemError, CompactionRequestError) as exc:
        raise _invalid(exc.param, str(exc).removeprefix(f"{exc.param}: ")) from None
    except MarkerError as exc:  # a cache marker read back names its field (in the chat messages' indexes)
        raise BadRequest(400, str(exc), exc.param) from None
    if not messages:
        raise _invalid("input", "expected at least one input item")
    user = body.get("user") or body.get("safety_identifier") or ""
    return MessagesRequest(model=model, served=served_model(model), messages=messages, tools=tools, options=options,
                           marks=marks, user=_string("user", user))


def answer(body: Any, compact: bool, serve: Callable[[MessagesRequest], tuple[dict[str, Any], dict[str, Any]]],
           response_id: Callable[[], str]) -> Answer:
    """`POST /v1/responses` (or `/responses/compact`) as serve-mock's route and an SDK's in-process transport answer
    it: the body read and checked, `serve` (the mock's answer and usage), the answer as the API's response, a refusal
    or a fault in OpenAI's error shape."""
    try:
        asked = read_request(body, compact)
    except BadRequest as refusal:
        return Answer(refusal.status, refusal.payload())
    try:
        reply, usage = serve(asked)
    except Exception as exc:
        return Answer(*failure(exc))
    made = response_id()
    payload = compacted(reply, usage, made) if compact else response(reply, usage, asked.model, made)
    return Answer(200, payload, usage)


def failure(exc: Exception) -> tuple[int, dict[str, Any]]:
    """(status, body) of a request the mock refused or failed, in OpenAI's shape: an overflow, a refusal (400), a
    fault's status, else a 500 naming no internals (INTERNAL)."""
    if isinstance(exc, litellm.ContextWindowExceededError):
        return 400, error_payload(str(exc), "invalid_request_error", code="context_length_exceeded")
    if isinstance(exc, litellm.BadRequestError):  # what the simulated provider refuses (a compaction request)
        return 400, error_payload(str(exc), "invalid_request_error", code="invalid_request_error")
    for error_type, status, kind in FAULT_STATUS:
        if isinstance(exc, error_type):
            return status, error_payload(str(exc), kind, code=kind)
    return 500, error_payload(INTERNAL, "server_error", code="server_error")


def _check_items(items: Any) -> None:
    """Refuse a compaction item the simulated provider did not make (the API reads only its own)."""
    for index, item in enumerate(items if isinstance(items, list) else ()):
        if item.get("type") == "compaction":
            check_item(item, f"input[{index}]")


def response(reply: dict[str, Any], usage: dict[str, Any], model: str, response_id: str) -> dict[str, Any]:
    """The mock's reply and usage as a Responses API response (types/responses/response.py): its compaction items,
    its text as an `output_text` part, its calls as `function_call` items."""
    output = []
    for number, item in enumerate(input_items([reply])):
        if item["type"] == "message":
            item = {"type": "message", "id": f"msg_{response_id[5:]}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": item["content"], "annotations": []}]}
        elif item["type"] == "function_call":
            item = {**item, "id": f"fc_{response_id[5:]}_{number}", "status": "completed"}
        output.append(item)
    return {"id": response_id, "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": model, "output": output, "usage": usage_fields(usage), "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None}


def compacted(window: list[dict[str, Any]], usage: dict[str, Any], response_id: str) -> dict[str, Any]:
    """A `/responses/compact` answer (types/responses/compacted_response.py): the window's user messages, then the
    compaction item, and the pass's usage."""
    return {"id": response_id, "object": "response.compaction", "created_at": int(time.time()),
            "output": input_items(window), "usage": usage_fields(usage)}


def usage_fields(usage: dict[str, Any]) -> dict[str, Any]:
    """The mock's usage in the Responses fields (types/responses/response_usage.py): input tokens with the cached
    and written ones in `input_tokens_details` where the mock's cache reports them (none under `--cache-style none`;
    no writes under OpenAI's automatic caching), output tokens (no reasoning)."""
    out: dict[str, Any] = {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                           "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": usage["total_tokens"]}
    details = usage.get("prompt_tokens_details")
    if details is not None:
        out["input_tokens_details"] = {"cached_tokens": details.get("cached_tokens") or 0}
        written = details.get("cache_write_tokens", usage.get("cache_creation_input_tokens"))
        if written is not None:
            out["input_tokens_details"]["cache_write_tokens"] = written
    return out
