"""The results figure (harness.bench.results): bytes per run by suite, report time and memory as rows grow."""
import json
import math

import pytest

from harness.bench import results
from harness.bench.common import BenchOptions
from harness.results.layout import CONFIG_FILE, RUNS_FILE, read_runs


def test_synthesized_rows_spread_tasks_and_seeds(tmp_path):
    """Copies of real rows get run ids of their own; every SYNTH_SEEDS copies share a new task id, with seeds
    0..SYNTH_SEEDS-1, so a report's clusters (tasks) grow with the rows and every (task, seed) pairs once per
    strategy."""
    source = tmp_path / "source"
    source.mkdir()
    (source / CONFIG_FILE).write_text("{}", encoding="utf-8")
    base = [{"run_id": f"t{t}--{s}--s0", "task_id": f"t{t}", "family": "f", "strategy": s, "seed": 0,
             "success": True} for t in range(2) for s in ("none", "other")]
    (source / RUNS_FILE).write_text("".join(json.dumps(row) + "\n" for row in base), encoding="utf-8")
    results.synthesize(source, 40, tmp_path / "out")
    rows = read_runs(tmp_path / "out")
    assert len(rows) == 40 and len({row["run_id"] for row in rows}) == 40
    assert len({row["task_id"] for row in rows}) == 2 * math.ceil(10 / results.SYNTH_SEEDS)
    cells = {(row["task_id"], row["seed"], row["strategy"]) for row in rows}
    assert len(cells) == 40 and {row["seed"] for row in rows} == set(range(results.SYNTH_SEEDS))


def test_growth_exponent_is_the_log_log_slope():
    assert results.slope([1_000, 10_000, 100_000], [2.0, 20.0, 200.0]) == pytest.approx(1.0)
    assert results.slope([10, 100], [5.0, 5.0]) == pytest.approx(0.0)
    assert math.isnan(results.slope([10], [1.0]))


@pytest.mark.benchmark
def test_results_figure_measures_each_suite_and_row_count(capsys):
    """At small sizes: one bytes-per-run line per suite, a time and a memory line per row count (goals only at
    100,000 rows), and the two exponents with their goal."""
    figures = results.figures(BenchOptions(strategies=["none"], report_rows=(20, 60, 180), results_suites=("smoke",)))
    names = [figure.name for figure in figures]
    assert names == ["results: KB per run, smoke", "report: s at 20 rows", "report: peak MiB at 20 rows",
                     "report: s at 60 rows", "report: peak MiB at 60 rows", "report: s at 180 rows",
                     "report: peak MiB at 180 rows", "report: time exponent", "report: memory exponent"]
    assert figures[0].value > 0 and "events/" in figures[0].note
    assert all(figure.value > 0 and figure.goal is None for figure in figures[1:7])
    assert all(figure.goal == results.GOAL_EXPONENT for figure in figures[7:])
    assert not math.isnan(figures[7].value)
