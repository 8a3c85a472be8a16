"""`ctxbench serve-mock`: the mock provider as an OpenAI-compatible HTTP endpoint on loopback.

The same MockProvider.serve that answers `mock/...` in process answers here, so a run with
`--model openai/<name> --api-base http://127.0.0.1:N/v1` exercises litellm's real HTTP client
and gives the same results (`/v1/models` advertises the window, which such a run takes as its main
profile's input budget: harness.invocation.resolve_served_mock_window). Per-run state (the simulated
prompt cache, fault draws) is kept per session, named by the `X-Ctxbench-Session` header or else the request's `user` field; request
index 0 (`X-Ctxbench-Request: 0`, `X-Ctxbench-Attempt: 0`) starts a session afresh, so reruns stay
deterministic. Faults are drawn for the client's request index and attempt, so a restarted server meets a
run with the same faults; without those headers, for the session's own count of requests received.
Faults become HTTP statuses: rate limit 429, server error 500, timeout 408. The run's simulated
clock arrives in the `X-Ctxbench-Clock-S` header (the cache's TTL expires on it; harness.clock)
and the answer's simulated latency leaves in `X-Ctxbench-Latency-S`, so the client's clock
advances as in process; neither is part of the messages the agent reads.

A request arrives as fresh JSON objects, but the mock's prefix cache and the simulated agent's
memory reuse their readings of a request's messages by object identity (the harness never changes
a message it sent). So each session keeps its last request's messages, and a message equal (==)
to the one at the same position last time is replaced by that earlier object: the mock reads only
what is new, and still exactly what it was sent.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import harness  # noqa: F401
import litellm

from harness.config import build_dataclass, parse_inline_or_file
from harness.errors import ConfigError
from harness.clock import CLOCK_HEADER, LATENCY_HEADER
from harness.llm import (ATTEMPT_HEADER, REQUEST_HEADER, SERVED_MOCK_MODELS, SESSION_HEADER, normalize_usage,
                         simulated_duration_s)
from harness.mock.cache import CACHE_STYLES
from harness.mock.provider import MockConfig, MockProvider
from harness.mock.summarizer import SUMMARIZER_PREFIX, is_summarizer

LOOPBACK = "127.0.0.1"
MODEL_IDS = SERVED_MOCK_MODELS  # the mock's `mock/agent` and `mock/summarizer`
_FAULT_STATUS = ((litellm.RateLimitError, 429, "rate_limit_error"), (litellm.Timeout, 408, "timeout"),
                 (litellm.InternalServerError, 500, "server_error"))


class MockServer(ThreadingHTTPServer):
    """Loopback-only HTTP server around one MockProvider; counts the chat requests it receives."""

    daemon_threads = True

    def __init__(self, port: int, config: MockConfig, *, latency_s: float = 0.0,
                 summarizer_knobs: dict[str, Any] | None = None):
        if not 0 <= latency_s < float("inf"):  # NaN fails too
            raise ConfigError(f"--latency-ms: latency must be a finite 0 or more, got {latency_s * 1000:g} ms")
        self.provider = MockProvider()
        self.config = config  # its knobs are the agent's
        self.summarizer_config = replace(config, knobs=summarizer_knobs or {})  # for mock-summarizer requests
        self.config.knobs_for("agent", "--mock-knobs")
        self.summarizer_config.knobs_for(SUMMARIZER_PREFIX, "--summarizer-knobs")
        self._session_configs: dict[tuple[str, bool], MockConfig] = {}  # built once per session and model kind
        self._last_requests: dict[str, tuple[list[Any], list[Any]]] = {}  # session -> its last (tools, messages)
        self._ids = itertools.count(1)
        self.latency_s = latency_s
        self.requests = 0
        self.in_flight = 0
        self.peak_in_flight = 0  # most chat requests served at once: checks clients' concurrency limits
        self._count_lock = threading.Lock()
        super().__init__((LOOPBACK, port), _Handler)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server_address[1]}/v1"

    def enter(self) -> None:
        with self._count_lock:
            self.requests += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def leave(self) -> None:
        with self._count_lock:
            self.in_flight -= 1

    def session_config(self, session: str, model: str) -> MockConfig:
        key = (session, is_summarizer(model))
        with self._count_lock:
            config = self._session_configs.get(key)
            if config is None:
                config = self._session_configs[key] = replace(
                    self.summarizer_config if key[1] else self.config, session=session)
            return config

    def reuse(self, session: str, tools: list[Any], messages: list[Any]) -> tuple[list[Any], list[Any]]:
        """This request's tools and messages, each replaced by the session's last object equal to it.

        A message is compared with the one at its position in the session's last request, so a
        changed, dropped or inserted message is a new object for the mock, as in process.
        """
        with self._count_lock:
            last_tools, last_messages = self._last_requests.get(session, ([], []))
        if tools == last_tools:
            tools = last_tools
        messages = [old if old == new else new for old, new in zip(last_messages, messages)] + \
            messages[len(last_messages):]
        with self._count_lock:
            self._last_requests[session] = (tools, messages)
        return tools, messages

    def end_session(self, session: str) -> None:
        """Start `session` afresh: the mock's state and the last request kept for reuse."""
        with self._count_lock:
            self._last_requests.pop(session, None)
        self.provider.end_session(session)

    def response_id(self) -> str:
        with self._count_lock:
            return f"chatcmpl-{next(self._ids):024x}"

    def start(self) -> threading.Thread:
        """Serve in a background thread (for tests and notebooks); stop with shutdown()."""
        thread = threading.Thread(target=self.serve_forever, name="ctxbench-serve-mock", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client reuses its connections
    _due = 0.0  # monotonic time at which the chat request being served is answered (its latency)
    disable_nagle_algorithm = True  # headers and body go out at once, not after a delayed ACK
    server: MockServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (quiet; the counter is the record)
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [  # the window: a client's input budget (harness.invocation)
                {"id": model, "object": "model", "created": 0, "owned_by": "ctxbench",
                 "max_input_tokens": self.server.config.window} for model in MODEL_IDS]})
        else:
            self._error(404, f"no route {self.path}", "not_found")

    def do_POST(self) -> None:
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}", "not_found")
            return
        self.server.enter()
        self._in_flight = True
        try:
            self._chat()
        finally:
            self._leave()

    def _leave(self) -> None:
        """Count this request as served once, before its body goes out: a client that got the body may send
        its next request before this thread returns, and that must not read as one request too many at once."""
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            self.server.leave()

    def _chat(self) -> None:
        arrived = time.monotonic()
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            messages, tools = body["messages"], body.get("tools") or []
            if not isinstance(messages, list):
                raise ValueError("'messages' must be a list")
            now_s = _clock_header(self.headers.get(CLOCK_HEADER))
            request = _request_headers(self.headers.get(REQUEST_HEADER), self.headers.get(ATTEMPT_HEADER))
        except (ValueError, KeyError, TypeError) as exc:
            self._error(400, f"malformed request body: {exc}", "invalid_request_error")
            return
        self._due = arrived + self.server.latency_s  # the answer goes out then, the mock's work included
        session = self.headers.get(SESSION_HEADER) or str(body.get("user") or "")
        if request == (0, 0):
            self.server.end_session(session)
        tools, messages = self.server.reuse(session, tools, messages)
        model = str(body.get("model") or MODEL_IDS[0])
        try:
            served = model.removeprefix("mock-")
            reply, usage = self.server.provider.serve(served, messages, tools, self.server.session_config(session, served),
                                                      seed=body.get("seed"), now_s=now_s, request=request)
        except litellm.ContextWindowExceededError as exc:
            self._error(400, str(exc), "invalid_request_error", code="context_length_exceeded")
            return
        except Exception as exc:
            for error_type, status, kind in _FAULT_STATUS:
                if isinstance(exc, error_type):
                    self._error(status, str(exc), kind)
                    return
            self._error(500, f"{type(exc).__name__}: {exc}", "server_error")
            return
        self._send(200, {
            "id": self.server.response_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": reply,
                         "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop"}],
            "usage": usage,
        }, {LATENCY_HEADER: repr(simulated_duration_s(normalize_usage(usage)))})

    def _error(self, status: int, message: str, kind: str, code: str | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": code or kind}})

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        wait = self._due - time.monotonic()
        self._due = 0.0
        if wait > 0:
            time.sleep(wait)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self._leave()
        self.wfile.write(data)


def _request_headers(index: str | None, attempt: str | None) -> tuple[int, int] | None:
    """The client's (request index, attempt) its faults are drawn for (REQUEST_HEADER, ATTEMPT_HEADER; a missing
    attempt is 0), or None from a client that sends no index: the session's own count stands in for it."""
    if index is None:
        return None
    values = (index, attempt or "0")
    if not all(value.isascii() and value.isdigit() for value in values):
        raise ValueError(f"{REQUEST_HEADER} and {ATTEMPT_HEADER} must be whole numbers >= 0, got {index!r}, {attempt!r}")
    return int(values[0]), int(values[1])


def _clock_header(value: str | None) -> float | None:
    """The run's simulated clock a client sent (CLOCK_HEADER), or None; a bad value is a malformed request."""
    if value is None:
        return None
    seconds = float(value)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{CLOCK_HEADER} must be a number of seconds >= 0, got {value!r}")
    return seconds


def serve(port: int, config: MockConfig, *, latency_s: float = 0.0,
          summarizer_knobs: dict[str, Any] | None = None) -> None:
    """Serve until interrupted, printing the base URL first."""
    server = MockServer(port, config, latency_s=latency_s, summarizer_knobs=summarizer_knobs)
    print(f"ctxbench serve-mock: {server.url} (models: {', '.join(MODEL_IDS)}); Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        print(f"ctxbench serve-mock: served {server.requests} chat requests", flush=True)


def run_command(args: argparse.Namespace) -> int:
    config: dict[str, Any] = {"cache": args.cache_style}
    if args.window is not None:
        config["window"] = args.window
    if args.mock_knobs:
        config["knobs"] = parse_inline_or_file(args.mock_knobs, "--mock-knobs")
    if args.faults:
        config["faults"] = parse_inline_or_file(args.faults, "--faults")
    mock_config = build_dataclass(MockConfig, config, "serve-mock")
    summarizer_knobs = (parse_inline_or_file(args.summarizer_knobs, "--summarizer-knobs")
                        if args.summarizer_knobs else None)
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {args.port}")
    serve(args.port, mock_config, latency_s=args.latency_ms / 1000, summarizer_knobs=summarizer_knobs)
    return 0
