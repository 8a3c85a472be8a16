"""The simulated provider's sealed compaction items: OpenAI's are opaque ("not intended to be human-interpretable":
OpenAI's "Compaction" guide) and only the provider that made one can read it.

An item's `encrypted_content` is the summary and the hashes of the user messages its window kept, encrypted and
authenticated with the simulated provider's own key (an HMAC-SHA256 keystream and tag, stdlib only): the client and
the mock agent never read it, and a forged, altered or foreign item (a real OpenAI item, litellm's readable JSON
items) fails its tag. The key is a constant of the simulated provider, so a restarted serve-mock, or a response
replayed from the response cache, still reads its own items; sealing is deterministic, so in process and over HTTP
make the same item.
"""
from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
from typing import Any, Sequence

_KEY = hashlib.sha256(b"ctxbench simulated provider: Responses compaction items").digest()
_VERSION = b"\x01"
_NONCE, _TAG = 16, 16


def seal(summary: str, kept: Sequence[str]) -> dict[str, Any]:
    """A `compaction` item holding `summary` and `kept` (hashes of the user messages its window kept)."""
    plain = json.dumps({"summary": summary, "kept": list(kept)}, separators=(",", ":")).encode("utf-8")
    nonce = hmac.new(_KEY, b"nonce" + plain, hashlib.sha256).digest()[:_NONCE]
    cipher = bytes(a ^ b for a, b in zip(plain, _keystream(nonce, len(plain))))
    tag = hmac.new(_KEY, _VERSION + nonce + cipher, hashlib.sha256).digest()[:_TAG]
    sealed = base64.urlsafe_b64encode(_VERSION + nonce + cipher + tag).decode("ascii")
    return {"type": "compaction", "id": f"cmp_{nonce.hex()}", "encrypted_content": sealed}


@functools.lru_cache(maxsize=4096)  # every later request of a run sends its items again
def unseal(encrypted_content: str) -> tuple[str, tuple[str, ...]]:
    """(summary, kept) of an item this provider made; raises ValueError for any other."""
    try:
        raw = base64.urlsafe_b64decode(encrypted_content.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ValueError("not a compaction item of this provider (not its encoding)") from None
    if len(raw) < 1 + _NONCE + _TAG or raw[:1] != _VERSION:
        raise ValueError("not a compaction item of this provider")
    nonce, cipher, tag = raw[1:1 + _NONCE], raw[1 + _NONCE:-_TAG], raw[-_TAG:]
    if not hmac.compare_digest(tag, hmac.new(_KEY, _VERSION + nonce + cipher, hashlib.sha256).digest()[:_TAG]):
        raise ValueError("the item could not be verified: made by another provider, or altered")
    payload = json.loads(bytes(a ^ b for a, b in zip(cipher, _keystream(nonce, len(cipher)))))
    return payload["summary"], tuple(payload["kept"])


def _keystream(nonce: bytes, size: int) -> bytes:
    blocks = (hashlib.sha256(_KEY + nonce + counter.to_bytes(8, "big")).digest() for counter in range(size // 32 + 1))
    return b"".join(blocks)[:size]
