"""The append-only event log of one run, mirrored line by line to `events/<run_id>.jsonl`.

Nothing is ever removed from the log. Strategies change what the model sees only by
appending events that carry `view_ops` (see harness.conversation.view), so the view that was sent can
always be rebuilt from the file alone.

A run's log lives in its file: the runner keeps none of its events in memory
(`in_memory=False`) and folds what it needs as they are appended (the view, the metrics).
A log without a file keeps its events in `events`, for tests and scripts to read back.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.core.errors import ReplayMismatch
from harness.core.fast_json import json_line
from harness.core.secrets import scrub
from harness.core.user_files import check_depth

# The fields where text from outside (exception messages, tracebacks) enters a log: they may echo a URL,
# a header or a key, so they are scrubbed of secrets (harness.core.secrets) as they are appended.
OUTSIDE_TEXT_FIELDS = ("error", "traceback")
# Ours: the log file's write buffer. A tool result's line is tens of kB: with io's default 8 kB
# buffer each such line is its own write(2) (~6 us of a ~19 us append of a 22 kB line); with 64 KiB, a few lines
# are copied into the buffer per write. It was 1 MiB: a fixed MiB per open log, half of tracemalloc's peak of a
# `long` work_queue run (2.7 MB -> 1.7 MB at 64 KiB) for no CPU that a run's figures show (~60 more writes of a
# 4 MB log). The log is flushed when the run closes it, as before.
WRITE_BUFFER_BYTES = 1 << 16
# A run's log in a results directory's events/ (harness.results.layout): `<run_id>.jsonl`. Every reader finds a
# run's log with find_event_log and lists logs with event_logs, never by building the name itself.
EVENT_LOG_SUFFIXES = (".jsonl",)
WRITTEN_SUFFIX = EVENT_LOG_SUFFIXES[0]


def event_log_path(events_dir: str | Path, run_id: str) -> Path:
    """Where a run's log is written."""
    return Path(events_dir) / f"{run_id}{WRITTEN_SUFFIX}"


def find_event_log(events_dir: str | Path, run_id: str) -> Path:
    """A run's log as it is on disk, in whichever layout wrote it (the written name when there is none)."""
    for suffix in EVENT_LOG_SUFFIXES:
        path = Path(events_dir) / f"{run_id}{suffix}"
        if path.is_file():
            return path
    return event_log_path(events_dir, run_id)


def event_log_run_id(path: str | Path) -> str | None:
    """The run id an event log's file name holds (None: not an event log's name)."""
    name = Path(path).name
    return next((name[: -len(suffix)] for suffix in EVENT_LOG_SUFFIXES if name.endswith(suffix)), None)


def event_logs(events_dir: str | Path) -> list[Path]:
    """The event logs in an events/ directory, in run id order."""
    directory = Path(events_dir)
    if not directory.is_dir():
        return []
    found = [path for path in directory.iterdir() if path.is_file() and event_log_run_id(path)]
    return sorted(found, key=lambda path: event_log_run_id(path) or "")


class EventLog:
    def __init__(self, path: Path | None = None, *, in_memory: bool = True,
                 on_append: Callable[[dict[str, Any]], None] | None = None):
        """`in_memory`: also keep every event in `events` (needs a file when False);
        `on_append`: called with each event once it is logged."""
        if path is None and not in_memory:
            raise ValueError("an event log kept nowhere: give it a file or keep it in memory")
        self.path = path
        self._events: list[dict[str, Any]] | None = [] if in_memory else None
        self._count = 0
        self._on_append = on_append
        self._file = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "wb", buffering=WRITE_BUFFER_BYTES)

    @property
    def events(self) -> list[dict[str, Any]]:
        if self._events is None:
            raise RuntimeError(f"this run's events are not kept in memory: read them from {self.path} "
                               "(harness.conversation.events.read_events), or fold what you need from ctx.view")
        return self._events

    def append(self, type_: str, **fields: Any) -> dict[str, Any]:
        if not fields.keys().isdisjoint(OUTSIDE_TEXT_FIELDS):  # asked once: most events hold neither field
            for name in OUTSIDE_TEXT_FIELDS:
                if isinstance(fields.get(name), str):
                    fields[name] = scrub(fields[name])
        event = {"id": self._count, "type": type_, **fields}
        self._count += 1
        if self._events is not None:
            self._events.append(event)
        if self._file is not None:
            self._file.write(json_line(event))
        if self._on_append is not None:
            self._on_append(event)
        return event

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self.flush()
            self._file.close()
            self._file = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.events)

    def __len__(self) -> int:
        return self._count

    def of_type(self, type_: str) -> Iterator[dict[str, Any]]:
        return (e for e in self.events if e["type"] == type_)


def first_event(path: str | Path) -> dict[str, Any] | None:
    """A log's first event (its run_start) without reading the rest; None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            event = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    return event if isinstance(event, dict) else None


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Load an event file, naming the file and line of any corruption (missing file, bytes that are
    not UTF-8, a line that is not a JSON object, an id out of sequence)."""
    events = []
    if os.path.exists(path) and not os.path.isdir(path) and not os.path.isfile(path):  # a FIFO would block the open
        raise ReplayMismatch(f"{path}: cannot read event log: not a regular file (a device, FIFO or socket)")
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise ReplayMismatch(f"{path}: cannot read event log: {exc.strerror}") from exc
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                check_depth(line, f"{path}:{number}")
                event = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise ReplayMismatch(f"{path}:{number}: not UTF-8 text (byte {exc.start} of the line)") from exc
            except json.JSONDecodeError as exc:
                raise ReplayMismatch(f"{path}:{number}: not a JSON event ({exc.msg})") from exc
            if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                raise ReplayMismatch(f"{path}:{number}: not an event (a JSON object with a type), got "
                                     f"{type(event).__name__}")
            if event.get("id") != len(events):
                raise ReplayMismatch(f"{path}:{number}: event id {event.get('id')!r}, expected {len(events)}")
            events.append(event)
    return events
