"""The simulated agent's per-session memory saves work, never knowledge.

With a memory the agent reuses its reading of the messages a request shares (the very same
objects) with the one before; every reply must be exactly the reply of a fresh agent given
the same messages, whatever a strategy did to the view in between (DESIGN.md, "The mock LLM":
it knows nothing that is not in the request it answers).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.conversation.events import event_logs, read_events
from harness import api
from harness.models.mock import provider
from harness.models.mock.agents import respond
from harness.models.mock.agents.common import Calls
from harness.models.mock.agents.memory import Ledger, Memory
from harness.models.mock.prefix import shared_prefix
from harness.conversation.replay import replay_file
from strategies.adapters import PYDANTIC_AI_HARNESS
from tasks import family_module
from tasks.base import ToolCall
from tasks.suites import load_tasks
from tests.adapter_helpers import requires

STRATEGIES = ("none", "compaction_ladder", "agent_reset", "observation_masking", "hard_summarize",
              "tool_output_limits")
FAMILIES = ("chained_lookup", "work_queue", "plant_early_ask_late", "big_output", "repo_maintenance")


class PairedReplies:
    """Answers each mock request with the session's memory, and checks it against a fresh agent."""

    def __init__(self) -> None:
        self.requests = 0
        self.view_changes = 0  # requests whose messages are not the previous request's plus new ones
        self.volatile = 0  # requests answered while a fold held a reading that depends on later messages
        self.mismatches: list[str] = []
        self._previous: dict[int, tuple[dict[str, Any], ...]] = {}

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int,
                 knobs: Any = None, memory: Memory | None = None) -> dict[str, Any]:
        assert memory is not None, "the mock provider must pass its session's memory"
        reply = respond(messages, tools, seed=seed, knobs=knobs, memory=memory)
        fresh = respond(messages, tools, seed=seed, knobs=knobs)
        previous = self._previous.get(id(memory), ())
        self.requests += 1
        self.view_changes += shared_prefix(previous, messages) < len(previous)
        self.volatile += any(fold.volatile for fold in memory.folds.values())
        self._previous[id(memory)] = tuple(messages)
        if reply != fresh:
            self.mismatches.append(f"request {self.requests}: {json.dumps(reply)[:300]} != {json.dumps(fresh)[:300]}")
        return reply


@pytest.fixture
def paired(monkeypatch) -> PairedReplies:
    checker = PairedReplies()
    monkeypatch.setattr(provider, "respond", checker)
    return checker


SAMPLE_WINDOW = 60_000  # small enough that every strategy here changes the view of these tasks


def _run_and_check(paired: PairedReplies, suite: str, out: Path, strategy: str, window: int | None = None) -> None:
    api.run(suite, strategies=strategy, profiles=api.mock_profiles(window=window), out=out)
    for log in sorted((out / "events").glob("*.jsonl.gz")):
        report = replay_file(log)
        assert report.ok, (strategy, log.name, report)
    assert not paired.mismatches, paired.mismatches[:3]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_replies_with_memory_equal_fresh_replies_on_a_default_sample(paired, suite_file, tmp_path, strategy):
    """The largest default task of each family: every request's reply with the session memory equals a
    memory-less agent's reply, and `ctxbench replay` still matches every view."""
    sample = [[t.task_id for t in load_tasks("default") if t.family == family][-1] for family in FAMILIES]
    _run_and_check(paired, suite_file("default", task_ids=sample), tmp_path, strategy, SAMPLE_WINDOW)
    assert paired.requests > 100
    if strategy == "tool_output_limits":
        assert paired.volatile, "no truncated result was read with its pages: the test would prove little"
    elif strategy != "none":
        assert paired.view_changes, f"{strategy} never changed the view: the test would prove little"


def test_replies_with_memory_equal_fresh_replies_when_results_answer_other_calls(paired, suite_file, tmp_path):
    """Results replaced in place by other calls' outputs (stand_ins.PermuteResults) read as
    nothing, by the memory as by a fresh agent (a result's reading depends on its call)."""
    sample = [[t.task_id for t in load_tasks("default") if t.family == family][-1] for family in FAMILIES]
    _run_and_check(paired, suite_file("default", task_ids=sample), tmp_path, "stand_ins:PermuteResults")
    assert paired.requests > 50 and paired.view_changes


@requires(PYDANTIC_AI_HARNESS)
def test_replies_with_memory_equal_fresh_replies_when_the_library_spills(paired, suite_file, tmp_path):
    """pydantic-ai-harness ToolOutputLimits' spills are read with their pages (line terms) by the memory
    as by a fresh agent, and every view replays."""
    sample = [[t.task_id for t in load_tasks("default") if t.family == family][-1] for family in FAMILIES]
    _run_and_check(paired, suite_file("default", task_ids=sample), tmp_path, "pai.tool_output_limits", SAMPLE_WINDOW)
    assert paired.volatile, "no spilled result was read with its pages: the test would prove little"


@pytest.mark.slow
@pytest.mark.parametrize("strategy", [spec.name for spec in api.strategy_specs("all")])
def test_replies_with_memory_equal_fresh_replies_on_the_default_suite(paired, tmp_path, strategy):
    """The whole default suite under every registered strategy."""
    _run_and_check(paired, "default", tmp_path, strategy)


# ----- view changes made by hand: the memory must not leak what the view no longer shows

def _drive(family: str, steps: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Memory]:
    """Messages of a smoke task after `steps` agent replies with a memory, and that memory."""
    row = next(r for r in load_tasks("smoke") if r.family == family)
    env = family_module(family).build(family_module(family).Params(**row.params), 0)
    tools = [spec.schema() for spec in env.tool_specs()]
    messages = [{"role": "system", "content": env.system_prompt},
                *({"role": "user", "content": text} for text in env.initial_user_messages())]
    memory = Memory()
    for step in range(steps):
        messages.extend({"role": "user", "content": text} for text in env.user_messages_due(step))
        reply = respond(messages, tools, seed=0, memory=memory)
        messages.append(reply)
        for raw in reply.get("tool_calls") or []:
            result = env.execute(ToolCall.from_message(raw))
            messages.append({"role": "tool", "tool_call_id": raw["id"], "content": result.content})
    return messages, tools, memory


def _placeholder(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "content": "[Tool result cleared to save context; call the tool again to see it.]"}


@pytest.mark.parametrize("family", FAMILIES)
def test_memory_never_leaks_a_fact_the_view_dropped(family):
    """After a view change that removes or clears what a message showed, the agent with its memory
    answers exactly as a fresh agent given the same messages, for every message removed in turn."""
    messages, tools, memory = _drive(family, 30)
    respond(messages, tools, seed=0, memory=memory)
    differs = 0
    for position in range(2, len(messages)):
        message = messages[position]
        views = [messages[:position] + messages[position + 1:]]
        if message.get("role") == "tool":
            views.append(messages[:position] + [_placeholder(message)] + messages[position + 1:])
        for view in views:
            fresh = respond(view, tools, seed=0)
            assert respond(view, tools, seed=0, memory=memory) == fresh, (family, position)
            differs += fresh != respond(messages, tools, seed=0)
            assert respond(messages, tools, seed=0, memory=memory) == respond(messages, tools, seed=0)
    assert differs, f"no removal changed the {family} agent's reply: the test would prove nothing"


def test_memory_after_a_fact_is_cleared_acts_as_if_never_read():
    """chained_lookup: once the result holding the record it needs is cleared, the agent with a memory
    that read the record fetches it again, like a fresh agent, instead of using the record."""
    messages, tools, memory = _drive("chained_lookup", 30)
    latest_read = max(i for i, m in enumerate(messages) if m.get("role") == "tool" and "| weight" in m["content"])
    with_fact = respond(messages[:latest_read + 1], tools, seed=0, memory=memory)
    cleared = messages[:latest_read] + [_placeholder(messages[latest_read])]
    without = respond(cleared, tools, seed=0, memory=memory)
    assert without == respond(cleared, tools, seed=0)
    assert without != with_fact


def test_irregular_contexts_are_read_afresh():
    """A result moved before its call, or a call id repeated, makes a context irregular: the agent with a
    memory still answers as a fresh agent does."""
    messages, tools, memory = _drive("work_queue", 30)
    respond(messages, tools, seed=0, memory=memory)
    tool_at = max(i for i, m in enumerate(messages) if m.get("role") == "tool")
    moved = messages[:tool_at - 1] + [messages[tool_at], messages[tool_at - 1]] + messages[tool_at + 1:]
    repeated = messages + [messages[tool_at - 1], messages[tool_at]]
    for view in (moved, repeated, messages, moved):
        assert respond(view, tools, seed=0, memory=memory) == respond(view, tools, seed=0)


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


def test_a_truncated_result_is_read_again_with_pages_that_arrive_later():
    """A record line cut by truncation is whole only once its page is visible: the memory re-reads the
    truncated result when a later page changes how it reads."""
    head = "== data/a.txt (2 lines)\nrecord AB-1234 | weight 4"
    total = len(head) + 60
    truncated = (f"{head}\n[Output truncated: {len(head)} of {total} characters shown. Full output saved as r1; "
                 f'call read_tool_result(result_id="r1", offset={len(head)}) to read more.]')
    page = f"[r1: characters {len(head)}-{total} of {total}]\n2 | successor CD-5678\n== end of data/a.txt =="
    tools = [{"type": "function", "function": {"name": name}} for name in ("search", "read_file", "read_tool_result")]
    messages = [{"role": "system", "content": "You are an agent."},
                {"role": "user", "content": "Start at record AB-1234 and follow the successor chain through 2 "
                                            "records; submit the sum of their weights."},
                _call("c1", "read_file", {"path": "data/a.txt"}), {"role": "tool", "tool_call_id": "c1",
                                                                   "content": truncated}]
    memory = Memory()
    respond(messages, tools, seed=0, memory=memory)
    messages += [_call("c2", "read_tool_result", {"offset": len(head), "result_id": "r1"}),
                 {"role": "tool", "tool_call_id": "c2", "content": page}]
    reply = respond(messages, tools, seed=0, memory=memory)
    assert reply == respond(messages, tools, seed=0)
    assert json.loads(reply["tool_calls"][0]["function"]["arguments"]) == {"text": "CD-5678"}


def test_a_call_seen_after_its_result_makes_the_memory_read_afresh():
    """A notes read whose call comes after its result (an irregular context) counts as a notes read, as
    for a fresh agent, although the memory first read that result when no call was visible."""
    question = ("Final questions. Call submit_answer with one line of 'name=value' pairs separated by '; ', in this "
                "order: budget owner. Give the current values (after my updates).")
    messages = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": question},
                {"role": "tool", "tool_call_id": "n1", "content": "Fact: budget owner = Dana"}]
    memory = Memory()
    assert "budget owner=unknown" in respond(messages, [], seed=0, memory=memory)["tool_calls"][0]["function"][
        "arguments"]
    messages.append(_call("n1", "read_file", {"path": "notes/context-reset.md"}))
    reply = respond(messages, [], seed=0, memory=memory)
    assert reply == respond(messages, [], seed=0)
    assert "budget owner=Dana" in reply["tool_calls"][0]["function"]["arguments"]


MORE_LINE = '[More: call read_tool_result(result_id="{}", offset={}) to continue.]'


@pytest.mark.parametrize("page", [
    "abc\n" + MORE_LINE.format("r1", 20), "abc\n" + MORE_LINE.format("r1", 20) + "\n",
    "abc" + MORE_LINE.format("r1", 20) + "  ", "abc\n" + MORE_LINE.format("r1", 20) + " tail",
    MORE_LINE.format("r1", 20), "x\n" + MORE_LINE.format("r1", 2) + "\ny\n" + MORE_LINE.format("r2", 3),
    "plain page", ""])
def test_a_page_loses_its_closing_more_line_exactly_as_the_pattern_would_remove_it(page):
    """The agent cuts the "[More: ...]" line by looking at the page's end only; same text as MORE.sub."""
    from harness.models.mock.agents.reading import MORE, _without_more_line

    assert _without_more_line(page) == MORE.regex.sub("", page)


def _absorbed_positions(memory: Memory, monkeypatch) -> dict[str, list[int]]:
    """Which positions each fold of `memory` reads from now on, by fold class name."""
    read: dict[str, list[int]] = {}
    for fold in memory.folds.values():
        original = fold.absorb

        def counting(position, text, message, original=original, name=type(fold).__name__):
            read.setdefault(name, []).append(position)
            return original(position, text, message)

        monkeypatch.setattr(fold, "absorb", counting)
    return read


def test_a_result_replaced_in_place_is_read_again_only_by_the_folds_it_changes(monkeypatch):
    """Masking an old result changes one message: folds that read it alike keep their state (the
    call list sets that one result in place); a fold that writes blindly undoes in place what the result
    wrote (`Fold.retracted`), even a record a later message wrote again (records are read by key only),
    instead of re-reading the messages after it; the state is a fresh reading's and the reply is still
    exactly a fresh agent's."""
    from harness.models.mock.agents.chained_lookup import Records
    from harness.models.mock.agents.common import Knobs, Visible

    messages, tools, memory = _drive("chained_lookup", 30)
    respond(messages, tools, seed=0, memory=memory)
    records_at = [i for i, m in enumerate(messages) if m.get("role") == "tool" and "| weight" in m["content"]]
    search_at = min(i for i, m in enumerate(messages) if m.get("role") == "tool" and "match(es) for" in m["content"])
    repeated = next(line for line in messages[records_at[1]]["content"].splitlines() if "| weight" in line)
    messages = messages + [{"role": "user", "content": f"Note this record: {repeated}"}]  # written again later
    respond(messages, tools, seed=0, memory=memory)
    for position in (search_at, records_at[0], records_at[1]):
        read = _absorbed_positions(memory, monkeypatch)
        view = messages[:position] + [_placeholder(messages[position])] + messages[position + 1:]
        assert respond(view, tools, seed=0, memory=memory) == respond(view, tools, seed=0)
        assert min(read.get("Calls", [len(view)])) >= len(messages), "the call list re-read messages it had"
        assert min(read.get("Records", [len(view)])) >= len(messages), "the records were read again"
        assert memory.folds[(Records,)].known == Visible(view, tools, seed=0, knobs=Knobs()).fold(Records).known
        calls = memory.folds[(Calls,)]
        assert calls.results[messages[position]["tool_call_id"]] == _placeholder(messages[position])["content"]
        messages = view


def test_a_ledger_retracts_one_messages_writes_and_hands_their_undo_to_later_writes():
    """Ledger.retract: undoes one position's writes in place and keeps later ones; a later write
    of the same key keeps its value and takes over the undo to what was there before. A key the position
    inserted moves in the mapping's order, so `keep_order` refuses that; lists are refused."""
    ledger, state, items = Ledger(), {}, []
    ledger.put(0, state, "a", 1)
    ledger.put(1, state, "b", 2)
    ledger.put(1, state, "a", 3)
    ledger.put(2, state, "c", 4)
    version = ledger.version
    assert ledger.retract(1) and state == {"a": 1, "c": 4} and ledger.version > version
    ledger.rewind(0)
    assert state == {}
    ledger.put(0, state, "a", 1)
    ledger.put(1, state, "a", 2)
    ledger.put(1, state, "b", 2)
    ledger.put(2, state, "a", 5)  # "a" existed before position 1: its place in the order stays right
    ledger.put(2, state, "b", 6)  # "b" was inserted at 1: a fresh reading would insert it at 2
    snapshot = dict(state)
    assert not ledger.retract(1) and state == snapshot
    assert ledger.retract(1, keep_order=False) and state == {"a": 5, "b": 6}
    ledger.rewind(2)
    assert state == {"a": 1}  # the undo of position 2 now restores what was there before position 1
    ledger.append(3, items, "x")
    assert not ledger.retract(3) and items == ["x"]
    version = ledger.version
    assert ledger.retract(7) and state == {"a": 1}  # a position that wrote nothing
    assert ledger.version == version  # nothing changed: what was derived from the state still holds
    ledger.put(8, state, "a", 1)  # the same value again: logged (a later write, for retract), no new version
    assert ledger.version == version
    ledger.put(8, state, "a", 1.0)  # equal but of another type: a change
    assert ledger.version > version
    ledger.rewind(0)
    assert state == {} and items == []


def test_what_is_derived_from_a_fold_is_worked_out_again_after_any_change_of_its_state():
    """Fold.derived may keep a value only while the fold's state is the one it came from: a
    write, an undo (a view change) or a result set in place makes it stale."""
    from harness.models.mock.agents.common import Found
    from harness.models.mock.agents.memo import Pattern

    fold = Found(Pattern(r"k(\d)"), ("tool",))
    computed = []

    def items(previous: list[str] | None) -> list[str]:
        computed.append(previous)
        return list(fold.items)

    assert fold.derived("items", items) == [] and fold.derived("items", items) == [] and computed == [None]
    fold.absorb(0, "k1 k2", {})
    assert fold.derived("items", items) == ["1", "2"] and computed == [None, []]
    fold.ledger.rewind(0)
    assert fold.derived("items", items) == [] and computed == [None, [], ["1", "2"]]
    calls = Calls()
    calls.absorb(0, "", _call("c1", "read_file", {"path": "a"}))
    calls.absorb(1, "", {"role": "tool", "tool_call_id": "c1", "content": "text"})
    version = calls.ledger.version
    assert calls.alike(None, 1, {"role": "tool", "tool_call_id": "c1", "content": "text"},
                       {"role": "tool", "tool_call_id": "c1", "content": "[masked]"})
    assert calls.ledger.version > version and calls.by_id["c1"].result == "[masked]"


@pytest.mark.parametrize("expression, flags, needs", [
    (r"^Fixed (\w+) in (\S+)\.$", re.MULTILINE, ("Fixed ",)),
    (r"=+ (?:(\d+) failed, )?\d+ passed in [\d.]+s =+", 0, (" passed in ",)),
    (r"Recorded (ORD-\d+)\.|(ORD-\d+) is already recorded", 0, ("Recorded ", " is already recorded")),
    (r"Recorded (ORD-\d+)|(ORD-\d+)", 0, ()),  # the second alternative needs no literal
    (r"Context usage warning", re.IGNORECASE, ()),
    (r"(?i)Context usage warning", 0, ()),
    (r"ab(cdef)?gh", 0, ()),  # an optional group is no run of its own
    (r"\bnotes/x", 0, ("notes/x",)),
])
def test_the_literals_a_pattern_needs_are_required_by_every_match(expression, flags, needs):
    """A text without any of the required literals is ruled out before the regular expression runs:
    each must be one that no match of its alternative can lack."""
    from harness.models.mock.agents.memo import required_literals

    assert required_literals(re.compile(expression, flags)) == needs


def test_every_agent_pattern_reads_each_text_as_the_plain_regular_expression_does(tmp_path):
    """Over every text of a smoke run, the shortcut changes no result of any agent pattern."""
    from harness.models.mock.agents import big_output, chained_lookup, memo, plant_early_ask_late, reading, repo_maintenance
    from harness.models.mock.agents import reset, work_queue

    api.run("smoke", strategies="tool_output_limits", profiles=api.mock_profiles(window=60_000), out=tmp_path)
    events = [event for log in event_logs(tmp_path / "events") for event in read_events(log)]
    texts = {str(event["message"].get("content") or "") for event in events if event["type"] == "message"}
    patterns = [value for module in (big_output, chained_lookup, plant_early_ask_late, reading, repo_maintenance, reset,
                                     work_queue) for value in vars(module).values() if isinstance(value, memo.Pattern)]
    shortcuts = 0
    for pattern in patterns:
        for text in texts:
            memo.forget()
            assert pattern.findall(text) == tuple(pattern.regex.findall(text)), (pattern.regex.pattern, text[:200])
            found = pattern.search(text)
            assert (found and found.span()) == ((m := pattern.regex.search(text)) and m.span())
            shortcuts += bool(pattern.required) and not any(literal in text for literal in pattern.required)
    assert shortcuts > len(texts), "the shortcut was never taken: the test would prove little"


def test_a_chain_walk_goes_on_from_the_last_one_only_while_every_record_it_walked_reads_the_same():
    """chained_lookup's walk extends the previous walk; after a record on it changes or is gone,
    it must equal a walk from the start."""
    from harness.models.mock.agents.chained_lookup import Task, _walk

    task = Task("AA-0001", 4)
    known = {"AA-0001": (3, "AA-0002"), "AA-0002": (5, "AA-0003")}
    first = _walk(known, task, None)
    assert (first.codes, first.stop, first.total) == (("AA-0001", "AA-0002"), "AA-0003", 8)
    for change in ({"AA-0003": (7, "AA-0004")}, {"AA-0002": (6, "AA-0009")}, {"AA-0009": (1, "AA-0004")}):
        known = {**known, **change}
        extended = _walk(known, task, first)
        assert extended == _walk(known, task, None)
        first = extended
    del known["AA-0002"]
    assert _walk(known, task, first) == _walk(known, task, None) and _walk(known, task, first).codes == ("AA-0001",)


def test_folds_read_along_with_appended_messages_hold_what_a_fresh_reading_holds():
    """Ours: the folds the previous request asked for are read along, in one pass, over the
    messages a request appends; a fold not asked for last request (its messages an older request's), one
    holding a reading later pages change, and every fold after a view change catch up when asked. Each
    fold's state must be a fresh reading's, and the read-along must have happened."""
    from harness.models.mock.agents import work_queue
    from harness.models.mock.agents.common import Knobs, Visible

    messages, tools, memory = _drive("work_queue", 20)
    asked = [(work_queue.Records, "lines"), (work_queue.Tickets, "latest")]
    read_along = 0
    for end in range(len(messages) - 12, len(messages) + 1):
        view = messages[:end]
        if end == len(messages) - 4:  # a view change: an old result cleared, the rest appended after it
            view = [*view[:5], _placeholder(view[5]) if view[5].get("role") == "tool" else view[5], *view[6:]]
        visible = Visible(view, tools, seed=0, knobs=Knobs(), memory=memory)
        read_along += bool(visible._read)
        fresh = Visible(view, tools, seed=0, knobs=Knobs())
        for kind, state in asked[:1 + end % 2]:  # Tickets asked only every other request
            assert getattr(visible.fold(kind), state) == getattr(fresh.fold(kind), state), (end, kind)
    assert read_along >= 6, "the folds were never read along: the test would prove little"
