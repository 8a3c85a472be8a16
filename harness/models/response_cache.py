"""Opt-in response cache (`--cache DIR`): a finished request is never paid for twice.

SQLite, one file per directory, safe across threads and worker processes. The key covers the
model, API base, messages, tools, request parameters (secrets left out) and the repeat index:
how many identical requests this run made before, so a run that legitimately repeats a request
gets its own answer for each repeat and a rerun replays the run exactly.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError
from harness.core.tokens import stable_hash

CACHE_FILE = "responses.sqlite"


def request_key(model: str, api_base: str | None, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                params: dict[str, Any]) -> str:
    """The identity of a request, without its repeat index."""
    return stable_hash([model, api_base or "", messages, tools or [], params])


class ResponseCache:
    def __init__(self, directory: str | Path):
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self.path = path / CACHE_FILE
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT NOT NULL, repeat INTEGER NOT NULL, "
                         "model TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (key, repeat))")

    def get(self, key: str, repeat: int) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ? AND repeat = ?", (key, repeat)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, repeat: int, model: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses (key, repeat, model, value) VALUES (?, ?, ?, ?)",
                             (key, repeat, model, json.dumps(value, separators=(",", ":"))))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


_open: dict[str, ResponseCache] = {}
_open_lock = threading.Lock()


def _forget_inherited() -> None:
    """In a forked child: open its own connections (an SQLite connection must not cross a fork)."""
    global _open_lock
    _open_lock = threading.Lock()
    _open.clear()


os.register_at_fork(after_in_child=_forget_inherited)


def check_cache(directory: str | Path, what: str = "--cache") -> None:
    """An existing cache file must be an SQLite database: a garbage one fails here, before any model
    call, and not in every run's first request."""
    path = Path(directory) / CACHE_FILE
    if not path.exists():
        return
    try:
        db = sqlite3.connect(path)
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise ConfigError(f"{what} {directory}: {path} is not a response cache ({exc})") from exc


def open_cache(directory: str) -> ResponseCache:
    """One connection per directory per process, shared by its run threads."""
    key = str(Path(directory).resolve())
    with _open_lock:
        if key not in _open:
            _open[key] = ResponseCache(directory)
        return _open[key]
