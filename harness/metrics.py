"""Metrics of one run, computed from its event log alone (so they can be recomputed later).

Event vocabulary that metrics read (strategies emit these):

* ``llm_call``: ``profile`` ("main" or another, e.g. "summary"), ``ok``, ``usage``
  {input_tokens, cached_tokens, cache_write_tokens, output_tokens}, ``cost_usd``,
  ``cost_usd_uncached``, ``from_cache`` (true: replayed from the response cache, no request made).
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
* ``compaction_skipped`` with ``step`` and ``would_reclaim_tokens`` (a clear below ``min_clear_tokens``).
* ``tool_output_offloaded`` with ``result_id``, ``tool``, ``total_chars``, ``shown_chars`` and the
  full ``content`` (the store, so an audit can read what was held back).
* ``cache_bust_warning`` with ``cached_tokens``, ``established_prefix_tokens``, ``likely_cause``.

Cache-read tokens lost to compaction: for each main request that follows one or more
``compaction`` events, the previous main request's input tokens (the prefix the provider
holds) minus this request's cached tokens, floored at 0.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Mapping

from harness.context import MAIN_PROFILE
from harness.tokens import stable_hash

TOKEN_FIELDS = ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens")
# Calls that only act (submitting, writing) are not re-reads of content.
NON_READING_TOOLS = frozenset({"submit_answer", "write_file", "condense"})


def _sum(values: Iterable[Any]) -> Any:
    """Sum of the known values; None when no value was reported at all."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _usage_totals(calls: list[Mapping[str, Any]], prefix: str = "") -> dict[str, Any]:
    usages = [c.get("usage") or {} for c in calls]
    totals = {prefix + name: _sum(u.get(name) for u in usages) for name in TOKEN_FIELDS}
    totals[prefix + "cost_usd"] = _sum(c.get("cost_usd") for c in calls)
    totals[prefix + "cost_usd_uncached"] = _sum(c.get("cost_usd_uncached") for c in calls)
    return totals


def count_rereads(events: Iterable[Mapping[str, Any]]) -> int:
    """Tool calls that fetched content already fetched before: the price of forgetting.

    A call counts when an earlier call had the same name and arguments and got the very same
    successful result; running the tests again after an edit (new output) does not count.
    """
    events = list(events)
    results = {e["message"].get("tool_call_id"): e for e in events
               if e["type"] == "message" and e["message"].get("role") == "tool"}
    seen: set[tuple[str, str, str]] = set()
    rereads = 0
    for event in events:
        if event["type"] != "message" or event.get("origin") != "agent":
            continue
        for call in event["message"].get("tool_calls") or ():
            function = call.get("function", {})
            name = function.get("name", "")
            result = results.get(call.get("id"))
            if name in NON_READING_TOOLS or result is None or result.get("is_error"):
                continue
            try:
                arguments = json.dumps(json.loads(function.get("arguments") or "{}"), sort_keys=True)
            except json.JSONDecodeError:
                arguments = function.get("arguments") or ""
            content = result["message"].get("content") or ""
            key = (name, arguments, content if isinstance(content, str) else stable_hash(content))
            if key in seen:
                rereads += 1
            seen.add(key)
    return rereads


def compaction_cache_loss(events: Iterable[Mapping[str, Any]]) -> int:
    """Cached tokens not read back on the main request right after each compaction edit."""
    lost = 0
    previous_input: int | None = None
    edited = False
    for event in events:
        if event["type"] == "compaction":
            edited = True
        elif event["type"] == "llm_call" and event.get("ok") and event.get("profile") == MAIN_PROFILE:
            usage = event.get("usage") or {}
            cached = usage.get("cached_tokens")
            if edited and previous_input is not None and cached is not None:
                lost += max(previous_input - cached, 0)
            previous_input = usage.get("input_tokens")
            edited = False
    return lost


def compute_metrics(events: list[Mapping[str, Any]]) -> dict[str, Any]:
    calls = [e for e in events if e["type"] == "llm_call" and e.get("ok")]
    main = [c for c in calls if c.get("profile") == MAIN_PROFILE]
    side = [c for c in calls if c.get("profile") != MAIN_PROFILE]
    metrics: dict[str, Any] = {"requests": len(main), "summarizer_requests": len(side)}
    metrics.update(_usage_totals(calls))
    metrics.update(_usage_totals(side, prefix="summarizer_"))
    cached, total_in = metrics["cached_tokens"], metrics["input_tokens"]
    metrics["cache_hit_rate"] = (cached / total_in) if cached is not None and total_in else None
    contexts = [c["usage"]["input_tokens"] for c in main if (c.get("usage") or {}).get("input_tokens") is not None]
    metrics["peak_context_tokens"] = max(contexts) if contexts else None
    metrics["mean_context_tokens"] = (sum(contexts) / len(contexts)) if contexts else None
    metrics["failed_requests"] = sum(1 for e in events if e["type"] == "llm_call" and not e.get("ok"))
    metrics["retries"] = sum(1 for e in events if e["type"] == "llm_retry")
    metrics["response_cache_hits"] = sum(1 for c in calls if c.get("from_cache"))
    kinds = Counter(e.get("kind") for e in events if e["type"] == "condensation")
    metrics["agent_resets"] = kinds.get("agent_reset", 0)
    metrics["hard_resets"] = kinds.get("hard_reset", 0)
    metrics["summaries"] = kinds.get("summary", 0)
    metrics["condensation_requests"] = sum(1 for e in events if e["type"] == "condensation_request")
    metrics["condensations_refused"] = sum(1 for e in events if e["type"] == "condensation_refused")
    metrics["summary_attempts"] = sum(1 for e in events if e["type"] == "summary_attempt")
    metrics["hard_reset_failures"] = sum(1 for e in events if e["type"] == "hard_reset_failed")
    metrics["hard_resets_blocked"] = sum(1 for e in events if e["type"] == "hard_reset_blocked")
    metrics["condense_refusals"] = sum(1 for e in events if e["type"] == "message" and e.get("is_error")
                                       and e["message"].get("name") == "condense")
    levels = Counter(str(e.get("level")) for e in events if e["type"] == "warning")
    metrics["warnings"] = sum(levels.values())
    metrics["warnings_by_level"] = dict(sorted(levels.items()))
    steps = Counter(str(e.get("step")) for e in events if e["type"] == "compaction")
    metrics["compactions"] = sum(steps.values())
    metrics["compactions_by_step"] = dict(sorted(steps.items()))
    compactions = [e for e in events if e["type"] == "compaction"]
    metrics["compaction_reclaimed_tokens"] = sum(e.get("reclaimed_tokens") or 0 for e in compactions)
    reclaimed_by_step: Counter[str] = Counter()
    for event in compactions:
        reclaimed_by_step[str(event.get("step"))] += event.get("reclaimed_tokens") or 0
    metrics["compaction_reclaimed_by_step"] = dict(sorted(reclaimed_by_step.items()))
    metrics["compaction_cache_read_lost_tokens"] = compaction_cache_loss(events)
    metrics["compactions_skipped"] = sum(1 for e in events if e["type"] == "compaction_skipped")
    offloads = [e for e in events if e["type"] == "tool_output_offloaded"]
    metrics["tool_outputs_offloaded"] = len(offloads)
    metrics["tool_output_offloaded_chars"] = sum((e.get("total_chars") or 0) - (e.get("shown_chars") or 0)
                                                 for e in offloads)
    metrics["cache_bust_warnings"] = sum(1 for e in events if e["type"] == "cache_bust_warning")
    metrics["rereads"] = count_rereads(events)
    return metrics
