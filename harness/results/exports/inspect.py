"""ctxbench results as Inspect AI eval logs, for `inspect view` and `inspect_ai.analysis`.

One eval log per strategy (its label): the viewer lists logs side by side and a log's samples are the
runs of one strategy, so strategies compare as Inspect's users compare models or solvers, and a log's
accuracy is that strategy's success rate. Task = the suite, model = ctxbench's model name, solver = the
strategy label (its config in the plan). Each run is a sample: id = task_id, epoch = the run seed's
position among the invocation's seeds (Inspect's repeats of one sample), input = the task statement.

A sample is folded from the run's event log alone, one event at a time (harness.conversation.view.ViewState, as
replay does):

* ``messages``: every message the run logged, in order (the full log, not the final view: after a reset
  the final view is a few messages, and the history the strategy removed is what a reader looks for;
  what each request saw is its model event's input).
* ``llm_call`` -> ModelEvent: role = the profile ("main", "summary"), input = the view as sent (main
  requests; a side call's prompt is not logged), output = the agent's reply, usage with Inspect's
  split (``input_tokens`` excludes cache reads and writes, which ctxbench's includes) and ``total_cost``
  = ctxbench's ``cost_usd``; a failed call carries its error.
* ``condensation`` (agent reset, hard reset, summary) -> CompactionEvent type "summary"; ``compaction``
  -> type "trim" for the window step, else "edit"; any other event with view ops (a user's strategy)
  -> "edit". tokens_before/after: the event's own where it logs them, else the view's token count
  before and after its ops. Metadata: the event's fields and the messages it removed or replaced
  (id, role, tokens, first characters), a summary's text.
* a tool result ``message`` -> ToolEvent (its call's name and arguments, the result, an error flag).
* ``warning`` and the strategies' other decisions and signals (condensation requests, refusals, summary
  attempts, offloads, cache-bust warnings, skipped compactions, retries, progress) -> InfoEvent with
  source "ctxbench/<event type>"; ``run_end`` -> ScoreEvent.
* score "checker": value = the run's score, answer = the checker's ``given``, explanation = expected vs
  given (the row's bounded ``detail``, also the score's metadata); sample metadata = the runs.jsonl row.

Times: a sample starts at its run's real start (the event file's time minus ``wall_s``) and its events
are placed on the run's simulated clock from there (``clock_s``), so waits for tools and users show.
Free text (messages, errors) passes through harness.core.secrets.scrub. inspect_ai is imported only here,
when called (the `inspect` extra); the writer is Inspect's own (`write_eval_log`), never hand-made JSON.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.models.profiles import MAIN_PROFILE
from harness.core.errors import ConfigError
from harness.conversation.events import find_event_log, read_events
from harness.results.layout import CONFIG_FILE, EVENTS_DIR, RUNS_FILE, read_runs
from harness.core.secrets import scrub
from harness.core.tokens import message_text, stable_hash
from harness.core.user_files import load_json
from harness.conversation.view import ViewState

INSTALL_HINT = "pip install -e '.[inspect]'"
DEFAULT_SUBDIR = "inspect"
SCORER = "checker"
SOURCE = "ctxbench"
# Ours: how much of what a compaction removed its metadata describes (a reset can forget hundreds of messages).
DESCRIBED_MESSAGES = 50
HEAD_CHARS = 80
# Events shown as InfoEvents (strategy decisions and signals); messages, calls, view edits and the end have their own.
INFO_EVENTS = frozenset({"warning", "condensation_request", "condensation_refused", "summary_attempt",
                         "hard_reset_failed", "hard_reset_blocked", "tool_output_offloaded", "cache_bust_warning",
                         "compaction_skipped", "llm_retry", "progress"})
# Fields too big or too internal for an InfoEvent's data (an offload's stored content is the tool result itself).
INFO_DROPPED_FIELDS = ("id", "type", "view_ops", "content")


def require_inspect() -> None:
    """Import inspect_ai or say which extra to install (exit 2, before anything is written)."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"the Inspect AI export needs the `inspect` extra: {INSTALL_HINT} ({exc})") from exc


def _head(text: str) -> str:
    text = scrub(text)
    return text if len(text) <= HEAD_CHARS else text[:HEAD_CHARS] + "…"


class SampleBuilder:
    """One run's events folded into an Inspect sample's messages and events, O(new messages) per event
    (each logged message is converted once; a view re-sends the converted objects)."""

    def __init__(self, started: datetime):
        from inspect_ai.model import ModelOutput  # noqa: F401  (fails early without the extra)

        self.started = started
        self.view = ViewState()
        self.messages: list[Any] = []  # every logged message, as ChatMessages
        self.events: list[Any] = []
        self.tools: list[Any] = []
        self.model = ""
        self.statement = ""
        self._chat: dict[int, tuple[Any, Any]] = {}  # message id -> (the message as sent, its ChatMessage)
        self._calls: dict[Any, tuple[str, dict[str, Any]]] = {}  # tool call id -> (name, arguments)
        self._awaiting: Any = None  # the last main ModelEvent, until the agent's reply fills its output
        self._clock = 0.0

    # ----- conversions
    def _time(self) -> datetime:
        return self.started + timedelta(seconds=self._clock)

    def _stamp(self) -> dict[str, Any]:
        return {"timestamp": self._time(), "working_start": self._clock}

    def chat(self, message_id: int) -> Any:
        """The ChatMessage of message `message_id` as the view sends it now (converted once per rendering)."""
        message = self.view.message(message_id)
        cached = self._chat.get(message_id)
        if cached is None or cached[0] is not message:
            suffix = f".{len(self.messages)}" if self.view.is_replaced(message_id) else ""
            cached = self._chat[message_id] = (message, to_chat_message(message, f"{message_id}{suffix}",
                                                                        self.view.origins.get(message_id, "")))
        return cached[1]

    def _describe(self, ids: Iterable[int]) -> dict[str, Any]:
        ids = list(ids)
        shown = [{"id": i, "role": self.view.messages[i].get("role"), "tokens": self.view.tokens(i),
                  "head": _head(message_text(self.view.message(i)))} for i in ids[:DESCRIBED_MESSAGES]]
        return {"count": len(ids), "messages": shown}

    # ----- folding
    def add(self, event: Mapping[str, Any]) -> None:
        kind = event["type"]
        self._clock = event.get("clock_s", self._clock) or self._clock
        if kind == "run_start":
            self.tools = [to_tool_info(tool) for tool in event.get("tools") or ()]
            self.model = (event.get("profiles") or {}).get(MAIN_PROFILE, {}).get("model", "")
        elif kind == "llm_call":
            self._model_event(event)
        elif kind == "condensation" or kind == "compaction" or (event.get("view_ops") and kind != "message"):
            self._compaction_event(event)
            return  # applied there, between its before and after
        elif kind in INFO_EVENTS:
            from inspect_ai.event import InfoEvent

            data = {k: v for k, v in event.items() if k not in INFO_DROPPED_FIELDS}
            self.events.append(InfoEvent(source=f"{SOURCE}/{kind}", data=json.loads(scrub(json.dumps(data))),
                                         **self._stamp()))
        self.view.apply(event)
        if kind == "message":
            self._message(event)

    def _model_event(self, event: Mapping[str, Any]) -> None:
        from inspect_ai.event import ModelEvent
        from inspect_ai.model import GenerateConfig, ModelOutput

        main = event.get("profile") == MAIN_PROFILE
        ok = bool(event.get("ok"))
        output = ModelOutput(model=event.get("model", ""), usage=to_usage(event) if ok else None)
        error = None if ok else scrub(str(event.get("error") or "the call failed"))
        metadata = {k: event[k] for k in ("view_hash", "view_len", "context_tokens", "cost_usd", "cost_usd_uncached",
                                          "from_cache", "duration_s", "orphaned_tool_ids", "task_statement_missing",
                                          "forgotten_references") if k in event}
        model_event = ModelEvent(
            model=event.get("model", ""), role=event.get("profile"), input=[self.chat(i) for i in self.view.ids]
            if main else [], tools=self.tools if main else [], tool_choice="auto", config=GenerateConfig(),
            output=output, error=error, working_time=event.get("duration_s"), metadata=metadata,
            completed=self._time() + timedelta(seconds=event.get("duration_s") or 0.0), **self._stamp())
        self.events.append(model_event)
        self._awaiting = model_event if main and ok else None

    def _message(self, event: Mapping[str, Any]) -> None:
        message_id = event["id"]
        chat = self.chat(message_id)  # just logged: as it was, no op has replaced it yet
        self.messages.append(chat)
        message = self.view.messages[message_id]
        role = message.get("role")
        if role == "user" and not self.statement and event.get("origin") == "user":
            self.statement = chat.text
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function", {})
                self._calls[call.get("id")] = (function.get("name", ""), _arguments(function.get("arguments")))
            if self._awaiting is not None and event.get("origin") == "agent":
                self._reply(chat)
        elif role == "tool":
            self._tool_event(event, message, chat)

    def _reply(self, chat: Any) -> None:
        from inspect_ai.model import ChatCompletionChoice

        output = self._awaiting.output
        output.choices = [ChatCompletionChoice(message=chat, stop_reason="tool_calls" if chat.tool_calls else "stop")]
        output.completion = chat.text
        self._awaiting = None

    def _tool_event(self, event: Mapping[str, Any], message: Mapping[str, Any], chat: Any) -> None:
        from inspect_ai.event import ToolEvent
        from inspect_ai.tool import ToolCallError

        call_id = message.get("tool_call_id")
        name, arguments = self._calls.get(call_id, (message.get("name", ""), {}))
        error = ToolCallError("unknown", chat.text) if event.get("is_error") else None
        tool_s = event.get("tool_s") or 0.0
        start = max(self._clock - tool_s, 0.0)
        self.events.append(ToolEvent(
            id=str(call_id), function=name, arguments=arguments, result=chat.text, error=error,
            working_time=tool_s, timestamp=self.started + timedelta(seconds=start), working_start=start,
            completed=self._time(), message_id=chat.id))

    def _compaction_event(self, event: Mapping[str, Any]) -> None:
        from inspect_ai.event import CompactionEvent

        before_ids, before_tokens = list(self.view.ids), self.view.total_tokens
        touched = {op["id"] for op in event.get("view_ops", ()) if op.get("op") == "replace"}
        replaced = self._describe(i for i in before_ids if i in touched)  # as they were, before the ops
        self.view.apply(event)
        kept = set(self.view.ids)
        kind = event["type"]
        metadata: dict[str, Any] = {k: v for k, v in event.items() if k not in ("view_ops",)}
        metadata["removed"] = self._describe(i for i in before_ids if i not in kept)
        if touched:
            metadata["replaced"] = replaced
        inserted = [i for i in self.view.ids if i not in set(before_ids)]
        if inserted:
            metadata["inserted"] = self._describe(inserted)
        summary_id = event.get("summary_id")
        if isinstance(summary_id, int) and summary_id in self.view.messages:
            metadata["summary"] = scrub(message_text(self.view.messages[summary_id]))
        if kind == "condensation":
            compaction_type = "summary"
        else:
            compaction_type = "trim" if event.get("step") == "window" else "edit"
        self.events.append(CompactionEvent(
            type=compaction_type, role=MAIN_PROFILE, source=f"{SOURCE}/{event.get('kind') or event.get('step') or kind}",
            tokens_before=event.get("tokens_before", before_tokens), tokens_after=event.get("tokens_after",
                                                                                          self.view.total_tokens),
            metadata=json.loads(scrub(json.dumps(metadata, default=str))), **self._stamp()))


def _arguments(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except (TypeError, json.JSONDecodeError):
        return {"arguments": scrub(str(text))}
    return value if isinstance(value, dict) else {"arguments": value}


def to_chat_message(message: Mapping[str, Any], message_id: str, origin: str) -> Any:
    """A ctxbench (OpenAI-style) message as Inspect's ChatMessage of its role; text scrubbed of secrets."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    content = message.get("content")
    text = scrub(content if isinstance(content, str) else message_text({"content": content}))
    common = {"id": message_id, "content": text, "metadata": {"ctxbench_id": message_id, "origin": origin}}
    role = message.get("role")
    if role == "system":
        return ChatMessageSystem(**common)
    if role == "assistant":
        calls = [ToolCall(id=str(call.get("id")), function=call.get("function", {}).get("name", ""),
                          arguments=_arguments(call.get("function", {}).get("arguments")))
                 for call in message.get("tool_calls") or ()]
        return ChatMessageAssistant(**common, tool_calls=calls or None, model=None)
    if role == "tool":
        return ChatMessageTool(**common, tool_call_id=message.get("tool_call_id"), function=message.get("name"))
    return ChatMessageUser(**common)


def to_tool_info(tool: Mapping[str, Any]) -> Any:
    """An OpenAI tool schema as Inspect's ToolInfo (its parameters dropped if Inspect's schema refuses them)."""
    from inspect_ai.tool import ToolInfo
    from pydantic import ValidationError

    function = tool.get("function", tool)
    fields = {"name": function.get("name", ""), "description": function.get("description", "")}
    try:
        return ToolInfo.model_validate({**fields, "parameters": function.get("parameters") or {}})
    except ValidationError:
        return ToolInfo.model_validate(fields)


def to_usage(calls: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> Any:
    """Inspect's ModelUsage of one llm_call (or the sum of several): its input_tokens exclude cache reads
    and writes, which ctxbench's input_tokens include; total_cost = cost_usd."""
    from inspect_ai.model import ModelUsage

    events = [calls] if isinstance(calls, Mapping) else list(calls)
    total = ModelUsage()
    for event in events:
        usage = event.get("usage") or {}
        cached, written = usage.get("cached_tokens"), usage.get("cache_write_tokens")
        fresh = (usage.get("input_tokens") or 0) - (cached or 0) - (written or 0)
        output = usage.get("output_tokens") or 0
        total = total + ModelUsage(input_tokens=fresh, output_tokens=output,
                                   total_tokens=(usage.get("input_tokens") or 0) + output,
                                   input_tokens_cache_read=cached, input_tokens_cache_write=written,
                                   total_cost=event.get("cost_usd"))
    return total


def _explanation(detail: Mapping[str, Any]) -> str:
    if "expected" in detail or "given" in detail:
        return f"expected: {json.dumps(detail.get('expected'))}\ngiven: {json.dumps(detail.get('given'))}"
    return json.dumps(detail) if detail else "no checker ran"


def run_sample(row: Mapping[str, Any], events_path: Path, epoch: int) -> Any:
    """The Inspect sample of one run: its runs.jsonl row and its event log."""
    from inspect_ai.event import ScoreEvent
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.scorer import Score

    if not events_path.is_file():
        raise ConfigError(f"{events_path}: the event log of run {row['run_id']!r} (in {RUNS_FILE}) is missing")
    finished = datetime.fromtimestamp(events_path.stat().st_mtime, timezone.utc)
    started = finished - timedelta(seconds=row.get("wall_s") or 0.0)
    builder = SampleBuilder(started)
    for event in read_events(events_path):
        builder.add(event)
    detail = row.get("detail") or {}
    score = Score(value=float(row.get("score") or 0.0), answer=json.dumps(detail.get("given")) if "given" in detail
                  else None, explanation=_explanation(detail), metadata={"success": bool(row.get("success")),
                                                                          "termination": row.get("termination"),
                                                                          **detail})
    builder.events.append(ScoreEvent(score=score, scorer=SCORER, timestamp=builder._time(),
                                     working_start=builder._clock))
    calls = _main_and_side_usage(builder.events)
    simulated = row.get("simulated_s") or builder._clock
    error = row.get("error")
    return EvalSample(
        id=row["task_id"], epoch=epoch, input=builder.statement, target=json.dumps(detail.get("expected", "")),
        messages=builder.messages, events=builder.events, scores={SCORER: score}, metadata=dict(row),
        model_usage=calls["model"], role_usage=calls["role"], started_at=started,
        completed_at=started + timedelta(seconds=simulated), total_time=simulated,
        working_time=(row.get("model_s") or 0.0) + (row.get("tool_s") or 0.0),
        uuid=stable_hash(["ctxbench-sample", row["run_id"], str(events_path.resolve())]),
        error=EvalError(message=scrub(str(error)), traceback="", traceback_ansi="") if error else None)


def _main_and_side_usage(events: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Usage summed by model name and by role (profile) over a sample's successful model events."""
    by: dict[str, dict[str, Any]] = {"model": {}, "role": {}}
    for event in events:
        if getattr(event, "event", None) != "model" or event.output.usage is None:
            continue
        for key, name in (("model", event.model), ("role", event.role or MAIN_PROFILE)):
            previous = by[key].get(name)
            by[key][name] = event.output.usage if previous is None else previous + event.output.usage
    return by


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "-", name).strip("-") or "strategy"


class InspectLogs:
    """The Inspect eval logs of one results directory, one per strategy label, written with Inspect's own
    writer. `add(row)` folds a finished run into its strategy's log (and rewrites it, status "started",
    when `live`); `finish()` writes every log with status "success"."""

    def __init__(self, results_dir: str | Path, out: str | Path | None = None, *, live: bool = False):
        require_inspect()
        self.results_dir = Path(results_dir)
        self.out = Path(out) if out is not None else self.results_dir / DEFAULT_SUBDIR
        self.live = live
        self.config = _read_config(self.results_dir)
        self.created = datetime.fromtimestamp((self.results_dir / CONFIG_FILE).stat().st_mtime, timezone.utc) \
            if (self.results_dir / CONFIG_FILE).is_file() else datetime.now(timezone.utc)
        self.samples: dict[str, dict[str, Any]] = {}  # label -> run_id -> sample (a rerun replaces its run)
        self.rows: dict[str, dict[str, Mapping[str, Any]]] = {}
        self.paths: dict[str, Path] = {}

    def epoch(self, seed: Any) -> int:
        """1-based position of a run seed among the invocation's seeds (Inspect's epochs)."""
        seeds = list(self.config.get("seeds") or [])
        if seed not in seeds:
            seeds = sorted({*seeds, seed}, key=str)
            self.config["seeds"] = seeds
        return seeds.index(seed) + 1

    def add(self, row: Mapping[str, Any]) -> None:
        label = str(row.get("strategy"))
        log = find_event_log(self.results_dir / EVENTS_DIR, row["run_id"])
        sample = run_sample(row, log, self.epoch(row.get("seed")))
        self.samples.setdefault(label, {})[row["run_id"]] = sample
        self.rows.setdefault(label, {})[row["run_id"]] = row
        if self.live:
            self.write(label, "started")

    def finish(self) -> list[Path]:
        return [self.write(label, "success") for label in self.samples]

    def write(self, label: str, status: str) -> Path:
        from inspect_ai.log import write_eval_log

        log = self.eval_log(label, status)
        path = self.paths.get(label)
        if path is None:
            stamp = self.created.strftime("%Y-%m-%dT%H-%M-%S+00-00")
            suite = _safe(str(self.config.get("suite") or "results"))
            path = self.paths[label] = self.out / f"{stamp}_{suite}_{_safe(label)}_{log.eval.eval_id}.eval"
        self.out.mkdir(parents=True, exist_ok=True)
        write_eval_log(log, str(path), format="eval")
        return path

    def eval_log(self, label: str, status: str) -> Any:
        from inspect_ai.log import (EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalPlan, EvalPlanStep, EvalResults,
                                    EvalScore, EvalSpec, EvalStats)

        samples = sorted(self.samples[label].values(), key=lambda s: (str(s.id), s.epoch))
        rows = list(self.rows[label].values())
        suite = str(self.config.get("suite") or self.results_dir.name)
        strategy_config = rows[0].get("strategy_config") or {}
        models = sorted({str(row.get("model")) for row in rows})
        identity = stable_hash(["ctxbench-eval", str(self.results_dir.resolve()), label])
        started = min(s.started_at for s in samples)
        completed = max(s.completed_at for s in samples)
        usage = _main_and_side_usage(event for s in samples for event in s.events)
        successes = [bool(row.get("success")) for row in rows]
        metrics = {"accuracy": EvalMetric(name="accuracy", value=sum(successes) / len(successes)),
                   "mean": EvalMetric(name="mean", value=sum(float(r.get("score") or 0) for r in rows) / len(rows))}
        spec = EvalSpec(
            eval_id=identity, run_id=stable_hash(["ctxbench-run", str(self.results_dir.resolve())]),
            created=self.created.isoformat(), task=f"{suite}/{label}",
            # One task id per strategy: Inspect's viewer lists, of the logs sharing a task id, the newest alone
            # (the others count as retries), so one shared id hid every strategy's log but one.
            task_id=stable_hash(["ctxbench-task", suite, label]),
            task_display_name=f"{suite} · {label}", task_args={"strategy": label, "strategy_config": strategy_config},
            solver=label, solver_args=strategy_config, tags=[label],
            dataset=EvalDataset(name=suite, samples=len({s.id for s in samples}),
                                sample_ids=sorted({str(s.id) for s in samples})),
            model=", ".join(models), config=EvalConfig(epochs=len(self.config.get("seeds") or [0])),
            packages=dict(self.config.get("versions") or {}),
            metadata={"ctxbench_results": str(self.results_dir), "argv": self.config.get("argv"),
                      "profiles": self.config.get("profiles"), "strategy_name": rows[0].get("strategy_name")})
        return EvalLog(
            status=status, eval=spec, samples=samples,
            plan=EvalPlan(steps=[EvalPlanStep(solver=label, params=strategy_config)]),
            results=EvalResults(total_samples=len(samples), completed_samples=len(samples),
                                scores=[EvalScore(name=SCORER, scorer=SCORER, metrics=metrics)]),
            stats=EvalStats(started_at=started, completed_at=completed, model_usage=usage["model"],
                            role_usage=usage["role"]))


def _read_config(results_dir: Path) -> dict[str, Any]:
    path = results_dir / CONFIG_FILE
    if not path.is_file():
        return {}
    config = load_json(path)  # ConfigError naming it when cut short, too deep or not UTF-8
    return config if isinstance(config, dict) else {}


def export_inspect(results_dir: str | Path, out: str | Path | None = None) -> list[Path]:
    """Write one Inspect eval log per strategy of a results directory (default into RESULTS_DIR/inspect/);
    returns their paths. Strategies are folded one at a time, so only one strategy's samples are held."""
    path = Path(results_dir)
    if not path.is_dir():
        raise ConfigError(f"export: {path} is not a directory")
    if not (path / RUNS_FILE).is_file():
        raise ConfigError(f"export: {path} is not a results directory (it has no {RUNS_FILE})")
    rows = read_runs(path)
    if not rows:
        raise ConfigError(f"export: {path / RUNS_FILE} holds no finished run")
    logs = InspectLogs(path, out)
    written = []
    for label in dict.fromkeys(str(row.get("strategy")) for row in rows):
        for row in rows:
            if str(row.get("strategy")) == label:
                logs.add(row)
        written.append(logs.write(label, "success"))
        logs.samples.pop(label)
        logs.rows.pop(label)
    return written


class LiveInspectLogs:
    """`ctxbench run --inspect-log [DIR]`: told of each finished run's row (harness.run.invocation.execute's
    `watch`), it folds that run's event log into its strategy's Inspect log and rewrites the log with status
    "started", so `inspect view` can follow a long run; `finish()` marks every log "success". Each row costs
    one read of its own event log; the strategy's earlier samples are kept folded, not read again."""

    def __init__(self, results_dir: str | Path, out: str | Path | None = None):
        require_inspect()  # before any model call
        self.results_dir, self.out = Path(results_dir), out
        self.logs: InspectLogs | None = None  # made at the first row, once config.json is written

    def __call__(self, row: Mapping[str, Any]) -> None:
        if self.logs is None:
            self.logs = InspectLogs(self.results_dir, self.out, live=True)
        self.logs.add(row)

    def finish(self) -> list[Path]:
        return self.logs.finish() if self.logs is not None else []
