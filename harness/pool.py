"""An executor of worker processes that each run many threads: for runs against real models.

Such runs mostly wait on the network, so one process can hold many of them; but litellm costs
milliseconds of CPU per request, so one interpreter (one GIL) cannot keep a high request rate.
Several processes with many threads each do both. Per-model request limits are semaphores
shared by all processes, so `max_concurrency` holds across the whole pool.
"""
from __future__ import annotations

import itertools
import multiprocessing
import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any, Callable

from harness import limits

_STOP = None


def _thread_main(tasks: Any, results: Any) -> None:
    while True:
        item = tasks.get()
        if item is _STOP:
            return
        task_id, fn, arg = item
        try:
            results.put((task_id, True, fn(arg)))
        except BaseException as exc:  # reported to the parent, which raises it from the future
            results.put((task_id, False, f"{type(exc).__name__}: {exc}"))


def _process_main(tasks: Any, results: Any, semaphores: dict[tuple[str, int], Any], threads: int) -> None:
    limits.install(semaphores)
    workers = [threading.Thread(target=_thread_main, args=(tasks, results), daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


class ThreadedProcessPool(Executor):
    """`processes` spawned interpreters x `threads` threads; submit(fn, arg) with a picklable fn."""

    def __init__(self, processes: int, threads: int, model_limits: dict[str, int]):
        context = multiprocessing.get_context("spawn")
        self._tasks = context.Queue()
        self._results = context.Queue()
        # Kept referenced: a child rebuilds each semaphore from its name while starting.
        self._semaphores = {(key, limit): context.BoundedSemaphore(limit) for key, limit in model_limits.items()}
        self._slots = processes * threads
        self._processes = [context.Process(target=_process_main,
                                           args=(self._tasks, self._results, self._semaphores, threads),
                                           daemon=True) for _ in range(processes)]
        for process in self._processes:
            process.start()
        self._futures: dict[int, Future] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._collector = threading.Thread(target=self._collect, daemon=True)
        self._collector.start()

    def submit(self, fn: Callable[[Any], Any], /, *args: Any, **kwargs: Any) -> Future:
        if kwargs or len(args) != 1:
            raise TypeError("ThreadedProcessPool.submit takes fn and exactly one argument")
        future: Future = Future()
        with self._lock:
            task_id = next(self._ids)
            self._futures[task_id] = future
        self._tasks.put((task_id, fn, args[0]))
        return future

    def _collect(self) -> None:
        while not self._closed.is_set() or self._futures:
            try:
                task_id, ok, value = self._results.get(timeout=0.5)
            except queue.Empty:
                if not all(p.is_alive() for p in self._processes) and self._futures:
                    self._fail_pending("a worker process died")
                    return
                continue
            with self._lock:
                future = self._futures.pop(task_id)
            if ok:
                future.set_result(value)
            else:
                future.set_exception(RuntimeError(value))

    def _fail_pending(self, reason: str) -> None:
        with self._lock:
            pending, self._futures = self._futures, {}
        for future in pending.values():
            future.set_exception(RuntimeError(reason))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            self._fail_pending("cancelled")
        for _ in range(self._slots):
            self._tasks.put(_STOP)
        self._closed.set()
        if wait:
            for process in self._processes:
                process.join()
            self._collector.join()


def cell_executor(cells: list[Any], workers: int) -> tuple[Executor | None, int]:
    """The executor for these runs and how many run at once (None: run them one by one here).

    Mock runs use the CPU: one process each. Runs against real models wait on the network:
    threads, enough to keep every slot of the model's concurrency limit busy, spread over
    `workers` processes so that litellm's per-request CPU cost is shared by several cores.
    """
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    from harness.llm import LLMProfile

    main = cells[0].profiles.get("main", {}) if cells else {}
    if str(main.get("model", "mock/")).startswith("mock/"):
        parallel = min(workers, len(cells))
        if parallel <= 1:
            return None, parallel
        # Fresh interpreters: litellm starts threads, and forking a threaded parent is unsafe.
        return ProcessPoolExecutor(max_workers=parallel, mp_context=multiprocessing.get_context("spawn")), parallel
    limit = main.get("max_concurrency")
    parallel = min(len(cells), max(workers, 4 * limit if limit else workers))
    processes = min(workers, parallel)
    if parallel <= 1:
        return None, parallel
    if processes <= 1:
        return ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="run"), parallel
    profiles = [LLMProfile(**data) for data in cells[0].profiles.values()]
    model_limits = {p.endpoint: p.max_concurrency for p in profiles if p.max_concurrency}
    return ThreadedProcessPool(processes, -(-parallel // processes), model_limits), parallel
