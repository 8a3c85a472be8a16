"""Reading trace files: JSON (every format's), and the JSON / JSONL files that hold one conversation
per line or per list item (OpenAI chat, Anthropic Messages) with the name each trace gets by default."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.core import user_files
from harness.core.errors import ConfigError
from harness.traces import TraceError
from harness.core.user_files import check_depth

ID_FIELDS = ("id", "task_id", "conversation_id")

Fail = Callable[[str], TraceError]  # makes the error for one message: file, trace, index, problem


def load_json_records(path: Path) -> list[tuple[str, Any]]:
    """The records of a .json / .jsonl file, each with its default trace name `<stem>-<n>` (n from
    1: the JSONL line, or the position in a JSON list of conversations; a single one: `<stem>`)."""
    text = read_text(path)
    if path.suffix == ".jsonl":
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    check_depth(line, f"{path}: line {number}")
                    records.append((f"{path.stem}-{number}", json.loads(line)))
                except json.JSONDecodeError as error:
                    raise TraceError(path, f"line {number} is not JSON ({error.msg})",
                                     trace=f"{path.stem}-{number}") from None
        return records
    data = _parse(path, text)
    if isinstance(data, list) and data and isinstance(data[0], (list, dict)) and "role" not in data[0]:
        return [(f"{path.stem}-{n}", record) for n, record in enumerate(data, start=1)]
    return [(path.stem, data)]


def jsonl_records(path: Path) -> Iterator[tuple[int, Any]]:
    """Each record of a JSONL file with its line number, read a line at a time (a coding agent's session log runs
    to tens of MB); blank lines are skipped. TraceError names the file and the line that is not UTF-8 or not JSON."""
    if not path.is_file():
        read_text(path)  # refuses a directory, FIFO or device by name, without waiting on a FIFO
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise TraceError(path, f"not UTF-8 text ({error.reason} at byte {error.start})", line=number) from None
                check_depth(text, f"{path}: line {number}")
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as error:
                    raise TraceError(path, f"not JSON ({error.msg}, column {error.colno})", line=number) from None
                yield number, record
    except OSError as error:
        raise TraceError(path, f"cannot read: {error.strerror}") from None


def load_json(path: Path) -> Any:
    """A .json / .traj file parsed, or TraceError naming it."""
    return _parse(path, read_text(path))


def _parse(path: Path, text: str) -> Any:
    check_depth(text, str(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise TraceError(path, f"not readable as JSON ({error.msg}, line {error.lineno})") from None


def read_text(path: Path) -> str:
    try:
        return user_files.read_text(path)
    except ConfigError as error:
        raise TraceError(path, str(error).removeprefix(f"{path}: ")) from None


def record_id(record: Any, default: str) -> str:
    """A conversation's own id (`id`, `task_id`, `conversation_id`), else the default name."""
    if isinstance(record, dict):
        for name in ID_FIELDS:
            if record.get(name) not in (None, ""):
                return str(record[name])
    return default


def messages_with_errors(raw: list[Any], path: Path | str, trace_id: str,
                         roles: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any], Fail]]:
    """Each message that is an object with one of `roles`, its index, and the error maker for it."""
    for index, message in enumerate(raw):
        def fail(problem: str, index: int = index) -> TraceError:
            return TraceError(path, problem, trace=trace_id, index=index)

        if not isinstance(message, dict):
            raise fail(f"a message is an object, got {type(message).__name__}")
        if message.get("role") not in roles:
            raise fail(f"role must be one of {', '.join(roles)}, got {message.get('role')!r}")
        yield index, message, fail


def model_name(record: Any) -> str | None:
    """A conversation object's `model`, when it records one."""
    model = record.get("model") if isinstance(record, dict) else None
    return model if isinstance(model, str) else None
