"""The simulated agent decides from what it is shown.

* Its reset decision depends on the warnings it receives: it condenses at the k-th context warning
  of a reset cycle (knob `reset_at_warning`; seed 000: the warnings are advisory and the agent
  decides), so the strategy's warning_thresholds move success and cost.
* It uses a tool result only for the call it answers: a result whose content answers another
  call (another path, another tool) gives it nothing.
"""
from __future__ import annotations

import json

import pytest

from harness.core.errors import ConfigError
from harness.models.mock.agents import respond
from harness.models.mock.agents.answers import answers
from harness.models.mock.agents.common import build_knobs
from strategies.agent_reset import RESET_NOTICE, WARNING_TEXT

TOOLS = [{"type": "function", "function": {"name": name}}
         for name in ("list_files", "read_file", "write_file", "search", "submit_answer", "condense")]
TASK = ("Start at record AB-1000 and follow the successor chain through 2 records; submit the sum of their weights "
        "with submit_answer.")


def _warning(stage: int) -> dict:
    return {"role": "user", "content": WARNING_TEXT.format(stage=stage, tokens=1_000, budget=2_000)}


def _called(reply: dict) -> list[str]:
    return [c["function"]["name"] for c in reply.get("tool_calls") or ()]


def _context(*extra: dict) -> list[dict]:
    return [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": TASK}, *extra]


# ----- (a) the reset decision
@pytest.mark.parametrize("k, warnings, writes", [(1, 1, True), (2, 1, False), (2, 2, True), (3, 2, False),
                                                 (None, 4, False)])
def test_it_saves_notes_to_condense_at_the_kth_warning_of_its_reset_cycle(k, warnings, writes):
    """Warnings are advisory, the agent decides: with knob reset_at_warning k it
    starts its reset (notes first) once it has been shown k warnings; null: never."""
    messages = _context(*[_warning(60 + 10 * i) for i in range(warnings)])
    reply = respond(messages, TOOLS, seed=0, knobs={"reset_at_warning": k})
    assert (_called(reply) == ["write_file"]) is writes, reply


def test_warnings_before_the_latest_reset_notice_do_not_count():
    """A reset cycle starts at the latest visible reset notice; the warnings before it
    warned of the context it left."""
    before = [_warning(75), _warning(80)]
    after = [{"role": "user", "content": RESET_NOTICE}, _warning(75)]
    assert _called(respond(_context(*before), TOOLS, seed=0, knobs={"reset_at_warning": 2})) == ["write_file"]
    assert _called(respond(_context(*before, *after), TOOLS, seed=0, knobs={"reset_at_warning": 2})) != ["write_file"]
    assert _called(respond(_context(*before, *after, _warning(80)), TOOLS, seed=0,
                           knobs={"reset_at_warning": 2})) == ["write_file"]


def test_the_old_reset_stage_knob_is_refused_naming_its_replacement():
    """`reset_stage` condensed at a fixed stage whatever the thresholds; it is gone, and a
    config that still sets it is told what replaced it."""
    with pytest.raises(ConfigError, match="'reset_stage' was replaced by 'reset_at_warning'"):
        build_knobs({"reset_stage": 0.8})
    assert build_knobs(None).reset_at_warning == 1


def test_a_sweep_over_warning_thresholds_moves_when_it_condenses(run_suite, suite_file):
    """A sweep over agent_reset's warning_thresholds moves resets and cost; a single
    early threshold makes it condense (before, a fixed 0.8 stage left [0.6] without any reset)."""
    lookups = suite_file(family="chained_lookup")
    rows = {}
    for thresholds in ([0.6], [0.9]):
        config = {"agent_reset": {"condenser": {"warning_thresholds": thresholds}}}
        runs = run_suite(lookups, strategies="agent_reset", strategy_configs=config, window=30_000)
        rows[thresholds[0]] = (runs["agent_resets"].sum(), runs["cost_usd"].sum())
    assert rows[0.6][0] > rows[0.9][0] > 0
    assert rows[0.6][1] != rows[0.9][1]


# ----- (b) a result counts only for the call it answers
READ_A = ("read_file", {"path": "src/a.py"})


@pytest.mark.parametrize("name, args, text, expected", [
    (*READ_A, "== src/a.py (2 lines) ==\nx\ny\n== end of src/a.py ==", True),
    (*READ_A, "== src/b.py (2 lines) ==\nx\ny\n== end of src/b.py ==", False),  # another file's content
    (*READ_A, "== dump D1 (3 requests) ==\n", False),  # another tool's answer
    (*READ_A, "== src/a.py (900 lines) ==\nx\n[Output truncated: 30 of 9000 characters shown. ...]", True),
    (*READ_A, "[Tool output too large (9,000 chars); stored to handle 'h1'. Read it with read_tool_result("
              "handle='h1', offset=0).]\n== src/b.py (900 lines) ==\nx", False),  # a spill is read by its head
    (*READ_A, "[tool result cleared]", True),  # a placeholder claims nothing
    (*READ_A, "The file holds two records of chain AB.", True),  # a summary of unknown shape
    (*READ_A, "Error: read_file: no such file: src/a.py", True),
    (*READ_A, "Error: read_file: no such file: src/b.py", False),  # refuses another path
    (*READ_A, "Error: get_order: no order 'ORD-1'", False),  # another tool's refusal
    ("get_order", {"order_id": "ORD-1"}, "Order ORD-1 | customer CUS-1 | sku SKU-A | quantity 2\n", True),
    ("get_order", {"order_id": "ORD-1"}, "Order ORD-2 | customer CUS-1 | sku SKU-A | quantity 2\n", False),
    ("get_price", {"sku": "SKU-A", "region": "north"}, "Price SKU-A | region south | unit 3\n", False),
    ("search", {"text": "AB-1000"}, "1 match(es) for 'AB-1000':\nsrc/a.py:3", True),
    ("search", {"text": "AB-1000"}, "No matches for 'AB-2000'.", False),
    ("read_tool_result", {"result_id": "r1", "offset": 100}, "[r1: characters 100-200 of 900]\nx", True),
    ("read_tool_result", {"result_id": "r1", "offset": 100}, "[r2: characters 100-200 of 900]\nx", False),
    ("read_tool_result", {"result_id": "r1", "offset": 100}, "[r1: characters 0-100 of 900]\nx", False),
    ("submit_result", {"order_id": "ORD-1"}, "Recorded 3 for logs/a.log.", False),
])
def test_a_result_answers_only_the_call_whose_arguments_it_answers(name, args, text, expected):
    """The agent "uses a tool result only for the call it answers"; texts of no known shape
    (summaries, placeholders, strategy notes) say nothing about another call and are taken as they are."""
    assert answers(name, args, text) is expected


def _read(call_id: str, path: str, content_path: str, record: str) -> list[dict]:
    body = f"== {content_path} (1 lines) ==\n{record}\n== end of {content_path} =="
    return [{"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "type": "function", "function": {
                "name": "read_file", "arguments": json.dumps({"path": path})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": body}]


def test_a_read_of_one_path_showing_another_files_content_gives_none_of_its_facts():
    """A file read of path A whose content is file B's does not give the agent B's records
    (nor A's): it reads A again instead of walking on from what it was not answered."""
    search = [{"role": "assistant", "content": "", "tool_calls": [{"id": "s1", "type": "function", "function": {
                  "name": "search", "arguments": json.dumps({"text": "AB-1000"})}}]},
              {"role": "tool", "tool_call_id": "s1", "content": "1 match(es) for 'AB-1000':\nsrc/a.py:1"}]
    record = "record AB-1000 | weight 7 | successor AB-2000"
    answered = respond(_context(*search, *_read("r1", "src/a.py", "src/a.py", record)), TOOLS, seed=0)
    mixed_up = respond(_context(*search, *_read("r1", "src/a.py", "src/b.py", record)), TOOLS, seed=0)
    assert json.loads(answered["tool_calls"][0]["function"]["arguments"]) == {"text": "AB-2000"}  # walked on
    assert _called(mixed_up) == ["read_file"]
    assert json.loads(mixed_up["tool_calls"][0]["function"]["arguments"]) == {"path": "src/a.py"}


@pytest.mark.parametrize("suite, at_most", [("smoke", 0), ("default", 1)])
def test_results_permuted_between_calls_collapse_success_while_unpermuted_runs_are_unchanged(run_suite, suite,
                                                                                              at_most):
    """Results permuted between calls through view ops (stand_ins.PermuteResults) no
    longer solve tasks (before: smoke 3/7, default 6/20); the same tasks unpermuted still succeed."""
    runs = run_suite(suite, strategies="none,stand_ins:PermuteResults")
    by = runs.groupby("strategy")["success"].sum()
    assert by["stand_ins:PermuteResults"] <= at_most
    assert by["none"] == {"smoke": 7, "default": 16}[suite]
