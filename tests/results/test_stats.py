"""harness.results.stats: seeded bootstrap intervals, paired differences, the Pareto front."""
import math

import pandas as pd
import pytest

from harness.results.stats import bootstrap_mean, bootstrap_ratio, paired_difference, paired_frame, pareto_front


def test_bootstrap_is_deterministic_for_a_seed_and_varies_across_seeds():
    values = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2, 0.8]
    assert bootstrap_mean(values, seed=7) == bootstrap_mean(values, seed=7)
    assert bootstrap_mean(values, seed=7) != bootstrap_mean(values, seed=8)


@pytest.mark.parametrize("values", [[1, 0, 1, 1, 0], [3.5, 10.0, 2.25, 8.0], [5.0]])
def test_interval_contains_the_mean(values):
    estimate = bootstrap_mean(values)
    assert estimate.lo <= estimate.mean <= estimate.hi
    assert estimate.mean == pytest.approx(sum(values) / len(values))
    assert estimate.n == len(values)


def test_interval_of_a_constant_is_a_point_and_unknown_values_are_skipped():
    estimate = bootstrap_mean([2.0, None, 2.0, float("nan")])
    assert (estimate.mean, estimate.lo, estimate.hi, estimate.n) == (2.0, 2.0, 2.0, 2)
    assert math.isnan(bootstrap_mean([None, None]).mean)


def test_ratio_is_a_ratio_of_sums_not_a_mean_of_ratios():
    estimate = bootstrap_ratio([0, 900], [100, 1000])
    assert estimate.mean == pytest.approx(900 / 1100)
    assert estimate.lo <= estimate.mean <= estimate.hi


def _runs(rows):
    return pd.DataFrame(rows, columns=["strategy", "task_id", "seed", "cost_usd"])


def test_paired_differences_pair_the_same_task_and_seed():
    runs = _runs([
        ("a", "t1", 0, 5.0), ("a", "t1", 1, 7.0), ("a", "t2", 0, 1.0), ("a", "t3", 0, 100.0),
        ("base", "t2", 0, 3.0), ("base", "t1", 1, 4.0), ("base", "t1", 0, 2.0), ("base", "t4", 0, 50.0),
    ])
    pairs = paired_frame(runs, "a", "base", "cost_usd")
    assert list(zip(pairs["task_id"], pairs["seed"], pairs["diff"])) == [("t1", 0, 3.0), ("t1", 1, 3.0),
                                                                        ("t2", 0, -2.0)]
    estimate = paired_difference(runs, "a", "base", "cost_usd")
    assert estimate.n == 3
    assert estimate.mean == pytest.approx(4.0 / 3)
    # Unpaired means would say 37.67 - 14.75; pairing removes t3 and t4, run by one strategy only.
    assert estimate.lo <= estimate.mean <= estimate.hi


def test_paired_differences_refuse_two_runs_of_one_cell():
    runs = _runs([("a", "t1", 0, 1.0), ("a", "t1", 0, 2.0), ("base", "t1", 0, 1.0)])
    with pytest.raises(pd.errors.MergeError):
        paired_frame(runs, "a", "base", "cost_usd")


def test_pareto_front_keeps_only_undominated_points():
    points = pd.DataFrame({"name": ["cheap", "dominated", "best", "tie"],
                           "cost": [1.0, 3.0, 2.0, 2.0], "success": [0.5, 0.5, 1.0, 0.9]})
    assert list(pareto_front(points, "cost", "success")["name"]) == ["cheap", "best"]
