"""The executor interface: one package, harness/executors, that runs cells for the runner
without importing it; in-process and local-process executors give the same rows."""
from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import harness
from harness.run import runner
from harness.api import mock_profiles, strategy_specs
from harness.core.errors import ConfigError
from harness.executors import make_executor
from harness.models.limits import INVOCATION_SPENDING
from tasks.suites import load_tasks

HARNESS = Path(harness.__file__).parent
TIME_FIELDS = {"wall_s", "cpu_s", "library_cpu_s"}  # how long a run took: the only fields allowed to differ


def module_names() -> list[str]:
    return ["harness"] + [info.name for info in pkgutil.walk_packages([str(HARNESS)], "harness.")]


def module_file(name: str) -> Path:
    path = HARNESS.parent.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported(name: str, known: set[str]) -> set[str]:
    """The harness modules that module `name` imports anywhere in its file (at module level or inside a
    function), with the packages each import runs first (but its own packages: they ran before it)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module_file(name).read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            found.update(".".join(parts[:end]) for end in range(2, len(parts) + 1))  # a package runs its __init__
    own = {".".join(name.split(".")[:end]) for end in range(1, name.count(".") + 2)}
    return (found & known) - own


def import_graph() -> dict[str, set[str]]:
    known = set(module_names())
    return {name: imported(name, known) for name in known}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan): each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in graph:
        if node not in index:
            visit(node)
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for other in graph[todo.pop()] - seen:
            seen.add(other)
            todo.append(other)
    return seen


def test_every_harness_module_imports():
    """Nothing still imports the modules the executors replaced (harness.pool,
    harness.process_threads)."""
    for name in module_names():
        if not name.endswith("__main__"):  # it runs the CLI
            importlib.import_module(name)
    assert not module_file("harness.pool").exists() and not module_file("harness.process_threads").exists()


def test_the_runner_and_the_executors_sit_in_no_import_circle():
    """runner -> pool -> process_threads -> runner.build_profiles was a circle; the runner,
    the invocation and the executors are in none now (function-level imports count)."""
    graph = import_graph()
    assert "harness.models.mock.provider" in graph["harness.models.profiles"], "the walk misses function-level imports"
    watched = {"harness.run.runner", "harness.run.invocation", "harness.models.profiles"} | {
        name for name in graph if name.startswith("harness.executors")}
    assert [circle for circle in cycles(graph) if circle & watched] == []


def test_no_executor_imports_the_runner_even_indirectly():
    """The unit of work (runner.run_cell) is handed to an executor as a callable, so no
    executor imports the runner or what sits above it (invocation, api, cli)."""
    graph = import_graph()
    above = {"harness.run.runner", "harness.run.invocation", "harness.api", "harness.cli"}
    for name in (name for name in graph if name.startswith("harness.executors")):
        assert reachable(graph, name) & above == set(), name


def smoke_cells(events_dir: Path) -> list[runner.Cell]:
    matrix = runner.Matrix(tasks=load_tasks("smoke"), strategies=strategy_specs(["none", "observation_masking"]),
                           seeds=[0, 1], profiles=mock_profiles())
    return matrix.build(str(events_dir))


def run_with(executor: str, out: Path) -> dict[str, dict[str, Any]]:
    out.mkdir()
    rows: list[dict[str, Any]] = []
    assert runner.run_cells(smoke_cells(out), workers=2, on_row=rows.append, progress=False, executor=executor) == []
    return {row["run_id"]: {k: v for k, v in row.items() if k not in TIME_FIELDS} for row in rows}


def test_in_process_and_local_processes_give_identical_rows_on_the_smoke_suite(tmp_path):
    """Where a cell runs changes none of its row but its times."""
    local = run_with("local", tmp_path / "local")
    serial = run_with("in_process", tmp_path / "serial")
    assert len(local) == len(smoke_cells(tmp_path)) and local == serial


def spend_one(cell: SimpleNamespace) -> dict[str, Any]:
    """A stand-in for run_cell: says what was spent when it started and where it ran, then spends 1 USD."""
    spent = INVOCATION_SPENDING.spent
    INVOCATION_SPENDING.add(1.0)
    return {"run_id": cell.name, "spent_at_start": spent, "pid": os.getpid()}


def no_lost_rows(cell: Any, error: BaseException) -> dict[str, Any]:
    raise AssertionError(f"{cell.name} raised {error!r}")


def fake_cells(count: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=f"c{index}", task=SimpleNamespace(task_id=f"t{index % 3}"), profiles=mock_profiles())
            for index in range(count)]


@pytest.mark.parametrize("name", ["in_process", "local"])
def test_cells_start_only_below_the_spending_limit_and_the_rest_come_back_unstarted(name):
    """`--max-total-cost-usd`: each executor starts a cell only while may_start() holds (at
    most one per other worker overruns it, in flight already), and returns the cells it never started, in the
    order given; worker processes share the spending."""
    cells = fake_cells(8)
    rows: list[dict[str, Any]] = []
    INVOCATION_SPENDING.start(2.5)
    try:
        unstarted = make_executor(name, 2, cells).run(cells, spend_one, rows.append,
                                                       lambda: not INVOCATION_SPENDING.exhausted(), no_lost_rows)
    finally:
        INVOCATION_SPENDING.start(None)
    # Three cells start below 2.5 USD; with 2 workers a fourth may already be queued on the other one when
    # the third spends (a real run then ends `budget` at its first request: runner._loop).
    overrun = [row for row in rows if row["spent_at_start"] >= 2.5]
    assert len(rows) - len(overrun) == 3 and len(overrun) <= (0 if name == "in_process" else 1) and unstarted
    ran = [row["run_id"] for row in rows]
    assert sorted(ran + [cell.name for cell in unstarted]) == sorted(cell.name for cell in cells)  # each once
    assert [cells.index(cell) for cell in unstarted] == sorted(cells.index(cell) for cell in unstarted)
    if name == "in_process":
        assert [row["run_id"] for row in rows] == ["c0", "c1", "c2"]


def test_a_workers_rows_reach_the_callback_in_the_parent():
    """The parent alone takes the rows (it writes runs.jsonl), each as its cell finishes."""
    cells = fake_cells(6)
    seen: list[tuple[str, int, str]] = []
    INVOCATION_SPENDING.start(None)
    unstarted = make_executor("local", 2, cells).run(
        cells, spend_one, lambda row: seen.append((row["run_id"], row["pid"], threading.current_thread().name)),
        None, no_lost_rows)
    assert unstarted == [] and sorted(run_id for run_id, _, _ in seen) == sorted(cell.name for cell in cells)
    assert {pid for _, pid, _ in seen} - {os.getpid()} and os.getpid() not in {pid for _, pid, _ in seen}
    assert {thread for _, _, thread in seen} == {threading.main_thread().name}


def test_an_unknown_executor_is_a_config_error():
    """Bad input is a ConfigError naming it (ours)."""
    with pytest.raises(ConfigError, match="executor: 'cluster' is not one of"):
        make_executor("cluster", 2, fake_cells(2))


@pytest.mark.parametrize("address, level", [(None, "ERROR"), ("auto", "WARNING")])
def test_ray_prints_its_errors_only_for_a_local_ray_and_its_warnings_too_for_a_cluster(address, level):
    """Ours: a local Ray started for one invocation keeps its INFO/WARNING lines (token authentication, "Started
    a local Ray instance") off the user's stderr; a cluster joined shows its owner's warnings."""
    import logging

    from harness.executors.ray_cluster import start_ray

    calls: list[dict[str, Any]] = []
    start_ray(SimpleNamespace(init=lambda **kwargs: calls.append(kwargs)), 2, address)
    assert calls[0]["logging_level"] == getattr(logging, level)
    assert calls[0]["log_to_driver"] is False
