"""ToolOutputLimits (seed 002) and the mock agent's paging: each test names the rule it checks."""
from __future__ import annotations

import json
import re

import pytest
from transcripts import exchange, make_ctx, user

from harness import api
from harness.errors import ConfigError
from harness.mock.agents.common import Knobs, Visible
from harness.mock.agents.reading import page_call, reading
from harness.replay import replay_file
from strategies import StrategySpec, build_strategy
from strategies.base import Stack
from strategies.tool_output_limits import ToolOutputLimits
from tasks.base import ToolCall, ToolResult

BIG = "".join(f"line {i:05d} {'x' * 40}\n" for i in range(1_000))  # 52,000 characters
NOTICE = re.compile(r'\n\[Output truncated: (\d+) of (\d+) characters shown\. Full output saved as (\S+); '
                    r'call read_tool_result\(result_id="(\S+)", offset=(\d+)\) to read more\.\]$')


def call(name: str, **args) -> ToolCall:
    return ToolCall.from_message({"id": f"c_{name}", "function": {"name": name, "arguments": json.dumps(args)}})


def offload(strategy: ToolOutputLimits, content: str = BIG):
    ctx = make_ctx()
    user(ctx, "task")
    result = strategy.transform_tool_result(ctx, call("read_file", path="big"), ToolResult(content))
    return ctx, result


def test_a_result_over_20000_characters_is_truncated_with_the_contract_notice():
    """'catches results over 20,000 characters before the model sees them': head plus the exact last line."""
    ctx, result = offload(ToolOutputLimits())
    match = NOTICE.search(result.content)
    assert match, result.content[-300:]
    shown, total, result_id, same_id, offset = match.groups()
    assert int(total) == len(BIG) and result_id == same_id and int(offset) == int(shown) <= 20_000
    assert result.content[: match.start()] == BIG[: int(shown)]
    assert result.content.splitlines()[-1] == (
        f"[Output truncated: {shown} of {total} characters shown. Full output saved as {result_id}; "
        f"call read_tool_result(result_id=\"{result_id}\", offset={shown}) to read more.]")


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
    result_id = events[0]["result_id"]
    pages, offset = [], int(NOTICE.search(result.content).group(5))
    pages.append(result.content[: NOTICE.search(result.content).start()])
    while True:
        page = strategy.handle_tool_call(ctx, call("read_tool_result", result_id=result_id, offset=offset)).content
        header = re.match(rf"\[{result_id}: characters (\d+)-(\d+) of {len(BIG)}\]\n", page)
        assert header and int(header.group(1)) == offset
        more = re.search(rf'\n\[More: call read_tool_result\(result_id="{result_id}", offset=(\d+)\) to continue\.\]$',
                         page)
        pages.append(page[header.end(): more.start() if more else len(page)])
        if not more:
            break
        offset = int(more.group(1))
        assert offset == int(header.group(2))
    assert "".join(pages) == BIG


def test_read_tool_result_honours_limit_and_caps_pages_at_max_chars():
    strategy = ToolOutputLimits.from_config({"max_chars": 1_000})
    ctx, _ = offload(strategy)
    small = strategy.handle_tool_call(ctx, call("read_tool_result", result_id="result-1", offset=10, limit=5)).content
    assert small.startswith("[result-1: characters 10-15 of 52000]\n" + BIG[10:15] + "\n[More:")
    capped = strategy.handle_tool_call(ctx, call("read_tool_result", result_id="result-1", limit=50_000)).content
    assert capped.startswith("[result-1: characters 0-1000 of 52000]")


@pytest.mark.parametrize("args, message", [
    ({"result_id": "result-9"}, "no saved output 'result-9'"),
    ({"result_id": "result-1", "offset": 10**6}, "offset 1000000 is outside result-1"),
    ({"result_id": "result-1", "limit": 0}, "limit must be at least 1"),
    ({}, "missing required argument 'result_id'"),
    ({"result_id": "result-1", "offset": "3"}, "must be of type integer"),
])
def test_read_tool_result_refuses_bad_calls_clearly(args, message):
    strategy = ToolOutputLimits()
    ctx, _ = offload(strategy)
    result = strategy.handle_tool_call(ctx, call("read_tool_result", **args))
    assert result.is_error and message in result.content


def test_pages_themselves_are_never_offloaded_again():
    strategy = ToolOutputLimits.from_config({"max_chars": 100})
    ctx, _ = offload(strategy)
    page = strategy.handle_tool_call(ctx, call("read_tool_result", result_id="result-1"))
    assert strategy.transform_tool_result(ctx, call("read_tool_result", result_id="result-1"), page) is page


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
    """Mock agent: on a truncated result it pages with read_tool_result from where its view ends."""
    strategy = ToolOutputLimits.from_config({"max_chars": 1_000})
    ctx, truncated = offload(strategy)
    exchange(ctx, "read_file", {"path": "big"}, truncated.content)
    tools = [spec.schema() for spec in strategy.tools()]
    visible = Visible(ctx.view.to_messages(), tools, seed=0, knobs=Knobs())
    args = page_call(visible, reading(visible, visible.exchanges[-1]))
    shown = int(NOTICE.search(truncated.content).group(1))
    assert args == {"result_id": "result-1", "offset": shown}
    page = strategy.handle_tool_call(ctx, call("read_tool_result", **args))
    exchange(ctx, "read_tool_result", args, page.content)
    visible = Visible(ctx.view.to_messages(), tools, seed=0, knobs=Knobs())
    assert reading(visible, visible.exchanges[0]).text == BIG[: shown + 1_000]
    assert page_call(visible, reading(visible, visible.exchanges[0]))["offset"] == shown + 1_000
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
    events = [json.loads(line) for line in (out / "events" / "big-0--tool_output_limits--s0.jsonl").open()]
    shown = [len(e["message"]["content"]) for e in events if e["type"] == "message" and e.get("origin") == "tool"]
    assert max(shown) <= 20_000 + 300, "no result reaches the model over the limit (plus its notice)"
    pages = [c for e in events if e["type"] == "message" and e.get("origin") == "agent"
             for c in e["message"].get("tool_calls") or () if c["function"]["name"] == "read_tool_result"]
    assert pages
    assert replay_file(out / "events" / "big-0--tool_output_limits--s0.jsonl").ok
