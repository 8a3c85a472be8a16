"""`ctxbench show`: one run's timeline, a view as sent, or what changed between two views, from its files alone.

The event log is folded request by request with harness.conversation.replay's own step (replay_event: the view is
rebuilt as replay rebuilds it, each sent view's hash checked against the recorded one, invalid
condensation records reported and not applied). Nothing calls a model or reads a run's live state, and
nothing heavy is imported (no litellm, pandas): sizes are characters, tokens are the recorded ones.

Timeline: one line per main-model request (context tokens, cached, written, cost, view length,
warnings / resets / compactions since the previous request, its response's tool calls), side calls
(e.g. the summarizer) marked `s`, and each strategy decision on its own line with the messages it
removed, replaced or inserted (ids, roles, characters, first characters). Streaks of uneventful requests
are folded (ours: a 400-request run stays readable); `--all` shows every one.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from harness.core.errors import ConfigError, did_you_mean
from harness.conversation.events import event_log_run_id, event_logs, find_event_log, read_events
from harness.conversation.replay import ReplayReport, replay_event
from harness.results.layout import EVENTS_DIR, RUNS_FILE, read_runs
from harness.core.tokens import message_text
from harness.results.verdict import EXCEPTION_PREFIXES, as_json, checker_parts, expected_given_items
from harness.conversation.view import Message, ViewState

MAIN_PROFILE = "main"  # harness.models.profiles.MAIN_PROFILE (not imported: it pulls in the LLM layer)
WIDTH = 120  # ours: the widest line printed (longer ones are cut with …)
FOLD_MIN = 8  # ours: a streak of at least this many uneventful requests is folded ...
FOLD_KEEP = 2  # ... keeping this many at each end
ITEMS = 8  # ours: messages listed per decision by default (user and system messages first)
# Origins of messages that are the session itself, not a strategy's or the environment's insertions.
SESSION_ORIGINS = frozenset({"task", "user", "agent", "tool", "completion"})
QUIET_TYPES = frozenset({"llm_call", "progress", "run_start", "run_end", "message"})
COLOURS = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36", "magenta": "35"}

Snapshot = tuple[list[int], dict[int, Message]]  # a view's ids in order and each message as sent


@dataclass
class Request:
    """One model request as logged (an `llm_call` event)."""

    number: int  # 1-based among main requests (0 for a side call)
    event: Mapping[str, Any]
    mismatch: str | None = None  # the rebuilt view's hash differs from the recorded one
    calls: list[str] = field(default_factory=list)  # tool names called in its response
    warnings: int = 0
    resets: int = 0
    compactions: int = 0

    @property
    def profile(self) -> str:
        return str(self.event.get("profile", ""))

    def usage(self, name: str) -> int:
        return int((self.event.get("usage") or {}).get(name) or 0)


@dataclass
class Item:
    """A timeline entry: a request, or a decision / note made before request `before` (1-based)."""

    before: int
    request: Request | None = None
    lines: list[tuple[str, str]] = field(default_factory=list)  # (colour, text)


# ----- reading the files

@dataclass
class RunFiles:
    events_path: Path
    row: dict[str, Any] | None  # its runs.jsonl row, if the run finished


def run_ids(results_dir: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The runs of a results directory (its event logs, and rows whose log is missing) and its rows by run id."""
    rows = {row["run_id"]: row for row in read_runs(results_dir)} if (results_dir / RUNS_FILE).exists() else {}
    ids = sorted({event_log_run_id(p) for p in event_logs(results_dir / EVENTS_DIR)} | set(rows))
    return ids, rows


def resolve(target: str, run_id: str | None) -> RunFiles | None:
    """The run `show` is about; None for a results directory of several runs and no --run (list them)."""
    path = Path(target)
    if path.is_file():
        if run_id is not None:
            raise ConfigError(f"show: --run picks a run of a results directory; {path} is one event log")
        return RunFiles(path, None)
    if not path.is_dir():
        raise ConfigError(f"show: {path} is neither an event log nor a results directory")
    ids, rows = run_ids(path)
    if not ids:
        raise ConfigError(f"show: {path} is not a results directory (no {EVENTS_DIR}/*.jsonl, no {RUNS_FILE})")
    if run_id is None and len(ids) > 1:
        return None
    run_id = run_id if run_id is not None else ids[0]
    if run_id not in ids:
        raise ConfigError(f"show: --run {run_id!r} is not a run of {path}{did_you_mean(run_id, ids)}")
    events_path = find_event_log(path / EVENTS_DIR, run_id)
    if not events_path.is_file():
        raise ConfigError(f"show: run {run_id!r} has a row in {path / RUNS_FILE} but no event log {events_path}")
    return RunFiles(events_path, rows.get(run_id))


def runs_listing(results_dir: Path) -> list[str]:
    """Every run of the directory with how it ended, failed runs first marked, and how to show one."""
    ids, rows = run_ids(results_dir)
    lines = [f"{len(ids)} runs in {results_dir}; pick one with --run (failed runs marked ✗):", ""]
    failed = []
    for run_id in ids:
        row = rows.get(run_id)
        if row is None:
            lines.append(f"  ? {run_id}  (no runs.jsonl row: unfinished)")
            continue
        mark = "✓" if row.get("success") else "✗"
        if not row.get("success"):
            failed.append(run_id)
        lines.append(f"  {mark} {run_id}  {row.get('termination')}  score {_number(row.get('score'), '.2f')}  "
                     f"{row.get('requests')} requests  ${_number(row.get('cost_usd'), '.4f')}")
    pick = failed[0] if failed else ids[0]
    lines += ["", f"e.g. ctxbench show {results_dir} --run {pick}" + ("  (the first failed run)" if failed else "")]
    return lines


def _number(value: Any, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "n/a"


# ----- folding the log

def message_chars(message: Message) -> int:
    return len(message_text(message))


class Walk:
    """Folds a run's events with replay's step, keeping the requests seen and the view."""

    def __init__(self, path: Path):
        self.path = path
        self.events = read_events(path)
        start = self.events[0] if self.events else None
        if start is None or start["type"] != "run_start" or not isinstance(start.get("tools_hash"), str):
            raise ConfigError(f"show: {path}:1: the log does not open with a run_start event carrying tools_hash")
        self.start = start
        self.view = ViewState(count=message_chars)  # sizes in characters: no tokenizer (litellm) is loaded
        self.report = ReplayReport(str(path))
        self.requests: list[Request] = []  # main requests so far

    def steps(self) -> Iterator[tuple[dict[str, Any], Request | None]]:
        """Each event, yielded before it is applied (the view is then the one it sees; for a main request,
        the view sent), with its Request if it is a model request."""
        for event in self.events:
            request = None
            if event["type"] == "llm_call":
                main = event.get("profile") == MAIN_PROFILE
                request = Request(len(self.requests) + 1 if main else 0, event)
                if main:
                    self.requests.append(request)
            yield event, request
            seen = len(self.report.mismatches)
            try:
                replay_event(event, self.events, self.view, self.start["tools_hash"], self.report)
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(f"show: {self.path}:{event['id'] + 1}: invalid {event['type']} event or view "
                                  f"operation ({type(exc).__name__}: {exc})") from exc
            if request is not None and request.number and len(self.report.mismatches) > seen:
                request.mismatch = self.report.mismatches[-1]

    def count_requests(self) -> int:
        return sum(e["type"] == "llm_call" and e.get("profile") == MAIN_PROFILE for e in self.events)

    def snapshot(self) -> Snapshot:
        ids = list(self.view.ids)
        return ids, {i: self.view.message(i) for i in ids}


def check_request(number: int, total: int, option: str, lowest: int = 1) -> None:
    if not lowest <= number <= total:
        span = f"{lowest}..{total}" if total >= lowest else "none: the run made too few main requests"
        raise ConfigError(f"show: {option} {number} is out of range (requests of this run: {span})")


def views_at(walk: Walk, numbers: set[int]) -> dict[int, tuple[Snapshot, Request]]:
    """The views sent at these main requests (1-based), each with its request (hash checked by replay)."""
    found: dict[int, tuple[Snapshot, Request]] = {}
    for event, request in walk.steps():
        if len(found) == len(numbers):  # the last one's event is applied now: its hash is checked
            break
        if request is not None and request.number in numbers:
            found[request.number] = (walk.snapshot(), request)
    return found


# ----- describing messages and changes

def one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:max(limit - 1, 0)] + "…"


def describe(message_id: int, message: Message, origin: str = "") -> str:
    """`#id role [name] N ch "first characters"` of one message as sent."""
    text = message_text(message)
    name = message.get("name") or ""
    shown_origin = origin and origin not in SESSION_ORIGINS  # inserted by a strategy or the environment
    who = f"{message.get('role', '?')}" + (f" {name}" if name else "") + (f" ({origin})" if shown_origin else "")
    head = f"#{message_id} {who} {len(text):,} ch "
    return head + '"' + one_line(text, max(WIDTH - 16 - len(head), 10)) + '"'


def view_changes(before: Snapshot, after: Snapshot) -> tuple[list[int], list[int], list[int]]:
    """Messages removed, replaced (sent in another rendering) and added between two views."""
    old_ids, old = before
    new_ids, new = after
    removed = [i for i in old_ids if i not in new]
    replaced = [i for i in new_ids if i in old and old[i] != new[i]]
    added = [i for i in new_ids if i not in old]
    return removed, replaced, added


def change_lines(before: Snapshot, after: Snapshot, view: ViewState, items: int | None) -> list[tuple[str, str]]:
    """One line per removed / replaced / added message (at most `items` of each, user and system messages
    first), then a line counting the rest."""
    removed, replaced, added = view_changes(before, after)
    lines: list[tuple[str, str]] = []
    for sign, colour, ids, source in (("-", "red", removed, before[1]), ("~", "cyan", replaced, after[1]),
                                      ("+", "green", added, after[1])):
        shown = sorted(sorted(ids, key=lambda i: source[i].get("role") in ("assistant", "tool"))[:items]) \
            if items is not None else ids
        for message_id in shown:
            text = describe(message_id, source[message_id], view.origins.get(message_id, ""))
            if sign == "~":
                text += f" (was {len(message_text(before[1][message_id])):,} ch)"
            lines.append((colour, f"{sign} {text}"))
        rest = [i for i in ids if i not in set(shown)]
        if rest:
            roles: dict[str, int] = {}
            for message_id in rest:
                role = source[message_id].get("role", "?")
                roles[role] = roles.get(role, 0) + 1
            chars = sum(len(message_text(source[i])) for i in rest)
            lines.append((colour, f"{sign} … and {len(rest)} more ({', '.join(f'{n} {r}' for r, n in roles.items())}; "
                                  f"{chars:,} ch; --items N lists more)"))
    return lines


def decision_text(event: Mapping[str, Any]) -> str:
    """What a strategy's (or the environment's) event did, in one line."""
    kind = event["type"]
    get = event.get
    if kind == "compaction":
        return (f"compaction {get('step')} ({get('trigger')}): {_int(get('tokens_before'))} -> {_int(get('tokens_after'))} "
                f"tokens, reclaimed {_int(get('reclaimed_tokens'))}")
    if kind == "compaction_skipped":
        return f"compaction {get('step')} skipped: would reclaim {_int(get('would_reclaim_tokens'))} tokens"
    if kind == "condensation":
        return f"condensation {get('kind')}: {len(get('forgotten_ids') or [])} messages forgotten"
    if kind == "condensation_request":
        return f"condensation request ({get('reason')})"
    if kind == "warning":
        level = get("level")
        return (f"warning {format(level, '.0%') if isinstance(level, (int, float)) else level}: "
                f"{_int(get('tokens'))} of {_int(get('budget'))} tokens ({get('measured')}), message #{get('message_id')}")
    if kind == "tool_output_offloaded":
        return (f"offloaded {get('tool')} output {get('result_id')}: {_int(get('shown_chars'))} of "
                f"{_int(get('total_chars'))} ch shown")
    if kind == "cache_bust_warning":
        return (f"cache-bust warning: {_int(get('cached_tokens'))} cached of an established "
                f"{_int(get('established_prefix_tokens'))}-token prefix ({get('likely_cause')})")
    if kind == "message":
        by = get("origin") or "harness"
        if get("placement", "append") == "append":
            return f"message inserted by the {by}"
        return f"message logged by the {by}, sent only where a view op places it (placement {get('placement')})"
    scalars = [f"{k}={as_json(v)}" for k, v in event.items()
               if k not in ("id", "type") and isinstance(v, (str, int, float, bool)) and k not in ("content", "traceback")]
    return " ".join([kind] + scalars)


def _int(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def is_decision(event: Mapping[str, Any]) -> bool:
    """Events a strategy or the environment made about the view (everything but the session's own traffic)."""
    if event.get("view_ops"):
        return True
    if event["type"] == "message":
        return event.get("origin") not in SESSION_ORIGINS
    return event["type"] not in QUIET_TYPES


# ----- the timeline

RESET_KINDS = frozenset({"agent_reset", "hard_reset", "summary"})


def timeline_items(walk: Walk, items: int | None) -> list[Item]:
    """Requests, side calls, decisions (with the view changes they made) and later user turns, in log order."""
    timeline: list[Item] = []
    current: Request | None = None
    pending: tuple[Item, Snapshot, int] | None = None  # a decision whose event is being applied
    counts = {"warning": 0, "reset": 0, "compaction": 0}  # decisions since the last main request
    first_user = True
    for event, request in walk.steps():
        if pending is not None:  # the previous event is applied now
            _finish(pending, walk, items)
            pending = None
        before = len(walk.requests) + (0 if request is not None and request.number else 1)
        if request is not None:
            current = request
            if request.number:
                request.warnings, request.resets, request.compactions = counts.values()
                counts = dict.fromkeys(counts, 0)
            timeline.append(Item(before, request))
            continue
        kind = event["type"]
        if kind == "message" and event.get("origin") == "agent" and current is not None:
            current.calls = [c.get("function", {}).get("name", "?") for c in event["message"].get("tool_calls") or ()]
        if kind == "message" and event.get("origin") == "user" and not event.get("view_ops"):
            if not first_user:
                timeline.append(Item(before, lines=[("magenta", f"user turn {describe(event['id'], event['message'])}")]))
            first_user = False
            continue
        if not is_decision(event):
            continue
        counts["warning"] += kind == "warning"
        counts["reset"] += kind == "condensation" and event.get("kind") in RESET_KINDS
        counts["compaction"] += kind == "compaction"
        item = Item(before, lines=[("yellow", f"ev {event['id']}: {decision_text(event)}")])
        timeline.append(item)
        pending = (item, walk.snapshot(), len(walk.report.mismatches))
    if pending is not None:
        _finish(pending, walk, items)
    return timeline


def _finish(pending: tuple[Item, Snapshot, int], walk: Walk, items: int | None) -> None:
    """Add to a decision's item what its event changed in the view, and any reason it was not applied."""
    item, snapshot, seen = pending
    item.lines += [("red", f"  NOT APPLIED: {problem}") for problem in walk.report.mismatches[seen:]]
    item.lines += [(colour, f"  {text}") for colour, text in change_lines(snapshot, walk.snapshot(), walk.view, items)]


REQUEST_HEADER = (f"{'req':>5} {'event':>6} {'context':>9} {'cached':>9} {'written':>8} {'cost $':>8} {'view':>5} "
                  f"{'W':>2} {'R':>2} {'C':>2}  tool calls")


def request_line(request: Request) -> tuple[str, str]:
    """A request's row: tokens as the provider reported them, the view's length, decisions before it, its calls."""
    event = request.event
    flags = [f"{n:>2}" if n else f"{'':>2}" for n in (request.warnings, request.resets, request.compactions)]
    label = f"{request.number:>5}" if request.number else f"{'s':>5}"
    cost = event.get("cost_usd")
    line = (f"{label} {event['id']:>6} {_int(event.get('context_tokens') or request.usage('input_tokens')):>9} "
            f"{request.usage('cached_tokens'):>9,} {request.usage('cache_write_tokens'):>8,} "
            f"{_number(cost, '.4f') if cost is not None else '':>8} {_int(event.get('view_len', '')):>5} "
            f"{' '.join(flags)}  ")
    if not event.get("ok", True):
        error = EXCEPTION_PREFIXES.sub("", str(event.get("error") or "")) or str(event.get("error_type") or "")
        return "red", line + "FAILED: " + one_line(error, WIDTH - len(line) - 8)
    tail = ", ".join(request.calls) if request.number else f"{request.profile} (side call)"
    if request.mismatch:
        return "red", line + f"VIEW HASH MISMATCH: {request.mismatch}"
    return ("dim" if not request.number else ""), line + tail


def uneventful(item: Item) -> bool:
    request = item.request
    return (request is not None and request.number > 0 and request.mismatch is None and request.event.get("ok", True)
            and not (request.warnings or request.resets or request.compactions))


def fold_line(streak: list[Item]) -> str:
    first, last = streak[0].request, streak[-1].request
    assert first is not None and last is not None
    cost = sum(item.request.event.get("cost_usd") or 0 for item in streak if item.request is not None)
    return (f"{'…':>5} {len(streak)} uneventful requests {first.number}-{last.number} folded: context "
            f"{_int(first.event.get('context_tokens'))} -> {_int(last.event.get('context_tokens'))} tokens, "
            f"${cost:.4f} (--all shows them)")


def render_items(timeline: list[Item], *, fold: bool, first: int | None, last: int | None) -> list[tuple[str, str]]:
    """The timeline's lines between requests `first` and `last` (decisions go with the request they precede),
    streaks of uneventful requests folded when `fold`."""
    chosen = [item for item in timeline if (first is None or item.before >= first) and (last is None or item.before <= last)]
    lines: list[tuple[str, str]] = []
    index = 0
    while index < len(chosen):
        end = index
        while end < len(chosen) and uneventful(chosen[end]):
            end += 1
        streak = chosen[index:end]
        if fold and len(streak) >= FOLD_MIN:
            lines += [request_line(item.request) for item in streak[:FOLD_KEEP] if item.request is not None]
            lines.append(("dim", fold_line(streak[FOLD_KEEP:-FOLD_KEEP])))
            lines += [request_line(item.request) for item in streak[-FOLD_KEEP:] if item.request is not None]
        else:
            lines += [request_line(item.request) for item in streak if item.request is not None]
        if end < len(chosen):
            item = chosen[end]
            lines += [request_line(item.request)] if item.request is not None else \
                [(colour, f"{'':>12} {text}") for colour, text in item.lines]
            end += 1
        index = end
    return lines


def header_lines(walk: Walk) -> list[str]:
    start = walk.start
    task = start.get("task") or {}
    config = start.get("strategy_config")
    model = ((start.get("profiles") or {}).get(MAIN_PROFILE) or {}).get("model", "?")
    return [f"run {start.get('run_id')}", f"log {walk.path}",
            f"task {task.get('task_id')} ({task.get('family')})  strategy {start.get('strategy')}"
            + (f" {one_line(as_json(config), 50)}" if config else "") + f"  seed {start.get('seed')}  model {model}"]


def end_lines(walk: Walk, row: dict[str, Any] | None) -> list[tuple[str, str]]:
    """How the run ended: termination, success, score, the checker's expected vs given (the log's run_end keeps
    the detail whole; runs.jsonl's row is the fallback), totals, and the replay check."""
    end = next((e for e in reversed(walk.events) if e["type"] == "run_end"), None) or row
    checked, bad = walk.report.checked, len([r for r in walk.requests if r.mismatch])
    replay = (f"replay: {checked - bad}/{checked} sent views rebuilt with their recorded hash"
              + (f", {len(walk.report.mismatches)} problems" if walk.report.mismatches else ""))
    if end is None:
        return [("yellow", "end: no run_end event and no runs.jsonl row (the run did not finish)"), ("", replay)]
    success = end.get("success")
    main = [r.event for r in walk.requests]
    side = [e for e in walk.events if e["type"] == "llm_call" and e.get("profile") != MAIN_PROFILE]
    cost = sum((e.get("cost_usd") or 0) for e in main + side)
    lines = [("green" if success else "red",
              f"end: {end.get('termination')}  success {'yes' if success else 'no'}  score {_number(end.get('score'), '.2f')}"
              f"  {len(main)} requests + {len(side)} side calls  ${cost:.4f}"), ("", replay)]
    detail, error = end.get("detail"), end.get("error")
    if isinstance(detail, dict) and ("expected" in detail or "given" in detail):
        items = expected_given_items(detail.get("expected"), detail.get("given"))
        if isinstance(detail.get("expected"), dict) and isinstance(detail.get("given"), dict):
            lines.append(("", "checker: " + ("answers match" if not items else f"{len(items)} differences")))
            lines += [("red", f"  {text}") for text in items]
        else:
            lines += [("" if success else "red", f"checker: {text}") for text in items]
        rest = {k: v for k, v in detail.items() if k not in ("expected", "given")}
        lines += [("", f"  {part}") for part in checker_parts(rest, error)] if rest or error else []
    else:
        lines += [("", f"checker: {part}") for part in checker_parts(detail, error)]
    return lines


# ----- views

def view_lines(snapshot: Snapshot, view: ViewState) -> list[tuple[str, str]]:
    """A view as sent, message by message: a header per message, then its text in full."""
    ids, messages = snapshot
    lines: list[tuple[str, str]] = []
    for position, message_id in enumerate(ids, 1):
        message = messages[message_id]
        extra = "  (replaced: a strategy's rendering)" if message != view.messages[message_id] else ""
        call_id = message.get("tool_call_id")
        lines.append(("bold", f"[{position}] #{message_id} {message.get('role')}"
                              + (f" {message.get('name')}" if message.get("name") else "")
                              + (f" call {call_id}" if call_id else "") + f" {len(message_text(message)):,} ch{extra}"))
        content = message.get("content")
        text = content if isinstance(content, str) else as_json(content) if content is not None else ""
        lines += [("", f"    {line}") for line in text.splitlines()]
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            lines.append(("cyan", f"    -> {function.get('name')}({function.get('arguments')})  call {call.get('id')}"))
    return lines


def hash_line(request: Request) -> tuple[str, str]:
    if request.mismatch:
        return "red", f"view hash MISMATCH: {request.mismatch}"
    return "green", f"view hash {request.event.get('view_hash')}: rebuilt view matches the recorded one"


def plain_message(message: Message) -> dict[str, Any]:
    return json.loads(json.dumps(message))


# ----- the command

def colouring(mode: str, stream: Any) -> Callable[[str, str], str]:
    """ANSI colour when asked, or by default when `stream` is a terminal and NO_COLOR is unset."""
    on = mode == "always" or (mode == "auto" and stream.isatty() and not os.environ.get("NO_COLOR"))
    if not on:
        return lambda colour, text: text
    return lambda colour, text: f"\033[{COLOURS[colour]}m{text}\033[0m" if colour in COLOURS else text


def cut(text: str) -> str:
    return text if len(text) <= WIDTH else text[:WIDTH - 1] + "…"


def positive(value: int | None, option: str) -> None:
    if value is not None and value < 1:
        raise ConfigError(f"show: {option} must be at least 1, got {value}")


def show_command(args: Any) -> int:
    """`ctxbench show`: print the chosen run's timeline, a view (--request) or a diff (--diff)."""
    for option in ("request", "diff", "from_request", "to_request", "items"):
        positive(getattr(args, option), "--" + option.replace("_request", "").replace("_", "-"))
    if args.json and args.request is None:
        raise ConfigError("show: --json prints the view of --request N; give --request")
    paint = colouring(args.color, sys.stdout)
    out: list[tuple[str, str]] = []
    files = resolve(args.target, args.run)
    if files is None:
        if args.request is not None or args.diff is not None:
            raise ConfigError(f"show: {args.target} holds several runs: name one with --run")
        print("\n".join(runs_listing(Path(args.target))))
        return 0
    walk = Walk(files.events_path)
    total = walk.count_requests()
    if args.request is not None:
        check_request(args.request, total, "--request")
        snapshot, request = views_at(walk, {args.request})[args.request]
        if args.json:
            print(json.dumps([plain_message(snapshot[1][i]) for i in snapshot[0]], ensure_ascii=False, indent=1))
            return 0
        out += [("bold", f"request {args.request} of {total} (event {request.event['id']}): {len(snapshot[0])} messages, "
                         f"{_int(request.event.get('context_tokens'))} context tokens"), hash_line(request)]
        out += view_lines(snapshot, walk.view)
        print("\n".join(paint(colour, text) for colour, text in out))  # a view is printed whole, lines uncut
        return 0
    if args.diff is not None:
        check_request(args.diff, total, "--diff", lowest=2)
        views = views_at(walk, {args.diff - 1, args.diff})
        (before, old), (after, new) = views[args.diff - 1], views[args.diff]
        out += [("bold", f"request {args.diff - 1} (event {old.event['id']}, {len(before[0])} messages) -> request "
                         f"{args.diff} (event {new.event['id']}, {len(after[0])} messages)"), hash_line(new)]
        changes = change_lines(before, after, walk.view, args.items)
        out += changes or [("", "no message removed, replaced or added")]
    else:
        out += [("bold", text) for text in header_lines(walk)] + [("", ""), ("bold", REQUEST_HEADER)]
        timeline = timeline_items(walk, args.items or ITEMS)
        out += render_items(timeline, fold=not args.all, first=args.from_request, last=args.to_request)
        out += [("", "W, R, C: warnings, resets (condensations), compactions since the previous request; "
                     "s: a side call"), ("", "")] + end_lines(walk, files.row)
    print("\n".join(paint(colour, cut(text)) for colour, text in out))
    return 0
