"""The Ray executor: cells as Ray tasks on a local Ray started here give the rows and event logs
of local processes; the spending limit and the per-model concurrency hold across Ray workers; a worker that dies
mid-cell leaves nothing half-written and its cell is rerun; bad executor options exit 2 before any model call."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray executor's tests need the `ray` extra (pip install -e '.[ray]')")

from harness import api  # noqa: E402

from harness.models import limits

from harness.run import runner
from harness.cli import main  # noqa: E402
from harness.conversation.blobs import BLOBS_DIR  # noqa: E402
from harness.conversation.events import event_log_name, event_logs, read_events  # noqa: E402
from harness.executors import make_executor  # noqa: E402
from harness.models.limits import INVOCATION_SPENDING  # noqa: E402
from harness.results.layout import read_runs  # noqa: E402
from tasks.suites import load_tasks  # noqa: E402

TIME_FIELDS = {"wall_s", "cpu_s", "library_cpu_s"}  # how long a run took: the only fields allowed to differ
EVENT_TIME_FIELDS = {"latency_s"}  # how long a request took (measured): the only event field allowed to differ


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray of 2 CPUs for this module; the test module's functions go to the workers by value (the
    workers cannot import a test module)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    ray.shutdown()


def smoke_cells(events_dir: Path) -> list[runner.Cell]:
    matrix = runner.Matrix(tasks=load_tasks("smoke"), strategies=api.strategy_specs(["none", "observation_masking"]),
                           seeds=[0, 1], profiles=api.mock_profiles())
    return matrix.build(str(events_dir))


def untimed_events(path: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in event.items() if k not in EVENT_TIME_FIELDS} for event in read_events(path)]


def run_with(executor: str, out: Path) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The rows and the event files' events (minus their times) of the smoke cells run on `executor` with 2
    workers."""
    out.mkdir()
    rows: list[dict[str, Any]] = []
    assert runner.run_cells(smoke_cells(out), workers=2, on_row=rows.append, progress=False, executor=executor) == []
    logs = {path.name: untimed_events(path) for path in event_logs(out)}
    return {row["run_id"]: {k: v for k, v in row.items() if k not in TIME_FIELDS} for row in rows}, logs


def test_ray_and_local_processes_give_identical_rows_and_event_logs_on_the_smoke_suite(local_ray, tmp_path):
    """Where a cell runs (a Ray task, its log written in the worker's temporary directory and
    sent back) changes none of its row but its times, nor any event but its measured latencies."""
    rows, logs = run_with("ray", tmp_path / "ray")
    local_rows, local_logs = run_with("local", tmp_path / "local")
    assert len(rows) == len(smoke_cells(tmp_path)) and rows == local_rows
    assert sorted(logs) == sorted(event_log_name(run_id) for run_id in rows) and logs == local_logs
    assert list((tmp_path / "ray" / BLOBS_DIR).iterdir())  # the packs of the texts its logs refer to, sent back


def spend_one(cell: SimpleNamespace) -> dict[str, Any]:
    """A stand-in for run_cell: says what was spent when it started and in which process, then spends 1 USD
    (limits.INVOCATION_SPENDING through its module: this function goes to the workers by value, its module's
    objects with it, but a module by name)."""
    spent = limits.INVOCATION_SPENDING.spent
    limits.INVOCATION_SPENDING.add(1.0)
    return {"run_id": cell.run_id, "spent_at_start": spent, "pid": os.getpid()}


def no_lost_rows(cell: Any, error: BaseException) -> dict[str, Any]:
    raise AssertionError(f"{cell.run_id} raised {error!r}")


def test_the_spending_limit_holds_across_ray_workers_and_the_rest_come_back_unstarted(local_ray, tmp_path):
    """`--max-total-cost-usd` across the cluster: the workers' spending reaches the parent through
    the spending actor; a cell starts only while may_start() holds (at most one per other CPU overruns it, in
    flight already); the cells never started come back in the order given."""
    cells = [SimpleNamespace(run_id=f"c{index}", events_dir=str(tmp_path), task=SimpleNamespace(task_id="t"),
                             profiles=api.mock_profiles()) for index in range(8)]
    rows: list[dict[str, Any]] = []
    INVOCATION_SPENDING.start(2.5)
    try:
        unstarted = make_executor("ray", 2, cells).run(cells, spend_one, rows.append,
                                                       lambda: not INVOCATION_SPENDING.exhausted(), no_lost_rows)
        spent = INVOCATION_SPENDING.spent
    finally:
        INVOCATION_SPENDING.start(None)
    # Three cells reach 2.5 USD; the other worker's cell may be in flight already when the third spends (it
    # started below the limit, or at it: an overrun), so 3 or 4 run, never more.
    overrun = [row for row in rows if row["spent_at_start"] >= 2.5]
    assert 3 <= len(rows) <= 4 and len(overrun) <= 1 and spent == len(rows) and unstarted
    assert os.getpid() not in {row["pid"] for row in rows}  # they ran in Ray workers
    assert sorted([row["run_id"] for row in rows] + [cell.run_id for cell in unstarted]) == [f"c{i}" for i in range(8)]
    assert [cells.index(cell) for cell in unstarted] == sorted(cells.index(cell) for cell in unstarted)


def test_a_reused_ray_worker_keeps_no_limit_of_an_earlier_invocation(local_ray, tmp_path):
    """Ours (a fix): Ray reuses worker processes across invocations; one that ran cells under a spending limit
    must not count a later invocation's spending against that limit's (gone) actor."""
    cells = [SimpleNamespace(run_id=f"c{index}", events_dir=str(tmp_path), task=SimpleNamespace(task_id="t"),
                             profiles=api.mock_profiles()) for index in range(4)]
    INVOCATION_SPENDING.start(1.5)
    try:
        make_executor("ray", 2, cells).run(cells, spend_one, lambda row: None,
                                           lambda: not INVOCATION_SPENDING.exhausted(), no_lost_rows)
    finally:
        INVOCATION_SPENDING.start(None)
    rows: list[dict[str, Any]] = []
    assert make_executor("ray", 2, cells).run(cells, spend_one, rows.append, None, no_lost_rows) == []
    assert len(rows) == 4 and all(row["spent_at_start"] < 2 for row in rows)  # each worker counts its own from 0


@pytest.mark.slow  # a serve-mock run / a worker restarted: run with -m slow
def test_max_concurrency_holds_across_ray_workers(local_ray, mock_server, tmp_path):
    """`--max-concurrency` across the cluster: with 2 Ray workers each running a cell against
    serve-mock, the per-model slots actor lets one request at a time reach the model (each worker's own
    semaphore would let two)."""
    server = mock_server(latency_s=0.05)
    profiles = api.mock_profiles("openai/mock-agent", api_base=server.url, price_model="claude-sonnet-4-6")
    profiles["main"]["params"] = {"api_key": "unused-by-serve-mock"}  # the workers started before the test's env
    out = api.run("smoke", strategies="none", seeds=range(2), profiles=profiles, out=tmp_path / "r", workers=2,
                  max_concurrency=1, executor="ray")
    rows = read_runs(out)
    assert len(rows) == 2 * len(load_tasks("smoke")) and all(row["termination"] == "submitted" for row in rows)
    assert server.peak_in_flight == 1


def die_once_mid_cell(cell: runner.Cell) -> dict[str, Any]:
    """run_cell, but the first attempt (no marker file yet) writes half an event line in the worker's event
    directory and ends its process, as a crash in C or a kill would."""
    marker = Path(cell.marker)
    if not marker.exists():
        marker.write_text("died once\n")
        log = Path(cell.events_dir) / event_log_name(cell.run_id)
        log.write_text('{"id": 0, "type": "run_st')
        os._exit(1)
    return runner.run_cell(cell)


@pytest.mark.slow  # a serve-mock run / a worker restarted: run with -m slow
def test_a_worker_that_dies_mid_cell_leaves_nothing_half_written_and_the_cell_is_rerun(local_ray, tmp_path):
    """A Ray worker dying mid-cell returns nothing, so the results directory gets no torn log;
    Ray runs the task again and the cell ends with one row and its whole event log (the one a run here writes)."""
    out, serial = tmp_path / "events", tmp_path / "serial"
    out.mkdir()
    serial.mkdir()
    cell = smoke_cells(out)[0]
    cell.marker = str(tmp_path / "marker")
    rows: list[dict[str, Any]] = []
    assert make_executor("ray", 2, [cell]).run([cell], die_once_mid_cell, rows.append, None, no_lost_rows) == []
    assert Path(cell.marker).exists()  # the first attempt did die
    expected = runner.run_cell(smoke_cells(serial)[0])
    assert [row["run_id"] for row in rows] == [cell.run_id] and rows[0]["termination"] == expected["termination"]
    assert sorted(path.name for path in out.iterdir() if path.is_file()) == [event_log_name(cell.run_id)]
    assert untimed_events(out / event_log_name(cell.run_id)) == untimed_events(serial / event_log_name(cell.run_id))


def test_resume_on_ray_finishes_a_run_and_says_which_executor_ran(local_ray, tmp_path):
    """`run --resume` with `--executor ray`: a run cut short locally is finished on Ray with
    the rows it would have had; config.json records the executor, with the Ray address scrubbed of its
    credentials (harness.core.secrets)."""
    out = api.run("smoke", strategies="none", out=tmp_path / "r", executor="in_process")
    rows = {row["run_id"]: row for row in read_runs(out)}
    kept = (out / "runs.jsonl").read_text().splitlines(keepends=True)[:2]
    (out / "runs.jsonl").write_text("".join(kept))
    api.resume(out, executor="ray", workers=2)
    resumed = {row["run_id"]: row for row in read_runs(out)}
    assert {k: {f: v for f, v in r.items() if f not in TIME_FIELDS} for k, r in resumed.items()} == {
        k: {f: v for f, v in r.items() if f not in TIME_FIELDS} for k, r in rows.items()}
    assert json.loads((out / "config.json").read_text())["executor"] == {"name": "in_process"}
    assert api.executor_info("ray", "ray://user:hunter2@head:10001") == {"name": "ray",
                                                                        "ray_address": "ray://<redacted>@head:10001"}


SMOKE = ["run", "--suite", "smoke", "--strategies", "none", "--no-progress"]


@pytest.mark.parametrize("argv, message", [
    (["--executor", "cluster"], "--executor: 'cluster' is not one of"),
    (["--ray-address", "auto"], "--ray-address is the address of a Ray cluster: give it with --executor ray"),
])
def test_bad_executor_options_exit_2_before_anything_runs(tmp_path, capsys, argv, message):
    """An unknown executor, or a Ray address without the Ray executor, is a ConfigError
    naming the option: exit 2, nothing written, no model called."""
    out = tmp_path / "r"
    assert main([*SMOKE, "--out", str(out), *argv]) == 2
    assert message in capsys.readouterr().err and not out.exists()


def test_a_missing_ray_extra_exits_2_naming_it(tmp_path, capsys, monkeypatch):
    """--executor ray without Ray installed names the extra that installs it, before anything
    runs; `run --resume` checks it too."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    out = tmp_path / "r"
    assert main([*SMOKE, "--out", str(out), "--executor", "ray"]) == 2
    assert "pip install -e '.[ray]'" in capsys.readouterr().err and not out.exists()
    assert main(["run", "--resume", str(tmp_path), "--executor", "ray"]) == 2
    assert "pip install -e '.[ray]'" in capsys.readouterr().err
