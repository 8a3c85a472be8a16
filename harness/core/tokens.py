"""Token counting: each distinct text is tokenized once, then its count is reused."""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import harness  # noqa: F401  (sets the offline environment before litellm loads)
from harness.core.fast_json import canonical_json
from harness.core.frozen import FrozenDict

# Per-message framing cost, as in OpenAI's chat token accounting (role and separators).
MESSAGE_OVERHEAD_TOKENS = 4

# Counts of the texts seen in this process, kept across runs (the runs of one task under several
# strategies share most texts). The texts are the keys, so the memo is bounded by their total
# length: it starts afresh once that would pass MAX_COUNTED_CHARS, so a long-lived worker does
# not keep every past run's contents alive.
MAX_COUNTED_CHARS = 32_000_000
_text_counts: dict[str, int] = {}
_counted_chars = 0
# From this length on a text is counted from tiktoken's packed token buffer, not a list of Python
# ints (~40 bytes per token: 1 MB for a 100k-character tool output, only to take its length).
PACKED_FROM_CHARS = 4096
_encoding: Any = None  # litellm's bundled tokenizer, loaded by the first count (_tokenizer)


def _tokenizer() -> Any:
    """litellm's bundled tokenizer, imported when a text is first counted: content hashes, task suites
    and the command line's help and listings need no litellm (seconds of imports)."""
    global _encoding
    if _encoding is None:
        from litellm.litellm_core_utils.default_encoding import encoding

        _encoding = encoding
    return _encoding


def count_text(text: str) -> int:
    """Tokens in `text` with litellm's bundled tokenizer; memoized per distinct string."""
    global _counted_chars
    if not text:
        return 0
    cached = _text_counts.get(text)
    if cached is None:
        cached = tokenize_count(text)
        if _counted_chars + len(text) > MAX_COUNTED_CHARS:
            forget_counts()
        _text_counts[text] = cached
        _counted_chars += len(text)
    return cached


def tokenize_count(text: str) -> int:
    """Tokens in `text`, counted afresh (no memo)."""
    encoding = _encoding or _tokenizer()
    if len(text) >= PACKED_FROM_CHARS:
        try:
            return len(encoding.encode_to_numpy(text, disallowed_special=()))
        except UnicodeEncodeError:  # lone surrogates: encode() repairs them before counting
            pass
    return len(encoding.encode(text, disallowed_special=()))


def forget_counts() -> None:
    """Drop every memoized count (and with it the memo's hold on its texts)."""
    global _counted_chars
    _text_counts.clear()
    _counted_chars = 0


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
    provider_fields = message.get("provider_specific_fields")
    if provider_fields:  # a provider's compaction blocks (harness.models.compaction_blocks) are sent back too
        parts.extend(block.get("content") or "" for block in provider_fields.get("compaction_blocks") or ()
                     if isinstance(block, Mapping))
    return "\n".join(parts)


def count_message(message: Mapping[str, Any]) -> int:
    """Tokens of a message, framing included; a read-only message keeps its count (harness.core.frozen)."""
    if type(message) is not FrozenDict:
        return count_text(message_text(message)) + MESSAGE_OVERHEAD_TOKENS
    count = message.token_count
    if count is None:
        count = message.token_count = count_text(message_text(message)) + MESSAGE_OVERHEAD_TOKENS
    return count


def count_tools(tools: list[Mapping[str, Any]] | None) -> int:
    if not tools:
        return 0
    return count_text(canonical_json(tools).decode("ascii"))


def stable_hash(value: Any) -> str:
    """A short content hash of plain data (canonical JSON), stable across processes."""
    return stable_digest(value).hex()


def stable_digest(value: Any) -> bytes:
    """`stable_hash` as its 12 bytes: a 45-byte object against 73 for its hex text, for digests kept by the thousand."""
    blob = value.encode("utf-8") if isinstance(value, str) else canonical_json(value)
    return hashlib.blake2b(blob, digest_size=12).digest()
