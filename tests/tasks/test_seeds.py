"""Seeds are samples: each run seed draws a fresh instance unless the row is pinned,
and intervals resample tasks, so repeating a seed cannot narrow them."""
import json

import pandas as pd
import pytest

from harness.core.config import build_dataclass
from harness.conversation.events import event_log_name, read_events
from harness.core.errors import TaskFileError
from harness.results.report import paired_differences, summarize
from harness.results.stats import bootstrap_mean, paired_difference
from tasks import family_module
from tasks.catalog import show_text
from tasks.suites import TaskRow, instance_seed, load_tasks


def _opening(row: TaskRow, run_seed: int) -> list[str]:
    """The task statement and the instance's facts (the attributes it was generated with, but its params)."""
    environment = row.build(run_seed)
    facts = [repr(getattr(environment, name)) for name in environment.generated if name != "params"]
    return [environment.system_prompt, *environment.initial_user_messages(), *facts]


@pytest.mark.parametrize("row", load_tasks("smoke"), ids=lambda row: row.task_id)
def test_each_run_seed_draws_a_fresh_instance_and_seed_0_is_the_rows_own(row):
    """`--seeds` values draw fresh instances of the row's family and params;
    ours: run seed 0 is the row's own instance, so single-seed tables stay the suite as written."""
    assert row.instance_seed(0) == row.seed
    module = family_module(row.family)
    own = module.build(build_dataclass(module.Params, row.params, "params"), row.seed)
    assert _opening(row, 0)[:2] == [own.system_prompt, *own.initial_user_messages()][:2]
    drawn = {json.dumps(_opening(row, run_seed)) for run_seed in (0, 1, 2)}
    assert len(drawn) == 3  # every seed its own statement and facts (the cache keys on the instance seed)
    assert _opening(row, 1) == _opening(row, 1)  # and the same instance each time it is asked for


def test_a_pinned_row_keeps_its_instance_under_every_run_seed():
    """A row that pins its instance gets the same one under every run seed."""
    row = TaskRow("pinned", "chained_lookup", 5, {"hops": 3}, pinned=True)
    free = TaskRow("free", "chained_lookup", 5, {"hops": 3})
    assert {row.instance_seed(s) for s in (0, 1, 7)} == {5}
    assert _opening(row, 7) == _opening(row, 0) == _opening(free, 0)
    assert _opening(free, 7) != _opening(row, 7)


def test_instance_seeds_are_stable_and_depend_on_both_seeds():
    """The instance seed comes from the row's seed and the run seed together
    (harness.core.tokens.stable_hash, so the same in every process)."""
    assert instance_seed(100, 1) == instance_seed(100, 1)
    assert len({instance_seed(100, 1), instance_seed(101, 1), instance_seed(100, 2)}) == 3
    assert instance_seed(100, 0) == 100


def test_pinned_is_validated_as_a_boolean_suite_field(tmp_path):
    """`pinned` is a documented, validated suite-row field."""
    good = tmp_path / "good.jsonl"
    good.write_text('{"task_id": "a", "family": "chained_lookup", "seed": 1, "pinned": true}\n'
                    '{"task_id": "b", "family": "chained_lookup", "seed": 2}\n')
    assert [row.pinned for row in load_tasks(str(good))] == [True, False]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a", "family": "chained_lookup", "seed": 1, "pinned": "yes"}\n')
    with pytest.raises(TaskFileError, match=r"bad.jsonl:1: field 'pinned' must be true or false"):
        load_tasks(str(bad))


def test_runs_and_run_start_record_the_instance_seed(run_suite):
    """Runs.jsonl rows and the event log's run_start name the instance each run got."""
    runs = run_suite("smoke", "none", seeds=(0, 1))
    rows = {row.task_id: row for row in load_tasks("smoke")}
    for run in runs.to_dict("records"):
        expected = rows[run["task_id"]].instance_seed(run["seed"])
        assert run["instance_seed"] == expected
        start = read_events(runs.attrs["out"] / "events" / event_log_name(run['run_id']))[0]
        assert start["type"] == "run_start" and start["instance_seed"] == expected
    first = runs[runs["task_id"] == "chained_lookup-smoke-0"].set_index("seed")
    assert first.loc[0, "input_tokens"] != first.loc[1, "input_tokens"]  # another instance, another run


def test_tasks_show_names_the_instance_of_a_run_seed():
    """`ctxbench tasks show ID --seed N` shows the instance run seed N gets."""
    row = load_tasks("smoke")[0]
    assert f"instance seed {row.seed} (the row's own instance)" in show_text(row)
    assert f"instance seed {row.instance_seed(3)} (drawn)" in show_text(row, 3)
    assert show_text(row, 3) != show_text(row, 0)


def _runs(outcomes: dict[str, list[float]], seeds: int) -> pd.DataFrame:
    """Runs of strategies `a` and `base` on tasks t0..tn, each outcome repeated over `seeds` seeds."""
    rows = []
    for strategy, values in outcomes.items():
        for task, value in enumerate(values):
            for seed in range(seeds):
                rows.append({"run_id": f"t{task}--{strategy}--s{seed}", "task_id": f"t{task}", "family": "f",
                             "strategy": strategy, "seed": seed, "success": bool(value), "score": value,
                             "input_tokens": 1000 + 100 * task, "cached_tokens": 500,
                             "cache_hit_rate": 500 / (1000 + 100 * task), "cost_usd": 1.0 + task,
                             "cost_usd_uncached": 2.0, "requests": 3, "agent_resets": 0, "hard_resets": 0,
                             "compactions": 0, "rereads": 0, "termination": "submitted"})
    return pd.DataFrame(rows).sort_values("run_id", ignore_index=True)


OUTCOMES = {"a": [1, 0, 1, 1, 0, 1, 0, 1, 1, 1], "base": [0, 0, 1, 0, 0, 1, 0, 1, 0, 1]}
INTERVALS = ["success_rate_lo", "success_rate_hi", "mean_cost_usd_lo", "mean_cost_usd_hi",
             "cost_per_success_lo", "cost_per_success_hi", "cache_hit_rate_lo", "cache_hit_rate_hi"]


def test_repeating_identical_outcomes_over_seeds_does_not_narrow_the_intervals():
    """Intervals resample tasks (cluster bootstrap over task ids), so three seeds
    with the same outcomes as one give the same intervals (resampling runs narrowed them:
    compaction_ladder [45%, 85%] -> [53%, 77%])."""
    once, thrice = summarize(_runs(OUTCOMES, 1)), summarize(_runs(OUTCOMES, 3))
    assert list(thrice["runs"]) == [3 * n for n in once["runs"]]
    pd.testing.assert_frame_equal(once[INTERVALS], thrice[INTERVALS])
    a = once[(once["family"] == "all") & (once["strategy"] == "a")].iloc[0]
    assert a["success_rate_lo"] < a["success_rate"] < a["success_rate_hi"]  # a real interval, not a point


def test_repeating_identical_pairs_over_seeds_does_not_narrow_paired_differences():
    """Paired differences pair on (task_id, seed) and resample task clusters."""
    once = paired_differences(_runs(OUTCOMES, 1), baseline="base")
    thrice = paired_differences(_runs(OUTCOMES, 3), baseline="base")
    assert list(thrice["pairs"]) == [3 * n for n in once["pairs"]]
    pd.testing.assert_frame_equal(once[["mean_diff", "lo", "hi"]], thrice[["mean_diff", "lo", "hi"]])
    runs = _runs(OUTCOMES, 3)
    estimate = paired_difference(runs.assign(success=runs["success"].astype(float)), "a", "base", "success")
    assert estimate.mean == pytest.approx(0.3) and estimate.lo < estimate.mean < estimate.hi


def test_cluster_bootstrap_takes_all_runs_of_each_drawn_task():
    """A resample draws task ids and takes all their runs, so a task whose seeds
    disagree counts as one task of mean 0.5, and the mean weighs every run once."""
    values, tasks = [1, 0, 1, 1, 1, 0], ["x", "x", "y", "y", "z", "z"]
    estimate = bootstrap_mean(values, clusters=tasks)
    assert estimate.mean == pytest.approx(4 / 6) and estimate.n == 6
    plain = bootstrap_mean(values)
    assert (estimate.lo, estimate.hi) != (plain.lo, plain.hi)
    # Tasks x, y, z have means 1/2, 1, 1/2: no resample of whole tasks can reach 0 or 1/3.
    assert estimate.lo >= 0.5 and estimate.hi <= 1.0
