"""Per-model limits on simultaneous requests and the invocation's spending, shared by every run thread
of this process and, when runs are spread over worker processes (harness.executors.local_processes), by those too."""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Protocol

_semaphores: dict[tuple[str, int], Any] = {}
_lock = threading.Lock()


def share_slots(keys: set[tuple[str, int]], context: Any) -> dict[tuple[str, int], Any]:
    """Semaphores holding these limits across the processes of `context` (hand them to use_shared)."""
    return {key: context.BoundedSemaphore(key[1]) for key in keys}


def use_shared(slots: dict[tuple[str, int], Any], spending: Ledger) -> None:
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


class Ledger(Protocol):
    """Where the invocation's limit and spending are kept: this process's memory, shared memory of local
    worker processes, or an actor of a cluster (harness.executors.ray_cluster)."""

    def read(self) -> tuple[float, float]:
        """The limit (NaN: none) and what was spent."""
        ...

    def reset(self, limit: float) -> None:
        """A new limit (NaN: none), nothing spent."""
        ...

    def add(self, cost_usd: float) -> None:
        ...


class LocalLedger:
    """The numbers in this process's memory, for its threads."""

    def __init__(self, values: tuple[float, float] = (math.nan, 0.0)) -> None:
        self._values, self._lock = list(values), threading.Lock()

    def read(self) -> tuple[float, float]:
        with self._lock:
            return self._values[0], self._values[1]

    def reset(self, limit: float) -> None:
        with self._lock:
            self._values[:] = [limit, 0.0]

    def add(self, cost_usd: float) -> None:
        with self._lock:
            self._values[1] += cost_usd


class SharedLedger(LocalLedger):
    """The numbers in shared memory (a multiprocessing Array), for local worker processes too."""

    def __init__(self, values: tuple[float, float], context: Any) -> None:
        self._values = context.Array("d", list(values))
        self._lock = self._values.get_lock()


class Spending:
    """What the runs of this invocation have spent, against its limit (if any).

    Runs in threads share it, so an invocation's limit stops runs in flight too, at their next request.
    `share()` moves it into shared memory that worker processes `use()`, so theirs count too; `use()`
    takes any Ledger (a cluster's actor).
    """

    def __init__(self) -> None:
        self._ledger: Ledger = LocalLedger()

    @property
    def limit(self) -> float | None:
        limit = self._ledger.read()[0]
        return None if math.isnan(limit) else limit

    @property
    def spent(self) -> float:
        return self._ledger.read()[1]

    def start(self, limit: float | None) -> None:
        self._ledger.reset(math.nan if limit is None else limit)

    def add(self, cost_usd: float) -> None:
        self._ledger.add(cost_usd)

    def exhausted(self) -> bool:
        limit, spent = self._ledger.read()
        return not math.isnan(limit) and spent >= limit

    def share(self, context: Any) -> Ledger:
        """Keep the numbers in shared memory of `context` from now on; returns it for use() in workers."""
        shared = SharedLedger(self._ledger.read(), context)
        self.use(shared)
        return shared

    def use(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def unshare(self) -> None:
        """Back to this process's own memory, keeping the numbers."""
        self._ledger = LocalLedger(self._ledger.read())


INVOCATION_SPENDING = Spending()
INVOCATION_LIMIT_REACHED = "the invocation's spending limit was reached"
