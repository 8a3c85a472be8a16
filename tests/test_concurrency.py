"""Concurrency for real models (issue 7.2): a per-model limit on simultaneous requests, across threads and processes."""
import os
import tempfile
import time

import pytest

from harness import api
from harness.results import read_runs
from harness.runner import Matrix, run_cells
from tasks.suites import load_tasks


def http_profiles(server, max_concurrency):
    profiles = api.mock_profiles("openai/mock-agent", api_base=server.url, price_model="claude-sonnet-4-6")
    profiles["main"]["max_concurrency"] = max_concurrency
    return profiles


def test_threads_keep_the_model_limit_busy_and_never_exceed_it(mock_server, tmp_path):
    server = mock_server(latency_s=0.03)
    out = api.run("smoke", strategies="none", seeds=range(4), profiles=http_profiles(server, 3), out=tmp_path / "r",
                  workers=1)
    rows = read_runs(out)
    assert len(rows) == 12 and all(r["termination"] == "submitted" for r in rows)
    assert server.peak_in_flight == 3


@pytest.mark.slow
def test_worker_processes_share_the_model_limit(mock_server, tmp_path):
    server = mock_server(latency_s=0.03)
    out = api.run("smoke", strategies="none", seeds=range(4), profiles=http_profiles(server, 3), out=tmp_path / "r",
                  workers=2)
    assert len(read_runs(out)) == 12
    assert server.peak_in_flight == 3


@pytest.mark.benchmark
def test_real_path_wall_time_near_ideal(mock_server):
    """Issue 8.6: 64 runs against serve-mock with 100 ms latency at max-concurrency 16 within 1.3x of
    requests x latency / concurrency (the harness's run phase, after validation)."""
    server = mock_server(latency_s=0.1)
    matrix = Matrix(tasks=load_tasks("default"), strategies=api.strategy_specs("none"), seeds=list(range(16)),
                    profiles=http_profiles(server, 16))
    cells = matrix.build(tempfile.mkdtemp())
    rows = []
    started = time.perf_counter()
    run_cells(cells, workers=os.cpu_count() or 1, on_row=rows.append, progress=False)
    wall = time.perf_counter() - started
    ideal = server.requests * 0.1 / 16
    print(f"64 runs, {server.requests} requests: {wall:.2f}s, ideal {ideal:.2f}s, ratio {wall / ideal:.2f}")
    assert len(rows) == 64 and wall <= 1.3 * ideal
