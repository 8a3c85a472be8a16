"""Executors: what runs a batch of cells. The runner knows only `Executor` and
`make_executor`; nothing here imports the runner."""
from __future__ import annotations

from typing import Any, Callable

from harness.core.errors import ConfigError
from harness.executors import local_processes
from harness.executors.base import Executor, runs_under_way, settle_heap
from harness.executors.in_process import InProcess

EXECUTORS = ("local", "in_process", "ray")

__all__ = ["EXECUTORS", "Executor", "check_executor", "make_executor", "runs_under_way", "settle_heap"]


def check_executor(name: str, address: str | None = None) -> None:
    """The executor asked for exists, an address goes with Ray alone, and Ray is installed when asked for:
    a ConfigError before anything runs otherwise."""
    if name not in EXECUTORS:
        raise ConfigError(f"--executor: {name!r} is not one of {list(EXECUTORS)}")
    if address is not None and name != "ray":
        raise ConfigError(f"--ray-address is the address of a Ray cluster: give it with --executor ray "
                          f"(the executor is {name!r})")
    if name == "ray":
        from harness.executors.ray_cluster import import_ray

        import_ray()


def make_executor(name: str, workers: int, cells: list[Any], address: str | None = None,
                  warm: Callable[[], None] | None = None) -> Executor:
    """The executor `name` for these cells: "local" runs them on local worker processes or threads
    (harness.executors.local_processes.worker_pool says how many) or here when one at a time is all
    that runs; "in_process" always here, one by one; "ray" as Ray tasks on the cluster at `address`, or on
    a local Ray of `workers` CPUs (harness.executors.ray_cluster), whose fresh worker processes call `warm`
    before their first cell."""
    check_executor(name, address)
    if name == "ray":
        from harness.executors.ray_cluster import RayCluster

        return RayCluster(workers, address, warm)
    pool = local_processes.worker_pool(cells, workers) if name == "local" else None
    return InProcess() if pool is None else local_processes.LocalProcesses(pool)
