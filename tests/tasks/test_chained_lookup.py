"""Task family chained_lookup and suite validation."""
import json

import pytest

from harness.core.errors import ConfigError, TaskFileError
from tasks.base import ToolCall
from tasks.chained_lookup import Params, build
from tasks.suites import load_tasks


def _call(name, **args):
    return ToolCall.from_message({"id": "c", "function": {"name": name, "arguments": json.dumps(args)}})


def test_generation_is_deterministic_per_seed():
    first, again, other = build(Params(), 7), build(Params(), 7), build(Params(), 8)
    assert first.fs.files == again.fs.files and first.expected == again.expected
    assert first.fs.files != other.fs.files


def test_knobs_scale_the_instance():
    small, large = build(Params(hops=3, filler_lines=0), 1), build(Params(hops=12, files=8, distractors=60,
                                                                           filler_lines=20), 1)
    assert sum(map(len, large.fs.files.values())) > 10 * sum(map(len, small.fs.files.values()))
    assert "through 12 records" in large.initial_user_messages()[0]


def test_success_is_checked_from_the_submitted_answer():
    env = build(Params(), 3)
    assert not env.score().success  # nothing submitted
    env.execute(_call("submit_answer", answer=str(env.expected)))
    assert env.submitted and env.score().success
    wrong = build(Params(), 3)
    wrong.execute(_call("submit_answer", answer=str(wrong.expected + 1)))
    assert not wrong.score().success


def test_paths_outside_the_workspace_get_an_error_result():
    env = build(Params(), 1)
    for path in ("../../etc/passwd", "/etc/passwd", "notes/../../x"):
        result = env.execute(_call("read_file", path=path))
        assert result.is_error and "outside the workspace" in result.content or "leaves the workspace" in result.content


def test_malformed_tool_arguments_get_an_error_result_the_agent_can_read():
    env = build(Params(), 1)
    bad_json = ToolCall.from_message({"id": "c", "function": {"name": "search", "arguments": "{text: x"}})
    result = env.execute(bad_json)
    assert result.is_error and "not valid JSON" in result.content
    assert env.execute(_call("search")).content.startswith("Error: search: missing required argument 'text'")
    assert "unknown tool" in env.execute(_call("rm", path="x")).content


def test_impossible_params_are_refused():
    with pytest.raises(ConfigError, match=r"hops must be in \[1, 2000\], got 0"):
        Params(hops=0)


def test_a_bad_task_row_names_file_line_and_field(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"task_id": "a", "family": "chained_lookup", "seed": 1}) + "\n"
                    + json.dumps({"task_id": "b", "family": "chained_lookup", "seed": 2, "params": {"hops": -1}}) + "\n")
    with pytest.raises(TaskFileError, match=r"tasks.jsonl:2: field params: hops must be in \[1, 2000\], got -1"):
        load_tasks(str(path))
    path.write_text('{"task_id": "a", "family": "chained_lookup", "seed": 1}\n{"task_id": \n')
    with pytest.raises(TaskFileError, match=r"tasks.jsonl:2: not valid JSON"):
        load_tasks(str(path))
    path.write_text(json.dumps({"task_id": "a", "family": "chained_lookup", "seed": 1, "colour": "red"}) + "\n")
    with pytest.raises(TaskFileError, match=r"tasks.jsonl:1: unknown field\(s\) colour"):
        load_tasks(str(path))


def test_builtin_suites_load():
    assert load_tasks("smoke") and load_tasks("default") and load_tasks("long")
