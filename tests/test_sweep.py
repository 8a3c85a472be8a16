"""`ctxbench sweep`: grid parsing, validation before any model call, tuning table, recommendation rule."""
from pathlib import Path

import pandas as pd
import pytest

import harness.runner
from harness import api
from harness.cli import main
from harness.errors import ConfigError
from harness.sweep import (decide, grid_points, load_grid_file, make_grid, parse_grid_args, recommendation_text,
                           recommended_label, set_dotted, split_values, tuning_table, validate_grid)

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

    monkeypatch.setattr(harness.runner, "run_cells", no_runs)
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
    """Issue 21 item 4: the `--also` baseline is a row of the tuning table (`baseline` True) and takes
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
    assert ("Recommended: **mask[keep=3]**: tie on success within the 95% interval (none, mask[keep=3]); "
            "cheapest among tied: mask[keep=3]") in report
    assert "none" in set(results.runs["strategy"])  # `also` ran the baseline alongside


def test_a_sweep_with_a_bad_task_file_writes_nothing_to_its_out(tmp_path, capsys):
    """Issue 20 part 2: bad input exits 2 before anything is written; sweep.json used to be written
    before the task file was read, so a failed sweep left a directory that looked like a sweep's."""
    bad = tmp_path / "tasks.jsonl"
    bad.write_text("3\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["sweep", "--strategy", "observation_masking", "--grid", "keep_last=3,5", "--tasks", str(bad),
                 "--out", str(out), "--no-progress"]) == 2
    assert "tasks.jsonl" in capsys.readouterr().err
    assert not (out / "sweep.json").exists() and not (out / "config.json").exists()


def test_a_seed_given_twice_is_refused_by_the_python_api_too(tmp_path):
    """Issue 20 part 2 (ours): each (task, strategy, seed) has one row and one event log, so a repeated seed
    would run twice under one run_id; the CLI refused it, `api.run(seeds=[0, 0])` did not."""
    with pytest.raises(ConfigError, match=r"seeds: \[0\] given more than once"):
        api.run("smoke", strategies="none", seeds=[0, 0], out=tmp_path / "out")
    assert not (tmp_path / "out" / "config.json").exists()
