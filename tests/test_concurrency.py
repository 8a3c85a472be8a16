"""Concurrency for real models (issue 7.2): a per-model limit on simultaneous requests across run threads."""
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness import api
from harness.results import read_runs
from harness.runner import Matrix, run_cells
from tasks.suites import load_tasks

ROOT = Path(__file__).resolve().parents[1]


def http_profiles(server, max_concurrency):
    profiles = api.mock_profiles("openai/mock-agent", api_base=server.url, price_model="claude-sonnet-4-6")
    profiles["main"]["max_concurrency"] = max_concurrency
    return profiles


@pytest.mark.parametrize("workers", [1, 2])
def test_threads_keep_the_model_limit_busy_and_never_exceed_it(mock_server, tmp_path, workers):
    """Runs against a real model are threads; at most max_concurrency requests are in flight, and no fewer."""
    server = mock_server(latency_s=0.03)
    out = api.run("smoke", strategies="none", seeds=range(4), profiles=http_profiles(server, 3), out=tmp_path / "r",
                  workers=workers)
    rows = read_runs(out)
    assert len(rows) == 4 * len(load_tasks("smoke")) and all(r["termination"] == "submitted" for r in rows)
    assert server.peak_in_flight == 3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.benchmark
def test_real_path_wall_time_near_ideal(monkeypatch):
    """Issue 8.6: 64 runs against `ctxbench serve-mock --latency-ms 100` (its own process) at max-concurrency 16
    within 1.3x of requests x latency / concurrency (the run phase, after validation)."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused-by-serve-mock")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "harness", "serve-mock", "--port", str(port), "--latency-ms", "100"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert "serve-mock: http://" in server.stdout.readline()
        profiles = api.mock_profiles("openai/mock-agent", api_base=f"http://127.0.0.1:{port}/v1",
                                     price_model="claude-sonnet-4-6")
        profiles["main"]["max_concurrency"] = 16
        matrix = Matrix(tasks=load_tasks("default"), strategies=api.strategy_specs("none"), seeds=list(range(16)),
                        profiles=profiles)
        cells = matrix.build(tempfile.mkdtemp())
        rows = []
        started = time.perf_counter()
        run_cells(cells, workers=1, on_row=rows.append, progress=False)
        wall = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait()
    requests = sum(r["requests"] + r["retries"] for r in rows)
    ideal = requests * 0.1 / 16
    print(f"64 runs, {requests} requests: {wall:.2f}s, ideal {ideal:.2f}s, ratio {wall / ideal:.2f}")
    assert len(rows) == 64 and wall <= 1.3 * ideal
