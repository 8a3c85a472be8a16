"""One writer per results directory.

Every invocation that writes a results directory (run, resume, sweep, traces, report) holds an
exclusive, non-blocking `fcntl.flock` on its `.lock` file for its whole life. The kernel drops the
lock when the holder's process ends, however it ends, so a lock that can be taken is free; if the
file still names a holder (one that died without releasing it), that holder is reported on stderr
and the lock taken over. The file is emptied on release and never deleted: deleting it would let
a process that opened the old file and one that created a new file both hold "the" lock.
Readers of the results layout ignore the file. A second `hold` in the same process (two threads of a
notebook) is a second writer too, refused like another process: flock locks belong to the open file.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from harness.core.errors import ConfigError

LOCK_FILE = ".lock"


def _holder(handle: Any) -> dict[str, Any]:
    """What the lock file says of its holder ({} when empty or not ours)."""
    handle.seek(0)
    try:
        data = json.loads(handle.read() or "{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "a process that has not written its pid yet"
    return (f"pid {holder.get('pid')} on {holder.get('host')} (`ctxbench {holder.get('command')}`, "
            f"started {holder.get('started')})")


@contextmanager
def hold(directory: str | Path, command: str) -> Iterator[None]:
    """Hold `directory`'s lock while the block runs; ConfigError at once if another process holds it.
    `command` names the invocation (run, resume, ...) in the file; never its arguments (they may hold secrets)."""
    directory = Path(directory)
    path = directory / LOCK_FILE
    try:
        handle = open(path, "a+", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{directory}: cannot open its lock file {path}: {exc.strerror}") from exc
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{directory} is in use by another ctxbench invocation: {_describe(_holder(handle))}; "
                              f"wait for it to end (one writer per results directory, {path})") from None
        stale = _holder(handle)
        if stale:
            print(f"ctxbench: taking over the lock of {directory} left by pid {stale.get('pid')} "
                  f"(started {stale.get('started')}), which no longer holds it", file=sys.stderr)
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                 "host": socket.gethostname(), "command": command}) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
    finally:
        handle.close()  # closing drops the flock
