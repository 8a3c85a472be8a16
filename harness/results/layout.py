"""The results layout (a contract that tools and notebooks read without importing the harness):

    results/<run-name>/config.json          resolved configuration, versions, seeds
    results/<run-name>/runs.jsonl           one JSON object per finished run (per cell: the last row of a
                                            run_id counts; a rerun appends, then the file is rewritten)
    results/<run-name>/runs.quarantine.jsonl  lines `--resume --repair` took out of runs.jsonl, with reasons
    results/<run-name>/.lock                the writer's lock (harness.results.lock); readers ignore it
    results/<run-name>/events/<run_id>.jsonl.gz  each run's event log (or .jsonl, as written before compression),
                                            its large texts in events/blobs/ (harness.conversation.events)
    results/<run-name>/summary.csv          one row per strategy, and per strategy x family
    results/<run-name>/plots/*.png
"""
from __future__ import annotations

import json
import math
import os
import platform
from importlib import metadata
from dataclasses import dataclass
from pathlib import Path
from functools import lru_cache
from typing import Any, Iterable, Iterator

from harness.core.errors import ConfigError
from harness.core.secrets import scrub
from harness.core.user_files import INT64_MAX, MAX_DEPTH, json_depth, open_regular

RUNS_FILE = "runs.jsonl"
QUARANTINE_FILE = "runs.quarantine.jsonl"
CONFIG_FILE = "config.json"
SUMMARY_FILE = "summary.csv"
SWEEP_FILE = "sweep.json"  # a sweep's grid and points (harness.sweep)
TUNING_FILE = "tuning.csv"  # a sweep's tuning table (harness.results.tuning)
EVENTS_DIR = "events"
PLOTS_DIR = "plots"


LIBRARIES = ("pydantic-ai-harness", "pydantic-ai-slim", "inspect-ai", "anthropic", "openhands-sdk", "langchain",
             "langchain-core", "langgraph", "strands-agents", "headroom-ai", "google-adk")


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for package in ("ctxbench", "litellm", "datasets", "pandas", "matplotlib"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "unknown"
    for package in LIBRARIES:  # the real libraries adapters run, where installed
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


def _jsonl_line(record: dict[str, Any]) -> str:
    """One line of runs.jsonl (or its quarantine), scrubbed of every known secret; a string UTF-8 cannot hold
    (a lone surrogate a model's JSON came with) is written as an ASCII escape, which reads back the same."""
    line = scrub(json.dumps(record, ensure_ascii=False, default=str))
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = scrub(json.dumps(record, default=str))
    return line + "\n"


class ResultsDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.events_dir = self.path / EVENTS_DIR
        self.events_dir.mkdir(parents=True, exist_ok=True)
        (self.path / PLOTS_DIR).mkdir(exist_ok=True)

    @property
    def runs_file(self) -> Path:
        return self.path / RUNS_FILE

    def write_config(self, config: dict[str, Any], *, command_line: list[str] | None = None) -> None:
        """Write config.json (`config` redacted by the caller) with the command line (the `ctxbench`
        arguments, or None for a call from Python); the text is scrubbed of every known secret."""
        data = {**config, "versions": versions(), "argv": command_line}
        tmp = self.path / (CONFIG_FILE + ".tmp")
        tmp.write_text(scrub(json.dumps(data, indent=2, sort_keys=True, default=str)) + "\n", encoding="utf-8")
        os.replace(tmp, self.path / CONFIG_FILE)

    def append_run(self, row: dict[str, Any]) -> None:
        """Append one whole line and flush it to disk, so a crash never leaves half a row."""
        line = _jsonl_line(row)
        with open(self.runs_file, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def rewrite_runs(self, rows: Iterable[dict[str, Any]]) -> None:
        """Replace runs.jsonl by `rows` at once (tmp, fsync, rename): a crash leaves the old file or the new."""
        tmp = self.path / (RUNS_FILE + ".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.writelines(_jsonl_line(row) for row in rows)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.runs_file)
        directory = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself reaches the disk
        finally:
            os.close(directory)

    def compact(self) -> None:
        """Keep one row per run_id in runs.jsonl, the last, when reruns appended a second (a file with a bad
        line is left for `--resume --repair` to show)."""
        lines = scan_runs(self.runs_file)
        if any(line.problem for line in lines):
            return
        rows = latest_rows(line.row for line in lines if line.row is not None)
        if len(rows) < len(lines):
            self.rewrite_runs(rows)

    def quarantine(self, lines: Iterable[tuple[RunsLine, str]]) -> None:
        """Append lines taken out of runs.jsonl, each with its line number and why, to runs.quarantine.jsonl."""
        with open(self.path / QUARANTINE_FILE, "a", encoding="utf-8") as handle:
            for line, reason in lines:
                handle.write(_jsonl_line({"line": line.number, "reason": reason, "text": line.text}))
            handle.flush()
            os.fsync(handle.fileno())

    def repair(self) -> int:
        """Cut a torn last line (left by a kill mid-write) from runs.jsonl; return bytes removed."""
        if not self.runs_file.exists():
            return 0
        data = self.runs_file.read_bytes()
        keep = len(data)
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
        else:
            last_start = data.rfind(b"\n", 0, max(keep - 1, 0)) + 1
            try:
                if data[last_start:keep].strip():
                    json.loads(data[last_start:keep])
            except json.JSONDecodeError:
                keep = last_start
        if keep < len(data):
            with open(self.runs_file, "r+b") as handle:
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())
        return len(data) - keep


@dataclass(frozen=True)
class RunsLine:
    """One non-blank line of runs.jsonl: its row, or what is wrong with it. The line's text is not kept (a
    report of 100,000 rows would hold the file twice): `text` reads it back from its place in the file."""

    number: int  # 1-based, as an editor shows it
    source: Path
    start: int  # the line's bytes in `source`, without its newline
    end: int
    row: dict[str, Any] | None
    problem: str | None = None
    parsed: bool = True  # the line is UTF-8 JSON (a row or not); a torn line is not

    @property
    def text(self) -> str:
        """The line as the file holds it (bytes that are not UTF-8 replaced), for the quarantine."""
        with open_regular(self.source) as handle:
            handle.seek(self.start)
            return handle.read(self.end - self.start).decode("utf-8", "replace")


MAX_ROW_NUMBER = 2**53  # the largest integer a float holds exactly (pandas reads a column with a null as floats)
# The row schema `report` and `--resume` read by: text fields, flags, structured fields (objects and lists,
# never computed with), every other field a number or null; the fields reports group and pair by are not null
# (and, for a report, present: `read_runs(..., complete=True)`).
ROW_TEXT = ("run_id", "task_id", "family", "strategy", "strategy_name", "model", "termination", "error", "trace_path",
            "recorded_model", "cache_policy", "price_model", "cache_style")
ROW_REQUIRED = ("run_id", "task_id", "family", "strategy", "seed", "success")
ROW_FLAGS = ("success", "transient")
ROW_STRUCTURED = ("strategy_config", "strategy_thresholds", "libraries", "detail", "recorded_outcome")
ROW_STRUCTURED_SUFFIXES = ("_by_level", "_by_step")


def row_problem(row: dict[str, Any]) -> str | None:
    """What makes a row unreadable by `report` and `--resume` (None: nothing), as "a row ...": a field of the
    wrong type for the schema above, a seed outside [0, 2**63 - 1] (as `--seeds`), a number that is not
    finite or beyond +-MAX_ROW_NUMBER (a cost of NaN or 1e30 tokens would poison every mean)."""
    if not isinstance(row.get("run_id"), str):
        return "a row without a run_id"
    for name, value in row.items():
        kind = field_kind(name)
        kind_of = type(value)  # the usual fields of a good row pass here, without _field_problem's calls
        if kind == "structured" or (kind == "text" and kind_of is str) or (kind == "flag" and kind_of is bool) or (
                value is None and name not in ROW_REQUIRED) or (
                kind == "number" and (kind_of is float or kind_of is int) and name != "seed"
                and -MAX_ROW_NUMBER <= value <= MAX_ROW_NUMBER):
            continue
        problem = _field_problem(name, value)
        if problem:
            return f"a row whose field {name!r} is {_shown(value)}, {problem}"
    return None


def missing_fields(row: dict[str, Any]) -> str | None:
    """What a row lacks of the fields reports group and pair by (None: nothing), as "a row ..."."""
    missing = [name for name in ROW_REQUIRED if name not in row]
    return f"a row without {', '.join(map(repr, missing))}" if missing else None


@lru_cache(maxsize=4096)
def field_kind(name: str) -> str:
    """How the schema above reads a field: "text", "flag", "structured" or "number" (a row's checks look each
    name up once, not each row: a report checks every field of 100,000 rows)."""
    if name in ROW_TEXT:
        return "text"
    if name in ROW_FLAGS:
        return "flag"
    if name in ROW_STRUCTURED or name.endswith(ROW_STRUCTURED_SUFFIXES):
        return "structured"
    return "number"


def _field_problem(name: str, value: Any) -> str | None:
    if value is None:
        return "not set" if name in ROW_REQUIRED else None
    kind = field_kind(name)
    if kind == "text":
        return None if isinstance(value, str) else "not a string"
    if kind == "flag":
        return None if isinstance(value, bool) else "not true or false"
    if kind == "structured":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "not a number or null"
    if name == "seed" and not (isinstance(value, int) and 0 <= value <= INT64_MAX):
        return "not an integer in [0, 2**63 - 1]"
    if name != "seed" and not (math.isfinite(value) and abs(value) <= MAX_ROW_NUMBER):
        return "not a finite number within +-2**53"
    return None


def _shown(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else f"{value!r:.80}"


def _parse_line(number: int, raw: bytes, at: tuple[Path, int, int]) -> RunsLine:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return RunsLine(number, *at, None, "not UTF-8 text", parsed=False)
    # No deeper than its count of opening brackets: most rows are shown shallow by two counts, not a scan.
    depth = json_depth(text) if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH else 0
    if depth > MAX_DEPTH:
        return RunsLine(number, *at, None, f"nested {depth} arrays/objects deep (at most {MAX_DEPTH})")
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        return RunsLine(number, *at, None, f"not a whole JSON row ({exc.msg})", parsed=False)
    if not isinstance(row, dict):
        return RunsLine(number, *at, None, f"a JSON {type(row).__name__}, not a row object")
    problem = row_problem(row)
    return RunsLine(number, *at, None if problem else row, problem)


def iter_runs(runs_file: str | Path) -> Iterator[RunsLine]:
    """Every non-blank line of a runs.jsonl, parsed, read line by line (memory: one line at a time besides
    the rows); a last line that does not parse (torn by a kill mid-write) is left out, a bad line before it is
    yielded with its problem when the next line is read."""
    runs_file = Path(runs_file)
    if not runs_file.exists():
        return
    held: RunsLine | None = None  # a line that did not parse: a torn last line, unless another follows
    with open_regular(runs_file) as handle:
        number = offset = 0
        try:
            for raw in handle:
                number, start, offset = number + 1, offset, offset + len(raw)
                raw = raw[:-1] if raw.endswith(b"\n") else raw
                if not raw.strip():
                    continue
                if held is not None:
                    yield held
                    held = None
                line = _parse_line(number, raw, (runs_file, start, start + len(raw)))
                if line.parsed:
                    yield line
                else:
                    held = line
        except OSError as exc:
            raise ConfigError(f"{runs_file}: cannot read: {exc.strerror}") from exc


def scan_runs(runs_file: str | Path) -> list[RunsLine]:
    """iter_runs' lines as a list."""
    return list(iter_runs(runs_file))


def latest_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run_id, the last one (a rerun's row follows the one it replaces)."""
    by_id: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_id.pop(row["run_id"], None)
        by_id[row["run_id"]] = row
    return list(by_id.values())


def checked_rows(path: str | Path, complete: bool = False) -> Iterator[dict[str, Any]]:
    """The rows of a results directory's runs.jsonl (or of that file) in file order, every one (a rerun's too),
    read line by line; a bad line before the last is a ConfigError naming it. `complete`: a row must also hold
    every field reports group and pair by (ROW_REQUIRED)."""
    runs_file = Path(path) / RUNS_FILE if Path(path).is_dir() else Path(path)
    for line in iter_runs(runs_file):
        problem = line.problem or (complete and line.row is not None and missing_fields(line.row))
        if problem:
            raise ConfigError(f"{runs_file}: line {line.number} is {problem}; move it aside with "
                              f"`ctxbench run --resume {runs_file.parent} --repair`")
        if line.row is not None:
            yield line.row


def read_runs(path: str | Path, complete: bool = False) -> list[dict[str, Any]]:
    """Rows of a results directory's runs.jsonl, the last per run_id (a torn last line, from a kill, is
    skipped); a bad line before the last is a ConfigError naming it. `complete`: a row must also hold every
    field reports group and pair by (ROW_REQUIRED)."""
    return latest_rows(checked_rows(path, complete))
