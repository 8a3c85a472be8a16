"""anthropic_sdk.compaction (strategies/adapters/anthropic_sdk.py) against the anthropic SDK itself.

Sources: anthropic SDK 2.17 lib/tools/_beta_runner.py: `compact_before_next_turn` (schedules a compaction once the
current turn is done; default config `{"type": "summarize"}`; needs the `compact-2026-09-04` beta), the loop's
compaction step `_compact` (`_take_compaction_thread`: the whole history and the thread's fields plus `compaction`,
minus `_without_compaction_incompatible_params`; `_register_compaction_response`: the history becomes the response);
types/beta/beta_compaction_config_param.py. The threshold is ours (0.75 of the input budget: Anthropic's server-side
default trigger, 150,000, at 200k).
"""
from __future__ import annotations

import sys

import pytest

from harness.conversation.replay import replay_file
from harness.core.errors import ConfigError
from harness.models.llm import LLMProfile
from harness.models.provider_compaction import ANTHROPIC_SUMMARIZE_BETA, blocks_alone, compaction_blocks
from harness.models.serve_mock.anthropic_wire import read_messages
from strategies import StrategySpec, build_strategy
from strategies.adapters import ANTHROPIC_SDK, provider_wire
from strategies.adapters.anthropic_sdk import _as_sent
from tests import adapter_helpers
from tests.adapter_helpers import record_wire_requests, requires, rows_in_process_and_over_route

pytestmark = requires(ANTHROPIC_SDK)
NAME = "anthropic_sdk.compaction"


def strategy(**config):
    return build_strategy(StrategySpec(NAME, config))


def long_context(turns: int = 12):
    """A run context past 10,000 tokens (tool results of ~800 tokens each)."""
    return adapter_helpers.long_context(turns, 800)


@pytest.fixture
def sent(monkeypatch):
    return record_wire_requests(monkeypatch)


def test_the_threshold_is_ours_a_fraction_of_the_window():
    assert strategy().threshold_values(200_000) == {"threshold": 150_000}
    assert strategy().threshold_values(64_000) == {"threshold": 48_000}
    assert strategy(threshold=30_000).threshold_values(200_000) == {"threshold": 30_000}
    with pytest.raises(ConfigError, match="threshold must be a positive"):
        strategy(threshold=0)


def test_a_main_model_not_on_anthropics_api_is_refused():
    strategy().check_main(LLMProfile(model="mock/agent"), "here")
    strategy().check_main(LLMProfile(model="anthropic/claude-sonnet-4-6"), "here")
    with pytest.raises(ConfigError, match="read only by Anthropic's API"):
        strategy().check_main(LLMProfile(model="openai/gpt-5"), "here")


def test_without_the_sdk_the_strategy_names_the_extra(monkeypatch):
    import strategies.adapters as adapters

    monkeypatch.setattr(adapters, "installed_version", lambda distribution: None)
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[anthropic\]'"):
        strategy()


def test_below_the_threshold_nothing_is_sent(sent):
    ctx = long_context(2)
    chosen = strategy(threshold=50_000)
    chosen.on_run_start(ctx)
    chosen.before_request(ctx)
    assert sent == [] and chosen.request_options(ctx) == {}


def test_past_the_threshold_the_sdks_request_is_sent_and_its_block_becomes_the_view(sent):
    """The compaction request is the SDK's: the beta, the whole history, `compaction` and no thread; the view
    becomes the system prompt and the compaction message; a side call of the summary profile; later requests name
    the beta."""
    ctx = long_context()
    chosen = strategy(threshold=5_000, instructions="Keep every code.")
    chosen.on_run_start(ctx)
    before = ctx.view.to_messages()
    chosen.before_request(ctx)
    [request] = sent
    assert request["path"] == "/v1/messages" and ANTHROPIC_SUMMARIZE_BETA in request["beta"]
    body = request["body"]
    assert body["compaction"] == {"type": "summarize", "instructions": "Keep every code."}
    assert "thread" not in body and "context_management" not in body
    assert len(body["messages"]) == len(before) - 1 and body["system"][0]["text"] == before[0]["content"]
    view = ctx.view.to_messages()
    assert view[0] == before[0] and len(view) == 2 and compaction_blocks(view[1])[0]["signature"]
    calls = [e for e in ctx.log.events if e["type"] == "llm_call"]
    assert [(c["profile"], c["purpose"], c["ok"]) for c in calls] == [("summary", "compaction", True)]
    assert calls[0]["usage"]["input_tokens"] > 5_000 and calls[0]["cost_usd"] > 0
    condensation = next(e for e in ctx.log.events if e["type"] == "condensation")
    assert condensation["kind"] == "summary" and condensation["summary_id"] == ctx.view.ids[1]
    assert chosen.request_options(ctx) == {"extra_headers": {"anthropic-beta": ANTHROPIC_SUMMARIZE_BETA}}
    chosen.before_request(ctx)  # at most once between two responses
    assert len(sent) == 1


def test_the_compaction_step_is_the_one_the_sdks_own_loop_takes(sent):
    """Run the SDK's loop itself (`next(runner)`) on the same view: it sends the same request, and the history it
    leaves starts with the same compaction message the adapter put in the view."""
    import anthropic

    ctx = long_context()
    chosen = strategy(threshold=5_000)
    chosen.on_run_start(ctx)
    params = chosen.runner_params(ctx)
    chosen.before_request(ctx)
    ours = sent[-1]["body"]
    adapter_view = ctx.view.to_messages()

    loop_ctx = long_context()
    client = anthropic.Anthropic(api_key="unused", http_client=provider_wire.sync_client(loop_ctx, "summary", "loop"))
    runner = client.beta.messages.tool_runner(**params, betas=[ANTHROPIC_SUMMARIZE_BETA], thread=False)
    runner.compact_before_next_turn()
    compaction = next(runner)
    assert compaction.stop_reason == "compaction"
    assert sent[-1]["body"] == ours
    next(runner)  # the loop registers the compaction, then sends its next turn from the compacted history
    assert sent[-1]["body"]["messages"][0]["content"] == [block.to_dict(mode="json") for block in compaction.content]
    assert [blocks_alone(m) for m in read_messages([_as_sent(runner._thread.messages[0])])] == adapter_view[1:]


def test_runs_compact_end_no_run_in_error_and_replay_without_the_sdk(run_suite, monkeypatch):
    frame = run_suite("smoke", strategies=NAME, strategy_configs={NAME: {"threshold": 8_000}})
    assert not (frame["termination"] == "error").any(), frame["error"].tolist()
    assert frame["summaries"].sum() >= 1 and frame["summarizer_requests"].sum() == frame["summaries"].sum()
    assert set(frame["libraries"].map(tuple)) == {(ANTHROPIC_SDK.label,)}
    for name in [m for m in sys.modules if m == "anthropic" or m.startswith("anthropic.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "anthropic", None)
    paths = sorted((frame.attrs["out"] / "events").glob("*.jsonl.gz"))
    assert paths and all(replay_file(path).ok for path in paths)


def test_the_same_rows_with_the_sdks_request_over_serve_mocks_route(mock_server, tmp_path, monkeypatch):
    """The SDK's compaction request sent over HTTP to serve-mock's Messages API gives the rows of the mock in
    process (the summary profile served as the mock summarizer there too)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    run = ["run", "--suite", "default", "--task-ids", "chained_lookup-3", "--strategies", NAME, "--window", "60000",
           "--no-progress"]
    local = rows_in_process_and_over_route(tmp_path, mock_server(window=60_000), run)
    assert local[0]["summaries"] >= 1


def test_a_compaction_request_past_the_window_is_the_strategy_failing_to_fit_it(run_suite):
    """A tool result that takes the context past the window in one step leaves the SDK's compaction request too long
    for the API (its 400 "prompt is too long"): the strategy could not fit the window, `strategy_failed`, not a fault."""
    frame = run_suite("default", strategies=NAME, window=32_000, task_ids=("big_output-0",))
    assert frame["termination"].tolist() == ["strategy_failed"], frame["error"].tolist()
    assert "prompt is too long" in frame["error"][0]
