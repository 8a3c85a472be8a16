"""Inspect AI compaction adapters (strategies/adapters/inspect_ai.py) against inspect-ai itself.

Sources: inspect_ai/model/_compaction/_compaction.py `compaction()` (the handler react() drives),
edit.py `CompactionEdit.compact`, trim.py `CompactionTrim.compact` (-> _trim.py `trim_messages`),
summary.py `CompactionSummary.compact`, agent/_react.py `_model_generate` / `_handle_overflow`.
"""
from __future__ import annotations

import asyncio
import inspect as pyinspect
import json
import logging
import os
import sys
import warnings
from typing import Any

import pytest

from harness.core.errors import ConfigError
from harness.conversation.replay import replay_file
from strategies import StrategySpec, build_strategy
from strategies.adapters import INSPECT_AI, Library
from tests.adapter_helpers import requires, tool_steps, user_turns
from tests.reset_helpers import context, success, tool_call

pytestmark = requires(INSPECT_AI)

ADAPTERS = ["inspect.compaction_edit", "inspect.compaction_trim", "inspect.compaction_summary"]
LOW = {name: {"threshold": 8000} for name in ADAPTERS}


def _replays(out) -> list[str]:
    paths = sorted((out / "events").glob("*.jsonl.gz"))
    assert paths
    return [f"{p.name}: {replay_file(p).mismatches}" for p in paths if not replay_file(p).ok]


# ----- (a) end to end, replay without the library

def test_smoke_suite_runs_and_replays_without_inspect(run_suite, monkeypatch):
    """Each adapter runs the smoke suite (library defaults, and a threshold low enough to compact);
    every log replays with inspect_ai unimportable (the view ops are in the log)."""
    frame = run_suite("smoke", strategies=",".join(ADAPTERS), strategy_configs=LOW)
    # Inspect's own RuntimeError "Compaction insufficient" on big_output's one 26k-token result
    # (_compaction.py _perform_compaction) is the only failure, a strategy_failed naming the library.
    assert not (frame["termination"] == "error").any(), frame["error"].tolist()
    gave_up = frame[frame["termination"] == "strategy_failed"]
    assert set(gave_up["family"]) <= {"big_output"}
    assert all("inspect-ai 0.3.285" in e and "Compaction insufficient" in e for e in gave_up["error"])
    assert (frame[frame["family"] != "big_output"]["success"]).all()
    assert frame[frame["strategy"] == "inspect.compaction_summary"]["summarizer_requests"].sum() > 0
    for name in [m for m in sys.modules if m == "inspect_ai" or m.startswith("inspect_ai.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # any import of it now fails
    assert _replays(frame.attrs["out"]) == []


# ----- (b) the view ctxbench sends equals what Inspect returns for the same messages

def _history(kind: str) -> list[dict[str, Any]]:
    """Crafted histories after the system prompt and first user message of tests.reset_helpers.context."""
    big = "x" * 30_000
    if kind == "parallel":
        return [
            {"role": "assistant", "content": "two at once", "tool_calls": [tool_call("a1", "read", {"f": 1}),
                                                                            tool_call("a2", "read", {"f": 2})]},
            {"role": "tool", "tool_call_id": "a1", "name": "read", "content": "one " * 800},
            {"role": "tool", "tool_call_id": "a2", "name": "read", "content": "two " * 800},
            {"role": "assistant", "content": "", "tool_calls": [tool_call("b1", "grep", {"q": "k"})]},
            {"role": "tool", "tool_call_id": "b1", "name": "grep", "content": "three " * 800},
            {"role": "assistant", "content": "", "tool_calls": [tool_call("c1", "read", {"f": 3}),
                                                                 tool_call("c2", "note", {"t": "n"})]},
            {"role": "tool", "tool_call_id": "c1", "name": "read", "content": "four " * 800},
            {"role": "tool", "tool_call_id": "c2", "name": "note", "content": "five " * 800},
        ]
    if kind == "big":
        return [
            {"role": "assistant", "content": "", "tool_calls": [tool_call("d1", "fetch", {"u": "a"})]},
            {"role": "tool", "tool_call_id": "d1", "name": "fetch", "content": big},
            {"role": "assistant", "content": "", "tool_calls": [tool_call("d2", "fetch", {"u": "b"})]},
            {"role": "tool", "tool_call_id": "d2", "name": "fetch", "content": "short"},
            {"role": "assistant", "content": "", "tool_calls": [tool_call("d3", "fetch", {"u": "c"})]},
            {"role": "tool", "tool_call_id": "d3", "name": "fetch", "content": "y" * 4000},
            {"role": "assistant", "content": "", "tool_calls": [tool_call("d4", "fetch", {"u": "d"})]},
            {"role": "tool", "tool_call_id": "d4", "name": "fetch", "content": "z" * 4000},
        ]
    return user_turns(4, 1500)[:-1]


def _inspect_messages(messages: list[dict[str, Any]]) -> list[Any]:
    """The same messages in Inspect's types, converted here independently of the adapter."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    out = []
    for n, m in enumerate(messages):
        if m["role"] == "system":
            out.append(ChatMessageSystem(id=f"m{n}", content=m["content"]))
        elif m["role"] == "user":
            out.append(ChatMessageUser(id=f"m{n}", content=m["content"]))
        elif m["role"] == "tool":
            out.append(ChatMessageTool(id=f"m{n}", content=m["content"], tool_call_id=m["tool_call_id"],
                                       function=m["name"]))
        else:
            calls = [ToolCall(id=c["id"], function=c["function"]["name"],
                              arguments=json.loads(c["function"]["arguments"])) for c in m.get("tool_calls") or ()]
            out.append(ChatMessageAssistant(id=f"m{n}", content=m["content"], tool_calls=calls or None))
    return out


def _shape(message: Any) -> tuple:
    """A message as (role, text, tool calls with arguments, tool_call_id), from either side."""
    if isinstance(message, dict):
        calls = tuple((c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                      for c in message.get("tool_calls") or ())
        return message["role"], message.get("content") or "", calls, message.get("tool_call_id")
    calls = tuple((c.id, c.function, c.arguments) for c in message.tool_calls or ()) \
        if message.role == "assistant" else ()
    text = message.content if isinstance(message.content, str) else message.text
    return message.role, text, calls, getattr(message, "tool_call_id", None)


def _library_view(strategy: Any, messages: list[dict[str, Any]]) -> list[Any]:
    """Inspect's own handler on the messages (model: Inspect's mockllm, threshold in tokens)."""
    from inspect_ai.model import get_model
    from inspect_ai.model._compaction import compaction

    converted = _inspect_messages(messages)
    handler = compaction(strategy, prefix=converted[:2], tools=[], model=get_model("mockllm/model"))
    return asyncio.run(handler.compact_input(converted))[0]


def _just_under(messages: list[dict[str, Any]]) -> int:
    """A threshold one token under the whole history as Inspect counts it (so it must compact)."""
    from inspect_ai.model import get_model
    from tests.reset_helpers import SYSTEM

    full = [SYSTEM, {"role": "user", "content": "Do the task."}, *messages]
    return asyncio.run(get_model("mockllm/model").count_tokens(_inspect_messages(full))) - 1


def _logged(ctx: Any) -> list[dict[str, Any]]:
    """The run's own messages as logged (not those a strategy made), in order: the agent's history."""
    return [ctx.view.messages[i] for i in sorted(ctx.view.messages) if ctx.view.origins[i] != "strategy"]


def _adapter_view(name: str, config: dict[str, Any], messages: list[dict[str, Any]]) -> tuple[Any, list[dict]]:
    strategy = build_strategy(StrategySpec(name, config))
    ctx = context()
    for message in messages:
        ctx.add_message(message, origin="agent" if message["role"] == "assistant" else "tool")
    strategy.before_request(ctx)
    return ctx, ctx.view.to_messages()


@pytest.mark.parametrize("kind", ["parallel", "big", "turns"])
@pytest.mark.parametrize("config", [{}, {"keep_tool_uses": 1},
                                    {"keep_tool_inputs": False, "exclude_tools": ["note"]}])
def test_edit_view_equals_inspects_compaction_edit(kind, config):
    """edit.py CompactionEdit.compact through _compaction.py compaction(): the same messages out."""
    from inspect_ai.model import CompactionEdit

    config = {**config, "threshold": _just_under(_history(kind))}
    ctx, sent = _adapter_view("inspect.compaction_edit", config, _history(kind))
    expected = _library_view(CompactionEdit(**config), _logged(ctx))
    assert [_shape(m) for m in sent] == [_shape(m) for m in expected]
    assert any(e["type"] == "compaction" and e["step"] == "edit" for e in ctx.log.events)


@pytest.mark.parametrize("kind", ["parallel", "big", "turns"])
@pytest.mark.parametrize("preserve", [0.8, 0.3, 0.0])
def test_trim_view_equals_inspects_compaction_trim(kind, preserve):
    """trim.py CompactionTrim.compact (-> _trim.py trim_messages): the same messages out; messages
    Inspect kept unchanged keep their ctxbench identity (no replace op names them)."""
    from inspect_ai.model import CompactionTrim

    messages = _history(kind)
    threshold = _just_under(messages)
    ctx, sent = _adapter_view("inspect.compaction_trim", {"threshold": threshold, "preserve": preserve}, messages)
    expected = _library_view(CompactionTrim(threshold=threshold, preserve=preserve), _logged(ctx))
    assert [_shape(m) for m in sent] == [_shape(m) for m in expected]
    event = next(e for e in ctx.log.events if e["type"] == "compaction")
    replaced = {op["id"] for op in event["view_ops"] if op["op"] == "replace"}
    assert all(ctx.view.message(i) is ctx.view.messages[i] for i in ctx.view.ids if i not in replaced)


@pytest.mark.parametrize("kind", ["parallel", "big", "turns"])
def test_summary_view_is_inspects_preamble_plus_summary_via_summary_profile(kind):
    """summary.py CompactionSummary.compact: system + input + the summary (a new user message, its
    text Inspect's wrapper around what the `summary` profile wrote); logged as a condensation."""
    from inspect_ai.model import CompactionSummary

    messages = _history(kind)
    threshold = _just_under(messages)
    ctx, sent = _adapter_view("inspect.compaction_summary", {"threshold": threshold}, messages)
    expected = _library_view(CompactionSummary(threshold=threshold), _logged(ctx))
    assert [_shape(m) for m in sent[:-1]] == [_shape(m) for m in expected[:-1]]
    calls = [e for e in ctx.log.events if e["type"] == "llm_call" and e["profile"] == "summary"]
    assert len(calls) == 1 and calls[0]["ok"]
    condensation = next(e for e in ctx.log.events if e["type"] == "condensation")
    assert condensation["kind"] == "summary" and condensation["summary_id"] == ctx.view.ids[-1]
    assert set(condensation["forgotten_ids"]) == set(range(2, 2 + len(messages)))
    assert sent[-1]["role"] == "user" and sent[-1]["content"].startswith("[CONTEXT COMPACTION SUMMARY]")
    assert "USER_CONTEXT" in sent[-1]["content"]  # the mock summarizer's reply, wrapped by Inspect


def test_appending_after_compaction_matches_a_live_react_loop():
    """_compaction.py compact_fn keeps the compacted input and appends to it until the next trigger:
    after a compaction, new messages join the view with no view op, and the handler sees only them."""
    from inspect_ai.model import CompactionEdit

    threshold = _just_under(_history("parallel"))
    strategy = build_strategy(StrategySpec("inspect.compaction_edit", {"threshold": threshold}))
    ctx = context()
    for message in _history("parallel"):
        ctx.add_message(message, origin="tool")
    strategy.before_request(ctx)
    edits = ctx.view.edits
    success(ctx, strategy, {"role": "assistant", "content": "", "tool_calls": [tool_call("e1", "read", {"f": 9})]},
            input_tokens=ctx.prompt_tokens_estimate())
    ctx.add_message({"role": "tool", "tool_call_id": "e1", "name": "read", "content": "small"}, origin="tool")
    strategy.before_request(ctx)
    assert ctx.view.edits == edits
    reference = _logged(ctx)
    assert len(_library_view(CompactionEdit(threshold=threshold), reference)) == len(ctx.view.ids)


# ----- (c) configuration

@pytest.mark.parametrize("name, cls", [("inspect.compaction_edit", "CompactionEdit"),
                                       ("inspect.compaction_trim", "CompactionTrim"),
                                       ("inspect.compaction_summary", "CompactionSummary")])
def test_defaults_are_inspects(name, cls):
    """Every parameter of Inspect's constructor is a config field with Inspect's default."""
    import inspect_ai.model as model

    strategy = build_strategy(StrategySpec(name, {}))
    params = pyinspect.signature(getattr(model, cls).__init__).parameters
    fields = {k: v for k, v in vars(strategy.config).items()}
    assert set(fields) == set(params) - {"self"}
    assert all(fields[k] == p.default for k, p in params.items() if k != "self")
    assert type(strategy.compaction).__name__ == cls


@pytest.mark.parametrize("name, config, key", [
    ("inspect.compaction_edit", {"threshold": "high"}, "threshold"),
    ("inspect.compaction_edit", {"threshold": 0}, "threshold"),
    ("inspect.compaction_edit", {"keep_thinking_turns": "some"}, "keep_thinking_turns"),
    ("inspect.compaction_edit", {"keep_tool_uses": 1.5}, "keep_tool_uses"),
    ("inspect.compaction_trim", {"preserve": 1.5}, "preserve"),  # Inspect's own check (_trim.py)
    ("inspect.compaction_summary", {"prompt": 3}, "prompt"),
    ("inspect.compaction_summary", {"modle": "x"}, "modle"),
])
def test_bad_config_is_a_config_error_naming_the_key(name, config, key):
    with pytest.raises(ConfigError, match=key):
        build_strategy(StrategySpec(name, config))


def test_missing_library_names_the_extra(monkeypatch):
    monkeypatch.setattr(Library, "version", lambda self: None)
    with pytest.raises(ConfigError, match=r"\.\[inspect\]"):
        build_strategy(StrategySpec("inspect.compaction_edit", {}))


def test_fractional_threshold_is_of_ctxbench_main_budget():
    """_compaction.py _resolve_threshold: a fraction is of get_model_input_tokens(model), which for
    the adapter's model is the main profile's budget (ctx.budget()), not Inspect's model table."""
    from inspect_ai.model._compaction._compaction import _resolve_threshold
    from inspect_ai.model._model_info import get_model_input_tokens

    strategy = build_strategy(StrategySpec("inspect.compaction_edit", {"threshold": 0.5}))
    ctx = context(max_input_tokens=40_000)
    strategy.before_request(ctx)
    assert get_model_input_tokens(strategy.model) == ctx.budget()
    assert _resolve_threshold(strategy.model, 0.5) == ctx.budget() // 2


# ----- (d) isolation, errors, incremental conversion

def _process_state() -> tuple:
    def handlers():
        loggers = [logging.getLogger()] + [v for v in logging.root.manager.loggerDict.values()
                                           if isinstance(v, logging.Logger) and not v.name.startswith("botocore")]
        return {(lg.name, lg.level, tuple(map(id, lg.handlers)), lg.propagate) for lg in loggers}
    return (sys.excepthook, list(warnings.filters), dict(os.environ), type(asyncio.get_event_loop_policy()),
            handlers())


def test_running_inspect_leaves_ctxbench_process_unchanged(run_suite):
    """Model.__init__ -> platform_init installs Inspect's sys.excepthook (_util/error.py): undone.
    Logging, warnings filters, environment and the asyncio policy stay as they were."""
    import strategies.adapters.inspect_ai  # noqa: F401
    import inspect_ai.model  # noqa: F401  (its import-time effects are part of what is checked)

    before = _process_state()
    run_suite("smoke", strategies="inspect.compaction_summary",
              strategy_configs={"inspect.compaction_summary": LOW["inspect.compaction_summary"]})
    after = _process_state()
    assert after[0] is before[0]
    assert after[1:4] == before[1:4]
    assert after[4] >= before[4] and not {h for h in after[4] - before[4] if h[2]}


def test_a_raising_library_ends_that_run_as_error_and_others_go_on(run_suite, monkeypatch):
    from inspect_ai.model import CompactionEdit

    async def broken(self, model, messages, tools):
        raise KeyError("boom")

    monkeypatch.setattr(CompactionEdit, "compact", broken)
    frame = run_suite("smoke", strategies="none,inspect.compaction_edit",
                      strategy_configs={"inspect.compaction_edit": {"threshold": 500}})
    edit = frame[frame["strategy"] == "inspect.compaction_edit"]
    assert (edit["termination"] == "error").all()
    assert all(e.startswith("LibraryError: inspect-ai 0.3.285 raised in compact_input: KeyError") for e in edit["error"])
    assert (frame[frame["strategy"] == "none"]["success"]).all()


def test_compaction_insufficient_ends_the_run_strategy_failed_not_error(run_suite):
    """Inspect's compaction handler raising its RuntimeError "Compaction insufficient ... Consider using a lower
    compaction threshold" (the strategy cannot fit its threshold) is the strategy's failure: the run ends
    strategy_failed with Inspect's message, success false, not transient."""
    frame = run_suite("smoke", strategies="inspect.compaction_edit",
                      strategy_configs={"inspect.compaction_edit": LOW["inspect.compaction_edit"]})
    big = frame[frame["family"] == "big_output"]
    assert len(big) and (big["termination"] == "strategy_failed").all(), big[["termination", "error"]]
    assert all(e.startswith("StrategyFailed: inspect-ai") and "Compaction insufficient" in e
               and "lower compaction threshold" in e for e in big["error"])
    assert not big["success"].any() and not big["transient"].any()


def test_conversion_is_once_per_message(monkeypatch):
    """O(new messages): each logged message is converted to Inspect's types once, however many
    requests follow (the history is extended, never rebuilt)."""
    from strategies.adapters import inspect_ai as adapter

    converted: list[int] = []
    original = adapter.to_inspect
    monkeypatch.setattr(adapter, "to_inspect", lambda message, cid: converted.append(cid) or original(message, cid))
    strategy = build_strategy(StrategySpec("inspect.compaction_edit", {"threshold": 3000}))
    ctx = context()
    tool_steps(ctx, strategy, 30, 300)
    assert any(e["type"] == "compaction" for e in ctx.log.events)
    assert sorted(converted) == sorted(set(converted)) == [i for i in sorted(ctx.view.messages)][:len(converted)]
