"""The executor interface: what runs a batch of cells, wherever it runs them.

An executor is handed the unit of work as a callable (harness.run.runner.run_cell: cell -> row), so no
executor imports the runner; rows come back to the parent, which alone writes them (runs.jsonl).
"""
from __future__ import annotations

import gc
import threading
from typing import Any, Callable, Protocol

RunCell = Callable[[Any], dict[str, Any]]  # runs one cell to its end: its runs.jsonl row
OnRow = Callable[[dict[str, Any]], None]  # takes each finished row, in the parent, in completion order
MayStart = Callable[[], bool]  # whether another cell may start now (a spending limit)
LostRow = Callable[[Any, BaseException], dict[str, Any]]  # the row of a cell whose run raised in a worker


class Executor(Protocol):
    """Runs cells and says which were never started."""

    def run(self, cells: list[Any], run_cell: RunCell, on_row: OnRow, may_start: MayStart | None,
            lost_row: LostRow) -> list[Any]:
        """Run `cells` with `run_cell`, handing each finished row to `on_row` at once; a cell starts only
        while `may_start()` holds (None: no limit). Returns the cells never started, in the order given."""
        ...


_heap_settled = False


def settle_heap() -> None:
    """Put what this process has allocated so far (litellm and the other imports, generated task
    instances: ~470k objects) out of the garbage collector's reach, once per process.

    A full collection walks every tracked object: ~0.3 s with litellm loaded, landing in the
    middle of whichever run allocates past the threshold (measured: one run's CPU +50%).
    Frozen objects are never collected, so it first collects what is garbage now; forked
    workers inherit the frozen heap (and share its pages).
    """
    global _heap_settled
    if not _heap_settled:
        gc.collect()
        gc.freeze()
        _heap_settled = True


# Ours: the young generation's threshold while runs are under way (CPython's: 700). A run's data
# are trees freed by reference counting, so a young pass finds little to free; at 700 such passes took 1-2.5% of a
# long run's CPU (gc.callbacks, chained_lookup/work_queue-long: none 1.2%, observation_masking 2.4%). What waits for
# a pass stays bounded: at most this many container objects more than were freed.
RUN_YOUNG_THRESHOLD = 20_000


class _RunsUnderWay:
    """Raises the young generation's threshold while any run of this process is under way (runs in threads share
    the collector) and puts back the one it found when the last ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs = 0
        self._saved: tuple[int, ...] = ()

    def __enter__(self) -> None:
        with self._lock:
            if self._runs == 0:
                self._saved = gc.get_threshold()
                gc.set_threshold(max(RUN_YOUNG_THRESHOLD, self._saved[0]), *self._saved[1:])
            self._runs += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._runs -= 1
            if self._runs == 0:
                gc.set_threshold(*self._saved)


runs_under_way = _RunsUnderWay()
