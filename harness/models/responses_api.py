"""The LLM layer's Responses API transport: a chat-format request sent as OpenAI's `POST /responses`, or as
`POST /responses/compact`, through litellm's own Responses calls (`litellm.responses`, `litellm.compact_responses`),
and the answer read back into chat format (harness.models.responses_items).

A request goes this way when it needs the Responses API: a provider parameter only that API takes (a strategy's
`context_management` list or `truncation`: Strategy.request_options) or a compaction item among its messages; every
other request of a real model stays on chat completions. Why not litellm's own chat->Responses bridge
(`openai/responses/<model>` through litellm.completion): in litellm 1.110.2 it refuses `context_management` as a
parameter OpenAI's chat does not take, and given it through `extra_body` it drops the `compaction` output item (an item
of no type it knows becomes no choice: completion_extras/litellm_responses_transformation/transformation.py:1493-1509
and :969-970) and has no way to send one back (tests/models/test_responses_transport.py runs it).

The request: the messages as items (a system prompt stays a `system` message item), the tools as function tools,
`store: false` (the whole input is sent each time: nothing needs storing, and the compaction guide names it for
zero data retention), the cache key where the cache policy gives one and, for the GPT-5.6 family and later, its
`prompt_cache_breakpoint` markers on content parts and `prompt_cache_options` (harness.models.openai_breakpoints), as
on chat completions; the Responses API takes no Anthropic-style markers. Responses has no `seed`: serve-mock takes the
run's seed from its header, as for Anthropic. Usage comes back in the Responses fields and is read through litellm's
own mapping to chat usage (responses/utils.py:1291).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.models.cache_marks import CacheMarks
from harness.models.cache_policy import mark_request
from harness.models.provider_compaction import compaction_items, with_items
from harness.models.responses_items import chat_messages, function_tools, input_items
from harness.models.usage import quiet_litellm

COMPACT = "responses_compact"  # the client's own flag (never sent): the request is a `/responses/compact` call
_NOT_SENT = ("seed", "tools", "max_tokens", "max_completion_tokens", COMPACT)


def wanted(kwargs: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a request needs the Responses API: a `/responses/compact` call, a parameter only that API takes
    (`truncation`; `context_management` as its list of entries: Anthropic's is an object with edits, sent on
    Anthropic's Messages API), or a compaction item to send back."""
    return bool(kwargs.get(COMPACT)) or "truncation" in kwargs or isinstance(kwargs.get("context_management"), list) \
        or any(compaction_items(message) for message in messages)


def send(model: str, messages: Sequence[Mapping[str, Any]], kwargs: Mapping[str, Any], marks: CacheMarks,
         sends_cache_key: bool) -> tuple[list[dict[str, Any]], Any, Any]:
    """One Responses request: (the reply as chat messages: the assistant's answer, or a `/responses/compact`
    window, its chat usage, the litellm response for its headers)."""
    litellm = quiet_litellm()
    params = {key: value for key, value in kwargs.items() if key not in _NOT_SENT}
    limit = kwargs.get("max_completion_tokens") or kwargs.get("max_tokens")
    if marks.prompt_cache_mode is not None:  # GPT-5.6 and later: breakpoints on content parts, as on chat
        messages, _, extra = mark_request(list(messages), None, marks)
        params.update({key: value for key, value in extra.items() if key not in params})
    if marks.prompt_cache_key and sends_cache_key:
        params.setdefault("prompt_cache_key", marks.prompt_cache_key)
    items = input_items(messages)
    if kwargs.get(COMPACT):
        response = litellm.compact_responses(model=model, input=items, **params)
    else:
        params.setdefault("store", False)
        if limit is not None:
            params.setdefault("max_output_tokens", limit)
        response = litellm.responses(model=model, input=items, tools=function_tools(kwargs.get("tools")) or None,
                                     **params)
    output = chat_messages([_plain(item) for item in response.output or ()], "output", output=True)
    if not kwargs.get(COMPACT):
        output = [_one_turn(output)]
    from litellm.responses.utils import ResponseAPILoggingUtils

    return output, ResponseAPILoggingUtils.transform_response_api_usage_to_chat_usage(response.usage), response


def _plain(item: Any) -> Any:
    """An output item as plain data (litellm gives the SDK's typed items, or dicts for types it does not know)."""
    return item.model_dump(exclude_none=True) if hasattr(item, "model_dump") else item


def _one_turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A response's output as one assistant message: its texts joined, its calls and compaction items in order
    (several message items are one answer, as litellm folds them)."""
    turn: dict[str, Any] = {"role": "assistant", "content": "".join(m.get("content") or "" for m in messages)}
    calls = [call for message in messages for call in message.get("tool_calls") or ()]
    if calls:
        turn["tool_calls"] = calls
    return with_items(turn, [dict(item) for message in messages for item in compaction_items(message)])
