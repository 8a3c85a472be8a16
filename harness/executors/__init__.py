"""Executors: what runs a batch of cells (issue 23 item 1). The runner knows only `Executor` and
`make_executor`; nothing here imports the runner."""
from __future__ import annotations

from typing import Any

from harness.errors import ConfigError
from harness.executors import local_processes
from harness.executors.base import Executor, settle_heap
from harness.executors.in_process import InProcess

EXECUTORS = ("local", "in_process")

__all__ = ["EXECUTORS", "Executor", "make_executor", "settle_heap"]


def make_executor(name: str, workers: int, cells: list[Any]) -> Executor:
    """The executor `name` for these cells: "local" runs them on local worker processes or threads
    (harness.executors.local_processes.worker_pool says how many) or here when one at a time is all
    that runs; "in_process" always here, one by one."""
    if name not in EXECUTORS:
        raise ConfigError(f"executor: {name!r} is not one of {list(EXECUTORS)}")
    pool = local_processes.worker_pool(cells, workers) if name == "local" else None
    return InProcess() if pool is None else local_processes.LocalProcesses(pool)
