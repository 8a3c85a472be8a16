"""Per-model limits on simultaneous requests, shared by every run thread of this process."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

_semaphores: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_lock = threading.Lock()


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
    """What the runs of this process have spent in this invocation, against its limit (if any).

    Runs in threads share it, so an invocation's limit stops runs in flight too, at their next request.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.limit: float | None = None
        self.spent = 0.0

    def start(self, limit: float | None) -> None:
        with self._lock:
            self.limit, self.spent = limit, 0.0

    def add(self, cost_usd: float) -> None:
        with self._lock:
            self.spent += cost_usd

    def exhausted(self) -> bool:
        with self._lock:
            return self.limit is not None and self.spent >= self.limit


INVOCATION_SPENDING = Spending()
INVOCATION_LIMIT_REACHED = "the invocation's spending limit was reached"
