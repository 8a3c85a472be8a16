"""openai.compaction (server-side, Responses `context_management`) and openai.compact (the client calls
`/responses/compact`): their rules and sources, their thresholds against the window, the main models they refuse,
and both at work with the in-process mock."""
from __future__ import annotations

import pytest
from conftest import write_suite_file
from transcripts import exchange, make_ctx, user, words

from harness import api
from harness.core.errors import ConfigError
from harness.models.llm import LLMProfile, LLMResult
from harness.models.provider_compaction import ITEMS, compaction_items
from harness.models.usage import Usage
from harness.results.layout import read_runs
from strategies import StrategySpec, build_strategy, comparison_strategies
from strategies.openai_compact import OpenAICompact, _without_oldest
from strategies.openai_compaction import OpenAICompaction

STRATEGIES = (OpenAICompaction, OpenAICompact)


@pytest.mark.parametrize("cls", STRATEGIES)
def test_a_main_model_not_served_by_openais_api_is_refused_before_any_call(cls):
    """Only the provider that made a compaction item can read it (OpenAI's compaction guide)."""
    strategy = cls()
    for model, api_base in (("mock/agent", None), ("openai/gpt-5.6", None), ("openai/gpt-5.6", "http://127.0.0.1:9/v1"),
                            ("openai/mock-agent", "http://127.0.0.1:9/v1")):
        strategy.check_main(LLMProfile(model=model, api_base=api_base), "strategy x")
    with pytest.raises(ConfigError, match=r"strategy x: .* OpenAI's own compaction .* anthropic/claude-sonnet-4-6 .* "
                                          r"use an openai/\.\.\. model"):
        strategy.check_main(LLMProfile(model="anthropic/claude-sonnet-4-6"), "strategy x")


@pytest.mark.parametrize("cls", STRATEGIES)
def test_the_threshold_is_ours_scaled_to_the_window_and_never_below_openais_minimum(cls):
    """OpenAI documents no default threshold: ours is 0.75 x the input budget (150,000 at 200k, Anthropic's default
    trigger); the API's minimum is 1,000 (litellm types/llms/openai.py:1362): a scaled value below it is raised to it,
    an explicit one refused."""
    assert cls().threshold_values(200_000) == {"compact_threshold": 150_000}
    assert cls().threshold_values(32_000) == {"compact_threshold": 24_000}
    assert cls().threshold_values(1_200) == {"compact_threshold": 1_000}
    assert cls.from_config({"compact_threshold": 5_000}).threshold_values(200_000) == {"compact_threshold": 5_000}
    with pytest.raises(ConfigError, match="compact_threshold must be at least 1,000"):
        build_strategy(StrategySpec(cls.name, {"compact_threshold": 999}))


@pytest.mark.parametrize("cls", STRATEGIES)
def test_a_window_too_small_for_the_threshold_is_said_before_the_run(cls):
    assert cls().threshold_warnings(200_000, "strategy x") == []
    (warning,) = cls().threshold_warnings(1_000, "strategy x")
    assert "never acts in this run" in warning and "1,000" in warning
    assert cls.from_config({"compact_threshold": 300_000}).threshold_warnings(200_000, "strategy x")


def test_both_are_left_out_of_strategies_all():
    assert not {"openai.compaction", "openai.compact"} & set(comparison_strategies())


def test_server_side_compaction_is_asked_for_in_every_request():
    """response_create_params.py:64,398-403: `context_management: [{"type": "compaction", "compact_threshold"}]`."""
    ctx = make_ctx(window=200_000)
    strategy = OpenAICompaction()
    strategy.on_run_start(ctx)
    assert strategy.request_options(ctx) == {"context_management": [{"type": "compaction",
                                                                       "compact_threshold": 150_000}]}


def test_a_reply_with_a_compaction_item_is_logged_and_kept_in_the_view():
    """The client appends the output, item included; the view never shrinks (the provider drops what precedes)."""
    ctx = make_ctx()
    user(ctx, "task")
    strategy = OpenAICompaction()
    strategy.on_run_start(ctx)
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "x"}
    result = LLMResult(message={"role": "assistant", "content": "ok", "provider_specific_fields": {ITEMS: [item]}},
                       usage=Usage(input_tokens=10), cost_usd=None, cost_usd_uncached=None, latency_s=0.0)
    ctx.record_response({"profile": "main"}, result)
    strategy.after_response(ctx, result)
    (event,) = [e for e in ctx.log.events if e["type"] == "condensation"]
    assert event["by"] == "provider" and event["item_ids"] == ["cmp_1"] and "view_ops" not in event
    assert compaction_items(ctx.view.to_messages()[-1]) == [item]


def test_compact_sends_every_request_through_the_responses_api_without_truncation():
    ctx = make_ctx()
    assert OpenAICompact().request_options(ctx) == {"truncation": "disabled"}


def compacting_ctx(window=200_000):
    ctx = make_ctx(window=window)
    user(ctx, "Find the value behind key A. " * 20)
    for index in range(4):
        exchange(ctx, "read", {"key": f"K{index}"}, words(2_000, f"r{index}"))
    user(ctx, "Also report B.")
    return ctx


def test_compact_makes_the_view_the_instructions_and_the_window_past_its_threshold():
    """compacted_response.py:28-31: the window is all user messages, then one compaction item; the instructions
    (the system prompt) are the client's own. The call is a side call, logged under `main/compact`."""
    ctx = compacting_ctx()
    strategy = OpenAICompact.from_config({"compact_threshold": 1_000})
    strategy.on_run_start(ctx)
    strategy.before_request(ctx)
    assert not list(ctx.log.of_type("condensation"))  # nothing reported yet: no request has succeeded
    ctx.last_usage, ctx.requests = Usage(input_tokens=9_000), 1
    users = [i for i in ctx.view.ids if ctx.view.message(i)["role"] == "user"]
    system = ctx.view.ids[0]
    strategy.before_request(ctx)
    assert ctx.view.ids[:3] == [system, *users]  # the logged messages, their identity kept
    messages = ctx.view.to_messages()
    assert len(messages) == 4 and compaction_items(messages[3]) and not messages[3]["content"]
    (call,) = [e for e in ctx.log.events if e["type"] == "llm_call"]
    assert call["profile"] == "main/compact" and call["ok"]
    (event,) = [e for e in ctx.log.events if e["type"] == "condensation"]
    assert event["endpoint"] == "/responses/compact" and event["reported_input_tokens"] == 9_000
    strategy.before_request(ctx)  # the same request again (a retry): no second compaction
    assert len(list(ctx.log.of_type("condensation"))) == 1


def test_a_context_too_large_for_the_compaction_pass_is_trimmed_from_its_oldest_item():
    """As Codex does with its own compaction (codex-rs core/src/codex/compact.rs): on a context-window error the
    oldest history item goes and the pass is sent again; instructions and user messages stay (ours)."""
    ctx = compacting_ctx(window=6_000)
    strategy = OpenAICompact.from_config({"compact_threshold": 1_000})
    strategy.on_run_start(ctx)
    ctx.last_usage, ctx.requests = Usage(input_tokens=5_000), 1
    strategy.before_request(ctx)
    calls = [e for e in ctx.log.events if e["type"] == "llm_call"]
    assert [call["ok"] for call in calls] == [False] * (len(calls) - 1) + [True] and len(calls) > 1
    (event,) = [e for e in ctx.log.events if e["type"] == "condensation"]
    assert event["trimmed_items"] == len(calls) - 1


def test_trimming_takes_a_call_with_its_results_and_never_instructions_or_user_messages():
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}, {"id": "c2"}]}
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, call,
                {"role": "tool", "tool_call_id": "c1", "content": "1"}, {"role": "tool", "tool_call_id": "c2",
                                                                        "content": "2"},
                {"role": "assistant", "content": "done"}]
    assert _without_oldest(messages) == [messages[0], messages[1], messages[5]]
    assert _without_oldest(messages[:2]) is None


@pytest.mark.parametrize("name", ["openai.compaction", "openai.compact"])
def test_each_compacts_on_a_default_task_past_its_threshold_with_the_in_process_mock(tmp_path, name):
    """A default task whose context passes 150,000 tokens at the mock's 200k window: the run ends submitted, after
    one compaction (the provider's, or the client's through /responses/compact, a side call)."""
    out = tmp_path / name
    api.run(write_suite_file(tmp_path, task_ids=["work_queue-2"]), strategies=[name], profiles=api.mock_profiles(),
            out=out, workers=1)
    (row,) = read_runs(out)
    assert row["termination"] == "submitted" and row["summaries"] == 1
    assert row["summarizer_requests"] == (1 if name == "openai.compact" else 0)
    assert row["strategy_thresholds"] == {"compact_threshold": 150_000}
