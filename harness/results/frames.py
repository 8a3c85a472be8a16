"""A results directory's two tables as pandas frames: its runs (runs.jsonl, read line by line into columns) and
the requests of chosen runs (from their event logs, read only for the runs asked for)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import pandas as pd

from harness.conversation.events import find_event_log, read_events
from harness.results.layout import EVENTS_DIR, checked_rows, field_kind

# What a trace replay's request carries of the recorded one (harness.traces.replay: the llm_call's `recorded`).
RECORDED_REQUEST = ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens", "cost_usd")
REQUEST_COLUMNS = ["run_id", "task_id", "family", "strategy", "seed", "profile", "request", "input_tokens",
                   "cached_tokens", "cache_write_tokens", "output_tokens", "cost_usd", "resets_before",
                   "compactions_before", "clock_s", "trace_index", "forgotten_references",
                   *(f"recorded_{name}" for name in RECORDED_REQUEST)]
_MISSING = float("nan")  # a field a row lacks, as pandas reads it from a list of rows


def run_columns(results_dir: str | Path, *, complete: bool, missing: Any) -> dict[str, list[Any]]:
    """The latest row of each run_id (read_runs' rows), in run_id order, as one list per field (fields in order
    of first appearance, `missing` where a row lacks one): built as runs.jsonl is read, so no row's dict is kept
    beside its values. `complete`: read_runs' check that each row has the fields reports group by."""
    columns: dict[str, list[Any]] = {}
    # One object per distinct text of a text field (task, strategy, model, ...: few values, repeated every row)
    shared: dict[str, dict[str, str] | None] = {}
    last: dict[str, int] = {}  # run_id -> position of its latest row
    count = 0
    for row in checked_rows(results_dir, complete=complete):
        for name, value in row.items():
            column = columns.get(name)
            if column is None:
                column = columns[name] = [missing] * count
                shared[name] = {} if field_kind(name) == "text" and name != "run_id" else None
            texts = shared[name]
            if texts is not None and value.__class__ is str:
                value = texts.setdefault(value, value)
            column.append(value)
        count += 1
        if len(row) < len(columns):  # fields earlier rows had and this one lacks
            for column in columns.values():
                if len(column) < count:
                    column.append(missing)
        last[row["run_id"]] = count - 1
    keep = sorted(last.values(), key=columns["run_id"].__getitem__) if count else []
    if keep != list(range(count)):  # reruns replaced rows, or the file is not in run_id order
        for name, column in columns.items():
            columns[name] = [column[i] for i in keep]
    return columns


def runs_frame(results_dir: str | Path) -> pd.DataFrame:
    """The runs in run_id order: runs.jsonl holds them in completion order, which varies with the
    workers, and the seeded bootstrap resamples by position, so intervals must not depend on it.

    The same frame as pandas makes of read_runs' list of rows, made from run_columns (NaN where a row lacks a
    field, as pandas fills it)."""
    return pd.DataFrame(run_columns(results_dir, complete=True, missing=_MISSING))


def run_requests(path: Path, run: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per successful LLM request of one run's event log (requests_frame's columns)."""
    rows, numbers = [], {}
    resets = compactions = 0
    for event in read_events(path):
        if event["type"] in ("condensation", "recorded_reset"):
            resets += 1
        elif event["type"] == "compaction":
            compactions += 1
        elif event["type"] == "llm_call" and event.get("ok"):
            profile = event.get("profile")
            numbers[profile] = numbers.get(profile, 0) + 1
            usage = event.get("usage") or {}
            recorded = event.get("recorded") or {}
            rows.append({**{k: run.get(k) for k in ("run_id", "task_id", "family", "strategy", "seed")},
                         "profile": profile, "request": numbers[profile],
                         **{k: usage.get(k) for k in ("input_tokens", "cached_tokens", "cache_write_tokens",
                                                      "output_tokens")},
                         "cost_usd": event.get("cost_usd"), "resets_before": resets,
                         "compactions_before": compactions, "clock_s": event.get("clock_s"),
                         "trace_index": event.get("trace_index"), "forgotten_references": event.get("forgotten_references"),
                         **{f"recorded_{name}": recorded.get(name) for name in RECORDED_REQUEST}})
            resets = compactions = 0
    return rows


def logged_requests(results_dir: str | Path, runs: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Each run's request rows (run_requests) in turn, for the runs whose event log exists: one log in memory
    at a time."""
    events_dir = Path(results_dir) / EVENTS_DIR
    for run in runs:
        path = find_event_log(events_dir, run["run_id"])
        if path.exists():
            yield run_requests(path, run)


def requests_frame(results_dir: str | Path, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per successful LLM request of each of `runs` (read from their event logs alone), numbered per
    profile.

    `resets_before` and `compactions_before` count the condensation and compaction events
    since the previous request: where the sawtooth drops (a recorded agent's own reset in a trace replay counts
    as a reset). A trace replay's requests also carry the trace message they answered (`trace_index`), what
    the trace recorded of that request (`recorded_*`, its cost at the recorded model's list prices) and, main
    requests, their `forgotten_references`; null elsewhere.
    """
    rows = [row for part in logged_requests(results_dir, runs.to_dict("records")) for row in part]
    return pd.DataFrame(rows, columns=REQUEST_COLUMNS)
