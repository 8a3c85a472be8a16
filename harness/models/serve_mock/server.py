"""`ctxbench serve-mock`: the mock provider as an OpenAI-compatible HTTP endpoint on loopback, as OpenAI's Responses
API (`POST /v1/responses`, `POST /v1/responses/compact`: harness.models.serve_mock.responses_wire), and as Anthropic's
Messages API (`POST /v1/messages`: harness.models.serve_mock.anthropic_wire) for `--model anthropic/<name>
--api-base http://127.0.0.1:N`.

The same MockProvider.serve that answers `mock/...` in process answers here, so a run with
`--model openai/<name> --api-base http://127.0.0.1:N/v1` exercises litellm's real HTTP client
and gives the same results (`/v1/models` advertises the window, which such a run takes as its main
profile's input budget: harness.run.invocation.resolve_served_mock_window). Per-run state (the simulated
prompt cache, fault draws) is kept per session, named by the `X-Ctxbench-Session` header or else the request's `user` field; request
index 0 (`X-Ctxbench-Request: 0`, `X-Ctxbench-Attempt: 0`) starts a session afresh, so reruns stay
deterministic. Faults are drawn for the client's request index and attempt, so a restarted server meets a
run with the same faults; without those headers, for the session's own count of requests received.
Faults become HTTP statuses: rate limit 429, server error 500, timeout 408. The run's simulated
clock arrives in the `X-Ctxbench-Clock-S` header (the cache's TTL expires on it; harness.core.clock)
and the answer's simulated latency leaves in `X-Ctxbench-Latency-S`, so the client's clock
advances as in process; neither is part of the messages the agent reads.

A request arrives as fresh JSON objects, but the mock's prefix cache and the simulated agent's
memory reuse their readings of a request's messages by object identity (the harness never changes
a message it sent). So each session keeps its last request's messages, and a message equal (==)
to the one at the same position last time is replaced by that earlier object: the mock reads only
what is new, and still exactly what it was sent. A session's requests are served one at a time (the
provider's per-session lock), sessions in parallel.

A body is bounded and checked before the mock reads it (harness.models.serve_mock.http_bounds for any route,
harness.models.serve_mock.chat_request for this one); every refusal is a 4xx in OpenAI's error shape naming the field.
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import sys
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import harness  # noqa: F401
import litellm

from harness.models.cache_marks import CacheMarks
from harness.models.serve_mock.chat_request import ROUTES as CHAT_ROUTES, validate_chat_request
from harness.core.config import build_dataclass, parse_inline_or_file
from harness.core.errors import ConfigError
from harness.core.clock import CLOCK_HEADER, LATENCY_HEADER
from harness.models.serve_mock.http_bounds import (BadRequest, clock_header, error_payload, parse_json_body, read_body, request_headers,
                                 whole_number_header)
from harness.models.llm import (ATTEMPT_HEADER, REQUEST_HEADER, SEED_HEADER, SERVED_MOCK_MODELS, SESSION_HEADER,
                         normalize_usage, simulated_duration_s)
from harness.models.serve_mock import anthropic_wire, responses_wire
from harness.models.mock.provider import MockConfig, MockProvider
from harness.models.mock.summarizer import SUMMARIZER_PREFIX, is_summarizer
from harness.models.mock.wire_marks import read_marks

LOOPBACK = "127.0.0.1"
MODEL_IDS = SERVED_MOCK_MODELS  # the mock's `mock/agent` and `mock/summarizer`
MODELS_ROUTES = ("/v1/models", "/models")


class MockServer(ThreadingHTTPServer):
    """Loopback-only HTTP server around one MockProvider; counts the chat requests it receives.

    A thread per connection; the listen backlog holds a burst of new connections (the stdlib's 5 resets them
    or delays them by a SYN retry under a few dozen clients)."""

    daemon_threads = True
    request_queue_size = 1024  # the kernel caps it at net.core.somaxconn

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
        changed, dropped or inserted message is a new object for the mock, as in process. Only equal
        objects are handed on, so requests of one session arriving at once (clients that send no session
        header all share the session "") still each reach the mock with exactly what they sent.
        """
        with self._count_lock:
            last_tools, last_messages = self._last_requests.get(session, ([], []))
            if tools == last_tools:
                tools = last_tools
            messages = [old if old == new else new for old, new in zip(last_messages, messages)] + \
                messages[len(last_messages):]
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

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed outside a request's own error handling: one line on stderr, no traceback
        (a client that went away is not worth a line)."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            print(f"ctxbench serve-mock: connection from {client_address[0]} failed: {type(error).__name__}",
                  file=sys.stderr, flush=True)

    def start(self) -> threading.Thread:
        """Serve in a background thread (for tests and notebooks); stop with shutdown()."""
        thread = threading.Thread(target=self.serve_forever, name="ctxbench-serve-mock", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client reuses its connections
    default_request_version = "HTTP/1.0"  # a garbled request line is answered with a status line and headers too
    _due = 0.0  # monotonic time at which the chat request being served is answered (its latency)
    _body_read = True  # False while the request's body is still on the connection, unread
    disable_nagle_algorithm = True  # headers and body go out at once, not after a delayed ACK
    timeout = 300  # seconds a connection may sit idle or stall mid-request before it is closed
    server: MockServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (quiet; the counter is the record)
        return

    def do_GET(self) -> None:
        self._body_read = not self._has_body()
        if self.path.rstrip("/") in MODELS_ROUTES:
            self._send(200, {"object": "list", "data": [  # the window: a client's input budget (harness.run.invocation)
                {"id": model, "object": "model", "created": 0, "owned_by": "ctxbench",
                 "max_input_tokens": self.server.config.window} for model in MODEL_IDS]})
        else:
            self._refuse(_no_route(self.path, self.command))

    def do_POST(self) -> None:
        self._body_read = not self._has_body()
        path = self.path.split("?", 1)[0].rstrip("/")  # the SDK's beta resources add `?beta=true`
        if path in anthropic_wire.ROUTES:
            serve = self._messages
        elif path in anthropic_wire.COUNT_ROUTES:
            serve = self._count_tokens
        elif path in responses_wire.ROUTES or path in responses_wire.COMPACT_ROUTES:
            serve = functools.partial(self._responses, path in responses_wire.COMPACT_ROUTES)
        elif path in CHAT_ROUTES:
            serve = self._chat
        else:
            self._refuse(_no_route(self.path, self.command))
            return
        self.server.enter()
        self._in_flight = True
        try:
            serve()
        finally:
            self._leave()

    def _not_allowed(self) -> None:
        self._body_read = not self._has_body()
        self._refuse(_no_route(self.path, self.command))

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed

    def _has_body(self) -> bool:
        return "Content-Length" in self.headers or "Transfer-Encoding" in self.headers

    def _leave(self) -> None:
        """Count this request as served once, before its body goes out: a client that got the body may send
        its next request before this thread returns, and that must not read as one request too many at once."""
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            self.server.leave()

    def _read(self) -> tuple[float | None, tuple[int, int] | None, Any]:
        """The run's clock and (request index, attempt) from the headers, then the body read whole and parsed as
        strict JSON within every route's bounds (harness.models.serve_mock.http_bounds); raises BadRequest."""
        now_s = clock_header(self.headers, CLOCK_HEADER)
        request = request_headers(self.headers, REQUEST_HEADER, ATTEMPT_HEADER)
        data = read_body(self.headers, self.rfile)
        self._body_read = True
        return now_s, request, parse_json_body(data)

    def _chat(self) -> None:
        arrived = time.monotonic()
        try:
            now_s, request, body = self._read()
            chat = validate_chat_request(body)
            messages, tools, marks = read_marks(chat.messages, chat.tools, chat.cache_control, chat.prompt_cache_key,
                                                chat.prompt_cache_options)
        except BadRequest as refusal:
            self._refuse(refusal)
            return
        except ValueError as exc:  # a cache marker read back (MarkerError) names its field
            self._refuse(BadRequest(400, str(exc), getattr(exc, "param", None)))
            return
        self._due = arrived + self.server.latency_s  # the answer goes out then, the mock's work included
        try:
            reply, usage = self._serve(chat.model, chat.user, messages, tools, marks, chat.seed, now_s, request)
        except Exception as exc:
            self._failed(exc)
            return
        self._send(200, {
            "id": self.server.response_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": chat.model,
            "choices": [{"index": 0, "message": reply,
                         "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop"}],
            "usage": usage,
        }, {LATENCY_HEADER: repr(simulated_duration_s(normalize_usage(usage)))})

    def _serve(self, model: str, user: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
               marks: CacheMarks | None, seed: int | None, now_s: float | None,
               request: tuple[int, int] | None, options: dict[str, Any] | None = None,
               compact: bool = False) -> tuple[Any, dict[str, Any]]:
        """The mock's reply and usage for a valid request, in its session (the header's, else the body's user);
        `compact`: a `/responses/compact` call, answered with the compacted window."""
        session = self.headers.get(SESSION_HEADER) or user
        if request == (0, 0):
            self.server.end_session(session)
        tools, messages = self.server.reuse(session, tools, messages)
        served = model.removeprefix("mock-")
        config = self.server.session_config(session, served)
        if compact:
            return self.server.provider.compact(served, messages, tools, config, seed=seed, now_s=now_s,
                                                request=request, marks=marks)
        return self.server.provider.serve(served, messages, tools, config, seed=seed, now_s=now_s, request=request,
                                          marks=marks, options=options)

    def _refuse(self, refusal: BadRequest) -> None:
        self._send(refusal.status, refusal.payload(), refusal.headers)

    def _messages(self) -> None:
        """Anthropic's Messages API: the same bounds and the same session, request, attempt and clock headers as
        `_chat`; refusals in Anthropic's error shape (harness.models.serve_mock.anthropic_wire.answer)."""
        arrived = time.monotonic()
        try:
            now_s, request, body = self._read()
            seed = self.headers.get(SEED_HEADER)
            seed = whole_number_header(SEED_HEADER, seed) if seed is not None else None  # the API has no seed field
        except BadRequest as refusal:
            self._send(refusal.status, anthropic_wire.error(anthropic_wire.error_kind(refusal.status), refusal.message),
                       refusal.headers)
            return
        answered = anthropic_wire.answer(
            body, self.headers.get("anthropic-beta"),
            lambda asked: self._serve(asked.served, asked.user, asked.messages, asked.tools, asked.marks, seed, now_s,
                                      request, asked.options),
            lambda: "msg_" + self.server.response_id()[9:])
        if answered.usage is None:
            self._send(answered.status, answered.payload)
            return
        self._due = arrived + self.server.latency_s  # the answer goes out then, the mock's work included
        self._send(answered.status, answered.payload,
                   {LATENCY_HEADER: repr(simulated_duration_s(normalize_usage(answered.usage)))})

    def _count_tokens(self) -> None:
        """Anthropic's token counting: free, served at once, outside the session's requests."""
        try:
            _, _, body = self._read()
        except BadRequest as refusal:
            self._send(refusal.status, anthropic_wire.error(anthropic_wire.error_kind(refusal.status), refusal.message),
                       refusal.headers)
            return
        answered = anthropic_wire.answer_count(
            body, self.headers.get("anthropic-beta"),
            lambda asked: self.server.provider.count_tokens(asked.messages, asked.tools, asked.options))
        self._send(answered.status, answered.payload)

    def _responses(self, compact: bool) -> None:
        """OpenAI's Responses API (harness.models.serve_mock.responses_wire.answer): the same bounds, headers, faults and
        error shape as `_chat`; the seed from its header, as the API has no seed field."""
        arrived = time.monotonic()
        try:
            now_s, request, body = self._read()
            seed = self.headers.get(SEED_HEADER)
            seed = whole_number_header(SEED_HEADER, seed) if seed is not None else None
        except BadRequest as refusal:
            self._refuse(refusal)
            return

        def serve(asked: Any) -> tuple[dict[str, Any], dict[str, Any]]:
            try:
                return self._serve(asked.served, asked.user, asked.messages, asked.tools, asked.marks, seed, now_s,
                                   request, asked.options, compact)
            except Exception as exc:
                self._say_failed(exc)
                raise

        answered = responses_wire.answer(body, compact, serve, lambda: "resp_" + self.server.response_id()[9:])
        if answered.usage is None:
            self._send(answered.status, answered.payload)
            return
        self._due = arrived + self.server.latency_s  # the answer goes out then, the mock's work included
        self._send(200, answered.payload, {LATENCY_HEADER: repr(simulated_duration_s(normalize_usage(answered.usage)))})

    def _failed(self, exc: Exception) -> None:
        """A request the mock refused or failed, in OpenAI's shape (responses_wire.failure)."""
        self._say_failed(exc)
        self._send(*responses_wire.failure(exc))

    @staticmethod
    def _say_failed(exc: Exception) -> None:
        """One line on stderr when the mock itself failed (neither a refusal nor one of its faults)."""
        if responses_wire.failure(exc)[0] == 500 and not isinstance(exc, litellm.InternalServerError):
            print(f"ctxbench serve-mock: the mock failed on a request: {type(exc).__name__}", file=sys.stderr,
                  flush=True)

    def _error(self, status: int, message: str, kind: str, code: str | None = None) -> None:
        self._send(status, error_payload(message, kind, code=code or kind))

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The stdlib's own refusals (a garbled request line, an unknown method, headers too long) in the OpenAI
        error shape, as JSON rather than its HTML page; the connection closes, as the stdlib's does."""
        self.close_connection = True
        short, long = self.responses.get(code, ("Error", ""))
        text = message or short
        payload = error_payload(f"{text}: {explain or long}" if explain or long else text,
                                "invalid_request_error" if code < 500 else "server_error")
        data = json.dumps(payload).encode("utf-8")
        self.send_response(code, short)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if getattr(self, "command", None) != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(data)

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        wait = self._due - time.monotonic()
        self._due = 0.0
        if wait > 0:
            time.sleep(wait)
        if not self._body_read:  # the next bytes on the connection would be the body, not a request
            self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self._leave()
        self.wfile.write(data)


def _no_route(path: str, method: str) -> BadRequest:
    """404 for a path served by no route, 405 for a method a served path does not take."""
    route = path.split("?", 1)[0].rstrip("/")
    posted = CHAT_ROUTES + responses_wire.ROUTES + responses_wire.COMPACT_ROUTES
    allowed = "POST" if route in posted else "GET" if route in MODELS_ROUTES else None
    if allowed is None:
        return BadRequest(404, f"no route {path[:200]}", code="not_found")
    return BadRequest(405, f"{route} takes {allowed}, not {method}", code="method_not_allowed",
                      headers={"Allow": allowed})


def serve(port: int, config: MockConfig, *, latency_s: float = 0.0,
          summarizer_knobs: dict[str, Any] | None = None) -> None:
    """Serve until interrupted, printing the base URL first."""
    server = MockServer(port, config, latency_s=latency_s, summarizer_knobs=summarizer_knobs)
    print(f"ctxbench serve-mock: {server.url} (models: {', '.join(MODEL_IDS)}); OpenAI's Responses API at "
          f"{server.url}/responses; Anthropic's Messages API at "
          f"{server.url}/messages for --model anthropic/<name> --api-base {server.url.removesuffix('/v1')}; "
          "Ctrl-C stops", flush=True)
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
