"""What a strategy may see and do during a run: the log, the view, budgets, extra LLM profiles."""
from __future__ import annotations

import time
from typing import Any, Callable

from harness.core.clock import ClockConfig, RunClock
from harness.conversation.events import EventLog
from harness.core.frozen import freeze
from harness.models.limits import INVOCATION_SPENDING
from harness.models.llm import LLMClient, LLMProfile, LLMResult
from harness.models.usage import Usage
from harness.models.retry import RetryListener
from harness.core.tokens import count_tools, stable_hash
from harness.models.profiles import COMPACT_PROFILE, MAIN_PROFILE
from harness.conversation.view import Message, ViewState



class RunContext:
    def __init__(self, log: EventLog, profiles: dict[str, LLMProfile], *, run_id: str, seed: int,
                 clock: RunClock | None = None):
        self.log = log
        self.clock = clock or RunClock(ClockConfig(), [run_id, seed])  # the run's simulated time (harness.core.clock)
        self.view = ViewState()
        self.profiles = profiles
        self.run_id = run_id
        self.seed = seed
        self.tools = []
        self.turn_start = False
        self.requests = 0  # successful main-model requests so far
        self.last_usage: Usage | None = None  # of the last successful main-model request
        self.last_request_id = -1  # the event id of its llm_call
        self.cost_usd = 0.0  # spent so far by every profile (priced requests only)
        self.side_call_cpu_s = 0.0  # CPU of this run's thread inside side calls (summaries)
        self.library_cpu_s = 0.0  # CPU inside a wrapped library's own code (adapters), side calls left out
        self._clients: dict[str, LLMClient] = {}
        self.main_client: LLMClient | None = None  # the runner's client of the main model (its session), once made
        self._budget_of: LLMProfile | None = None  # the main profile `_budget` was worked out for
        self._budget: int | None = None

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas sent with every request of the run (the runner sets them once, before the first)."""
        return self._tools

    @tools.setter
    def tools(self, schemas: list[dict[str, Any]]) -> None:
        self._tools = schemas
        self.tools_hash = stable_hash(schemas)  # recorded with each request's view hash
        self._tools_tokens = count_tools(schemas)  # counted once: the estimate is asked before every request

    # ----- recording
    def emit(self, type_: str, **fields: Any) -> dict[str, Any]:
        """Append an event; its `view_ops`, if any, change the view from now on. A message is frozen before
        it is logged (harness.core.frozen), so the log, the metrics and the view share the one read-only copy."""
        if type_ == "message":
            fields["message"] = freeze(fields["message"])
        event = self.log.append(type_, **fields)
        self.view.apply(event)
        return event

    def add_message(self, message: Message, origin: str, placement: str = "append", **extra: Any) -> dict[str, Any]:
        """Log a chat message. origin: task | user | agent | tool | strategy | environment."""
        return self.emit("message", message=message, origin=origin, placement=placement, **extra)

    def record_response(self, request: dict[str, Any], result: LLMResult,
                        payload: dict[str, Any] | None = None) -> dict[str, Any]:
        """Count and log a successful main-model request (`request`: what was sent, with the clock it was
        sent at) and the agent's reply (with a typed action `payload`, if any); returns the reply's message event."""
        self.requests += 1
        self.last_usage = result.usage
        self.spend(result.cost_usd)
        self.clock.model(result.duration_s)
        call = self.log.append("llm_call", **request, ok=True, usage=result.usage.as_dict(), cost_usd=result.cost_usd,
                               cost_usd_uncached=result.cost_usd_uncached, latency_s=round(result.latency_s, 6),
                               from_cache=result.from_cache, duration_s=result.duration_s)
        self.last_request_id = call["id"]
        event = self.add_message(result.message, origin="agent", **({"payload": payload} if payload else {}))
        result.message = event["message"]  # the logged, read-only copy: what after_response is handed (harness.core.frozen)
        return event

    def last_message_id(self, origin: str) -> int:
        """Id of the last message logged with this origin (in the view or not), or -1."""
        return next((i for i in reversed(self.view.origins) if self.view.origins[i] == origin), -1)

    # ----- sizes and budgets
    @property
    def main(self) -> LLMProfile:
        return self.profiles[MAIN_PROFILE]

    def budget(self) -> int | None:
        """The main model's input budget, worked out once per main profile: strategies ask before every request,
        and a real model's asks litellm's model map."""
        main = self.main
        if main is not self._budget_of:
            self._budget_of, self._budget = main, main.input_budget()
        return self._budget

    def prompt_tokens_estimate(self) -> int:
        """The next request's input tokens as the harness counts them (view plus tool schemas)."""
        return self.view.total_tokens + self._tools_tokens

    # ----- other models (summarizers)
    def client(self, profile_name: str) -> LLMClient:
        if profile_name not in self.profiles:
            raise KeyError(profile_name)
        if profile_name not in self._clients:
            self._clients[profile_name] = LLMClient(self.profiles[profile_name], session=f"{self.run_id}/{profile_name}",
                                                    seed=self.seed, on_retry=self.retry_listener(profile_name))
        return self._clients[profile_name]

    def call_llm(self, profile_name: str, messages: list[Message], purpose: str) -> LLMResult:
        """A side call (e.g. a summary), logged as an llm_call of its profile and counted in the totals;
        it takes time on the run's clock too."""
        client = self.client(profile_name)
        return self._side_call(profile_name, client, purpose,
                               lambda clock_s: client.complete(messages, None, clock_s=clock_s))

    def call_compact(self, messages: list[Message], purpose: str) -> LLMResult:
        """OpenAI's `POST /responses/compact` on the main model with `messages` (its window: the result's
        `window`), through the main model's own client and session (the provider's prompt cache is the
        conversation's); a side call like a summary, logged under the profile COMPACT_PROFILE."""
        client = self.main_client or self.client(MAIN_PROFILE)
        return self._side_call(COMPACT_PROFILE, client, purpose,
                               lambda clock_s: client.complete(messages, None, clock_s=clock_s, compact=True))

    def _side_call(self, profile_name: str, client: LLMClient, purpose: str,
                   call: Callable[[float], LLMResult]) -> LLMResult:
        started = time.thread_time()
        clock_s = self.clock.now_s
        try:
            result = call(clock_s)
        except Exception as exc:
            self.record_side_call(profile_name, client.profile.model, purpose, clock_s, time.thread_time() - started,
                                  error=(type(exc).__name__, str(exc)))
            raise
        self.record_side_call(profile_name, client.profile.model, purpose, clock_s, time.thread_time() - started,
                              result=result)
        return result

    def record_side_call(self, profile_name: str, model: str, purpose: str, clock_s: float, cpu_s: float,
                         result: LLMResult | None = None, error: tuple[str, str] | None = None) -> None:
        """Log a side call under a profile's name, `model` answering: a successful one (`result`) counted, priced and
        on the run's clock, or a failed one (`error`: its type and message). `call_llm` and `call_compact` make their
        own; a library that sends its request itself (an SDK's client over ctxbench's transport:
        strategies.adapters.provider_wire) has it logged here."""
        self.side_call_cpu_s += cpu_s
        if result is None:
            kind, text = error or ("Error", "")
            self.log.append("llm_call", profile=profile_name, model=model, purpose=purpose, ok=False,
                            error_type=kind, error=text[:2000])
            return
        self.spend(result.cost_usd)
        self.clock.model(result.duration_s)
        self.log.append("llm_call", profile=profile_name, model=model, purpose=purpose, ok=True,
                        usage=result.usage.as_dict(), cost_usd=result.cost_usd,
                        cost_usd_uncached=result.cost_usd_uncached, latency_s=round(result.latency_s, 6),
                        from_cache=result.from_cache, clock_s=clock_s, duration_s=result.duration_s)

    def spend(self, cost_usd: float | None) -> None:
        """Count a request's cost toward this run's budget and the invocation's."""
        self.cost_usd += cost_usd or 0.0
        INVOCATION_SPENDING.add(cost_usd or 0.0)

    def retry_listener(self, profile_name: str) -> RetryListener:
        """Records each retry of a transient failure as an `llm_retry` event."""
        def record(retry: int, delay_s: float, error: BaseException) -> None:
            self.log.append("llm_retry", profile=profile_name, retry=retry, delay_s=round(delay_s, 4),
                            error_type=type(error).__name__, error=str(error)[:500])
        return record

    def close(self) -> None:
        for client in self._clients.values():
            client.end_session()
