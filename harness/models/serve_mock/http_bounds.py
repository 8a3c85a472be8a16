"""What serve-mock checks of an HTTP request before any route reads it: body size, JSON nesting, ctxbench headers.

Every route (the OpenAI chat completions route, and any other API shape served beside it) reads its body through
`read_body` and `parse_json_body` and its ctxbench headers through `request_headers` / `clock_header`, so a body
too large, too deep or not strict JSON is refused the same way everywhere, before the parser or the mock sees it.
A refusal is a `BadRequest`: an HTTP status and the OpenAI error shape (`error_payload`), naming the field when there is one.
"""
from __future__ import annotations

import json
import math
from typing import Any, BinaryIO, Mapping

from harness.core.user_files import INT64_MAX, json_depth

MAX_BODY_BYTES = 64 * 1024 * 1024  # far above any context window's worth of text (~300 kB a request in runs)
MAX_JSON_DEPTH = 64  # nesting of arrays and objects; a request's deepest part is a tool's JSON schema
_CONTENT_LENGTH_DIGITS = len(str(MAX_BODY_BYTES))


class BadRequest(Exception):
    """A request refused with `status` and OpenAI's error shape; `param` names the offending field or header."""

    def __init__(self, status: int, message: str, param: str | None = None,
                 kind: str = "invalid_request_error", code: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.kind, self.code = status, message, param, kind, code
        self.headers = headers or {}  # sent with the refusal (Allow on a 405)

    def payload(self) -> dict[str, Any]:
        return error_payload(self.message, self.kind, self.param, self.code)


def error_payload(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error body: {"error": {"message", "type", "param", "code"}}."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def content_length(headers: Mapping[str, str]) -> int:
    """The body's declared size: a decimal number of bytes within MAX_BODY_BYTES (411 missing, 413 above, 400
    malformed). Checked as text first, so no huge or odd number is ever converted."""
    value = headers.get("Content-Length")
    if value is None:
        raise BadRequest(411, "Content-Length is required (chunked bodies are not accepted)", "Content-Length",
                         code="length_required")
    text = value.strip()
    if not (text.isascii() and text.isdigit()):
        raise BadRequest(400, f"Content-Length must be a decimal number of bytes, got {value[:40]!r}",
                         "Content-Length")
    if len(text.lstrip("0")) > _CONTENT_LENGTH_DIGITS or int(text) > MAX_BODY_BYTES:
        raise BadRequest(413, f"request body of {text[:40]} bytes is over the limit of {MAX_BODY_BYTES} bytes",
                         "Content-Length", code="request_too_large")
    return int(text)


def read_body(headers: Mapping[str, str], stream: BinaryIO) -> bytes:
    """The body, of the size its Content-Length declares (checked before a byte is read)."""
    if headers.get("Transfer-Encoding") is not None:
        raise BadRequest(411, "Transfer-Encoding is not accepted: send the body with a Content-Length",
                         "Transfer-Encoding", code="length_required")
    size = content_length(headers)
    try:
        data = stream.read(size)
    except TimeoutError:  # the connection's read timeout (a client that stalls mid-body)
        raise BadRequest(408, f"the body's {size} bytes did not arrive in time", "Content-Length",
                         code="timeout") from None
    if len(data) < size:
        raise BadRequest(400, f"the body ended after {len(data)} of its {size} bytes", "Content-Length")
    return data


def parse_json_body(data: bytes) -> Any:
    """A body read whole as strict JSON, once its nesting is within MAX_JSON_DEPTH."""
    check_depth(data)
    return parse_json(data)


def check_depth(data: bytes) -> None:
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise BadRequest(400, f"request body nests {depth} levels of arrays and objects; the limit is "
                              f"{MAX_JSON_DEPTH}", code="nesting_too_deep")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def parse_json(data: bytes) -> Any:
    """Strict JSON as OpenAI's parser reads it: NaN, Infinity and numbers that overflow a float are errors."""
    try:
        return json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, an int past Python's digit limit
        raise BadRequest(400, f"request body is not valid JSON: {str(exc)[:200]}", code="invalid_json") from None


def whole_number_header(name: str, value: str) -> int:
    """A header holding a whole number 0..2**63-1 (an int64, as a client's counter is)."""
    if not (value.isascii() and value.isdigit()) or len(value.lstrip("0")) > 19 or int(value) > INT64_MAX:
        raise BadRequest(400, f"{name} must be a whole number from 0 to {INT64_MAX}, got {value[:40]!r}", name)
    return int(value)


def request_headers(headers: Mapping[str, str], index_header: str, attempt_header: str) -> tuple[int, int] | None:
    """The client's (request index, attempt) its faults are drawn for (a missing attempt is 0), or None from a
    client that sends no index: the session's own count stands in for it. An attempt alone is still checked."""
    index, attempt = headers.get(index_header), headers.get(attempt_header)
    attempt_number = whole_number_header(attempt_header, attempt) if attempt is not None else 0
    if index is None:
        return None
    return whole_number_header(index_header, index), attempt_number


def clock_header(headers: Mapping[str, str], name: str) -> float | None:
    """The run's simulated clock a client sent: finite seconds >= 0, or None when it sent none."""
    value = headers.get(name)
    if value is None:
        return None
    try:
        seconds = float(value) if len(value) <= 64 else math.nan
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise BadRequest(400, f"{name} must be a finite number of seconds >= 0, got {value[:40]!r}", name)
    return seconds
