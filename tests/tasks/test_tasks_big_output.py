"""big_output: huge results with the needed line in the middle; clamping loses it, paging finds it."""
from harness.conversation.events import read_events
import json

from tasks.base import ToolCall
from tasks.big_output import Params, build


def call(env, name, **args):
    return env.execute(ToolCall.from_message({"id": "c", "function": {"name": name, "arguments": json.dumps(args)}}))


def test_default_dumps_are_over_100k_characters_with_the_asked_line_in_the_middle():
    env = build(Params(), seed=1)
    for question in env.questions:
        dump = env.dumps[env.names.index(question.dump)]
        assert len(dump) > 100_000
        at = dump.index(f"\n{question.request} ")
        assert 0.3 < at / len(dump) < 0.7
        near = [line for line in dump.splitlines() if line[:12] != question.request
                and sum(a != b for a, b in zip(line[:12], question.request)) == 1]
        assert len(near) == env.params.distractors


def test_a_fetched_dump_cannot_be_fetched_again():
    env = build(Params(dumps=2, dump_chars=3000), seed=2)
    assert call(env, "fetch_dump", dump="D2").is_error
    assert call(env, "fetch_dump", dump="D1").content.startswith("== dump D1 (")
    again = call(env, "fetch_dump", dump="D1")
    assert again.is_error and "already fetched" in again.content
    assert call(env, "answer_question", number=1, value="200").is_error  # not asked yet


def test_clamping_loses_the_middle_and_paging_recovers_it(run_suite, tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"task_id": "bo", "family": "big_output", "seed": 3,
                                "params": {"dumps": 2, "dump_chars": 100000, "questions": 3}}) + "\n")
    runs = run_suite(str(path), strategies="none,stand_ins:ClampHeadTail,stand_ins:TruncateWithPaging",
                     window=400_000).set_index("strategy")
    assert runs.loc["none", "success"]
    assert runs.loc["stand_ins:ClampHeadTail", "score"] == 0
    assert runs.loc["stand_ins:TruncateWithPaging", "success"]
    [log] = (runs.attrs["out"] / "events").glob("*TruncateWithPaging*.jsonl.gz")
    events = read_events(log)
    pages = [c for e in events if e["type"] == "message" and e.get("origin") == "agent"
             for c in e["message"].get("tool_calls") or () if c["function"]["name"] == "read_tool_result"]
    assert len(pages) >= 3
