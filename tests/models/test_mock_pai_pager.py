"""The simulated agent follows pydantic-ai-harness ToolOutputLimits' spill hint and pages with its
`read_tool_result` (tool_output_limits/_capability.py: _build_spill_preview, _head_tail_preview,
_read_hint, _read_slice), as it follows ctxbench's native offload contract.

The crafted tests write the library's formats here (no library needed); one test checks them
against the library itself.
"""
from __future__ import annotations

import json
from typing import Any

import pytest

from harness.models.mock.agents import respond
from harness.models.mock.agents.common import Knobs, Visible
from harness.models.mock.agents.reading import SPILL_PAGE_LINES, reading
from strategies import StrategySpec, build_strategy
from strategies.adapters import PYDANTIC_AI_HARNESS
from tasks.base import ToolCall, ToolResult
from tests.adapter_helpers import requires
from tests.reset_helpers import context

HANDLE = "run/c2.0"
PATH = "data/a.txt"
MAX_CHARS = 50_000  # _read_slice's cap on one page's characters


def spill(handle: str, text: str, preview: int = 1_000) -> str:
    """What the model sees of a spilled text (_build_spill_preview with _head_tail_preview)."""
    head, tail = preview // 2, preview - preview // 2
    hint = f" Read it with read_tool_result(handle={handle!r}, offset=0, limit=200, from_end=False, pattern=None)."
    return (f"[Tool output too large ({len(text):,} chars); stored to handle {handle!r}.{hint}]\n"
            f"{text[:head]}\n...[{len(text) - preview:,} chars omitted]...\n{text[-tail:]}")


def page(handle: str, text: str, offset: int, limit: int) -> str:
    """A read_tool_result answer without pattern, from the start (_read_slice)."""
    lines = text.splitlines()
    window = lines[offset:offset + min(limit, 1_000)]
    body, capped = "\n".join(window), ""
    if len(body) > MAX_CHARS:
        body, capped = body[:MAX_CHARS], ", output capped"
    header = f"[handle {handle!r}: {len(lines):,} matching line(s); showing {len(window)}{capped}]"
    return f"{header}\n{body}" if body else header


RECORD = "record AB-1234 | weight 4 | successor CD-5678 | custodian Kai"


def ledger(lines: int, width: int = 60, record_at: float = 0.5) -> str:
    """A chained_lookup file whose start record sits at `record_at` of it, outside the spill's preview."""
    body = [f"note: {'filler ' * (width // 7)}{i}" for i in range(lines)]
    body[int(lines * record_at)] = RECORD
    return "\n".join([f"== {PATH} ({lines} lines) ==", *body, f"== end of {PATH} =="])


TASK = ("Start at record AB-1234 and follow the successor chain through 2 records in total; submit the sum of "
        "their weights with submit_answer.")
TOOLS = [{"type": "function", "function": {"name": name}} for name in ("search", "read_file", "read_tool_result")]


def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


def result(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def spilled_read(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": TASK},
            call("c1", "search", {"text": "AB-1234"}), result("c1", f"1 match(es) for 'AB-1234':\n{PATH}:40"),
            call("c2", "read_file", {"path": PATH}), result("c2", spill(HANDLE, text))]


def tool_call(reply: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    function = reply["tool_calls"][0]["function"]
    return function["name"], json.loads(function["arguments"])


def complete_head_lines(text: str) -> int:
    return text[:500].count("\n")


def test_the_agent_pages_a_spill_by_line_and_reads_head_pages_and_tail_joined():
    """A spill's hint names read_tool_result(handle, offset, limit): it asks, from the first line the head
    does not show whole, for the most lines one call returns; then reads head + page + tail as the text."""
    text = ledger(300)
    messages = spilled_read(text)
    name, args = tool_call(respond(messages, TOOLS, seed=0))
    assert (name, args) == ("read_tool_result", {"handle": HANDLE, "offset": complete_head_lines(text),
                                                 "limit": SPILL_PAGE_LINES})
    messages += [call("c3", name, args), result("c3", page(HANDLE, text, args["offset"], args["limit"]))]
    visible = Visible(messages, TOOLS, seed=0, knobs=Knobs())
    read = reading(visible, visible.exchange("c2"))
    assert read.text == text and read.next_offset is None
    assert tool_call(respond(messages, TOOLS, seed=0)) == ("search", {"text": "CD-5678"})


def test_a_capped_page_is_continued_from_its_cut_line_until_the_text_is_whole():
    """A page cut at 50,000 characters says `output capped`: its last line may be cut, so the next page
    starts there; before any page the tail's place is unknown, so the reading has a gap."""
    text = ledger(1_500, width=70, record_at=0.99)  # past every page but the last, before the tail
    messages = spilled_read(text)
    visible = Visible(messages, TOOLS, seed=0, knobs=Knobs())
    before = reading(visible, visible.exchange("c2"))
    assert before.next_offset == complete_head_lines(text) and before.text.endswith(f"== end of {PATH} ==")
    offsets = []
    for number in range(3, 10):
        name, args = tool_call(respond(messages, TOOLS, seed=0))
        if name != "read_tool_result":
            break
        offsets.append(args["offset"])
        messages += [call(f"c{number}", name, args), result(f"c{number}", page(HANDLE, text, args["offset"],
                                                                                  args["limit"]))]
    lines = text.splitlines()
    first_page = page(HANDLE, text, offsets[0], SPILL_PAGE_LINES)
    assert "output capped" in first_page
    assert offsets[1] == offsets[0] + first_page.count("\n") - 1  # the cut line is asked again
    visible = Visible(messages, TOOLS, seed=0, knobs=Knobs())
    read = reading(visible, visible.exchange("c2"))
    assert read.next_offset is None and read.text.splitlines() == lines and len(offsets) == 3


def test_with_the_hint_but_no_read_tool_result_offered_it_does_not_call_it():
    """The tool must be in the request's tools before it is called: the hint alone is not an offer."""
    tools = [tool for tool in TOOLS if tool["function"]["name"] != "read_tool_result"]
    name, _ = tool_call(respond(spilled_read(ledger(300)), tools, seed=0))
    assert name != "read_tool_result"


def _asks_until_it_gives_up(messages: list[dict[str, Any]], unusable: str) -> int:
    asked = 0
    for number in range(3, 12):
        name, args = tool_call(respond(messages, TOOLS, seed=0))
        if name != "read_tool_result":
            break
        asked += 1
        messages = messages + [call(f"c{number}", name, args), result(f"c{number}", unusable)]
    return asked


def test_unusable_page_answers_count_against_the_reread_budget_as_native_ones_do():
    """The library's `[No stored tool result for handle ...]` answer is not a page: the agent asks again
    within its reread budget, then gives up, exactly as often as for a native page it cannot use."""
    text = ledger(600, record_at=0.9)  # past the native head of 20,000 characters
    missing = (f"[No stored tool result for handle {HANDLE!r}. Use the exact handle string from a "
               '"[Tool output too large ... stored to handle ...]" marker; if the result is no longer available, '
               "re-run the original tool.]")
    shown = 20_000
    native = spilled_read(text)
    native[-1] = result("c2", f"{text[:shown]}\n[Output truncated: {shown} of {len(text)} characters shown. Full output "
                              f'saved as r1; call read_tool_result(result_id="r1", offset={shown}) to read more.]')
    asked = _asks_until_it_gives_up(spilled_read(text), missing)
    assert asked == _asks_until_it_gives_up(native, "Error: read_tool_result: no result r1") > Knobs().reread_budget


# ----- against the library itself ------------------------------------------------------------------------
@requires(PYDANTIC_AI_HARNESS)
def test_the_crafted_formats_are_the_librarys_and_its_pages_join_to_the_text():
    """The adapter's ToolOutputLimits spill and read_tool_result answers equal the formats crafted above,
    and the agent's reading of the library's own answers is the whole text."""
    strategy = build_strategy(StrategySpec("pai.tool_output_limits", {}))
    ctx = context()
    strategy.on_run_start(ctx)
    text = ledger(1_500, width=70)
    shown = strategy.transform_tool_result(ctx, ToolCall("c2", "read_file", "{}", {"path": PATH}),
                                           ToolResult(text)).content
    handle = next(e for e in ctx.log.events if e["type"] == "tool_output_offloaded")["result_id"]
    assert shown == spill(handle, text)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": TASK},
                call("c2", "read_file", {"path": PATH}), result("c2", shown)]
    for number in range(3, 10):
        visible = Visible(messages, TOOLS, seed=0, knobs=Knobs())
        read = reading(visible, visible.exchange("c2"))
        if read.next_offset is None:
            break
        args = {"handle": handle, "offset": read.next_offset, "limit": SPILL_PAGE_LINES}
        answer = strategy.handle_tool_call(ctx, ToolCall(f"c{number}", "read_tool_result", "", args)).content
        assert answer == page(handle, text, read.next_offset, SPILL_PAGE_LINES)
        messages += [call(f"c{number}", "read_tool_result", args), result(f"c{number}", answer)]
    assert read.next_offset is None and read.text == text


@requires(PYDANTIC_AI_HARNESS)
@pytest.mark.parametrize("suite", ["smoke", "default"])
def test_pai_tool_output_limits_solves_the_big_output_tasks_the_native_one_solves(run_suite, suite_file, suite):
    """End to end: with the library's spills the agent pages and answers as with the native offload."""
    runs = run_suite(suite_file(suite, family="big_output"), strategies="tool_output_limits,pai.tool_output_limits")
    solved = runs.pivot(index="task_id", columns="strategy", values="success")
    assert solved["tool_output_limits"].any()
    assert (solved["pai.tool_output_limits"] >= solved["tool_output_limits"]).all(), solved
    rereads = runs[runs.strategy == "pai.tool_output_limits"]
    assert (rereads.tool_outputs_offloaded > 0).all()
