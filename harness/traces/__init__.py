"""Recorded agent trajectories ("traces"), read from the formats teams already have.

Each format is one module in this package exposing:

    FORMAT: str                                   # the name users pass to --format, and a row's `family`
    def detect(path: Path, head: Any) -> bool     # whether a file holds this format (head: parsed JSON
                                                  # of a .json file, the first JSONL record, or None)
    def read(path: Path) -> list[Trace]           # every trace in the file, or TraceError
    def is_trace_dir(path: Path) -> bool          # optional: a directory that is one trace as a whole
                                                  # (listed as one candidate, detected and read as such)

A format that takes options (FORMAT_OPTIONS, e.g. claude-code's `include_sidechains`) declares them
as keyword-only parameters of `read`; `load_traces(paths, fmt, **options)` hands each format only the
options it declares. `load_traces` finds each file's format (or uses the one given) and returns the traces.
Every format becomes the same plain data (`Trace`): OpenAI-style chat messages, so the replay
(harness.traces.replay) knows no format and a format knows nothing of the replay.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError
from harness.core.user_files import check_path_text

Message = dict[str, Any]


class TraceError(ConfigError):
    """A trace that cannot be read: names the file, the trace and the message index, or the line of a
    file read line by line (exit 2)."""

    def __init__(self, path: Path | str, problem: str, *, trace: str | None = None, index: int | None = None,
                 line: int | None = None):
        where = str(path)
        if trace is not None:
            where += f", trace {trace!r}"
        if index is not None:
            where += f", message {index}"
        if line is not None:
            where += f", line {line}"
        super().__init__(f"{where}: {problem}")


class NoTrace(TraceError):
    """A file of a format that holds nothing to replay (an empty session, a subagent's thread read without
    its option): refused when named on its own, skipped in a directory, as files no format claims are."""


@dataclass
class Trace:
    """One recorded trajectory as OpenAI chat messages.

    `messages`: system / user / assistant / tool messages in recorded order. An assistant message
    has `content` (str or None) and optionally `tool_calls` ([{id, type: "function", function:
    {name, arguments: JSON string}}]); a tool message has `tool_call_id`, `name` and `content` (str).
    Content is always a string (formats with content blocks join their text parts). Consecutive
    assistant messages that a format splits are kept as recorded; the replay treats each assistant
    message as one model response.
    `usage`: recorded usage per assistant message, keyed by that message's index in `messages`
    ({"input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens"}, optionally
    "cache_write_1h_tokens": ints or None), where the format records it (Inspect model events,
    mini-swe-agent stats, ctxbench logs, coding agents' session logs); empty otherwise. `input_tokens`
    is everything the request sent (cache reads and writes included), `cached_tokens` the cache reads.
    `times`: when each message was recorded (Unix seconds), by index, where the format records it: a
    replay's simulated clock follows them, so a cache entry expires when it expired for the recorded agent.
    `resets`: the recorded agent's own context resets (its compaction), by the index of the first
    message it kept: from there on its requests held no earlier message, so a replay drops them too
    under every strategy. Value: what reset it (e.g. "compaction").
    `recorded_input_tokens`: the trace's total recorded input tokens over every model call, where
    the format records them (summed from per-call usage, or a total such as SWE-agent's
    `tokens_sent`, which counts calls that left no message too), else None.
    `outcome`: the recorded result if any (tau-bench `reward`, SWE-agent exit status, Inspect score).
    """

    trace_id: str
    source_format: str
    path: str
    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)  # OpenAI function-tool schemas, when recorded
    usage: dict[int, dict[str, int | None]] = field(default_factory=dict)
    recorded_input_tokens: int | None = None
    outcome: dict[str, Any] = field(default_factory=dict)
    model: str | None = None  # the model that recorded it, when known
    times: dict[int, float] = field(default_factory=dict)
    resets: dict[int, str] = field(default_factory=dict)
    agent_version: str | None = None  # the recording agent's version (e.g. Claude Code's "2.1.38"), when recorded


ROLES = ("system", "user", "assistant", "tool")


def check_trace(trace: Trace) -> Trace:
    """Refuse what no replay can follow, naming file, trace and message index (TraceError)."""
    if not trace.messages:
        raise TraceError(trace.path, "the trace holds no messages", trace=trace.trace_id)
    if not any(m.get("role") == "assistant" for m in trace.messages):
        raise TraceError(trace.path, "the trace holds no assistant message to replay", trace=trace.trace_id)
    for index in trace.resets:
        if not 0 < index < len(trace.messages):
            raise TraceError(trace.path, f"a context reset at message {index} lies outside the trace's "
                                         f"{len(trace.messages)} messages", trace=trace.trace_id)
    open_calls: set[str] = set()
    for index, message in enumerate(trace.messages):
        def bad(problem: str) -> TraceError:
            return TraceError(trace.path, problem, trace=trace.trace_id, index=index)

        role = message.get("role")
        if role not in ROLES:
            raise bad(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        content = message.get("content")
        if not (isinstance(content, str) or (content is None and role == "assistant")):
            raise bad(f"content must be a string, got {type(content).__name__}")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if not (isinstance(function, dict) and isinstance(call.get("id"), str) and call["id"]
                        and isinstance(function.get("name"), str) and isinstance(function.get("arguments"), str)):
                    raise bad("a tool call needs an id, a function name and arguments as a string")
                open_calls.add(call["id"])
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                raise bad(f"tool result {call_id!r} answers no earlier tool call")
    return trace


# ----- the formats: --format name -> module of this package, in the order auto-detection tries them
# (the most specific first: a format whose files another's detector could also claim comes later).
FORMAT_MODULES: dict[str, str] = {
    "ctxbench": "harness.traces.ctxbench_log",
    "inspect": "harness.traces.inspect_log",
    "openhands": "harness.traces.openhands_events",
    "tau-bench": "harness.traces.tau_bench",
    "mini-swe-agent": "harness.traces.mini_swe_agent",
    "swe-agent": "harness.traces.swe_agent",
    "claude-code": "harness.traces.claude_code",
    "codex": "harness.traces.codex_cli",
    "anthropic": "harness.traces.anthropic_messages",
    "openai": "harness.traces.openai_chat",
}
FORMATS = ("auto", *FORMAT_MODULES)
# The extra a format's module needs beyond the core (pip install 'ctxbench[EXTRA]').
FORMAT_EXTRAS = {"inspect": "inspect"}
# The options a format's `read` takes (keyword-only), by --format name: load_traces passes each format its own.
FORMAT_OPTIONS: dict[str, tuple[str, ...]] = {"claude-code": ("include_sidechains",)}
TRACE_SUFFIXES = (".json", ".jsonl", ".jsonl.gz", ".traj", ".eval")  # .traj.json ends in .json


def format_module(fmt: str) -> Any:
    """The module reading `fmt`, imported now (lazily: a missing module or extra breaks that format alone)."""
    import importlib

    if fmt not in FORMAT_MODULES:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    name = FORMAT_MODULES[fmt]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            raise ConfigError(f"trace format {fmt!r} is not available in this build ({name} is missing)") from exc
        extra = FORMAT_EXTRAS.get(fmt)
        hint = f"install the `{extra}` extra: pip install 'ctxbench[{extra}]'" if extra else f"install {exc.name}"
        raise ConfigError(f"trace format {fmt!r} needs {exc.name}: {hint}") from exc


def trace_files(path: Path) -> list[Path]:
    """A file or a trace directory as given, or a directory's trace files and trace directories (a format's
    `is_trace_dir`, not descended into), recursively, in sorted order."""
    import os

    if not path.exists():
        raise TraceError(path, "no such file or directory")
    if not path.is_dir() or is_trace_dir(path):
        return [path]
    found = []
    for root, directories, files in os.walk(path):
        here = Path(root)
        claimed = [name for name in directories if is_trace_dir(here / name)]
        directories[:] = sorted(set(directories) - set(claimed))
        found += [here / name for name in claimed]
        found += [here / name for name in files if name.endswith(TRACE_SUFFIXES) and (here / name).is_file()]
    return sorted(found)


def is_trace_dir(path: Path) -> bool:
    """Whether an available format reads this directory as one trace."""
    for fmt in FORMAT_MODULES:
        try:
            module = format_module(fmt)
        except ConfigError:
            continue
        if getattr(module, "is_trace_dir", None) and module.is_trace_dir(path):
            return True
    return False


def read_head(path: Path) -> Any:
    """What detectors look at: a .json/.traj file parsed, a .jsonl file's first record, else None (an .eval
    file, a trace directory)."""
    import gzip
    import json
    import zlib

    from harness.traces.records import load_json, read_text
    from harness.core.user_files import check_depth

    if path.suffix == ".eval" or path.is_dir():
        return None
    if not path.name.endswith((".jsonl", ".jsonl.gz")):
        return load_json(path)
    try:
        if not path.is_file():
            read_text(path)  # refuses a FIFO, device or directory by name, without waiting on a FIFO
        opened = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")
        with opened as handle:  # the first record only: a JSONL file may be large
            line = next((line for line in handle if line.strip()), "")
        check_depth(line, f"{path}: its first record")
        return json.loads(line) if line else None
    except UnicodeDecodeError as exc:
        raise TraceError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"its first record is not valid JSON ({exc.msg}, column {exc.colno})") from exc
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise TraceError(path, f"not a whole gzip file ({exc})") from exc
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror}") from exc


def detect_format(path: Path, head: Any) -> tuple[str | None, list[str], dict[str, str]]:
    """(the first format claiming the file or None, the formats tried, the unavailable ones and why)."""
    tried, unavailable = [], {}
    for fmt in FORMAT_MODULES:
        try:
            module = format_module(fmt)
        except ConfigError as exc:
            unavailable[fmt] = str(exc)
            continue
        tried.append(fmt)
        if module.detect(path, head):
            return fmt, tried, unavailable
    return None, tried, unavailable


def load_traces(paths: list[str | Path], fmt: str = "auto", **options: Any) -> list[Trace]:
    """Every trace in these files and directories, each checked (check_trace); TraceError otherwise.

    A file given by name must be a trace; in a directory, files no format claims are skipped
    (a results directory's runs.jsonl, config.json), and so are files holding nothing to replay
    (NoTrace), but a directory without any trace is an error.
    Trace ids that clash are made unique with their file's name (`id@file`), then a count.
    `options`: format options (FORMAT_OPTIONS); each format's reader gets the ones it declares.
    """
    if fmt != "auto":
        format_module(fmt)
    _check_options(fmt, options)
    traces: list[Trace] = []
    for given in paths:
        root = Path(check_path_text(str(given), "trace path"))
        files = trace_files(root)
        found = 0
        empty: list[str] = []  # why the files holding nothing to replay were skipped
        for path in files:
            if fmt == "auto":
                chosen, tried, unavailable = detect_format(path, read_head(path))
                if chosen is None:
                    if root.is_dir():
                        continue
                    missing = "".join(f"; {name} unavailable: {why}" for name, why in unavailable.items())
                    raise TraceError(path, f"no trace format recognizes this file (tried {', '.join(tried)}{missing}); "
                                           "give --format to see what the format's reader objects to")
            else:
                chosen = fmt
            declared = FORMAT_OPTIONS.get(chosen, ())
            try:
                read = format_module(chosen).read(path, **{k: v for k, v in options.items() if k in declared})
            except NoTrace as skipped:
                if root.is_dir():
                    empty.append(str(skipped))
                    continue
                raise
            traces.extend(check_trace(trace) for trace in read)
            found += len(read)
        if not found:
            held = f"; {len(empty)} held nothing to replay, e.g. {empty[0]}" if empty else ""
            raise TraceError(root, f"holds no trace ({len(files)} candidate file(s) with suffixes "
                                   f"{', '.join(TRACE_SUFFIXES)} or trace directories{held}; formats: "
                                   f"{', '.join(FORMAT_MODULES)})")
    return _unique_ids(traces)


def _check_options(fmt: str, options: dict[str, Any]) -> None:
    """Refuse an option no format declares, or one the format given does not take (ConfigError)."""
    for name in options:
        takers = [f for f, names in FORMAT_OPTIONS.items() if name in names]
        if not takers:
            raise ConfigError(f"no trace format takes the option {name!r}")
        if fmt != "auto" and fmt not in takers:
            raise ConfigError(f"the option {name!r} is for the {', '.join(takers)} format, not {fmt}")


def _unique_ids(traces: list[Trace]) -> list[Trace]:
    from collections import Counter

    counts = Counter(trace.trace_id for trace in traces)
    seen: set[str] = set()
    for trace in traces:
        if counts[trace.trace_id] > 1:
            trace.trace_id = f"{trace.trace_id}@{Path(trace.path).name}"
        base, number = trace.trace_id, 1
        while trace.trace_id in seen:
            number += 1
            trace.trace_id = f"{base}#{number}"
        seen.add(trace.trace_id)
    return traces
