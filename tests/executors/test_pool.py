"""Runs spread over worker processes (harness.executors.local_processes): limits and spending hold in total, and the runs of
one task instance stay in one worker."""
import os
import time
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from harness.run import runner
from harness.executors import base, local_processes as pool
from harness.api import mock_profiles, run
from harness.models.limits import INVOCATION_SPENDING, model_slot
from harness.executors.process_threads import ThreadsInProcesses
from harness.results.layout import read_runs
from tests.models.test_server import comparable


def hold_slot(key: str, limit: int, seconds: float, cost: float) -> tuple[int, float, float]:
    """Hold a request slot for a while, then spend; says where and when it held the slot."""
    with model_slot(key, limit):
        start = time.monotonic()
        time.sleep(seconds)
        end = time.monotonic()
    INVOCATION_SPENDING.add(cost)
    return os.getpid(), start, end


def fail() -> None:
    raise ValueError("raised in a worker")


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    peak = current = 0
    for _, step in edges:
        current += step
        peak = max(peak, current)
    return peak


PROFILES = {"main": {"model": "openai/x", "api_base": "http://127.0.0.1:9/v1", "max_concurrency": 3}}
SLOT = "openai/x@http://127.0.0.1:9/v1"


def workers(processes: int, threads: int) -> ThreadsInProcesses:
    return ThreadsInProcesses(processes, threads, PROFILES, pool._start_method())


def test_worker_processes_share_the_model_limit_and_the_invocation_spending():
    """The invocation's --max-concurrency holds across processes, and what each spends counts for all."""
    INVOCATION_SPENDING.start(7.0)
    try:
        with workers(2, 4) as executor:
            futures = [executor.submit(hold_slot, SLOT, 3, 0.05, 0.5) for _ in range(16)]
            results = [future.result(timeout=60) for future in futures]
            failed = executor.submit(fail)
            with pytest.raises(ValueError, match="raised in a worker"):
                failed.result(timeout=60)
        assert len({pid for pid, _, _ in results}) == 2 and os.getpid() not in {pid for pid, _, _ in results}
        assert most_at_once([(start, end) for _, start, end in results]) == 3
        assert INVOCATION_SPENDING.spent == pytest.approx(8.0) and INVOCATION_SPENDING.exhausted()
    finally:
        INVOCATION_SPENDING.start(None)


def test_many_runs_in_flight_use_several_processes(monkeypatch):
    cells = [type("Cell", (), {"profiles": {"main": {"model": "openai/x", "max_concurrency": 16}}})()] * 64
    monkeypatch.setattr(pool.os, "cpu_count", lambda: 2)
    executor = pool.worker_pool(cells, workers=1)
    with executor:
        assert isinstance(executor, ThreadsInProcesses) and executor.processes * executor.threads == 64
    monkeypatch.setattr(pool.os, "cpu_count", lambda: 1)
    executor = pool.worker_pool(cells, workers=1)
    with executor:
        assert not isinstance(executor, ThreadsInProcesses)


@pytest.mark.slow
def test_runs_in_worker_processes_match_the_in_process_mock(mock_server, tmp_path, monkeypatch):
    """Spread over processes, runs against serve-mock give the in-process mock's rows, within the limit."""
    server = mock_server(latency_s=0.01)
    monkeypatch.setattr(pool, "RUNS_PER_PROCESS", 2)
    monkeypatch.setattr(pool.os, "cpu_count", lambda: 2)
    local = run("smoke", strategies="none", seeds=range(2), out=tmp_path / "local", workers=1)
    profiles = mock_profiles("openai/mock-agent", api_base=server.url, price_model="claude-sonnet-4-6")
    remote = run("smoke", strategies="none", seeds=range(2), profiles=profiles, out=tmp_path / "http", workers=1,
                 max_concurrency=2)
    remote_rows = read_runs(remote)
    assert comparable(remote_rows) == comparable(read_runs(local))
    assert server.peak_in_flight == 2
    assert server.requests == sum(r["requests"] for r in remote_rows)


class Unpicklable(Exception):
    def __init__(self, what: str, extra: int):
        super().__init__(what)


def fail_unpicklably() -> None:
    raise Unpicklable("cannot be rebuilt from its args", 1)


def test_an_error_that_cannot_cross_processes_still_reaches_the_caller():
    with workers(1, 1) as executor:
        with pytest.raises(RuntimeError, match="Unpicklable: cannot be rebuilt from its args"):
            executor.submit(fail_unpicklably).result(timeout=60)


def test_the_heap_is_settled_once_per_process_before_runs_start(monkeypatch, tmp_path):
    """run_cells takes what is already allocated out of the collector's reach (a full collection
    over litellm's objects cost ~0.3 s in the middle of a run), collecting garbage first, once."""
    import gc

    collections = []
    monkeypatch.setattr(base, "_heap_settled", False)
    monkeypatch.setattr(base.gc, "collect", lambda: collections.append(1) or 0)
    frozen = gc.get_freeze_count()
    kept = [[index] for index in range(1000)]  # allocated before the runs: must end up frozen
    run("smoke", strategies="none", profiles=mock_profiles(), out=tmp_path / "a", progress=False)
    assert gc.get_freeze_count() >= frozen + len(kept) and collections == [1]
    run("smoke", strategies="none", profiles=mock_profiles(), out=tmp_path / "b", progress=False)
    assert collections == [1], "settled again: a second full collection"
    gc.unfreeze()


def cells_of(tasks: dict[str, int]) -> list[SimpleNamespace]:
    return [SimpleNamespace(task=SimpleNamespace(task_id=task), name=f"{task}{index}")
            for task, count in tasks.items() for index in range(1, count + 1)]


def names(cells: list[SimpleNamespace]) -> list[str]:
    return [cell.name for cell in cells]


def test_a_worker_keeps_its_task_then_starts_a_new_one_then_helps_with_the_longest():
    """CellPlan: a task instance's runs share texts that a process tokenizes once, so a worker stays on its
    task; a free worker starts a task nobody has started; at the end it takes from the task with the most
    cells left."""
    plan = pool.CellPlan(cells_of({"A": 4, "B": 2, "C": 1}))
    taken = [(worker, plan.take(worker).name) for worker in (0, 1, 0, 1, 1, 1, 0)]
    assert taken == [(0, "A1"), (1, "B1"), (0, "A2"), (1, "B2"), (1, "C1"), (1, "A3"), (0, "A4")]
    assert not plan and plan.remaining() == []


def test_cells_never_handed_out_come_back_in_the_order_given():
    plan = pool.CellPlan(cells_of({"A": 3, "B": 2, "C": 1}))
    assert [plan.take(0).name, plan.take(1).name, plan.take(0).name] == ["A1", "B1", "A2"]
    assert plan and names(plan.remaining()) == ["A3", "B2", "C1"]


class RecordingWorkers:
    """Two worker processes that run each call at once here, noting which worker got which cell."""

    processes = 2

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self.got: dict[str, int] = {}
        self.order: list[int] = []

    def submit_to(self, worker, fn, cell):
        self.got[cell.name] = worker
        self.order.append(worker)
        future: Future = Future()
        future.set_result(fn(cell))
        return future

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_run_cells_sends_each_cell_to_the_worker_it_was_planned_for(monkeypatch):
    workers = RecordingWorkers()
    monkeypatch.setattr(pool, "worker_pool", lambda cells, count: workers)
    monkeypatch.setattr(runner, "run_cell", lambda cell: {"run_id": cell.name})
    cells = cells_of({"A": 4, "B": 4, "C": 4, "D": 4})
    rows: list[dict] = []
    assert runner.run_cells(cells, workers=2, on_row=rows.append, progress=False) == []
    assert sorted(row["run_id"] for row in rows) == sorted(names(cells))
    by_task = {task: {workers.got[f"{task}{index}"] for index in range(1, 5)} for task in "ABCD"}
    assert by_task == {"A": {0}, "B": {1}, "C": {0}, "D": {1}}


def test_workers_with_several_threads_are_filled_evenly(monkeypatch):
    """Runs against real models: 2 processes x 32 threads. Each new cell goes to the least busy worker, so
    both start at once (filling one first left the other idle: measured 1.8-1.95x the ideal wall time)."""
    workers = RecordingWorkers(threads=4)
    monkeypatch.setattr(pool, "worker_pool", lambda cells, count: workers)
    monkeypatch.setattr(runner, "run_cell", lambda cell: {"run_id": cell.name})
    runner.run_cells(cells_of({"A": 4, "B": 4, "C": 4, "D": 4}), workers=1, on_row=lambda row: None, progress=False)
    assert workers.order[:8] == [0, 1] * 4
    assert {task: {workers.got[f"{task}{index}"] for index in range(1, 5)} for task in "ABCD"} == {
        "A": {0}, "B": {1}, "C": {0}, "D": {1}}
