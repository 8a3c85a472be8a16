"""The LLM layer: every call goes through litellm (the in-process mock: see MockConfig.via), carrying the cache
policy's marks; its usage and cost are read by harness.models.usage."""
from __future__ import annotations

import contextlib
import itertools
import math
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import harness  # noqa: F401  (offline environment first)
from harness.models.mock import DEFAULT_MOCK_WINDOW
from harness.models.cache_marks import NO_MARKS, CacheMarks
from harness.models.provider_compaction import BLOCKS, FIELDS, ITEMS, applied_edits, paused
from harness.models import responses_api
from harness.models.cache_policy import CachePlanner, mark_request, parse_policy, provider_family
from harness.core.clock import CLOCK_HEADER, LATENCY_HEADER, simulated_latency_s
from harness.core.config import build_dataclass, require
from harness.core.frozen import FrozenDict, FrozenList, freeze
from harness.models.limits import model_slot
from harness.models.retry import RetryListener, RetryPolicy, call_with_retries
from harness.core.tokens import stable_hash
from harness.models.usage import (DEFAULT_PRICE_MODEL, Pricing, Usage, check_price_model, field_reader, litellm_prices,
                           normalize_usage, quiet_litellm)


DEFAULT_MODEL = "mock/agent"
# The mock's `mock/agent` and `mock/summarizer` as `ctxbench serve-mock` names them: `openai/mock-agent` with an
# api base is the same mock over HTTP, and resolves as it does in process (summarizer, prices, window).
SERVED_MOCK_MODELS = ("mock-agent", "mock-summarizer")


def serves_mock(model: str, api_base: str | None) -> bool:
    """Whether `model` at `api_base` is the mock behind serve-mock (`<provider>/mock-agent`, `.../mock-summarizer`)."""
    return bool(api_base) and model.partition("/")[2] in SERVED_MOCK_MODELS

# Overflow wordings litellm's exception mapping recognizes provider by provider (exception_mapping_utils:
# Anthropic "prompt: length", Bedrock/Replicate "input is too long", Cohere/Bedrock "too many tokens",
# AI21, NLP Cloud, Aleph Alpha), for a plain BadRequestError litellm did not map (an OpenAI-compatible
# endpoint in front of such a provider), beside ctxbench's own earlier wordings (OpenAI "context_length_exceeded",
# "reduce the length", Responses API "exceeds the context window").
_OVERFLOW_TEXT = re.compile(
    r"context[_ ](length|window)|maximum context|prompt is too long|prompt: length|input is too long|"
    r"exceeds? the .*tokens|too many (input )?tokens|prompt has too many tokens|input text length should not exceed|"
    r"longer than the model's maximum context length|reduce the length",
    re.IGNORECASE,
)
# OpenAI's per-field limit ("Invalid 'messages[2].content': string too long. Expected a string with maximum
# length 10485760, ...", code string_above_max_length): one oversized field, not the context window; dropping
# history cannot fix it, and treating it as an overflow buys a paid summary. litellm's own checker excludes it
# only when the body's code is in the text, so it is excluded here whatever the exception class.
_NOT_OVERFLOW_TEXT = re.compile(r"string_above_max_length|string too long\. expected a string with maximum length",
                                re.IGNORECASE)


def is_context_window_error(error: BaseException) -> bool:
    """Recognize a provider's context overflow, including plain bad-request errors that say so
    (litellm's own checker of error texts, then the per-provider wordings above)."""
    text = str(error)
    if _NOT_OVERFLOW_TEXT.search(text):
        return False
    litellm = quiet_litellm()
    if isinstance(error, litellm.ContextWindowExceededError):
        return True
    if isinstance(error, litellm.BadRequestError):
        return says_context_overflow(text)
    return False


def says_context_overflow(text: str) -> bool:
    """Whether a provider's bad-request text says the input is past the window (litellm's own checker of error
    texts, then the per-provider wordings above): for an error a library's own SDK client raised."""
    from litellm.litellm_core_utils.exception_mapping_utils import ExceptionCheckers

    if _NOT_OVERFLOW_TEXT.search(text):
        return False
    return ExceptionCheckers.is_error_str_context_window_exceeded(text) or bool(_OVERFLOW_TEXT.search(text))


def supported_params(model: str) -> list[str]:
    """The OpenAI-format parameters litellm says `model`'s provider takes (`seed` is not Anthropic's: sending it
    fails every request with UnsupportedParamsError, api_base or not); none for a model litellm cannot route."""
    litellm = quiet_litellm()
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        return list(litellm.get_supported_openai_params(model=name, custom_llm_provider=provider) or [])
    except Exception:  # litellm raises a bare Exception for a model it cannot route
        return []


@dataclass
class LLMProfile:
    """A named model binding: the litellm model name plus what the harness needs to know about it."""

    model: str = DEFAULT_MODEL
    api_base: str | None = None
    price_model: str | None = None
    max_input_tokens: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    mock: dict[str, Any] = field(default_factory=dict)
    retry: dict[str, Any] = field(default_factory=dict)  # see harness.models.retry.RetryPolicy
    max_concurrency: int | None = None  # simultaneous requests to this model from one process
    response_cache: str | None = None  # directory of the opt-in response cache
    cache_policy: Any = None  # where requests ask the provider to cache (harness.models.cache_policy; None: auto)

    def __post_init__(self) -> None:
        require(bool(self.model), "model must be a non-empty litellm model name")
        self.policy = parse_policy(self.cache_policy)
        if self.price_model is not None:
            check_price_model(self.price_model)
        require(self.max_input_tokens is None or self.max_input_tokens > 0, "max_input_tokens must be positive")
        require(self.max_concurrency is None or self.max_concurrency > 0,
                f"max_concurrency must be a positive integer, got {self.max_concurrency}")
        self.retry_policy = build_dataclass(RetryPolicy, self.retry, "retry")

    @property
    def endpoint(self) -> str:
        """What a concurrency limit counts: one model at one API base."""
        return f"{self.model}@{self.api_base or ''}"

    @property
    def is_mock(self) -> bool:
        return self.model.startswith("mock/")

    @property
    def serves_mock(self) -> bool:
        """The mock over HTTP (serve-mock): billed as the in-process mock; its window is the server's
        (harness.run.invocation.resolve_served_mock_window sets a main profile's max_input_tokens from it)."""
        return serves_mock(self.model, self.api_base)

    def pricing(self) -> Pricing | None:
        if self.price_model:
            return Pricing.for_model(self.price_model)
        if self.is_mock or self.serves_mock:
            return Pricing.for_model(self.mock.get("price_model", DEFAULT_PRICE_MODEL))
        return Pricing.for_model(self.model)

    def input_budget(self) -> int | None:
        """The input-token budget: the profile's own setting, else the model's known limit."""
        if self.max_input_tokens:
            return self.max_input_tokens
        if self.is_mock:
            return int(self.mock.get("window", DEFAULT_MOCK_WINDOW))
        try:
            info = quiet_litellm().get_model_info(self.model)
        except Exception:  # litellm raises a bare Exception for unknown models
            return None
        return info.get("max_input_tokens")


@dataclass
class LLMResult:
    message: dict[str, Any]
    usage: Usage
    cost_usd: float | None
    cost_usd_uncached: float | None
    latency_s: float
    from_cache: bool = False  # replayed from the response cache: no request was made
    duration_s: float = 0.0  # the request's time on the run's clock: simulated by a mock, else latency_s
    window: list[dict[str, Any]] | None = None  # a `/responses/compact` call's compacted window (`message` its last)
    # The context edits the provider applied to the request (Anthropic's response field `context_management`,
    # `{"applied_edits": [...]}`); never part of the message, which is sent back
    context_management: dict[str, Any] | None = None

    @property
    def paused(self) -> bool:
        """The provider compacted and paused: no answer yet, the next request continues the turn."""
        return paused(self.message)


def simulated_duration_s(usage: Usage) -> float:
    """A mock request's seconds on the simulated clock, from its usage (in process and over HTTP alike)."""
    return simulated_latency_s((usage.input_tokens or 0) - (usage.cached_tokens or 0), usage.output_tokens or 0)


def _served_latency_s(response: Any) -> float | None:
    """serve-mock's simulated latency of a response, from its LATENCY_HEADER (litellm keeps a response's
    headers as `llm_provider-<name>`); None from any other server, or for a value that is no number."""
    headers = (getattr(response, "_hidden_params", None) or {}).get("additional_headers") or {}
    try:
        value = float(headers.get(f"llm_provider-{LATENCY_HEADER.lower()}"))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _message_dict(message: Any) -> dict[str, Any]:
    """The reply as the run logs it, made read-only here (harness.core.frozen) so that logging it copies nothing again
    (ours: a reply was built, then frozen into a second copy)."""
    field = field_reader(message)
    out: dict[str, Any] = {"role": "assistant", "content": freeze(field("content") or "")}
    calls = field("tool_calls") or []
    if calls:
        out["tool_calls"] = FrozenList([_call_dict(call) for call in calls])
    provider_fields = field(FIELDS)
    if isinstance(provider_fields, dict):  # a provider's compaction, sent back with the message on later requests
        kept = {key: [dict(entry) for entry in provider_fields[key]] for key in (BLOCKS, ITEMS)
                if provider_fields.get(key)}
        if kept:
            out[FIELDS] = freeze(kept)
    return FrozenDict(out)


def _window_message(message: dict[str, Any]) -> FrozenDict:
    """A message a compacted window kept (a user message), read-only as a reply is."""
    return freeze({"role": message["role"], "content": message.get("content") or ""})


def _call_dict(call: Any) -> FrozenDict:
    """One tool call of a reply, read-only, with the fields the run logs."""
    field = field_reader(call)
    function = field_reader(field("function"))
    return FrozenDict({
        "id": freeze(field("id")),
        "type": "function",
        "function": FrozenDict({"name": freeze(function("name")), "arguments": freeze(function("arguments") or "")}),
    })


_NO_SLOT = contextlib.nullcontext()  # a model without a concurrency limit holds no slot (harness.models.limits.model_slot)
SESSION_HEADER = "X-Ctxbench-Session"  # lets an HTTP mock keep per-run state (its prompt cache)
REQUEST_HEADER = "X-Ctxbench-Request"  # the request's index in its session (its retries share it)
SEED_HEADER = "X-Ctxbench-Seed"  # the run's seed, for an API with no seed field (Anthropic's): the mock agent's draws
ATTEMPT_HEADER = "X-Ctxbench-Attempt"  # 0, then 1 for its first retry, ...; request 0 attempt 0 starts the session


class LLMClient:
    """Calls one profile's model through litellm and returns normalized usage and cost.

    Transient failures are retried (harness.models.retry) and each retry is told to `on_retry`;
    requests wait for a slot of the profile's concurrency limit; with a response cache, a
    request answered before is replayed instead of sent.
    """

    def __init__(self, profile: LLMProfile, *, session: str = "", seed: int | None = None,
                 on_retry: RetryListener | None = None):
        self.profile = profile
        self.session = session
        self.seed = seed
        self.on_retry = on_retry
        self.sent = 0  # requests sent, a request and its retries counted once: the next one's index
        self._pricing = profile.pricing()
        self._litellm_prices: dict[str, float] | None = None  # asked of litellm's cost map at the first litellm call
        self._rng = random.Random(stable_hash(["retry", session, seed]))
        self._repeats: Counter[str] = Counter()
        supported = [] if profile.is_mock else supported_params(profile.model)  # the mock takes every one
        self._sends_seed = profile.is_mock or "seed" in supported
        family = provider_family(profile.model, profile.mock.get("cache"), profile.api_base)
        self.cache_planner = CachePlanner(profile.policy, family, session_key=session or profile.model)
        self._sends_cache_key = profile.is_mock or "prompt_cache_key" in supported
        self._cache = None
        if profile.response_cache:
            from harness.models.response_cache import open_cache

            self._cache = open_cache(profile.response_cache)
        self._kwargs_tools: list[dict[str, Any]] | None = None  # the tool list `_kwargs_made` was made for
        self._kwargs_made: dict[str, Any] | None = None
        self._mock = None
        self._direct = False  # the mock in process, called without litellm (MockConfig.via)
        self._unfailing = False  # ... and without faults: nothing it raises is retried (a context overflow is not)
        if profile.is_mock:
            from harness.models.mock.provider import MockConfig, register_mock_provider

            self._mock = register_mock_provider()
            self._mock_config = build_dataclass(MockConfig, {**profile.mock, "session": session}, "mock")
            self._mock_config.knobs_for(profile.model)  # built (and checked) once for the session
            self._direct = self._mock_config.via == "direct"
            self._unfailing = self._direct and not self._mock_config.fault_rates.active

    def _kwargs(self, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The request's keyword arguments (read-only: callers add theirs to a copy), made once per tool list: a
        run sends one list with every request (ours: per-request bookkeeping done once)."""
        if tools is not self._kwargs_tools or self._kwargs_made is None:
            self._kwargs_tools, self._kwargs_made = tools, self._make_kwargs(tools)
        return self._kwargs_made

    def _make_kwargs(self, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(self.profile.params)
        if tools:
            kwargs["tools"] = tools
        if self.profile.api_base:
            kwargs["api_base"] = self.profile.api_base
        if self.seed is not None and self._sends_seed:
            kwargs.setdefault("seed", self.seed)
        if self.profile.is_mock:
            kwargs["mock_config"] = {**self.profile.mock, "session": self.session}
        else:
            kwargs.setdefault("max_retries", 0)  # retries are ours, bounded and recorded
        return kwargs

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 clock_s: float | None = None, reply: dict[str, Any] | None = None,
                 options: dict[str, Any] | None = None, compact: bool = False) -> LLMResult:
        """One request; `clock_s`: the run's simulated clock as it is sent (a mock expires its cache on it);
        `reply`: for a mock, the response it must give (a trace replay's recorded message), never cached;
        `options`: provider parameters a strategy adds (Strategy.request_options), sent as litellm sends them
        (the mock in process takes them as `mock_options`); a request that needs the Responses API goes there
        (harness.models.responses_api). `compact`: OpenAI's `POST /responses/compact` instead, whose compacted
        window is the result's `window`."""
        kwargs = self._kwargs(tools)
        if options:
            kwargs = {**kwargs, **({"mock_options": options} if self._mock is not None else options)}
        if compact:
            kwargs = {**kwargs, responses_api.COMPACT: True}
        marks = self.cache_planner.marks(messages, tools, clock_s)
        if reply is not None:
            if self._mock is None:
                raise ValueError(f"{self.profile.model}: only a mock/... model can be told its reply")
            kwargs = {**kwargs, "mock_reply": reply}
            return self._send(messages, kwargs, clock_s, marks)
        if self._cache is None:
            return self._send(messages, kwargs, clock_s, marks)
        from harness.models.response_cache import request_key
        from harness.core.secrets import redact

        params = {k: v for k, v in kwargs.items() if k not in ("tools", "api_base", "max_retries")}
        if self.profile.serves_mock:  # serve-mock answers from the session's state, as the mock in process does,
            params["session"] = self.session  # whose mock_config carries the session into the key
        if marks != NO_MARKS:  # the same messages marked otherwise are billed otherwise: another request
            params["cache_marks"] = repr(marks)
        key = request_key(self.profile.model, self.profile.api_base, messages, tools, redact(params))
        repeat = self._repeats[key]
        self._repeats[key] += 1
        stored = self._cache.get(key, repeat)
        if stored is not None:
            return LLMResult(message=stored["message"], usage=Usage(**stored["usage"]), cost_usd=stored["cost_usd"],
                             cost_usd_uncached=stored["cost_usd_uncached"], latency_s=0.0, from_cache=True,
                             duration_s=stored.get("duration_s", 0.0), window=stored.get("window"),
                             context_management=stored.get("context_management"))
        try:
            result = self._send(messages, kwargs, clock_s, marks)
        except Exception:
            self._repeats[key] -= 1
            raise
        self._cache.put(key, repeat, self.profile.model, {
            "message": result.message, "usage": result.usage.as_dict(), "cost_usd": result.cost_usd,
            "cost_usd_uncached": result.cost_usd_uncached, "duration_s": result.duration_s,
            **({"window": result.window} if result.window is not None else {}),
            **({"context_management": result.context_management} if result.context_management is not None else {})})
        return result

    def _send(self, messages: list[dict[str, Any]], kwargs: dict[str, Any], clock_s: float | None,
              marks: CacheMarks) -> LLMResult:
        """One request, retried within the policy; each attempt is told its (request index, attempt), which a
        mock draws its faults from (harness.models.mock.faults), in process and over HTTP alike. A request to the mock in
        process without faults cannot fail in a way that is retried: it is made at once, as its first attempt."""
        index = self.sent
        self.sent += 1
        if self._unfailing:
            return self._request(messages, kwargs, clock_s, (index, 0), marks)
        attempts = itertools.count()
        return call_with_retries(lambda: self._request(messages, kwargs, clock_s, (index, next(attempts)), marks),
                                 self.profile.retry_policy, rng=self._rng, on_retry=self.on_retry)

    def session_headers(self, request: tuple[int, int], clock_s: float | None) -> dict[str, str]:
        """The headers an HTTP mock (serve-mock) keeps a run's state by: session, (request index, attempt), the run's
        clock and seed; neither is part of what the model reads."""
        headers = {SESSION_HEADER: self.session, REQUEST_HEADER: str(request[0]), ATTEMPT_HEADER: str(request[1])}
        if clock_s is not None:
            headers[CLOCK_HEADER] = repr(clock_s)
        if self.seed is not None:
            headers[SEED_HEADER] = str(self.seed)
        return headers

    def wire_request(self, attempt: int) -> tuple[int, int]:
        """(request index, attempt) of a request an SDK sends itself through ctxbench's transport: attempt 0 (the
        SDK's first try) is a new request, its retries share its index."""
        if attempt == 0:
            self.sent += 1
        return max(self.sent - 1, 0), attempt

    def serve_in_process(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], marks: CacheMarks | None,
                         options: dict[str, Any] | None, clock_s: float | None, request: tuple[int, int],
                         compact: bool = False) -> tuple[Any, dict[str, Any]]:
        """A request read off a provider's wire (an SDK's own: harness.models.serve_mock's anthropic_wire,
        responses_wire) served by this client's mock in process, in its session, with its seed: the mock's reply (or
        `/responses/compact` window) and raw usage."""
        if self._mock is None:
            raise ValueError(f"{self.profile.model}: only a mock/... model is served in process")
        if compact:
            return self._mock.compact(self.profile.model, messages, tools, self._mock_config, seed=self.seed,
                                      now_s=clock_s, request=request, marks=marks)
        return self._mock.serve(self.profile.model, messages, tools, self._mock_config, seed=self.seed, now_s=clock_s,
                                request=request, marks=marks, options=options)

    def count_in_process(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                         options: dict[str, Any] | None) -> tuple[int, int | None]:
        """A request's input tokens as this client's mock counts them, and before a context edit it asks for
        (harness.models.mock.provider.MockProvider.count_tokens; token counting: nothing served)."""
        if self._mock is None:
            raise ValueError(f"{self.profile.model}: only a mock/... model is served in process")
        return self._mock.count_tokens(messages, tools, options)

    def priced(self, message: dict[str, Any], usage: Usage, latency_s: float,
               served_latency_s: float | None = None) -> LLMResult:
        """A response's result: its cost at this profile's prices and its time on the run's clock (a mock's simulated
        latency, serve-mock's header, else the latency measured)."""
        if self._mock is not None:
            duration = simulated_duration_s(usage)
        else:
            duration = served_latency_s if served_latency_s is not None else latency_s
        cost = uncached = None
        if self._pricing is not None and usage.input_tokens is not None:
            cost, uncached = self._pricing.cost(usage)
        return LLMResult(message=message, usage=usage, cost_usd=cost, cost_usd_uncached=uncached, latency_s=latency_s,
                         duration_s=duration)

    def _request(self, messages: list[dict[str, Any]], kwargs: dict[str, Any], clock_s: float | None,
                 request: tuple[int, int], marks: CacheMarks) -> LLMResult:
        if self.profile.api_base and not self.profile.is_mock:
            headers = {**(kwargs.get("extra_headers") or {}), **self.session_headers(request, clock_s)}
            kwargs = {**kwargs, "extra_headers": headers}
        direct = self._direct
        if self._mock is not None and not direct:
            kwargs = {**kwargs, "mock_request": request, **({"mock_clock_s": clock_s} if clock_s is not None else {})}
        if not direct and self._litellm_prices is None:
            self._litellm_prices = litellm_prices(self.profile.model, self._pricing)
        limit = self.profile.max_concurrency
        with model_slot(self.profile.endpoint, limit) if limit is not None else _NO_SLOT:
            started = time.perf_counter()
            served_latency = None  # serve-mock's simulated latency, from its response header
            window = None
            if self._mock is not None and kwargs.get(responses_api.COMPACT):  # litellm has no mock compact route
                window, raw_usage = self._mock.compact(self.profile.model, messages, [], self._mock_config,  # no tools
                                                       seed=kwargs.get("seed"), now_s=clock_s, request=request,
                                                       marks=marks)
                reply = window[-1]
            elif direct:
                reply, raw_usage = self._mock.serve(self.profile.model, messages, kwargs.get("tools") or [],
                                                    self._mock_config, seed=kwargs.get("seed"), now_s=clock_s,
                                                    reply=kwargs.get("mock_reply"), request=request, marks=marks,
                                                    options=kwargs.get("mock_options"))
            elif self._mock is None and responses_api.wanted(kwargs, messages):
                output, raw_usage, response = responses_api.send(self.profile.model, messages,
                                                                 {**self._litellm_prices, **kwargs}, marks,
                                                                 self._sends_cache_key)
                reply, window = output[-1], (output if kwargs.get(responses_api.COMPACT) else None)
                served_latency = _served_latency_s(response)
            else:
                sent, marked = self._marked(messages, kwargs, marks)
                response = quiet_litellm().completion(model=self.profile.model, messages=sent,
                                                 **{**self._litellm_prices, **marked})
                reply, raw_usage = response.choices[0].message, getattr(response, "usage", None)
                served_latency = _served_latency_s(response)
            latency = time.perf_counter() - started
        result = self.priced(_message_dict(reply), normalize_usage(raw_usage), latency, served_latency)
        result.context_management = applied_edits(field_reader(reply)(FIELDS))
        if window is not None:
            result.window = [*map(_window_message, window[:-1]), result.message]
        return result

    def _marked(self, messages: list[dict[str, Any]], kwargs: dict[str, Any], marks: CacheMarks
                ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The messages and keyword arguments litellm sends with the request's cache marks: the provider's own
        markers (harness.models.cache_policy.mark_request); the mock in process takes them as they are (`mock_marks`),
        as its direct transport does."""
        if self._mock is not None:
            return messages, {**kwargs, "mock_marks": marks}
        sent, tools, extra = mark_request(messages, kwargs.get("tools"), marks)
        if not self._sends_cache_key:
            extra.pop("prompt_cache_key", None)
        return sent, {**kwargs, **({"tools": tools} if tools else {}), **extra}

    def end_session(self) -> None:
        if self.profile.is_mock:
            from harness.models.mock.provider import end_session

            end_session(self.session)
