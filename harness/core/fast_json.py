"""JSON as the json module writes it, by orjson where orjson writes the same thing ~4-5x faster.

A run writes every event as a line and hashes every message it sends (view hashes, call ids,
the agent's seeds), so both are on the hot path. What orjson refuses or only passes on (str,
int and dict subclasses other than read-only messages, dataclasses, datetimes, integers past 64 bits, lone surrogates) goes
to the json module (lone surrogates as ASCII escapes). A hash's data of exact builtin types and read-only messages
alone (a message, mostly) is found so by the walk that looks for floats, and handed to orjson whole, with no call back
into Python per read-only dict or list (ours). A log line is not walked: that costs more than the
calls back it would save.
"""
from __future__ import annotations

import json
from typing import Any

import orjson

from harness.core.frozen import FrozenDict, FrozenList

_LINE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)  # events are trees
_ASCII_LINE = json.JSONEncoder(separators=(",", ":"), check_circular=False)  # for strings UTF-8 cannot hold
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_SORTED = json.JSONEncoder(sort_keys=True)  # json.dumps(value, sort_keys=True)'s own encoder, built once
_PASS_ON = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_LINE_OPTIONS = _PASS_ON | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
_CANONICAL_OPTIONS = _PASS_ON | orjson.OPT_SORT_KEYS
# For plain data (`_scan` finds no other type): orjson writes read-only messages as the dicts and lists they are
_PLAIN_CANONICAL_OPTIONS = orjson.OPT_SORT_KEYS


def _refuse(value: Any) -> Any:
    """orjson's fallback: read-only messages (harness.core.frozen) as their plain types, the rest to the json module."""
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
    as the very same string, so the line is written and the view hashes still replay.
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
    found = _scan(value)
    if not found & _FLOAT:
        try:
            if found & _OTHER:
                fast = orjson.dumps(value, default=_refuse, option=_CANONICAL_OPTIONS)
            else:
                fast = orjson.dumps(value, option=_PLAIN_CANONICAL_OPTIONS)
        except TypeError:
            fast = b""
        if fast and fast.isascii() and b"\x7f" not in fast:
            return fast
    return _CANONICAL.encode(value).encode("utf-8")


def sorted_json(value: Any) -> str:
    """`json.dumps(value, sort_keys=True)`, the very text, without building an encoder per call as
    `json.dumps` does for any non-default option (a tool call's arguments, per request)."""
    return _SORTED.encode(value)


_FLAT = frozenset({str, int, bool, type(None)})  # exact types that hold nothing else
_FLOAT, _OTHER = 1, 2  # what `_scan` finds: a float; a value of another type than the exact builtins and messages


def _scan(value: Any) -> int:
    """Whether plain data holds a float (_FLOAT) and anything but exact str, int, bool, None, float, dict, list,
    tuple and read-only messages (_OTHER), as bits. It runs for every hash, mostly over a message or a
    short list of strings and ints: exact containers are walked recursively, skipping their flat items without
    a call; a value of another type is _OTHER, and whether it holds a float is left to `_holds_float_any`."""
    kind = type(value)
    if kind is dict or kind is FrozenDict:
        items = value.values()
    elif kind is list or kind is tuple or kind is FrozenList:
        items = value
    elif kind in _FLAT:
        return 0
    elif kind is float:
        return _FLOAT
    else:
        return _OTHER | (_FLOAT if _holds_float_any(value) else 0)
    found = 0
    for item in items:
        if type(item) not in _FLAT:
            found |= _scan(item)
            if found == _FLOAT | _OTHER:
                break
    return found


def _holds_float_any(value: Any) -> bool:
    """Whether a value of any type (subclasses of float, dict, list or tuple included) holds a float."""
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_holds_float_any(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_float_any(item) for item in value)
    return False
