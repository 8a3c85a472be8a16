"""observation_masking (JetBrains) and clear_tool_uses (Anthropic context editing), from REFERENCES.md."""
from __future__ import annotations

import json

import pytest
from transcripts import exchange, make_ctx, pairing_intact, replays, user, words

from harness import api
from harness.core.errors import ConfigError
from harness.models.usage import Usage
from harness.conversation.replay import replay_file
from strategies import StrategySpec, build_strategy
from strategies.clear_tool_uses import ClearToolUses
from strategies.observation_masking import ObservationMasking


def history(results: int, tokens: int = 300, names: tuple[str, ...] = ("search",)):
    ctx = make_ctx()
    user(ctx, "task")
    ids = [exchange(ctx, names[i % len(names)], {"text": f"q{i}"}, words(tokens, f"r{i}")) for i in range(results)]
    return ctx, ids


def edits(ctx) -> list[dict]:
    return [e for e in ctx.log.events if e["type"] == "compaction"]


def placeholder_ok(content: str) -> bool:
    """Contract: starts with '[', says cleared or masked, and how to recover."""
    return content.startswith("[") and ("cleared" in content or "masked" in content) and "again" in content


# ----- observation masking


def test_masking_keeps_the_last_10_tool_results_and_masks_older_ones():
    """JetBrains 'The Complexity Trap': keep the last N=10 tool outputs; older ones become a placeholder."""
    ctx, pairs = history(14)
    strategy = ObservationMasking()
    strategy.before_request(ctx)
    results = [result for _, result in pairs]
    assert [ctx.view.is_replaced(i) for i in results] == [True] * 4 + [False] * 10
    assert all(placeholder_ok(ctx.view.message(i)["content"]) and "masked" in ctx.view.message(i)["content"]
               for i in results[:4])
    assert all(not ctx.view.is_replaced(call) for call, _ in pairs), "calls stay as they were"
    [event] = edits(ctx)
    assert event["step"] == "mask" and event["reclaimed_tokens"] > 0
    strategy.before_request(ctx)
    assert len(edits(ctx)) == 1, "nothing new to mask: no edit"
    assert pairing_intact(ctx) and replays(ctx)


def test_masking_keep_last_is_configurable_and_validated():
    ctx, pairs = history(5)
    build_strategy(StrategySpec("observation_masking", {"keep_last": 2})).before_request(ctx)
    assert sum(ctx.view.is_replaced(result) for _, result in pairs) == 3
    with pytest.raises(ConfigError, match="keep_last must be 0 or more"):
        build_strategy(StrategySpec("observation_masking", {"keep_last": -1}))


# ----- clear_tool_uses


def test_clear_tool_uses_defaults_are_anthropics():
    """Anthropic clear_tool_uses_20250919: trigger 100,000 input tokens (at a 200k window), keep 3, inputs
    not cleared."""
    config = ClearToolUses().limits
    assert (config.trigger, config.keep, config.clear_at_least, config.exclude_tools, config.clear_tool_inputs) == (
        100_000, 3, 0, [], False)


def test_trigger_uses_the_providers_last_reported_input_tokens():
    """The trigger reads the provider's input tokens of the last request, not the estimate."""
    ctx, pairs = history(6)
    strategy = ClearToolUses.from_config({"trigger": 1_000})
    ctx.last_usage = Usage(input_tokens=900)
    strategy.before_request(ctx)
    assert not edits(ctx), "reported 900 <= trigger although the estimate is larger"
    ctx.last_usage = Usage(input_tokens=1_001)
    strategy.before_request(ctx)
    assert edits(ctx)[0]["measured_input_tokens"] == 1_001


def test_trigger_falls_back_to_the_estimate_before_the_first_response():
    ctx, _ = history(6)
    ClearToolUses.from_config({"trigger": 1_000}).before_request(ctx)
    assert edits(ctx)[0]["measured_input_tokens"] == ctx.log.events[-1]["tokens_before"]


def test_clears_oldest_first_and_keeps_the_last_3_tool_uses():
    """keep: 'Number of tool uses to retain'; oldest results are cleared first."""
    ctx, pairs = history(7)
    ClearToolUses.from_config({"trigger": 1_000}).before_request(ctx)
    results = [result for _, result in pairs]
    assert [ctx.view.is_replaced(i) for i in results] == [True] * 4 + [False] * 3
    assert all(placeholder_ok(ctx.view.message(i)["content"]) for i in results[:4])
    assert edits(ctx)[0]["step"] == "clear_tool_uses"
    assert pairing_intact(ctx) and replays(ctx)


def test_exclude_tools_are_never_cleared():
    ctx, pairs = history(8, names=("search", "read_file"))
    ClearToolUses.from_config({"trigger": 1_000, "keep": 0, "exclude_tools": ["read_file"]}).before_request(ctx)
    for index, (_, result) in enumerate(pairs):
        assert ctx.view.is_replaced(result) == (index % 2 == 0)


def test_clear_at_least_blocks_an_edit_that_cannot_reclaim_enough():
    """clear_at_least: if that many tokens cannot be cleared, the edit is not applied."""
    ctx, pairs = history(5, tokens=200)
    ClearToolUses.from_config({"trigger": 500, "clear_at_least": 100_000}).before_request(ctx)
    assert not edits(ctx) and not any(ctx.view.is_replaced(r) for _, r in pairs)


def test_clear_at_least_stops_once_reached():
    ctx, pairs = history(8, tokens=300)
    ClearToolUses.from_config({"trigger": 500, "keep": 0, "clear_at_least": 500}).before_request(ctx)
    cleared = [ctx.view.is_replaced(r) for _, r in pairs]
    assert cleared == [True, True] + [False] * 6
    assert edits(ctx)[0]["reclaimed_tokens"] >= 500


def test_clear_tool_inputs_blanks_the_cleared_calls_arguments():
    ctx, pairs = history(5)
    ClearToolUses.from_config({"trigger": 500, "keep": 3, "clear_tool_inputs": True}).before_request(ctx)
    for index, (call, _) in enumerate(pairs):
        arguments = ctx.view.message(call)["tool_calls"][0]["function"]["arguments"]
        assert (arguments == "{}") == (index < 2)
    assert pairing_intact(ctx) and replays(ctx)


@pytest.mark.parametrize("config, message", [
    ({"trigger": 0}, "trigger must be a positive"),
    ({"keep": -1}, "keep must be 0 or more"),
    ({"clear_at_least": -3}, "clear_at_least must be 0 or more"),
    ({"exclude_tools": "read_file"}, "expected a list"),
    ({"clear_inputs": True}, "unknown key(s) 'clear_inputs'"),
])
def test_clear_tool_uses_bad_config_is_refused(config, message):
    with pytest.raises(ConfigError) as error:
        build_strategy(StrategySpec("clear_tool_uses", config))
    assert message in str(error.value)


# ----- the mock agent pays for forgetting by re-reading


def test_agent_rereads_what_was_masked_or_cleared_and_rereads_are_counted(tmp_path):
    """Mock agent: on a placeholder where it needs the content it re-reads it (counted in `rereads`)."""
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps({"task_id": "t-0", "family": "chained_lookup", "seed": 100,
                                 "params": {"hops": 6, "files": 4, "distractors": 20, "filler_lines": 20}}) + "\n")
    specs = [StrategySpec("none"), StrategySpec("observation_masking", {"keep_last": 1}),
             StrategySpec("clear_tool_uses", {"trigger": 3_000, "keep": 1})]
    out = api.run(str(suite), strategies=specs, profiles=api.mock_profiles(knobs={"narrate": 0.0}),
                  out=tmp_path / "o")
    rows = {r["strategy"]: r for r in map(json.loads, (out / "runs.jsonl").read_text().splitlines())}
    assert rows["none"]["rereads"] == 0
    for name in ("observation_masking", "clear_tool_uses"):
        assert rows[name]["compactions"] >= 1 and rows[name]["rereads"] >= 1, rows[name]
    assert all(replay_file(path).ok for path in (out / "events").glob("*.jsonl.gz"))


def test_masking_checks_again_every_older_result_after_an_edit_it_did_not_make():
    """Masking skips the older results it already masked only while nothing else edited the view:
    a result another strategy put back is masked again."""
    ctx, pairs = history(14)
    strategy = ObservationMasking()
    strategy.before_request(ctx)
    first = pairs[0][1]
    original = ctx.view.messages[first]
    ctx.emit("compaction", step="restore", view_ops=[{"op": "replace", "id": first, "message": original}])
    assert not ctx.view.is_replaced(first) or "masked" not in ctx.view.message(first)["content"]
    strategy.before_request(ctx)
    assert "masked" in ctx.view.message(first)["content"]
    assert edits(ctx)[-1]["message_ids"] == [first] and replays(ctx)
