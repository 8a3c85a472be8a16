"""The append-only event log of one run, mirrored line by line to `events/<run_id>.jsonl.gz`.

Nothing is ever removed from the log. Strategies change what the model sees only by
appending events that carry `view_ops` (see harness.conversation.view), so the view that was sent can
always be rebuilt from the file alone.

A run's log lives in its file: the runner keeps none of its events in memory
(`in_memory=False`) and folds what it needs as they are appended (the view, the metrics).
A log without a file keeps its events in `events`, for tests and scripts to read back.

On disk a log is gzip'd JSON Lines (`zcat` reads it, as do pandas, polars and DuckDB), and a large message
content is a reference, `{"$blob": "<sha256>", "pack": ..., "at": ..., "size": ...}`, to the text stored once in
a pack in `events/blobs/` (harness.conversation.blobs). read_events gives the events back whole, as they were
appended. Logs written before compression (`events/<run_id>.jsonl`, every text inline) are read the same way.
"""
from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from isal import isal_zlib

from harness.conversation.blobs import (BLOB_MIN_CHARS, BLOB_REF, BLOBS_DIR, COMPRESS_LEVEL, GZIP_WBITS, BlobStore,
                                       is_reference)
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
# A run's log in a results directory's events/ (harness.results.layout): `<run_id>.jsonl.gz`, or `<run_id>.jsonl`
# as written before compression. Every reader finds a run's log with find_event_log and lists logs with
# event_logs, never by building the name itself.
EVENT_LOG_SUFFIXES = (".jsonl.gz", ".jsonl")
WRITTEN_SUFFIX = EVENT_LOG_SUFFIXES[0]
# The texts stored as blobs, the ones that recur from run to run: a message's content (a tool output, the task's
# statement) and a top-level `content` (a tool output a strategy offloaded, harness.conversation.context).
STORED_FIELD = "content"


def event_log_name(run_id: str) -> str:
    """The file name a run's log is written under."""
    return f"{run_id}{WRITTEN_SUFFIX}"


def event_log_path(events_dir: str | Path, run_id: str) -> Path:
    """Where a run's log is written."""
    return Path(events_dir) / event_log_name(run_id)


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


def is_compressed(path: str | Path) -> bool:
    return str(path).endswith(".gz")


def blob_store(log_path: str | Path) -> BlobStore:
    """The blob store beside a log (its events/ directory's)."""
    return BlobStore(Path(log_path).parent / BLOBS_DIR)


class _PlainFile:
    """A log file as written before compression (kept for a log a caller names `.jsonl`)."""

    def __init__(self, path: Path):
        self._file = open(path, "wb", buffering=WRITE_BUFFER_BYTES)
        self.write = self._file.write

    def sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self.sync()
        self._file.close()


class _CompressedFile:
    """A log file written as one gzip member: a line costs one compress call, rarely a write."""

    def __init__(self, path: Path):
        self._file = open(path, "wb", buffering=WRITE_BUFFER_BYTES)
        self._compressor = isal_zlib.compressobj(COMPRESS_LEVEL, isal_zlib.DEFLATED, GZIP_WBITS)

    def write(self, data: bytes) -> None:
        self._file.write(self._compressor.compress(data))

    def sync(self) -> None:
        """What was written so far, on disk and readable (a sync flush: the stream goes on after it)."""
        self._file.write(self._compressor.flush(isal_zlib.Z_SYNC_FLUSH))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.write(self._compressor.flush())
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()


def _large(value: Any) -> bool:
    return isinstance(value, str) and len(value) >= BLOB_MIN_CHARS


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
        self._file: _PlainFile | _CompressedFile | None = None
        self._blobs: BlobStore | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            if is_compressed(path):
                self._file, self._blobs = _CompressedFile(path), blob_store(path)
            else:
                self._file = _PlainFile(path)

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
            self._file.write(json_line(self._stored(event) if self._blobs is not None else event))
        if self._on_append is not None:
            self._on_append(event)
        return event

    def _stored(self, event: dict[str, Any]) -> dict[str, Any]:
        """The event as its line holds it: a large content (top-level or a message's) as a reference to the
        text in the blob store, which is on disk before the line is written."""
        content, message = event.get(STORED_FIELD), event.get("message")
        inner = message.get(STORED_FIELD) if isinstance(message, dict) else None
        if not _large(content) and not _large(inner):
            return event
        stored = dict(event)
        if _large(content):
            stored[STORED_FIELD] = self._reference(content)
        if _large(inner):
            stored["message"] = {**message, STORED_FIELD: self._reference(inner)}
        return stored

    def _reference(self, text: str) -> str | dict[str, Any]:
        reference = self._blobs.put(text) if self._blobs is not None else None
        return text if reference is None else reference

    def flush(self) -> None:
        """Put what was appended so far on disk, the blobs it refers to first."""
        if self._blobs is not None:
            self._blobs.commit()
        if self._file is not None:
            self._file.sync()

    def close(self) -> None:
        """The log's blobs, then the log, on disk: the runner appends the run's row only after this."""
        if self._blobs is not None:
            self._blobs.commit()
        if self._file is not None:
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
        with _open(path) as handle:
            event = json.loads(handle.readline())
        return _resolved(event, _Blobs(path)) if isinstance(event, dict) else None
    except (OSError, EOFError, zlib.error, ValueError):
        return None


def _open(path: str | Path) -> Any:
    return gzip.open(path, "rb") if is_compressed(path) else open(path, "rb")


class _Blobs:
    """The texts a log refers to, read from its blob store once each."""

    def __init__(self, log_path: str | Path):
        self.store = blob_store(log_path)
        self.texts: dict[str, str] = {}  # by hash

    def text(self, reference: dict[str, Any]) -> str:
        digest = reference[BLOB_REF]
        if digest not in self.texts:
            self.texts[digest] = self.store.get(reference)
        return self.texts[digest]


def _resolved(event: dict[str, Any], blobs: _Blobs) -> dict[str, Any]:
    """The event with the texts its line refers to put back (in place)."""
    if is_reference(event.get(STORED_FIELD)):
        event[STORED_FIELD] = blobs.text(event[STORED_FIELD])
    message = event.get("message")
    if isinstance(message, dict) and is_reference(message.get(STORED_FIELD)):
        message[STORED_FIELD] = blobs.text(message[STORED_FIELD])
    return event


def _numbered_lines(path: str | Path, handle: Any) -> Iterable[tuple[int, bytes]]:
    """The file's lines, numbered; a compressed log cut short or damaged (a run killed while writing it, a
    copy torn) is an error naming the line where it breaks."""
    number = 0
    try:
        for number, line in enumerate(handle, 1):
            yield number, line
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ReplayMismatch(f"{path}:{number + 1}: the compressed log breaks off here ({exc}); a run killed while "
                             "its log was written is run again by `ctxbench run --resume`") from exc


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Load an event file (compressed or not), naming the file and line of any corruption (missing file,
    bytes that are not UTF-8, a line that is not a JSON object, an id out of sequence, a compressed stream
    cut short, a stored text missing)."""
    events: list[dict[str, Any]] = []
    if os.path.exists(path) and not os.path.isdir(path) and not os.path.isfile(path):  # a FIFO would block the open
        raise ReplayMismatch(f"{path}: cannot read event log: not a regular file (a device, FIFO or socket)")
    try:
        handle = _open(path)
    except OSError as exc:
        raise ReplayMismatch(f"{path}: cannot read event log: {exc.strerror}") from exc
    blobs = _Blobs(path)
    with handle:
        for number, line in _numbered_lines(path, handle):
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
            try:
                events.append(_resolved(event, blobs))
            except OSError as exc:
                raise ReplayMismatch(f"{path}:{number}: its content is stored in {blobs.store.directory}, which "
                                     f"does not have it ({exc.strerror})") from exc
            except (ValueError, UnicodeDecodeError) as exc:
                raise ReplayMismatch(f"{path}:{number}: its stored content cannot be read: {exc}") from exc
    return events
