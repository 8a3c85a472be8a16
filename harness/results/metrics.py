"""Metrics of one run, computed from its event log alone (so they can be recomputed later).

Event vocabulary that metrics read (strategies emit these):

* ``llm_call``: ``profile`` ("main" or another, e.g. "summary"), ``ok``, ``usage``
  {input_tokens, cached_tokens, cache_write_tokens, output_tokens}, ``cost_usd``,
  ``cost_usd_uncached``, ``from_cache`` (true: replayed from the response cache, no request made).
* The simulated clock (harness.core.clock): ``llm_call`` ``duration_s`` (the request's time on the
  run's clock) and ``clock_s`` (the clock when it was sent); a tool result ``message``'s
  ``tool_s`` (the call's simulated duration); a later user ``message``'s ``delay_s`` (the user's
  wait before it), each with ``clock_s`` after it. Per run: ``model_s``, ``tool_s``,
  ``user_wait_s`` and their sum ``simulated_s`` (the session's length on that clock).
* ``llm_retry``: ``profile``, ``retry`` (1-based), ``delay_s``, ``error_type``, ``error``: a transient
  failure (rate limit, server error, timeout) about to be retried.
* ``message`` with ``origin: "agent"`` and ``tool_calls``: for re-reads.
* ``condensation`` with ``kind``: "agent_reset", "hard_reset" or "summary"; ``condensation_request``
  (intent: ``reason`` "agent", "context_window_error", "manual", "tokens" or "size");
  ``condensation_refused`` (a summarizer declined: too little to forget, or its summary failed).
* ``summary_attempt`` (one try of a summary call; ``preview_cap`` shrinks on retries);
  ``hard_reset_failed`` (every attempt failed or no summary profile: the run stops, history kept);
  ``hard_reset_blocked`` (an overflow again before any main-model success after a hard reset).
* ``message`` of a tool result named "condense" with ``is_error``: a refused condense call (not alone,
  message too long, bad arguments); an accepted one carries ``payload.type`` "CondenseObservation".
* ``warning`` with ``level`` (e.g. 0.75).
* ``compaction`` with ``step`` (e.g. "clamp", "clear", "window", "mask", "clear_tool_uses"),
  ``reclaimed_tokens``, ``tokens_before``, ``tokens_after``, ``trigger`` (e.g. "turn_boundary",
  "emergency", "per_request", "context_window_error", "before_request", "input_tokens"),
  ``message_ids`` and the ``view_ops`` themselves.
* ``compression`` (a compression layer in front of every main request: headroom's ``compress()``) with
  ``tokens_saved``: that request's input is smaller by this than the same messages uncompressed.
* ``compaction_skipped`` with ``step`` and ``would_reclaim_tokens`` (a clear below ``min_clear_tokens``).
* ``tool_output_offloaded`` with ``result_id``, ``tool``, ``total_chars``, ``shown_chars`` and the
  full ``content`` (the store, so an audit can read what was held back).
* ``cache_bust_warning`` with ``cached_tokens``, ``established_prefix_tokens``, ``likely_cause``.

* ``run_start`` with ``state_changing_tools`` (names of the tools whose calls change the environment).
* ``progress`` with ``value``: the environment's milestone count changed (tasks.base.Environment.progress).
* ``llm_call`` of the main profile with ``orphaned_tool_ids`` (tool call ids whose call or result is
  missing from the view sent) and ``task_statement_missing`` (true), present only when they apply.

Failure modes, per run:

* ``condensation_loops``: streaks of LOOP_CONDENSATIONS or more consecutive ``condensation`` events
  (agent resets, hard resets, summaries) with no ``progress`` event between them;
  ``condensations_in_loops``: the condensations in those streaks. Compaction steps (clearing, masking,
  windows) are not condensations: several of them run at every request by design.
* ``orphan_view_requests``: successful main requests (of ``requests``) whose view held a tool result without its call or a call
  without its result (OpenHands #7512).
* ``task_missing_requests``: successful main requests whose view held no message with the task statement's text.
* ``reexecuted_state_calls``: calls of a state-changing tool with the same name and arguments as one
  that ran successfully before the last condensation (OpenHands #10508, #11910).

Outages: a row's ``transient`` is true when the run ended ``error`` on a failure
harness.models.retry classes as transient (rate limit, server error, timeout, dropped connection) after its
retries, in the main request or raised out of a strategy's own request; false otherwise (its
``run_end`` event carries ``transient: true`` then). Such a row is an outage, not a result:
``--resume`` reruns it and the new row replaces it.

Trace replays (harness.traces.replay): a main ``llm_call`` carries ``forgotten_references`` (how many
references, harness.traces.references, the recorded response being replayed used that appeared earlier in
the trace and that no message of the view sent held) and up to a few of them as
``forgotten_examples``, with ``forgotten_from``: the trace index of the message each example first appeared in.
Per run, ``forgotten_references`` is their sum over successful main requests and ``forgotten_per_request`` that
sum over those requests (``requests``); both None for runs that are not replays (nothing measured them).

The checker's verdict: a row's ``detail`` is the ``detail`` of the run's ``run_end``
event (the environment's Score.detail, e.g. ``expected`` and ``given``), bounded by ``bounded_detail``
so that a huge answer cannot bloat runs.jsonl: strings scrubbed of known secrets and then cut to
DETAIL_STRING_CHARS, at most DETAIL_ITEMS entries per list or mapping, DETAIL_DEPTH levels, and
DETAIL_BUDGET characters over the whole detail (cuts are marked with ``…``); ``{}`` when no checker ran.
The event log keeps the detail whole.

Cache-read tokens lost to compaction: for each main request that follows one or more
``compaction`` events, the previous main request's input tokens (the prefix the provider
holds) minus this request's cached tokens, floored at 0.
"""
from __future__ import annotations

import functools
import json
from collections import Counter
from typing import Any, Iterable, Mapping

from harness.models.profiles import MAIN_PROFILE
from harness.core.secrets import scrub
from harness.core.fast_json import sorted_json
from harness.core.tokens import stable_hash

TOKEN_FIELDS = ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens")
# Calls that only act (submitting, writing) are not re-reads of content.
NON_READING_TOOLS = frozenset({"submit_answer", "write_file", "condense"})
# Ours: three condensations with no milestone between them is a loop. One condensation without progress
# since the last is ordinary (the agent rebuilds its context first), and so are two (a reset can follow
# one whose notes alone filled the window); a third means two whole cycles ended where they began.
LOOP_CONDENSATIONS = 3


def call_key(function: Mapping[str, Any]) -> tuple[str, str]:
    """A tool call's name and its arguments in canonical JSON (as given when they do not parse)."""
    return function.get("name", ""), canonical_arguments(function.get("arguments") or "")


@functools.lru_cache(maxsize=4096)
def canonical_arguments(text: str) -> str:
    """A call's JSON arguments text with sorted keys (`text` itself when it does not parse). A pure function
    of the text, memoized: each call is keyed when it is made and again when a run's rereads are counted,
    and agents repeat their calls' arguments."""
    try:
        return sorted_json(json.loads(text or "{}"))
    except json.JSONDecodeError:
        return text


# Ours: bounds of a row's `detail` (bounded_detail). A checker's expected-vs-given fits in them; a 100k-character
# answer does not need to, the event log keeps it whole.
DETAIL_STRING_CHARS = 300
DETAIL_ITEMS = 20
DETAIL_DEPTH = 4
DETAIL_BUDGET = 2000
CUT = "…"


def bounded_detail(detail: Any) -> dict[str, Any]:
    """A checker's detail as plain JSON data of bounded size (see the module docstring): every string is
    scrubbed before it is cut, so a cut cannot leave part of a secret the row path would no longer know."""
    budget = [DETAIL_BUDGET]

    def text(value: str) -> str:
        value = scrub(value)
        keep = max(0, min(DETAIL_STRING_CHARS, budget[0]))
        budget[0] -= min(len(value), keep)
        return value if len(value) <= keep else f"{value[:keep]}{CUT}[+{len(value) - keep:,} chars]"

    def clip(value: Any, depth: int) -> Any:
        budget[0] -= 2  # every value costs something, so the budget also bounds the number of values
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str) or depth >= DETAIL_DEPTH or not isinstance(value, (Mapping, list, tuple)):
            return text(value if isinstance(value, str) else str(value))
        mapping = isinstance(value, Mapping)
        items = list(value.items()) if mapping else list(enumerate(value))
        kept = []
        for key, item in items:
            if len(kept) == DETAIL_ITEMS or budget[0] <= 0:
                break
            kept.append((text(str(key)) if mapping else key, clip(item, depth + 1)))
        more = len(items) - len(kept)
        if mapping:
            return {**dict(kept), **({CUT: f"+{more} more"} if more else {})}
        return [item for _, item in kept] + ([f"{CUT}[+{more} more]"] if more else [])

    clipped = clip(detail if detail is not None else {}, 0)
    return clipped if isinstance(clipped, dict) else {"detail": clipped}


class MetricsError(Exception):
    """A run's events could not be folded into its metrics: the run ends `error`, never the invocation."""


class _Loops:
    """Streaks of condensations without progress between them."""

    def __init__(self) -> None:
        self.streak = 0  # condensations since the last progress
        self.loops = 0
        self.inside = 0

    def condensed(self) -> None:
        self.streak += 1

    def progressed(self) -> None:
        if self.streak >= LOOP_CONDENSATIONS:
            self.loops += 1
            self.inside += self.streak
        self.streak = 0

    def totals(self) -> tuple[int, int]:
        """(loops, condensations in loops), the streak still open included."""
        open_loop = self.streak >= LOOP_CONDENSATIONS
        return self.loops + open_loop, self.inside + (self.streak if open_loop else 0)


class _Reexecutions:
    """State-changing calls repeated after a condensation (OpenHands #10508, #11910)."""

    def __init__(self) -> None:
        self.tools: frozenset[str] = frozenset()
        self.before: set[tuple[str, str]] = set()  # ran successfully before the last condensation
        self.since: set[tuple[str, str]] = set()  # ran successfully since
        self.pending: dict[Any, tuple[str, str]] = {}  # call id -> key, until its result
        self.count = 0

    def called(self, message: Mapping[str, Any]) -> None:
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            if function.get("name", "") in self.tools:  # arguments parsed for these alone
                key = call_key(function)
                self.count += key in self.before
                self.pending[call.get("id")] = key

    def answered(self, call_id: Any, is_error: Any) -> None:
        key = self.pending.pop(call_id, None)
        if key is not None and not is_error:
            self.since.add(key)

    def condensed(self) -> None:
        self.before |= self.since
        self.since = set()


class _UsageTotals:
    """Token and cost sums of some successful calls, in the order logged; None while no call reported one."""

    COST_FIELDS = ("cost_usd", "cost_usd_uncached")  # of the event itself; the token counts are of its usage
    FIELDS = (*TOKEN_FIELDS, *COST_FIELDS)

    def __init__(self) -> None:
        self.calls = 0
        self.sums: dict[str, Any] = dict.fromkeys(self.FIELDS)

    def add(self, event: Mapping[str, Any], usage: Mapping[str, Any]) -> None:
        self.calls += 1
        for fields, source in ((TOKEN_FIELDS, usage), (self.COST_FIELDS, event)):
            for name in fields:
                value = source.get(name)
                if value is not None:
                    total = self.sums[name]
                    self.sums[name] = (0 if total is None else total) + value

    def as_dict(self, prefix: str = "") -> dict[str, Any]:
        return {prefix + name: total for name, total in self.sums.items()}


class RunMetrics:
    """The metrics of one run, folded from its events one at a time (as harness.conversation.view folds the view).

    The runner feeds each event as it is logged, so a run need not hold its log in memory;
    `compute_metrics` folds a saved log the same way, so both give the same numbers. It keeps
    counters, plus references to the messages that re-reads are judged from (the view holds them).
    """

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()  # events by type
        self.calls = _UsageTotals()  # every successful call
        self.side = _UsageTotals()  # those of other profiles than the main one (summarizers)
        self.response_cache_hits = 0
        self.context_peak: int | None = None
        self.context_sum = 0
        self.context_count = 0
        self.condensation_kinds: Counter[Any] = Counter()
        self.condense_refusals = 0
        self.warning_levels: Counter[str] = Counter()
        self.compaction_steps: Counter[str] = Counter()
        self.reclaimed_by_step: Counter[str] = Counter()
        self.offloaded_chars = 0
        self.compression_saved: list[int] = []  # tokens each compressed request saved
        self.cache_read_lost = 0
        self.seconds: Counter[str] = Counter()  # the simulated clock's parts: model_s, tool_s, user_wait_s
        self._previous_input: int | None = None  # of the last successful main request
        self._edited = False  # a compaction since then
        self._read_lost = 0  # cached tokens the last main request did not read back of the one before it
        self._agent_messages: list[Mapping[str, Any]] = []
        self._results: dict[Any, tuple[Any, Mapping[str, Any]]] = {}  # tool_call_id -> (is_error, message): the last
        self.loops = _Loops()
        self.reexecutions = _Reexecutions()
        self.orphan_view_requests = 0
        self.task_missing_requests = 0
        self.forgotten_references: int | None = None  # trace replays alone measure it
        self.detail: dict[str, Any] = {}  # the checker's, from run_end
        self.failure: str | None = None  # why the metrics stopped folding (MetricsError), if they did

    def add(self, event: Mapping[str, Any]) -> None:
        """Fold one event. An event the metrics cannot read (a strategy's odd one) raises MetricsError
        once, naming it, and ends the run as `error`; later events are not folded."""
        if self.failure is not None:
            return
        try:
            self._fold(event)
        except Exception as exc:
            self.failure = (f"the metrics cannot read event {event.get('id')!r} "
                            f"({event.get('type')!r}): {type(exc).__name__}: {exc}")
            raise MetricsError(self.failure) from exc

    def _fold(self, event: Mapping[str, Any]) -> None:
        kind = event["type"]
        self.counts[kind] += 1
        if kind == "llm_call":
            self._add_call(event)
        elif kind == "message":
            message = event["message"]
            self.seconds["tool_s"] += event.get("tool_s") or 0.0
            self.seconds["user_wait_s"] += event.get("delay_s") or 0.0
            if event.get("is_error") and message.get("name") == "condense":
                self.condense_refusals += 1
            if message.get("role") == "tool":
                self._results[message.get("tool_call_id")] = (event.get("is_error"), message)
                self.reexecutions.answered(message.get("tool_call_id"), event.get("is_error"))
            if event.get("origin") == "agent":
                self._agent_messages.append(message)
                self.reexecutions.called(message)
        elif kind == "condensation":
            self.condensation_kinds[event.get("kind")] += 1
            self.loops.condensed()
            self.reexecutions.condensed()
        elif kind == "progress":
            self.loops.progressed()
        elif kind == "run_start":
            self.reexecutions.tools = frozenset(event.get("state_changing_tools") or ())
        elif kind == "warning":
            self.warning_levels[str(event.get("level"))] += 1
        elif kind == "compaction":
            step = str(event.get("step"))
            self.compaction_steps[step] += 1
            self.reclaimed_by_step[step] += event.get("reclaimed_tokens") or 0
            if event.get("by") == "provider":  # the provider edited the request it answered: its loss is that one's
                self.cache_read_lost += self._read_lost
            else:
                self._edited = True
        elif kind == "run_end":
            self.detail = bounded_detail(event.get("detail"))
        elif kind == "compression":
            self.compression_saved.append(event.get("tokens_saved") or 0)
        elif kind == "tool_output_offloaded":
            self.offloaded_chars += (event.get("total_chars") or 0) - (event.get("shown_chars") or 0)

    def _add_call(self, event: Mapping[str, Any]) -> None:
        if not event.get("ok"):
            return  # counted with the llm_call events
        usage = event.get("usage") or {}
        self.seconds["model_s"] += event.get("duration_s") or 0.0
        if event.get("from_cache"):
            self.response_cache_hits += 1
        self.calls.add(event, usage)
        if event.get("profile") != MAIN_PROFILE:
            self.side.add(event, usage)
            return
        self.orphan_view_requests += bool(event.get("orphaned_tool_ids"))
        self.task_missing_requests += bool(event.get("task_statement_missing"))
        if "forgotten_references" in event:
            self.forgotten_references = (self.forgotten_references or 0) + event["forgotten_references"]
        context = usage.get("input_tokens")
        if context is not None:
            self.context_peak = context if self.context_peak is None else max(self.context_peak, context)
            self.context_sum += context
            self.context_count += 1
        cached = usage.get("cached_tokens")
        self._read_lost = max(self._previous_input - cached, 0) \
            if self._previous_input is not None and cached is not None else 0
        if self._edited:
            self.cache_read_lost += self._read_lost
        self._previous_input = context
        self._edited = False

    def rereads(self) -> int:
        """Tool calls that fetched content already fetched before: the price of forgetting.

        A call counts when an earlier call had the same name and arguments and got the very same
        successful result; running the tests again after an edit (new output) does not count.
        """
        seen: set[tuple[str, str, str]] = set()
        rereads = 0
        for message in self._agent_messages:
            for call in message.get("tool_calls") or ():
                name, arguments = call_key(call.get("function", {}))
                result = self._results.get(call.get("id"))
                if name in NON_READING_TOOLS or result is None or result[0]:
                    continue
                content = result[1].get("content") or ""
                key = (name, arguments, content if isinstance(content, str) else stable_hash(content))
                if key in seen:
                    rereads += 1
                seen.add(key)
        return rereads

    def result(self) -> dict[str, Any]:
        """The run's metrics; raises MetricsError when they cannot be computed (an event they could not read)."""
        if self.failure is not None:
            raise MetricsError(self.failure)
        try:
            return self._result()
        except Exception as exc:
            self.failure = f"the metrics cannot be computed: {type(exc).__name__}: {exc}"
            raise MetricsError(self.failure) from exc

    def _result(self) -> dict[str, Any]:
        counts = self.counts
        metrics: dict[str, Any] = {"requests": self.calls.calls - self.side.calls,
                                   "summarizer_requests": self.side.calls}
        metrics.update(self.calls.as_dict())
        metrics.update(self.side.as_dict(prefix="summarizer_"))
        cached, total_in = metrics["cached_tokens"], metrics["input_tokens"]
        metrics["cache_hit_rate"] = (cached / total_in) if cached is not None and total_in else None
        metrics["peak_context_tokens"] = self.context_peak
        metrics["mean_context_tokens"] = (self.context_sum / self.context_count) if self.context_count else None
        metrics["failed_requests"] = counts["llm_call"] - self.calls.calls
        metrics["retries"] = counts["llm_retry"]
        metrics["response_cache_hits"] = self.response_cache_hits
        metrics["agent_resets"] = self.condensation_kinds.get("agent_reset", 0)
        metrics["hard_resets"] = self.condensation_kinds.get("hard_reset", 0)
        metrics["summaries"] = self.condensation_kinds.get("summary", 0)
        metrics["condensation_requests"] = counts["condensation_request"]
        metrics["condensations_refused"] = counts["condensation_refused"]
        metrics["summary_attempts"] = counts["summary_attempt"]
        metrics["hard_reset_failures"] = counts["hard_reset_failed"]
        metrics["hard_resets_blocked"] = counts["hard_reset_blocked"]
        metrics["condense_refusals"] = self.condense_refusals
        metrics["warnings"] = sum(self.warning_levels.values())
        metrics["warnings_by_level"] = dict(sorted(self.warning_levels.items()))
        metrics["compactions"] = sum(self.compaction_steps.values())
        metrics["compactions_by_step"] = dict(sorted(self.compaction_steps.items()))
        metrics["compaction_reclaimed_tokens"] = sum(self.reclaimed_by_step.values())
        metrics["compaction_reclaimed_by_step"] = dict(sorted(self.reclaimed_by_step.items()))
        metrics["compaction_cache_read_lost_tokens"] = self.cache_read_lost
        metrics["compactions_skipped"] = counts["compaction_skipped"]
        metrics["compressed_requests"] = sum(saved > 0 for saved in self.compression_saved)
        metrics["compression_saved_tokens"] = sum(self.compression_saved)
        metrics["tool_outputs_offloaded"] = counts["tool_output_offloaded"]
        metrics["tool_output_offloaded_chars"] = self.offloaded_chars
        metrics["cache_bust_warnings"] = counts["cache_bust_warning"]
        metrics["rereads"] = self.rereads()
        parts = {name: round(self.seconds[name], 3) for name in ("model_s", "tool_s", "user_wait_s")}
        metrics["simulated_s"] = round(sum(self.seconds.values()), 3)
        metrics.update(parts)
        metrics["condensation_loops"], metrics["condensations_in_loops"] = self.loops.totals()
        metrics["orphan_view_requests"] = self.orphan_view_requests
        metrics["task_missing_requests"] = self.task_missing_requests
        metrics["reexecuted_state_calls"] = self.reexecutions.count
        metrics["forgotten_references"] = self.forgotten_references
        metrics["forgotten_per_request"] = (self.forgotten_references / metrics["requests"]
                                            if self.forgotten_references is not None and metrics["requests"] else None)
        metrics["detail"] = self.detail
        return metrics


def compute_metrics(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The metrics of a saved (or in-memory) event log."""
    metrics = RunMetrics()
    for event in events:
        metrics.add(event)
    return metrics.result()
