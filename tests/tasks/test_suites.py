"""Suites, the row schema, `ctxbench tasks`, and what every task family must do."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pandas as pd
import pytest

from harness.cli import main as cli_main
from harness.core.config import build_dataclass
from harness.core.errors import TaskFileError
from harness.models.mock.agents import AGENTS, respond
from harness.models.mock.agents.common import Visible, build_knobs
from tasks import FAMILIES, family_module
from tasks.base import ToolCall
from tasks.suites import load_tasks
from tasks.workspace import read_file_result

NEW_FAMILIES = ("work_queue", "plant_early_ask_late", "big_output", "repo_maintenance")
WORKSPACE_FAMILIES = ("chained_lookup", *NEW_FAMILIES)  # every family on tasks.workspace's shared tools


def small_env(family: str, seed: int = 0):
    row = next(r for r in load_tasks("smoke") if r.family == family)
    return family_module(family).build(family_module(family).Params(**row.params), seed)


def call(env, name: str, arguments: Any) -> Any:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return env.execute(ToolCall.from_message({"id": "c1", "function": {"name": name, "arguments": raw}}))


def drive(env, messages: list[dict], max_steps: int = 400, reset_at: int | None = None) -> None:
    """Run the mock agent against an environment in-process; optionally reset its context once.

    The reset follows the agent-reset contract: the agent's notes are the only record of the
    task, read back with read_file after the history is dropped.
    """
    tools = [spec.schema() for spec in env.tool_specs()]
    for step in range(max_steps):
        if env.submitted:
            return
        for text in env.user_messages_due(step):
            messages.append({"role": "user", "content": text})
        if step == reset_at:
            visible = Visible(messages, tools, seed=0, knobs=build_knobs({}))
            agent, task = next((a, t) for a in AGENTS if (t := a.find_task(visible)) is not None)
            env.fs.write("notes/progress.md", agent.notes(visible, task))
            messages[1:] = [
                {"role": "user", "content": "The agent triggered context condensation."},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "r1", "type": "function",
                     "function": {"name": "read_file", "arguments": '{"path": "notes/progress.md"}'}}]},
                {"role": "tool", "tool_call_id": "r1",
                 "content": read_file_result("notes/progress.md", env.fs.read("notes/progress.md")).content}]
        reply = respond(messages, tools, seed=0)
        messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls and not env.has_pending_user_messages():
            return
        for raw in calls:
            result = env.execute(ToolCall.from_message(raw))
            messages.append({"role": "tool", "tool_call_id": raw["id"], "content": result.content})


def opening(env) -> list[dict]:
    return [{"role": "system", "content": env.system_prompt},
            *({"role": "user", "content": text} for text in env.initial_user_messages())]


def test_smoke_covers_every_family_and_default_has_four_per_family():
    assert {r.family for r in load_tasks("smoke")} == set(FAMILIES)
    per_family = Counter(r.family for r in load_tasks("default"))
    assert set(per_family) == set(FAMILIES) and min(per_family.values()) >= 4, per_family


def test_forgetful_fails_every_family(run_suite):
    """A strategy that removes all tool results makes the mock fail every family."""
    runs = run_suite("smoke", strategies="forgetful:PlaceholderEverything")
    assert set(runs["family"]) == set(FAMILIES)
    assert not runs["success"].any(), runs[["task_id", "score", "termination"]]


def test_none_with_too_small_a_window_ends_in_context_overflow(run_suite):
    big = run_suite("smoke", strategies="none", window=1_000_000)
    assert big["success"].all(), big[["task_id", "termination"]]
    small = run_suite("smoke", strategies="none", window=int(big["peak_context_tokens"].min()) // 2)
    assert (small["termination"] == "context_overflow").all(), small[["task_id", "termination"]]


@pytest.mark.parametrize("family", NEW_FAMILIES)
def test_generation_is_deterministic_per_seed(family):
    def snapshot(seed):
        env = small_env(family, seed)
        return env.initial_user_messages(), dict(env.fs.files), env.score().detail

    assert snapshot(3) == snapshot(3)
    assert snapshot(3) != snapshot(4)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_generated_instance_is_copied_per_run_and_runs_never_share_state(family, monkeypatch):
    """TaskRow.build generates once per process; each run still gets its own world."""
    from tasks import suites

    monkeypatch.setattr(suites, "_GENERATED", type(suites._GENERATED)())
    row = next(t for t in load_tasks("smoke") if t.family == family)
    first = row.build()
    first.execute(ToolCall.from_message({"id": "w", "function": {"name": "write_file", "arguments": json.dumps(
        {"path": "notes/mine.md", "content": "first run's notes"})}}))
    first.submitted = True
    second, third = row.build(), row.build()
    assert second is not third and second.fs is not third.fs
    assert "notes/mine.md" not in second.fs.files and not second.submitted
    assert second.fs.files == third.fs.files == {k: v for k, v in first.fs.files.items() if k != "notes/mine.md"}
    assert second.initial_user_messages() == first.initial_user_messages()
    assert second.score() == third.score()
    assert len(suites._GENERATED) == 1


def test_runs_share_the_generated_data_and_never_change_it(monkeypatch, tmp_path):
    """Environment.generated: what a family declares fixed at generation is shared by the runs' copies, not
    copied again. Every comparison strategy runs every smoke task on copies of one generated instance; the
    shared data then still equals a fresh generation's, and each declared name is an attribute."""
    import copy

    from harness.api import run
    from tasks import suites

    monkeypatch.setattr(suites, "_GENERATED", type(suites._GENERATED)())
    rows = load_tasks("smoke")
    shared = {row.task_id: row.build() for row in rows}
    for row in rows:
        assert shared[row.task_id].generated, f"{row.family} declares no generated data"
        run_copy = copy.deepcopy(shared[row.task_id])
        for name in shared[row.task_id].generated:
            assert getattr(run_copy, name) is getattr(shared[row.task_id], name), (row.family, name)
    run("smoke", strategies="all", out=tmp_path / "r", workers=1)  # in this process: the copies share with `shared`
    for row in rows:
        module = family_module(row.family)
        fresh = module.build(build_dataclass(module.Params, row.params, "params"), row.seed)
        for name in fresh.generated:
            assert getattr(shared[row.task_id], name) == getattr(fresh, name), (row.family, name)


def test_an_instance_that_cannot_be_copied_is_built_for_every_run(monkeypatch):
    """A copyable family whose instance holds outside state (a lock) after all is simply generated each time."""
    import threading

    from tasks import suites

    monkeypatch.setattr(suites, "_GENERATED", type(suites._GENERATED)())
    row = next(t for t in load_tasks("smoke") if t.family == "work_queue")
    module = family_module("work_queue")
    real_build = module.build

    def build_with_a_lock(params, seed):
        environment = real_build(params, seed)
        environment.lock = threading.Lock()
        return environment

    monkeypatch.setattr(module, "build", build_with_a_lock)
    first, second = row.build(), row.build()
    assert first is not second and first.lock is not second.lock
    assert not suites._GENERATED


@pytest.mark.parametrize("family", WORKSPACE_FAMILIES)
@pytest.mark.parametrize("name, args", [("read_file", {"path": "../../etc/passwd"}),
                                        ("read_file", {"path": "/etc/passwd"}),
                                        ("write_file", {"path": "notes/../../x", "content": "x"}),
                                        ("list_files", {"prefix": "../.."})])
def test_path_traversal_is_refused(family, name, args):
    result = call(small_env(family), name, args)
    assert result.is_error and "root:" not in result.content


@pytest.mark.parametrize("family", WORKSPACE_FAMILIES)
def test_notes_are_writable_and_only_notes(family):
    env = small_env(family)
    assert not call(env, "write_file", {"path": "notes/a.md", "content": "hello"}).is_error
    assert "hello" in call(env, "read_file", {"path": "notes/a.md"}).content
    assert call(env, "write_file", {"path": "src/a.py", "content": "x"}).is_error


@pytest.mark.parametrize("family", WORKSPACE_FAMILIES)
@pytest.mark.parametrize("arguments, message", [("{not json", "not valid JSON"), ("[1]", "must be a JSON object"),
                                                ({}, "missing required argument"),
                                                ({"path": 3}, "must be of type string"),
                                                ({"path": "notes/a", "extra": 1}, "unknown argument")])
def test_malformed_tool_arguments_get_an_error_result(family, arguments, message):
    result = call(small_env(family), "read_file", arguments)
    assert result.is_error and message in result.content


@pytest.mark.parametrize("family", NEW_FAMILIES)
def test_agent_finishes_from_its_notes_after_a_reset(family):
    """After a reset the task statement survives only in the notes; the agent picks it up from there."""
    env = small_env(family)
    drive(env, opening(env), reset_at=4)
    assert env.submitted and env.score().success, env.score().detail


def test_jsonl_errors_name_file_line_and_field(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"task_id": "a", "family": "work_queue", "seed": 1}\n\n'
                    '{"task_id": "b", "family": "work_queue", "seed": 2, "params": {"items": 0}}\n')
    with pytest.raises(TaskFileError, match=rf"{path}:3: field params: items must be in \[1, 500\]"):
        load_tasks(str(path))
    path.write_text('{"task_id": "a", "family": "nope", "seed": 1}\n')
    with pytest.raises(TaskFileError, match=rf"{path}:1: field 'family': unknown task family 'nope'"):
        load_tasks(str(path))
    path.write_text('{"task_id": "a", "family": "work_queue", "seed": 1, "params": {"itemz": 2}}\n')
    with pytest.raises(TaskFileError, match=r":1: field params: unknown key\(s\) 'itemz'"):
        load_tasks(str(path))
    path.write_text('{"task_id": "a", "family": "work_queue", "seed": 1}\n{"task_id": "a", "family": "work_queue", '
                    '"seed": 2}\n')
    with pytest.raises(TaskFileError, match=r":2: duplicate task_id 'a'"):
        load_tasks(str(path))


def test_parquet_suites_load_and_name_the_bad_row(tmp_path):
    rows = [{"task_id": "p0", "family": "big_output", "seed": 1, "params": json.dumps({"dumps": 1, "dump_chars": 3000})},
            {"task_id": "p1", "family": "repo_maintenance", "seed": 2, "params": json.dumps({"bugs": 1})}]
    good = tmp_path / "good.parquet"
    pd.DataFrame(rows).to_parquet(good)
    assert [r.task_id for r in load_tasks(str(good))] == ["p0", "p1"]
    bad = tmp_path / "bad.parquet"
    pd.DataFrame([rows[0], {**rows[1], "seed": -3}]).to_parquet(bad)
    with pytest.raises(TaskFileError, match=rf"{bad} row 2: field 'seed' must be an integer in \[0, "):
        load_tasks(str(bad))


def test_tasks_list_shows_families_and_suites(capsys):
    assert cli_main(["tasks", "list"]) == 0
    out = capsys.readouterr().out
    for name in [*FAMILIES, "smoke", "default", "long"]:
        assert name in out


def test_tasks_list_names_every_task_id_of_every_suite(capsys):
    """`tasks show ID` needs an id, so `tasks list` shows each suite's task ids."""
    from tasks.suites import load_tasks, suite_names

    assert cli_main(["tasks", "list"]) == 0
    words = set(capsys.readouterr().out.split())
    for suite in suite_names():
        missing = [row.task_id for row in load_tasks(suite) if row.task_id not in words]
        assert not missing, f"suite {suite}: {missing} not listed"


def test_tasks_show_prints_prompt_and_tools(capsys):
    assert cli_main(["tasks", "show", "plant_early_ask_late-smoke-0"]) == 0
    out = capsys.readouterr().out
    assert "Before we start, some facts" in out and "record_count(path: string, errors: integer)" in out
    assert "Further user messages arrive" in out
    assert cli_main(["tasks", "show", "no-such-task"]) == 2
    assert "no task 'no-such-task'" in capsys.readouterr().err


@pytest.mark.slow
def test_long_suite_runs_are_long(run_suite):
    """`long`: at least 200 requests and 1M cumulative input tokens per run under `none` with a large window."""
    runs = run_suite("long", strategies="none", window=2_000_000, workers=2)
    assert runs["success"].all(), runs[["task_id", "termination"]]
    assert (runs["requests"] >= 200).all(), runs[["task_id", "requests"]]
    assert (runs["input_tokens"] >= 1_000_000).all(), runs[["task_id", "input_tokens"]]
