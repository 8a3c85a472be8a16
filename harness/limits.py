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
