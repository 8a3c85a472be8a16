"""Replay recorded trajectories (harness.traces) under any strategy: the recorded actions held fixed.

For each trace x strategy the replay walks the recorded messages through the run's own machinery
(RunContext, EventLog, ViewState, RunMetrics, the LLM layer): system and user messages are logged as
they come; before each recorded assistant message the strategy's hooks run on the view (a user
message since the last response makes it a turn start), the view is sent to the mock provider as
model `mock/replay`, which simulates the window, the prefix cache, usage and price from the view
sent and answers with the recorded message it is handed (it is told nothing else of the trace);
the recorded tool results are then appended through `transform_tool_result`. A view over the
window raises the context-window error, so summarizing strategies summarize and `none` ends
`context_overflow` there; the rest of the trace is not replayed.

What the strategy would have starved the agent of: at each request, `forgotten_references`
(harness.traces.references) counts the references of the recorded response that appeared earlier in the
trace and that no message of the view sent held, from an index kept as view ops apply; where the strategy asked
the provider to forget (its compaction, its context edits), no message the model saw held.
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Callable

from harness.models.cache_policy import policy_label
from harness.core.clock import ClockConfig, RunClock
from harness.conversation.context import RunContext
from harness.models.profiles import MAIN_PROFILE
from harness.run.contain import Guarded, guarded_call
from harness.core.errors import ConfigError
from harness.conversation.events import EventLog, event_log_path
from harness.models.llm import LLMClient, is_context_window_error
from harness.results.metrics import RunMetrics
from harness.models.profiles import build_profiles
from harness.models.mock.compaction import read_edit
from harness.models.mock.context_editing import clear, input_tokens, read_clear
from harness.models.provider_compaction import compaction_at, visible_from
from harness.models.usage import Pricing, Usage
from harness.traces.references import ReferenceIndex, message_references
from harness.run.runner import (add_tool_result, check_labels, check_profiles, crash_error, crash_termination,
                                finish_row, request_fields, run_id_for)
from harness.core.secrets import redact
from harness.traces import Trace, calibration
from strategies import StrategySpec, build_strategy
from tasks.base import ToolCall, ToolResult

REPLAY_MODEL = "mock/replay"  # harness.models.mock.provider.REPLAY_MODEL (not imported: the mock loads lazily)
SEED = 0  # a replay draws nothing of its own; the mock summarizer's knobs draw from it
MAX_RECOVERIES = 5  # context-window errors recovered at one request before it ends `context_overflow`
FORGOTTEN_EXAMPLES = 5  # references named on each llm_call event, of those forgotten there
# Strategy tools only the agent's own call makes work: a recorded agent never made it.
COOPERATIVE_TOOLS = {
    "condense": "it condenses only when the agent, warned, saves its notes and calls its `condense` tool; the "
                "recorded agent never did, so the replay would measure it as `none` plus warning messages",
}


@dataclass
class TraceCell:
    """One replay: a trace under a strategy, with the run's profiles (plain data)."""

    trace: Trace
    strategy: StrategySpec
    profiles: dict[str, dict[str, Any]]
    events_dir: str
    prefix_tokens: int = 0  # a stand-in for the unrecorded system prompt and tools (harness.traces.calibration)

    @property
    def run_id(self) -> str:
        return run_id_for(self.trace.trace_id, self.strategy.display, SEED)


def check_replayable(spec: StrategySpec, profiles: dict[str, dict[str, Any]]) -> None:
    """Build the strategy (so its config is checked), its profiles, and refuse one needing the agent's help."""
    strategy = build_strategy(spec)
    check_profiles(strategy, profiles, spec.display)
    reason = needs_the_agent(strategy)
    if reason:
        raise ConfigError(f"strategy {spec.display} cannot be replayed on recorded traces: {reason}")


def needs_the_agent(strategy: Any) -> str | None:
    """Why a strategy cannot be replayed (it works only through a call the recorded agent never made), or None."""
    return next((COOPERATIVE_TOOLS[tool.name] for tool in strategy.tools() if tool.name in COOPERATIVE_TOOLS), None)


def replayable(specs: list[StrategySpec]) -> tuple[list[StrategySpec], dict[str, str]]:
    """The specs a replay can run, and those it cannot with the reason (`--strategies all` skips them)."""
    kept, skipped = [], {}
    for spec in specs:
        reason = needs_the_agent(build_strategy(spec))
        if reason:
            skipped[spec.display] = reason
        else:
            kept.append(spec)
    return kept, skipped


def build_cells(traces: list[Trace], strategies: list[StrategySpec], profiles: dict[str, dict[str, Any]],
                events_dir: str, *, calibrate: bool = False, chosen: Collection[str] = ()) -> list[TraceCell]:
    """Every trace x strategy, checked before any request (ConfigError). `calibrate`: each trace replayed as its
    agent ran it (harness.traces.calibration), but for the options in `chosen` the user set."""
    check_labels(strategies)
    if profiles["main"]["model"] != REPLAY_MODEL:
        raise ConfigError(f"profiles.main.model: a trace replay's main profile must be {REPLAY_MODEL}, "
                          f"got {profiles['main']['model']!r}")
    if calibrate:
        calibration.check_strategies([spec.display for spec in strategies])
    build_profiles(profiles)
    for spec in strategies:
        check_replayable(spec, profiles)
    cells = []
    for trace in traces:
        own = calibration.calibration_profiles(trace, profiles, chosen) if calibrate else profiles
        if own is not profiles:
            build_profiles(own)
        prefix = calibration.unrecorded_prefix(trace) if calibrate else 0
        cells.extend(TraceCell(trace, spec, own, events_dir, prefix) for spec in strategies)
    return cells


def _tools(trace: Trace, strategy: Any) -> list[dict[str, Any]]:
    """The trace's tool schemas, then the strategy's own (offered, never called by a recorded agent)."""
    names = {(tool.get("function") or {}).get("name") for tool in trace.tools}
    return list(trace.tools) + [spec.schema() for spec in strategy.tools() if spec.name not in names]


def _reply(message: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        reply["tool_calls"] = message["tool_calls"]
    return reply


class _Replay:
    """One trace under one strategy: the walk over its messages."""

    def __init__(self, cell: TraceCell, ctx: RunContext, main: LLMClient, strategy: Any):
        self.cell, self.ctx, self.main, self.strategy = cell, ctx, main, strategy
        # The recorded responses' references, by position: only those are ever checked (`uses`), so the index
        # counts those alone, and the other messages are read for those alone.
        self.responses = {position: message_references(message) for position, message in enumerate(cell.trace.messages)
                          if message["role"] == "assistant"}
        self.index = ReferenceIndex(frozenset().union(*self.responses.values()))
        ctx.view.watch = self.index.watch
        # References of the trace's messages so far (those wanted), each with the position of the message it
        # first appeared in: where a forgotten one came from (`forgotten_from`).
        self.seen: dict[str, int] = {}
        self.calls: dict[str, ToolCall] = {}
        self.sent_at = request_times(cell.trace)
        self.cleared: dict[Any, Any] = {}  # what the provider's context edit made of a message (its memo)
        self.held: dict[int, tuple[Any, frozenset[str]]] = {}  # id(message) -> (message, its references)
        self.pricing = Pricing.for_model(cell.trace.model) if cell.trace.model and cell.trace.usage else None

    def run(self) -> tuple[str, str | None]:
        ctx, strategy, trace = self.ctx, self.strategy, self.cell.trace
        ctx.tools = _tools(trace, strategy)
        ctx.log.append("run_start", run_id=self.cell.run_id, task={"task_id": trace.trace_id, "family": trace.source_format,
                                                                    "path": trace.path},
                       strategy=self.cell.strategy.display, strategy_name=self.cell.strategy.name,
                       strategy_config=redact(self.cell.strategy.config), seed=SEED, instance_seed=None,
                       profiles=redact(self.cell.profiles), tools=ctx.tools, tools_hash=ctx.tools_hash,
                       state_changing_tools=[])
        filler = calibration.filler_message(self.cell.prefix_tokens)
        if filler is not None:
            ctx.add_message(filler, origin="task", stand_in="unrecorded prefix")
        started = False
        for position, message in enumerate(trace.messages):
            role = message["role"]
            references = self.responses[position] if role == "assistant" else \
                message_references(message, self.index.wanted)
            if role != "system" and not started:
                strategy.on_run_start(ctx)
                started = True
            if position in trace.resets:
                self._recorded_reset(position)
            if role == "assistant":
                end = self._respond(position, message, [r for r in references if r in self.seen])
                if end is not None:
                    return end
            elif role == "tool":
                self._tool_result(message)
            else:
                ctx.add_message({"role": role, "content": message["content"]}, origin="task" if role == "system" else "user")
                ctx.turn_start = ctx.turn_start or role == "user"
            self.seen.update((reference, position) for reference in references if reference not in self.seen)
        return "trace_end", None

    def _respond(self, position: int, message: dict[str, Any], uses: list[str]) -> tuple[str, str] | None:
        """Replay one recorded response; `uses`: its references that appeared earlier in the trace."""
        ctx, strategy = self.ctx, self.strategy
        failures = 0
        sent_at = self.sent_at.get(position)
        if sent_at is not None and sent_at > ctx.clock.now_s:  # the recorded clock leads; never back in time
            ctx.clock.now_s = sent_at
        recorded = self._recorded_usage(position)
        while True:
            strategy.before_request(ctx)
            messages = ctx.view.to_messages()
            options = strategy.request_options(ctx)
            forgotten = self._forgotten(messages, uses, options) if options else self.index.missing(uses)
            request = {**request_fields(ctx, self.main, messages, options), "trace_index": position,
                       "forgotten_references": len(forgotten),
                       **({"forgotten_examples": forgotten[:FORGOTTEN_EXAMPLES],
                           "forgotten_from": [self.seen[r] for r in forgotten[:FORGOTTEN_EXAMPLES]]} if forgotten else {}),
                       **({"recorded": recorded} if recorded else {})}
            try:
                result = self.main.complete(messages, ctx.tools, clock_s=ctx.clock.now_s, reply=_reply(message),
                                            options=options)
            except Exception as exc:
                ctx.log.append("llm_call", **request, ok=False, error_type=type(exc).__name__, error=str(exc)[:2000])
                if not is_context_window_error(exc):
                    return "error", f"{type(exc).__name__}: {str(exc)[:500]}"
                failures += 1
                if failures <= MAX_RECOVERIES and strategy.on_context_window_error(ctx, exc):
                    continue
                return "context_overflow", f"{type(exc).__name__}: {str(exc)[:500]} (at trace message {position})"
            calls = [ToolCall.from_message(raw) for raw in result.message.get("tool_calls") or []]
            self.calls.update((call.id, call) for call in calls)
            ctx.record_response(request, result, payload=strategy.action_payload(calls))
            ctx.turn_start = False
            strategy.after_response(ctx, result)
            if result.paused:  # the provider paused after compacting: the recorded reply comes on the next request
                continue
            return None

    def _recorded_reset(self, position: int) -> None:
        """The recorded agent reset its own context here (its compaction): its later requests held none of the
        earlier messages but the system prompt, so the view drops them whatever the strategy (a `recorded_reset`
        event: not the strategy's condensation)."""
        kept = self.ctx.view.ids_of_role("system")
        self.ctx.emit("recorded_reset", kind=self.cell.trace.resets[position], trace_index=position,
                      forgotten_ids=[i for i in self.ctx.view.ids if i not in set(kept)],
                      view_ops=[{"op": "set", "ids": kept}])

    def _recorded_usage(self, position: int) -> dict[str, Any] | None:
        """What the trace recorded of this request (its usage, and its cost at the recorded model's list prices)."""
        usage = self.cell.trace.usage.get(position)
        if not usage:
            return None
        recorded = {key: value for key, value in usage.items() if value is not None}
        if self.pricing is not None and usage.get("input_tokens") is not None \
                and usage.get("output_tokens") is not None:
            recorded["cost_usd"] = self.pricing.cost(Usage.from_dict(usage))[0]
        return recorded

    def _forgotten(self, messages: list[dict[str, Any]], uses: list[str], options: dict[str, Any]) -> list[str]:
        """Those of `uses` the model does not see when the strategy asked the provider for something: a provider's
        compaction leaves the view whole and the model sees it from the latest compaction on (provider_visible); a
        context edit (clear_tool_uses) leaves it whole and the model sees placeholders for the results it cleared,
        worked out by the simulated provider's own rules on the same request."""
        found = compaction_at(messages)
        visible = visible_from(messages, found) if found is not None else messages
        edited = self._provider_cleared(visible, options)
        if found is None:
            missing = set(self.index.missing(uses))
            lost: Counter[str] = Counter()
            for original, shown in edited:  # each message the edit changed no longer holds what it lost
                lost.update(self._references(original) - self._references(shown))
            return sorted(reference for reference in uses
                          if reference in missing or lost[reference] >= self.index.holders.get(reference, 0) > 0)
        shown = {id(original): message for original, message in edited}
        held = frozenset().union(*(self._references(shown.get(id(message), message)) for message in visible))
        return sorted(reference for reference in uses if reference not in held)

    def _provider_cleared(self, messages: list[dict[str, Any]], options: dict[str, Any]) -> list[tuple[Any, Any]]:
        """(message, as the model sees it) for each message the request's clear_tool_uses edit changes."""
        asked = options.get("context_management")
        edit = read_clear(asked) if isinstance(asked, dict) else None
        if edit is None:
            return []
        compaction = read_edit(asked)
        clearing = clear(messages, edit, input_tokens(messages, self.ctx.tools), self.cleared,
                         compaction.trigger if compaction else None)
        return [] if clearing is None else [(messages[at], message) for at, message in clearing.edited.items()]

    def _references(self, message: Any) -> frozenset[str]:
        """A message's wanted references, read once per message object."""
        known = self.held.get(id(message))
        if known is None or known[0] is not message:
            known = self.held[id(message)] = (message, message_references(message, self.index.wanted))
        return known[1]

    def _tool_result(self, message: dict[str, Any]) -> None:
        call_id = message["tool_call_id"]
        call = self.calls.get(call_id) or ToolCall(call_id, message.get("name") or "", "")
        outcome = self.strategy.transform_tool_result(self.ctx, call, ToolResult(message["content"]))
        add_tool_result(self.ctx, call_id, message.get("name") or call.name, outcome)


def request_times(trace: Trace) -> dict[int, float]:
    """When each recorded response's request was sent, in seconds from the trace's first recorded time: at the
    latest recorded message before it (its last input), else at the response's own time. Empty when the trace
    records no times."""
    if not trace.times:
        return {}
    start = min(trace.times.values())
    sent: dict[int, float] = {}
    latest: float | None = None
    for position, message in enumerate(trace.messages):
        if message["role"] == "assistant":
            at = latest if latest is not None else trace.times.get(position)
            if at is not None:
                sent[position] = at - start
        if position in trace.times:
            latest = trace.times[position]
    return sent


def _total(values: list[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def recorded_totals(trace: Trace) -> dict[str, Any]:
    """What the trace recorded of its own cost, for calibration: None where it recorded nothing. The cost is at
    the recorded model's list prices (litellm's cost map), over the requests whose usage the trace records whole
    (a request without its output count has no cost: an input-only figure would pass for a cheaper request)."""
    def total(name: str) -> int | None:
        return _total([usage.get(name) for usage in trace.usage.values()])

    input_tokens = total("input_tokens")
    pricing = Pricing.for_model(trace.model) if trace.model and input_tokens is not None else None
    cost = sum(pricing.cost(Usage.from_dict(usage))[0] for usage in trace.usage.values()
               if usage.get("input_tokens") is not None and usage.get("output_tokens") is not None) if pricing else None
    return {"recorded_input_tokens": input_tokens if input_tokens is not None else trace.recorded_input_tokens,
            "recorded_cached_tokens": total("cached_tokens"), "recorded_cache_write_tokens": total("cache_write_tokens"),
            "recorded_output_tokens": total("output_tokens"), "recorded_cost_usd": cost,
            "recorded_requests": sum(m["role"] == "assistant" for m in trace.messages),
            "recorded_resets": len(trace.resets),
            "recorded_outcome": trace.outcome or None, "recorded_model": trace.model}


def replay_cell(cell: TraceCell) -> dict[str, Any]:
    """Replay one trace under one strategy to its end; return its runs.jsonl row."""
    wall_start, cpu_start = time.perf_counter(), time.thread_time()
    metrics = RunMetrics()
    log = EventLog(event_log_path(cell.events_dir, cell.run_id), in_memory=False, on_append=metrics.add)
    profiles = build_profiles(cell.profiles)
    clock = RunClock(ClockConfig(), [cell.trace.trace_id, SEED])  # advanced by simulated model time alone
    ctx = RunContext(log, profiles, run_id=cell.run_id, seed=SEED, clock=clock)
    main = ctx.main_client = LLMClient(profiles[MAIN_PROFILE], session=cell.run_id, seed=SEED,
                                       on_retry=ctx.retry_listener(MAIN_PROFILE))
    termination, error, libraries = "error", None, []
    try:
        label = f"strategy {cell.strategy.display}"
        strategy = Guarded(guarded_call(f"{label}'s __init__", build_strategy, cell.strategy), label)
        libraries = strategy.libraries()
        termination, error = _Replay(cell, ctx, main, strategy).run()
    except BaseException as exc:  # a crash in a strategy ends this replay only (harness.run.contain)
        termination, error = crash_termination(exc), crash_error(exc, cell.strategy.display, log, "trace_replay")
    completed = termination == "trace_end"
    log.append("run_end", termination=termination, error=error, success=completed, score=float(completed), detail={})
    log.close()
    main.end_session()
    ctx.close()
    row: dict[str, Any] = {
        "run_id": cell.run_id, "task_id": cell.trace.trace_id, "family": cell.trace.source_format,
        "strategy": cell.strategy.display, "strategy_name": cell.strategy.name,
        "strategy_config": redact(cell.strategy.config), "seed": SEED, "instance_seed": None,
        "model": profiles[MAIN_PROFILE].model, "cache_policy": policy_label(profiles[MAIN_PROFILE].policy),
        "price_model": cell.profiles[MAIN_PROFILE].get("price_model"),
        "cache_style": (cell.profiles[MAIN_PROFILE].get("mock") or {}).get("cache"),
        "unrecorded_prefix_tokens": cell.prefix_tokens,
        "success": completed, "score": float(completed),
        "termination": termination, "error": error, "transient": False, "libraries": libraries, "trace_path": cell.trace.path,
    }
    row.update(recorded_totals(cell.trace))
    return finish_row(row, metrics, ctx, wall_start, cpu_start)


def replay_cells(cells: list[TraceCell], on_row: Callable[[dict[str, Any]], None], progress: bool = False) -> None:
    """Replay the cells in this process, handing each row to `on_row` as it finishes."""
    from tqdm import tqdm

    for cell in tqdm(cells, desc="replays", unit="run", disable=not progress, leave=False):
        on_row(replay_cell(cell))
