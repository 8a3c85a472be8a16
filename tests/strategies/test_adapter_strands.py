"""Strands Agents' conversation managers (strategies/adapters/strands.py) against strands-agents itself.

Sources, strands-agents 1.62.0 under strands/: agent/conversation_manager/sliding_window_conversation_manager.py,
summarizing_conversation_manager.py, conversation_manager.py, compression/context_compression.py; agent/agent.py
(`_run_loop` applies the manager at the end of an invocation, :1766; `_execute_event_loop_cycle` reduces on an
overflow, :1913-1921); event_loop/event_loop.py (`_estimate_input_tokens` :126-166, BeforeModelCallEvent :520-535).
"""
from __future__ import annotations

import asyncio
import inspect as pyinspect
import json
import sys
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from harness.conversation.events import read_events
from harness.cli import main
from harness.core.errors import ConfigError
from harness.conversation.replay import replay_file
from harness.models.mock.summarizer import HEADER, summarize
from strategies import StrategySpec, build_strategy
from strategies.adapters import STRANDS, Library
from tests.adapter_helpers import requires, tool_steps, user_turns
from tests.reset_helpers import SYSTEM, context, success, tool_call

pytestmark = requires(STRANDS)

SLIDING, SUMMARIZING = "strands.sliding_window", "strands.summarizing"
OVERFLOW = RuntimeError("prompt is too long: 40000 tokens > 32000 maximum")


# ----- crafted histories, and the same messages in Strands' format (converted here apart from the adapter)

def _history(kind: str) -> list[dict[str, Any]]:
    """Messages after the system prompt and the first user message of tests.reset_helpers.context."""
    if kind == "parallel":
        out: list[dict[str, Any]] = []
        for n in range(8):
            out += [{"role": "assistant", "content": f"step {n}", "tool_calls": [tool_call(f"a{n}", "read", {"f": n}),
                                                                            tool_call(f"b{n}", "grep", {"q": n})]},
                    {"role": "tool", "tool_call_id": f"a{n}", "name": "read",
                     "content": f"file {n} K{n}7 " + "x " * 400},
                    {"role": "tool", "tool_call_id": f"b{n}", "name": "grep", "content": f"hits {n} " + "y " * 300}]
        return out
    if kind == "turns":
        return user_turns(6, 500)
    out = []  # "long": a tool loop longer than the default window (40 Strands messages)
    for n in range(24):
        out += [{"role": "assistant", "content": None, "tool_calls": [tool_call(f"c{n}", "fetch", {"n": n})]},
                {"role": "tool", "tool_call_id": f"c{n}", "name": "fetch", "content": f"row {n}: K{n}7 " + "z " * 250}]
    return out


KINDS = ["parallel", "turns", "long"]


def _strands(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages (no system prompt) as Strands holds them: consecutive tool results one user message."""
    out: list[dict[str, Any]] = []
    previous = None
    for message in messages:
        if message["role"] == "tool":
            block = {"toolResult": {"toolUseId": message["tool_call_id"], "status": "success",
                                    "content": [{"text": message["content"]}]}}
            if previous == "tool":
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif message["role"] == "assistant":
            blocks = [{"text": message["content"]}] if message.get("content") else []
            blocks += [{"toolUse": {"toolUseId": c["id"], "name": c["function"]["name"],
                                    "input": json.loads(c["function"]["arguments"])}}
                       for c in message.get("tool_calls") or ()]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": [{"text": message["content"]}]})
        previous = message["role"]
    return out


def _shape_strands(messages: list[dict[str, Any]]) -> list[tuple]:
    """Strands messages as (role, text, tool calls or tool call id), one entry per chat message they stand for."""
    out = []
    for message in messages:
        blocks = message["content"]
        text = "".join(b["text"] for b in blocks if "text" in b)
        if message["role"] == "assistant":
            uses = [b["toolUse"] for b in blocks if "toolUse" in b]
            out.append(("assistant", text, tuple((u["toolUseId"], u["name"], json.dumps(u["input"])) for u in uses)))
            continue
        results = [b["toolResult"] for b in blocks if "toolResult" in b]
        out += [("tool", "".join(i["text"] for i in r["content"]), r["toolUseId"]) for r in results]
        if text or not results:
            out.append(("user", text, ()))
    return out


def _shape_chat(messages: list[dict[str, Any]]) -> list[tuple]:
    out = []
    for m in messages:
        if m["role"] == "tool":
            out.append(("tool", m["content"], m["tool_call_id"]))
        elif m["role"] == "assistant":
            out.append(("assistant", m.get("content") or "", tuple(
                (c["id"], c["function"]["name"], json.dumps(json.loads(c["function"]["arguments"])))
                for c in m.get("tool_calls") or ())))
        else:
            out.append((m["role"], m["content"], ()))
    return out


def _adapter(name: str, config: dict[str, Any], messages: list[dict[str, Any]], **main: Any) -> tuple[Any, Any]:
    strategy = build_strategy(StrategySpec(name, config))
    ctx = context(**main)
    for message in messages:
        ctx.add_message(message, origin="agent" if message["role"] == "assistant" else "tool")
    strategy.on_run_start(ctx)
    return strategy, ctx


def _sent(ctx: Any) -> list[tuple]:
    """What ctxbench would send now, without the system prompt (Strands keeps it apart from the messages)."""
    sent = ctx.view.to_messages()
    assert sent[0] == SYSTEM
    return _shape_chat(sent[1:])


def _library(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's history (the first user message and `messages`) in Strands' format, for the manager itself."""
    return _strands([{"role": "user", "content": "Do the task."}, *messages])


# ----- (a) the sliding window, decision by decision against the manager itself

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("config", [{}, {"should_truncate_results": False}, {"window_size": 6},
                                    {"window_size": 6, "pin_first": 1}])
def test_sliding_window_on_overflow_sends_what_reduce_context_leaves(kind, config):
    """sliding_window_conversation_manager.py:170-274 reduce_context(e): the oldest tool-result message truncated
    first (:210-221, :301-378: 200 characters kept each side), else trimmed to a valid trim point (:225-274,
    context_compression.py:107-146), pins kept (:198-201, :258); three overflows in a row, each compared."""
    from strands.agent.conversation_manager import SlidingWindowConversationManager

    strategy, ctx = _adapter(SLIDING, config, _history(kind))
    manager = SlidingWindowConversationManager(**config)
    agent = SimpleNamespace(messages=_library(_history(kind)))
    for _ in range(3):
        strategy.before_request(ctx)
        assert strategy.on_context_window_error(ctx, OVERFLOW)
        manager.reduce_context(agent, e=Exception("overflow"))
        assert _sent(ctx) == _shape_strands(agent.messages)
    steps = [e["step"] for e in ctx.log.events if e["type"] == "compaction"]
    assert steps and set(steps) <= {"truncate_results", "sliding_window"}
    assert ("truncate_results" in steps) == config.get("should_truncate_results", True)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("per_turn", [True, 2])
def test_per_turn_applies_the_window_before_model_calls_as_strands_hook_does(kind, per_turn):
    """sliding_window_conversation_manager.py:97-125: with per_turn, BeforeModelCallEvent applies the window before
    every (or every Nth) model call; apply_management (:150-168) trims once the messages pass window_size."""
    from strands.agent.conversation_manager import SlidingWindowConversationManager

    config = {"window_size": 5, "per_turn": per_turn}
    strategy, ctx = _adapter(SLIDING, config, _history(kind))
    manager = SlidingWindowConversationManager(**config)
    agent = SimpleNamespace(messages=_library(_history(kind)))
    for call in range(1, 4):
        strategy.before_request(ctx)
        if per_turn is True or call % per_turn == 0:
            manager.apply_management(agent)
        assert _sent(ctx) == _shape_strands(agent.messages)
        reply = {"role": "assistant", "content": "", "tool_calls": [tool_call(f"n{call}", "read", {})]}
        success(ctx, strategy, reply, input_tokens=ctx.prompt_tokens_estimate())
        result = {"role": "tool", "tool_call_id": f"n{call}", "name": "read", "content": f"new {call}"}
        ctx.add_message(result, origin="tool")
        agent.messages += _strands([reply, result])
    assert any(e["type"] == "compaction" and e["trigger"] == "before_model_call" for e in ctx.log.events)


def test_without_per_turn_the_window_applies_at_the_end_of_an_invocation_only():
    """agent.py:1766: apply_management when an invocation ends (here: a reply without tool calls); per_turn False
    (the default) registers a hook that does nothing (:106-108), and nothing is reduced before then."""
    from strands.agent.conversation_manager import SlidingWindowConversationManager

    strategy, ctx = _adapter(SLIDING, {"window_size": 6}, _history("turns"))
    for _ in range(3):
        strategy.before_request(ctx)
    assert not any(e["type"] == "compaction" for e in ctx.log.events)
    reply = {"role": "assistant", "content": "all done"}
    success(ctx, strategy, reply, input_tokens=ctx.prompt_tokens_estimate())
    agent = SimpleNamespace(messages=_library([*_history("turns"), reply]))
    SlidingWindowConversationManager(window_size=6).apply_management(agent)
    assert _sent(ctx) == _shape_strands(agent.messages)
    event = next(e for e in ctx.log.events if e["type"] == "compaction")
    assert event["trigger"] == "invocation_end" and event["step"] == "sliding_window"


def test_proactive_compression_reduces_when_strands_estimate_passes_its_share_of_the_window():
    """conversation_manager.py:112-144: before a model call, projected input tokens (event_loop.py:126-166: the last
    reply's reported usage plus Strands' estimate of what followed) over the model's context_window_limit, the
    run's input budget here, at or past compression_threshold: reduce_context without an error (trim only)."""
    from strands.agent.conversation_manager import SlidingWindowConversationManager
    from strands.models.model import _estimate_tokens_with_heuristic

    config = {"window_size": 40, "proactive_compression": {"compression_threshold": 0.5}}
    strategy, ctx = _adapter(SLIDING, config, _history("long")[:-2], max_input_tokens=20_000)
    reply = _history("long")[-2]
    success(ctx, strategy, reply, input_tokens=9_000)
    result = {**_history("long")[-1], "content": "w " * 4_000}
    ctx.add_message(result, origin="tool")
    projected = 9_000 + _estimate_tokens_with_heuristic(_strands([result]))  # the reply reported no output tokens
    assert projected >= 10_000  # half the window: Strands reduces
    strategy.before_request(ctx)
    event = next(e for e in ctx.log.events if e["type"] == "compaction")
    assert event["trigger"] == "before_model_call" and event["projected_input_tokens"] == projected
    agent = SimpleNamespace(messages=_library([*_history("long")[:-2], reply, result]))
    SlidingWindowConversationManager(window_size=40).reduce_context(agent)
    assert _sent(ctx) == _shape_strands(agent.messages)


def test_a_history_strands_cannot_trim_ends_the_run_context_overflow():
    """sliding_window_conversation_manager.py:246-247: no valid trim point and an overflow: Strands raises
    ContextWindowOverflowException to the caller; the adapter declines the retry and logs compaction_failed."""
    strategy, ctx = _adapter(SLIDING, {"should_truncate_results": False}, [])
    strategy.before_request(ctx)
    assert strategy.on_context_window_error(ctx, OVERFLOW) is False
    failed = next(e for e in ctx.log.events if e["type"] == "compaction_failed")
    assert "Unable to trim conversation context" in failed["error"] and "strands-agents" in failed["library"]


# ----- (b) the summarizing manager against itself, its model the summary profile

class _RecordingModel:
    """Stands for a Strands model in the direct runs: answers "S." and records what it was asked."""

    def __init__(self) -> None:
        self.requests: list[tuple[str | None, list[dict[str, Any]]]] = []

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        self.requests.append((system_prompt, list(messages)))
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockDelta": {"delta": {"text": "S."}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def _recorded_side_calls(monkeypatch: pytest.MonkeyPatch, ctx: Any) -> list[list[dict[str, Any]]]:
    sent: list[list[dict[str, Any]]] = []
    call = ctx.call_llm

    def recording(profile, messages, purpose):
        sent.append(messages)
        return call(profile, messages, purpose)

    monkeypatch.setattr(ctx, "call_llm", recording)
    return sent


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("config", [{}, {"summary_ratio": 0.6, "preserve_recent_messages": 3},
                                    {"summary_ratio": 0.05}, {"pin_first": 1}])
def test_summarizing_on_overflow_sends_strands_summary_in_place_of_the_oldest_messages(kind, config, monkeypatch):
    """summarizing_conversation_manager.py:147-200: max(1, int(n x summary_ratio)) oldest messages (ratio clamped to
    0.1-0.8, :77), never the last preserve_recent_messages, the split moved past tool pairs
    (context_compression.py:62-104), pinned ones kept in front; their summary (generate_summary :149-191: the
    messages, then "Please summarize this conversation.", Strands' system prompt) a user message in their place.
    The adapter's request to the summary profile is Strands' request; the summary is what the profile wrote."""
    from strands.agent.conversation_manager import SummarizingConversationManager
    from strands.agent.conversation_manager.compression.context_compression import DEFAULT_SUMMARIZATION_PROMPT

    strategy, ctx = _adapter(SUMMARIZING, config, _history(kind))
    sent = _recorded_side_calls(monkeypatch, ctx)
    strategy.before_request(ctx)
    assert strategy.on_context_window_error(ctx, OVERFLOW)
    model = _RecordingModel()
    agent = SimpleNamespace(messages=_library(_history(kind)), aux_model=model)
    SummarizingConversationManager(**config).reduce_context(agent, e=Exception("overflow"))
    expected = _shape_strands(agent.messages)
    summary_at = next(n for n, m in enumerate(expected) if m == ("user", "S.", ()))
    view = _sent(ctx)
    assert view[:summary_at] + view[summary_at + 1:] == expected[:summary_at] + expected[summary_at + 1:]
    assert view[summary_at][0] == "user" and view[summary_at][1].startswith(HEADER)  # the mock summarizer's
    ((system, asked),), (request,) = model.requests, sent
    assert request[0] == {"role": "system", "content": system} and system == DEFAULT_SUMMARIZATION_PROMPT
    assert _shape_chat(request[1:]) == _shape_strands(asked)
    assert request[-1] == {"role": "user", "content": "Please summarize this conversation."}
    condensation = next(e for e in ctx.log.events if e["type"] == "condensation")
    assert condensation["kind"] == "summary" and condensation["trigger"] == "context_window_error"
    assert ctx.view.ids[summary_at + 1] == condensation["summary_id"]
    calls = [e for e in ctx.log.events if e["type"] == "llm_call" and e["profile"] == "summary"]
    assert len(calls) == 1 and calls[0]["ok"] and calls[0]["purpose"] == SUMMARIZING


def test_a_second_summary_takes_in_the_first_as_strands_does():
    """summarizing_conversation_manager.py:186-200: the earlier summary is among the oldest messages summarized next
    (removed_message_count not counting it, :191-192); the view keeps one summary."""
    strategy, ctx = _adapter(SUMMARIZING, {"summary_ratio": 0.5, "preserve_recent_messages": 2}, _history("turns"))
    for _ in range(2):
        strategy.before_request(ctx)
        assert strategy.on_context_window_error(ctx, OVERFLOW)
    first, second = [e for e in ctx.log.events if e["type"] == "condensation"]
    assert first["summary_id"] in second["forgotten_ids"]
    assert second["summary_id"] in ctx.view.ids and first["summary_id"] not in ctx.view.ids
    assert [ctx.view.message(i)["content"].startswith(HEADER) for i in ctx.view.ids].count(True) == 1


def test_too_few_messages_to_summarize_ends_the_run_context_overflow():
    """summarizing_conversation_manager.py:164-165 "Cannot summarize: insufficient messages for summarization",
    re-raised on an overflow (:140-143): the agent raises it; the adapter declines the retry, naming it."""
    strategy, ctx = _adapter(SUMMARIZING, {}, _history("turns")[:4])
    strategy.before_request(ctx)
    assert strategy.on_context_window_error(ctx, OVERFLOW) is False
    failed = next(e for e in ctx.log.events if e["type"] == "compaction_failed")
    assert failed["error"].startswith("Cannot summarize: insufficient messages")
    assert not any(e["type"] == "llm_call" for e in ctx.log.events)


def test_the_summarizing_manager_never_acts_at_the_end_of_an_invocation_or_before_a_call():
    """summarizing_conversation_manager.py:103-115 apply_management does nothing; without proactive_compression
    its BeforeModelCallEvent hook returns at once (conversation_manager.py:123-124)."""
    strategy, ctx = _adapter(SUMMARIZING, {"preserve_recent_messages": 0}, _history("long"))
    strategy.before_request(ctx)
    success(ctx, strategy, {"role": "assistant", "content": "done"}, input_tokens=ctx.prompt_tokens_estimate())
    strategy.before_request(ctx)
    assert not any(e.get("view_ops") for e in ctx.log.events)


def test_a_summarization_agent_gets_strands_request_through_the_summary_profile(monkeypatch):
    """summarizing_conversation_manager.py:233-272: with a summarization agent, the agent is asked "Please summarize
    this conversation." over the messages, with its own system prompt; its reply becomes the summary. Here the agent
    is a Strands Agent whose model is the summary profile."""
    config = {"summarization_agent": {"system_prompt": "Keep every code."}, "preserve_recent_messages": 3}
    strategy, ctx = _adapter(SUMMARIZING, config, _history("turns"))
    sent = _recorded_side_calls(monkeypatch, ctx)
    strategy.before_request(ctx)
    assert strategy.on_context_window_error(ctx, OVERFLOW)
    (request,) = sent
    assert request[0] == {"role": "system", "content": "Keep every code."}
    assert request[-1] == {"role": "user", "content": "Please summarize this conversation."}
    condensation = next(e for e in ctx.log.events if e["type"] == "condensation")
    assert ctx.view.message(condensation["summary_id"])["content"].startswith(HEADER)


def test_a_side_call_in_strands_worker_thread_is_not_counted_as_the_run_threads_cpu(monkeypatch):
    """strands/_async.py run_async: Strands makes the summary call in a thread of its own; the run's side-call CPU
    (which library_cpu_s is net of) counts only the run thread's, so the library's share is never negative."""
    strategy, ctx = _adapter(SUMMARIZING, {"preserve_recent_messages": 2}, _history("turns"))
    threads: list[int] = []
    call = ctx.call_llm
    monkeypatch.setattr(ctx, "call_llm", lambda *a, **k: threads.append(threading.get_ident()) or call(*a, **k))
    strategy.before_request(ctx)
    assert strategy.on_context_window_error(ctx, OVERFLOW)
    assert threads and threads[0] != threading.get_ident()
    assert ctx.side_call_cpu_s == 0.0 and ctx.library_cpu_s >= 0.0


# ----- (c) the mock summarizer reads Strands' request

def test_the_mock_summarizer_reads_strands_request_without_its_instructions():
    """context_compression.py:149-191 generate_summary: Strands' summarization prompt as the system prompt (loaded
    from the installed package), the messages, "Please summarize this conversation.". The summary holds what the
    conversation showed, nothing of the instructions: an instruction naming a code the agent named is not a line
    of the conversation."""
    from strands.agent.conversation_manager.compression.context_compression import DEFAULT_SUMMARIZATION_PROMPT

    conversation = [{"role": "assistant", "content": "Looking for K17 and Q29."},
                    {"role": "tool", "tool_call_id": "t", "name": "read", "content": "K17 weighs 4\nunrelated M55"}]
    closing = {"role": "user", "content": "Please summarize this conversation."}
    for prompt in (DEFAULT_SUMMARIZATION_PROMPT, "Keep codes such as K17 and Q29 exact."):
        reply = summarize([{"role": "system", "content": prompt}, *conversation, closing], seed=0)["content"]
        assert reply.startswith(HEADER) and "K17 weighs 4" in reply and "Looking for K17 and Q29." in reply
        assert "M55" not in reply and not any(line in reply for line in prompt.splitlines() if line.strip())
    kept = summarize([{"role": "system", "content": "Keep codes such as K17 and Q29 exact."}, *conversation,
                      {"role": "user", "content": "Summarize, then go on."}], seed=0)["content"]
    assert "Keep codes such as K17" in kept  # another request's system prompt is read as shown content


# ----- (d) configuration

@pytest.mark.parametrize("name, cls, ours", [(SLIDING, "SlidingWindowConversationManager", set()),
                                             (SUMMARIZING, "SummarizingConversationManager", {"summary_profile"})])
def test_defaults_and_names_are_strands(name, cls, ours):
    """Every parameter of the manager's constructor is a config field of the same name and default (the
    summarization agent's default, None, as well); the adapter's own fields are said."""
    import strands.agent.conversation_manager as managers

    strategy = build_strategy(StrategySpec(name, {}))
    params = {k: p.default for k, p in pyinspect.signature(getattr(managers, cls).__init__).parameters.items()
              if k != "self"}
    fields = vars(strategy.config)
    assert set(fields) - ours == set(params)
    assert {k: fields[k] for k in params} == params
    assert type(strategy.manager).__name__ == cls


@pytest.mark.parametrize("name, config, key", [
    (SLIDING, {"window_size": -1}, "window_size"),  # the library's own check (:71-72)
    (SLIDING, {"per_turn": 0}, "per_turn"),  # (:73-74)
    (SLIDING, {"window_size": "40"}, "window_size"),
    # conversation_manager.py:90-91
    (SLIDING, {"proactive_compression": {"compression_threshold": 1.5}}, "compression_threshold"),
    (SLIDING, {"proactive_compression": {"threshold": 0.5}}, "proactive_compression"),  # ours: Strands ignores it
    (SUMMARIZING, {"summarization_system_prompt": "Be brief.", "summarization_agent": {}}, "summarization_agent"),
    (SUMMARIZING, {"summary_ratio": "high"}, "summary_ratio"),
    (SUMMARIZING, {"summarization_agent": {"tools": []}}, "tools"),
    (SUMMARIZING, {"windo_size": 3}, "windo_size"),
])
def test_a_config_strands_refuses_is_a_config_error_naming_the_key(name, config, key):
    with pytest.raises(ConfigError, match=key):
        build_strategy(StrategySpec(name, config))


def test_a_refused_config_exits_2_before_any_model_call(tmp_path, capsys):
    out = tmp_path / "r"
    code = main(["run", "--suite", "smoke", "--strategies", SLIDING, "--no-progress", "--out", str(out),
                 "--strategy-config", json.dumps({SLIDING: {"window_size": -3}})])
    assert code == 2 and "window_size must be a non-negative integer" in capsys.readouterr().err
    assert not (out / "runs.jsonl").exists()


def test_a_missing_strands_names_the_extra(monkeypatch):
    monkeypatch.setattr(Library, "version", lambda self: None)
    for name in (SLIDING, SUMMARIZING):
        with pytest.raises(ConfigError, match=r"strands-agents, which is not installed: "
                                              r"pip install -e '\.\[strands\]'"):
            build_strategy(StrategySpec(name, {}))


def test_the_model_window_is_the_runs_input_budget():
    """Proactive compression's ratio is of model.context_window_limit (model.py:337-360): the run's budget."""
    strategy, ctx = _adapter(SLIDING, {}, [], max_input_tokens=24_000)
    strategy.before_request(ctx)
    assert strategy.agent.model.context_window_limit == ctx.budget() == 24_000
    assert strategy.agent.model.estimate_utilization(12_000) == 0.5


# ----- (e) the runner, the log, the process

def test_conversion_is_once_per_message(monkeypatch):
    """O(new messages): each logged message is converted to Strands' format once, however many requests follow."""
    from strategies.adapters import strands as adapter

    converted: list[int] = []
    append = adapter.History.append
    monkeypatch.setattr(adapter.History, "append", lambda self, m, i: converted.append(i) or append(self, m, i))
    strategy, ctx = _adapter(SLIDING, {"per_turn": True, "window_size": 1000}, [])
    tool_steps(ctx, strategy, 30, 30)
    strategy.before_request(ctx)
    assert sorted(converted) == sorted(set(converted)) == sorted(ctx.view.ids)


def test_an_edit_by_another_strategy_rebuilds_strands_history_from_the_view():
    """Ours: a view op the manager did not make (a composed strategy's) is seen at the next request."""
    strategy, ctx = _adapter(SLIDING, {"window_size": 4, "per_turn": True}, _history("parallel")[:3])
    strategy.before_request(ctx)
    ctx.emit("compaction", step="other", view_ops=[{"op": "drop", "ids": [ctx.view.ids[-1]]}])
    strategy.before_request(ctx)
    assert _shape_strands(strategy.agent.messages) == _sent(ctx)


def test_a_raising_library_ends_that_run_as_error_naming_it(run_suite, monkeypatch):
    from strands.agent.conversation_manager import SlidingWindowConversationManager

    def broken(self, agent, e=None, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(SlidingWindowConversationManager, "reduce_context", broken)
    frame = run_suite("smoke", strategies=f"none,{SLIDING}", window=16_000, task_ids=("big_output-smoke-0",))
    run = frame[frame["strategy"] == SLIDING]
    assert (run["termination"] == "error").all()
    assert all(e.startswith(f"LibraryError: {STRANDS.label} raised in reduce_context: KeyError") for e in run["error"])


DEFAULT_TASKS = ("chained_lookup-3", "work_queue-1")  # both adapters act on both at 32k


def _acts(out: Any, strategy: str) -> int:
    """The reductions an adapter's runs logged (compactions and condensations)."""
    count = 0
    for path in (out / "events").glob(f"*--{strategy}--*.jsonl.gz"):
        count += sum(1 for event in read_events(path) if event["type"] in ("compaction", "condensation"))
    return count


def test_default_tasks_at_a_32k_window_run_act_and_replay_without_strands(run_suite, monkeypatch):
    """Each adapter acts on default-suite tasks at a 32,000-token window (no run in `error`, summaries through the
    summary profile), and every log replays with strands unimportable (the view ops are in the log)."""
    frame = run_suite("default", strategies=f"{SLIDING},{SUMMARIZING}", window=32_000, task_ids=DEFAULT_TASKS)
    assert not (frame["termination"] == "error").any(), frame["error"].tolist()
    out = frame.attrs["out"]
    assert _acts(out, SLIDING) > 0 and _acts(out, SUMMARIZING) > 0
    assert frame[frame["strategy"] == SUMMARIZING]["summarizer_requests"].sum() > 0
    assert set(frame["libraries"].map(tuple)) == {(STRANDS.label,)}
    for name in [m for m in sys.modules if m == "strands" or m.startswith("strands.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "strands", None)
    failed = [p.name for p in sorted((out / "events").glob("*.jsonl.gz")) if not replay_file(p).ok]
    assert failed == []


@pytest.mark.slow
def test_the_default_suite_at_32k_runs_with_every_strategy_and_each_adapter_acts(tmp_path):
    """The whole default suite, `all` and both adapters, at a 32,000-token window: no `error` row, each adapter acts
    at least once, `ctxbench replay` passes on every log."""
    out = tmp_path / "r"
    assert main(["run", "--suite", "default", "--strategies", f"all,{SLIDING},{SUMMARIZING}", "--window", "32000",
                 "--no-progress", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert not [r["run_id"] for r in rows if r["termination"] == "error"]
    assert _acts(out, SLIDING) > 0 and _acts(out, SUMMARIZING) > 0
    assert main(["replay", str(out)]) == 0


def test_running_strands_leaves_the_process_as_it_was(run_suite):
    """Strands' hook-driven code changes no process setting: warnings filters, environment, the asyncio policy, the
    excepthook; its loggers get a NullHandler only (a library's own), so its error log does not reach stderr."""
    import logging
    import os
    import warnings

    from strategies.adapters.strands import quiet_library

    quiet_library()
    state = lambda: (sys.excepthook, list(warnings.filters), dict(os.environ),  # noqa: E731
                     type(asyncio.get_event_loop_policy()), logging.getLogger().handlers[:])
    before = state()
    run_suite("default", strategies=SUMMARIZING, window=32_000, task_ids=("chained_lookup-3",))
    assert state() == before
    assert all(isinstance(h, logging.NullHandler) for h in logging.getLogger("strands").handlers)
