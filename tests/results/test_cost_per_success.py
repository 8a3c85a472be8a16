"""Cost per success: the cost of all of a strategy's runs over its successes, with a
cluster-bootstrap interval, next to cost per run in the terminal table, summary.csv and report.md."""
import math
import re

import pandas as pd
import pytest

from harness.results.report import console_table, summarize
from harness.results.stats import bootstrap_ratio


def test_cost_per_success_is_total_cost_over_successes_and_nan_without_one():
    """Total cost of all runs / number of successes; NaN when nothing succeeded."""
    estimate = bootstrap_ratio([1.0, 3.0, 2.0, 6.0], [1, 0, 1, 0], clusters=["a", "a", "b", "b"])
    assert estimate.mean == pytest.approx(12.0 / 2)
    assert estimate.lo <= estimate.mean <= estimate.hi
    assert math.isnan(bootstrap_ratio([1.0, 2.0], [0, 0]).mean)


def test_a_resample_drawing_no_success_leaves_the_upper_end_unbounded():
    """Ours: a resample of tasks none of which succeeded has an infinite cost per
    success; with one success in ten tasks that is over 2.5% of resamples, so the interval is open above."""
    successes = [1] + [0] * 9
    estimate = bootstrap_ratio([1.0] * 10, successes, clusters=[f"t{i}" for i in range(10)])
    assert estimate.mean == 10.0 and estimate.hi == math.inf and math.isfinite(estimate.lo)


def test_none_is_cheapest_per_run_but_not_per_success_when_it_fails_more(run_suite, suite_file):
    """`none` overflows and stops cheap, so cost per run ranks it first; cost per
    success charges its failed runs to its successes and ranks the strategy that finishes first."""
    tasks = suite_file("default", family="repo_maintenance")
    runs = run_suite(tasks, "none,clear_tool_uses")
    overall = summarize(runs).query("family == 'all'").set_index("strategy")
    none, clearing = overall.loc["none"], overall.loc["clear_tool_uses"]
    assert (runs.query("strategy == 'none'")["termination"] == "context_overflow").any()
    assert none["success_rate"] < clearing["success_rate"]  # the premise: `none` fails more ...
    assert none["mean_cost_usd"] < clearing["mean_cost_usd"]  # ... and looks cheaper per run
    assert none["cost_per_success"] > clearing["cost_per_success"]
    by_hand = runs.groupby("strategy")["cost_usd"].sum() / runs.groupby("strategy")["success"].sum()
    assert overall["cost_per_success"].to_dict() == pytest.approx(by_hand.to_dict())


def test_cost_per_success_is_in_the_table_summary_and_report_next_to_cost_per_run(run_suite):
    """The terminal table, summary.csv and report.md show it beside cost per run."""
    runs = run_suite("smoke", "none")
    out = runs.attrs["out"]
    header = re.split(r"\s{2,}", console_table(summarize(runs), runs).splitlines()[0])
    assert header[header.index("cost/success $") + 1] == "cost/run $"
    summary = pd.read_csv(out / "summary.csv")
    columns = list(summary.columns)
    assert columns[columns.index("mean_cost_usd_hi") + 1:][:3] == [
        "cost_per_success", "cost_per_success_lo", "cost_per_success_hi"]
    report = (out / "report.md").read_text()
    assert "| cost per success (USD) | mean cost (USD) |" in report
    assert "cost per success is the cost of all runs over the number of successes" in report


def test_a_strategy_without_success_shows_a_dash_per_success():
    """A "—" in the table when no run of a strategy succeeded."""
    runs = pd.DataFrame([{"run_id": "t--s--s0", "task_id": "t", "family": "f", "strategy": "s", "seed": 0,
                          "success": False, "score": 0.0, "input_tokens": 10, "cached_tokens": 0, "cost_usd": 0.5,
                          "cost_usd_uncached": 0.5, "requests": 1, "agent_resets": 0, "hard_resets": 0,
                          "compactions": 0, "rereads": 0, "termination": "context_overflow"}])
    header, row = (re.split(r"\s{2,}", line) for line in console_table(summarize(runs), runs).splitlines()[:2])
    assert dict(zip(header, row))["cost/success $"] == "—"
