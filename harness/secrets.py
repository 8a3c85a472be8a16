"""Secret values to keep out of every file written: those in profiles and in the environment."""
from __future__ import annotations

import os
import re
from typing import Any, Iterable

SECRET_KEY = re.compile(r"(api[_-]?key|secret|token|authorization|password|headers?)$", re.IGNORECASE)
_SECRET_ENV = re.compile(r"(API_?KEY|SECRET|TOKEN|PASSWORD)", re.IGNORECASE)
MIN_SECRET_LENGTH = 8  # shorter values are too common to scrub safely
REDACTED = "<redacted>"


def is_secret_key(key: Any) -> bool:
    """A key whose value is a secret (`input_tokens` and the like are counts, not tokens)."""
    return bool(SECRET_KEY.search(str(key))) and not str(key).endswith("_tokens")


def redact(data: Any) -> Any:
    """Replace the values of secret-named keys (keys, tokens, headers) before data is written anywhere."""
    if isinstance(data, dict):
        return {k: (REDACTED if is_secret_key(k) else redact(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [redact(v) for v in data]
    return data


def _values(data: Any) -> Iterable[str]:
    if isinstance(data, dict):
        for value in data.values():
            yield from _values(value)
    elif isinstance(data, (list, tuple)):
        for value in data:
            yield from _values(value)
    elif isinstance(data, str):
        yield data
        if data.lower().startswith("bearer "):
            yield data[7:]


def secret_values(data: Any) -> set[str]:
    """Values under secret-named keys anywhere in `data`, plus secret-named environment variables."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if is_secret_key(key):
                    found.update(_values(value))
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(data)
    found.update(value for name, value in os.environ.items() if _SECRET_ENV.search(name))
    return {value for value in found if len(value) >= MIN_SECRET_LENGTH}


def scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "<redacted>")
    return text
