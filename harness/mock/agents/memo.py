"""How a text reads, worked out once per distinct text.

The simulated agent keeps its readings of a message prefix between requests (`memory`),
but some texts are still read again on every request: the results it inspects for what to
do next (is this read whole? where does paging continue?), and every text when its memory
cannot be reused (the request does not start with the objects it read). A regular expression's
matches and a tool call's parsed arguments are pure functions of one text, so they are
memoized by that text alone: a memo says how a given message reads, never which messages
were shown. Each request still reads exactly the texts it was sent, so the agent stays
context-faithful.

Strings the harness keeps (message contents) carry their hash, so a hit costs a dict
lookup, not a re-scan. Memos are dropped when a mock session ends (`forget`) and whenever
one grows past MAX_ENTRIES, so a long-lived process does not keep old runs' texts alive.
"""
from __future__ import annotations

import json
import re
from typing import Any

MAX_ENTRIES = 200_000
_memo: dict[tuple[Any, ...], Any] = {}  # (expression, flags, operation, text) -> result


def _recall(key: tuple[Any, ...], compute: Any) -> Any:
    try:
        return _memo[key]
    except KeyError:
        pass
    value = compute()
    if len(_memo) >= MAX_ENTRIES:
        _memo.clear()
    _memo[key] = value
    return value


def remember(key: tuple[Any, ...], compute: Any) -> Any:
    """`compute()`, worked out once per key: for readings that are pure functions of the texts in `key`."""
    return _recall(key, compute)


def forget() -> None:
    """Drop every memoized reading (a session ended; its texts need not stay alive)."""
    _memo.clear()


class Pattern:
    """A compiled regular expression whose search/match/findall/finditer results are memoized per text."""

    def __init__(self, expression: str, flags: int = 0):
        self.regex = re.compile(expression, flags)
        self._key = (expression, flags)

    def search(self, text: str) -> re.Match[str] | None:
        return _recall((*self._key, "search", text), lambda: self.regex.search(text))

    def match(self, text: str) -> re.Match[str] | None:
        return _recall((*self._key, "match", text), lambda: self.regex.match(text))

    def findall(self, text: str) -> tuple[Any, ...]:
        return _recall((*self._key, "findall", text), lambda: tuple(self.regex.findall(text)))

    def finditer(self, text: str) -> tuple[re.Match[str], ...]:
        return _recall((*self._key, "finditer", text), lambda: tuple(self.regex.finditer(text)))


def pattern(expression: str, flags: int = 0) -> Pattern:
    """A memoized Pattern for an expression built at run time."""
    return Pattern(expression, flags)


def arguments(text: str) -> dict[str, Any]:
    """A tool call's JSON arguments as a dict ({} when malformed or not an object); shared, so read-only."""
    return _recall(("json", 0, "arguments", text), lambda: _parse_object(text))


def _parse_object(text: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
