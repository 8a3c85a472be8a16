"""Event log and views: the view is a fold over the append-only log."""
import json

import pytest

from harness.conversation.events import EventLog
from harness.conversation.view import ViewState, fold


def _log_with_messages(n):
    log = EventLog()
    view = ViewState()
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        view.apply(log.append("message", message={"role": role, "content": f"message {i} " * 20}, origin="user"))
    return log, view


def test_messages_append_to_the_view_and_tokens_are_counted_once_each():
    log, view = _log_with_messages(4)
    assert view.ids == [0, 1, 2, 3]
    assert view.total_tokens == sum(view.tokens(i) for i in view.ids)


def test_replace_changes_what_is_sent_but_not_the_log():
    log, view = _log_with_messages(3)
    before = view.hash()
    event = log.append("compaction", view_ops=[{"op": "replace", "id": 1,
                                                 "message": {"role": "assistant", "content": "[cleared]"}}])
    view.apply(event)
    assert view.message(1)["content"] == "[cleared]"
    assert log.events[1]["message"]["content"].startswith("message 1")
    assert view.hash() != before
    assert view.is_replaced(1)


def test_drop_and_set_rebuild_identically_from_the_log():
    log, view = _log_with_messages(6)
    view.apply(log.append("compaction", view_ops=[{"op": "drop", "ids": [1, 2]}]))
    view.apply(log.append("message", message={"role": "user", "content": "notice"}, origin="environment",
                          placement="none"))
    view.apply(log.append("condensation", kind="test", view_ops=[{"op": "set", "ids": [0, 7, 5]}]))
    assert view.ids == [0, 7, 5]
    rebuilt = fold(log.events)
    assert rebuilt.ids == view.ids
    assert rebuilt.hash("tools") == view.hash("tools")
    assert rebuilt.total_tokens == view.total_tokens


def test_incremental_hash_equals_a_fresh_fold_after_every_event():
    log, view = _log_with_messages(5)
    view.hash()
    steps = [
        {"op": "replace", "id": 3, "message": {"role": "assistant", "content": "short"}},
        {"op": "drop", "ids": [0]},
        {"op": "set", "ids": [1, 2, 3]},
    ]
    for op in steps:
        view.apply(log.append("edit", view_ops=[op]))
        view.apply(log.append("message", message={"role": "user", "content": "more"}, origin="user"))
        assert view.hash("t") == fold(log.events).hash("t")


def test_set_refuses_unknown_message_ids():
    log, view = _log_with_messages(2)
    with pytest.raises(ValueError, match="unknown message ids"):
        view.apply(log.append("condensation", view_ops=[{"op": "set", "ids": [0, 99]}]))


def test_messages_as_sent_kept_incrementally_equal_a_fresh_fold_after_every_op():
    """to_messages() and ids_of_role() reuse their lists while the view grows; every op must
    still show in them."""
    import random

    rng = random.Random(7)
    log, view = _log_with_messages(3)
    for step in range(120):
        kind = rng.choice(["append", "append", "append", "replace", "drop", "set"])
        if kind == "append":
            role = rng.choice(["tool", "assistant"])
            event = log.append("message", message={"role": role, "content": f"result {step}"}, origin="tool")
        elif kind == "replace" and view.ids:
            event = log.append("compaction", view_ops=[{"op": "replace", "id": rng.choice(view.ids),
                                                         "message": {"role": "tool", "content": f"[cleared {step}]"}}])
        elif kind == "drop" and len(view.ids) > 2:
            event = log.append("compaction", view_ops=[{"op": "drop", "ids": rng.sample(view.ids, 2)}])
        else:
            kept = sorted(rng.sample(sorted(view.messages), min(len(view.messages), rng.randint(1, 6))))
            event = log.append("condensation", kind="test", view_ops=[{"op": "set", "ids": kept}])
        view.apply(event)
        if rng.random() < 0.5:
            sent = view.to_messages()
            assert sent == fold(log.events).to_messages()
            sent.append({"role": "user", "content": "a caller's own list"})  # must not reach the view
        if rng.random() < 0.5:
            assert view.ids_of_role("tool") == [i for i in view.ids if view.messages[i]["role"] == "tool"]
    assert view.to_messages() == fold(log.events).to_messages()
    assert view.hash() == fold(log.events).hash()


class _Label(str):
    """A str subclass, as a user strategy might log (e.g. a str-valued enum)."""


@pytest.mark.parametrize("event", [
    {"id": 0, "type": "llm_call", "cost_usd": 1.5e-05, "latency_s": 0.000123, "usage": {"input_tokens": 10**6}},
    {"id": 1, "type": "message", "message": {"role": "tool", "content": "é\u2028\x7f\t\"quoted\"\n" + "x" * 5000}},
    {"id": 2, "type": "compaction", "message_ids": (3, 4), "by_id": {7: "seven", 2.5: "half", None: "none"}},
    {"id": 3, "type": "warning", "level": _Label("0.75"), "huge": 2**70, "nested": [{"a": [1, [2, {"b": None}]]}]},
])
def test_an_event_line_reads_back_as_the_standard_json_encoder_writes_it(event):
    """Event lines come from orjson for speed; what it writes differently (float spelling) reads back the
    same, and what it refuses (str subclasses, integers past 64 bits) is written by the standard encoder."""
    from harness.core.fast_json import json_line

    line = json_line(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == json.loads(json.dumps(event, ensure_ascii=False))


def test_an_event_log_file_reads_back_equal_to_the_events_in_memory(tmp_path):
    from harness.conversation.events import read_events

    log = EventLog(tmp_path / "run.jsonl")
    log.append("message", message={"role": "user", "content": "naïve ☃ text"}, origin="user")
    log.append("llm_call", ok=True, usage={"input_tokens": 12}, cost_usd=3e-06, detail={1: _Label("x")})
    log.close()
    assert read_events(tmp_path / "run.jsonl") == json.loads(json.dumps(log.events))


def test_a_run_log_kept_on_disk_alone_hands_each_event_on_and_says_where_its_events_are(tmp_path):
    from harness.conversation.events import read_events

    seen = []
    log = EventLog(tmp_path / "run.jsonl", in_memory=False, on_append=seen.append)
    for i in range(3):
        log.append("message", message={"role": "user", "content": f"m{i}"}, origin="user")
    log.close()
    assert len(log) == 3 and [e["id"] for e in seen] == [0, 1, 2]
    assert read_events(tmp_path / "run.jsonl") == seen
    with pytest.raises(RuntimeError, match="run.jsonl"):
        log.events
    with pytest.raises(ValueError, match="kept nowhere"):
        EventLog(in_memory=False)


def _chain_by_definition(view, tools_hash):
    """The view hash as recorded in every event log: each link stable_digest(hex of the link before + hex of the
    message's stable_digest), the whole stable_hash(tools hash + hex of the last link)."""
    from harness.core.tokens import stable_digest, stable_hash
    link = b""
    for message_id in view.ids:
        link = stable_digest(link.hex() + stable_digest(view.message(message_id)).hex())
    return stable_hash(tools_hash + link.hex())


def test_view_hash_keeps_its_recorded_definition_through_replaces_in_the_middle():
    """Ours: the hash chain is kept as hex texts and re-linked after a replace ~20 messages
    back (masking, clearing); the value must stay the one logs recorded, after every edit."""
    log, view = _log_with_messages(30)
    assert view.hash("t") == _chain_by_definition(view, "t")
    for message_id in (9, 25, 3, 29, 9):
        view.apply(log.append("compaction", view_ops=[{"op": "replace", "id": message_id,
                                                        "message": {"role": "assistant", "content": f"[{message_id}]"}}]))
        assert view.hash("t") == _chain_by_definition(view, "t")
    view.apply(log.append("compaction", view_ops=[{"op": "drop", "ids": [4]}]))
    view.apply(log.append("compaction", view_ops=[{"op": "replace", "id": 4,  # not in the view: nothing re-linked
                                                    "message": {"role": "assistant", "content": "[4]"}}]))
    view.apply(log.append("message", message={"role": "user", "content": "end"}, origin="user"))
    assert 4 not in view.ids and view.message(4)["content"] == "[4]"
    assert view.hash("") == _chain_by_definition(view, "")


def test_a_replace_finds_its_message_through_appends_drops_and_sets():
    """Ours: a replace finds its message's position through an index built at the first replace
    and kept while the view grows, rebuilt after a drop or set; each step must equal a fresh fold of the log."""
    log, view = _log_with_messages(6)
    assert view._positions is None  # a view never edited keeps no index

    def replace(message_id):
        view.apply(log.append("compaction", view_ops=[{"op": "replace", "id": message_id,
                                                        "message": {"role": "assistant", "content": f"[{message_id}]"}}]))

    def append(text):
        event = log.append("message", message={"role": "user", "content": text}, origin="user")
        view.apply(event)
        return event["id"]

    def same_as_a_fresh_fold():
        rebuilt = fold(log.events)
        assert (rebuilt.ids, rebuilt.total_tokens, rebuilt.hash("t")) == (view.ids, view.total_tokens, view.hash("t"))
        assert [view.message(i) for i in view.ids] == [rebuilt.message(i) for i in rebuilt.ids]

    replace(2)
    late = append("after the index was built")
    replace(late)  # appended after the first replace: its position came in with it
    assert view.message(late)["content"] == f"[{late}]" and view._positions[late] == len(view.ids) - 1
    same_as_a_fresh_fold()
    view.apply(log.append("compaction", view_ops=[{"op": "drop", "ids": [0, 1]}]))
    after_drop = append("after a drop")
    replace(3)  # positions moved by the drop
    replace(after_drop)
    assert view.ids.index(3) == 1 and view.message(3)["content"] == "[3]"
    same_as_a_fresh_fold()
    view.apply(log.append("condensation", kind="test", view_ops=[{"op": "set", "ids": [after_drop, 3, 4]}]))
    replace(4)
    replace(1)  # no longer in the view: the log changes, the view's tokens do not
    same_as_a_fresh_fold()
    assert view.message(4)["content"] == "[4]" and 1 not in view.ids and view._positions == {after_drop: 0, 3: 1, 4: 2}
