"""Per-model limits on simultaneous requests, shared by every run thread of this process."""
from __future__ import annotations

import threading
from collections import deque
from contextlib import contextmanager
from typing import Iterator


class FairSlots:
    """`limit` slots handed out first come, first served.

    A freed slot passes straight to the longest waiter, so a run that has just finished a
    request cannot take the slot again ahead of runs already queued (as it can with a
    semaphore): every run in flight gets its turn and none is starved.
    """

    def __init__(self, limit: int):
        self._lock = threading.Lock()
        self._free = limit
        self._waiters: deque[threading.Lock] = deque()

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._lock:
            turn = None
            if self._free and not self._waiters:
                self._free -= 1
            else:
                turn = threading.Lock()
                turn.acquire()
                self._waiters.append(turn)
        if turn is not None:
            turn.acquire()  # released by the holder that hands its slot over
        try:
            yield
        finally:
            with self._lock:
                if self._waiters:
                    self._waiters.popleft().release()
                else:
                    self._free += 1


_slots: dict[tuple[str, int], FairSlots] = {}
_lock = threading.Lock()


@contextmanager
def model_slot(model_key: str, limit: int | None) -> Iterator[None]:
    """Hold one of `limit` request slots of `model_key` (no limit when None), in turn."""
    if limit is None:
        yield
        return
    with _lock:
        slots = _slots.get((model_key, limit))
        if slots is None:
            slots = _slots[(model_key, limit)] = FairSlots(limit)
    with slots.hold():
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
