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

from harness.errors import ReplayMismatch
from harness.fast_json import json_line


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
            self._file.write(json_line(event))
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
