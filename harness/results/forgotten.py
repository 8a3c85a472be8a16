"""report.md's section of a trace replay: what each strategy would have withheld from the recorded agent.

A replay's main `llm_call` events carry `trace_index` (the recorded response's index in the trace),
`forgotten_references` (how many references of that response the view sent no longer held), up to five of them
as `forgotten_examples` and, aligned with them, `forgotten_from`: the trace index of the message each first appeared
in (harness.traces.replay, docs/traces.md). The section reads those, and the message a reference came from, from
each run's event log alone: the replay logged the trace's messages in order (origin task, user, agent, tool; what a
strategy added has its own origin, and a stand-in for a prefix the trace did not record is marked `stand_in`), an
agent message right after the request that answered with it, and a tool result a strategy offloaded whole in its
`tool_output_offloaded` event.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import pandas as pd

from harness.conversation.events import find_event_log, read_events
from harness.core.secrets import scrub
from harness.models.profiles import MAIN_PROFILE
from harness.results.frames import requests_frame
from harness.results.layout import EVENTS_DIR
from harness.results.tables import code_span, markdown

FIRST_ROWS_SHOWN = 30  # trace x strategy rows of the "first forgotten" table; the event logs hold every request
EXCERPT_CHARS = 100  # of the line holding a forgotten reference
TRACE_ORIGINS = ("task", "user", "tool")  # origins of the trace's own messages the replay logged, besides `agent`
FIRST_HEADER = ["trace", "strategy", "request (message #)", "forgotten there", "reference", "from message #", "role",
                "line"]


@dataclass(frozen=True)
class FirstForgotten:
    """A replay's first request that forgot a reference, and the one of them that appeared earliest."""

    request: int | None  # the recorded response's trace index
    forgotten: int  # references forgotten at that request
    reference: str
    source: int | None  # trace index of the message it first appeared in (None: a log without `forgotten_from`)
    role: str | None
    line: str  # the line of that message holding the reference, secrets redacted, trimmed to EXCERPT_CHARS


def replay_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows of trace replays (each carries its trace's path) among `runs`."""
    return runs[runs["trace_path"].notna()] if "trace_path" in runs else runs.iloc[:0]


def _texts(message: Mapping[str, Any]) -> Iterator[str]:
    """A message's texts as references are read from them: content, and each tool call's arguments, raw and as
    the string values they decode to (JSON escapes a quote or a non-ASCII letter)."""
    content = message.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        yield from (part["text"] for part in content if isinstance(part, Mapping) and isinstance(part.get("text"), str))
    for call in message.get("tool_calls") or ():
        arguments = (call.get("function") or {}).get("arguments") or ""
        yield arguments
        try:
            yield from _strings(json.loads(arguments))
        except (ValueError, TypeError):
            pass


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def holding_line(message: Mapping[str, Any], reference: str) -> str:
    """The first line of a message's texts that holds `reference` (where it starts); empty if none does."""
    for text in _texts(message):
        at = text.find(reference)
        if at >= 0:
            end = text.find("\n", at)
            return text[text.rfind("\n", 0, at) + 1:end if end >= 0 else len(text)]
    return ""


def excerpt(line: str, reference: str, width: int = EXCERPT_CHARS) -> str:
    """`line` with its secrets redacted (harness.core.secrets.scrub), cut to `width` characters around the
    reference, an ellipsis marking each cut end. Redacted first, so a cut never leaves part of a secret."""
    line = scrub(line.strip())
    if len(line) <= width:
        return line
    at = max(line.find(reference), 0)
    start = max(0, min(at - max(width - len(reference), 0) // 2, len(line) - width))
    return ("…" if start else "") + line[start:start + width] + ("…" if start + width < len(line) else "")


def first_forgotten(events: Iterable[Mapping[str, Any]]) -> FirstForgotten | None:
    """The first successful main request of a replay's log that forgot a reference (None: none did); of the
    references it names, the one that appeared earliest in the trace (then by name)."""
    messages: dict[int, Mapping[str, Any]] = {}  # trace index -> the message as the trace had it
    offloaded: dict[Any, str] = {}  # tool_call_id -> the whole result a strategy offloaded
    position = 0  # trace index of the next message of the trace's own
    answered: int | None = None  # trace index of the response the last successful main request was replayed for
    for event in events:
        kind = event.get("type")
        if kind == "llm_call" and event.get("ok") and event.get("profile") == MAIN_PROFILE:
            if event.get("forgotten_examples"):
                return _first(event, messages)
            answered = event.get("trace_index")
        elif kind == "tool_output_offloaded" and isinstance(event.get("content"), str):
            offloaded[event.get("tool_call_id")] = event["content"]
        elif kind == "message" and isinstance(event.get("message"), Mapping) and "stand_in" not in event:
            message, origin = event["message"], event.get("origin")
            if origin == "tool" and message.get("tool_call_id") in offloaded:
                message = {**message, "content": offloaded[message["tool_call_id"]]}
            if origin == "agent" and answered is not None:  # a paused request's reply is replaced by the next one
                messages[answered], position = message, answered + 1
            elif origin in TRACE_ORIGINS:
                messages[position], position = message, position + 1
    return None


def _first(event: Mapping[str, Any], messages: dict[int, Mapping[str, Any]]) -> FirstForgotten:
    examples = list(event["forgotten_examples"])
    sources = list(event.get("forgotten_from") or [None] * len(examples))
    source, reference = min(zip(sources, examples), key=lambda pair: (pair[0] is None, pair[0] or 0, pair[1]))
    message = messages.get(source) if source is not None else None
    return FirstForgotten(request=event.get("trace_index"), forgotten=int(event.get("forgotten_references") or 0),
                          reference=reference, source=source, role=message.get("role") if message else None,
                          line=excerpt(holding_line(message, reference), scrub(reference)) if message else "")


def strategy_rows(replays: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """Per strategy over its replays' successful main requests: requests replayed, those with a forgotten
    reference, forgotten references per request (mean) and the most at one request; fewest per request first."""
    main = requests[(requests["profile"] == MAIN_PROFILE) & requests["run_id"].isin(replays["run_id"])]
    counts = pd.to_numeric(main["forgotten_references"], errors="coerce").fillna(0)
    rows = []
    for strategy, group in replays.groupby("strategy", sort=False):
        mine = counts[main["strategy"] == strategy]
        rows.append({"strategy": strategy, "traces": len(group), "requests": len(mine),
                     "requests_forgetting": int((mine > 0).sum()),
                     "forgotten_per_request": mine.mean() if len(mine) else float("nan"),
                     "most_at_one_request": int(mine.max()) if len(mine) else 0})
    table = pd.DataFrame(rows, columns=["strategy", "traces", "requests", "requests_forgetting",
                                        "forgotten_per_request", "most_at_one_request"])
    return table.sort_values(["forgotten_per_request", "strategy"], na_position="last", kind="stable")


def _strategy_table(table: pd.DataFrame) -> str:
    rows = [[str(r["strategy"]), str(r["traces"]), f"{r['requests']:,}",
             f"{r['requests_forgetting']:,}" + (f" ({r['requests_forgetting'] / r['requests']:.0%})" if r["requests"]
                                                else ""),
             "n/a" if pd.isna(r["forgotten_per_request"]) else f"{r['forgotten_per_request']:.2f}",
             f"{r['most_at_one_request']:,}"]
            for r in table.to_dict("records")]
    return markdown(["strategy", "traces", "requests replayed", "requests with a forgotten reference",
                     "forgotten references per request", "most at one request"], rows, names=1)


def _known(value: int | None) -> str:
    return "n/a" if value is None else str(value)


def _first_row(results_dir: Path, run: Mapping[str, Any]) -> list[str]:
    path = find_event_log(results_dir / EVENTS_DIR, run["run_id"])
    found = first_forgotten(read_events(path)) if path.exists() else None
    trace = f"[{run['task_id']}]({EVENTS_DIR}/{path.name})"
    if found is None:  # no log, or one without the examples its row counts: said rather than guessed
        return [trace, str(run["strategy"]), "n/a", "", "", "", "", ""]
    return [trace, str(run["strategy"]), _known(found.request), f"{found.forgotten:,}",
            code_span(scrub(found.reference)), _known(found.source), found.role or "",
            code_span(found.line) if found.line else ""]


def forgotten_section(results_dir: str | Path, runs: pd.DataFrame) -> list[str]:
    """report.md's "What each strategy forgot" of the trace replays among `runs` (none: no section); only the
    replays' event logs are read."""
    replays = replay_runs(runs)
    if replays.empty:
        return []
    table = strategy_rows(replays, requests_frame(results_dir, replays))
    lines = ["## What each strategy forgot", "",
             "What your agent would have lost under each strategy. A forgotten reference is an identifier, number, "
             "path or quoted value the recorded agent used in a response that had appeared earlier in the trace "
             "but that no message of the view sent under the strategy held: the agent would have had to fetch it "
             "again, guess it, or fail (a lower bound: plain words and 1-2 digit numbers are not counted; "
             "docs/traces.md). Per strategy, fewest forgotten per request first: the traces and requests it "
             "replayed (a replay that ended early, on an overflow, counts the requests it reached), those whose view "
             "lacked at least one reference the response used, the mean number of forgotten references per request "
             "and the most at one request.", "",
             _strategy_table(table), ""]
    forgetting = replays[pd.to_numeric(replays["forgotten_references"], errors="coerce").fillna(0) > 0]
    if forgetting.empty:
        return lines + ["No strategy forgot a reference on these traces.", ""]
    order = {strategy: rank for rank, strategy in enumerate(table["strategy"])}
    forgetting = forgetting.assign(_order=forgetting["strategy"].map(order)).sort_values(
        ["task_id", "_order"], kind="stable")
    lines += ["The first forgotten reference of each trace under each strategy that forgot one: the request (the "
              "recorded response's message number in the trace, from 0), how many references it forgot, the one "
              "that had appeared earliest, and the message it first appeared in (number, role, and the line "
              f"holding it, cut to {EXCERPT_CHARS} characters, secrets redacted). Each trace links to its event "
              "log, where every request's `llm_call` names up to five forgotten references (`forgotten_examples`) "
              "and their messages (`forgotten_from`).", "",
              markdown(FIRST_HEADER, [_first_row(Path(results_dir), run)
                                      for run in forgetting.head(FIRST_ROWS_SHOWN).to_dict("records")],
                       names=len(FIRST_HEADER))]
    if len(forgetting) > FIRST_ROWS_SHOWN:
        lines.append(f"\n... and {len(forgetting) - FIRST_ROWS_SHOWN} more trace x strategy pairs that forgot a "
                     "reference: their event logs hold them.")
    return lines + [""]
