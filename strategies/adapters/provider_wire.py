"""A library's own provider client, its HTTP requests made ctxbench side calls: the transport an SDK client is handed.

Some libraries talk to the provider themselves: Inspect's `AnthropicAPI.compact()` sends a generate with Anthropic's
compaction edit and its `OpenAIAPI.compact()` calls `/responses/compact`; the anthropic SDK's tool runner sends its
compaction request. An adapter gives the library an SDK client (the `anthropic` or `openai` SDK's, on `httpx2`) whose
transport is this one, so the library's code runs unmodified and builds its own request, and the transport decides
who answers it:

* the profile is the mock in process: the simulated provider answers, through the code serve-mock's routes run
  (harness.models.serve_mock.anthropic_wire for the Messages API, responses_wire for the Responses API: the body read
  and checked, MockProvider.serve in the profile's session, the answer in the provider's own shape): the mock sees only
  what the library sent;
* any other profile (the real API, or serve-mock over HTTP): the request goes out as the library made it, to the
  profile's `api_base` or the provider, with serve-mock's session headers when it is serve-mock.

Every model request (`POST /v1/messages`, `/v1/responses`, `/v1/responses/compact`) is a side call of the profile
(`RunContext.record_side_call`: counted in `summarizer_*`, priced from the usage in the response, on the run's clock,
failures logged); Anthropic's token counting (`/v1/messages/count_tokens`) is free and not logged. The SDK's own
retries are the library's: each attempt is one exchange, its `x-stainless-retry-count` the attempt the mock draws its
faults for.
"""
from __future__ import annotations

import functools
import json
import time
from typing import TYPE_CHECKING, Any

from harness.core.clock import LATENCY_HEADER
from harness.models.serve_mock import anthropic_wire, responses_wire
from harness.models.serve_mock.chat_request import ROUTES as CHAT_ROUTES
from harness.models.usage import DEFAULT_PRICE_MODEL, Usage, anthropic_usage, normalize_usage, responses_usage

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMProfile

RETRY_HEADER = "x-stainless-retry-count"  # the SDKs' attempt number (stainless-generated clients)
# The model requests by route, with how each reads its response's usage; OpenAI's chat completions is what Inspect's
# OpenAI provider sends for a model off the Responses API (a summary), answered by the API it goes to.
_USAGE = {**{route: anthropic_usage for route in anthropic_wire.ROUTES},
          **{route: responses_usage for route in (*responses_wire.ROUTES, *responses_wire.COMPACT_ROUTES)},
          **{route: normalize_usage for route in CHAT_ROUTES}}
MOCK_API_KEY = "ctxbench-mock"  # an SDK client needs a key; the mock in process never reads it


def model_name(profile: "LLMProfile") -> str:
    """The model an SDK request names for a profile: a real model's name at its provider; for the mock, the model
    it bills as (a Claude name, so the library treats it as that model; the transport serves the profile's mock)."""
    if profile.is_mock:
        return profile.price_model or profile.mock.get("price_model", DEFAULT_PRICE_MODEL)
    return profile.model.partition("/")[2] or profile.model


def api_key(profile: "LLMProfile") -> str | None:
    """The key an SDK client is built with: the profile's own (`params.api_key`), a stand-in for the mock, else None
    (the SDK reads its environment variable)."""
    return profile.params.get("api_key") or (MOCK_API_KEY if profile.is_mock else None)


class WireSideCalls:
    """One profile's side calls as an SDK sends them: answered in process or sent on, and logged."""

    def __init__(self, ctx: "RunContext", profile_name: str, purpose: str):
        self.ctx, self.profile_name, self.purpose = ctx, profile_name, purpose
        self.client = ctx.client(profile_name)
        self.in_process = self.client.profile.is_mock

    def answer(self, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, Any], dict[str, Any] | None]:
        """(status, JSON body, the mock's usage) of a request the mock answers in process: what serve-mock's route
        would answer (harness.models.serve_mock.server), in the profile's session."""
        route = path.rstrip("/")
        try:
            data = json.loads(body or b"null")
        except ValueError as exc:
            return 400, anthropic_wire.error("invalid_request_error", f"request body: not JSON: {exc}"), None
        beta = headers.get("anthropic-beta")
        if route in anthropic_wire.COUNT_ROUTES:
            answered = anthropic_wire.answer_count(
                data, beta, lambda asked: self.client.count_in_process(asked.messages, asked.tools, asked.options))
        elif route in anthropic_wire.ROUTES:
            request = self.client.wire_request(_attempt(headers))
            answered = anthropic_wire.answer(
                data, beta, lambda asked: self.client.serve_in_process(asked.messages, asked.tools, asked.marks,
                                                                       asked.options, self.ctx.clock.now_s, request),
                lambda: f"msg_{request[0]:024x}")
        elif route in responses_wire.ROUTES or route in responses_wire.COMPACT_ROUTES:
            request = self.client.wire_request(_attempt(headers))
            compact = route in responses_wire.COMPACT_ROUTES
            answered = responses_wire.answer(
                data, compact, lambda asked: self.client.serve_in_process(
                    asked.messages, asked.tools, asked.marks, asked.options, self.ctx.clock.now_s, request, compact),
                lambda: f"resp_{request[0]:024x}")
        else:
            return 404, anthropic_wire.error("not_found_error", f"no route {route[:200]} in process"), None
        return answered.status, answered.payload, answered.usage

    def record(self, path: str, status: int, payload: Any, clock_s: float, started: tuple[float, float],
               served_latency_s: float | None = None) -> None:
        """Log a model request as a side call of the profile (token counting is not one)."""
        read_usage = _USAGE.get(path.rstrip("/"))
        if read_usage is None:
            return
        latency, cpu = time.perf_counter() - started[0], time.thread_time() - started[1]
        if status != 200 or not isinstance(payload, dict) or not isinstance(payload.get("usage"), dict):
            error = payload.get("error") if isinstance(payload, dict) else None
            message = error.get("message") if isinstance(error, dict) else str(payload)[:500]
            self.ctx.record_side_call(self.profile_name, self.client.profile.model, self.purpose, clock_s, cpu,
                                      error=(f"HTTP {status}", str(message)))
            return
        usage: Usage = read_usage(payload["usage"])
        result = self.client.priced({}, usage, latency, served_latency_s)
        self.ctx.record_side_call(self.profile_name, self.client.profile.model, self.purpose, clock_s, cpu,
                                  result=result)

    def outgoing(self, request: Any) -> None:
        """Before a request goes out: serve-mock keeps the run's state by ctxbench's session headers."""
        if self.client.profile.serves_mock and request.url.path.rstrip("/") in _USAGE:
            index = self.client.wire_request(_attempt(request.headers))
            request.headers.update(self.client.session_headers(index, self.ctx.clock.now_s))


def _attempt(headers: Any) -> int:
    value = headers.get(RETRY_HEADER) or "0"
    return int(value) if value.isdigit() else 0


def _served_latency(response: Any) -> float | None:
    try:
        return float(response.headers.get(LATENCY_HEADER))
    except (TypeError, ValueError):
        return None


@functools.cache
def _transport_class() -> type:
    """The httpx2 transport class (defined at first use: httpx2 comes with the SDKs, not with ctxbench)."""
    import httpx2

    class SideCallTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
        """Sync and async: Inspect's AnthropicAPI uses AsyncAnthropic, the SDK's tool runner Anthropic."""

        def __init__(self, calls: WireSideCalls):
            self.calls = calls
            self._sync: Any = None
            self._async: Any = None

        def _in_process(self, request: Any, body: bytes) -> Any:
            clock_s, started = self.calls.ctx.clock.now_s, (time.perf_counter(), time.thread_time())
            status, payload, _ = self.calls.answer(request.url.path, request.headers, body)
            self.calls.record(request.url.path, status, payload, clock_s, started)
            return httpx2.Response(status, json=payload, request=request)

        def handle_request(self, request: Any) -> Any:
            if self.calls.in_process:
                return self._in_process(request, request.read())
            self._sync = self._sync or httpx2.HTTPTransport()
            clock_s, started = self.calls.ctx.clock.now_s, (time.perf_counter(), time.thread_time())
            self.calls.outgoing(request)
            response = self._sync.handle_request(request)
            body = response.read()
            self.calls.record(request.url.path, response.status_code, _json(body), clock_s, started,
                              _served_latency(response))
            return response

        async def handle_async_request(self, request: Any) -> Any:
            if self.calls.in_process:
                return self._in_process(request, await request.aread())
            self._async = self._async or httpx2.AsyncHTTPTransport()
            clock_s, started = self.calls.ctx.clock.now_s, (time.perf_counter(), time.thread_time())
            self.calls.outgoing(request)
            response = await self._async.handle_async_request(request)
            body = await response.aread()
            self.calls.record(request.url.path, response.status_code, _json(body), clock_s, started,
                              _served_latency(response))
            return response

    return SideCallTransport


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def transport(ctx: "RunContext", profile_name: str, purpose: str) -> Any:
    """An httpx2 transport (sync and async) whose requests are side calls of `profile_name`."""
    return _transport_class()(WireSideCalls(ctx, profile_name, purpose))


def sync_client(ctx: "RunContext", profile_name: str, purpose: str) -> Any:
    """An httpx2.Client for a sync SDK client (the anthropic SDK's `Anthropic(http_client=...)`)."""
    import httpx2

    return httpx2.Client(transport=transport(ctx, profile_name, purpose))


def async_client(ctx: "RunContext", profile_name: str, purpose: str) -> Any:
    """An httpx2.AsyncClient for an async SDK client (Inspect's AnthropicAPI: `http_client` model argument)."""
    import httpx2

    return httpx2.AsyncClient(transport=transport(ctx, profile_name, purpose))
