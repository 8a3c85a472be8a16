"""What the simulated agent saves per request never changes what it knows or answers.

Each saving is checked against a fresh reading of the same messages, and with a view in which the
saving would be wrong if it trusted what it kept.
"""
from __future__ import annotations

from typing import Any

import pytest

import harness.models.mock.agents as agents
from harness.conversation.events import event_logs, read_events
from harness.models.mock.agents import AGENTS, chained_lookup, respond
from harness.models.mock.agents.common import Knobs, Visible, _content
from tests.models.test_mock_memory import FAMILIES, _drive


def _statement_of(family: str) -> str:
    """The user message stating a smoke task of `family`."""
    messages, _, _ = _drive(family, 0)
    return next(m["content"] for m in messages if m["role"] == "user")


def _literals(agent: Any) -> tuple[str, ...]:
    return tuple(literal for pattern in agent.STATEMENT for literal in pattern.required)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_finds_no_task_once_no_message_holds_a_literal_of_its_statement(family):
    """Ours: each family's `STATEMENT` patterns are where find_task finds its task, so a
    family found last request is checked only against the earlier families' literals in new messages.
    With every message holding one of its literals left out, the family finds no task."""
    agent = AGENTS[FAMILIES.index(family)]
    messages, tools, _ = _drive(family, 12)
    literals = _literals(agent)
    assert literals, f"{family}'s statement patterns need no literal: the memo could never skip it"
    assert agent.find_task(Visible(messages, tools, seed=0, knobs=Knobs())) is not None
    without = [m for m in messages if not any(literal in _content(m) for literal in literals)]
    assert len(without) < len(messages)
    assert agent.find_task(Visible(without, tools, seed=0, knobs=Knobs())) is None


def test_a_family_found_last_request_yields_to_an_earlier_familys_statement_in_a_new_message():
    """Ours: the family found last request is kept only while no new message states an
    earlier family's task; a user message stating a chained_lookup task makes the agent act on it at once,
    as a fresh agent given the same messages does (a memo trusting the family would stay on the old task)."""
    messages, tools, memory = _drive("repo_maintenance", 6)
    respond(messages, tools, seed=0, memory=memory)
    assert memory.family is not None and memory.family.agent is AGENTS[-1]
    messages = [*messages, {"role": "user", "content": _statement_of("chained_lookup")}]
    reply = respond(messages, tools, seed=0, memory=memory)
    assert reply == respond(messages, tools, seed=0)
    assert memory.family.agent is chained_lookup


def test_a_family_found_last_request_is_asked_first_when_new_messages_state_no_earlier_task(monkeypatch):
    """Ours: the families before the one found last request are not asked again while the
    messages added, or put in place of earlier ones (a cleared result, a dropped message), hold none of their
    statement literals; a message in place of another that states an earlier task makes every family asked."""
    messages, tools, memory = _drive("repo_maintenance", 6)
    respond(messages, tools, seed=0, memory=memory)
    asked: list[str] = []
    originals = {agent: agent.find_task for agent in AGENTS[:-1]}
    for agent in AGENTS[:-1]:
        monkeypatch.setattr(agent, "find_task", lambda visible, a=agent: asked.append(a.__name__) or originals[a](visible))
    tool_at = max(i for i, m in enumerate(messages) if m.get("role") == "tool")
    views = [[*messages, {"role": "user", "content": "Please go on."}],
             [*messages[:tool_at], {**messages[tool_at], "content": "[Tool result cleared]"}, *messages[tool_at + 1:]],
             messages[:2] + messages[3:]]
    for view in views:
        assert respond(view, tools, seed=0, memory=memory) == respond(view, tools, seed=0)
        assert len(asked) == len(AGENTS) - 1  # only the fresh agent asked them
        asked.clear()
    respond(messages, tools, seed=0, memory=memory)
    asked.clear()
    stated = {**messages[tool_at], "content": _statement_of("chained_lookup")}
    view = [*messages[:tool_at], stated, *messages[tool_at + 1:], {"role": "user", "content": "Please go on."}]
    assert respond(view, tools, seed=0, memory=memory) == respond(view, tools, seed=0)
    assert asked == [chained_lookup.__name__] * 2  # the memory and the fresh agent asked it first, and found it
    assert memory.family.agent is chained_lookup


def test_the_earlier_families_literals_are_those_of_their_statement_patterns():
    """EARLIER holds, for each family, the literals of every family before it (none for the first)."""
    assert agents.EARLIER[AGENTS[0]] == ()
    for index, agent in enumerate(AGENTS):
        assert set(agents.EARLIER[agent]) == {literal for earlier in AGENTS[:index] for literal in _literals(earlier)}


def _texts_of_a_run(tmp_path, strategy: str = "tool_output_limits") -> set[str]:
    from harness import api
    import json
    api.run("smoke", strategies=strategy, profiles=api.mock_profiles(window=60_000), out=tmp_path)
    return {str(event["message"].get("content") or "") for log in event_logs(tmp_path / "events")
            for event in read_events(log) if event["type"] == "message"}


def test_a_results_opening_is_tried_only_against_the_shapes_that_start_with_its_first_character(tmp_path):
    """Ours: answers._shape tries a result's opening only against the SHAPES whose
    matches can start with its first character: the same shape, in SHAPES order, as trying every one."""
    from harness.models.mock.agents import answers

    def every_shape(text: str):
        spill = answers.SPILLED.regex.match(text)
        start = spill.end() if spill else 0
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        for tool, shape, names in answers.SHAPES:
            match = shape.match(text, start, end)
            if match:
                return tool, tuple((name, value) for name, value in zip(names, match.groups()) if value is not None)
        return None

    texts = _texts_of_a_run(tmp_path) | {"", "x", "3 match(es) for 'AB-1234':\na.py:3", "No matches for 'x'.",
                                         "== dump D1 (4 requests) ==\n", "Recorded 3 for a.log.", "Recorded ORD-1. ok"}
    shaped = 0
    for text in texts:
        assert answers._shape(text) == every_shape(text), text[:200]
        shaped += every_shape(text) is not None
    assert shaped > 20, "few texts had a shape: the test would prove little"


def test_a_record_line_is_known_by_its_key_as_by_a_scan_of_every_known_line():
    """Ours: work_queue's narration checks the latest result's first line against the
    record it names, instead of every known line: the same answer for known lines, other records'
    lines, cut lines and lines with text after the record."""
    from harness.models.mock.agents import work_queue
    messages, tools, _ = _drive("work_queue", 25)
    visible = Visible(messages, tools, seed=0, knobs=Knobs())
    known = work_queue._known(visible)
    assert len(known.lines) > 3
    lines = {line for m in messages for line in _content(m).split("\n")}
    lines |= {line[:-1] for line in known.lines.values()} | {line + " x" for line in known.lines.values()}
    lines |= {"Order ORD-999 | customer CUS-1 | sku SKU-a | quantity 2", "Customer CUS-0 | region west"}
    for line in lines:
        assert work_queue._is_record_line(line, known) == (line in known.lines.values()), line
    assert sum(work_queue._is_record_line(line, known) for line in lines) >= len(known.lines)


def test_what_is_derived_from_the_visible_calls_follows_a_result_cleared_in_place():
    """Ours: Visible.derived keeps a list worked out from the calls and results (the repo
    agent's edits) until they change: a cleared edit result drops the edit, as a fresh reading does."""
    from harness.models.mock.agents import repo_maintenance
    from harness.models.mock.agents.memory import Memory
    messages, tools, _ = _drive("repo_maintenance", 12)
    memory = Memory()
    edits = repo_maintenance._edits(Visible(messages, tools, seed=0, knobs=Knobs(), memory=memory))
    assert edits
    at = next(i for i, m in enumerate(messages) if m.get("tool_call_id") == edits[-1].call_id)
    cleared = [*messages[:at], {**messages[at], "content": "[cleared]"}, *messages[at + 1:]]
    kept = repo_maintenance._edits(Visible(cleared, tools, seed=0, knobs=Knobs(), memory=memory))
    assert [e.call_id for e in kept] == [e.call_id for e in repo_maintenance._edits(
        Visible(cleared, tools, seed=0, knobs=Knobs()))] == [e.call_id for e in edits[:-1]]


def test_the_tool_names_follow_the_tool_list_of_each_request():
    """Ours: the names of the request's tools are kept with the session's memory while its
    tool list holds the same schemas; a list with another tool, or without one, gives its own names."""
    from harness.models.mock.agents.memory import Memory
    memory = Memory()
    schema = lambda name: {"type": "function", "function": {"name": name}}  # noqa: E731
    first = [schema("read_file"), schema("condense")]
    for tools, names in ((first, {"read_file", "condense"}), (list(first), {"read_file", "condense"}),
                         ([first[0]], {"read_file"}), ([first[0], schema("read_tool_result")],
                                                       {"read_file", "read_tool_result"}), ([], set())):
        visible = Visible([{"role": "user", "content": "hi"}], tools, seed=0, knobs=Knobs(), memory=memory)
        assert visible.tool_names == names == Visible([], tools, seed=0, knobs=Knobs()).tool_names


@pytest.mark.parametrize("text", [
    "", "req-0000000a host=h status=200", "x\nreq-0000000a host=h status=200\nreq-0000000a host=h status=500",
    "req-0000000b host=h status=1\nreq-0000000c host=h status=2 latency=3\n\nreq-0000000b host=h status=3\n",
    " req-0000000d host=h status=1\nreq-0000000e host= status=2\nreq-0000000f host=a b status=3"])
def test_a_dumps_first_status_of_each_request_is_what_a_scan_of_every_line_gives(text):
    """Ours: big_output maps each request to its first status line with STATUS on the first
    line and LATER_STATUS after it, as STATUS.findall over every line (first of each request kept) does."""
    from harness.models.mock.agents import big_output
    expected: dict[str, str] = {}
    for request, status in big_output.STATUS.findall(text):
        expected.setdefault(request, status)
    assert big_output._first_statuses(text) == expected


def test_the_first_statuses_of_every_dump_of_a_run_are_what_a_scan_of_every_line_gives():
    """The same over the dumps a big_output smoke run fetches."""
    from harness.models.mock.agents import big_output
    messages, _, _ = _drive("big_output", 8)
    dumps = [_content(m) for m in messages if " status=" in _content(m)]
    assert dumps
    for text in dumps:
        expected: dict[str, str] = {}
        for request, status in big_output.STATUS.findall(text):
            expected.setdefault(request, status)
        assert big_output._first_statuses(text) == expected and expected


def test_a_calls_arguments_text_is_their_sorted_json_for_every_visible_call():
    """Ours: Exchange.args_text, worked out once per call, is sorted_json of its arguments,
    which chained_lookup's refetch count compares calls by."""
    from harness.core.fast_json import sorted_json
    messages, tools, _ = _drive("chained_lookup", 20)
    exchanges = Visible(messages, tools, seed=0, knobs=Knobs()).exchanges
    assert len(exchanges) > 5
    for exchange in exchanges:
        assert exchange.args_text == sorted_json(exchange.args) == exchange.args_text


def test_a_search_results_paths_are_read_once_per_text_as_a_scan_of_its_hits_gives():
    """Ours: chained_lookup keeps the distinct paths of a search result by its text; for every
    search result of a run they are its hits' paths in order, memoized or not, and another text reads as its own."""
    from harness.models.mock.agents.memo import forget
    messages, _, _ = _drive("chained_lookup", 12)
    results = [_content(m) for m in messages if m.get("role") == "tool" and "match(es) for" in _content(m)]
    assert results
    for text in results + [text + "\nother/file.txt:3" for text in results]:
        expected = tuple(dict.fromkeys(path for path, _ in chained_lookup.SEARCH_HIT.findall(text)))
        assert chained_lookup._hit_paths[text] == expected == chained_lookup._hit_paths[text] and expected
        forget()
        assert chained_lookup._hit_paths[text] == expected


@pytest.mark.parametrize("text", [
    '{"path": "src/app.py", "offset": 200, "from_end": false, "pattern": null}', '{"a": 1, "a": 2}', ' {"b": "é"} ',
    '{"x": NaN}', '{"x": 1e400}', '{"x": 123456789012345678901234567890}', '{"x": "\\ud800"}', '{"x": 1.5}',
    '{"x": {"y": [1, 2.5]}}', '[1, 2]', '"text"', '{"unclosed": ', '', '{"a": "\\u00e9\\n"}', '{"tab": "\t"}',
    '{"n": 18446744073709551616}'])
def test_a_calls_arguments_read_as_the_json_module_reads_them(text):
    """Ours: arguments are parsed by orjson where it reads them exactly as json.loads does
    (an object of plain values), by json otherwise: a big integer, NaN, a lone surrogate read as json reads them."""
    import json

    from harness.models.mock.agents.memo import _parse_object

    try:
        expected = json.loads(text)
    except json.JSONDecodeError:
        expected = {}
    expected = expected if isinstance(expected, dict) else {}
    parsed = _parse_object(text)
    assert repr(parsed) == repr(expected) and [type(v) for v in parsed.values()] == [type(v) for v in expected.values()]


_LINES = ["RETRY_LIMIT = 7  # request retry limit", "RETRY_LIMIT = 7", "RETRY_LIMIT = ", "RETRY_LIMIT = # none",
          "RETRY_LIMIT =  7", "RETRY_LIMIT = 7\u00a0# nbsp", "RETRY_LIMIT = 7\t# tab", "MAX_RETRY_LIMIT = 7  # max",
          "RETRY_LIMITS = 7", "RETRY_LIMIT=7", "  RETRY_LIMIT = 7", "RETRY_LIMIT = x#y  # odd", "RETRY_LIMIT = 7#8"]


@pytest.mark.parametrize("line", _LINES)
def test_a_constant_is_set_as_the_regular_expression_would(line):
    """Ours: repo_maintenance's edit sets a constant's value by a string scan, not a regular
    expression built per constant; it gives what re.sub of that expression gives (a space, a tab, a no-break
    space and a `#` end the value; a near-miss name or no value leaves the line as it is)."""
    import re

    from harness.models.mock.agents.repo_maintenance import _set_value

    name = "RETRY_LIMIT"
    assert _set_value(line, name, "42") == re.sub(rf"^{re.escape(name)} = [^#\s]+", f"{name} = 42", line)


@pytest.mark.parametrize("text", ["\n".join(_LINES), "\n".join(_LINES[1:]), "\n".join(reversed(_LINES)), "",
                                  "RETRY_LIMIT = 7", "x\nRETRY_LIMIT = 7", "x\nRETRY_LIMIT = 7\n", "MAX_RETRY_LIMIT = 1",
                                  "a RETRY_LIMIT = 1\nRETRY_LIMIT = 2\r\nRETRY_LIMIT = 3"])
def test_a_constants_line_is_found_as_the_regular_expression_finds_it(text):
    """Ours: the first line opening with `NAME = ` is found by substring search, as
    `^NAME = .*$` with re.MULTILINE finds it (a name inside a line, or a longer name, is no match)."""
    import re

    from harness.models.mock.agents.repo_maintenance import _assignment_line

    for name in ("RETRY_LIMIT", "MAX_RETRY_LIMIT", "MISSING"):
        match = re.search(rf"^{re.escape(name)} = .*$", text, re.MULTILINE)
        assert _assignment_line(text, name) == (match.group(0) if match else None)
