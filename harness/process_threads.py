"""Runs on threads of several worker processes: mock runs, one per process (they use the CPU), and
runs against real models when one process's CPU (litellm spends milliseconds of it per request,
under one GIL) would hold them up."""
from __future__ import annotations

import itertools
import multiprocessing
import pickle
import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any, Callable

from harness import limits
from harness.limits import INVOCATION_SPENDING


def _slot_keys(profiles: dict[str, dict[str, Any]]) -> set[tuple[str, int]]:
    """The (model key, limit) pairs of model_slot that these profiles' requests hold."""
    from harness.runner import build_profiles

    return {(p.endpoint, p.max_concurrency) for p in build_profiles(profiles).values() if p.max_concurrency}


class ThreadsInProcesses(Executor):
    """Threads of several worker processes; a call goes to the worker named (`submit_to`) or to the
    one with the fewest calls (`submit`).

    Spreading by outstanding calls keeps the CPU work even: long runs submitted together are
    split between the workers, and a worker that finished a run gets the next. The per-model
    request limits and the invocation's spending are shared by all the workers, so they hold
    for the invocation as a whole, as with threads of one process.
    """

    def __init__(self, processes: int, threads: int, profiles: dict[str, dict[str, Any]], start_method: str = "spawn"):
        context = multiprocessing.get_context(start_method)
        self._calls: list[Any] = [context.Queue() for _ in range(processes)]
        self._results: Any = context.Queue()
        self._futures: dict[int, tuple[Future, int]] = {}  # call id -> its future and worker
        self._outstanding = [0] * processes
        self._ids = itertools.count()
        self._lock = threading.Lock()
        # Kept here: a spawned worker rebuilds them from their names after start() has dropped its arguments.
        self._shared = (limits.share_slots(_slot_keys(profiles), context), INVOCATION_SPENDING.share(context))
        self.processes, self.threads = processes, threads
        self._workers = [context.Process(target=_serve, args=(calls, self._results, threads, *self._shared),
                                         name=f"runs-{index}", daemon=True) for index, calls in enumerate(self._calls)]
        for worker in self._workers:
            worker.start()
        self._collector = threading.Thread(target=self._collect, name="run-results", daemon=True)
        self._collector.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        return self.submit_to(None, fn, *args, **kwargs)

    def submit_to(self, worker: int | None, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Run fn on this worker process (0 to processes - 1; None: the one with the fewest calls)."""
        future: Future = Future()
        with self._lock:
            call_id = next(self._ids)
            if worker is None:
                worker = self._outstanding.index(min(self._outstanding))
            self._outstanding[worker] += 1
            self._futures[call_id] = (future, worker)
        self._calls[worker].put((call_id, fn, args, kwargs))
        return future

    def _collect(self) -> None:
        while True:
            try:
                message = self._results.get(timeout=1.0)
            except queue.Empty:
                if all(worker.is_alive() for worker in self._workers):
                    continue
                message = None  # a worker died: what it was running will never come back
            if message is None:
                break
            call_id, ok, value = message
            with self._lock:
                future, worker = self._futures.pop(call_id)
                self._outstanding[worker] -= 1
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        with self._lock:
            lost, self._futures = [future for future, _ in self._futures.values()], {}
        for future in lost:
            future.set_exception(RuntimeError("a worker process running this call exited"))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for calls in self._calls:
            for _ in range(self.threads):
                calls.put(None)
        for worker in self._workers:
            worker.join()
        self._results.put(None)
        self._collector.join()
        INVOCATION_SPENDING.unshare()


def _picklable(error: BaseException) -> BaseException:
    """The error itself if it crosses to the parent intact, else one saying what it was."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")


def _serve(calls: Any, results: Any, threads: int, slots: dict[tuple[str, int], Any], spending: Any) -> None:
    """A worker process: `threads` threads each run the next call until told to stop (None)."""
    limits.use_shared(slots, spending)

    def work() -> None:
        while (call := calls.get()) is not None:
            call_id, fn, args, kwargs = call
            try:
                results.put((call_id, True, fn(*args, **kwargs)))
            except BaseException as exc:  # handed to the caller's future, like any executor
                results.put((call_id, False, _picklable(exc)))

    workers = [threading.Thread(target=work, name=f"run_{index}", daemon=True) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
