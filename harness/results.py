"""The results layout (a contract that tools and notebooks read without importing the harness):

    results/<run-name>/config.json          resolved configuration, versions, seeds
    results/<run-name>/runs.jsonl           one JSON object per finished run
    results/<run-name>/events/<run_id>.jsonl  each run's event log
    results/<run-name>/summary.csv          one row per strategy, and per strategy x family
    results/<run-name>/plots/*.png
"""
from __future__ import annotations

import json
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.secrets import scrub

RUNS_FILE = "runs.jsonl"
CONFIG_FILE = "config.json"
SUMMARY_FILE = "summary.csv"
EVENTS_DIR = "events"
PLOTS_DIR = "plots"


LIBRARIES = ("pydantic-ai-harness", "pydantic-ai-slim", "inspect-ai", "openhands-sdk")


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
        line = scrub(json.dumps(row, ensure_ascii=False, sort_keys=False, default=str)) + "\n"
        with open(self.runs_file, "a", encoding="utf-8") as handle:
            handle.write(line)
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


def read_runs(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a results directory's runs.jsonl (a torn last line, from a kill, is skipped)."""
    runs_file = Path(path) / RUNS_FILE if Path(path).is_dir() else Path(path)
    rows = []
    if not runs_file.exists():
        return rows
    for line in runs_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows
