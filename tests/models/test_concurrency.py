"""Concurrency for real models: a per-model limit on simultaneous requests across run threads."""
import pytest

from harness import api
from harness.results.layout import read_runs
from tasks.suites import load_tasks


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

