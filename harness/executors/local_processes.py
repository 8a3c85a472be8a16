"""Cells run on threads of this process or of local worker processes: how many run at once, and which
worker runs which (task affinity, CellPlan); per-model request limits and the invocation's spending are
shared by all the workers (harness.models.limits)."""
from __future__ import annotations

import math
import os
import sys
import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable

from harness.executors.base import LostRow, MayStart, OnRow, RunCell
from harness.executors.process_threads import ThreadsInProcesses

# Runs in flight that one process serves without its CPU holding them up: litellm spends several
# ms of CPU per request under one GIL, so ~100 requests/s per process; with more in flight (short
# latencies), runs are spread over more processes.
RUNS_PER_PROCESS = 32


def _start_method() -> str:
    """"fork" when it is safe (Linux, no other thread that could hold a lock), else "spawn".

    A forked worker starts at once with everything imported; a spawned one first spends
    seconds importing litellm, which on a short suite was most of the parallel speed-up.
    """
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return "fork"
    return "spawn"


class ThreadsInThisProcess(ThreadPoolExecutor):
    """Threads of this process, seen as the one worker 0 (the interface of ThreadsInProcesses)."""

    processes = 1

    def __init__(self, threads: int):
        super().__init__(max_workers=threads, thread_name_prefix="run")
        self.threads = threads

    def submit_to(self, worker: int | None, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        return self.submit(fn, *args, **kwargs)


Workers = ThreadsInProcesses | ThreadsInThisProcess


def layout(cells: list[Any], workers: int) -> tuple[int, int] | None:
    """How these runs go at once: (processes, threads per process), or None to run them one by one here.

    Mock runs use the CPU: one process each, one run at a time. Runs against real models wait
    on the network: threads, sharing the per-model request limits (harness.models.limits); with a
    limit, enough runs are in flight to keep every slot busy. When more are in flight than one
    process's CPU keeps up with (RUNS_PER_PROCESS), the threads are spread over up to one
    process per CPU. (harness.bench.real's floor copies this layout.)
    """
    main = cells[0].profiles.get("main", {}) if cells else {}
    if str(main.get("model", "mock/")).startswith("mock/"):
        parallel = min(workers, len(cells))
        return None if parallel <= 1 else (parallel, 1)
    limit = main.get("max_concurrency")
    parallel = min(len(cells), max(workers, 4 * limit if limit else workers))
    if parallel <= 1:
        return None
    processes = min(os.cpu_count() or 1, math.ceil(parallel / RUNS_PER_PROCESS))
    return (processes, math.ceil(parallel / processes)) if processes > 1 else (1, parallel)


def worker_pool(cells: list[Any], workers: int) -> Workers | None:
    """The executor for these runs (None: run them one by one here): its `processes` x `threads` runs go
    at once (`layout`). Worker processes share the invocation's spending, as threads do."""
    shape = layout(cells, workers)
    if shape is None:
        return None
    processes, threads = shape
    if processes > 1:
        return ThreadsInProcesses(processes, threads, cells[0].profiles, _start_method())
    return ThreadsInThisProcess(threads)


class CellPlan:
    """The cells not started yet, handed out so that one task instance's runs stay in one worker.

    The runs of one task instance (its strategies and seeds) share most of their texts: the
    prompt and the tool outputs. A process tokenizes each text once (harness.core.tokens), so runs of
    one instance spread over two processes pay for it twice. On the default suite, keeping each
    instance in one worker took `--workers 2` from ~1.5x to ~1.8x faster than one worker
    (harness.bench). A worker keeps taking cells of its task; when that task has none left it
    starts a task no worker has started, in the order given; when every task is started, it
    helps with the one with the most cells left, so the last tasks do not leave a worker idle.
    """

    def __init__(self, cells: list[Any]):
        self._order = {id(cell): index for index, cell in enumerate(cells)}
        self._tasks: dict[str, deque[Any]] = {}
        for cell in cells:
            self._tasks.setdefault(cell.task.task_id, deque()).append(cell)
        self._started: set[str] = set()
        self._working_on: dict[int, str] = {}  # worker -> task
        self._left = len(cells)

    def __bool__(self) -> bool:
        return self._left > 0

    def take(self, worker: int) -> Any:
        task = self._working_on.get(worker)
        if task not in self._tasks:
            fresh = [name for name in self._tasks if name not in self._started]
            task = fresh[0] if fresh else max(self._tasks, key=lambda name: len(self._tasks[name]))
            self._working_on[worker] = task
            self._started.add(task)
        cells = self._tasks[task]
        cell = cells.popleft()
        if not cells:
            del self._tasks[task]
        self._left -= 1
        return cell

    def remaining(self) -> list[Any]:
        """The cells never handed out, in the order given."""
        return sorted((cell for cells in self._tasks.values() for cell in cells), key=lambda cell: self._order[id(cell)])


class LocalProcesses:
    """Cells spread over the workers of `pool`, each handed out by CellPlan (task affinity).

    Without a spending limit, as many cells again as a worker runs at once wait queued for it, so a
    worker that finishes one starts the next without waiting for this process to take the finished
    row; with one, no more are queued than run, so none starts after the limit is reached.
    """

    def __init__(self, pool: Workers):
        self.pool = pool

    def run(self, cells: list[Any], run_cell: RunCell, on_row: OnRow, may_start: MayStart | None,
            lost_row: LostRow) -> list[Any]:
        pool = self.pool
        allowed = may_start or (lambda: True)
        plan = CellPlan(cells)
        queued_per_worker = pool.threads if may_start is not None else 2 * pool.threads
        with pool:
            pending: dict[Future, tuple[int, Any]] = {}  # each submitted cell's future -> its worker and the cell
            queued = [0] * pool.processes
            while plan or pending:
                while plan and allowed():
                    worker = queued.index(min(queued))  # the least busy, so the workers stay even
                    if queued[worker] >= queued_per_worker:
                        break
                    cell = plan.take(worker)
                    pending[pool.submit_to(worker, run_cell, cell)] = (worker, cell)
                    queued[worker] += 1
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    worker, cell = pending.pop(future)
                    queued[worker] -= 1
                    on_row(_row_of(future, cell, lost_row))
        return plan.remaining()


def _row_of(future: Future, cell: Any, lost_row: LostRow) -> dict[str, Any]:
    """The row a worker returned, or `lost_row`'s for a run that raised or ended its worker process
    (WorkerExited); a KeyboardInterrupt stops the invocation."""
    error = future.exception()
    if error is None:
        return future.result()
    if isinstance(error, KeyboardInterrupt):
        raise error
    return lost_row(cell, error)
