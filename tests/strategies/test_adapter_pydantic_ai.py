"""The pydantic-ai-harness adapters (strategies/adapters/pydantic_ai.py) against the real library.

Sources: pydantic_ai_harness/compaction/_tiered_compaction.py (TieredCompaction.before_model_request),
_clear_tool_results.py, _clamp_oversized_messages.py, _sliding_window_compaction.py;
tool_output_limits/_capability.py (after_tool_execute, _build_spill_preview, _read_slice);
warn_on_cache_busts/_capability.py (after_model_request).
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import warnings

import pytest

from harness.core.errors import ConfigError
from harness.models.llm import LLMResult
from harness.models.usage import Usage
from harness.conversation.replay import replay_file
from strategies import StrategySpec, build_strategy
from strategies.adapters import PYDANTIC_AI_HARNESS, Library
from tasks.base import ToolCall, ToolResult
from tests.adapter_helpers import requires
from tests.reset_helpers import context, tool_call

pytestmark = requires(PYDANTIC_AI_HARNESS)

ADAPTERS = "pai.tiered_compaction,pai.tool_output_limits"


def build(name: str, config: dict | None = None):
    return build_strategy(StrategySpec(name, config or {}))


# ----- (a) end to end, and replay without the library ---------------------------------------------
def test_smoke_suite_runs_and_every_log_replays_without_the_library(run_suite, monkeypatch):
    """Each adapter runs the smoke suite (warn_on_cache_busts composed through `with`); a small
    target and small tiers force TieredCompaction to compact (the default keeps 6 pairs and 20
    messages, more than a smoke task has); replay rebuilds every view with the library's import
    blocked (the view ops and spilled texts are in the log)."""
    tiers = [{"kind": "clamp_oversized_messages"}, {"kind": "clear_tool_results", "keep_pairs": 1},
             {"kind": "sliding_window", "keep_messages": 6}]
    configs = {"pai.tiered_compaction": {"target_tokens": 1_500, "tiers": tiers, "with": ["pai.warn_on_cache_busts"]}}
    frame = run_suite("smoke", strategies=ADAPTERS, strategy_configs=configs)
    assert (frame["termination"] != "error").all(), frame[["strategy", "error"]]
    tiered = frame[frame["strategy"] == "pai.tiered_compaction"]
    assert tiered["compactions"].sum() > 0
    assert frame[frame["strategy"] == "pai.tool_output_limits"]["tool_outputs_offloaded"].sum() > 0
    for name in [m for m in sys.modules if m.split(".")[0] in ("pydantic_ai", "pydantic_ai_harness")]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it now raises
    for path in sorted((frame.attrs["out"] / "events").glob("*.jsonl.gz")):
        report = replay_file(path)
        assert report.ok and report.checked > 0, (path, report.mismatches)


# ----- (b) the view ctxbench sends equals the library's own answer ---------------------------------
def pai_messages(chat: list[dict], usages: dict[int, Usage]):
    """Independent conversion (the test's own): chat messages to pydantic-ai messages."""
    from pydantic_ai import messages as m
    from pydantic_ai.usage import RequestUsage
    out: list = []
    for index, message in enumerate(chat):
        role = message["role"]
        if role == "assistant":
            parts = [m.TextPart(message["content"])] if message.get("content") else []
            parts += [m.ToolCallPart(c["function"]["name"], c["function"]["arguments"], tool_call_id=c["id"])
                      for c in message.get("tool_calls") or ()]
            u = usages.get(index)
            usage = RequestUsage(input_tokens=u.input_tokens, output_tokens=u.output_tokens) if u else RequestUsage()
            out.append(m.ModelResponse(parts=parts, usage=usage))
            continue
        part = {"system": lambda: m.SystemPromptPart(message["content"]),
                "user": lambda: m.UserPromptPart(message["content"]),
                "tool": lambda: m.ToolReturnPart(message["name"], message["content"],
                                                 tool_call_id=message["tool_call_id"])}[role]()
        if out and isinstance(out[-1], m.ModelRequest):
            out[-1] = m.ModelRequest(parts=[*out[-1].parts, part])
        else:
            out.append(m.ModelRequest(parts=[part]))
    return out


def flat_library(messages) -> list[tuple]:
    """The library's history as comparable rows: (role, text, tool call ids and args)."""
    from pydantic_ai import messages as m
    rows = []
    for message in messages:
        if isinstance(message, m.ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, m.TextPart))
            calls = tuple((p.tool_call_id, json.loads(p.args_as_json_str())) for p in message.parts
                          if isinstance(p, m.ToolCallPart))
            rows.append(("assistant", text or None, calls))
        else:
            for p in message.parts:
                role = {m.SystemPromptPart: "system", m.ToolReturnPart: "tool"}.get(type(p), "user")
                rows.append((role, str(p.content), ()))
    return rows


def flat_view(ctx) -> list[tuple]:
    rows = []
    for message in ctx.view.to_messages():
        calls = tuple((c["id"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or ())
        rows.append((message["role"], message.get("content") or None if message["role"] == "assistant"
                     else message.get("content"), calls))
    return rows


def library_answer(capability, chat: list[dict], usages: dict[int, Usage]):
    """Call the library's TieredCompaction.before_model_request directly, as a live agent does."""
    from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.tools import RunContext
    from pydantic_ai.usage import RunUsage
    history = pai_messages(chat, usages)
    model = FunctionModel(lambda *_: None)
    pctx = RunContext(deps=None, model=model, usage=RunUsage(), messages=list(history))
    request = ModelRequestContext(model=model, messages=list(history), model_settings=None,
                                  model_request_parameters=ModelRequestParameters())
    asyncio.run(capability.before_model_request(pctx, request))
    return pctx.messages


def drive(strategy, steps: list[tuple[dict, list[dict], int]]):
    """A crafted run: each step is (assistant reply, tool results, reported input tokens); a step whose
    reply is None is a user turn given in its tool list. The adapter runs before every request."""
    ctx = context()
    chat = [ctx.view.message(i) for i in ctx.view.ids]
    usages: dict[int, Usage] = {}
    strategy.on_run_start(ctx)
    for reply, followers, input_tokens in steps:
        strategy.before_request(ctx)
        if reply is not None:
            respond(ctx, strategy, reply, input_tokens)
            chat.append(reply)
        for message in followers:
            ctx.add_message(message, origin="tool" if message["role"] == "tool" else "user")
            chat.append(message)
    return ctx, chat, usages


def respond(ctx, strategy, reply: dict, input_tokens: int) -> None:
    """A successful main request as the runner records it, with the provider's input and output tokens."""
    output = len(json.dumps(reply)) // 4
    result = LLMResult(reply, Usage(input_tokens=input_tokens, output_tokens=output), None, None, 0.0)
    ctx.record_response({"profile": "main"}, result)
    strategy.after_response(ctx, result)


def big_tool_step(n: int, size: int, parallel: int = 1, input_tokens: int = 0):
    calls = [tool_call(f"c{n}-{k}", "read_file", {"path": f"f{n}-{k}"}) for k in range(parallel)]
    results = [{"role": "tool", "tool_call_id": c["id"], "name": "read_file", "content": f"{n}-{k} " + "x" * size}
               for k, c in enumerate(calls)]
    return {"role": "assistant", "content": f"step {n}", "tool_calls": calls}, results, input_tokens


HISTORIES = {
    # parallel tool calls with big outputs: ClearToolResults keeps the last keep_pairs pairs
    "parallel_big_outputs": [big_tool_step(n, 8_000, parallel=3, input_tokens=6_000 * (n + 1)) for n in range(6)],
    # several user turns between tool work
    "user_turns": [s for n in range(5) for s in (
        big_tool_step(n, 12_000, input_tokens=3_500 * (n + 1)),
        ({"role": "assistant", "content": f"answer {n}"}, [{"role": "user", "content": f"next question {n}"}],
         3_500 * (n + 1) + 100))],
    # a runaway assistant text: ClampOversizedMessages keeps 2,000 + 2,000 characters
    "runaway_text": [big_tool_step(0, 100, input_tokens=500),
                     ({"role": "assistant", "content": "y" * 300_000}, [{"role": "user", "content": "go on"}], 600),
                     big_tool_step(1, 100, input_tokens=80_000)],
    # many small messages: SlidingWindowCompaction cuts to the tail, first user message kept
    "many_messages": [big_tool_step(n, 10, input_tokens=1_000 * (n + 1)) for n in range(60)],
}


@pytest.mark.parametrize("history", sorted(HISTORIES))
def test_view_equals_what_tiered_compaction_returns(history):
    """The view sent is exactly TieredCompaction's own output for the same messages and usage
    (_tiered_compaction.py before_model_request), on each crafted history."""
    config = {"target_tokens": 10_000,
              "tiers": [{"kind": "clamp_oversized_messages", "max_part_chars": 50_000},
                        {"kind": "clear_tool_results", "keep_pairs": 2},
                        {"kind": "sliding_window", "max_messages": 60, "keep_messages": 20}]}
    strategy = build("pai.tiered_compaction", config)
    steps = HISTORIES[history]
    ctx, chat, usages = drive(strategy, steps[:-1])
    # the last request: what the library answers for exactly these messages
    reply, followers, tokens = steps[-1]
    respond(ctx, strategy, reply, tokens)
    chat.append(reply)
    for message in followers:
        ctx.add_message(message, origin="tool")
        chat.append(message)
    sent_before = [ctx.view.message(i) for i in ctx.view.ids]
    usages = {index: strategy.converter.usage[i] for index, i in enumerate(ctx.view.ids)
              if i in strategy.converter.usage}
    strategy.before_request(ctx)
    assert flat_view(ctx) == flat_library(library_answer(strategy.capability, sent_before, usages))
    assert any(e["type"] == "compaction" for e in ctx.log.events)  # the history made the library act


def test_clear_keeps_only_the_last_keep_pairs_and_uses_the_library_placeholder():
    """ClearToolResults.compact clears every returned pair but the last keep_pairs, no size filter
    (_clear_tool_results.py), with its placeholder '[tool result cleared]'."""
    strategy = build("pai.tiered_compaction", {"target_tokens": 5_000, "tiers": [
        {"kind": "clear_tool_results", "keep_pairs": 2}]})
    ctx, _, _ = drive(strategy, [big_tool_step(n, 4_000 if n % 2 else 40, input_tokens=1_500 * (n + 1))
                                 for n in range(8)] + [({"role": "assistant", "content": "done"}, [], 13_000)])
    tools = [ctx.view.message(i)["content"] for i in ctx.view.ids if ctx.view.message(i)["role"] == "tool"]
    assert tools[:-2] == ["[tool result cleared]"] * 6 and all(t != "[tool result cleared]" for t in tools[-2:])
    events = [e for e in ctx.log.events if e["type"] == "compaction"]
    assert {e["step"] for e in events} == {"tiered"} and all(e["reclaimed_tokens"] > 0 for e in events)
    assert sum(len(e["cleared_ids"]) for e in events) == 6


def test_clamp_keeps_2000_plus_2000_characters():
    """ClampOversizedMessages' defaults keep_head_chars=2_000, keep_tail_chars=2_000 with its marker
    (_clamp_oversized_messages.py _clamp)."""
    strategy = build("pai.tiered_compaction", {"target_tokens": 1_000, "tiers": [
        {"kind": "clamp_oversized_messages", "max_part_chars": 10_000}]})
    ctx, _, _ = drive(strategy, HISTORIES["runaway_text"])
    clamped = next(ctx.view.message(i)["content"] for i in ctx.view.ids
                   if ctx.view.message(i)["role"] == "assistant" and "[clamped:" in (ctx.view.message(i)["content"] or ""))
    head, _, rest = clamped.partition("\n[clamped: removed 296000 of 300000 characters]\n")
    assert len(head) == 2_000 and len(rest) == 2_000


def test_conversion_is_incremental_and_keeps_identity(monkeypatch):
    """O(new messages) per request: each message converts once per rendering; unchanged parts keep
    their identity across requests (the rule of incremental conversion, common brief)."""
    from strategies.adapters import pydantic_ai as adapter
    strategy = build("pai.tiered_compaction")
    calls = {"n": 0}
    original = adapter.Converter.to_library

    def counting(self, *args):
        calls["n"] += 1
        return original(self, *args)

    monkeypatch.setattr(adapter.Converter, "to_library", counting)
    ctx, _, _ = drive(strategy, [big_tool_step(n, 10, input_tokens=100) for n in range(20)])
    assert calls["n"] == len(ctx.view.ids) - 2  # the last reply and its result are not yet converted
    first = strategy.converter.messages[0]
    strategy.before_request(ctx)
    assert strategy.converter.messages[0] is first


# ----- (c) config -------------------------------------------------------------------------------------
def test_defaults_are_the_librarys_and_ours_are_marked():
    """A tier given by kind alone takes the library's field defaults (keep_pairs=3, placeholder,
    keep_head/tail 2,000, keep_messages=40); ours only where the library has none (target, triggers)."""
    from pydantic_ai_harness.compaction import ClampOversizedMessages, ClearToolResults, SlidingWindowCompaction
    strategy = build("pai.tiered_compaction", {"tiers": [{"kind": "clamp_oversized_messages"},
                                                         {"kind": "clear_tool_results"}, {"kind": "sliding_window"}]})
    clamp, clear, window = strategy.capability.tiers
    defaults = {cls: {f.name: f.default for f in dataclasses.fields(cls)}
                for cls in (ClampOversizedMessages, ClearToolResults, SlidingWindowCompaction)}
    assert (clamp.keep_head_chars, clamp.keep_tail_chars) == (2_000, 2_000) == (
        defaults[ClampOversizedMessages]["keep_head_chars"], defaults[ClampOversizedMessages]["keep_tail_chars"])
    assert clear.keep_pairs == defaults[ClearToolResults]["keep_pairs"] == 3
    assert clear.placeholder == defaults[ClearToolResults]["placeholder"]
    assert window.keep_messages == defaults[SlidingWindowCompaction]["keep_messages"]
    # ours: the ladder's routine target, half the window (100,000 at 200k) as the library's own target_fraction
    assert (strategy.capability.target_tokens, strategy.capability.target_fraction) == (None, 0.5)
    assert strategy.threshold_values(200_000)["target_tokens"] == 100_000
    default = build("pai.tiered_compaction").capability
    assert [type(t).__name__ for t in default.tiers] == ["ClampOversizedMessages", "ClearToolResults",
                                                         "SlidingWindowCompaction"]
    assert default.tiers[1].keep_pairs == 6 and default.tiers[2].keep_messages == 20


@pytest.mark.parametrize("name,config,named", [
    ("pai.tiered_compaction", {"tiers": [{"kind": "clear_tool_results", "keep_pairs": -1}]}, "tiers[0]"),
    ("pai.tiered_compaction", {"target_tokens": 0}, "target_tokens"),
    ("pai.tiered_compaction", {"target_tokens": 5, "target_fraction": 0.5}, "target_fraction"),
    ("pai.tiered_compaction", {"tiers": [{"kind": "sliding_window", "keep_mesages": 3}]}, "keep_mesages"),
    ("pai.tiered_compaction", {"tiers": [{"kind": "summarize"}]}, "tiers[0].kind"),
    ("pai.tool_output_limits", {"bands": [{"over": -1, "action": {"kind": "spill"}}]}, "bands"),
    ("pai.tool_output_limits", {"bands": [{"over": 5, "action": {"kind": "truncate", "strategy": "middle"}}]},
     "bands[0].action.strategy"),
    ("pai.tool_output_limits", {"colour": 1}, "colour"),
    ("pai.warn_on_cache_busts", {"min_missed_ratio": 1.5}, "min_missed_ratio"),
])
def test_a_bad_value_is_a_config_error_naming_it(name, config, named):
    """The library's own validators (__post_init__) refuse it; ctxbench says where (exit 2)."""
    with pytest.raises(ConfigError, match=named.replace("[", r"\[").replace("]", r"\]")):
        build(name, config)


@pytest.mark.parametrize("name", ["pai.tiered_compaction", "pai.tool_output_limits", "pai.warn_on_cache_busts"])
def test_a_missing_library_names_the_extra(name, monkeypatch):
    monkeypatch.setattr(Library, "version", lambda self: None)
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[pydantic-ai\]'"):
        build(name)


def test_loading_the_library_leaves_warnings_filters_alone():
    """Isolation: the library's imports add warnings filters; load() restores ctxbench's."""
    from strategies.adapters import pydantic_ai as adapter
    before = list(warnings.filters)
    adapter.load("test")
    assert warnings.filters == before


# ----- ToolOutputLimits ---------------------------------------------------------------------------------
def test_tool_output_limits_shows_what_the_library_shows_and_pages_with_its_reader():
    """Default band: spill at 10,000 characters, ~1,200 shown (header, 500 + 500 preview);
    read_tool_result is the library's tool (schema and _read_slice); the full text is in the log."""
    from pydantic_ai import messages as m
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.tools import RunContext, ToolDefinition
    from pydantic_ai.usage import RunUsage
    from pydantic_ai_harness.tool_output_limits import ToolOutputLimits
    from strategies.adapters.pydantic_ai import RunStore
    strategy = build("pai.tool_output_limits")
    ctx = context()
    strategy.on_run_start(ctx)
    text = "\n".join(f"line {i} value-{i * 7}" for i in range(2_000))
    call = ToolCall("call-1", "fetch", "{}", {})
    assert strategy.transform_tool_result(ctx, ToolCall("c0", "fetch", "{}", {}), ToolResult("x" * 9_999)).content \
        == "x" * 9_999
    shown = strategy.transform_tool_result(ctx, call, ToolResult(text)).content
    library = ToolOutputLimits(store=RunStore())
    pctx = RunContext(deps=None, model=FunctionModel(lambda *_: None), usage=RunUsage(), run_id=ctx.run_id)
    expected = asyncio.run(library.after_tool_execute(pctx, call=m.ToolCallPart("fetch", "{}", tool_call_id="call-1"),
                                                      tool_def=ToolDefinition(name="fetch"), args={}, result=text))
    assert shown == expected.return_value and 1_000 < len(shown) < 1_400
    event = next(e for e in ctx.log.events if e["type"] == "tool_output_offloaded")
    assert event["content"] == text and event["total_chars"] == len(text) and event["shown_chars"] == len(shown)
    spec = strategy.tools()[0]
    assert spec.name == "read_tool_result" and set(spec.parameters["properties"]) == {
        "handle", "offset", "limit", "from_end", "pattern"}
    page = strategy.handle_tool_call(ctx, ToolCall("r", "read_tool_result", "", {
        "handle": event["result_id"], "pattern": "value-7007"}))
    assert page.content.startswith(f"[handle {event['result_id']!r}: 1 matching line(s); showing 1]")
    bad = strategy.handle_tool_call(ctx, ToolCall("r", "read_tool_result", "", {"handle": event["result_id"],
                                                                                  "limit": 0}))
    assert bad.is_error and "`limit` must be >= 1" in bad.content


def test_summarize_band_goes_through_the_summary_profile(run_suite):
    """A Summarize band's model call is a side call of the summary profile (summarizer_requests)."""
    configs = {"pai.tool_output_limits": {"bands": [{"over": 10_000, "action": {"kind": "summarize"}}]}}
    frame = run_suite("smoke", strategies="pai.tool_output_limits", strategy_configs=configs)
    assert (frame["termination"] != "error").all(), frame["error"].tolist()
    assert frame["summarizer_requests"].sum() > 0


# ----- WarnOnCacheBusts ---------------------------------------------------------------------------------
def test_warn_on_cache_busts_records_the_librarys_warning():
    """after_model_request's CacheBustWarning (missed >= 2,000 tokens and > 5% of the prefix, once until
    recovery) becomes a cache_bust_warning event; nothing escapes as a Python warning."""
    strategy = build("pai.warn_on_cache_busts")
    assert strategy.standalone is False
    ctx = context()
    strategy.on_run_start(ctx)
    reads = [(0, 5_000), (5_000, 200), (5_200, 100), (100, 5_300), (50, 5_400)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for read, write in reads:
            usage = Usage(input_tokens=read + write + 10, cached_tokens=read, cache_write_tokens=write, output_tokens=5)
            result = LLMResult({"role": "assistant", "content": "ok"}, usage, None, None, 0.0)
            ctx.record_response({"profile": "main"}, result)
            strategy.after_response(ctx, result)
    busts = [e for e in ctx.log.events if e["type"] == "cache_bust_warning"]
    assert len(busts) == 1 and busts[0]["cached_tokens"] == 100 and busts[0]["established_prefix_tokens"] == 5_300


# ----- the library's time ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["pai.tiered_compaction", "pai.warn_on_cache_busts"])
def test_the_request_context_an_adapter_builds_is_not_counted_as_the_librarys_time(name, monkeypatch):
    """Ours: the request context handed to the library is ctxbench's conversion, so its CPU
    stays out of `library_cpu_s` (it was built inside the library's timer); a build made to take 0.3 s of CPU
    must not show there."""
    import time

    import strategies.adapters.pydantic_ai as pai

    built = pai.request_context

    def slow_request_context(*args):
        started = time.thread_time()
        while time.thread_time() - started < 0.3:
            pass
        return built(*args)

    monkeypatch.setattr(pai, "request_context", slow_request_context)
    strategy, ctx = build(name), context()
    strategy.on_run_start(ctx)
    strategy.before_request(ctx)
    respond(ctx, strategy, {"role": "assistant", "content": "done"}, 100)
    assert ctx.library_cpu_s < 0.15


def test_one_run_builds_its_tool_parameters_once_and_anew_for_other_schemas():
    """Ours: the library's ModelRequestParameters are built once per set of tool schemas, and
    hold those schemas."""
    from strategies.adapters.pydantic_ai import ToolParameters, load

    parameters, ctx = ToolParameters(load("test")), context()
    ctx.tools = [{"type": "function", "function": {"name": "read_file", "description": "reads",
                                                   "parameters": {"type": "object"}}}]
    first = parameters.of(ctx)
    assert parameters.of(ctx) is first
    assert [(t.name, t.description, t.parameters_json_schema) for t in first.function_tools] == \
        [("read_file", "reads", {"type": "object"})]
    ctx.tools = [{"type": "function", "function": {"name": "grep"}}]
    assert [t.name for t in parameters.of(ctx).function_tools] == ["grep"]


# ----- a library that raises ---------------------------------------------------------------------------
def test_a_raising_library_ends_that_run_as_error_and_the_others_go_on(run_suite, monkeypatch):
    from pydantic_ai_harness.compaction import TieredCompaction

    async def broken(self, ctx, request_context):
        raise RuntimeError("boom")

    monkeypatch.setattr(TieredCompaction, "before_model_request", broken)
    frame = run_suite("smoke", strategies="none,pai.tiered_compaction")
    errors = frame[frame["strategy"] == "pai.tiered_compaction"]
    assert (errors["termination"] == "error").all()
    assert errors["error"].str.contains("pydantic-ai-harness 0.62.0 raised in TieredCompaction").all()
    assert (frame[frame["strategy"] == "none"]["termination"] != "error").all()
