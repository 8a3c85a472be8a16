"""inspect.compaction_native and inspect.compaction_auto (strategies/adapters/inspect_native.py) against inspect-ai
itself, its Anthropic provider talking to the simulated provider through ctxbench's transport.

Sources: inspect_ai/model/_compaction/native.py (`CompactionNative`: `Model.compact`, NotImplementedError without
native compaction, memory off, `preserve_prefix` False), auto.py (`CompactionAuto`: native first, `CompactionSummary`
on NotImplementedError or failure, `fallback_reason`), _compaction.py (`_resolve_threshold`: int(fraction x window)),
model/_providers/anthropic.py `compact` (the `compact_20260112` edit, trigger `MIN_COMPACTION_TOKENS` 50,000,
`pause_after_compaction`, [compaction message, "Please continue working."], "did not trigger" NotImplementedError) and
`_add_edit_compaction` (input holding compaction: the edit with the trigger just under the window).
"""
from __future__ import annotations

import json
import sys

import pytest

from harness.conversation.replay import replay_file
from harness.core.errors import ConfigError
from harness.models.llm import LLMProfile
from harness.models.provider_compaction import ANTHROPIC_BETA, compaction_blocks, compaction_items
from strategies import StrategySpec, build_strategy
from strategies.adapters import ANTHROPIC_SDK_FOR_INSPECT, INSPECT_AI
from tests import adapter_helpers
from tests.adapter_helpers import record_wire_requests, requires, rows_in_process_and_over_route

pytestmark = [requires(INSPECT_AI), requires(ANTHROPIC_SDK_FOR_INSPECT)]
NATIVE, AUTO = "inspect.compaction_native", "inspect.compaction_auto"


def strategy(name=NATIVE, **config):
    return build_strategy(StrategySpec(name, config))


def long_context(turns: int = 60, cache: str = "anthropic", summary: dict | None = None):
    """A run context past 60,000 tokens (tool results of ~1,000 tokens each)."""
    return adapter_helpers.long_context(turns, 990, cache, summary)


@pytest.fixture
def sent(monkeypatch):
    return record_wire_requests(monkeypatch)


def compactions(sent):
    return [r for r in sent if r["path"] == "/v1/messages"]


def test_inspects_constructors_check_the_config():
    strategy(NATIVE, threshold=60_000, instructions="Keep codes.", memory=True)
    strategy(AUTO, memory="auto")
    with pytest.raises(ConfigError, match="memory must be true, false or \"auto\""):
        strategy(AUTO, memory="sometimes")
    with pytest.raises(ConfigError, match="threshold must be a positive"):
        strategy(NATIVE, threshold=0)


def test_a_fractional_threshold_is_resolved_against_the_window_as_inspect_does():
    assert strategy().threshold_values(200_000) == {"threshold": 180_000}  # 0.9, Inspect's default
    assert strategy(threshold=0.5).threshold_values(128_000) == {"threshold": 64_000}
    assert strategy(threshold=70_000).threshold_values(200_000) == {"threshold": 70_000}


def test_a_threshold_below_the_apis_minimum_trigger_is_said_before_the_run():
    [line] = strategy(threshold=0.5).threshold_warnings(64_000, NATIVE)
    assert "50,000" in line and "gives up" in line
    assert "falls back to CompactionSummary" in strategy(AUTO, threshold=0.5).threshold_warnings(64_000, AUTO)[0]
    assert strategy().threshold_warnings(200_000, NATIVE) == []


def test_native_refuses_a_main_model_whose_provider_has_no_native_compaction_here():
    for model, mock in (("mock/agent", {}), ("mock/agent", {"cache": "openai"}), ("anthropic/claude-sonnet-4-6", {}),
                        ("openai/gpt-5.6", {})):
        strategy().check_main(LLMProfile(model=model, mock=mock), "here")
    with pytest.raises(ConfigError, match="inspect.compaction_auto falls back"):
        strategy().check_main(LLMProfile(model="gemini/gemini-2.5-pro"), "here")
    strategy(AUTO).check_main(LLMProfile(model="gemini/gemini-2.5-pro"), "here")


def test_without_the_anthropic_sdk_the_inspect_extra_is_named(monkeypatch):
    import strategies.adapters as adapters

    monkeypatch.setattr(adapters, "installed_version", lambda name: None if name == "anthropic" else "0.3.285")
    with pytest.raises(ConfigError, match=r"anthropic, which is not installed: pip install -e '\.\[inspect\]'"):
        strategy(AUTO).check_main(LLMProfile(model="mock/agent"), "here")
    strategy(AUTO).check_main(LLMProfile(model="mock/agent", mock={"cache": "openai"}), "here")  # OpenAI's: no need


def test_inspects_anthropic_provider_sends_the_compaction_edit_and_its_message_becomes_the_view(sent):
    """anthropic.py `compact`: the edit with the minimum trigger and the pause, the beta; the view becomes the system
    prompt, the compaction message and "Please continue working."; one side call of the summary profile (token
    counting is free: no side call)."""
    ctx = long_context()
    chosen = strategy(threshold=55_000)
    chosen.before_request(ctx)
    [request] = compactions(sent)
    assert request["beta"] == ANTHROPIC_BETA
    assert request["body"]["context_management"] == {"edits": [{
        "type": "compact_20260112", "instructions": None, "trigger": {"type": "input_tokens", "value": 50_000},
        "pause_after_compaction": True}]}
    assert any(r["path"] == "/v1/messages/count_tokens" for r in sent)
    view = ctx.view.to_messages()
    assert view[0]["role"] == "system" and len(view) == 3
    assert compaction_blocks(view[1]) and view[1]["content"] is None
    assert view[2] == {"role": "user", "content": "Please continue working."}
    calls = [e for e in ctx.log.events if e["type"] == "llm_call"]
    assert [(c["profile"], c["purpose"], c["ok"]) for c in calls] == [("summary", "CompactionNative", True)]
    condensation = next(e for e in ctx.log.events if e["type"] == "condensation")
    assert condensation["applied"] == "CompactionNative" and condensation["summary_id"] == ctx.view.ids[1]


def test_main_requests_after_a_native_compaction_carry_inspects_edit_for_compacted_input(sent):
    """anthropic.py generate -> `_add_edit_compaction`: a trigger just under the window (990,000 for a 1M-token
    Claude such as claude-sonnet-4-6), so the API takes the block back without compacting on its own."""
    ctx = long_context()
    chosen = strategy(threshold=55_000)
    assert chosen.request_options(ctx) == {}
    chosen.before_request(ctx)
    assert chosen.request_options(ctx) == {"context_management": {"edits": [{
        "type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 990_000}}]}}


def test_below_the_minimum_trigger_native_gives_up_with_inspects_message(sent):
    """The request stays under 50,000 tokens: the API does not compact, Inspect raises NotImplementedError ("did not
    trigger"), which ends the run `strategy_failed` naming Inspect."""
    from harness.core.errors import StrategyFailed

    ctx = long_context(turns=30)
    with pytest.raises(StrategyFailed, match="inspect-ai 0.3.285 .*Anthropic compaction did not trigger"):
        strategy(threshold=20_000).before_request(ctx)


def _fallback(ctx, reason):
    """auto.py `_delegate_outcome`: NotImplementedError from native -> CompactionSummary, its summary a side call;
    the condensation says which applied and why."""
    strategy(AUTO, threshold=20_000).before_request(ctx)
    condensation = next(e for e in ctx.log.events if e["type"] == "condensation")
    assert condensation["applied"] == "CompactionSummary"
    assert condensation["fallback_reason"].startswith("native compaction not supported") and \
        reason in condensation["fallback_reason"]
    summary = ctx.view.message(condensation["summary_id"])
    assert summary["role"] == "user" and not compaction_blocks(summary) and "COMPACTION SUMMARY" in summary["content"]
    calls = [e for e in ctx.log.events if e["type"] == "llm_call" and e["ok"]]
    assert calls and calls[-1]["purpose"] == "CompactionAuto" and calls[-1]["profile"] == "summary"


def test_auto_falls_back_where_anthropics_compaction_does_not_trigger(sent):
    _fallback(long_context(turns=30), "Anthropic compaction did not trigger")


def test_auto_falls_back_for_a_model_off_openais_responses_api(sent, mock_server, monkeypatch):
    """A summary model served by an OpenAI-compatible chat endpoint (serve-mock's chat route, a model Inspect does not
    put on the Responses API): Inspect's OpenAIAPI refuses native compaction; its summary goes over chat completions,
    a side call all the same."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    server = mock_server()
    ctx = long_context(summary={"model": "openai/gpt-4.1-summarizer", "api_base": server.url})
    _fallback(ctx, "Native compaction requires the Responses API for gpt-4.1-summarizer")


def test_auto_falls_back_for_a_provider_without_native_compaction(sent, monkeypatch):
    """A provider Inspect has no native compaction for: the target is ctxbench's ModelAPI, whose `compact` is Inspect's
    base NotImplementedError (_model.py `ModelAPI.compact`)."""
    import strategies.adapters.inspect_native as native

    monkeypatch.setattr(native, "native_family", lambda profile: None)
    _fallback(long_context(), "CtxbenchModelAPI does not support native compaction")
    assert sent == []


def test_inspects_openai_provider_compacts_through_responses_compact(sent):
    """openai.py `compact`: `POST /responses/compact` with the conversation as Responses items; the window (the kept
    user messages, then the compaction item) becomes the view after the system prompt; the item an assistant
    message's, as the LLM layer sends items back. Inspect's token counting (`/responses/input_tokens`) is not served:
    Inspect counts with tiktoken on its 404 (openai.py `count_tokens`)."""
    ctx = long_context(cache="openai")
    chosen = strategy(threshold=20_000)
    chosen.before_request(ctx)
    [request] = [r for r in sent if r["path"] == "/v1/responses/compact"]
    assert {item["type"] for item in request["body"]["input"]} >= {"message", "function_call", "function_call_output"}
    view = ctx.view.to_messages()
    assert [m["role"] for m in view] == ["system", "user", "assistant"]
    assert view[1]["content"] == "Do the task." and compaction_items(view[2])[0]["encrypted_content"]
    assert chosen.request_options(ctx) == {} and chosen.libraries()[-1].startswith("openai ")
    calls = [e for e in ctx.log.events if e["type"] == "llm_call"]
    assert [(c["profile"], c["purpose"], c["ok"]) for c in calls] == [("summary", "CompactionNative", True)]


def test_a_compaction_request_past_openais_window_is_a_give_up(sent):
    """OpenAI answers an input past the window with `context_length_exceeded`, which Inspect's `compact` raises: the
    strategy could not fit the window (`strategy_failed`), as Anthropic's "did not trigger" is."""
    from harness.core.errors import StrategyFailed

    ctx = long_context(cache="openai", summary={"model": "mock/summarizer", "mock": {"cache": "openai",
                                                                                    "window": 40_000}})
    with pytest.raises(StrategyFailed, match="prompt is too long"):
        strategy(threshold=20_000).before_request(ctx)


# Tasks of the default suite whose context passes the threshold at a 64k window (the whole suite under -m slow).
COMPACTING_TASKS = ("chained_lookup-3", "work_queue-1", "repo_maintenance-2")


@pytest.mark.parametrize("task_ids", [pytest.param(COMPACTING_TASKS, id="tasks"),
                                      pytest.param((), id="suite", marks=pytest.mark.slow)])
@pytest.mark.parametrize("cache", ["anthropic", "openai"])
def test_runs_compact_end_no_run_in_error_and_replay_without_inspect(run_suite, monkeypatch, cache, task_ids):
    frame = run_suite("default", strategies=f"{NATIVE},{AUTO}", window=64_000, cache=cache, task_ids=task_ids,
                      strategy_configs={NATIVE: {"threshold": 52_000}, AUTO: {"threshold": 52_000}})
    assert not (frame["termination"] == "error").any(), frame["error"].tolist()
    assert frame["summaries"].sum() >= 2
    for name in [m for m in sys.modules if m.split(".")[0] in ("inspect_ai", "anthropic")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "anthropic", None)  # the openai SDK stays: litellm imports it
    paths = sorted((frame.attrs["out"] / "events").glob("*.jsonl.gz"))
    assert paths and all(replay_file(path).ok for path in paths)


def test_the_same_rows_with_inspects_requests_over_serve_mocks_route(mock_server, tmp_path, monkeypatch):
    """Inspect's Anthropic client sending its compaction and token-counting requests over HTTP to serve-mock's Messages
    API gives the rows of the mock in process (the summary profile served as the mock summarizer there too)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    run = ["run", "--suite", "default", "--task-ids", "chained_lookup-3", "--strategies", NATIVE, "--window", "60000",
           "--strategy-config", json.dumps({NATIVE: {"threshold": 52_000}}), "--no-progress"]
    local = rows_in_process_and_over_route(tmp_path, mock_server(window=60_000), run)
    assert local[0]["summaries"] >= 1
