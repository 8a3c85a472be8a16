"""Per-model limits on simultaneous requests and the invocation's spending, shared by every run thread
of this process and, when runs are spread over worker processes (harness.executors.local_processes), by those too."""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import Any, Iterator

_semaphores: dict[tuple[str, int], Any] = {}
_lock = threading.Lock()


def share_slots(keys: set[tuple[str, int]], context: Any) -> dict[tuple[str, int], Any]:
    """Semaphores holding these limits across the processes of `context` (hand them to use_shared)."""
    return {key: context.BoundedSemaphore(key[1]) for key in keys}


def use_shared(slots: dict[tuple[str, int], Any], spending: Any) -> None:
    """In a worker process: count requests and spending with the whole invocation's."""
    with _lock:
        _semaphores.clear()
        _semaphores.update(slots)
    INVOCATION_SPENDING.use(spending)


@contextmanager
def model_slot(model_key: str, limit: int | None) -> Iterator[None]:
    """Hold one of `limit` request slots of `model_key` (no limit when None)."""
    if limit is None:
        yield
        return
    with _lock:
        semaphore = _semaphores.get((model_key, limit))
        if semaphore is None:
            semaphore = _semaphores[(model_key, limit)] = threading.BoundedSemaphore(limit)
    with semaphore:
        yield


class Spending:
    """What the runs of this invocation have spent, against its limit (if any).

    Runs in threads share it, so an invocation's limit stops runs in flight too, at their next request.
    `share()` moves it into shared memory that worker processes `use()`, so theirs count too.
    """

    def __init__(self) -> None:
        self._values: Any = [math.nan, 0.0]  # the limit (NaN: none) and what was spent
        self._lock: Any = threading.Lock()

    @property
    def limit(self) -> float | None:
        with self._lock:
            return None if math.isnan(self._values[0]) else self._values[0]

    @property
    def spent(self) -> float:
        with self._lock:
            return self._values[1]

    def start(self, limit: float | None) -> None:
        with self._lock:
            self._values[0], self._values[1] = math.nan if limit is None else limit, 0.0

    def add(self, cost_usd: float) -> None:
        with self._lock:
            self._values[1] += cost_usd

    def exhausted(self) -> bool:
        with self._lock:
            return not math.isnan(self._values[0]) and self._values[1] >= self._values[0]

    def share(self, context: Any) -> Any:
        """Keep the numbers in shared memory of `context` from now on; returns it for use() in workers."""
        with self._lock:
            shared = context.Array("d", list(self._values))
        self.use(shared)
        return shared

    def use(self, shared: Any) -> None:
        self._values, self._lock = shared, shared.get_lock()

    def unshare(self) -> None:
        """Back to this process's own memory, keeping the numbers."""
        with self._lock:
            values = list(self._values)
        self._values, self._lock = values, threading.Lock()


INVOCATION_SPENDING = Spending()
INVOCATION_LIMIT_REACHED = "the invocation's spending limit was reached"
