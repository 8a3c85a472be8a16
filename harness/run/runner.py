"""The runner: one (task x strategy x seed) cell per run, many cells across processes.

The runner knows the Environment, Strategy and LLM interfaces and nothing of their
internals. Each run writes its own event log; the parent process alone appends rows to
`runs.jsonl`, so a row is written once, whole, when its run has finished.
"""
from __future__ import annotations

import re
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.models.cache_policy import policy_label
from harness.core.clock import ClockConfig, RunClock
from harness.core.config import build_dataclass
from harness.run.contain import Guarded, RunCrash, contained, guarded_call
from harness.conversation.context import RunContext
from harness.models.profiles import MAIN_PROFILE
from harness.core.errors import ConfigError, CtxbenchError, StrategyFailed
from harness.conversation.events import WRITTEN_SUFFIX, EventLog, event_log_path, find_event_log, read_events
from harness.executors import make_executor, runs_under_way, settle_heap
from harness.core.frozen import MessageEditError
from harness.models.llm import LLMClient, LLMProfile, is_context_window_error
from harness.models.limits import INVOCATION_LIMIT_REACHED, INVOCATION_SPENDING
from harness.results.metrics import MetricsError, RunMetrics
from harness.models.profiles import build_profiles
from harness.models.retry import is_retryable
from harness.core.secrets import redact, remember
from harness.core.tokens import stable_hash
from harness.conversation.view import ViewState
from strategies import StrategySpec, build_strategy, call_strategy
from tasks.base import ToolCall, ToolResult
from tasks.suites import TaskRow

DEFAULT_MAX_REQUESTS = 400
# trace_end: a trace replay (harness.traces.replay) served every recorded response; strategy_failed: the
# strategy gave up on its own terms (harness.core.errors.StrategyFailed); error: a fault of the harness, the
# provider or a plug-in's code
TERMINATIONS = ("submitted", "gave_up", "max_requests", "context_overflow", "strategy_failed", "error", "budget",
                "trace_end")


# A run id names its event file, events/<run id>.jsonl.gz: a file name has at most 255 bytes (ext4, XFS, Btrfs,
# APFS, NTFS) and a run id is ASCII. tasks.suites.TASK_ID_MAX leaves the label and seed their share.
RUN_ID_MAX = 255 - len(WRITTEN_SUFFIX)


def run_id_for(task_id: str, label: str, seed: int, window: int | None = None) -> str:
    """`window`: the cell's window on a window axis (Matrix.windows); without one, the id a single-window
    run always had, so results written before the axis still resume."""
    at = f"--w{window}" if window is not None else ""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{task_id}--{label}{at}--s{seed}")


@dataclass
class Cell:
    """One run to execute: everything in it is plain data, so it crosses process boundaries."""

    task: TaskRow
    strategy: StrategySpec
    seed: int
    profiles: dict[str, dict[str, Any]]
    events_dir: str
    max_requests: int = DEFAULT_MAX_REQUESTS
    max_cost_usd: float | None = None  # the run ends `budget` once its spending reaches this
    clock: dict[str, Any] = field(default_factory=dict)  # how long tools and users take: harness.core.clock.ClockConfig
    window: int | None = None  # its window on a window axis (Matrix.windows); part of the run id

    @property
    def run_id(self) -> str:
        return run_id_for(self.task.task_id, self.strategy.display, self.seed, self.window)


def check_profiles(strategy: Any, profiles: dict[str, Any], label: str) -> None:
    """Every LLM profile a strategy will call exists (seed 000: the hard condenser needs a saved
    profile of its own), so a missing one fails before any model call, not at the first overflow."""
    needed = call_strategy(f"strategy {label}", f"{type(strategy).__name__}.profiles_needed",
                           strategy.profiles_needed)
    missing = [name for name in needed if name not in profiles]
    if missing:
        raise ConfigError(f"strategy {label}: LLM profile(s) {missing} are not defined (defined: {sorted(profiles)})")


def validate_cells(cells: list[Cell]) -> None:
    """Build every strategy, task and profile once so bad input fails before any model call."""
    if cells:
        build_dataclass(ClockConfig, cells[0].clock, "clock")
    for profiles in {id(cell.profiles): cell.profiles for cell in cells}.values():  # one per sweep point at most
        build_profiles(profiles)
    checked: set[str] = set()
    for cell in cells:
        if len(cell.run_id) > RUN_ID_MAX:
            raise ConfigError(f"task {cell.task.task_id} x strategy {cell.strategy.display} x seed {cell.seed}: its "
                              f"run id (the event file's name) has {len(cell.run_id)} characters, at most "
                              f"{RUN_ID_MAX}; shorten the strategy label or the task_id")
        key = stable_hash([cell.strategy.name, cell.strategy.config, cell.task.task_id])
        if key in checked:
            continue
        checked.add(key)
        strategy = build_strategy(cell.strategy)
        check_profiles(strategy, cell.profiles, cell.strategy.display)
        strategy.check_main(build_profiles(cell.profiles)[MAIN_PROFILE], f"strategy {cell.strategy.display}")
        environment = cell.task.build(cell.seed)
        tools = call_strategy(f"strategy {cell.strategy.display}", f"{type(strategy).__name__}.tools", strategy.tools)
        names = [spec.name for spec in environment.tool_specs()] + [spec.name for spec in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"strategy {cell.strategy.display}: tool name(s) {duplicates} clash with task "
                              f"{cell.task.task_id}'s tools")


def run_cell(cell: Cell, client: Callable[..., LLMClient] = LLMClient) -> dict[str, Any]:
    """Execute one run to its end and return its runs.jsonl row. `client` makes the main model's client
    (an LLMClient subclass: the peers bench's scripted model, harness.bench.peers)."""
    with runs_under_way:  # the collector's young passes made rarer (harness.executors.base)
        return _run_cell(cell, client)


def _run_cell(cell: Cell, client: Callable[..., LLMClient]) -> dict[str, Any]:
    wall_start, cpu_start = time.perf_counter(), time.thread_time()  # this run's thread alone
    remember(cell.profiles, cell.strategy.config)  # known already unless this is a spawned worker
    events_path = event_log_path(cell.events_dir, cell.run_id)
    metrics = RunMetrics()
    log = EventLog(events_path, in_memory=False, on_append=metrics.add)
    profiles = build_profiles(cell.profiles)
    clock = RunClock(build_dataclass(ClockConfig, cell.clock, "clock"), [cell.task.task_id, cell.seed])
    ctx = RunContext(log, profiles, run_id=cell.run_id, seed=cell.seed, clock=clock)
    main = ctx.main_client = client(profiles[MAIN_PROFILE], session=cell.run_id, seed=cell.seed,
                                    on_retry=ctx.retry_listener(MAIN_PROFILE))
    termination, error, transient = "error", None, False
    environment = None
    libraries: list[str] = []
    thresholds: dict[str, int] = {}
    try:
        task, label = f"task {cell.task.task_id}", f"strategy {cell.strategy.display}"
        environment = Guarded(guarded_call(f"{task}'s build", cell.task.build, cell.seed), task)
        strategy = Guarded(guarded_call(f"{label}'s __init__", build_strategy, cell.strategy), label)
        libraries = strategy.libraries()
        thresholds = strategy.threshold_values(ctx.budget())  # its token thresholds as this run's window makes them
        termination, error = _loop(cell, ctx, main, environment, strategy)
    except _RequestFailed as failed:
        error, transient = failed.error, failed.transient
    except BaseException as exc:  # a crash in a strategy or task ends this run only (harness.run.contain)
        termination, error = crash_termination(exc), crash_error(exc, cell.strategy.display, log, "runner")
        transient = is_retryable(contained(exc))  # e.g. a summary request that met an outage after its retries
    try:
        score = environment.score() if environment is not None else None  # what a crashed run got done too
    except BaseException as exc:
        score, termination, error = None, "error", error or crash_error(exc, cell.strategy.display, log, "runner")
    log.append("run_end", termination=termination, error=error, **({"transient": True} if transient else {}),
               success=bool(score and score.success), score=score.score if score else 0.0,
               detail=score.detail if score else {})
    log.close()
    main.end_session()
    ctx.close()
    row = base_row(cell, profiles[MAIN_PROFILE], score, termination, error, libraries, transient)
    row["strategy_thresholds"] = thresholds
    return finish_row(row, metrics, ctx, wall_start, cpu_start)


def base_row(cell: Cell, main: LLMProfile, score: Any, termination: str, error: str | None,
             libraries: list[str], transient: bool = False) -> dict[str, Any]:
    """A run's runs.jsonl row before its metrics and times; `main`: the main model's profile."""
    return {
        "run_id": cell.run_id,
        "task_id": cell.task.task_id,
        "family": cell.task.family,
        "strategy": cell.strategy.display,
        "strategy_name": cell.strategy.name,
        "strategy_config": redact(cell.strategy.config),
        "seed": cell.seed,
        "instance_seed": cell.task.instance_seed(cell.seed),  # the task instance's generation seed
        "model": main.model,
        "window": main.input_budget(),  # the input window the run had (None: a real model's limit unknown)
        "cache_policy": policy_label(cell.profiles[MAIN_PROFILE].get("cache_policy")),
        "success": bool(score and score.success),
        "score": score.score if score else 0.0,
        "termination": termination,
        "error": error,
        "transient": transient,  # ended on an outage (after its retries): --resume reruns it
        "libraries": libraries,  # the real libraries an adapter ran, with their versions
    }


class _RequestFailed(Exception):
    """A main request failed for good (logged already): the run ends `error`; transient: an outage."""

    def __init__(self, error: str, transient: bool):
        super().__init__(error)
        self.error, self.transient = error, transient


def check_labels(strategies: list[StrategySpec]) -> None:
    """Each strategy's label names one configuration (rows and event logs are keyed by it)."""
    labels = [spec.display for spec in strategies]
    clashes = sorted({label for label in labels if labels.count(label) > 1})
    if clashes:
        raise ConfigError(f"strategies: label(s) {clashes} used twice; give each configuration its own label")


def crash_termination(raised: BaseException) -> str:
    """How a run that raised ended: `strategy_failed` when its strategy gave up on its own terms, else `error`."""
    return "strategy_failed" if isinstance(contained(raised), StrategyFailed) else "error"


def crash_error(raised: BaseException, strategy_label: str, log: EventLog, where: str) -> str:
    """Log a crash that ends one run (a strategy's, a task's: harness.run.contain) and return the run's error
    text, naming the hook or task method it came from; an in-place edit of a message is the strategy's, so
    the text names it. A KeyboardInterrupt is raised again: it stops the invocation."""
    exc = contained(raised)
    error = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MessageEditError):  # only strategies are handed the view's messages
        error = f"{type(exc).__name__}: strategy {strategy_label} edited a message in place: {exc}"
    if isinstance(raised, RunCrash):
        error += f" (raised in {raised.where})"
    log.append("error", where=where, error_type=type(exc).__name__, error=str(exc)[:2000],
               raised_in=getattr(raised, "where", None),
               traceback="".join(traceback.format_exception(exc, limit=8))[-4000:])
    return error


def request_fields(ctx: RunContext, main: LLMClient, messages: list[dict[str, Any]],
                   options: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a main-model request's `llm_call` event records of the view it sends (and of the provider parameters
    a strategy added to it)."""
    return {"profile": MAIN_PROFILE, "model": main.profile.model, "view_hash": ctx.view.hash(ctx.tools_hash),
            "view_len": len(messages), "context_tokens": ctx.prompt_tokens_estimate(),
            "clock_s": ctx.clock.now_s, **view_failures(ctx.view), **({"options": options} if options else {})}


def add_tool_result(ctx: RunContext, call_id: str, name: str, outcome: ToolResult, **fields: Any) -> None:
    """Append the result of call `call_id` of tool `name` (as the strategy transformed it) to the log and the view."""
    typed = {"payload": outcome.payload} if outcome.payload is not None else {}
    ctx.add_message({"role": "tool", "tool_call_id": call_id, "name": name, "content": outcome.content},
                    origin="tool", is_error=outcome.is_error, **fields, **typed)


def finish_row(row: dict[str, Any], metrics: RunMetrics, ctx: RunContext, wall_start: float,
               cpu_start: float) -> dict[str, Any]:
    """A run's row completed with its metrics and its time (this thread's CPU alone); metrics that cannot be
    computed end the run as `error` (the row keeps its other fields)."""
    try:
        row.update(metrics.result())
    except MetricsError as exc:
        row.update(termination="error", success=False, error=row["error"] or f"MetricsError: {exc}")
    row["wall_s"] = round(time.perf_counter() - wall_start, 4)
    row["cpu_s"] = round(time.thread_time() - cpu_start, 4)
    row["library_cpu_s"] = round(ctx.library_cpu_s, 4)  # of cpu_s, inside a wrapped library (adapters)
    return row


def view_failures(view: ViewState) -> dict[str, Any]:
    """The failure modes of a view about to be sent, logged with its request only when
    present: tool call ids without their partner (OpenHands #7512) and a missing task statement."""
    failures: dict[str, Any] = {}
    if view.orphaned_tool_ids:
        failures["orphaned_tool_ids"] = view.orphaned_tool_ids
    if view.task_statement_missing:
        failures["task_statement_missing"] = True
    return failures


def _loop(cell: Cell, ctx: RunContext, main: LLMClient, environment: Any, strategy: Any) -> tuple[str, str | None]:
    check_profiles(strategy, ctx.profiles, cell.strategy.display)
    specs = environment.tool_specs() + strategy.tools()
    ctx.tools = [spec.schema() for spec in specs]
    ctx.log.append("run_start", run_id=cell.run_id, task=cell.task.as_dict(), strategy=cell.strategy.display,
                   strategy_name=cell.strategy.name, strategy_config=redact(cell.strategy.config), seed=cell.seed,
                   instance_seed=cell.task.instance_seed(cell.seed), profiles=redact(cell.profiles), tools=ctx.tools,
                   tools_hash=ctx.tools_hash, state_changing_tools=[spec.name for spec in specs if spec.changes_state])
    ctx.add_message({"role": "system", "content": environment.system_prompt}, origin="task")
    strategy.on_run_start(ctx)
    for text in environment.initial_user_messages():
        ctx.add_message({"role": "user", "content": text}, origin="user")
        ctx.turn_start = True
    max_requests = cell.task.max_requests or cell.max_requests
    failed_calls = 0
    progress = environment.progress()
    while True:
        for text in environment.user_messages_due(ctx.requests):
            delay = ctx.clock.user(environment.user_delay_s)  # the user takes a while to answer
            ctx.add_message({"role": "user", "content": text}, origin="user", delay_s=delay, clock_s=ctx.clock.now_s)
            ctx.turn_start = True
        if ctx.requests >= max_requests:
            return "max_requests", None
        if cell.max_cost_usd is not None and ctx.cost_usd >= cell.max_cost_usd:
            return "budget", f"spent {ctx.cost_usd:.6f} USD of a {cell.max_cost_usd:g} USD budget per run"
        if INVOCATION_SPENDING.exhausted():
            return "budget", INVOCATION_LIMIT_REACHED
        strategy.before_request(ctx)
        messages = ctx.view.to_messages()
        options = strategy.request_options(ctx)
        request = request_fields(ctx, main, messages, options)
        try:
            result = main.complete(messages, ctx.tools, clock_s=ctx.clock.now_s, options=options)
        except Exception as exc:
            failed_calls += 1
            ctx.log.append("llm_call", **request, ok=False, error_type=type(exc).__name__, error=str(exc)[:2000])
            if is_context_window_error(exc):
                if failed_calls <= max_requests and strategy.on_context_window_error(ctx, exc):
                    continue
                return "context_overflow", f"{type(exc).__name__}: {str(exc)[:500]}"
            raise _RequestFailed(f"{type(exc).__name__}: {str(exc)[:500]}", is_retryable(exc)) from exc
        calls = [ToolCall.from_message(raw) for raw in result.message.get("tool_calls") or []]
        ctx.record_response(request, result, payload=strategy.action_payload(calls))
        ctx.turn_start = False
        strategy.after_response(ctx, result)
        if not calls:
            if result.paused or environment.has_pending_user_messages():
                continue
            return "gave_up", None
        for call in calls:
            outcome = strategy.handle_tool_call(ctx, call) or environment.execute(call)
            outcome = strategy.transform_tool_result(ctx, call, outcome)
            seconds = ctx.clock.tool(call.name, environment.tool_seconds_range(call.name))
            add_tool_result(ctx, call.id, call.name, outcome, tool_s=seconds, clock_s=ctx.clock.now_s)
            reached = environment.progress()  # read once: the milestone check and its event share it
            if reached != progress:  # a milestone (never shown to the model): see metrics' loops
                progress = reached
                ctx.log.append("progress", value=progress)
        if environment.submitted:
            return "submitted", None


def run_cells(cells: list[Cell], *, workers: int, on_row: Callable[[dict[str, Any]], None],
              progress: bool = True, may_start: Callable[[], bool] | None = None,
              executor: str = "local", ray_address: str | None = None) -> list[Cell]:
    """Run cells on the executor named (harness.executors; in parallel when workers > 1; `ray_address`: the
    Ray cluster of executor "ray", None for a local one), handing each
    finished row to `on_row` at once. A cell starts only while `may_start()` holds (a spending limit);
    the cells never started are returned."""
    from tqdm import tqdm

    settle_heap()
    chosen = make_executor(executor, workers, cells, ray_address, warm_worker)
    bar = tqdm(total=len(cells), desc="runs", unit="run", disable=not progress, leave=False)

    def take(row: dict[str, Any]) -> None:
        on_row(row)
        bar.update()

    try:
        return chosen.run(cells, run_cell, take, may_start, lost_row)
    finally:
        bar.close()


def warm_worker() -> None:
    """Load what a fresh worker process's first cell would (litellm, through the mock provider's module;
    the tokenizer), then settle the heap, so no cell is billed seconds of imports or a full collection of
    litellm's objects: a Ray actor calls it when it starts. Forked local workers have both from the parent."""
    import harness.models.mock.provider  # noqa: F401  (loads litellm)
    from harness.core import tokens

    tokens.count_text("warm")
    settle_heap()


def lost_row(cell: Cell, error: BaseException) -> dict[str, Any]:
    """The `error` row of a run that raised in a worker or ended its worker process
    (harness.executors.process_threads.WorkerExited), made here with the metrics of the events its log holds."""
    metrics = RunMetrics()
    try:
        for event in read_events(find_event_log(cell.events_dir, cell.run_id)):
            metrics.add(event)
    except (OSError, CtxbenchError, MetricsError):
        pass  # the log up to its first unreadable line (the worker may have died writing it)
    row = base_row(cell, build_profiles(cell.profiles)[MAIN_PROFILE], None, "error", f"{type(error).__name__}: {error}",
                   [])
    row.update({"wall_s": None, "cpu_s": None, "library_cpu_s": None})
    try:
        row.update(metrics.result())
    except MetricsError:
        pass
    return row


@dataclass
class Matrix:
    """The cells of one invocation: every task x strategy x seed, at each of `windows` when given."""

    tasks: list[TaskRow]
    strategies: list[StrategySpec]
    seeds: list[int]
    profiles: dict[str, dict[str, Any]]
    max_requests: int = DEFAULT_MAX_REQUESTS
    max_cost_usd: float | None = None
    clock: dict[str, Any] = field(default_factory=dict)
    # strategy label -> profile name -> mock knobs its runs use on top of that profile's (a sweep's
    # `mock.<knob>` and `summarizer.<knob>` axes: harness.sweep)
    strategy_knobs: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # strategy label -> profile name -> profile fields its runs use in place of that profile's (a sweep's
    # `cache_policy` axis: harness.sweep)
    strategy_profiles: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # a window axis: every cell at each of these input windows (with_window), the window in its run id when
    # there are several; empty: the profiles' own window
    windows: list[int] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)

    def build(self, events_dir: str) -> list[Cell]:
        check_labels(self.strategies)
        repeated = sorted({seed for seed in self.seeds if self.seeds.count(seed) > 1})
        if repeated:  # one row and one event log per (task, strategy, seed): a repeat would overwrite its twin
            raise ConfigError(f"seeds: {repeated} given more than once; each seed names one run per cell")
        check_windows(self.windows, self.profiles)
        unknown = sorted(set(self.strategy_knobs) - {spec.display for spec in self.strategies})
        if unknown:
            raise ConfigError(f"strategy knobs: given for {unknown}, which are not among the strategies run")
        self.cells = []
        in_id = len(self.windows) > 1  # one window keeps the run ids it always had
        for window in self.windows or [None]:
            base = self.profiles if window is None else with_window(self.profiles, window)
            profiles = {spec.display: with_fields(with_knobs(base, self.strategy_knobs.get(spec.display),
                                                             spec.display), self.strategy_profiles.get(spec.display))
                        for spec in self.strategies}
            self.cells += [Cell(task=task, strategy=strategy, seed=seed, profiles=profiles[strategy.display],
                                events_dir=events_dir, max_requests=self.max_requests,
                                max_cost_usd=self.max_cost_usd, clock=self.clock,
                                window=window if in_id else None)
                           for task in self.tasks for strategy in self.strategies for seed in self.seeds]
        return self.cells


def check_windows(windows: list[int], profiles: dict[str, dict[str, Any]]) -> None:
    """A window axis holds distinct positive windows, and a model whose window this process can set: the mock
    behind serve-mock has the one window its server was started with."""
    from harness.core.config import MAX_TOKENS

    for window in windows:
        if isinstance(window, bool) or not isinstance(window, int) or not 0 < window <= MAX_TOKENS:
            raise ConfigError(f"--window: expected positive numbers of tokens, at most {MAX_TOKENS:,}, got {window!r}")
    repeated = sorted({window for window in windows if windows.count(window) > 1})
    if repeated:
        raise ConfigError(f"--window: {repeated} given more than once; each window names one run per cell")
    if len(windows) > 1 and build_profiles(profiles)[MAIN_PROFILE].serves_mock:
        raise ConfigError("--window: serve-mock has the one window it was started with; run a window axis on the "
                          "in-process mock (mock/agent) or start one serve-mock per window")


def with_window(profiles: dict[str, dict[str, Any]], window: int) -> dict[str, dict[str, Any]]:
    """`profiles` at input window `window`, as --window sets it: the mock's window, or a real model's
    max_input_tokens. A mock summarizer whose window was the main model's (the default summary profile's)
    follows it; one given a window of its own keeps it."""
    main = profiles[MAIN_PROFILE]
    updated = dict(profiles)
    if str(main.get("model", "")).startswith("mock/"):
        old = (main.get("mock") or {}).get("window")
        updated[MAIN_PROFILE] = {**main, "mock": {**(main.get("mock") or {}), "window": window}}
        for name, profile in profiles.items():
            mock = profile.get("mock") if isinstance(profile, dict) else None
            if name != MAIN_PROFILE and isinstance(mock, dict) and mock.get("window") == old:
                updated[name] = {**profile, "mock": {**mock, "window": window}}
    else:
        updated[MAIN_PROFILE] = {**main, "max_input_tokens": window}
    return updated


def with_fields(profiles: dict[str, dict[str, Any]], fields: dict[str, dict[str, Any]] | None
                ) -> dict[str, dict[str, Any]]:
    """`profiles` with the given fields set on each named profile that exists (profile name -> fields); the same
    dict when there are none."""
    if not fields:
        return profiles
    return {name: {**profile, **fields[name]} if name in fields and isinstance(profile, dict) else profile
            for name, profile in profiles.items()}


def with_knobs(profiles: dict[str, dict[str, Any]], knobs: dict[str, dict[str, Any]] | None,
               label: str) -> dict[str, dict[str, Any]]:
    """`profiles` with each named profile's mock knobs updated by `knobs` (profile name -> knobs); the
    same dict when there are none, so cells without knobs share one profiles mapping."""
    if not knobs:
        return profiles
    updated = dict(profiles)
    for name, values in knobs.items():
        profile = profiles.get(name)
        mock = profile.get("mock") if isinstance(profile, dict) else None
        if not isinstance(mock, dict) or not str(profile.get("model", "")).startswith("mock/"):
            model = profile.get("model") if isinstance(profile, dict) else None
            raise ConfigError(f"strategy {label}: sets mock knobs {sorted(values)} on profile {name!r}, whose model "
                              f"{model!r} is not a mock/... model")
        updated[name] = {**profile, "mock": {**mock, "knobs": {**(mock.get("knobs") or {}), **values}}}
    return updated
