import pytest
"""Spending limits: per run (termination `budget`) and per invocation (no further run starts)."""
import json

from harness.cli import main
from harness.conversation.events import event_log_name, read_events
from harness.run.invocation import UNSTARTED_FILE
from harness.models.limits import INVOCATION_LIMIT_REACHED
from harness.results.layout import read_runs
from tasks.suites import load_tasks

SMOKE = ["run", "--suite", "smoke", "--strategies", "none", "--workers", "1", "--no-progress"]


def test_a_run_reaching_its_budget_ends_budget(tmp_path):
    assert main([*SMOKE, "--out", str(tmp_path / "r"), "--max-cost-usd", "0.005"]) == 0
    rows = read_runs(tmp_path / "r")
    assert rows and all(r["termination"] == "budget" and not r["success"] for r in rows)
    for row in rows:
        assert row["cost_usd"] >= 0.005
        events = read_events(tmp_path / "r" / "events" / event_log_name(row['run_id']))
        calls = [e for e in events if e["type"] == "llm_call"]
        assert sum(e["cost_usd"] for e in calls[:-1]) < 0.005  # it stopped at the first request over the limit
        assert "budget" in events[-1]["error"]


def test_the_invocation_budget_stops_runs_and_lists_those_left(tmp_path, capsys):
    """--max-total-cost-usd: once reached, no run starts and runs in flight stop; resume finishes them."""
    out = tmp_path / "r"
    assert main([*SMOKE, "--seeds", "0,1", "--out", str(out), "--max-total-cost-usd", "0.02"]) == 0
    rows = read_runs(out)
    unstarted = json.loads((out / UNSTARTED_FILE).read_text())
    assert len(rows) == 1 and rows[0]["termination"] == "submitted"
    assert len(unstarted["run_ids"]) == 2 * len(load_tasks("smoke")) - 1
    assert rows[0]["run_id"] not in unstarted["run_ids"]
    # The run in flight when the limit was reached stopped at its next request and left no row.
    stopped = read_events(out / "events" / event_log_name(unstarted['run_ids'][0]))
    assert stopped[-1]["termination"] == "budget" and stopped[-1]["error"] == INVOCATION_LIMIT_REACHED
    costs = [e["cost_usd"] for e in stopped if e["type"] == "llm_call"]
    assert rows[0]["cost_usd"] + sum(costs[:-1]) < 0.02 <= rows[0]["cost_usd"] + sum(costs)
    assert "Spending limit reached" in capsys.readouterr().err
    assert main(["run", "--resume", str(out), "--workers", "1", "--no-progress"]) == 0
    assert len(read_runs(out)) == 2 * len(load_tasks("smoke")) and not (out / UNSTARTED_FILE).exists()


def test_a_budget_reached_before_any_run_finishes_leaves_an_empty_table_not_a_crash(tmp_path, capsys):
    """Spending can run out while every run is still in flight: runs.jsonl is then empty, and the command
    says so, lists every run as unstarted and exits 0; resume finishes them."""
    out = tmp_path / "r"
    assert main([*SMOKE, "--out", str(out), "--max-total-cost-usd", "0.000001"]) == 0
    assert "(no finished runs)" in capsys.readouterr().out
    assert read_runs(out) == []
    assert len(json.loads((out / UNSTARTED_FILE).read_text())["run_ids"]) == len(load_tasks("smoke"))
    assert main(["run", "--resume", str(out), "--workers", "1", "--no-progress"]) == 0
    assert len(read_runs(out)) == len(load_tasks("smoke"))


@pytest.mark.slow  # worker processes start slowly; the default run keeps the same rule in threads
def test_the_invocation_budget_stops_mock_runs_in_flight_in_worker_processes(tmp_path, capsys):
    """With --workers 2 the mock runs in two processes; they share the invocation's spending as threads do,
    so a run in flight stops at its next request once the limit is reached, as with one worker. Each smoke
    run costs ~0.0125 USD in requests of at most ~0.0035: both runs in flight are stopped before finishing."""
    out = tmp_path / "r"
    args = ["run", "--suite", "smoke", "--strategies", "none", "--workers", "2", "--no-progress", "--seeds", "0,1"]
    assert main([*args, "--out", str(out), "--max-total-cost-usd", "0.005"]) == 0
    assert "(no finished runs)" in capsys.readouterr().out and read_runs(out) == []
    unstarted = json.loads((out / UNSTARTED_FILE).read_text())["run_ids"]
    assert len(unstarted) == 2 * len(load_tasks("smoke"))
    stopped = [read_events(path) for path in (out / "events").glob("*.jsonl.gz")]
    assert len(stopped) == 2 and all(events[-1]["error"] == INVOCATION_LIMIT_REACHED for events in stopped)
    costs = [e["cost_usd"] for events in stopped for e in events if e["type"] == "llm_call" and e["ok"]]
    assert 0.005 <= sum(costs) < 0.005 + 2 * max(costs)  # past the limit by at most one request per worker
    assert main(["run", "--resume", str(out), "--workers", "2", "--no-progress"]) == 0
    assert len(read_runs(out)) == 2 * len(load_tasks("smoke")) and not (out / UNSTARTED_FILE).exists()


def test_a_budget_needs_prices(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    code = main([*SMOKE, "--out", str(tmp_path / "r"), "--model", "openai/no-such-model-xyz",
                 "--api-base", "http://127.0.0.1:9/v1", "--max-cost-usd", "1"])
    assert code == 2
    assert "no prices in litellm's cost map" in capsys.readouterr().err
    assert main([*SMOKE, "--out", str(tmp_path / "r2"), "--max-cost-usd", "-1"]) == 2
    assert "--max-cost-usd must be a positive number" in capsys.readouterr().err


def test_the_invocation_budget_stops_runs_in_flight_in_threads(mock_server, tmp_path):
    """Against a real model many runs are in flight at once: they share the invocation's spending."""
    server = mock_server(latency_s=0.01)
    args = ["run", "--suite", "smoke", "--strategies", "none", "--seeds", "0,1,2,3", "--workers", "1", "--no-progress",
            "--model", "openai/mock-agent", "--api-base", server.url, "--price-model", "claude-sonnet-4-6",
            "--max-concurrency", "4", "--out", str(tmp_path / "r")]
    assert main([*args, "--max-total-cost-usd", "0.03"]) == 0
    rows = read_runs(tmp_path / "r")
    unstarted = json.loads((tmp_path / "r" / UNSTARTED_FILE).read_text())["run_ids"]
    assert len(rows) + len(unstarted) == 4 * len(load_tasks("smoke")) and len(unstarted) >= 6
    assert sum(r["cost_usd"] for r in rows) < 0.03 + 0.012  # at most the runs in flight overshoot, and they stop
    assert main(["run", "--resume", str(tmp_path / "r"), "--no-progress"]) == 0
    assert sorted(r["run_id"] for r in read_runs(tmp_path / "r")) == sorted([r["run_id"] for r in rows] + unstarted)
