"""Google ADK's events compaction (strategies/adapters/google_adk.py) against ADK itself.

Sources, google-adk 2.13.0: google/adk/apps/compaction.py (`_run_compaction_for_token_threshold_config`, what
`CompactionRequestProcessor` runs before a model call; `_run_compaction_for_sliding_window`, what the Runner runs
after an invocation; `_latest_prompt_token_count`), apps/_configs.py (`EventsCompactionConfig` and its
validator), apps/llm_event_summarizer.py (the summary request), flows/llm_flows/context/_compaction.py
(`_process_compaction_events`: a summary stands for its range in the request), flows/llm_flows/tools/_caller.py
(a tool's text result is `{"result": text}`), models/lite_llm.py (LiteLlm calls its `llm_client`).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from harness.conversation.replay import replay_file
from harness.core.errors import ConfigError, StrategyFailed
from harness.models.mock.summarizer import HEADER, summarize
from strategies import StrategySpec, build_strategy
from strategies.adapters import GOOGLE_ADK
from tests.adapter_helpers import refused_before_any_run, requires
from tests.reset_helpers import context, success, tool_call

pytestmark = requires(GOOGLE_ADK)

NAME = "adk.compaction"
TOKENS_ONLY = {"compaction_interval": None, "overlap_size": None}
WINDOW_ONLY = {"token_threshold": None, "event_retention_size": None}


def _adapter(config: dict[str, Any] | None = None) -> Any:
    return build_strategy(StrategySpec(NAME, config or {}))


class Recorder:
    """ctxbench's summary side calls, as sent and as answered."""

    def __init__(self, ctx: Any) -> None:
        self.sent: list[list[dict[str, Any]]] = []
        self.answers: list[str] = []
        real = ctx.call_llm

        def call(profile: str, messages: list[dict[str, Any]], purpose: str) -> Any:
            self.sent.append(messages)
            result = real(profile, messages, purpose)
            self.answers.append(result.message["content"])
            return result

        ctx.call_llm = call


def _step(adapter: Any, ctx: Any, n: int, reported: int, words: int = 50) -> None:
    """One agent step: a request (the adapter first), the agent's call reported at `reported` input tokens,
    its result."""
    adapter.before_request(ctx)
    success(ctx, adapter, {"role": "assistant", "content": f"Reading part {n}.",
                           "tool_calls": [tool_call(f"c{n}", "read", {"part": n})]}, reported)
    ctx.add_message({"role": "tool", "tool_call_id": f"c{n}", "name": "read",
                     "content": f"part {n}: code K{n}7\n" + "lorem ipsum\n" * words}, origin="tool")


# ----- ADK driven directly, on events written here apart from the adapter's conversion -----------------
def _adk_events(ctx: Any, usage: dict[int, int], invocations: dict[int, str]) -> list[Any]:
    from google.adk.events import Event
    from google.genai import types

    events = []
    for cid, event in enumerate(ctx.log.events):
        if event["type"] != "message" or event.get("placement") == "none" or event["message"]["role"] == "system":
            continue
        message = event["message"]
        common = {"invocation_id": invocations[cid], "timestamp": float(cid)}
        if message["role"] == "user":
            events.append(Event(author="user", content=types.Content(role="user", parts=[
                types.Part(text=message["content"])]), **common))
        elif message["role"] == "tool":
            events.append(Event(author="agent", content=types.Content(role="user", parts=[types.Part(
                function_response=types.FunctionResponse(id=message["tool_call_id"], name=message["name"],
                                                         response={"result": message["content"]}))]), **common))
        else:
            parts = [types.Part(text=message["content"])] if message.get("content") else []
            parts += [types.Part(function_call=types.FunctionCall(id=c["id"], name=c["function"]["name"],
                                                                  args=json.loads(c["function"]["arguments"])))
                      for c in message.get("tool_calls") or ()]
            metadata = types.GenerateContentResponseUsageMetadata(prompt_token_count=usage[cid]) \
                if cid in usage else None
            events.append(Event(author="agent", content=types.Content(role="model", parts=parts),
                                usage_metadata=metadata, **common))
    return events


def _direct(answers: list[str], **config: Any) -> tuple[Any, Any, Any, list[str]]:
    """ADK's App, session service and session, the summarizer's LiteLlm answering `answers` in turn; the
    prompts it was sent."""
    import litellm
    from google.adk.agents import LlmAgent
    from google.adk.apps.app import App, EventsCompactionConfig
    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
    from google.adk.models.lite_llm import LiteLlm, LiteLLMClient
    from google.adk.sessions import InMemorySessionService

    prompts: list[str] = []

    class Client(LiteLLMClient):
        async def acompletion(self, **kwargs: Any) -> Any:
            prompts.append(kwargs["messages"][0]["content"])
            return litellm.ModelResponse(choices=[{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": answers[len(prompts) - 1]}}])

    llm = LiteLlm(model="mock/summarizer", llm_client=Client())
    app = App(name="direct", root_agent=LlmAgent(name="agent", model=llm),
              events_compaction_config=EventsCompactionConfig(summarizer=LlmEventSummarizer(llm=llm), **config))
    service = InMemorySessionService()
    session = asyncio.run(service.create_session(app_name="direct", user_id="u"))
    return app, service, session, prompts


def _request_shape(events: list[Any]) -> list[Any]:
    """The request ADK builds from a session: each raw event's timestamp (a ctxbench id), "summary" for a summary."""
    from google.adk.flows.llm_flows.context._compaction import _process_compaction_events

    return ["summary" if e.actions and e.actions.compaction else int(e.timestamp)
            for e in _process_compaction_events(events, "agent")]


def _view_shape(ctx: Any) -> list[Any]:
    return ["summary" if ctx.view.origins[cid] == "strategy" else cid for cid in ctx.view.ids[1:]]


def test_the_token_threshold_compacts_where_adks_own_processor_does_and_sends_its_prompt():
    """apps/compaction.py: before a model call, the last observed prompt tokens reach token_threshold: all events
    but the last event_retention_size are summarized (the range closed on its tool calls)."""
    from google.adk.apps.compaction import _run_compaction_for_token_threshold_config

    adapter = _adapter({**TOKENS_ONLY, "token_threshold": 1000, "event_retention_size": 2})
    ctx = context()
    ctx.tools = []
    recorder = Recorder(ctx)
    for n, reported in enumerate((400, 700, 1100)):
        _step(adapter, ctx, n, reported)
    adapter.before_request(ctx)  # the request after one reported at 1,100 tokens
    assert len(recorder.sent) == 1 and len(recorder.sent[0]) == 1

    usage = {e["id"]: e_usage for e, e_usage in zip(
        [e for e in ctx.log.events if e["type"] == "message" and e["origin"] == "agent"], (400, 700, 1100))}
    invocations = dict.fromkeys(range(len(ctx.log.events)), "one")
    app, service, session, prompts = _direct(recorder.answers, token_threshold=1000, event_retention_size=2)
    for event in _adk_events(ctx, usage, invocations):
        asyncio.run(service.append_event(session=session, event=event))
    assert asyncio.run(_run_compaction_for_token_threshold_config(
        config=app.events_compaction_config, session=session, session_service=service, agent=app.root_agent,
        agent_name="agent"))
    assert prompts == [recorder.sent[0][0]["content"]]
    assert _view_shape(ctx) == _request_shape(session.events)
    condensation = next(e for e in ctx.log.events if e["type"] == "condensation")
    assert condensation["kind"] == "summary" and condensation["trigger"] == "token_threshold"
    assert ctx.view.message(condensation["summary_id"]) == {"role": "assistant", "content": recorder.answers[0]}


def test_the_threshold_reads_the_prompt_tokens_the_provider_reported_not_the_views_size():
    """apps/compaction.py `_latest_prompt_token_count`: the latest model response's usage."""
    adapter = _adapter({**TOKENS_ONLY, "token_threshold": 1000, "event_retention_size": 1})
    ctx = context()
    ctx.tools = []
    for n in range(4):
        _step(adapter, ctx, n, reported=999, words=400)  # a view of ~4,000 tokens, reported under 1,000
    adapter.before_request(ctx)
    assert not [e for e in ctx.log.events if e["type"] == "condensation"]
    success(ctx, adapter, {"role": "assistant", "content": "More.", "tool_calls": [tool_call("c9", "read", {})]},
            1000)
    ctx.add_message({"role": "tool", "tool_call_id": "c9", "name": "read", "content": "part 9"}, origin="tool")
    adapter.before_request(ctx)
    assert [e["trigger"] for e in ctx.log.events if e["type"] == "condensation"] == ["token_threshold"]


def test_the_sliding_window_compacts_after_the_invocations_adks_runner_does():
    """apps/compaction.py `_run_compaction_for_sliding_window` after each completed invocation (a user turn):
    with interval 2 and overlap 1, invocations 1-2 are summarized when the 3rd begins, 2-4 when the 5th does."""
    from google.adk.apps.compaction import _run_compaction_for_sliding_window

    adapter = _adapter({**WINDOW_ONLY, "compaction_interval": 2, "overlap_size": 1})
    ctx = context()
    ctx.tools = []
    recorder = Recorder(ctx)
    turn_of = {1: "turn-1"}  # message id -> its invocation
    ends = []  # the last message id of each completed invocation
    for turn in range(1, 6):
        if turn > 1:
            ends.append(len(ctx.log.events) - 1)
            turn_of[ctx.add_message({"role": "user", "content": f"Question {turn}?"}, origin="user")["id"]] = \
                f"turn-{turn}"
        adapter.before_request(ctx)
        reply = success(ctx, adapter, {"role": "assistant", "content": f"Answer {turn}."}, 100 * turn)
        turn_of[reply["id"]] = f"turn-{turn}"
    assert len(recorder.sent) == 2

    app, service, session, prompts = _direct(recorder.answers, compaction_interval=2, overlap_size=1)
    invocations = {cid: turn_of.get(cid, "") for cid in range(len(ctx.log.events))}
    events = _adk_events(ctx, {}, invocations)
    for event in events:
        asyncio.run(service.append_event(session=session, event=event))
        if int(event.timestamp) in ends:  # the Runner, once an invocation completed

            async def compact() -> None:
                async for summary in _run_compaction_for_sliding_window(app, session, service):
                    await service.append_event(session=session, event=summary)

            asyncio.run(compact())
    assert prompts == [sent[0]["content"] for sent in recorder.sent]
    assert _view_shape(ctx) == _request_shape(session.events)
    assert [e["trigger"] for e in ctx.log.events if e["type"] == "condensation"] == ["sliding_window"] * 2


def test_a_summary_call_that_fails_leaves_the_history_uncompacted_and_is_said(monkeypatch):
    """apps/compaction.py `_summarize_events_with_trace`: "continuing with the uncompacted history"."""
    adapter = _adapter({**TOKENS_ONLY, "token_threshold": 100, "event_retention_size": 1})
    ctx = context()
    ctx.tools = []
    _step(adapter, ctx, 0, 500)
    _step(adapter, ctx, 1, 500)
    before = list(ctx.view.ids)
    monkeypatch.setattr(ctx, "call_llm", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("provider down")))
    adapter.before_request(ctx)
    refused = [e for e in ctx.log.events if e["type"] == "condensation_refused"]
    assert refused[0]["reason"] == "summary_call_failed" and "provider down" in refused[0]["error"]
    assert list(ctx.view.ids) == before
    monkeypatch.setattr(ctx, "call_llm", lambda *a, **k: (_ for _ in ()).throw(StrategyFailed("spent")))
    with pytest.raises(StrategyFailed):  # ctxbench's own error, which ADK caught, ends the run as elsewhere
        adapter.before_request(ctx)


def test_defaults_and_their_scaling_with_the_window():
    """ADK has no defaults (apps/_configs.py); ours, from its documentation's examples, the threshold scaled."""
    adapter = _adapter()
    assert (adapter.config.compaction_interval, adapter.config.overlap_size, adapter.config.event_retention_size) == \
           (3, 1, 5)
    assert adapter.threshold_values(32000) == {"token_threshold": 24000}
    assert adapter.threshold_values(None) == {"token_threshold": 150_000}
    assert _adapter(WINDOW_ONLY).threshold_values(32000) == {}
    assert adapter.profiles_needed() == ["summary"]


@pytest.mark.parametrize("config, message", [
    ({"compaction_interval": 0}, r"compaction_interval"),
    ({"overlap_size": None}, r"compaction_interval and overlap_size must be set together"),
    ({**WINDOW_ONLY, **TOKENS_ONLY}, r"At least one compaction trigger must be configured"),
    ({"token_threshold": 5000, "event_retention_size": None}, r"must be set together"),
    ({"event_retention_size": -1}, r"event_retention_size"),
    ({"compaction_intervall": 2}, r"unknown key\(s\) 'compaction_intervall'"),
])
def test_adks_validator_refuses_a_configuration_naming_the_option(config, message):
    with pytest.raises(ConfigError, match=message):
        _adapter(config)


def test_a_refused_configuration_exits_2_before_any_run(tmp_path, capsys):
    assert "compaction_interval" in refused_before_any_run(tmp_path, capsys, NAME, {"compaction_interval": 0})


def test_the_mock_summarizer_reads_adks_prompt_and_keeps_only_what_it_shows():
    """apps/llm_event_summarizer.py: each tool response is cut at 2,000 characters in the prompt."""
    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
    from google.adk.events import Event
    from google.genai import types

    shown, cut = "row 1: code K17 weight 5", "row 2: code K99 weight 8"
    result = shown + "\n" + "filler line\n" * 400 + cut
    events = [
        Event(author="user", content=types.Content(role="user", parts=[types.Part(text="Sum the weights.")])),
        Event(author="agent", content=types.Content(role="model", parts=[
            types.Part(text="Looking for K17 and K99."),
            types.Part(function_call=types.FunctionCall(id="c1", name="read", args={"file": "a.txt"}))])),
        Event(author="agent", content=types.Content(role="user", parts=[types.Part(
            function_response=types.FunctionResponse(id="c1", name="read", response={"result": result}))])),
    ]
    summarizer = LlmEventSummarizer(llm=None)  # only its rendering of the events is used here
    prompt = summarizer._prompt_template.format(conversation_history=summarizer._format_events_for_prompt(events))
    summary = summarize([{"role": "user", "content": prompt}], seed=0)["content"]
    assert summary.startswith(HEADER)
    assert shown in summary and "K99 weight" not in summary and "Looking for K17 and K99." in summary


def test_a_suite_run_compacts_and_replays(run_suite):
    runs = run_suite("smoke", strategies=NAME, window=32000,
                     strategy_configs={NAME: {"token_threshold": 4000, "event_retention_size": 5}})
    assert (runs.termination != "error").all()
    assert (runs.libraries.map(tuple) == (GOOGLE_ADK.label,)).all()
    assert runs.summaries.sum() > 0 and runs.summarizer_requests.sum() == runs.summaries.sum()
    for path in (runs.attrs["out"] / "events").glob("*.jsonl.gz"):
        assert replay_file(path).ok
