"""repo_maintenance: long test logs, exact edits, success = the final repository passes the checker."""
import json

from tasks.base import ToolCall
from tasks.repo_maintenance import Params, build


def call(env, name, **args):
    return env.execute(ToolCall.from_message({"id": "c", "function": {"name": name, "arguments": json.dumps(args)}}))


def fix(env, bug):
    return call(env, "edit_file", path=bug.path, old=bug.line(bug.wrong), new=bug.line(bug.right))


def test_failure_details_sit_in_the_middle_and_only_the_count_at_the_end():
    env = build(Params(bugs=3, log_lines=400), seed=1)
    log = call(env, "run_tests").content
    for bug in env.bugs:
        at = log.index(f"AssertionError: {bug.name} in {bug.path} should be {bug.right}")
        assert 0.3 < at / len(log) < 0.8
    assert log.splitlines()[-1].startswith("============ 3 failed, 400 passed")


def test_exact_fixes_pass_the_checker():
    env = build(Params(bugs=3), seed=2)
    for bug in env.bugs:
        assert not fix(env, bug).is_error
    assert env.score().success and env.score().score == 1.0
    assert call(env, "run_tests").content.splitlines()[-1].startswith("============ 300 passed")


def test_any_other_change_fails_the_checker():
    env = build(Params(bugs=2, distractors=1), seed=3)
    for bug in env.bugs:
        fix(env, bug)
    bug = env.bugs[0]
    near = f"MAX_{bug.name} = {bug.wrong}"
    assert not call(env, "edit_file", path=bug.path, old=near, new=f"MAX_{bug.name} = 1").is_error
    assert not env.score().success and env.score().score == 0.0


def test_edits_must_match_exactly_once_and_stay_in_src():
    env = build(Params(bugs=1, distractors=1), seed=4)
    bug = env.bugs[0]
    loose = call(env, "edit_file", path=bug.path, old=f"{bug.name} = {bug.wrong}", new="x")
    assert loose.is_error and "occurs 2 times" in loose.content
    assert call(env, "edit_file", path="../src/x.py", old="a", new="b").is_error
    assert call(env, "edit_file", path="notes/x.md", old="a", new="b").is_error


def test_clamped_logs_hide_the_failures_and_paging_finds_them(run_suite, tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"task_id": "rm", "family": "repo_maintenance", "seed": 5,
                                "params": {"bugs": 2, "log_lines": 1200}}) + "\n")
    runs = run_suite(str(path), strategies="none,stand_ins:ClampHeadTail,stand_ins:TruncateWithPaging",
                     window=400_000).set_index("strategy")
    assert runs.loc["none", "success"] and runs.loc["stand_ins:TruncateWithPaging", "success"]
    assert not runs.loc["stand_ins:ClampHeadTail", "success"]


def test_the_kept_test_log_is_the_fresh_one_of_the_files_as_they_are_after_each_edit():
    """Ours: run_tests keeps its last log with the file texts it was made of; after every edit
    (a fix, another change, an edit back) the log it returns is the one made afresh from the files, never the
    kept one of older texts."""
    env = build(Params(bugs=3, log_lines=50), seed=5)
    first = call(env, "run_tests").content
    assert call(env, "run_tests").content == first == env._fresh_log()
    logs = {first}
    for bug in env.bugs:
        fix(env, bug)
        log = call(env, "run_tests").content
        assert log == env._fresh_log() and log not in logs
        logs.add(log)
    bug = env.bugs[0]
    call(env, "edit_file", path=bug.path, old=bug.line(bug.right), new=bug.line(bug.wrong))
    assert call(env, "run_tests").content == env._fresh_log() != log
