"""Outages are not results: a run that ends on a transport, timeout or server error after
its retries is an `error` row with `transient: true`; `--resume` reruns those (`--rerun-errors`: every
`error` row) and runs.jsonl keeps one row per cell, the last."""
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import litellm
import openai
import pytest

from harness.cli import main
from harness.conversation.events import event_log_name, read_events
from harness.models.mock.provider import MockConfig
from harness.results.layout import RUNS_FILE, read_runs
from harness.models.retry import is_retryable
from harness.models.serve_mock.server import MockServer
from outages import CRASH_FLAG

ROOT = Path(__file__).resolve().parents[2]
CLOCK_FIELDS = {"wall_s", "cpu_s", "library_cpu_s"}
SMOKE = ["run", "--suite", "smoke", "--seeds", "0", "--workers", "1", "--no-progress"]


def rows_of(out):
    """runs.jsonl's rows, one per line (a duplicate or broken line fails here)."""
    rows = [json.loads(line) for line in (out / RUNS_FILE).read_text().splitlines()]
    assert len({row["run_id"] for row in rows}) == len(rows), "a cell has two rows"
    return rows


def without_clocks(rows):
    return {row["run_id"]: {k: v for k, v in row.items() if k not in CLOCK_FIELDS} for row in rows}


@pytest.mark.parametrize("error", [
    httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), ConnectionResetError("reset"), TimeoutError("slow"),
    openai.APIConnectionError(request=httpx.Request("POST", "http://x")),
    openai.APITimeoutError(request=httpx.Request("POST", "http://x")),
    litellm.ServiceUnavailableError(message="down", llm_provider="x", model="x"),
])
def test_transport_and_server_failures_of_every_client_layer_are_transient(error):
    """Litellm's transient errors and the openai/httpx/socket ones it may let through unmapped."""
    assert is_retryable(error)


def test_request_and_program_errors_are_not_transient():
    """A bad request or a bug is a result, not an outage."""
    assert not is_retryable(litellm.BadRequestError(message="bad", llm_provider="x", model="x"))
    assert not is_retryable(ValueError("bug"))


def test_an_outage_is_a_transient_error_row_and_resume_replaces_it(tmp_path, capsys):
    """Every request fails with a server error (the mock's seeded faults, no retries): each row is
    `error` with transient true; --resume reruns them (the same faults: the same outcome) and replaces the rows,
    runs.jsonl keeping one per cell, and each event log is the rerun's."""
    out = tmp_path / "r"
    assert main([*SMOKE, "--strategies", "none", "--out", str(out), "--mock-faults", '{"server_error": 1.0}',
                 "--retry", '{"max_retries": 0}']) == 0
    first = rows_of(out)
    assert first and all(row["termination"] == "error" and row["transient"] is True for row in first)
    assert all("InternalServerError" in row["error"] for row in first)
    events = read_events(out / "events" / event_log_name(first[0]['run_id']))
    assert events[-1]["transient"] is True
    for row in first:  # mark the old logs: a rerun writes its own
        (out / "events" / event_log_name(row['run_id'])).write_text(json.dumps({"type": "old"}) + "\n")
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert f"rerunning {len(first)} run(s) that ended on an outage" in capsys.readouterr().err
    again = rows_of(out)
    assert sorted(row["run_id"] for row in again) == sorted(row["run_id"] for row in first)
    for row in again:
        assert read_events(out / "events" / event_log_name(row['run_id']))[0]["type"] == "run_start"


@pytest.mark.slow  # the default run keeps the outage-then-resume rule on a shorter run (transient row, resume)
def test_resume_after_a_server_outage_ends_like_an_uninterrupted_run(mock_server, tmp_path, capsys):
    """Serve-mock failing every request, then a healthy serve-mock at the same address (the
    provider came back): --resume reruns the transient rows, and the directory ends with exactly one row per
    cell, the same rows as a run that met no outage. (The old code kept the error rows for good.)"""
    healthy = mock_server()
    args = [*SMOKE, "--strategies", "none", "--model", "openai/mock-agent", "--price-model", "claude-sonnet-4-6",
            "--window", "200000", "--retry", '{"max_retries": 1, "initial_delay_s": 0}']
    assert main([*args, "--api-base", healthy.url, "--out", str(tmp_path / "whole")]) == 0
    expected = without_clocks(rows_of(tmp_path / "whole"))
    down = mock_server(faults={"server_error": 1.0})
    port, url = down.server_address[1], down.url
    out = tmp_path / "outage"
    assert main([*args, "--api-base", url, "--out", str(out)]) == 0
    assert all(row["transient"] is True for row in rows_of(out))
    down.shutdown()
    down.server_close()
    back = MockServer(port, MockConfig())  # the provider is back, at the same address
    back.start()
    try:  # a later invocation, as a user's would be (this process's HTTP connections reached the old server)
        resumed = subprocess.run([sys.executable, "-m", "harness", "run", "--resume", str(out), "--no-progress"],
                                 cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    finally:
        back.shutdown()
        back.server_close()
    assert resumed.returncode == 0, resumed.stderr
    assert without_clocks(rows_of(out)) == expected
    for run_id in expected:
        calls = [e for e in read_events(out / "events" / event_log_name(run_id)) if e["type"] == "llm_call"]
        assert calls and all(e["ok"] for e in calls)  # the outage's log was overwritten


def test_rerun_errors_reruns_error_rows_that_plain_resume_keeps(tmp_path, monkeypatch, capsys):
    """A crash of the strategy's own is an `error` row with transient false, kept by --resume;
    --rerun-errors reruns it, and its new row replaces it. An outage raised out of a strategy is transient."""
    out = tmp_path / "r"
    monkeypatch.setenv(CRASH_FLAG, "bug")
    assert main([*SMOKE, "--strategies", "outages:CrashWhileFlagged", "--out", str(out)]) == 0
    first = rows_of(out)
    assert all(row["termination"] == "error" and row["transient"] is False for row in first)
    monkeypatch.delenv(CRASH_FLAG)
    before = (out / RUNS_FILE).read_bytes()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert (out / RUNS_FILE).read_bytes() == before  # not an outage: a result, kept
    assert main(["run", "--resume", str(out), "--rerun-errors", "--no-progress"]) == 0
    again = rows_of(out)
    assert len(again) == len(first) and all(row["termination"] != "error" for row in again)

    monkeypatch.setenv(CRASH_FLAG, "outage")
    assert main([*SMOKE, "--strategies", "outages:CrashWhileFlagged", "--out", str(tmp_path / "o")]) == 0
    assert all(row["transient"] is True for row in rows_of(tmp_path / "o"))
    assert main([*SMOKE, "--strategies", "none", "--out", str(tmp_path / "x"), "--rerun-errors"]) == 2
    assert "--rerun-errors works on a results directory" in capsys.readouterr().err


def test_readers_take_the_last_row_of_a_cell_and_resume_leaves_one(tmp_path):
    """A rerun appends its row before runs.jsonl is rewritten; killed in between, the file holds
    two rows of a cell. Readers take the last; the next --resume rewrites the file with one row per cell."""
    out = tmp_path / "r"
    assert main([*SMOKE, "--strategies", "none", "--out", str(out)]) == 0
    rows = rows_of(out)
    newer = {**rows[0], "score": 0.25}
    with open(out / RUNS_FILE, "a") as handle:
        handle.write(json.dumps(newer) + "\n")
    assert [row["score"] for row in read_runs(out) if row["run_id"] == newer["run_id"]] == [0.25]
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    after = rows_of(out)
    assert len(after) == len(rows)
    assert next(row for row in after if row["run_id"] == newer["run_id"])["score"] == 0.25
