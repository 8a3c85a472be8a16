"""A window axis: `--window 32000,200000` runs every cell at each window into one results directory."""
import json
from pathlib import Path

import pytest

from harness.conversation.events import event_log_name, first_event
from harness.cli import main
from harness.core.errors import ConfigError
from harness.results.layout import RUNS_FILE, read_runs
from harness.run.runner import Matrix, with_window
from strategies import StrategySpec
from tests.cli_helpers import exit_code

SMALL, LARGE = 32000, 200000
# big_output's smoke task dumps more than 32,000 tokens: under `none` it overflows the small window only
OVERFLOWS_SMALL = ["--suite", "smoke", "--family", "big_output", "--strategies", "none", "--workers", "1",
                   "--no-progress"]


def run_axis(out: Path, *extra: str) -> list[dict]:
    assert main(["run", *OVERFLOWS_SMALL, "--window", f"{SMALL},{LARGE}", "--out", str(out), *extra]) == 0
    return read_runs(out)


@pytest.fixture(scope="module")
def axis_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("axis") / "out"
    run_axis(out, "--seeds", "0,1")
    return out


def test_both_windows_run_in_one_directory_and_the_mock_enforces_each(axis_dir):
    rows = read_runs(axis_dir)
    assert sorted((row["window"], row["seed"]) for row in rows) == [(SMALL, 0), (SMALL, 1), (LARGE, 0), (LARGE, 1)]
    by_window = {row["window"]: row["termination"] for row in rows}
    assert by_window == {SMALL: "context_overflow", LARGE: "submitted"}
    config = json.loads((axis_dir / "config.json").read_text(encoding="utf-8"))
    assert config["windows"] == [SMALL, LARGE]
    for row in rows:  # the run's own profile, as its log recorded it, had the row's window
        start = first_event(axis_dir / "events" / event_log_name(row["run_id"]))
        assert start["profiles"]["main"]["mock"]["window"] == row["window"]


def test_run_ids_of_a_window_axis_are_distinct_and_name_the_window(axis_dir):
    ids = [row["run_id"] for row in read_runs(axis_dir)]
    assert len(set(ids)) == len(ids) == 4
    assert sorted(ids) == sorted(f"big_output-smoke-0--none--w{w}--s{s}" for w in (SMALL, LARGE) for s in (0, 1))


def test_a_single_window_keeps_its_run_ids_and_rows_still_carry_window(tmp_path):
    out = tmp_path / "one"
    assert main(["run", *OVERFLOWS_SMALL, "--window", str(LARGE), "--out", str(out)]) == 0
    (row,) = read_runs(out)
    assert row["run_id"] == "big_output-smoke-0--none--s0"
    assert row["window"] == LARGE
    assert "windows" not in json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert not (out / "plots" / "window.png").exists()
    assert "## Against the window" not in (out / "report.md").read_text(encoding="utf-8")


def test_rows_without_window_option_carry_the_mock_default_window(tmp_path):
    out = tmp_path / "default"
    assert main(["run", *OVERFLOWS_SMALL, "--out", str(out)]) == 0
    assert [row["window"] for row in read_runs(out)] == [LARGE]


def test_report_has_a_window_section_and_plot_with_two_windows(axis_dir):
    report = (axis_dir / "report.md").read_text(encoding="utf-8")
    section = report.split("## Against the window", 1)[1].split("\n## ", 1)[0]
    assert "32,000 tokens" in section and "200,000 tokens" in section
    assert "| none | 0% [0-0] | 100% [100-100] |" in section
    assert (axis_dir / "plots" / "window.png").stat().st_size > 0
    assert "![window](plots/window.png)" in report


def test_resume_finishes_a_half_done_multi_window_run_without_duplicates(axis_dir, tmp_path):
    out = tmp_path / "half"
    expected = sorted(row["run_id"] for row in run_axis(out, "--seeds", "0,1"))
    runs_file = out / RUNS_FILE
    lines = runs_file.read_text(encoding="utf-8").splitlines(keepends=True)
    runs_file.write_text("".join(lines[:2]), encoding="utf-8")
    assert main(["run", "--resume", str(out), "--workers", "1", "--no-progress"]) == 0
    rows = read_runs(out)
    assert sorted(row["run_id"] for row in rows) == expected
    assert {(row["run_id"], row["window"]) for row in rows} == {(row["run_id"], row["window"])
                                                                for row in read_runs(axis_dir)}


def test_resume_refuses_a_row_whose_window_is_not_its_cells(tmp_path, capsys):
    out = tmp_path / "edited"
    run_axis(out)
    runs_file = out / RUNS_FILE
    rows = [json.loads(line) for line in runs_file.read_text(encoding="utf-8").splitlines()]
    rows[0]["window"] = 1234
    runs_file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert exit_code(["run", "--resume", str(out), "--no-progress"]) == 2
    assert "window 1234" in capsys.readouterr().err


def test_dry_run_counts_every_cell_at_each_window(tmp_path, capsys):
    out = tmp_path / "dry"
    assert main(["run", *OVERFLOWS_SMALL, "--window", f"{SMALL},{LARGE}", "--dry-run", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "dry run: 2 cells" in printed and "2 windows" in printed
    assert "--w32000--s0" in printed and "windows of 32,000, 200,000 tokens" in printed
    assert not out.exists()


def test_sweep_runs_every_point_at_each_window(tmp_path):
    out = tmp_path / "sweep"
    assert main(["sweep", "--strategy", "observation_masking", "--grid", "keep_last=3", "--suite", "smoke",
                 "--family", "big_output", "--window", f"{SMALL},{LARGE}", "--out", str(out), "--no-progress"]) == 0
    rows = read_runs(out)
    assert sorted(row["window"] for row in rows) == [SMALL, LARGE]
    assert all(f"--w{row['window']}--" in row["run_id"] for row in rows)
    assert (out / "plots" / "window.png").exists()


@pytest.mark.parametrize("value, says", [("0", "positive"), ("-5", "positive"), ("32000,32000", "more than once"),
                                         ("32000,0", "positive"), ("32000,", "--window"), ("abc", "--window"),
                                         (str(10 ** 12), "at most")])
def test_bad_window_values_exit_2_naming_the_option(tmp_path, capsys, no_model_calls, value, says):
    out = tmp_path / "bad"
    assert exit_code(["run", *OVERFLOWS_SMALL, f"--window={value}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--window" in err and says in err
    assert not out.exists()


def test_traces_take_one_window(tmp_path, capsys, no_model_calls):
    assert exit_code(["traces", str(tmp_path), "--window", f"{SMALL},{LARGE}", "--out", str(tmp_path / "o")]) == 2
    assert "--window" in capsys.readouterr().err


def test_a_window_axis_on_serve_mock_is_refused():
    profiles = {"main": {"model": "openai/mock-agent", "api_base": "http://127.0.0.1:1/v1"}}
    matrix = Matrix(tasks=[], strategies=[StrategySpec(name="none")], seeds=[0], profiles=profiles,
                    windows=[SMALL, LARGE])
    with pytest.raises(ConfigError, match="--window: serve-mock has the one window"):
        matrix.build("events")


def test_the_default_summarizer_follows_the_window_and_one_of_its_own_keeps_it():
    main = {"model": "mock/agent", "mock": {"cache": "anthropic"}}
    follows = with_window({"main": main, "summary": {"model": "mock/summarizer", "mock": {"cache": "anthropic"}}},
                          SMALL)
    assert follows["main"]["mock"]["window"] == follows["summary"]["mock"]["window"] == SMALL
    own = with_window({"main": main, "summary": {"model": "mock/summarizer", "mock": {"window": 8000}}}, SMALL)
    assert own["summary"]["mock"]["window"] == 8000
    real = with_window({"main": {"model": "anthropic/claude-sonnet-4-5"}}, SMALL)
    assert real["main"]["max_input_tokens"] == SMALL
