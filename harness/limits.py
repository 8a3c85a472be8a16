"""Per-model limits on simultaneous requests, shared by every run thread (and, in a
ThreadedProcessPool, every worker process)."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

_semaphores: dict[tuple[str, int], Any] = {}
_lock = threading.Lock()


def install(semaphores: dict[tuple[str, int], Any]) -> None:
    """Use these (cross-process) semaphores for their (model, limit) keys."""
    with _lock:
        _semaphores.update(semaphores)


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
