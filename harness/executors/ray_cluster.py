"""Cells run on a local or existing Ray cluster (the `ray` extra): a cell-running actor
per CPU, handed cells by local_processes.LocalProcesses (task affinity, the in-flight rule).

A worker may be on another machine, with its own disk: it never touches the results directory. It runs
its cell with the event log in a temporary directory of its own and returns the row with the bytes of the log
and of its pack of large texts; the parent writes them to events/ (temp + rename) and then hands the row on, so
the parent alone writes what reaches the results directory. A worker that dies mid-cell returns nothing: Ray restarts
its actor and runs the cell again, and the first attempt left nothing behind. The per-model request limits
and the invocation's spending are Ray actors, plugged into harness.models.limits as process_threads plugs in
multiprocessing objects. Ray is imported only when this executor runs.
"""
from __future__ import annotations

import copy
import logging
import os
import shutil
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

from harness.conversation.events import event_log_name
from harness.models import limits
from harness.core.errors import ConfigError
from harness.executors.base import LostRow, MayStart, OnRow, RunCell
from harness.executors.local_processes import LocalProcesses
from harness.executors.process_threads import _picklable, _slot_keys
from harness.models.limits import INVOCATION_SPENDING

RAY_EXTRA = "pip install -e '.[ray]'"
# Where a worker keeps a cell's event log until it returns it: in memory where the machine has a tmpfs (the
# log is read back and deleted at once, so writing it to disk and syncing it is work for nothing).
SCRATCH = "/dev/shm"
RETRIES_ON_WORKER_DEATH = 3  # Ray's attempts after a worker process died mid-cell (then the cell's row is an error)


def import_ray() -> Any:
    """The ray module, or a ConfigError naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"--executor ray needs Ray, which is not installed: {RAY_EXTRA} "
                          f"(the `ray` extra; {exc})") from exc
    return ray


class _SpendingActor:
    """The invocation's limit and spending, for every worker of the cluster (a Ray actor)."""

    def __init__(self, limit: float, spent: float) -> None:
        self.values = (limit, spent)

    def read(self) -> tuple[float, float]:
        return self.values

    def reset(self, limit: float) -> None:
        self.values = (limit, 0.0)

    def add(self, cost_usd: float) -> None:
        self.values = (self.values[0], self.values[1] + cost_usd)


class RayLedger:
    """A limits.Ledger kept by a _SpendingActor. An add is not waited for: a caller's calls to one actor
    run in the order made, so its next read sees it."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def read(self) -> tuple[float, float]:
        import ray

        return tuple(ray.get(self.actor.read.remote()))  # type: ignore[return-value]

    def reset(self, limit: float) -> None:
        import ray

        ray.get(self.actor.reset.remote(limit))

    def add(self, cost_usd: float) -> None:
        self.actor.add.remote(cost_usd)


class _SlotsActor:
    """The per-model request slots of the whole cluster (an async Ray actor: waiting holders do not block
    it)."""

    def __init__(self, keys: list[tuple[str, int]]) -> None:
        import asyncio

        self.free = {key: asyncio.Semaphore(key[1]) for key in keys}

    async def acquire(self, key: tuple[str, int]) -> None:
        await self.free[key].acquire()

    async def release(self, key: tuple[str, int]) -> None:
        self.free[key].release()


class RaySlot:
    """One model key's slots of a _SlotsActor, as the semaphore limits.model_slot holds (a context manager)."""

    def __init__(self, actor: Any, key: tuple[str, int]) -> None:
        self.actor, self.key = actor, key

    def __enter__(self) -> None:
        import ray

        ray.get(self.actor.acquire.remote(self.key))

    def __exit__(self, *exc: Any) -> None:
        import ray

        ray.get(self.actor.release.remote(self.key))


def run_remote(cell: Any, run_cell: RunCell) -> tuple[bool, Any, dict[str, bytes]]:
    """In a Ray worker: run the cell with its event log in a temporary directory of this machine; returns
    whether it returned, its row (or the error it raised) and the files it wrote there, by path relative to that
    directory (its event log and the pack of the texts the log refers to; none: no log written)."""
    local = tempfile.mkdtemp(prefix="ctxbench-ray-", dir=SCRATCH if os.path.isdir(SCRATCH) else None)
    try:
        here = copy.copy(cell)
        here.events_dir = local
        try:
            returned, value = True, run_cell(here)
        except Exception as exc:  # the parent makes its row (lost_row), as with local processes
            returned, value = False, _picklable(exc)
        written = {path.relative_to(local).as_posix(): path.read_bytes()
                   for path in Path(local).rglob("*") if path.is_file()}
        return returned, value, written
    finally:
        shutil.rmtree(local, ignore_errors=True)


class _CellRunner:
    """A Ray actor holding one CPU: runs the cells handed to it one at a time, counting requests and spending
    with the whole invocation's (set again whenever Ray restarts it)."""

    def __init__(self, slots: dict[tuple[str, int], Any] | None, spending: RayLedger | None,
                 warm: Callable[[], None] | None) -> None:
        limits.use_shared(slots or {}, spending or limits.LocalLedger())
        if warm is not None:
            warm()  # what a first cell would load (litellm: seconds), before any cell

    def ready(self) -> bool:
        """Answered once the actor is up with its imports done (RayActors waits for every actor's)."""
        return True

    def run(self, cell: Any, run_cell: RunCell) -> tuple[bool, Any, dict[str, bytes]]:
        return run_remote(cell, run_cell)


def write_log(cell: Any, files: dict[str, bytes]) -> None:
    """Put a worker's event log in the results directory: the pack of the texts it refers to first (a pack's
    name is the worker process's own), then the log, each written to a temporary name and renamed, so
    events/<run id>.jsonl.gz is always a whole log (or the one from before) whose texts are all there."""
    log = event_log_name(cell.run_id)
    for name in sorted(files, key=lambda name: name == log):  # the log last
        target = Path(cell.events_dir) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(files[name])
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)


class RayActors:
    """A _CellRunner actor per CPU of the cluster, as the pool harness.executors.local_processes.LocalProcesses
    hands cells to (`submit_to` a worker, `processes` x `threads`), so Ray keeps its task affinity (CellPlan)
    and in-flight rule. A future is done once the cell's event log is written here (write_log); an actor
    that dies mid-cell is restarted by Ray and its calls run again (`RETRIES_ON_WORKER_DEATH`)."""

    threads = 1

    def __init__(self, ray: Any, profiles: dict[str, dict[str, Any]], warm: Callable[[], None] | None = None) -> None:
        self._ray = ray
        keys = sorted(_slot_keys(profiles))
        slots_actor = ray.remote(_SlotsActor).remote(keys) if keys else None
        slots = {key: RaySlot(slots_actor, key) for key in keys} if keys else None
        self._spending = None
        if INVOCATION_SPENDING.limit is not None:
            self._spending = RayLedger(ray.remote(_SpendingActor).remote(INVOCATION_SPENDING.limit,
                                                                         INVOCATION_SPENDING.spent))
            INVOCATION_SPENDING.use(self._spending)
        self.processes = max(1, int(ray.cluster_resources().get("CPU", 1)))
        runner = ray.remote(num_cpus=1, max_restarts=RETRIES_ON_WORKER_DEATH,
                            max_task_retries=RETRIES_ON_WORKER_DEATH)(_CellRunner)
        self._actors = [runner.remote(slots, self._spending, warm) for _ in range(self.processes)]
        ray.get([actor.ready.remote() for actor in self._actors])  # their start and imports, before any cell
        self._helpers = [actor for actor in (slots_actor,) if actor is not None]

    def submit_to(self, worker: int, run_cell: RunCell, cell: Any) -> Future:
        future: Future = Future()
        done = self._actors[worker].run.remote(cell, run_cell).future()
        done.add_done_callback(lambda finished: _settle(future, cell, finished))
        return future

    def __enter__(self) -> "RayActors":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._spending is not None:
            INVOCATION_SPENDING.unshare()  # the numbers back here first: they are read from the actor
            self._helpers.append(self._spending.actor)
        for actor in self._actors + self._helpers:
            self._ray.kill(actor)


def _settle(future: Future, cell: Any, finished: Future) -> None:
    """Complete a cell's future from its actor's answer: the event log written first, then the row, or the
    error its run raised (or Ray's, when its actor died on every attempt) for lost_row."""
    try:
        returned, value, files = finished.result()
        write_log(cell, files)
    except BaseException as exc:
        future.set_exception(exc)
        return
    if returned:
        future.set_result(value)
    else:
        future.set_exception(value)


class RayCluster:
    """Cells on a Ray cluster: the one at `address` ("auto", "ray://host:10001"), else a local Ray of
    `workers` CPUs started here (and stopped at the end); a Ray started by the caller is used as it is.
    One cell per CPU, handed out as local_processes.LocalProcesses does (task affinity; with a spending
    limit no more in flight than run)."""

    def __init__(self, workers: int, address: str | None = None, warm: Callable[[], None] | None = None) -> None:
        self.workers, self.address, self.warm = workers, address, warm
        self.start_s = 0.0  # joining or starting Ray, and its actors' start and imports (harness.bench.scale)
        self.stop_s = 0.0  # after the last row: stopping the actors, and the local Ray started here

    def run(self, cells: list[Any], run_cell: RunCell, on_row: OnRow, may_start: MayStart | None,
            lost_row: LostRow) -> list[Any]:
        ray = import_ray()
        began = time.perf_counter()
        started_here = not ray.is_initialized()
        if started_here:
            start_ray(ray, self.workers, self.address)
        last_row = [began]

        def take(row: dict[str, Any]) -> None:
            on_row(row)
            last_row[0] = time.perf_counter()

        try:
            pool = RayActors(ray, cells[0].profiles if cells else {}, self.warm)
            self.start_s = time.perf_counter() - began
            last_row[0] = time.perf_counter()
            return LocalProcesses(pool).run(cells, run_cell, take, may_start, lost_row)  # type: ignore[arg-type]
        finally:
            if started_here:
                ray.shutdown()
            self.stop_s = time.perf_counter() - last_row[0]


def start_ray(ray: Any, workers: int, address: str | None) -> None:
    """Join the cluster at `address`, or start a local Ray of `workers` CPUs (its workers inherit this
    process's environment and working directory, so they import this ctxbench).

    Ray's own log lines on stderr (ours): a local Ray started here prints only its errors (its INFO and
    WARNING lines, "Started a local Ray instance", token authentication, are about an instance that lives
    for this invocation alone); a cluster joined prints its warnings too, as they are its owner's to see."""
    try:
        if address:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        from harness.core.secrets import redact_text

        where = f"--ray-address {redact_text(address)}" if address else "a local Ray"
        raise ConfigError(f"--executor ray: cannot join or start {where}: {exc}") from exc
