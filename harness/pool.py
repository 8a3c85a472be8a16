"""Which executor runs a batch of cells, and how many cells run at once."""
from __future__ import annotations

import gc
import math
import multiprocessing
import os
import sys
import threading
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from harness.limits import INVOCATION_SPENDING
from harness.process_threads import ThreadsInProcesses

# Runs in flight that one process serves without its CPU holding them up: litellm spends several
# ms of CPU per request under one GIL, so ~100 requests/s per process; with more in flight (short
# latencies), runs are spread over more processes.
RUNS_PER_PROCESS = 32


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


def _start_method() -> str:
    """"fork" when it is safe (Linux, no other thread that could hold a lock), else "spawn".

    A forked worker starts at once with everything imported; a spawned one first spends
    seconds importing litellm, which on a short suite was most of the parallel speed-up.
    """
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _fresh_worker() -> None:
    """A forked worker starts as a spawned one would: spending is the parent's to track."""
    INVOCATION_SPENDING.start(None)


def cell_executor(cells: list[Any], workers: int) -> tuple[Executor | None, int]:
    """The executor for these runs and how many run at once (None: run them one by one here).

    Mock runs use the CPU: one process each. Runs against real models wait on the network:
    threads, sharing the per-model request limits (harness.limits); with a limit, enough runs
    are in flight to keep every slot busy. When more are in flight than one process's CPU
    keeps up with (RUNS_PER_PROCESS), the threads are spread over up to one process per CPU.
    """
    main = cells[0].profiles.get("main", {}) if cells else {}
    if str(main.get("model", "mock/")).startswith("mock/"):
        parallel = min(workers, len(cells))
        if parallel <= 1:
            return None, parallel
        context = multiprocessing.get_context(_start_method())
        return ProcessPoolExecutor(max_workers=parallel, mp_context=context, initializer=_fresh_worker), parallel
    limit = main.get("max_concurrency")
    parallel = min(len(cells), max(workers, 4 * limit if limit else workers))
    if parallel <= 1:
        return None, parallel
    processes = min(os.cpu_count() or 1, math.ceil(parallel / RUNS_PER_PROCESS))
    if processes > 1:
        executor = ThreadsInProcesses(processes, math.ceil(parallel / processes), cells[0].profiles, _start_method())
        return executor, parallel
    return ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="run"), parallel
