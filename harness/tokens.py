"""Token counting: each distinct text is tokenized once, then its count is reused."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

import harness  # noqa: F401  (sets the offline environment before litellm loads)
from litellm.litellm_core_utils.default_encoding import encoding as _encoding

# Per-message framing cost, as in OpenAI's chat token accounting (role and separators).
MESSAGE_OVERHEAD_TOKENS = 4

_text_counts: dict[str, int] = {}


def count_text(text: str) -> int:
    """Tokens in `text` with litellm's bundled tokenizer; memoized per distinct string."""
    if not text:
        return 0
    cached = _text_counts.get(text)
    if cached is None:
        cached = len(_encoding.encode(text, disallowed_special=()))
        _text_counts[text] = cached
    return cached


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a chat message that counts toward its size: content plus tool calls."""
    parts = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts.extend(p.get("text", "") for p in content if isinstance(p, Mapping))
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        parts.append(f"{function.get('name', '')}({function.get('arguments', '')})")
    return "\n".join(parts)


def count_message(message: Mapping[str, Any]) -> int:
    return count_text(message_text(message)) + MESSAGE_OVERHEAD_TOKENS


def count_tools(tools: list[Mapping[str, Any]] | None) -> int:
    if not tools:
        return 0
    return count_text(json.dumps(tools, sort_keys=True, separators=(",", ":")))


def stable_hash(value: Any) -> str:
    """A short content hash of plain data (canonical JSON), stable across processes."""
    blob = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(blob.encode("utf-8"), digest_size=12).hexdigest()
