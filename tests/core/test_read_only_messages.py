"""Strategies cannot fool the mock: messages handed to strategies cannot be changed in
place; only view ops change what is sent."""
import copy
import json
import pickle

import pytest

from harness.conversation.context import RunContext
from harness.conversation.events import EventLog
from harness.core.frozen import RULE, MessageEditError, freeze
from harness.conversation.view import fold

MESSAGE = {"role": "assistant", "content": [{"type": "text", "text": "hi"}],
           "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}


def _ctx():
    ctx = RunContext(EventLog(), {}, run_id="r", seed=0)
    ctx.add_message({"role": "system", "content": "sys"}, origin="task")
    ctx.add_message(copy.deepcopy(MESSAGE), origin="agent")
    ctx.add_message({"role": "tool", "tool_call_id": "c1", "content": "result"}, origin="tool")
    return ctx


EDITS = {
    "set a key": lambda m: m.__setitem__("content", "x"),
    "delete a key": lambda m: m.pop("content"),
    "update": lambda m: m.update(content="x"),
    "setdefault": lambda m: m.setdefault("name", "x"),
    "merge in place": lambda m: m.__ior__({"content": "x"}),
    "clear": lambda m: m.clear(),
    "a content part": lambda m: m["content"][0].__setitem__("text", "x"),
    "append to content": lambda m: m["content"].append({"type": "text", "text": "x"}),
    "extend content": lambda m: m["content"].extend([]),
    "sort content": lambda m: m["content"].sort(),
    "a tool call's arguments": lambda m: m["tool_calls"][0]["function"].__setitem__("arguments", '{"a": 1}'),
    "drop a tool call": lambda m: m["tool_calls"].pop(),
    "slice-assign tool calls": lambda m: m["tool_calls"].__setitem__(slice(0, 1), []),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=list(EDITS))
def test_every_message_a_strategy_can_reach_refuses_in_place_edits(edit):
    """ViewState.message, .messages, to_messages() and the events add_message/emit return
    all hold the same read-only message; every mutator, nested ones too, raises naming the rule."""
    ctx = _ctx()
    event = ctx.log.events[1]
    reached = [ctx.view.message(1), ctx.view.messages[1], ctx.view.to_messages()[1], event["message"]]
    assert all(m is reached[0] for m in reached)
    for message in reached:
        with pytest.raises(MessageEditError, match="never by editing a message in place"):
            edit(message)
    assert ctx.view.to_messages()[1] == MESSAGE


def test_the_view_order_and_its_message_table_are_read_only():
    """A strategy cannot put a message into the view, or swap one, except by view ops."""
    ctx = _ctx()
    with pytest.raises(MessageEditError):
        ctx.view.ids.append(0)
    with pytest.raises(MessageEditError):
        ctx.view.ids.remove(0)
    with pytest.raises(TypeError):
        ctx.view.messages[1] = {"role": "assistant", "content": "swapped"}
    assert ctx.view.ids == [0, 1, 2]


def test_a_replace_message_edited_after_its_op_changes_nothing_sent():
    """The message of a replace op is frozen as it applies: the strategy's own dict, edited
    later, is not what is sent (the log and replay keep what was applied)."""
    ctx = _ctx()
    rendering = {"role": "tool", "tool_call_id": "c1", "content": "[cleared]"}
    ctx.emit("compaction", step="test", view_ops=[{"op": "replace", "id": 2, "message": rendering}])
    rendering["content"] = "sneaked in"
    assert ctx.view.to_messages()[2]["content"] == "[cleared]"
    with pytest.raises(MessageEditError):
        ctx.view.message(2)["content"] = "x"


def test_copies_are_plain_and_editable_and_serialize_as_plain_data():
    """Read-only messages copy into plain ones (how a strategy makes a replace op's message), and json,
    pickle (process pools) and the log's orjson writer read them as the dicts they were."""
    frozen = freeze(MESSAGE)
    for duplicate in (dict(frozen), {**frozen}, frozen.copy(), copy.copy(frozen)):
        duplicate["content"] = "edited"
    deep = copy.deepcopy(frozen)
    deep["tool_calls"][0]["function"]["arguments"] = "{}"
    deep["content"].append("x")
    assert type(deep["tool_calls"]) is list and frozen == MESSAGE
    sliced = frozen["tool_calls"][:]
    sliced.append(1)
    assert json.loads(json.dumps(frozen)) == MESSAGE
    assert pickle.loads(pickle.dumps(frozen)) == MESSAGE
    events = EventLog()
    events.append("message", message=frozen)
    assert fold([json.loads(json.dumps(e)) for e in events.events]).to_messages() == [MESSAGE]
    assert str(RULE) in str(pytest.raises(MessageEditError, frozen.clear).value)


def test_a_strategy_editing_in_place_ends_its_runs_in_an_error_naming_it_and_the_rule(run_suite):
    """Before, `ClearInPlace` (ClearOlderTurns' cut made by editing dicts in place) fooled
    the mock: the agent kept the old content and the edit was never logged. Now every run where it edits
    ends `error`, the message naming the strategy and the rule; the runs of another strategy go on."""
    runs = run_suite("smoke", strategies="stand_ins:ClearInPlace,stand_ins:ClearOlderTurns")
    in_place = runs[runs["strategy"] == "stand_ins:ClearInPlace"].set_index("task_id")
    through_ops = runs[runs["strategy"] == "stand_ins:ClearOlderTurns"].set_index("task_id")
    cleared = [task for task in through_ops.index  # the tasks whose older turns ClearOlderTurns cleared
               if through_ops.loc[task, "compactions"] > 0]
    assert cleared
    for task in cleared:
        assert in_place.loc[task, "termination"] == "error"
        assert "strategy stand_ins:ClearInPlace edited a message in place" in in_place.loc[task, "error"]
        error = in_place.loc[task, "error"]
        assert "view ops" in error and "never by editing a message in place" in error
    assert (through_ops["termination"] == "submitted").all()


def test_litellm_path_of_the_mock_reads_read_only_messages(run_suite, tmp_path):
    """litellm's own completion path (the mock reached `via` litellm, as real models are) accepts read-only
    messages without editing them: the smoke suite runs as through the direct path."""
    from harness import api
    from harness.results.report import runs_frame

    direct = run_suite("smoke", strategies="stand_ins:ClearOlderTurns")
    profiles = api.mock_profiles()
    for profile in profiles.values():
        profile.setdefault("mock", {})["via"] = "litellm"
    api.run("smoke", strategies="stand_ins:ClearOlderTurns", profiles=profiles, out=tmp_path / "litellm")
    through = runs_frame(tmp_path / "litellm")
    assert (through["termination"] == "submitted").all() and through["error"].isna().all()
    assert list(through["input_tokens"]) == list(direct["input_tokens"])


def test_the_view_hands_out_no_list_of_its_own_to_edit():
    """Ids_of_role's list (kept between calls) refuses edits; to_messages() is a new list."""
    ctx = _ctx()
    with pytest.raises(MessageEditError):
        ctx.view.ids_of_role("tool").append(0)
    ctx.view.to_messages().clear()
    assert ctx.view.ids_of_role("tool") == [2] and len(ctx.view.to_messages()) == 3
