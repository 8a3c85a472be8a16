"""Runs on threads of several worker processes: mock runs, one per process (they use the CPU), and
runs against real models when one process's CPU (litellm spends milliseconds of it per request,
under one GIL) would hold them up."""
from __future__ import annotations

import itertools
import multiprocessing
import multiprocessing.connection
import pickle
import threading
import time
from concurrent.futures import Executor, Future
from typing import Any, Callable

from harness.models import limits
from harness.models.limits import INVOCATION_SPENDING
from harness.models.profiles import build_profiles


def _slot_keys(profiles: dict[str, dict[str, Any]]) -> set[tuple[str, int]]:
    """The (model key, limit) pairs of model_slot that these profiles' requests hold."""
    return {(p.endpoint, p.max_concurrency) for p in build_profiles(profiles).values() if p.max_concurrency}


STARTED, RETURNED, RAISED = "started", "returned", "raised"  # what a worker says of a call
LIVENESS_S = 0.5  # how often the workers are checked for one that died


class WorkerExited(RuntimeError):
    """The worker process running a call died before the call ended."""


class ThreadsInProcesses(Executor):
    """Threads of several worker processes; a call goes to the worker named (`submit_to`) or to the
    one with the fewest calls (`submit`).

    Spreading by outstanding calls keeps the CPU work even: long runs submitted together are
    split between the workers, and a worker that finished a run gets the next. The per-model
    request limits and the invocation's spending are shared by all the workers, so they hold
    for the invocation as a whole, as with threads of one process. A worker that dies is replaced
    (`_replace`): the calls it was running fail with WorkerExited, the rest run on its replacement.
    """

    def __init__(self, processes: int, threads: int, profiles: dict[str, dict[str, Any]], start_method: str = "spawn"):
        context = multiprocessing.get_context(start_method)
        self._calls: list[Any] = [context.Queue() for _ in range(processes)]  # a queue per worker (replaced with it)
        # A pipe per worker for what it says of its calls, never shared: a worker that dies mid-write (os._exit
        # while a thread sends) leaves a torn message on its own pipe, read as its end, not a lock others wait on.
        self._results: list[Any] = [None] * processes
        self._stopping = False
        self._futures: dict[int, tuple[Future, int]] = {}  # call id -> its future and worker
        self._outstanding = [0] * processes
        self._ids = itertools.count()
        self._lock = threading.Lock()
        # Kept here: a spawned worker rebuilds them from their names after start() has dropped its arguments.
        self._shared = (limits.share_slots(_slot_keys(profiles), context), INVOCATION_SPENDING.share(context))
        self.processes, self.threads = processes, threads
        self._context = context
        self._calls_sent: dict[int, tuple[Any, ...]] = {}  # call id -> the call, until its result (to send it again)
        self._started: set[int] = set()  # calls a worker said it started
        self._workers = [self._start_worker(index) for index in range(processes)]
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
            self._calls_sent[call_id] = call = (call_id, fn, args, kwargs)
            self._calls[worker].put(call)
        return future

    def _start_worker(self, index: int) -> Any:
        reader, writer = self._context.Pipe(duplex=False)
        process = self._context.Process(target=_serve, args=(self._calls[index], writer, self.threads,
                                                              *self._shared), name=f"runs-{index}", daemon=True)
        process.start()
        writer.close()  # the worker's copy alone: its death is this reader's end of file
        self._results[index] = reader
        return process

    def _messages(self) -> list[Any]:
        """What the workers said within LIVENESS_S; a pipe at its end (its worker died) is read no more."""
        open_pipes = [reader for reader in self._results if reader is not None]
        if not open_pipes:
            time.sleep(LIVENESS_S / 10)
            return []
        messages = []
        for reader in multiprocessing.connection.wait(open_pipes, timeout=LIVENESS_S):
            try:
                messages.append(reader.recv())
            except (EOFError, OSError):  # every message before it was read: a torn last one is lost with its worker
                self._results[self._results.index(reader)] = None
                reader.close()
        return messages

    def _collect(self) -> None:
        while not (self._stopping and all(reader is None for reader in self._results)):
            for message in self._messages():
                self._settle(*message)
            for index, worker in enumerate(self._workers):  # a worker whose pipe ended, once all it said is read
                if self._results[index] is None and worker.exitcode is not None and self._outstanding[index]:
                    self._replace(index)

    def _settle(self, call_id: int, status: str, value: Any) -> None:
        """Act on what a worker said of call `call_id`."""
        if status == STARTED:
            self._started.add(call_id)
            return
        with self._lock:
            if call_id not in self._futures:
                return  # answered already: sent by a worker that died before this was read, and sent again
            future, worker = self._futures.pop(call_id)
            self._outstanding[worker] -= 1
            del self._calls_sent[call_id]
            self._started.discard(call_id)
        if status == RETURNED:
            future.set_result(value)
        else:
            future.set_exception(value)

    def _replace(self, index: int) -> None:
        """Worker `index` died (a run ended its process: os._exit, a signal, a crash in C): the calls it had
        started fail with WorkerExited (the oldest one if it said of none, so each death fails one at least);
        the others go to a new worker in its place, so no other run is lost and nothing waits forever."""
        with self._lock:
            exitcode = self._workers[index].exitcode
            mine = sorted(call_id for call_id, (_, worker) in self._futures.items() if worker == index)
            lost = [call_id for call_id in mine if call_id in self._started] or mine[:1]
            failed = [self._futures.pop(call_id)[0] for call_id in lost]
            for call_id in lost:
                del self._calls_sent[call_id]
                self._started.discard(call_id)
            self._outstanding[index] -= len(lost)
            self._calls[index] = self._context.Queue()  # the old one may be locked by the dead reader
            for call_id in mine:
                if call_id not in lost:
                    self._calls[index].put(self._calls_sent[call_id])
            self._workers[index] = self._start_worker(index)
        for future in failed:
            future.set_exception(WorkerExited(f"the worker process running this run exited (exit code {exitcode}) "
                                              "before the run ended: the run's own code ended its process"))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for calls in self._calls:
            for _ in range(self.threads):
                calls.put(None)
        self._stopping = True
        for worker in self._workers:
            worker.join()
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
    """A worker process: `threads` threads each run the next call until told to stop (None), saying
    on `results` (this worker's own pipe) when each starts and how it ended."""
    limits.use_shared(slots, spending)
    sending = threading.Lock()  # one message at a time on the pipe

    def say(*message: Any) -> None:
        with sending:
            results.send(message)

    def work() -> None:
        while (call := calls.get()) is not None:
            call_id, fn, args, kwargs = call
            say(call_id, STARTED, None)
            try:
                outcome = (RETURNED, fn(*args, **kwargs))
            except BaseException as exc:  # handed to the caller's future, like any executor
                outcome = (RAISED, _picklable(exc))
            try:
                say(call_id, *outcome)
            except (pickle.PicklingError, TypeError, AttributeError) as exc:  # a result that cannot cross
                say(call_id, RAISED, RuntimeError(f"the run's result could not be sent back: {exc}"))

    workers = [threading.Thread(target=work, name=f"run_{index}", daemon=True) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
