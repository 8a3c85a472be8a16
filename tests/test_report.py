"""`ctxbench report`: summary.csv with intervals, paired.csv, report.md, plots; files readable without the harness."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness.api import load_results
from harness.cli import main
from harness.errors import ConfigError
from harness.report import check_baseline, paired_differences, summarize

PLOTS = {"context_per_request.png", "success_vs_cost.png", "cache_hit_rate.png", "resets_compactions.png"}


def test_report_writes_summary_paired_markdown_and_plots(smoke_sweep):
    files = {p.name for p in Path(smoke_sweep).iterdir()}
    assert {"summary.csv", "paired.csv", "report.md", "runs.jsonl", "config.json"} <= files
    assert PLOTS <= {p.name for p in (Path(smoke_sweep) / "plots").iterdir()}
    summary = pd.read_csv(Path(smoke_sweep) / "summary.csv")
    assert set(summary["family"]) == {"all", "chained_lookup"}
    for column in ("success_rate", "mean_input_tokens", "mean_cost_usd", "cache_hit_rate"):
        known = summary.dropna(subset=[column])
        assert (known[f"{column}_lo"] <= known[column] + 1e-12).all()
        assert (known[column] <= known[f"{column}_hi"] + 1e-12).all()
    text = (Path(smoke_sweep) / "report.md").read_text()
    assert "## Paired differences against `none`" in text and "![success_vs_cost](plots/success_vs_cost.png)" in text


def test_paired_differences_against_none_cover_each_strategy_and_metric(smoke_sweep):
    paired = pd.read_csv(Path(smoke_sweep) / "paired.csv")
    overall = paired[paired["family"] == "all"]
    assert set(overall["strategy"]) == {"mask[keep=0]", "mask[keep=3]"}
    assert set(overall["metric"]) == {"success", "input_tokens", "cost_usd", "cache_hit_rate"}
    assert (overall["pairs"] == 6).all()  # 3 smoke tasks x 2 seeds, paired on task and seed
    keep0 = overall[(overall["strategy"] == "mask[keep=0]") & (overall["metric"] == "success")].iloc[0]
    assert keep0["mean_diff"] == -1.0  # masking every tool result fails where `none` succeeds


def test_report_is_deterministic_for_its_bootstrap_seed(smoke_sweep):
    runs = load_results(smoke_sweep).runs
    pd.testing.assert_frame_equal(summarize(runs, seed=3), summarize(runs, seed=3))
    pd.testing.assert_frame_equal(paired_differences(runs, seed=3), paired_differences(runs, seed=3))


def test_missing_default_baseline_leaves_the_paired_table_empty(smoke_sweep):
    runs = load_results(smoke_sweep).runs
    assert paired_differences(runs[runs["strategy"] != "none"]).empty


def test_an_explicit_unknown_baseline_is_refused_naming_the_strategies(smoke_sweep, capsys):
    with pytest.raises(ConfigError, match="baseline 'nope' is not a strategy in these results; strategies: "):
        check_baseline(load_results(smoke_sweep).runs, "nope")
    assert main(["report", str(smoke_sweep), "--baseline", "nope"]) == 2
    assert "baseline 'nope'" in capsys.readouterr().err


def test_report_against_another_baseline(smoke_sweep, tmp_path):
    copy = shutil.copytree(smoke_sweep, tmp_path / "copy")
    assert main(["report", str(copy), "--baseline", "mask[keep=3]"]) == 0
    paired = pd.read_csv(copy / "paired.csv")
    assert set(paired["baseline"]) == {"mask[keep=3]"}
    assert "none" in set(paired["strategy"])
    assert "## Paired differences against `mask[keep=3]`" in (copy / "report.md").read_text()


def test_load_results_gives_runs_and_requests_from_the_event_logs(smoke_sweep):
    results = load_results(smoke_sweep)
    assert len(results.runs) == 18
    main_requests = results.requests[results.requests["profile"] == "main"]
    per_run = main_requests.groupby("run_id").size()
    assert per_run.to_dict() == results.runs.set_index("run_id")["requests"].to_dict()
    sums = main_requests.groupby("run_id")["input_tokens"].sum()
    assert sums.to_dict() == results.runs.set_index("run_id")["input_tokens"].to_dict()
    masked = main_requests[main_requests["strategy"] == "mask[keep=0]"]
    assert masked["compactions_before"].sum() == results.runs.loc[
        results.runs["strategy"] == "mask[keep=0]", "compactions"].sum()


def test_load_results_of_run_returns_dataframes(run_suite):
    runs = run_suite("smoke", strategies="none")
    results = load_results(runs.attrs["out"])
    assert list(results.runs["run_id"]) == list(runs["run_id"])
    assert not results.is_sweep and results.recommended is None
    assert list(results.summary["strategy"].unique()) == ["none"]
    assert (results.path / "report.md").exists()  # `run` ends by writing the report


def test_results_files_are_readable_with_plain_pandas(smoke_sweep):
    """No harness import: runs.jsonl, summary.csv, paired.csv, tuning.csv, events with pandas alone."""
    code = f"""
import sys
from pathlib import Path
import pandas as pd
root = Path({str(smoke_sweep)!r})
runs = pd.read_json(root / "runs.jsonl", lines=True)
summary = pd.read_csv(root / "summary.csv")
pd.read_csv(root / "paired.csv"); pd.read_csv(root / "tuning.csv")
events = pd.read_json(root / "events" / (runs["run_id"][0] + ".jsonl"), lines=True)
assert len(runs) == 18 and "success_rate_lo" in summary and (events["type"] == "llm_call").any()
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("harness", "strategies", "tasks"))
assert not loaded, loaded
print(len(runs), len(summary))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["18", str(len(pd.read_csv(Path(smoke_sweep) / "summary.csv")))]


def test_config_json_is_plain_json(smoke_sweep):
    config = json.loads((Path(smoke_sweep) / "config.json").read_text())
    assert config["suite"].endswith("smoke-chained_lookup-3.jsonl") and config["seeds"] == [0, 1]


def test_summary_does_not_depend_on_the_completion_order_of_runs(smoke_sweep, tmp_path):
    """Seeded intervals must be reproducible: runs.jsonl is in completion order, which varies with workers."""
    shuffled = tmp_path / "shuffled"
    shutil.copytree(smoke_sweep, shuffled)
    lines = (shuffled / "runs.jsonl").read_text().splitlines()
    (shuffled / "runs.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    original = summarize(load_results(smoke_sweep).runs)
    assert summarize(load_results(shuffled).runs).equals(original)

