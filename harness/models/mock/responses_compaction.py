"""OpenAI's Responses compaction, as the simulated provider applies it (server-side and `POST /responses/compact`).

The rules, from OpenAI's "Compaction" guide and the openai SDK's types (3.63):
- server-side: `context_management: [{"type": "compaction", "compact_threshold": N}]` on `POST /responses`
  (types/responses/response_create_params.py:64,398-403; only the type `compaction` exists, line 400); when the
  rendered input crosses N the server compacts, emits a `compaction` output item in the same response, and answers
  from the compacted context (guide: "Server-side compaction"). N is at least 1,000 (litellm
  types/llms/openai.py:1362); OpenAI documents no default, so the simulated provider asks for one;
- the item is `{"type": "compaction", "id", "encrypted_content"}` (types/responses/response_compaction_item.py:11-26),
  opaque: "not intended to be human-interpretable"; the client appends it to its input and may drop every item before
  the latest compaction item, which "carries the necessary context" (guide). Only the provider that made an item can
  read it: one it cannot verify is refused (400);
- `POST /responses/compact` returns the compacted window: "a list of all user messages, followed by a single
  compaction item" (types/responses/compacted_response.py:28-31), with the pass's usage (line 34-37).

So a request's latest compaction item stands for everything before it but what its window kept verbatim: the model
sees the instructions (system and developer messages, which litellm's own bridge keeps before a compaction too:
responses/litellm_completion_transformation/compaction_items.py:195-200,276-277), the user messages a
`/responses/compact` window kept (none for a server-side item), the item's summary, and every item after it (ours:
where the guide is silent on items the client did not drop). The summary is the mock summarizer's, written from
what the request showed (harness.models.mock.compaction), as lossy as every summary here.

What the model sees of a request is harness.models.provider_compaction.provider_visible, shared with trace replays;
the items are sealed by harness.models.mock.sealing.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.models.mock.compaction import CompactionRequestError
from harness.models.mock.sealing import seal, unseal
from harness.models.provider_compaction import (OPENAI_COMPACTION, OPENAI_MIN_THRESHOLD, carried_entries, compaction_at,
                                                compaction_items, user_key, with_items)

_ENTRY_KEYS = {"type", "compact_threshold"}


def read_threshold(context_management: Any, where: str = "context_management") -> int | None:
    """The request's compaction threshold (None: no compaction entry); raises CompactionRequestError as the API
    refuses a malformed `context_management` (a list of entries, each of a known type, compaction at most once)."""
    if context_management is None:
        return None
    if not isinstance(context_management, list):
        raise CompactionRequestError(where, "expected an array of context management entries")
    threshold = None
    for index, entry in enumerate(context_management):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            raise CompactionRequestError(at, "expected an object")
        if entry.get("type") != OPENAI_COMPACTION:
            raise CompactionRequestError(f"{at}.type", f"unknown context management type {entry.get('type')!r}; "
                                                       f"the only one is {OPENAI_COMPACTION!r}")
        unknown = sorted(set(entry) - _ENTRY_KEYS)
        if unknown:
            raise CompactionRequestError(f"{at}.{unknown[0]}", "Unknown parameter")
        if threshold is not None:
            raise CompactionRequestError(at, f"{OPENAI_COMPACTION!r} given twice")
        value = entry.get("compact_threshold")
        if value is None:
            raise CompactionRequestError(f"{at}.compact_threshold", "OpenAI documents no default threshold; the "
                                                                    "simulated provider needs one")
        if type(value) is not int:
            raise CompactionRequestError(f"{at}.compact_threshold", f"expected an integer, got {value!r}")
        if value < OPENAI_MIN_THRESHOLD:
            raise CompactionRequestError(f"{at}.compact_threshold",
                                         f"must be at least {OPENAI_MIN_THRESHOLD}, got {value}")
        threshold = value
    return threshold


def check_truncation(truncation: Any, where: str = "truncation") -> None:
    """`truncation` as the simulated provider serves it: "disabled" (the API's default: an input past the window is
    refused), never "auto" (dropping items on its own would change what the model sees behind the strategy's back)."""
    if truncation not in (None, "disabled"):
        raise CompactionRequestError(where, f"the simulated provider serves only 'disabled', got {truncation!r}")


def check_item(item: Mapping[str, Any], where: str) -> None:
    """Refuse (CompactionRequestError naming `where`) an input compaction item this provider cannot read."""
    content = item.get("encrypted_content")
    if not isinstance(content, str):
        raise CompactionRequestError(f"{where}.encrypted_content", "expected a string")
    try:
        unseal(content)
    except ValueError as exc:
        raise CompactionRequestError(f"{where}.encrypted_content", f"invalid compaction item: {exc}") from None


def check_items(messages: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a request holding a compaction item this provider did not make (CompactionRequestError naming it)."""
    for index, number, item in carried_entries(messages, compaction_items):
        check_item(item, f"messages[{index}].provider_specific_fields.compaction_items[{number}]")


def window_users(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user messages the model sees of a request: what `/responses/compact` keeps verbatim in its window."""
    found = compaction_at(messages)
    at, kept = (-1, []) if found is None else (found[0], found[2])
    return [messages[index] for index in [*kept, *range(at + 1, len(messages))] if messages[index].get("role") == "user"]


def compaction_message(summary: str, kept: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The compaction item as a message of its own (the last of a `/responses/compact` window)."""
    return with_items({"role": "assistant", "content": ""}, [seal(summary, [user_key(message) for message in kept])])


def compaction_reply(summary: str, answer: dict[str, Any]) -> dict[str, Any]:
    """A server-side compaction's reply: the item, then the answer (its window kept nothing verbatim)."""
    return with_items(dict(answer), [seal(summary, ())])
