"""Reports that stream: runs.jsonl read line by line into columns, event logs read only for the runs a report
draws, the bootstrap's resamples drawn once and summed in blocks."""
import json
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from tests.event_log_helpers import write_stored
from harness import api
from harness.cli import main
from harness.conversation.events import find_event_log
from harness.results.frames import requests_frame, runs_frame
from harness.results.layout import EVENTS_DIR, RUNS_FILE, read_runs, scan_runs
from harness.results.plots import sawtooth_run
from harness.results.stats import _resample_indices, _resampled_sums, paired_frame, paired_frames


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The smoke suite under two strategies, one seed."""
    return api.run("smoke", strategies="none,observation_masking", out=tmp_path_factory.mktemp("streaming") / "run")


def _spoil(results_dir, run_ids):
    """Replace these runs' event logs by text no reader accepts: reading one fails loudly."""
    for run_id in run_ids:
        write_stored(find_event_log(results_dir / EVENTS_DIR, run_id), "not an event log\n")


def test_report_reads_only_the_event_logs_of_the_runs_it_draws(smoke_run, tmp_path, capsys):
    """The context plot's (task, seed) is chosen from the rows' own counts and only its runs' logs are read: with
    every other log unreadable, `ctxbench report` still writes every file."""
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(smoke_run, out)
    runs = runs_frame(out)
    task_id, seed = sawtooth_run(runs)
    drawn = (runs["task_id"] == task_id) & (runs["seed"] == seed)
    _spoil(out, runs.loc[~drawn, "run_id"])
    assert main(["report", str(out)]) == 0
    assert (out / "plots" / "context_per_request.png").stat().st_size > 0
    assert "## Failure modes" in (out / "report.md").read_text(encoding="utf-8")


def test_results_read_the_event_logs_only_when_their_requests_are_asked_for(smoke_run, tmp_path):
    """load_results reads runs.jsonl and the tables only; `requests` reads every log on first use, and
    `requests_of(runs)` only those runs' logs."""
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(smoke_run, out)
    whole = api.load_results(smoke_run).requests
    first = runs_frame(out).head(1)
    _spoil(out, runs_frame(out)["run_id"].iloc[1:])
    results = api.load_results(out)
    assert len(results.runs) == len(runs_frame(smoke_run))
    mine = results.requests_of(first)
    expected = whole[whole["run_id"] == first["run_id"].iloc[0]].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, expected)
    with pytest.raises(Exception, match="not a JSON event"):
        results.requests  # noqa: B018  (the spoiled logs are read now, not before)


def test_reading_runs_does_not_hold_the_file(tmp_path):
    """runs.jsonl is read a line at a time and a line's text is not kept beside its row: reading a file whose
    rows are mostly padding peaks far below the file's size (the whole file, then its lines, were held)."""
    padding = " " * 20_000
    lines = [json.dumps({"run_id": f"r{i}", "task_id": "t", "family": "f", "strategy": "s", "seed": 0,
                         "success": True}).replace(",", "," + padding, 1) for i in range(300)]
    path = tmp_path / RUNS_FILE
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tracemalloc.start()
    try:
        rows = read_runs(tmp_path, complete=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(rows) == 300
    assert peak < path.stat().st_size / 10, f"{peak:,} bytes at peak reading {path.stat().st_size:,}"


def test_a_line_read_back_is_the_line_the_file_holds(tmp_path):
    """A scanned line keeps its place, not its text: `text` reads it back as the file has it (bytes that are not
    UTF-8 replaced), for the quarantine; numbering counts blank lines; a torn last line is left out."""
    path = tmp_path / RUNS_FILE
    row = '{"run_id": "a",   "seed": 0}'
    path.write_bytes(row.encode() + b"\n\n" + b"\xff\xfe bad\n" + '{"run_id": "é"}'.encode() + b"\n" + b'{"run_id": "to')
    lines = scan_runs(path)
    assert [(line.number, line.text, line.problem) for line in lines] == [
        (1, row, None), (3, "\ufffd\ufffd bad", "not UTF-8 text"), (4, '{"run_id": "é"}', None)]
    assert lines[0].row == {"run_id": "a", "seed": 0}


def test_runs_frame_is_pandas_frame_of_the_latest_rows_in_run_id_order(smoke_run, tmp_path):
    """Column by column, the same frame as pandas makes of read_runs' rows sorted by run_id: a rerun's row
    replaces the earlier one, a field some rows lack is NaN there, columns in order of first appearance."""
    rows = [json.loads(line) for line in (smoke_run / RUNS_FILE).read_text().splitlines()]
    rerun = {**rows[2], "score": 0.25}
    del rerun["window"]
    rerun["late_field"] = 3
    text = "\n".join(json.dumps(row) for row in [*reversed(rows), rerun]) + "\n"
    (tmp_path / RUNS_FILE).write_text(text, encoding="utf-8")
    expected = pd.DataFrame(read_runs(tmp_path, complete=True)).sort_values("run_id", kind="stable",
                                                                             ignore_index=True)
    frame = runs_frame(tmp_path)
    pd.testing.assert_frame_equal(frame, expected)
    assert frame.loc[frame["run_id"] == rerun["run_id"], "score"].item() == 0.25


def test_resampled_sums_match_one_gather_bit_for_bit():
    """Summing the resamples in blocks gives each resample's sum exactly as one gather of them all did, and the
    indices of one (clusters, resamples, seed) are drawn once."""
    values = np.random.default_rng(5).random(37) * 1e3
    index = _resample_indices(37, 1000, 3)
    assert np.array_equal(_resampled_sums(values, index), values[index].sum(axis=1))
    assert _resample_indices(37, 1000, 3) is index and not index.flags.writeable
    assert np.array_equal(index, np.random.default_rng(3).integers(0, 37, size=(1000, 37)))


def test_paired_frames_match_one_merge_per_metric(smoke_run):
    runs = runs_frame(smoke_run).assign(success=lambda frame: frame["success"].astype(float))
    metrics = ["success", "input_tokens", "cost_usd", "cache_hit_rate"]
    frames = paired_frames(runs, "observation_masking", "none", metrics)
    for metric in metrics:
        pd.testing.assert_frame_equal(frames[metric], paired_frame(runs, "observation_masking", "none", metric))


def test_requests_frame_reads_the_runs_given(smoke_run):
    runs = runs_frame(smoke_run)
    chosen = runs[runs["strategy"] == "none"]
    requests = requests_frame(smoke_run, chosen)
    assert set(requests["run_id"]) == set(chosen["run_id"]) and (requests["strategy"] == "none").all()


@pytest.mark.parametrize("name", ["run_id", "task_id", "seed", "success", "score", "input_tokens", "detail",
                                  "warnings_by_level", "trace_path", "transient", "custom_number"])
def test_row_checks_fast_path_says_what_the_field_checks_say(name):
    """A row's checks skip _field_problem for values it would pass and nothing else: the same verdict for every
    kind of value in every kind of field."""
    from harness.results.layout import _field_problem, _shown, row_problem

    values = [None, True, False, 0, -1, 7, 2**53, 2**53 + 1, 2**63, 1.5, -0.0, float("nan"), float("inf"), 1e300,
              "text", "", [], {}, {"a": 1}]
    for value in values:
        row = {"run_id": "r", name: value} if name != "run_id" else {"run_id": value}
        problem = _field_problem(name, value)
        expected = ("a row without a run_id" if name == "run_id" and not isinstance(value, str) else
                    f"a row whose field {name!r} is {_shown(value)}, {problem}" if problem else None)
        assert row_problem(row) == expected, (name, value)


def test_calibration_reads_no_log_of_a_run_that_is_not_a_replay(smoke_run, tmp_path):
    """Only a trace replay records a provider's bill: calibration leaves every other run's log unread."""
    import shutil

    from harness.results.calibration import compared_requests

    out = tmp_path / "copy"
    shutil.copytree(smoke_run, out)
    _spoil(out, runs_frame(out)["run_id"])
    assert compared_requests(out).empty
