"""The append-only event log of one run, mirrored line by line to `events/<run_id>.jsonl`.

Nothing is ever removed from the log. Strategies change what the model sees only by
appending events that carry `view_ops` (see harness.view), so the view that was sent can
always be rebuilt from the file alone.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

import orjson

from harness.errors import ReplayMismatch

_LINE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)  # events are trees
# orjson writes the same JSON ~4x faster (a run's results are most of what it writes). Its floats are
# spelled differently (0.00001 for 1e-05) but read back equal; NaN and infinities, which the json module
# writes as non-standard tokens, become null. What it refuses (str/int/dict subclasses, dataclasses,
# integers past 64 bits, lone surrogates) goes to the standard encoder instead.
_FAST_OPTIONS = (orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
                 | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_APPEND_NEWLINE)


def _refuse(value: Any) -> Any:
    raise TypeError(f"left to the standard encoder: {type(value).__name__}")


def event_line(event: dict[str, Any]) -> bytes:
    """One event as a line of UTF-8 JSON."""
    try:
        return orjson.dumps(event, default=_refuse, option=_FAST_OPTIONS)
    except TypeError:
        return (_LINE.encode(event) + "\n").encode("utf-8")


class EventLog:
    def __init__(self, path: Path | None = None):
        self.events: list[dict[str, Any]] = []
        self._file = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "wb")

    def append(self, type_: str, **fields: Any) -> dict[str, Any]:
        event = {"id": len(self.events), "type": type_, **fields}
        self.events.append(event)
        if self._file is not None:
            self._file.write(event_line(event))
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
        return len(self.events)

    def of_type(self, type_: str) -> Iterator[dict[str, Any]]:
        return (e for e in self.events if e["type"] == type_)


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Load an event file, naming the line of any corruption."""
    events = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReplayMismatch(f"{path}:{number}: not a JSON event ({exc.msg})") from exc
            if event.get("id") != len(events):
                raise ReplayMismatch(f"{path}:{number}: event id {event.get('id')!r}, expected {len(events)}")
            events.append(event)
    return events
