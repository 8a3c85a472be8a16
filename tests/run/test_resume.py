"""Resume: finished cells are skipped, unfinished ones rerun, rows never lost or doubled."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.conversation.events import event_log_name, read_events
from harness.results.layout import RUNS_FILE, read_runs

ROOT = Path(__file__).resolve().parents[2]
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
        events = read_events(results_dir / "events" / event_log_name(run_id))
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
    partial = tmp_path / "cut" / "events" / event_log_name(killed)
    partial.write_bytes(partial.read_bytes()[: partial.stat().st_size // 2])  # a compressed log torn mid-write
    mtimes = {run_id: (tmp_path / "cut" / "events" / event_log_name(run_id)).stat().st_mtime_ns for run_id in kept}
    assert main(["run", "--resume", str(tmp_path / "cut"), "--workers", "1", "--no-progress"]) == 0
    assert_whole(tmp_path / "cut", expected)
    for run_id in kept:  # finished cells were not run again
        assert (tmp_path / "cut" / "events" / event_log_name(run_id)).stat().st_mtime_ns == mtimes[run_id]
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


# --- Resume checks what it resumes ---

@pytest.fixture(scope="module")
def finished_template(tmp_path_factory):
    """A finished smoke run (7 cells), copied by `finished` for each test to damage."""
    out = tmp_path_factory.mktemp("template") / "r"
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--workers", "1", "--no-progress",
                 "--out", str(out)]) == 0
    return out


@pytest.fixture
def finished(finished_template, tmp_path):
    out = tmp_path / "r"
    shutil.copytree(finished_template, out)
    return out


def snapshot(out: Path) -> dict:
    """Every file a resume would trust or write, by content."""
    return {p.relative_to(out): p.read_bytes() for p in out.rglob("*")
            if p.is_file() and p.name != ".lock" and p.parent.name != "plots"}


def replace_line(out: Path, index: int, text: str | bytes) -> None:
    lines = (out / RUNS_FILE).read_bytes().splitlines(keepends=True)
    lines[index] = (text.encode() if isinstance(text, str) else text) + b"\n"
    (out / RUNS_FILE).write_bytes(b"".join(lines))


def resume_refused(out: Path, capsys) -> str:
    """Resume exits 2 without touching the directory; return its message."""
    before = snapshot(out)
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 2
    assert snapshot(out) == before
    return capsys.readouterr().err


@pytest.mark.parametrize("line, problem", [
    ("this is not json", "not a whole JSON row"),
    (None, "not a whole JSON row"),  # the first half of the row: truncated, then more rows
    ("[1, 2]", "a JSON list, not a row object"),
    ('{"score": 1}', "a row without a run_id"),
    (b"\xff\xfe{}", "not UTF-8 text"),
])
def test_resume_refuses_a_bad_line_before_the_last(finished, capsys, line, problem):
    """A garbage, truncated or non-row line in the middle of runs.jsonl (not the torn last line,
    which is still cut) exits 2 naming the file, the line number and what is wrong, before anything runs."""
    if line is None:
        line = (finished / RUNS_FILE).read_text().splitlines()[1][:40]
    replace_line(finished, 1, line)
    err = resume_refused(finished, capsys)
    assert f"{finished / RUNS_FILE}: line 2: {problem}" in err
    assert f"--resume {finished} --repair" in err


def test_resume_refuses_foreign_rows_and_rows_of_another_config(finished, capsys):
    """A row whose run_id is no cell of config.json's matrix (copied from another directory),
    and rows whose seed, model or strategy config disagree with config.json (a replaced config.json), exit 2."""
    rows = [json.loads(line) for line in (finished / RUNS_FILE).read_text().splitlines()]
    foreign = {**rows[0], "run_id": rows[0]["run_id"].replace("--s0", "--s9"), "seed": 9}
    with open(finished / RUNS_FILE, "a") as handle:
        handle.write(json.dumps(foreign) + "\n")
    err = resume_refused(finished, capsys)
    assert f"line {len(rows) + 1}: run_id {foreign['run_id']!r} is not a cell of config.json's matrix" in err
    for field, value in (("seed", 3), ("model", "openai/gpt-4o"), ("strategy_config", {"keep_last": 3})):
        copy = finished.parent / f"r-{field}"
        shutil.copytree(finished, copy)
        replace_line(copy, 2, json.dumps({**rows[2], field: value}))
        # the foreign row dropped, and the last cell with it: refused although a cell is left to run
        (copy / RUNS_FILE).write_text("".join((copy / RUNS_FILE).read_text().splitlines(keepends=True)[:-2]))
        err = resume_refused(copy, capsys)
        assert f"line 3: run {rows[2]['run_id']}: {field} {value!r} is not config.json's" in err


def test_a_secret_in_a_row_config_matches_its_redacted_config_json(finished, capsys):
    """`config.json` keeps a strategy config's secret redacted, runs.jsonl may hold it in
    the clear or redacted; either is the same config, not a mismatch."""
    config = json.loads((finished / "config.json").read_text())
    config["strategies"][0]["config"] = {"api_key": "<redacted>"}
    (finished / "config.json").write_text(json.dumps(config))
    lines = (finished / RUNS_FILE).read_text().splitlines()
    rows = [{**json.loads(line), "strategy_config": {"api_key": "sk-live"}} for line in lines]
    (finished / RUNS_FILE).write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["run", "--resume", str(finished), "--no-progress"]) == 0


@pytest.mark.parametrize("edit, named", [
    (lambda c: "{not json", ": not valid JSON (Expecting property name enclosed in double quotes, line 1 column 2)"),
    (lambda c: b"\xff", ": not UTF-8 text"),
    (lambda c: [], "top level: expected an object, got a JSON list"),
    (lambda c: {**c, "seeds": ["x"]}, "seeds[0]: expected a non-negative integer, got 'x'"),
    (lambda c: {**c, "seeds": [True]}, "seeds[0]: expected a non-negative integer, got True"),
    (lambda c: {k: v for k, v in c.items() if k != "tasks"}, "tasks: missing"),
    (lambda c: {**c, "profiles": []}, "profiles: expected a non-empty object, got []"),
    (lambda c: {**c, "profiles": {"main": "mock/agent"}}, "profiles.main: expected an object"),
    (lambda c: {**c, "max_requests": "10"}, "max_requests: expected a positive integer, got '10'"),
    (lambda c: {**c, "max_cost_usd": -1}, "max_cost_usd: expected null or a positive number, got -1"),
    (lambda c: {**c, "strategies": [{"name": 1}]}, "strategies[0]: expected an object with string name and label"),
    (lambda c: {**c, "tasks": [5]}, "tasks[0]: expected an object, got 5"),
    (lambda c: {**c, "tasks": [{"nosuch": 1}]}, "tasks[0]:"),
])
def test_resume_refuses_a_corrupt_config_json(finished, capsys, edit, named):
    """Bad JSON, wrong types (seeds: ["x"]) or missing keys in config.json exit 2 naming the file
    and the entry, before anything runs or is written (the old code ran seeds ["x"])."""
    config = json.loads((finished / "config.json").read_text())
    (finished / RUNS_FILE).write_text("".join((finished / RUNS_FILE).read_text().splitlines(keepends=True)[:3]))
    edited = edit(config)
    data = edited if isinstance(edited, (str, bytes)) else json.dumps(edited)
    (finished / "config.json").write_bytes(data.encode() if isinstance(data, str) else data)
    err = resume_refused(finished, capsys)
    assert f"--resume: {finished / 'config.json'}" in err and named in err


def test_repair_quarantines_bad_and_foreign_lines_and_resumes(finished, finished_template, capsys):
    """--resume --repair moves the garbage line, the foreign row and the mismatched row to
    runs.quarantine.jsonl (with line numbers, reasons and the lines themselves), keeps the rest, reruns the
    cells left without a row: the directory ends like the uninterrupted run."""
    expected = by_run(read_runs(finished_template))
    lines = (finished / RUNS_FILE).read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    foreign = json.dumps({**rows[0], "run_id": "elsewhere--none--s0"})
    mismatched = json.dumps({**rows[3], "seed": 4})
    damaged = [lines[0], "garbage", lines[2], mismatched, foreign, *lines[4:]]
    (finished / RUNS_FILE).write_text("\n".join(damaged) + "\n")
    capsys.readouterr()
    assert main(["run", "--resume", str(finished), "--repair", "--no-progress"]) == 0
    assert "--repair: moved 3 line(s)" in capsys.readouterr().err
    quarantined = [json.loads(line) for line in (finished / "runs.quarantine.jsonl").read_text().splitlines()]
    assert [(q["line"], q["text"]) for q in quarantined] == [(2, "garbage"), (4, mismatched), (5, foreign)]
    assert "not a whole JSON row" in quarantined[0]["reason"] and "seed 4" in quarantined[1]["reason"]
    assert "not a cell" in quarantined[2]["reason"]
    assert_whole(finished, expected)


def test_report_refuses_mid_file_garbage_and_names_the_repair(finished, capsys):
    """Report (harness.results.layout.read_runs) no longer skips a bad line in the middle of runs.jsonl:
    exit 2 naming the line and `--resume DIR --repair`; a torn last line is still skipped."""
    text = (finished / RUNS_FILE).read_text()
    (finished / RUNS_FILE).write_text(text + '{"run_id": "torn')
    assert main(["report", str(finished)]) == 0
    replace_line(finished, 2, "garbage")
    capsys.readouterr()
    assert main(["report", str(finished)]) == 2
    err = capsys.readouterr().err
    assert f"{finished / RUNS_FILE}: line 3 is not a whole JSON row" in err and f"--resume {finished} --repair" in err
    assert main(["run", "--suite", "smoke", "--out", str(finished.parent / "x"), "--repair"]) == 2
    assert "--repair works on a results directory" in capsys.readouterr().err
