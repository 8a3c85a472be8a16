"""A provider's own compaction on the wire: what a request asks for, and how a reply carries it back.

Anthropic's server-side compaction returns a `compaction` content block holding the summary; litellm keeps it in the
assistant message's `provider_specific_fields.compaction_blocks` and, sent back in a later request, puts it first in
that message's content (litellm prompt_templates/factory.py), where the API drops every block before it. ctxbench logs
the blocks as litellm gives them, so the view sends them back unchanged.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

FIELDS = "provider_specific_fields"
BLOCKS = "compaction_blocks"

# Anthropic's compaction edit (docs "Compaction"; anthropic SDK beta_compact_20260112_edit_param.py).
ANTHROPIC_EDIT = "compact_20260112"
ANTHROPIC_BETA = "compact-2026-01-12"
ANTHROPIC_DEFAULT_TRIGGER = 150_000
ANTHROPIC_MIN_TRIGGER = 50_000


def compaction_blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The message's compaction blocks, in order (none for a message without)."""
    fields = message.get(FIELDS)
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


def with_blocks(message: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The message with these compaction blocks, as litellm returns them."""
    return {**message, FIELDS: {**(message.get(FIELDS) or {}), BLOCKS: blocks}} if blocks else message


def paused(message: Mapping[str, Any]) -> bool:
    """A reply that holds a compaction block and nothing else: the provider compacted and paused
    (`pause_after_compaction`), and the next request continues the turn."""
    return bool(compaction_blocks(message)) and not message.get("tool_calls") and not message.get("content")


def latest_compaction(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of the last message holding a compaction summary: the API reads the request from its block on."""
    return next((index for index in range(len(messages) - 1, -1, -1) if summary_of(messages[index])), None)


def summary_message(summary: str) -> dict[str, Any]:
    """The model-visible block of a compaction: its summary, as a message of its own, in the user's turn: the
    context the model is handed, read as the mock agent reads every summary (ours: where the API places it for
    the model is its own; litellm's polyfill puts it in the system prompt)."""
    return {"role": "user", "content": summary}


def provider_visible(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """What the model sees of a request carrying a compaction block: the system prompt, the latest block's summary,
    the rest of that message and what follows; the API drops every earlier block."""
    at = latest_compaction(messages)
    if at is None:
        return list(messages)
    compacted = messages[at]
    rest = {key: value for key, value in compacted.items() if key != FIELDS}
    return [*(message for message in messages[:at] if message.get("role") == "system"),
            summary_message(summary_of(compacted) or ""),
            *([rest] if rest.get("content") or rest.get("tool_calls") else []), *messages[at + 1:]]
