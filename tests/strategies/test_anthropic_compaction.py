"""anthropic.compaction: the request asks Anthropic's API to compact (the `compact_20260112` edit); the rules are
Anthropic's compaction docs and the anthropic SDK's beta_compact_20260112_edit_param.py (trigger 150,000 by default,
at least 50,000)."""
from __future__ import annotations

import json

import pytest

from harness.conversation.events import event_logs, read_events
from harness.cli import main
from harness.core.errors import ConfigError
from harness.models.llm import LLMProfile
from strategies import build_strategy, comparison_strategies, StrategySpec
from strategies.anthropic_compaction import AnthropicCompaction

NAME = "anthropic.compaction"


def strategy(**config) -> AnthropicCompaction:
    return build_strategy(StrategySpec(NAME, config))


def test_default_trigger_is_anthropics_150000_at_a_200k_window_and_scales_with_it():
    assert strategy().threshold_values(200_000) == {"trigger": 150_000}
    assert strategy().threshold_values(100_000) == {"trigger": 75_000}


def test_a_scaled_trigger_never_falls_below_the_apis_minimum():
    """Anthropic refuses a trigger under 50,000 input tokens: at a 60k window the scaled 45,000 becomes 50,000."""
    assert strategy().threshold_values(60_000) == {"trigger": 50_000}


def test_an_explicit_trigger_below_the_minimum_is_refused_before_the_run():
    with pytest.raises(ConfigError, match="at least 50,000 input tokens"):
        strategy(trigger=40_000)


def test_a_window_too_small_for_any_compaction_is_said_before_the_run():
    assert "trigger cannot be under the provider's minimum, 50,000 tokens" in strategy().threshold_warnings(32_000, NAME)[0]
    assert strategy().threshold_warnings(200_000, NAME) == []


def test_every_request_carries_the_edit_with_its_parameters():
    chosen = strategy(trigger=60_000, instructions="Keep every record code.", pause_after_compaction=True)
    chosen.limits = chosen.config
    assert chosen.request_options(None) == {"context_management": {"edits": [{
        "type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 60_000},
        "instructions": "Keep every record code.", "pause_after_compaction": True}]}}


@pytest.mark.parametrize("model, api_base", [("mock/agent", None), ("anthropic/claude-sonnet-4-6", None),
                                             ("anthropic/claude-sonnet-4-6", "http://127.0.0.1:1")])
def test_anthropics_api_or_the_mock_runs_it(model, api_base):
    strategy().check_main(LLMProfile(model=model, api_base=api_base), "here")


@pytest.mark.parametrize("model, api_base", [("openai/gpt-5", None), ("openai/mock-agent", "http://127.0.0.1:1/v1")])
def test_another_providers_model_is_refused_naming_the_alternative(model, api_base):
    with pytest.raises(ConfigError, match="litellm.context_management"):
        strategy().check_main(LLMProfile(model=model, api_base=api_base), "here")


def test_it_is_named_explicitly_not_run_by_all():
    assert NAME not in comparison_strategies()


def rows(path) -> list[dict]:
    return [json.loads(line) for line in (path / "runs.jsonl").read_text().splitlines()]


def test_the_provider_compacts_and_the_run_goes_on_from_the_summary(tmp_path):
    """At a 60k window the trigger is 50,000: chained_lookup-3 passes it, the API compacts once, and the agent
    finishes the chain from what the summary kept."""
    out = tmp_path / "run"
    assert main(["run", "--suite", "default", "--task-ids", "chained_lookup-3", "--strategies", NAME,
                 "--window", "60000", "--no-progress", "--out", str(out)]) == 0
    [row] = rows(out)
    assert row["success"] and row["summaries"] >= 1 and row["termination"] == "submitted"
    events = read_events(event_logs(out / "events")[0])
    compacting = [event for event in events if event["type"] == "llm_call" and event["usage"]["input_tokens"] > 50_000]
    assert compacting and all(event["options"]["context_management"]["edits"][0]["trigger"]["value"] == 50_000
                              for event in compacting)


def test_a_summary_that_keeps_nothing_makes_the_agent_fail(tmp_path):
    """Context-faithful: after a compaction the agent knows only what the summary kept (here, as the same model
    writes it, the agent's notes_completeness 0: no fact); the chain cannot be finished."""
    out = tmp_path / "run"
    assert main(["run", "--suite", "default", "--task-ids", "chained_lookup-3", "--strategies", NAME,
                 "--window", "60000", "--mock-knobs", '{"notes_completeness": 0}', "--no-progress",
                 "--out", str(out)]) == 0
    [row] = rows(out)
    assert not row["success"] and row["summaries"] >= 1


def test_a_replayed_trace_counts_what_the_provider_compacted_away(tmp_path):
    """In a trace replay the view stays whole (the client sends it all) but the model sees the request from the
    latest compaction block on: references only the dropped messages held are forgotten."""
    recorded = tmp_path / "recorded"
    assert main(["run", "--suite", "default", "--task-ids", "work_queue-3", "--strategies", "none",
                 "--no-progress", "--out", str(recorded)]) == 0
    trace = event_logs(recorded / "events")[0]
    out = tmp_path / "replayed"
    assert main(["traces", str(trace), "--strategies", NAME, "--window", "60000", "--no-progress",
                 "--out", str(out)]) == 0
    [row] = rows(out)
    assert row["summaries"] >= 1 and row["forgotten_references"] > 0
