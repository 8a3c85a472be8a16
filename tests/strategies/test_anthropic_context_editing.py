"""anthropic.context_editing: the request asks Anthropic's API to clear old tool results (the
`clear_tool_uses_20250919` edit); the rules are Anthropic's context-editing docs ("Configuration options for tool
result clearing": trigger 100,000 input tokens or a number of tool uses, keep 3, clear_at_least none, exclude_tools,
clear_tool_inputs false) and the anthropic SDK 2.17's beta_clear_tool_uses_20250919_edit_param.py."""
from __future__ import annotations

import json

import pytest

from harness.conversation.events import event_logs, read_events
from harness.cli import main
from harness.conversation.replay import replay_file
from harness.core.errors import ConfigError
from harness.models.llm import LLMProfile
from strategies import StrategySpec, build_strategy, comparison_strategies
from strategies.anthropic_context_editing import AnthropicContextEditing
from strategies.catalog import list_text
from cli_helpers import exit_code

NAME = "anthropic.context_editing"
EDIT = "clear_tool_uses_20250919"


def strategy(**config) -> AnthropicContextEditing:
    return build_strategy(StrategySpec(NAME, config))


def test_default_trigger_is_anthropics_100000_at_a_200k_window_and_scales_with_it():
    assert strategy().threshold_values(200_000) == {"trigger": 100_000}
    assert strategy().threshold_values(32_000) == {"trigger": 16_000}
    assert strategy(trigger_tool_uses=20).threshold_values(32_000) == {}  # a tool-uses trigger scales with nothing


def test_every_request_carries_the_edit_with_anthropics_defaults():
    assert strategy().request_options(None) == {"context_management": {"edits": [{
        "type": EDIT, "trigger": {"type": "input_tokens", "value": 100_000}, "keep": {"type": "tool_uses", "value": 3}}]}}


def test_every_option_goes_into_the_edit_in_the_apis_shape():
    chosen = strategy(trigger_tool_uses=12, keep=5, clear_at_least=5_000, exclude_tools=["note"],
                      clear_tool_inputs=True)
    assert chosen.request_options(None)["context_management"]["edits"] == [{
        "type": EDIT, "trigger": {"type": "tool_uses", "value": 12}, "keep": {"type": "tool_uses", "value": 5},
        "clear_at_least": {"type": "input_tokens", "value": 5_000}, "exclude_tools": ["note"],
        "clear_tool_inputs": True}]


@pytest.mark.parametrize("config, message", [
    ({"trigger": 0}, "trigger must be a positive number of input tokens"),
    ({"trigger": 50_000, "trigger_tool_uses": 10}, "trigger and trigger_tool_uses: give one"),
    ({"trigger_tool_uses": -1}, "trigger_tool_uses must be 0 or more"),
    ({"keep": -1}, "keep must be 0 or more"),
    ({"clear_at_least": -5}, "clear_at_least must be 0 or more"),
    ({"exclude_tools": [""]}, "exclude_tools"),
    ({"clear_tool_inputs": "yes"}, "clear_tool_inputs"),
    ({"placeholder": "x"}, "placeholder"),
])
def test_bad_settings_are_refused_naming_the_option(config, message):
    """ours: what the API would answer with a 400 is refused before any model call."""
    with pytest.raises(ConfigError, match=message):
        strategy(**config)


def test_a_bad_setting_exits_2_naming_the_option(tmp_path, capsys):
    code = exit_code(["run", "--suite", "smoke", "--strategies", NAME, "--no-progress", "--out", str(tmp_path / "r"),
                      "--strategy-config", json.dumps({NAME: {"keep": -1}})])
    err = capsys.readouterr().err
    assert code == 2 and "keep must be 0 or more" in err and "Traceback" not in err


@pytest.mark.parametrize("model, api_base", [("mock/agent", None), ("anthropic/claude-sonnet-4-6", None),
                                             ("anthropic/claude-sonnet-4-6", "http://127.0.0.1:1")])
def test_anthropics_api_or_the_mock_runs_it(model, api_base):
    strategy().check_main(LLMProfile(model=model, api_base=api_base), "here")


@pytest.mark.parametrize("model, api_base", [("openai/gpt-5", None), ("openai/mock-agent", "http://127.0.0.1:1/v1")])
def test_another_providers_model_is_refused_naming_the_alternatives(model, api_base):
    """litellm sends `context_management` to Anthropic's API alone; its polyfill and the native edit in the view are
    the ways to the same edit elsewhere."""
    with pytest.raises(ConfigError, match="litellm.context_management.*clear_tool_uses"):
        strategy().check_main(LLMProfile(model=model, api_base=api_base), "here")


def test_it_is_listed_with_its_source_and_named_explicitly_not_run_by_all():
    listing = list_text()
    assert NAME in listing and "Anthropic context-editing docs (clear_tool_uses_20250919" in listing
    assert NAME not in comparison_strategies()


def rows(path) -> list[dict]:
    return [json.loads(line) for line in (path / "runs.jsonl").read_text().splitlines()]


def events(path) -> list[dict]:
    return read_events(event_logs(path / "events")[0])


def test_past_the_trigger_the_provider_clears_and_the_run_logs_it_without_editing_the_view(tmp_path):
    """At a 32k window the trigger is 16,000: work_queue-3 passes it, the API clears old results (the view, what the
    client sends, stays whole), each clearing a `compaction` event by the provider; the log replays."""
    out = tmp_path / "run"
    assert main(["run", "--suite", "default", "--task-ids", "work_queue-3", "--strategies", NAME,
                 "--window", "32000", "--no-progress", "--out", str(out)]) == 0
    [row] = rows(out)
    assert row["termination"] != "error" and row["compactions_by_step"]["clear_tool_uses"] >= 1
    log = events(out)
    cleared = [event for event in log if event["type"] == "compaction"]
    assert all(event["by"] == "provider" and "view_ops" not in event and event["reclaimed_tokens"] > 0
               for event in cleared)
    calls = {event["id"]: event for event in log if event["type"] == "llm_call"}
    assert all(calls[event["request_id"]]["options"]["context_management"]["edits"][0]["trigger"]["value"] == 16_000
               for event in cleared)
    assert replay_file(event_logs(out / "events")[0]).ok


def test_clearing_everything_it_can_makes_the_agent_fail(tmp_path):
    """Context-faithful: with no trigger and nothing kept, the API clears every result but the latest; the agent,
    seeing only placeholders, cannot finish the chain."""
    out = tmp_path / "run"
    assert main(["run", "--suite", "default", "--task-ids", "chained_lookup-3", "--strategies", NAME,
                 "--strategy-config", json.dumps({NAME: {"trigger_tool_uses": 0, "keep": 0}}),
                 "--no-progress", "--out", str(out)]) == 0
    [row] = rows(out)
    assert not row["success"] and row["compactions"] >= 1


def test_a_replayed_trace_counts_what_the_provider_cleared(tmp_path):
    """In a trace replay the view stays whole (the client sends it all) but the model sees placeholders where the
    provider cleared: references only the cleared results held are forgotten."""
    recorded = tmp_path / "recorded"
    assert main(["run", "--suite", "default", "--task-ids", "chained_lookup-3", "--strategies", "none",
                 "--no-progress", "--out", str(recorded)]) == 0
    trace = event_logs(recorded / "events")[0]
    out = tmp_path / "replayed"
    assert main(["traces", str(trace), "--strategies", f"{NAME},none", "--no-progress", "--out", str(out),
                 "--strategy-config", json.dumps({NAME: {"trigger_tool_uses": 0, "keep": 0}})]) == 0
    by_strategy = {row["strategy"]: row for row in rows(out)}
    assert by_strategy["none"]["forgotten_references"] == 0
    assert by_strategy[NAME]["forgotten_references"] > 0 and by_strategy[NAME]["compactions"] >= 1


def test_the_cache_a_provider_edit_cost_is_counted_on_the_request_it_edited():
    """Docs: clearing invalidates the cached prefix of the request it edits. `compaction_cache_read_lost_tokens`
    counts, for a provider's edit (logged after its response), what that request did not read back of the one before;
    a client's edit still counts the request after it."""
    from harness.results.metrics import RunMetrics

    def call(index, input_tokens, cached):
        return {"id": index, "type": "llm_call", "profile": "main", "ok": True,
                "usage": {"input_tokens": input_tokens, "cached_tokens": cached, "output_tokens": 1}}

    metrics = RunMetrics()
    for event in (call(0, 10_000, 0), call(1, 6_000, 1_000),
                  {"id": 2, "type": "compaction", "step": "clear_tool_uses", "by": "provider", "reclaimed_tokens": 5_000},
                  call(3, 7_000, 6_000)):
        metrics.add(event)
    assert metrics.cache_read_lost == 9_000
