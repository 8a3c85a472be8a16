"""`ctxbench sweep`: grid parsing, validation before any model call, tuning table, recommendation rule."""
import re
from pathlib import Path

import pandas as pd
import pytest

import harness.run.runner
from harness import api
from harness.cli import main
from harness.core.errors import ConfigError
from harness.results.tuning import decide, recommendation_text, recommended_label, tuning_table
from harness.sweep import grid_points, load_grid_file, make_grid, parse_grid_args, set_dotted, split_values, validate_grid

MASK = "masking:KeepLastToolResults"


def test_grid_arguments_are_read_as_yaml_values():
    axes = parse_grid_args(["keep=0,1,3", "ratio=0.5,1e3", "on=true,false", "name=a,'b,c'"])
    assert axes == {"keep": [0, 1, 3], "ratio": [0.5, 1000.0], "on": [True, False], "name": ["a", "b,c"]}


def test_grid_values_may_be_lists_split_only_on_top_level_commas():
    assert split_values("[0.7,0.9],[0.8, 0.95]") == ["[0.7,0.9]", "[0.8, 0.95]"]
    assert parse_grid_args(["stages=[0.7,0.9],[0.8]"]) == {"stages": [[0.7, 0.9], [0.8]]}


@pytest.mark.parametrize("item, message", [
    ("keep", "expected key=value1,value2"),
    ("=1,2", "expected key=value1,value2"),
    ("keep=", "expected key=value1,value2"),
])
def test_malformed_grid_arguments_are_refused(item, message):
    with pytest.raises(ConfigError, match=message):
        parse_grid_args([item])


def test_a_key_given_twice_is_refused():
    with pytest.raises(ConfigError, match="key 'keep' given twice"):
        parse_grid_args(["keep=1", "keep=2"])


def test_dotted_keys_reach_nested_mappings_and_list_items():
    base = {"with": [{"name": "x", "config": {}}]}
    assert set_dotted(base, "with.0.config.keep", 3) == {"with": [{"name": "x", "config": {"keep": 3}}]}
    assert set_dotted({}, "a.b", 1) == {"a": {"b": 1}}
    assert base == {"with": [{"name": "x", "config": {}}]}  # the base is never modified
    with pytest.raises(ConfigError, match="grid key 'with.1.config': '1' is not an index of a list of 1"):
        set_dotted(base, "with.1.config", {})
    with pytest.raises(ConfigError, match="grid key 'keep.x': 'keep' is 3, not a mapping"):
        set_dotted({"keep": 3}, "keep.x", 1)


def test_grid_points_are_the_product_in_order_each_with_its_own_label():
    grid = make_grid(MASK, {"keep": [1, 2], "with.0.config.keep": [5]}, {"with": [{"name": MASK}]}, label="m")
    points = grid_points(grid)
    assert [point.spec.display for point in points] == ["m[keep=1,with.0.config.keep=5]",
                                                        "m[keep=2,with.0.config.keep=5]"]
    assert points[1].spec.config == {"keep": 2, "with": [{"name": MASK, "config": {"keep": 5}}]}
    assert points[0].params == {"keep": 1, "with.0.config.keep": 5}


def test_an_unknown_grid_key_fails_naming_the_key_before_any_model_call(monkeypatch, tmp_path):
    def no_runs(*args, **kwargs):
        raise AssertionError("a model was called")

    monkeypatch.setattr(harness.run.runner, "run_cells", no_runs)
    grid = make_grid(MASK, {"keep": [1, 2], "kepp": [3]})
    with pytest.raises(ConfigError, match=r"sweep: grid key 'kepp' = 3: .*unknown key\(s\) 'kepp'; known keys: keep"):
        api.sweep(grid, "smoke", out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_impossible_grid_value_fails_naming_the_key():
    with pytest.raises(ConfigError, match="grid key 'keep' = -1: .*keep: expected 0 or more"):
        validate_grid(make_grid(MASK, {"keep": [2, -1]}))


def test_a_bad_key_inside_a_composed_strategy_is_named():
    grid = make_grid("none", {"with.0.config.kep": [1]}, {"with": [{"name": MASK, "config": {}}]})
    with pytest.raises(ConfigError, match=r"grid key 'with.0.config.kep' = 1: .*unknown key\(s\) 'kep'"):
        validate_grid(grid)


@pytest.mark.parametrize("strategy, axes, message", [
    (None, {"keep": [1]}, "name the strategy to sweep"),
    (MASK, {}, "the grid is empty"),
    (MASK, {"keep": 3}, "grid key 'keep': expected a non-empty list of values"),
    ("no_such_strategy", {"keep": [1]}, "unknown strategy 'no_such_strategy'"),
])
def test_bad_grids_are_refused(strategy, axes, message):
    with pytest.raises(ConfigError, match=message):
        validate_grid(make_grid(strategy, axes))


def test_grid_file_unknown_keys_are_refused(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text("strategy: none\ngrids: {keep: [1]}\n")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['grids'\]"):
        load_grid_file(path)


def test_cli_sweep_with_a_bad_key_in_a_grid_file_exits_with_the_key_named(tmp_path, capsys):
    path = tmp_path / "grid.yaml"
    path.write_text(f"strategy: '{MASK}'\ngrid:\n  keep: [1, 2]\n")
    code = main(["sweep", str(path), "--grid", "keeep=4", "--suite", "smoke", "--out", str(tmp_path / "out"),
                 "--no-progress"])
    assert code == 2
    assert "grid key 'keeep' = 4" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_sweep_writes_a_tuning_table_pareto_plot_and_recommendation(smoke_sweep):
    """The `--also` baseline is a row of the tuning table (`baseline` True) and takes
    part in the Pareto flag and the recommendation; here it ties mask[keep=3] on success and costs more."""
    results = api.load_results(smoke_sweep)
    tuning = results.tuning
    assert list(tuning["label"]) == ["none", "mask[keep=0]", "mask[keep=3]"]
    assert list(tuning["baseline"]) == [True, False, False]
    assert list(tuning["keep"].fillna(-1)) == [-1, 0, 3]
    assert list(tuning["success_rate"]) == [1.0, 0.0, 1.0]
    assert list(tuning["ties_best"]) == [True, False, True]
    assert results.recommended == "mask[keep=3]"
    assert list(tuning["recommended"]) == [False, False, True]
    assert (Path(smoke_sweep) / "plots" / "tuning_pareto.png").exists()
    report = (Path(smoke_sweep) / "report.md").read_text()
    assert ("Recommended: **mask[keep=3]**: highest success (100%) and the cheapest per success ($0.01246 per "
            "success) of the 2 rows tied on success within the 95% interval; also tied: none.") in report
    assert "none" in set(results.runs["strategy"])  # `also` ran the baseline alongside


def test_a_sweep_with_a_bad_task_file_writes_nothing_to_its_out(tmp_path, capsys):
    """Bad input exits 2 before anything is written; sweep.json used to be written
    before the task file was read, so a failed sweep left a directory that looked like a sweep's."""
    bad = tmp_path / "tasks.jsonl"
    bad.write_text("3\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["sweep", "--strategy", "observation_masking", "--grid", "keep_last=3,5", "--tasks", str(bad),
                 "--out", str(out), "--no-progress"]) == 2
    assert "tasks.jsonl" in capsys.readouterr().err
    assert not (out / "sweep.json").exists() and not (out / "config.json").exists()


def test_a_seed_given_twice_is_refused_by_the_python_api_too(tmp_path):
    """Ours: each (task, strategy, seed) has one row and one event log, so a repeated seed
    would run twice under one run_id; the CLI refused it, `api.run(seeds=[0, 0])` did not."""
    with pytest.raises(ConfigError, match=r"seeds: \[0\] given more than once"):
        api.run("smoke", strategies="none", seeds=[0, 0], out=tmp_path / "out")
    assert not (tmp_path / "out" / "config.json").exists()


# --- points by value, a baseline that counts, a recommendation beyond its interval ---


def test_points_sort_by_value_numbers_numerically_not_as_text():
    """Keep_last=20,3,10,5 ran and showed as 10, 20, 3, 5 (text order); numbers sort
    numerically, lists by their JSON, and a multi-axis grid lexicographically over the axes in grid order."""
    grid = make_grid("observation_masking", {"keep_last": [20, 3, 10, 5]})
    assert [p.params["keep_last"] for p in grid_points(grid)] == [3, 5, 10, 20]
    grid = make_grid("agent_reset", {"condenser.warning_thresholds": [[0.9], [0.75, 0.8], [0.5]]})
    assert [p.params["condenser.warning_thresholds"] for p in grid_points(grid)] == [[0.5], [0.75, 0.8], [0.9]]
    grid = make_grid(MASK, {"b": [10, 2], "a": ["y", "x"]})
    assert [(p.params["b"], p.params["a"]) for p in grid_points(grid)] == [(2, "x"), (2, "y"), (10, "x"), (10, "y")]
    grid = make_grid(MASK, {"v": ["word", 1.5, None, True, [1], 0]})
    assert [p.params["v"] for p in grid_points(grid)] == [None, True, 0, 1.5, "word", [1]]


def _runs(outcomes: dict[str, list[bool]]) -> pd.DataFrame:
    """Runs of seed 0, one per task, from each strategy's successes in task order."""
    return pd.DataFrame([{"task_id": f"t{i}", "seed": 0, "strategy": strategy, "success": ok}
                         for strategy, oks in outcomes.items() for i, ok in enumerate(oks)])


def _decided(rows: list[tuple], outcomes: dict[str, list[bool]]) -> pd.DataFrame:
    """A tuning table of (label, baseline, mean_cost_usd) rows whose success figures come from `outcomes`."""
    table = []
    for label, baseline, cost in rows:
        successes = sum(outcomes[label])
        table.append({"label": label, "baseline": baseline, "success_rate": successes / len(outcomes[label]),
                      "mean_cost_usd": cost,
                      "cost_per_success": cost * len(outcomes[label]) / successes if successes else float("nan")})
    return decide(pd.DataFrame(table), _runs(outcomes))


def test_a_one_task_difference_does_not_decide_the_cheapest_tied_point_is_recommended():
    """The rule of docs/sweeps.md: 10/10 against 9/10 on the same ten tasks is within the 95%
    interval of the paired difference, so the two tie on success and the cheaper per success is chosen;
    the old rule took the higher success rate whatever its interval."""
    outcomes = {"p[k=3]": [True] * 9 + [False], "p[k=5]": [True] * 10}
    tuning = _decided([("p[k=3]", False, 1.0), ("p[k=5]", False, 3.0)], outcomes)
    assert list(tuning["ties_best"]) == [True, True]
    assert tuning.loc[0, "success_vs_best"] == pytest.approx(-0.1) and tuning.loc[0, "success_vs_best_hi"] >= 0
    assert recommended_label(tuning) == "p[k=3]"
    assert recommendation_text(tuning) == ("**p[k=3]**: tie on success within the 95% interval with the leader p[k=5] "
                                           "(100% success) at 90%; the cheapest per success of the 2 tied rows "
                                           "($1.111 per success); also tied: p[k=5]")


def test_a_difference_beyond_its_interval_decides_however_cheap_the_loser():
    """10/10 against 2/10 is a difference whose 95% interval lies below 0, so the cheaper
    point does not tie and the higher success is recommended."""
    outcomes = {"p[k=3]": [True, True] + [False] * 8, "p[k=5]": [True] * 10}
    tuning = _decided([("p[k=3]", False, 0.1), ("p[k=5]", False, 3.0)], outcomes)
    assert list(tuning["ties_best"]) == [False, True]
    assert tuning.loc[0, "success_vs_best_hi"] < 0
    assert recommended_label(tuning) == "p[k=5]"
    assert recommendation_text(tuning).startswith("**p[k=5]**: highest success (100%), ahead of every other row")


def test_the_baseline_takes_part_in_the_pareto_front_and_wins_when_it_is_best():
    """Keep_last=3 and 5 were flagged Pareto although `none` beats both; with the baseline
    in the table they are dominated, and when the baseline is the cheapest of the tied the text says so."""
    outcomes = {"none": [True] * 10, "m[keep_last=3]": [True] * 9 + [False], "m[keep_last=5]": [True] * 10}
    tuning = _decided([("none", True, 1.0), ("m[keep_last=3]", False, 1.2), ("m[keep_last=5]", False, 1.5)],
                      outcomes)
    assert list(tuning["pareto"]) == [True, False, False]
    assert recommended_label(tuning) == "none"
    assert recommendation_text(tuning).startswith("the baseline **none**: highest success (100%) and the cheapest")


def test_the_leader_ties_break_on_cost_per_success_and_unknown_cost_comes_last():
    """Ours (rule: docs/sweeps.md): among rows tied on success the lowest cost per success wins; a row
    whose cost is unknown is chosen only when no tied row has a known cost."""
    outcomes = {"a": [True] * 4, "b": [True] * 4}
    assert recommended_label(_decided([("a", False, float("nan")), ("b", False, 9.0)], outcomes)) == "b"
    assert recommended_label(_decided([("a", False, 2.0), ("b", False, 2.0)], outcomes)) == "a"


def test_api_sweep_takes_the_grid_files_own_mapping(tmp_path, suite_file):
    """`api.sweep({"strategy": ..., "grid": {...}}, suite)` failed with the README's grid shape."""
    out = api.sweep({"strategy": MASK, "label": "m", "grid": {"keep": [3, 0]}},
                    suite_file("smoke", family="chained_lookup"), out=tmp_path / "out")
    assert list(api.load_results(out).tuning["label"]) == ["m[keep=0]", "m[keep=3]"]
    with pytest.raises(ConfigError, match=r"sweep grid: unknown key\(s\) \['grids'\] \(did you mean 'grid'\?\)"):
        api.sweep({"strategy": MASK, "grids": {"keep": [1]}}, "smoke", out=tmp_path / "other")


def test_api_sweep_forwards_runs_spending_cache_and_concurrency_options(tmp_path, suite_file):
    """A sweep takes every spending, cache and concurrency option of `run`."""
    import json

    out = api.sweep(make_grid(MASK, {"keep": [3]}, label="m"), suite_file("smoke", family="chained_lookup"),
                    out=tmp_path / "out", cache=tmp_path / "cache", max_cost_usd=5.0, max_total_cost_usd=50.0,
                    max_concurrency=2)
    config = json.loads((out / "config.json").read_text())
    assert config["max_cost_usd"] == 5.0
    assert config["profiles"]["main"]["max_concurrency"] == 2
    assert config["profiles"]["main"]["response_cache"] == str(tmp_path / "cache")
    assert (tmp_path / "cache" / "responses.sqlite").exists()


def test_a_sweep_stopped_by_its_spending_limit_is_finished_by_resume_tuning_included(tmp_path, suite_file):
    """`max_total_cost_usd` stops a sweep with cells unstarted (unstarted.json); resuming its
    directory runs them and writes the whole tuning table, as one uninterrupted sweep does."""
    suite = suite_file("smoke", family="chained_lookup")
    grid = make_grid(MASK, {"keep": [0, 3]}, label="m")
    whole = api.sweep(grid, suite, also=["none"], out=tmp_path / "whole")
    cut = api.sweep(grid, suite, also=["none"], out=tmp_path / "cut", max_total_cost_usd=0.001)
    assert (cut / "unstarted.json").exists()
    api.resume(cut)
    assert not (cut / "unstarted.json").exists()
    columns = ["label", "baseline", "runs", "success_rate", "mean_cost_usd", "recommended"]
    pd.testing.assert_frame_equal(api.load_results(cut).tuning[columns], api.load_results(whole).tuning[columns])


def test_mock_knob_axes_give_each_point_its_own_profiles(tmp_path, suite_file):
    """A grid key `mock.<knob>` sets the simulated agent's knob at that point (the label
    names it, tuning.csv has its column); the knob reaches the mock: narrating every fact it finds costs
    output tokens that narrating none does not. Resuming such a sweep keeps each point's knobs."""
    import json

    grid = make_grid(MASK, {"keep": [3], "mock.narrate": [1.0, 0.0]}, label="m")
    out = api.sweep(grid, suite_file("smoke", family="chained_lookup"), out=tmp_path / "out",
                    profiles=api.mock_profiles(knobs={"reread_budget": 1}))
    runs = api.load_results(out).runs
    assert list(api.load_results(out).tuning["mock.narrate"]) == [0.0, 1.0]
    tokens = runs.groupby("strategy")["output_tokens"].sum()
    assert tokens["m[keep=3,mock.narrate=1.0]"] > tokens["m[keep=3,mock.narrate=0.0]"]
    config = json.loads((out / "config.json").read_text())
    assert config["strategy_knobs"]["m[keep=3,mock.narrate=0.0]"] == {"main": {"narrate": 0.0}}
    assert config["profiles"]["main"]["mock"]["knobs"] == {"reread_budget": 1}  # the base, under each point's
    lines = (out / "runs.jsonl").read_text().splitlines()
    (out / "runs.jsonl").write_text("\n".join(lines[:2]) + "\n")
    api.resume(out)
    again = api.load_results(out).runs
    assert again.set_index("run_id")["output_tokens"].to_dict() == runs.set_index("run_id")["output_tokens"].to_dict()


def test_summarizer_knob_axes_set_the_summary_profiles_knobs():
    """`summarizer.<knob>` sets the mock summarizer's knob (the `summary` profile) at that point."""
    from harness.run.runner import Matrix
    from harness.sweep import point_knobs
    from tasks.suites import load_tasks

    points = validate_grid(make_grid("hard_summarize", {"summarizer.summary_completeness": [0.5]}))
    matrix = Matrix(tasks=load_tasks("smoke")[:1], strategies=[p.spec for p in points], seeds=[0],
                    profiles=api.mock_profiles(), strategy_knobs=point_knobs(points))
    cell, = matrix.build("events")
    assert cell.profiles["summary"]["mock"]["knobs"] == {"summary_completeness": 0.5}
    assert "knobs" not in cell.profiles["main"]["mock"] and "knobs" not in matrix.profiles["summary"]["mock"]


@pytest.mark.parametrize("axis, message", [
    ("mock.narate=0.1", r"grid key 'mock.narate': 'narate' is not a knob of the simulated agent \(mock/agent\) "
                        r"\(did you mean 'narrate'\?\)"),
    ("mock.narrate=0.5,2", r"grid key 'mock.narrate' = 2: .*narrate must be in \[0, 1\]"),
    ("summarizer.summary_completness=0.5", r"not a knob of the mock summarizer \(did you mean 'summary_completeness'"),
    ("mock.a.b=1", r"grid key 'mock.a.b': expected mock.<knob>"),
])
def test_bad_knob_axes_exit_2_with_close_matches_before_any_model_call(axis, message, tmp_path, capsys, monkeypatch):
    """Knob names and values are checked before any model call (exit 2, close matches)."""
    def no_runs(*args, **kwargs):
        raise AssertionError("a model was called")

    monkeypatch.setattr(harness.run.runner, "run_cells", no_runs)
    code = main(["sweep", "--strategy", "observation_masking", "--grid", "keep_last=3", axis, "--suite", "smoke",
                 "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 2
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_a_mock_knob_axis_on_a_real_model_is_refused(tmp_path):
    """Ours: mock knobs set only a mock; on a real model's profile they would silently do nothing."""
    profiles = api.mock_profiles("openai/gpt-4o-mini")
    with pytest.raises(ConfigError, match=r"sets mock knobs \['narrate'\] on profile 'main', whose model "
                                          r"'openai/gpt-4o-mini' is not a mock"):
        api.sweep(make_grid(MASK, {"mock.narrate": [0.1]}), "smoke", profiles=profiles, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_sweep_prints_the_tuning_table_by_value_and_the_recommendation(tmp_path, capsys, suite_file):
    """Stdout shows the points in value order (3 before 10) with the baseline, and the
    recommendation in words."""
    code = main(["sweep", "--strategy", MASK, "--grid", "keep=10,3", "--also", "none", "--tasks",
                 suite_file("smoke", family="chained_lookup"), "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    tuning = out[out.index("Tuning ("):]
    lines = tuning.splitlines()
    names = [line.split()[0] for line in lines[2:5]]
    assert names == ["none", "masking:KeepLastToolResults[keep=3]", "masking:KeepLastToolResults[keep=10]"]
    assert lines[1].split() == ["label", "keep", "runs", "success", "vs", "leader", "cost/success", "$", "decision"]
    assert lines[2].split()[-1] == "baseline" and "+0 pt [+0, +0]" in tuning  # differences in points
    assert "\nrecommended: " in tuning and "tied on success within the 95% interval" in tuning


def test_run_resume_of_a_sweep_prints_its_tuning_as_sweep_does(tmp_path, capsys, suite_file):
    """Ours: a sweep's directory finished by `ctxbench run --resume` prints the tuning table
    and the recommendation too (it printed the run table only)."""
    out = tmp_path / "out"
    assert main(["sweep", "--strategy", MASK, "--grid", "keep=3,10", "--tasks", suite_file("smoke", family="chained_lookup"),
                 "--out", str(out), "--no-progress", "--max-total-cost-usd", "0.000001"]) == 0
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "Tuning (" in printed and "\nrecommended: " in printed


def test_the_tuning_plot_is_titled_as_a_sweep_naming_its_baseline():
    """The tuning plot names what was swept and against what."""
    from harness.results.tuning import sweep_title

    assert sweep_title({"strategy": "observation_masking", "grid": {"keep_last": [3, 5]}}, ["none"]) == (
        "Sweep of observation_masking over keep_last (baseline: none)")
