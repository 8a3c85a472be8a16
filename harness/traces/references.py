"""References: the identifiers, numbers and quoted values an agent can only get right if its context holds them.

A trace replay holds the recorded actions fixed, so what a strategy would have starved the agent
of shows as references the recorded agent used that the view it was sent no longer held
(`forgotten_references`, harness.traces.replay). A reference is, in any message text (content, tool
call arguments, tool results):

* a token (letters, digits and ``_ . / : @ # -``, trailing punctuation stripped) of 3+ characters
  that holds a digit and a letter (``ENT-4821``, ``v1.2.3``, ``0x1f``), or is a number of 3+ digits
  (``4821``, ``3.1415``), or a path or dotted name (``src/app.py``, ``config.yaml``, ``a.b.c``),
  or a snake_case identifier (``user_id``);
* the text inside double quotes, backticks or curly quotes (3 to 100 characters, one line);
* in tool call arguments (JSON), every string value of 3 to 100 characters, and every integer of 3+ digits.

Plain words are not references: whether a summary kept "the capital" cannot be judged by string
matching. Matching is exact (case-sensitive). Ours; docs/traces.md.
"""
from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from typing import Any, Iterable, Iterator, Mapping

# Tokens (runs of [\w./:@#-]) holding a digit, a slash, an underscore or a dot (plain words are skipped in
# the regex engine); the lookbehind starts each match at its token's start, so matching stays linear in the
# text. The possessive run of the token's other characters (letters, `:@#-`) up to its first such character
# spares the engine backtracking through each word: the same matches as [\w./:@#-]*[\d/_.][\w./:@#-]*,
# which Python 3.10 (no possessive quantifiers) uses.
_TOKEN = re.compile(r"(?<![\w./:@#-])[^\W\d_]*+(?:[:@#-]+[^\W\d_]*+)*+[\d/_.][\w./:@#-]*+" if sys.version_info >= (3, 11)
                    else r"(?<![\w./:@#-])[\w./:@#-]*[\d/_.][\w./:@#-]*")
# An ASCII text's tokens as _TOKEN finds them, by classes spelled out in ASCII (in an ASCII text \w is
# [A-Za-z0-9_] and \d is [0-9]), which the engine checks by table lookup, ~2x faster than the Unicode ones
# (on another text, a letter such as é would end a token here and not in _TOKEN). Each is captured stripped of
# the punctuation at either end (_STRIP; `,;` never occur inside one): from its first letter, digit or
# underscore to its last.
_ASCII_STRIPPED = re.compile(r"(?<![A-Za-z0-9_./:@#-])(?=[A-Za-z:@#-]*+[0-9/_.])[.:/#@-]*+"
                             r"([A-Za-z0-9_](?:[A-Za-z0-9_./:@#-]*[A-Za-z0-9_])?)" if sys.version_info >= (3, 11)
                             else r"(?<![A-Za-z0-9_./:@#-])(?=[A-Za-z:@#-]*[0-9/_.])[.:/#@-]*"
                             r"([A-Za-z0-9_](?:[A-Za-z0-9_./:@#-]*[A-Za-z0-9_])?)")
_QUOTES = ('"', "`", "\u201c")  # what a quoted value starts with
_QUOTED = re.compile(r'"([^"\n]{3,100})"|`([^`\n]{3,100})`|\u201c([^\u201d\n]{3,100})\u201d')
_STRIP = ".,:;/#@-"
_ASCII_TOKEN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@#-"
_NON_TOKEN_TO_SPACE = bytes(c if c in _ASCII_TOKEN_CHARS else 0x20 for c in range(256))  # for bytes.translate
_ASCII_STRIP = b".:/#@-"  # _STRIP's characters that can be in a token (`,;` never are)
_NUMBER = re.compile(r"\d[\d.,]*\d")
MAX_VALUE_CHARS = 100


def _is_reference(token: str) -> bool:
    if len(token) < 3:
        return False
    has_digit = any(c.isdigit() for c in token)
    if has_digit:
        if any(c.isalpha() for c in token):
            return True
        return _NUMBER.fullmatch(token) is not None and sum(c.isdigit() for c in token) >= 3
    if "/" in token or "_" in token.strip("_"):
        return any(c.isalnum() for c in token)
    if "." in token:
        parts = token.split(".")
        return len(parts) >= 2 and all(part and part[0].isalnum() for part in parts)
    return False


def _tokens(text: str) -> Iterable[str]:
    """A text's tokens, stripped of their end punctuation: the candidates for its references."""
    if text.isascii():
        return _ASCII_STRIPPED.findall(text)
    return {token.strip(_STRIP) for token in _TOKEN.findall(text)}


def _quoted(text: str) -> Iterator[str]:
    """A text's quoted values (each a reference); most texts hold no quote mark, found without the engine."""
    if not any(quote in text for quote in _QUOTES):
        return
    for match in _QUOTED.finditer(text):
        value = next(group for group in match.groups() if group is not None).strip()
        if len(value) >= 3:
            yield value


def text_references(text: str, into: set[str] | None = None) -> set[str]:
    """The references in a text (tokens and quoted values)."""
    found = set() if into is None else into
    found.update(_quoted(text))
    found.update(filter(_kept, _tokens(text)))
    return found


@lru_cache(maxsize=1 << 16)
def _kept(token: str) -> bool:
    """Whether a (stripped) token is a reference: memoized, as the same identifiers recur across a trace's
    texts (~4 readings of each)."""
    return _is_reference(token)


def forget() -> None:
    """Drop every memoized reading, so a measured replay reads each text as a fresh process would."""
    for memo in (_kept, _readings, _encoded, _content_references, _wanted_references, _argument_references):
        memo.cache_clear()


def _value_references(value: Any, found: set[str]) -> None:
    if isinstance(value, str):
        if 3 <= len(value) <= MAX_VALUE_CHARS:
            found.add(value.strip())
        text_references(value, found)
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        if abs(value) >= 100:
            found.add(str(value))
    elif isinstance(value, dict):
        for item in value.values():  # keys are the tool's parameter names, not the agent's values
            _value_references(item, found)
    elif isinstance(value, list):
        for item in value:
            _value_references(item, found)


@lru_cache(maxsize=8192)
def _content_references(text: str) -> frozenset[str]:
    """A content's references, memoized by text: a replay reads each text as the trace has it and as logged."""
    return frozenset(text_references(text))


@lru_cache(maxsize=8192)
def _readings(text: str) -> tuple[frozenset[str] | frozenset[bytes], frozenset[str]]:
    """A text's candidate tokens (an ASCII text's as bytes: `_ascii_runs`) and quoted values, unjudged, memoized
    by text."""
    return (_ascii_runs(text) if text.isascii() else frozenset(_tokens(text))), frozenset(_quoted(text))


def _ascii_runs(text: str) -> frozenset[bytes]:
    """Every run of token characters of an ASCII text, stripped of its end punctuation, as bytes.

    Ours (trace replay's overhead): one byte translation (every other character to a space) and
    a split, ~1.6x faster than `_ASCII_STRIPPED` on the replays' texts, whose big tool outputs are read but never
    tokenized. The runs are a superset of `_tokens(text)`: the extra ones hold none of `0-9 / _ .` (the pattern's
    lookahead), so none is a reference (`_kept` says no) and the judged intersection with a wanted set is the same.
    Left as bytes: decoding every run would cost what the split saves; only the wanted ones are decoded.
    """
    runs = set(text.encode("ascii").translate(_NON_TOKEN_TO_SPACE).split())
    return frozenset({run.strip(_ASCII_STRIP) for run in runs}) - {b""}


@lru_cache(maxsize=64)
def _encoded(wanted: frozenset[str]) -> frozenset[bytes]:
    """A wanted set as UTF-8 bytes, to meet an ASCII text's runs (a non-ASCII value meets none)."""
    return frozenset(value.encode("utf-8", "surrogatepass") for value in wanted)


@lru_cache(maxsize=8192)
def _wanted_references(text: str, wanted: frozenset[str]) -> frozenset[str]:
    """Those of a content's references that are `wanted`: its tokens are judged only where wanted, so a long
    text full of ids nobody asks about costs one scan, not a judgement per id (the same set as
    `_content_references(text) & wanted`)."""
    tokens, quoted = _readings(text)
    found = {run.decode("ascii") for run in tokens & _encoded(wanted)} if text.isascii() else tokens & wanted
    return frozenset(filter(_kept, found)) | (quoted & wanted)


def _content(text: str, wanted: frozenset[str] | None) -> frozenset[str]:
    return _content_references(text) if wanted is None else _wanted_references(text, wanted)


@lru_cache(maxsize=8192)
def _argument_references(arguments: str) -> frozenset[str]:
    found: set[str] = set()
    try:
        _value_references(json.loads(arguments), found)
    except (json.JSONDecodeError, TypeError):
        text_references(arguments, found)
    return frozenset(found)


def message_references(message: Mapping[str, Any], wanted: frozenset[str] | None = None) -> frozenset[str]:
    """The references of one chat message: its content's, and its tool calls' argument values; given `wanted`,
    only those of them that are wanted."""
    content = message.get("content")
    calls = message.get("tool_calls")
    if isinstance(content, str) and not calls:
        return _content(content, wanted)
    found: set[str] = set(_content(content, wanted)) if isinstance(content, str) else set()
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                found |= _content(part["text"], wanted)
    for call in calls or ():
        found |= _argument_references((call.get("function") or {}).get("arguments") or "")
    found.discard("")
    return frozenset(found) if wanted is None else frozenset(found & wanted)


class ReferenceIndex:
    """How many messages of the view hold each reference, kept as messages enter and leave it
    (ViewState.watch), so a request's check costs its own references, not the view's size. Given `wanted`
    (those a check may ask about: a replay's recorded responses' references), it counts only those."""

    def __init__(self, wanted: frozenset[str] | None = None) -> None:
        self.wanted = wanted
        self.holders: dict[str, int] = {}
        self._cache: dict[int, tuple[Mapping[str, Any], frozenset[str]]] = {}  # message id -> (as sent, references)

    def references(self, message_id: int, message: Mapping[str, Any]) -> frozenset[str]:
        cached = self._cache.get(message_id)
        if cached is not None and cached[0] is message:
            return cached[1]
        found = message_references(message, self.wanted)
        self._cache[message_id] = (message, found)
        return found

    def watch(self, message_id: int, message: Mapping[str, Any], sign: int) -> None:
        holders = self.holders
        for reference in self.references(message_id, message):
            count = holders.get(reference, 0) + sign
            if count > 0:
                holders[reference] = count
            else:
                holders.pop(reference, None)

    def missing(self, references: Iterable[str]) -> list[str]:
        """Those of `references` (all of them wanted) no message of the view holds, sorted."""
        return sorted(r for r in references if r not in self.holders)
