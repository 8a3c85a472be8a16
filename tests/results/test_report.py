"""`ctxbench report`: summary.csv with intervals, paired.csv, report.md, plots; files readable without the harness."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness.api import load_results
from harness.cli import main
from harness.core.errors import ConfigError
from harness.results.report import check_baseline, paired_differences, summarize

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
    """No harness import: runs.jsonl, summary.csv, paired.csv, tuning.csv, events (gzip'd JSON Lines) with pandas
    alone (a log's large contents, stored apart: tests/results/test_event_log_layout.py)."""
    code = f"""
import sys
from pathlib import Path
import pandas as pd
root = Path({str(smoke_sweep)!r})
runs = pd.read_json(root / "runs.jsonl", lines=True)
summary = pd.read_csv(root / "summary.csv")
pd.read_csv(root / "paired.csv"); pd.read_csv(root / "tuning.csv")
events = pd.read_json(root / "events" / (runs["run_id"][0] + ".jsonl.gz"), lines=True)
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


# --- a report that answers ---------------------------------------------------------------

def _runs(outcomes: dict[str, list[int]], family: str = "f", cost: float = 1.0, uncached: float = 4.0) -> list[dict]:
    """Rows of runs.jsonl: per strategy, one run per task (t0, t1, ...) with success 1/0, seed 0."""
    return [{"run_id": f"{family}{i}--{strategy}--s0", "task_id": f"{family}{i}", "family": family,
             "strategy": strategy, "seed": 0, "success": bool(ok), "score": float(ok), "input_tokens": 100,
             "cached_tokens": 50, "cost_usd": cost, "cost_usd_uncached": uncached, "requests": 1,
             "agent_resets": 0, "hard_resets": 0, "compactions": 0, "rereads": 0,
             "termination": "submitted", "error": None, "detail": {"expected": 1, "given": 1 if ok else 2}}
            for strategy, results in outcomes.items() for i, ok in enumerate(results)]


def _overall(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[summary["family"] == "all"]


def _cells(table: str) -> list[dict[str, str]]:
    """The terminal table's rows as {header: cell} (cells never hold two spaces in a row)."""
    import re

    lines = table.splitlines()
    header = re.split(r"\s{2,}", lines[0])
    return [dict(zip(header, re.split(r"\s{2,}", line.strip()))) for line in lines[1:] if line and "  " in line]


def test_decision_order_is_success_then_cost_per_success_then_name_with_unknown_cost_last():
    """Tables sorted by the choice a user makes: success (desc), cost per success (asc,
    unknown last), then name."""
    from harness.results.report import decision_order

    rows = pd.DataFrame({"strategy": ["b", "a", "c", "d", "e", "f"],
                         "success_rate": [0.5, 0.5, 0.9, 0.5, 0.5, 0.0],
                         "cost_per_success": [2.0, 2.0, 9.0, float("nan"), 1.0, float("nan")]})
    assert list(decision_order(rows)["strategy"]) == ["c", "e", "a", "b", "d", "f"]


def test_summary_ranks_and_marks_the_pareto_front_per_family():
    """`summary.csv` gains `rank` and `pareto`: rank follows the decision order within each
    family; a strategy as successful as another but dearer is off the front."""
    rows = (_runs({"cheap": [1, 1, 0, 0]}, cost=1.0) + _runs({"dear": [1, 1, 0, 0]}, cost=2.0)
            + _runs({"best": [1, 1, 1, 1]}, cost=3.0))
    overall = _overall(summarize(pd.DataFrame(rows))).set_index("strategy")
    assert overall["rank"].to_dict() == {"best": 1, "cheap": 2, "dear": 3}
    assert overall["pareto"].to_dict() == {"best": True, "cheap": True, "dear": False}


def test_console_table_is_sorted_with_compact_intervals_within_120_columns_and_counts_failures():
    """The terminal table in decision order, `85% [70-95]` intervals, readable in 120
    columns, and a short count line pointing to report.md's failures table."""
    from harness.results.report import console_table

    rows = _runs({"zeta": [1, 1, 1, 1, 1], "alpha": [1, 1, 0, 0, 0], "a_very_long_strategy_label[keep=10]": [1] * 5})
    table = console_table(summarize(pd.DataFrame(rows)), pd.DataFrame(rows))
    cells = _cells(table)
    assert [c["strategy"] for c in cells] == ["a_very_long_strategy_label[keep=10]", "zeta", "alpha"]
    assert cells[2]["success"].startswith("40% [") and cells[2]["success"].endswith("]")
    assert cells[0]["cache saved"] == "75%"  # (4 - 1) / 4
    assert max(len(line) for line in table.splitlines()) <= 120  # a long label drops the least needed columns
    assert "cache saved" in cells[0] and "compactions" not in cells[0]
    short = pd.DataFrame(_runs({"short": [1, 0]}))
    assert "compactions" in _cells(console_table(summarize(short), short))[0]
    assert "3 of 15 runs failed (3 by the task's checker).\nreport.md's \"Failed runs\"" in table


def test_console_table_has_no_failure_line_when_every_run_succeeded():
    """Ours: the count line appears only when a run failed."""
    from harness.results.report import console_table

    runs = pd.DataFrame(_runs({"s": [1, 1]}))
    assert "failed" not in console_table(summarize(runs), runs)


def test_success_pivot_has_a_row_per_strategy_and_a_column_per_family_and_all():
    """Per-family success pivot (rows strategy, columns family + all, success % with its
    interval; a cell with other runs than its column says its n)."""
    from harness.results.report import success_pivot

    rows = (_runs({"x": [1, 1], "y": [0, 0]}, family="fa") + _runs({"x": [1, 0], "y": [1, 1]}, family="fb")
            + _runs({"x": [1]}, family="fc"))
    lines = success_pivot(summarize(pd.DataFrame(rows))).splitlines()
    assert lines[0] == "| strategy | fa (n=2) | fb (n=2) | fc (n=1) | all (n=5) |"
    assert lines[2] == "| x | 100% [100-100] | 50% [0-100] | 100% [100-100] | 80% [40-100] (n=5) |" or \
        lines[2].startswith("| x | 100% [100-100] | 50% [0-100] | 100% [100-100] | 80% [")
    assert lines[3].startswith("| y | 0% [0-0] | 100% [100-100] |  | 50% [") and lines[3].endswith("(n=4) |")


def test_pareto_lines_name_the_front_and_who_dominates_the_rest():
    """The Pareto front over success and cost (a dominated strategy is named with the one
    that beats it); strategies without a known cost are said to be off it."""
    from harness.results.report import pareto_lines

    rows = (_runs({"cheap": [1, 0]}, cost=1.0) + _runs({"dear": [1, 0]}, cost=2.0) + _runs({"best": [1, 1]}, cost=3.0)
            + _runs({"unpriced": [1, 1]}, cost=float("nan")))
    lines = pareto_lines(_overall(summarize(pd.DataFrame(rows))))
    assert lines[0].startswith("Pareto front") and "`best`" in lines[0] and "`cheap`" in lines[0]
    assert "`dear`" not in lines[0] and "`dear` (by `cheap`)" in lines[1]
    assert lines[2] == "Without a known cost, off the front: `unpriced`."


def test_best_line_cautions_when_intervals_overlap_and_the_paired_difference_includes_zero():
    """A caution when the best strategy's success interval overlaps the runner-up's and the
    paired difference (harness.results.stats.paired_difference) includes 0: not distinguishable on these tasks."""
    from harness.results.report import best_lines

    runs = pd.DataFrame(_runs({"a": [1, 1, 1, 0], "b": [1, 1, 0, 0]}))
    line = best_lines(summarize(runs), runs)[0]
    assert line.startswith("- **All tasks**: `a`, success 75% [") and "Runner-up `b`: 50% [" in line
    assert "paired difference on the same tasks and seeds, +25.0 pt [" in line
    assert line.endswith("includes 0: not distinguishable on these tasks.")


def test_best_line_has_no_caution_when_the_success_intervals_do_not_overlap():
    """No caution when the intervals are apart."""
    from harness.results.report import best_lines

    runs = pd.DataFrame(_runs({"a": [1] * 8, "b": [1] + [0] * 7}))
    line = best_lines(summarize(runs), runs)[0]
    assert "Runner-up `b`: 12% [" in line and "aution" not in line and "overlap" not in line


def test_best_line_says_when_overlapping_intervals_are_told_apart_by_the_paired_difference():
    """Overlapping intervals but a paired difference that excludes 0 (a beats b on a quarter
    of the tasks, never loses): the line says so instead of cautioning."""
    from harness.results.report import best_lines

    a = [1] * 15 + [0] * 5
    b = [1] * 10 + [0] * 10
    runs = pd.DataFrame(_runs({"a": a, "b": b}))
    line = best_lines(summarize(runs), runs)[0]
    assert "Caution" not in line and "overlaps `b`'s, but the paired difference" in line and "excludes 0" in line


def test_best_line_on_a_success_tie_tests_the_paired_cost_difference():
    """Ours (the paired test applied to the tie-break): equal success rates are ranked on cost;
    a caution when the paired difference in cost per run includes 0, none when the same tasks are cheaper."""
    from harness.results.report import best_lines

    rows = _runs({"a": [1, 1, 0], "b": [1, 1, 0]})
    for row, cost in zip(rows, [1.0, 1.0, 3.0, 1.2, 1.5, 2.6]):  # a cheaper on t0 and t1, dearer on t2
        row["cost_usd"] = cost
    mixed = pd.DataFrame(rows)
    line = best_lines(summarize(mixed), mixed)[0]
    assert "Caution: same success rate as `b`, paired difference in cost per run -$0.1000 [" in line
    assert line.endswith("and ranked on cost alone: not distinguishable on these tasks.")
    cheaper = pd.DataFrame(_runs({"a": [1, 1, 0]}, cost=1.0) + _runs({"b": [1, 1, 0]}, cost=1.1))
    assert best_lines(summarize(cheaper), cheaper)[0].endswith(
        "Same success rate as `b`; cheaper on the same tasks and seeds (paired difference in cost per run "
        "-$0.1000 [-0.1000, -0.1000]).")


def test_best_lines_one_per_family_after_the_overall_one():
    """One line per family naming its best strategy (same ordering rule)."""
    from harness.results.report import best_lines

    runs = pd.DataFrame(_runs({"x": [1, 1], "y": [0, 0]}, family="fa") + _runs({"x": [0, 0], "y": [1, 1]}, family="fb"))
    lines = best_lines(summarize(runs), runs)
    assert [line.split("`")[1] for line in lines] == ["x", "x", "y"]  # overall a tie on success, x cheaper by name
    assert [line.split("**")[1] for line in lines] == ["All tasks", "fa", "fb"]


def test_no_strategy_is_crowned_on_a_family_none_succeeded_on():
    """No crown without a success: a family where every strategy got 0% says no strategy succeeded on it, and
    the best and runner-up lines rank only strategies with at least one success."""
    from harness.results.report import best_lines

    runs = pd.DataFrame(_runs({"ladder": [0, 0], "none": [0, 0]}, family="big_output", cost=0.5)
                        + _runs({"ladder": [1, 1], "none": [1, 0]}, family="fa")
                        + _runs({"ladder": [0, 0], "none": [1, 0]}, family="fb"))
    lines = best_lines(summarize(runs), runs)
    assert "- **big_output**: no strategy succeeded on big_output." in lines
    fb = next(line for line in lines if line.startswith("- **fb**"))
    assert fb.startswith("- **fb**: `none`, success 50%") and "Runner-up" not in fb  # ladder's 0% is no runner-up
    assert not any("`ladder`" in line for line in lines if "big_output" in line or "**fb**" in line)
    nothing = pd.DataFrame(_runs({"a": [0], "b": [0]}))
    assert best_lines(summarize(nothing), nothing)[0] == "- **All tasks**: no strategy succeeded on any task."


def test_console_count_line_says_who_failed_the_failed_runs():
    """The terminal's count line splits the failed runs by who failed them: the task's checker (the agent
    submitted or gave up and was wrong), the strategy giving up (strategy_failed), a stop or a fault (`error`)."""
    from harness.results.report import console_table

    rows = _runs({"s": [0, 0, 0, 0, 0, 1]})
    for row, termination in zip(rows, ["submitted", "gave_up", "strategy_failed", "strategy_failed", "error"]):
        row["termination"] = termination
    runs = pd.DataFrame(rows)
    assert "\n5 of 6 runs failed (2 by the task's checker, 2 strategy_failed, 1 error).\n" in \
        console_table(summarize(runs), runs)


def test_old_rows_ending_error_for_a_strategys_give_up_still_report(smoke_sweep, tmp_path, capsys):
    """Rows written before strategy_failed existed (a library's give-up recorded as `error`) still report:
    counted as errors, listed in the failed runs with their termination."""
    copy = shutil.copytree(smoke_sweep, tmp_path / "old")
    rows = [json.loads(line) for line in (copy / "runs.jsonl").read_text().splitlines()]
    rows[0].update(success=False, termination="error", error="LibraryError: inspect-ai 0.3.285 raised in "
                   "compact_input: RuntimeError: Compaction insufficient: 26,000 tokens still exceeds threshold")
    (copy / "runs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    capsys.readouterr()
    assert main(["report", str(copy)]) == 0
    assert re.search(r"runs failed \([^)]*\b1 error\)", capsys.readouterr().out)
    report = (copy / "report.md").read_text()
    assert f"| {rows[0]['seed']} | error |" in report


def test_cost_table_and_total_show_uncached_cost_and_what_the_cache_saved():
    """Cost per run, per success, uncached and saved by the cache (absolute and %)."""
    from harness.results.report import cost_table, cost_total

    runs = pd.DataFrame(_runs({"s": [1, 0]}, cost=1.0, uncached=4.0))
    row = cost_table(summarize(runs)).splitlines()[2]
    assert row.startswith("| s | 1.000 [1.000, 1.000] | 2.000 [") and row.endswith("| 4.000 | 3.000 | 75.0% |")
    assert cost_total(runs) == ("2 of 2 runs with known prices cost $2.000 at cache prices and would have cost $8.000 "
                                "without the cache: the cache saved $6.000 (75.0%).")
    unpriced = runs.assign(cost_usd=None, cost_usd_uncached=None)
    assert cost_total(unpriced).startswith("No run has a known cost")


def test_failed_runs_table_shows_termination_score_and_expected_vs_given(tmp_path):
    """The failures table: task (linked to its event log as it is on disk, compressed or as written before),
    strategy, seed, termination, score and the checker's expected vs given; mappings show only the keys that
    differ."""
    from harness.results.report import checker_text, failed_runs_section

    runs = pd.DataFrame(_runs({"s": [1, 0]}))
    text = "\n".join(failed_runs_section(runs, tmp_path))
    assert "1 of 2 runs did not succeed" in text
    assert "| [f1](events/f1--s--s0.jsonl.gz) | s | 0 | submitted | 0.00 | expected 1, given 2 |" in text
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "f1--s--s0.jsonl").write_text("")  # a log of the layout before compression
    assert "| [f1](events/f1--s--s0.jsonl) |" in "\n".join(failed_runs_section(runs, tmp_path))
    assert checker_text({"expected": {"a": "X", "b": "Y"}, "given": {"a": "x", "b": "Z"}, "right": 1}) == \
        'b: expected "Y", given "Z"; right=1'
    assert checker_text({}, "ContextWindowExceededError: litellm.BadRequestError: too long") == "error: too long"
    assert len(checker_text({"expected": "a", "given": "b" * 10_000})) <= 160
    assert "\\|" in checker_text({"given": "a|b"})  # a pipe cannot break the Markdown table
    assert failed_runs_section(pd.DataFrame(_runs({"s": [1]})), tmp_path)[-2] == "Every run succeeded."


def test_failed_runs_of_old_results_without_detail_still_report(smoke_sweep, tmp_path):
    """Results written before runs.jsonl had `detail` still report; the table says so."""
    copy = shutil.copytree(smoke_sweep, tmp_path / "old")
    rows = [json.loads(line) for line in (copy / "runs.jsonl").read_text().splitlines()]
    (copy / "runs.jsonl").write_text("".join(json.dumps({k: v for k, v in row.items() if k != "detail"}) + "\n"
                                             for row in rows))
    assert main(["report", str(copy)]) == 0
    report = (copy / "report.md").read_text()
    assert "## Failed runs" in report and "(no detail recorded)" in report


def test_runs_jsonl_rows_carry_the_checkers_detail_of_a_failing_strategy(smoke_sweep):
    """Each runs.jsonl row has the environment's Score.detail (expected vs given), and
    report.md's failures table shows it; here `mask[keep=0]` forgets every tool result and answers wrong."""
    rows = [json.loads(line) for line in (Path(smoke_sweep) / "runs.jsonl").read_text().splitlines()]
    failed = [row for row in rows if not row["success"]]
    assert failed and {row["strategy"] for row in failed} == {"mask[keep=0]"}
    assert all(set(row["detail"]) == {"expected", "given"} and row["detail"]["expected"] != row["detail"]["given"]
               for row in failed)
    assert all(row["detail"]["expected"] == row["detail"]["given"] for row in rows if row["success"])
    report = (Path(smoke_sweep) / "report.md").read_text()
    first = sorted(failed, key=lambda r: (r["task_id"], r["seed"]))[0]
    assert (f"| mask[keep=0] | {first['seed']} | {first['termination']} | 0.00 | "
            f"expected {first['detail']['expected']}, given {json.dumps(first['detail']['given'])} |") in report


def test_a_run_stopped_by_max_requests_records_what_was_given(tmp_path, capsys):
    """A run cut short (--max-requests) fails with the checker's detail (nothing given)
    in runs.jsonl, and the terminal's count line points to report.md."""
    out = tmp_path / "cut"
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--max-requests", "2", "--no-progress",
                 "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert {row["termination"] for row in rows} == {"max_requests"}
    assert all(isinstance(row["detail"], dict) and row["detail"] for row in rows)
    lookups = [row["detail"] for row in rows if row["family"] == "chained_lookup"]
    assert lookups and all(isinstance(d["expected"], int) and d["given"] is None for d in lookups)
    printed = capsys.readouterr().out
    assert f"{len(rows)} of {len(rows)} runs failed ({len(rows)} max_requests).\nreport.md's \"Failed runs\"" in printed


def test_detail_in_a_row_is_bounded_and_scrubbed_before_it_is_cut(monkeypatch):
    """Ours (bounds in harness.results.metrics): a huge `given` cannot bloat runs.jsonl, and a secret
    across the cut is scrubbed first, so no part of it survives the cut."""
    from harness.core import secrets
    from harness.results.metrics import DETAIL_BUDGET, DETAIL_STRING_CHARS, bounded_detail

    huge = bounded_detail({"expected": 7, "given": "x" * 1_000_000, "nested": [[[[list(range(100))]]]] * 100,
                           "many": {str(i): "y" * 500 for i in range(1000)}})
    assert len(json.dumps(huge, ensure_ascii=False)) < 2 * DETAIL_BUDGET
    assert huge["expected"] == 7 and huge["given"].startswith("x" * DETAIL_STRING_CHARS + "…[+")
    monkeypatch.setattr(secrets, "KNOWN", secrets.KnownSecrets())
    secret = "sk-live-0123456789abcdef"
    secrets.remember({"api_key": secret})
    detail = bounded_detail({"given": "a" * (DETAIL_STRING_CHARS - 10) + secret})
    assert "sk-live-01" not in detail["given"] and secret[:8] not in detail["given"]
    assert bounded_detail(None) == {} and bounded_detail({"expected": 1, "given": 2}) == {"expected": 1, "given": 2}


def test_best_line_names_strategies_tied_exactly_and_says_the_name_orders_them():
    """Ours: identical success and cost per success (strategies that did the same on these
    tasks) are a tie broken by name, said as such instead of a cost comparison."""
    from harness.results.report import best_lines

    runs = pd.DataFrame(_runs({"b": [1, 0], "a": [1, 0], "c": [1, 0]}) + _runs({"d": [1, 0]}, cost=2.0))
    line = best_lines(summarize(runs), runs)[0]
    assert line.startswith("- **All tasks**: `a`,") and line.endswith(
        "Tie: `b`, `c` had the same success rate and cost per success on these tasks; the first is listed by "
        "name only.")


def test_summary_csv_keeps_its_columns_and_appends_the_new_ones(smoke_sweep):
    """Summary.csv keeps its columns (notebooks read them) and gains the cache savings,
    `rank` and `pareto` at its end."""
    columns = list(pd.read_csv(Path(smoke_sweep) / "summary.csv").columns)
    assert columns[:5] == ["family", "strategy", "runs", "tasks", "success_rate"]
    assert columns[-4:] == ["cache_savings_usd", "cache_savings_rate", "rank", "pareto"]
