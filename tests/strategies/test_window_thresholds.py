"""Token thresholds that scale with the run's input budget (strategies.thresholds): each default is the
fraction that gives its source's documented value at a 200k window; an explicit value stays absolute;
the effective values are recorded; a threshold that cannot act is said before the run."""
from __future__ import annotations

import json

import pytest
from transcripts import exchange, make_ctx, user, words

from harness import api
from harness.cli import main as cli_main
from strategies import StrategySpec, build_strategy
from strategies.catalog import show_text
from strategies.clear_tool_uses import ClearToolUses
from strategies.compaction_ladder import CompactionLadder

SEED_002_REAL_WORK = {"turn_boundary_target": 100_000, "target_tokens": 200_000, "clear_tool_max_tokens": 5_000,
                      "min_clear_tokens": 10_000}
# Explicit absolute values equal to each scaled default at a 200k window (the values before they scaled).
ABSOLUTE_AT_200K = {
    "compaction_ladder": SEED_002_REAL_WORK,
    "clear_tool_uses": {"trigger": 100_000},
}
FEW_TASKS = 3  # per family, for the default run's version of the 200k comparison
TIMING = {"wall_s", "cpu_s", "library_cpu_s"}


def test_ladder_defaults_are_seed_002s_values_at_200k_and_half_and_all_of_the_window_elsewhere():
    """Seed 002's real-work block (100,000 / 200,000; 5,000; 10,000) is 0.5 / 1.0 / 0.025 / 0.05 of a 200k window."""
    ladder = CompactionLadder.from_config({})
    assert ladder.threshold_values(200_000) == SEED_002_REAL_WORK
    assert ladder.threshold_values(32_000) == {"turn_boundary_target": 16_000, "target_tokens": 32_000,
                                               "clear_tool_max_tokens": 800, "min_clear_tokens": 1_600}


def test_clear_tool_uses_trigger_is_anthropics_100000_at_200k_and_half_the_window_elsewhere():
    """Anthropic clear_tool_uses_20250919's trigger default, 100,000 input tokens, is 0.5 of a 200k window."""
    assert ClearToolUses().threshold_values(200_000) == {"trigger": 100_000}
    assert ClearToolUses().threshold_values(32_000) == {"trigger": 16_000}


def test_a_run_resolves_the_defaults_against_its_own_window():
    """on_run_start reads ctx.budget(): at a 32k window the trigger is 16,000, so 20,000 tokens clear."""
    ctx = make_ctx(window=32_000)
    user(ctx, "task")
    for i in range(8):
        exchange(ctx, "search", {"text": f"q{i}"}, words(2_500, f"r{i}"))
    strategy = ClearToolUses()
    strategy.on_run_start(ctx)
    assert strategy.limits.trigger == 16_000
    strategy.before_request(ctx)
    assert [e["step"] for e in ctx.log.events if e["type"] == "compaction"] == ["clear_tool_uses"]


def test_an_explicit_value_stays_absolute_at_any_window():
    strategy = CompactionLadder.from_config({"target_tokens": 150_000})
    ctx = make_ctx(window=32_000)
    strategy.on_run_start(ctx)
    assert strategy.limits.target_tokens == 150_000 and strategy.limits.turn_boundary_target == 16_000


def test_tiered_compaction_target_is_the_librarys_target_fraction_and_its_tier_defaults_scale():
    """pydantic-ai-harness TieredCompaction takes target_fraction (of context_window, our run's budget);
    ours, 0.5, gives the ladder's 100,000 at 200k; the clamp and clear triggers scale the same way."""
    pytest.importorskip("pydantic_ai_harness")
    strategy = build_strategy(StrategySpec(name="pai.tiered_compaction"))
    assert strategy.threshold_values(200_000) == {"target_tokens": 100_000, "tiers[0].max_part_tokens": 50_000,
                                                  "tiers[1].min_clear_tokens": 10_000}
    assert strategy.threshold_values(32_000) == {"target_tokens": 16_000, "tiers[0].max_part_tokens": 8_000,
                                                 "tiers[1].min_clear_tokens": 1_600}
    explicit = build_strategy(StrategySpec(name="pai.tiered_compaction", config={"target_tokens": 20_000}))
    assert explicit.threshold_values(32_000)["target_tokens"] == 20_000


def test_catalog_shows_a_scaled_default_as_a_fraction_with_its_value_at_200k():
    text = show_text("compaction_ladder")
    assert "turn_boundary_target  (integer or null, default 0.5 x budget (100,000 at 200k))" in text
    assert "default 0.5 x budget (100,000 at 200k)" in show_text("clear_tool_uses")


@pytest.mark.parametrize("name,config,key,value,acting", [
    ("clear_tool_uses", {"trigger": 40_000}, "trigger", "40,000", "16,000 (0.5 x budget, its default)"),
    ("compaction_ladder", {"target_tokens": 32_000}, "target_tokens", "32,000", "32,000 (1 x budget"),
    ("llm_summarizing", {"max_tokens": 50_000}, "max_tokens", "50,000", "31,999 would act"),
    ("inspect.compaction_trim", {"threshold": 64_000}, "threshold", "64,000", "31,999 would act"),
])
def test_a_threshold_at_or_above_the_window_is_warned_of_naming_the_key_and_a_value_that_acts(
        name, config, key, value, acting):
    if name.startswith("inspect."):
        pytest.importorskip("inspect_ai")
    lines = build_strategy(StrategySpec(name=name, config=config)).threshold_warnings(32_000, name)
    assert len(lines) == 1 and f"{key} {value} is at or above the 32,000-token input budget" in lines[0]
    assert acting in lines[0]


def test_a_threshold_below_the_window_and_the_defaults_are_not_warned_of():
    assert build_strategy(StrategySpec(name="clear_tool_uses", config={"trigger": 20_000})).threshold_warnings(
        32_000, "c") == []
    assert CompactionLadder.from_config({}).threshold_warnings(32_000, "c") == []


def test_the_warning_is_on_stderr_once_before_the_run_and_in_config_json(tmp_path, capsys):
    out = tmp_path / "out"
    code = cli_main(["run", "--suite", "default", "--family", "chained_lookup", "--limit", "1", "--no-progress",
                     "--window", "32000", "--strategies", "clear_tool_uses,observation_masking",
                     "--strategy-config", json.dumps({"clear_tool_uses": {"trigger": 40_000}}), "--out", str(out)])
    assert code == 0
    err = capsys.readouterr().err
    assert err.count("warning: strategy clear_tool_uses: trigger 40,000 is at or above") == 1
    config = json.loads((out / "config.json").read_text())
    [entry] = config["strategy_thresholds"]["clear_tool_uses"]
    assert entry["budget"] == 32_000 and entry["values"] == {"trigger": 40_000} and len(entry["warnings"]) == 1
    assert config["strategy_thresholds"]["observation_masking"] == [{"budget": 32_000, "values": {},
                                                                     "warnings": []}]


def test_rows_record_the_effective_thresholds_at_the_runs_window(tmp_path):
    out = api.run("default", strategies=["compaction_ladder"], families=["chained_lookup"], limit=1,
                  profiles=api.mock_profiles(window=32_000), out=tmp_path / "out")
    row = json.loads((out / "runs.jsonl").read_text().splitlines()[0])
    assert row["strategy_thresholds"] == {"turn_boundary_target": 16_000, "target_tokens": 32_000,
                                          "clear_tool_max_tokens": 800, "min_clear_tokens": 1_600}
    assert row["strategy_config"] == {}


def _rows(out) -> dict[str, dict]:
    return {row["run_id"]: row for row in map(json.loads, (out / "runs.jsonl").read_text().splitlines())}


def _same_rows_as_the_old_absolute_values(tmp_path, limit: int | None) -> None:
    """Every row at 200k with the scaled defaults equals, field by field (timings and the config aside), the
    row with the values they replaced given explicitly: at 200k nothing a run measures moved."""
    names = list(ABSOLUTE_AT_200K)
    scaled = _rows(api.run("default", strategies=names, limit=limit, out=tmp_path / "scaled"))
    absolute = _rows(api.run("default", strategies=names, strategy_configs=ABSOLUTE_AT_200K, limit=limit,
                             out=tmp_path / "absolute"))
    assert scaled.keys() == absolute.keys() and scaled
    for run_id, row in scaled.items():
        for field, value in row.items():
            if field not in TIMING | {"strategy_config"}:
                assert absolute[run_id][field] == value, (run_id, field)


def test_at_200k_a_few_tasks_run_exactly_as_with_the_old_absolute_values(tmp_path):
    _same_rows_as_the_old_absolute_values(tmp_path, FEW_TASKS)


@pytest.mark.slow
def test_at_200k_the_default_suite_runs_exactly_as_with_the_old_absolute_values(tmp_path):
    _same_rows_as_the_old_absolute_values(tmp_path, None)
