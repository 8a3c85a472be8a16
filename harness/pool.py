"""Which executor runs a batch of cells, and how many cells run at once."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any


def cell_executor(cells: list[Any], workers: int) -> tuple[Executor | None, int]:
    """The executor for these runs and how many run at once (None: run them one by one here).

    Mock runs use the CPU: one process each. Runs against real models wait on the network:
    threads of this process, sharing its per-model request limits (harness.limits); with a
    limit, enough runs are in flight to keep every slot busy.
    """
    main = cells[0].profiles.get("main", {}) if cells else {}
    if str(main.get("model", "mock/")).startswith("mock/"):
        parallel = min(workers, len(cells))
        if parallel <= 1:
            return None, parallel
        # Fresh interpreters: litellm starts threads, and forking a threaded parent is unsafe.
        return ProcessPoolExecutor(max_workers=parallel, mp_context=multiprocessing.get_context("spawn")), parallel
    limit = main.get("max_concurrency")
    parallel = min(len(cells), max(workers, 4 * limit if limit else workers))
    if parallel <= 1:
        return None, parallel
    return ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="run"), parallel
