"""A provider's own compaction on the wire: what a request asks for, and how a reply carries it back.

Anthropic's server-side compaction returns a `compaction` content block holding the summary; litellm keeps it in the
assistant message's `provider_specific_fields.compaction_blocks` and, sent back in a later request, puts it first in
that message's content (litellm prompt_templates/factory.py), where the API drops every block before it. ctxbench logs
the blocks as litellm gives them, so the view sends them back unchanged.

OpenAI's Responses compaction returns an opaque `compaction` output item (`{"type": "compaction", "id",
"encrypted_content"}`: openai SDK types/responses/response_compaction_item.py:11-26) that the client keeps in its input
and that only the provider which made it can read. litellm's chat format has no place for one (its chat->Responses
bridge drops it), so ctxbench keeps the items in the assistant message's `provider_specific_fields.compaction_items`,
in the order the reply gave them, and sends them back as input items (harness.models.responses_api).
"""
from __future__ import annotations

from collections import Counter
from itertools import repeat
from operator import contains
from typing import Any, Callable, Iterator, Mapping, Sequence

from harness.core.tokens import stable_hash
from harness.models.mock.sealing import unseal

FIELDS = "provider_specific_fields"
BLOCKS = "compaction_blocks"

# Anthropic's compaction edit (docs "Compaction"; anthropic SDK beta_compact_20260112_edit_param.py).
ANTHROPIC_EDIT = "compact_20260112"
ANTHROPIC_BETA = "compact-2026-01-12"
ANTHROPIC_DEFAULT_TRIGGER = 150_000
ANTHROPIC_MIN_TRIGGER = 50_000
# The SDK's compaction request (`compaction: {"type": "summarize"}`; anthropic SDK 2.x lib/tools/_beta_runner.py).
ANTHROPIC_SUMMARIZE_BETA = "compact-2026-09-04"
# Anthropic's context editing beside it: the clear_tool_uses edit and its beta (harness.models.mock.context_editing);
# the response reports the edits it applied in `context_management`, which litellm keeps in the message's provider
# fields (anthropic/chat/transformation.py `_build_provider_specific_fields`).
ANTHROPIC_CLEAR_EDIT = "clear_tool_uses_20250919"
ANTHROPIC_CONTEXT_BETA = "context-management-2025-06-27"
APPLIED = "context_management"

ITEMS = "compaction_items"
# OpenAI's Responses compaction: `context_management: [{"type": "compaction", "compact_threshold": N}]` (openai SDK
# types/responses/response_create_params.py:64,398-403); N at least 1,000 (litellm types/llms/openai.py:1362).
OPENAI_COMPACTION = "compaction"
OPENAI_MIN_THRESHOLD = 1_000
INSTRUCTION_ROLES = ("system", "developer")  # what an OpenAI compaction leaves in place: the client's instructions


def carries_compaction(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any message carries a provider's fields (where a compaction is kept). Asked of every request of every
    run, most of which carry none: the scan runs in C."""
    return any(map(contains, messages, repeat(FIELDS)))


def carried_entries(messages: Sequence[Mapping[str, Any]], read: Callable[[Mapping[str, Any]], list[Mapping[str, Any]]]
                    ) -> Iterator[tuple[int, int, Mapping[str, Any]]]:
    """(message index, entry index, entry) of every compaction entry `read` finds (`compaction_blocks` or
    `compaction_items`), looking into a message only when the request carries provider fields at all."""
    if not carries_compaction(messages):
        return
    for index, message in enumerate(messages):
        if FIELDS in message:
            for number, entry in enumerate(read(message)):
                yield index, number, entry


def compaction_blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The message's compaction blocks, in order (none for a message without: every message of every request is
    asked, so one without provider fields answers at once)."""
    fields = message.get(FIELDS)
    if not fields:
        return []
    blocks = fields.get(BLOCKS) if isinstance(fields, Mapping) else None
    return [block for block in blocks or () if isinstance(block, Mapping) and block.get("type") == "compaction"]


def summary_of(message: Mapping[str, Any]) -> str | None:
    """The summary of the message's last compaction block that holds one (a block with null content is a failed
    compaction, which the API treats as a no-op)."""
    for block in reversed(compaction_blocks(message)):
        content = block.get("content")
        if isinstance(content, str) and content:
            return content
    return None


def compaction_items(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The message's OpenAI compaction items, in order (none for a message without, at once)."""
    fields = message.get(FIELDS)
    if not fields:
        return []
    items = fields.get(ITEMS) if isinstance(fields, Mapping) else None
    return [item for item in items or () if isinstance(item, Mapping) and item.get("type") == OPENAI_COMPACTION]


def with_items(message: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """The message with these OpenAI compaction items."""
    return {**message, FIELDS: {**(message.get(FIELDS) or {}), ITEMS: items}} if items else message


def with_blocks(message: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The message with these compaction blocks, as litellm returns them."""
    return {**message, FIELDS: {**(message.get(FIELDS) or {}), BLOCKS: blocks}} if blocks else message


def with_applied(message: dict[str, Any], applied: list[dict[str, Any]]) -> dict[str, Any]:
    """The message carrying the context edits a provider applied, as litellm returns them."""
    return {**message, FIELDS: {**(message.get(FIELDS) or {}), APPLIED: {"applied_edits": applied}}}


def applied_edits(fields: Any) -> dict[str, Any] | None:
    """The response's `context_management` (`{"applied_edits": [...]}`) in a message's provider fields, or None."""
    found = fields.get(APPLIED) if isinstance(fields, Mapping) else None
    return dict(found) if isinstance(found, Mapping) else None


def blocks_alone(message: dict[str, Any]) -> dict[str, Any]:
    """A message whose compaction blocks are all it says, with no content rather than an empty text: litellm sends
    such a message back as its blocks alone, and an empty text as a placeholder text of its own
    (prompt_templates/factory.py `_EMPTY_TEXT_PLACEHOLDER`), which a model would read."""
    if compaction_blocks(message) and not message.get("content") and not message.get("tool_calls"):
        return {**message, "content": None}
    return message


def paused(message: Mapping[str, Any]) -> bool:
    """A reply that holds a compaction block and nothing else: the provider compacted and paused
    (`pause_after_compaction`), and the next request continues the turn."""
    return bool(compaction_blocks(message)) and not message.get("tool_calls") and not message.get("content")


def user_key(message: Mapping[str, Any]) -> str:
    """A user message's identity in a compaction item's kept list: the hash of its content."""
    return stable_hash(["user", message.get("content")])


def _readable(message: Mapping[str, Any]) -> tuple[str, tuple[str, ...], bool] | None:
    """(summary, kept, OpenAI's) of the message's latest compaction: an Anthropic block's summary (keeps nothing),
    or an OpenAI item the simulated provider can read (a foreign item is none: the provider refuses it first)."""
    summary = summary_of(message)
    if summary:
        return summary, (), False
    for item in reversed(compaction_items(message)):
        try:
            return (*unseal(item.get("encrypted_content")), True)
        except (ValueError, TypeError, AttributeError):
            continue
    return None


def compaction_at(messages: Sequence[Mapping[str, Any]]) -> tuple[int, str, list[int]] | None:
    """(index, summary, kept) of the request's latest compaction: the message holding it, its summary, and the
    indexes before it the model still sees. Anthropic: the system prompt (the API drops every earlier block);
    OpenAI: the instructions (system and developer messages, which litellm keeps before a compaction too:
    responses/litellm_completion_transformation/compaction_items.py:195-200,276-277) and the user messages a
    `/responses/compact` window kept (openai SDK types/responses/compacted_response.py:28-31)."""
    if not carries_compaction(messages):
        return None
    for at in range(len(messages) - 1, -1, -1):
        if FIELDS not in messages[at]:
            continue
        found = _readable(messages[at])
        if found is None:
            continue
        summary, kept, openai = found
        wanted = Counter(kept)
        indexes = []
        for index in range(at):
            role = messages[index].get("role")
            if role == "system" or (openai and role in INSTRUCTION_ROLES):
                indexes.append(index)
            elif openai and role == "user" and wanted[key := user_key(messages[index])] > 0:
                wanted[key] -= 1
                indexes.append(index)
        return at, summary, indexes
    return None


def summary_message(summary: str) -> dict[str, Any]:
    """The model-visible block of a compaction: its summary, as a message of its own, in the user's turn: the
    context the model is handed, read as the mock agent reads every summary (ours: where the API places it for
    the model is its own; litellm's polyfill puts it in the system prompt)."""
    return {"role": "user", "content": summary}


def provider_visible(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """What the model sees of a request carrying a compaction: what precedes the latest one and is kept
    (`compaction_at`), its summary, the rest of that message and what follows; the API drops everything else."""
    return visible_from(messages, compaction_at(messages))


def visible_from(messages: Sequence[Mapping[str, Any]],
                 found: tuple[int, str, list[int]] | None) -> list[Mapping[str, Any]]:
    """`provider_visible` for a request whose latest compaction is already found (`compaction_at`'s answer): a caller
    that needs it too reads the request once."""
    if found is None:
        return list(messages)
    at, summary, kept = found
    rest = {key: value for key, value in messages[at].items() if key != FIELDS}
    return [*(messages[index] for index in kept), summary_message(summary),
            *([rest] if rest.get("content") or rest.get("tool_calls") else []), *messages[at + 1:]]
