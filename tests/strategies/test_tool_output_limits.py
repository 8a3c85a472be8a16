"""ToolOutputLimits (seed 002) and the mock agent's paging: each test names the rule it checks."""
from __future__ import annotations

import json
import re

import pytest
from transcripts import exchange, make_ctx, user

from harness.conversation.events import event_log_name, read_events
from harness import api
from harness.core.errors import ConfigError
from harness.models.mock.agents.common import Knobs, Visible
from harness.models.mock.agents.reading import page_call, reading
from harness.conversation.replay import replay_file
from strategies import StrategySpec, build_strategy
from strategies.base import Stack
from strategies.tool_output_limits import ToolOutputLimits
from tasks.base import ToolCall, ToolResult

BIG = "".join(f"line {i:05d} {'x' * 40}\n" for i in range(1_000))  # 52,000 characters
SPILL = re.compile(r"\[Tool output too large \(([\d,]+) chars\); stored to handle '([^']+)'\. Read it with "
                   r"read_tool_result\(handle='([^']+)', offset=0, limit=200, from_end=False, pattern=None\)\.\]\n")


def call(name: str, **args) -> ToolCall:
    return ToolCall.from_message({"id": f"c_{name}", "function": {"name": name, "arguments": json.dumps(args)}})


def offload(strategy: ToolOutputLimits, content: str = BIG):
    ctx = make_ctx()
    user(ctx, "task")
    result = strategy.transform_tool_result(ctx, call("read_file", path="big"), ToolResult(content))
    return ctx, result


def test_a_result_over_20000_characters_is_truncated_with_the_contract_notice():
    """'catches results over 20,000 characters before the model sees them' (the seed's threshold); what the
    model sees is pydantic-ai-harness's spill stand-in (tool_output_limits/_capability.py,
    _build_spill_preview / _head_tail_preview): the header naming size and handle, then 500 head and 500
    tail characters around '...[N chars omitted]...'. The old code showed a 20,000-character head."""
    ctx, result = offload(ToolOutputLimits())
    match = SPILL.match(result.content)
    assert match, result.content[:300]
    total, handle, same = match.groups()
    assert int(total.replace(",", "")) == len(BIG) and handle == same
    assert result.content[match.end():] == BIG[:500] + f"\n...[{len(BIG) - 1_000:,} chars omitted]...\n" + BIG[-500:]


def test_results_within_the_limit_pass_unchanged():
    strategy = ToolOutputLimits()
    exact = "y" * 20_000
    ctx, result = offload(strategy, exact)
    assert result.content == exact
    assert not [e for e in ctx.log.events if e["type"] == "tool_output_offloaded"]


def test_offloading_is_lossless_costs_no_model_call_and_is_in_the_event_log():
    """'saved losslessly'; 'It costs no model call'; the store is recorded for replay and audits."""
    strategy = ToolOutputLimits()
    ctx, result = offload(strategy)
    events = [e for e in ctx.log.events if e["type"] == "tool_output_offloaded"]
    assert len(events) == 1 and events[0]["content"] == BIG
    assert events[0]["total_chars"] == len(BIG) and events[0]["tool"] == "read_file"
    assert not [e for e in ctx.log.events if e["type"] == "llm_call"]
    handle = events[0]["result_id"]
    assert SPILL.match(result.content).group(2) == handle
    pages, offset = [], 0
    while True:
        page = strategy.handle_tool_call(ctx, call("read_tool_result", handle=handle, offset=offset)).content
        header, _, body = page.partition("\n")
        assert header.startswith(f"[handle '{handle}': 1,000 matching line(s); showing ")
        shown = int(header.rsplit(" ", 1)[1].rstrip("]"))
        if not shown:
            break
        pages.append(body)
        offset += shown
    assert "\n".join(pages) + "\n" == BIG


def test_read_tool_result_pages_in_lines_from_either_end_with_a_pattern():
    """read_tool_result(handle, offset=0, limit=200, from_end=False, pattern=None) of pydantic-ai-harness
    (_capability.py, _read_slice): lines, a literal-substring filter, counted from the end on request."""
    strategy = ToolOutputLimits()
    ctx, _ = offload(strategy)
    lines = BIG.splitlines()
    first = strategy.handle_tool_call(ctx, call("read_tool_result", handle="result-1")).content
    assert first == "[handle 'result-1': 1,000 matching line(s); showing 200]\n" + "\n".join(lines[:200])
    last = strategy.handle_tool_call(ctx, call("read_tool_result", handle="result-1", offset=2, limit=3,
                                               from_end=True)).content
    assert last.splitlines()[1:] == lines[-5:-2]
    found = strategy.handle_tool_call(ctx, call("read_tool_result", handle="result-1", pattern="line 0099")).content
    assert found.splitlines() == ["[handle 'result-1': 10 matching line(s); showing 10]"] + lines[990:1000]
    null = strategy.handle_tool_call(ctx, call("read_tool_result", handle="result-1", limit=1, pattern=None)).content
    assert null.splitlines()[1:] == lines[:1]


def test_read_tool_result_caps_a_call_at_1000_lines_and_50000_characters():
    """The library's _MAX_READ_LINES = 1,000 and _MAX_READ_CHARS = 50,000 (', output capped')."""
    strategy = ToolOutputLimits()
    ctx, _ = offload(strategy, "".join(f"{i:04d} {'z' * 95}\n" for i in range(2_000)))
    page = strategy.handle_tool_call(ctx, call("read_tool_result", handle="result-1", limit=5_000)).content
    header, _, body = page.partition("\n")
    assert header == "[handle 'result-1': 2,000 matching line(s); showing 1000, output capped]"
    assert len(body) == 50_000


@pytest.mark.parametrize("args, message, is_error", [
    ({"handle": "result-9"}, "No stored tool result for handle 'result-9'", False),
    ({"handle": "result-1", "offset": -1}, "offset must be >= 0", True),
    ({"handle": "result-1", "limit": 0}, "limit must be >= 1", True),
    ({}, "missing required argument 'handle'", True),
    ({"handle": "result-1", "offset": "3"}, "must be of type integer", True),
])
def test_read_tool_result_refuses_bad_calls_clearly(args, message, is_error):
    """A wrong handle is answered, not failed, as the library's _read_slice does; bad numbers are refused."""
    strategy = ToolOutputLimits()
    ctx, _ = offload(strategy)
    result = strategy.handle_tool_call(ctx, call("read_tool_result", **args))
    assert result.is_error == is_error and message in result.content


def test_pages_themselves_are_never_offloaded_again():
    strategy = ToolOutputLimits.from_config({"max_chars": 100})
    ctx, _ = offload(strategy)
    page = strategy.handle_tool_call(ctx, call("read_tool_result", handle="result-1"))
    assert strategy.transform_tool_result(ctx, call("read_tool_result", handle="result-1"), page) is page


def test_max_chars_is_validated():
    with pytest.raises(ConfigError, match="max_chars must be at least 1"):
        build_strategy(StrategySpec("tool_output_limits", {"max_chars": 0}))


def test_composable_with_any_strategy_through_with():
    """'Compose it with any strategy': the ladder plus ToolOutputLimits offers read_tool_result."""
    stacked = build_strategy(StrategySpec("compaction_ladder", {"preset": "tiny", "with": ["tool_output_limits"]}))
    assert isinstance(stacked, Stack)
    assert "read_tool_result" in [tool.name for tool in stacked.tools()]


# ----- the mock agent follows the paging hint


def test_visible_page_call_asks_for_the_next_unseen_part():
    """Mock agent: on a spilled result it pages with read_tool_result(handle, offset, limit) in lines."""
    strategy = ToolOutputLimits.from_config({"max_chars": 1_000})
    ctx, spilled = offload(strategy)
    exchange(ctx, "read_file", {"path": "big"}, spilled.content)
    tools = [spec.schema() for spec in strategy.tools()]
    visible = Visible(ctx.view.to_messages(), tools, seed=0, knobs=Knobs())
    args = page_call(visible, reading(visible, visible.exchanges[-1]))
    assert args is not None and args["handle"] == "result-1"
    assert args["offset"] == BIG[:500].count("\n"), "it reads on from the first line its preview did not show whole"
    page = strategy.handle_tool_call(ctx, call("read_tool_result", **args))
    exchange(ctx, "read_tool_result", args, page.content)
    visible = Visible(ctx.view.to_messages(), tools, seed=0, knobs=Knobs())
    following = page_call(visible, reading(visible, visible.exchanges[0]))
    assert following is None or following["offset"] > args["offset"], "it reads on, never the same page again"
    without_tool = Visible(ctx.view.to_messages(), [], seed=0, knobs=Knobs())
    assert page_call(without_tool, reading(without_tool, without_tool.exchanges[0])) is None


def test_chained_lookup_agent_pages_through_offloaded_files_and_succeeds(tmp_path):
    """Seed: 'the model gets a truncated version, with the read_tool_result tool to page through the rest
    on demand' — the simulated agent pages only until the record it needs is visible."""
    suite = tmp_path / "big.jsonl"
    suite.write_text(json.dumps({"task_id": "big-0", "family": "chained_lookup", "seed": 101,
                                 "params": {"hops": 8, "files": 5, "distractors": 30, "filler_lines": 30}}) + "\n")
    out = api.run(str(suite), strategies=["none", "tool_output_limits"], profiles=api.mock_profiles(), out=tmp_path / "o")
    rows = {r["strategy"]: r for r in map(json.loads, (out / "runs.jsonl").read_text().splitlines())}
    limited = rows["tool_output_limits"]
    assert limited["success"] and limited["tool_outputs_offloaded"] >= 1
    assert limited["tool_output_offloaded_chars"] > 0
    assert rows["none"]["success"]
    events = read_events(out / "events" / event_log_name("big-0--tool_output_limits--s0"))
    shown = [len(e["message"]["content"]) for e in events if e["type"] == "message" and e.get("origin") == "tool"
             and e["message"].get("name") != "read_tool_result"]
    assert max(shown) <= 20_000, "no tool result reaches the model over the limit (pages are the reader's own)"
    pages = [c for e in events if e["type"] == "message" and e.get("origin") == "agent"
             for c in e["message"].get("tool_calls") or () if c["function"]["name"] == "read_tool_result"]
    assert pages
    assert replay_file(out / "events" / event_log_name("big-0--tool_output_limits--s0")).ok
