"""JSON as the json module writes it, by orjson where orjson writes the same thing ~4-5x faster.

A run writes every event as a line and hashes every message it sends (view hashes, call ids,
the agent's seeds), so both are on the hot path. What orjson refuses or only passes on (str,
int and dict subclasses other than read-only messages, dataclasses, datetimes, integers past 64 bits, lone surrogates) goes
to the json module (lone surrogates as ASCII escapes).
"""
from __future__ import annotations

import json
from typing import Any

import orjson

from harness.frozen import FrozenDict, FrozenList

_LINE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)  # events are trees
_ASCII_LINE = json.JSONEncoder(separators=(",", ":"), check_circular=False)  # for strings UTF-8 cannot hold
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_SORTED = json.JSONEncoder(sort_keys=True)  # json.dumps(value, sort_keys=True)'s own encoder, built once
_PASS_ON = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_LINE_OPTIONS = _PASS_ON | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
_CANONICAL_OPTIONS = _PASS_ON | orjson.OPT_SORT_KEYS


def _refuse(value: Any) -> Any:
    """orjson's fallback: read-only messages (harness.frozen) as their plain types, the rest to the json module."""
    if type(value) is FrozenDict:
        return dict(value)
    if type(value) is FrozenList:
        return list(value)
    raise TypeError(f"left to the json module: {type(value).__name__}")


def json_line(value: Any) -> bytes:
    """A line of compact UTF-8 JSON that reads back as `json.dumps(value, ensure_ascii=False)` does.

    Floats are spelled orjson's way (0.00001 for 1e-05) and read back equal; NaN and infinities,
    which the json module writes as non-standard tokens, become null. A string UTF-8 cannot hold (a lone
    surrogate, as a model's JSON "\\ud800" decodes to) makes that line ASCII with escapes, which reads back
    as the very same string (issue 20 part 6), so the line is written and the view hashes still replay.
    """
    try:
        return orjson.dumps(value, default=_refuse, option=_LINE_OPTIONS)
    except TypeError:
        text = _LINE.encode(value)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (_ASCII_LINE.encode(value) + "\n").encode("ascii")


def canonical_json(value: Any) -> bytes:
    """Plain data as JSON with sorted keys and ASCII escapes: `json.dumps(value, sort_keys=True)`, compact,
    byte for byte. orjson's bytes are used when they are exactly those: ASCII output without DEL
    (which the json module escapes) and no float in the data (spelled differently)."""
    if not _holds_float(value):
        try:
            fast = orjson.dumps(value, default=_refuse, option=_CANONICAL_OPTIONS)
        except TypeError:
            fast = b""
        if fast and fast.isascii() and b"\x7f" not in fast:
            return fast
    return _CANONICAL.encode(value).encode("utf-8")


def sorted_json(value: Any) -> str:
    """`json.dumps(value, sort_keys=True)`, the very text, without building an encoder per call as
    `json.dumps` does for any non-default option (a tool call's arguments, per request)."""
    return _SORTED.encode(value)


_FLAT = frozenset({str, int, bool, type(None)})  # exact types that hold no float


def _holds_float(value: Any) -> bool:
    """Whether plain data holds a float anywhere. It runs for every hash, mostly over a message or a short
    list of strings and ints: exact containers are walked recursively, skipping their flat items without
    a call; anything else is left to `_holds_float_any`."""
    kind = type(value)
    if kind is dict or kind is FrozenDict:
        items = value.values()
    elif kind is list or kind is tuple or kind is FrozenList:
        items = value
    elif kind in _FLAT:
        return False
    else:
        return _holds_float_any(value)
    for item in items:
        if type(item) not in _FLAT and _holds_float(item):
            return True
    return False


def _holds_float_any(value: Any) -> bool:
    """`_holds_float` of a value of any type (subclasses of float, dict, list or tuple included)."""
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_holds_float(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_float(item) for item in value)
    return False
