"""A provider's own compaction on the wire: what a request asks for, and how a reply carries it back.

Anthropic's server-side compaction returns a `compaction` content block holding the summary; litellm keeps it in the
assistant message's `provider_specific_fields.compaction_blocks` and, sent back in a later request, puts it first in
that message's content (litellm prompt_templates/factory.py), where the API drops every block before it. ctxbench logs
the blocks as litellm gives them, so the view sends them back unchanged.
"""
from __future__ import annotations

from typing import Any, Mapping

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
