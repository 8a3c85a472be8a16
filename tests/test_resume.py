"""Resume (issue 7.4): finished cells are skipped, unfinished ones rerun, rows never lost or doubled."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.events import read_events
from harness.results import RUNS_FILE, read_runs

ROOT = Path(__file__).resolve().parents[1]
CLOCK_FIELDS = {"wall_s", "cpu_s"}


def by_run(rows):
    return {row["run_id"]: {k: v for k, v in row.items() if k not in CLOCK_FIELDS} for row in rows}


def assert_whole(results_dir: Path, expected: dict) -> None:
    """Exactly the expected cells, each once, every line whole JSON, usage totals equal."""
    lines = (results_dir / RUNS_FILE).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]  # a broken line would raise here
    assert sorted(r["run_id"] for r in rows) == sorted(expected)
    assert by_run(rows) == expected
    for field in ("input_tokens", "cached_tokens", "output_tokens", "requests", "cost_usd"):
        assert sum(r[field] for r in rows) == pytest.approx(sum(r[field] for r in expected.values()))
    for run_id in expected:
        events = read_events(results_dir / "events" / f"{run_id}.jsonl")
        assert events[-1]["type"] == "run_end"


def test_resume_repairs_a_torn_line_and_reruns_only_unfinished_cells(tmp_path):
    args = ["run", "--suite", "smoke", "--strategies", "none", "--seeds", "0,1", "--workers", "1", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "whole")]) == 0
    expected = by_run(read_runs(tmp_path / "whole"))
    assert main([*args, "--out", str(tmp_path / "cut")]) == 0
    runs_file = tmp_path / "cut" / RUNS_FILE
    lines = runs_file.read_text(encoding="utf-8").splitlines(keepends=True)
    killed = json.loads(lines[2])["run_id"]
    kept = [json.loads(line)["run_id"] for line in lines[:2]]
    runs_file.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2], encoding="utf-8")  # torn mid-write
    partial = tmp_path / "cut" / "events" / f"{killed}.jsonl"
    partial.write_text("".join(partial.read_text(encoding="utf-8").splitlines(keepends=True)[:4]), encoding="utf-8")
    mtimes = {run_id: (tmp_path / "cut" / "events" / f"{run_id}.jsonl").stat().st_mtime_ns for run_id in kept}
    assert main(["run", "--resume", str(tmp_path / "cut"), "--workers", "1", "--no-progress"]) == 0
    assert_whole(tmp_path / "cut", expected)
    for run_id in kept:  # finished cells were not run again
        assert (tmp_path / "cut" / "events" / f"{run_id}.jsonl").stat().st_mtime_ns == mtimes[run_id]
    assert main(["run", "--resume", str(tmp_path / "cut"), "--no-progress"]) == 0  # nothing left: no change
    assert_whole(tmp_path / "cut", expected)


def test_resume_refuses_matrix_options_and_a_fresh_run_refuses_a_used_directory(tmp_path, capsys):
    args = ["run", "--suite", "smoke", "--strategies", "none", "--workers", "1", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "r")]) == 0
    assert main(["run", "--resume", str(tmp_path / "r"), "--model", "openai/x"]) == 2
    assert "drop --model" in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "r")]) == 2
    assert "already holds runs" in capsys.readouterr().err
    assert main(["run", "--resume", str(tmp_path / "missing")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.slow
def test_resume_after_sigkill_part_way(mock_server, tmp_path):
    """Kill `python -m harness run` with SIGKILL once some rows exist, resume: same cells as an uninterrupted run."""
    server = mock_server(latency_s=0.05)
    args = ["run", "--suite", "smoke", "--strategies", "none", "--seeds", "0,1,2,3", "--workers", "1", "--no-progress",
            "--model", "openai/mock-agent", "--api-base", server.url, "--price-model", "claude-sonnet-4-6",
            "--window", "200000"]
    assert main([*args, "--out", str(tmp_path / "whole")]) == 0
    expected = by_run(read_runs(tmp_path / "whole"))
    out = tmp_path / "killed"
    child = subprocess.Popen([sys.executable, "-m", "harness", *args, "--out", str(out)], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs_file = out / RUNS_FILE
        if runs_file.exists() and runs_file.read_text(encoding="utf-8").count("\n") >= 3:
            break
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    done_before = len(read_runs(out))
    assert 3 <= done_before < len(expected)
    assert main(["run", "--resume", str(out), "--workers", "1", "--no-progress"]) == 0
    assert_whole(out, expected)
