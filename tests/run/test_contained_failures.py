"""Contained failures: whatever a strategy or a task raises, and whatever odd event or string
a run meets, ends that run only; faults over HTTP keyed by the client's request index."""
import json
import pytest

from conftest import write_suite_file
from harness.run import runner
from harness.cli import main
from harness.conversation.events import read_events
from harness.executors import local_processes as pool
from harness.core.fast_json import json_line
from harness.conversation.replay import replay_file
from harness.results.layout import read_runs
from harness.run.runner import Cell
from strategies import StrategySpec
from tasks.suites import load_tasks

HOOKS = ("on_run_start", "before_request", "after_response", "action_payload", "handle_tool_call",
         "transform_tool_result")


def run_matrix(tmp_path, strategy, config=None, workers=1, name="r", extra=()):
    """`ctxbench run` of `none` and `strategy` on smoke's chained_lookup tasks; its exit code and rows by strategy."""
    tasks = write_suite_file(tmp_path, "smoke", family="chained_lookup")
    argv = ["run", "--tasks", tasks, "--strategies", f"none,{strategy}", "--workers", str(workers), "--no-progress",
            "--out", str(tmp_path / name), *extra]
    if config is not None:
        argv += ["--strategy-config", json.dumps({strategy: config})]
    code = main(argv)
    rows = read_runs(tmp_path / name)
    by_strategy = {}
    for row in rows:
        by_strategy.setdefault(row["strategy"], []).append(row)
    return code, by_strategy


def assert_contained(code, rows, strategy, *texts):
    """Exit 0, every `none` run submitted, every run of `strategy` an error row whose text holds `texts`."""
    assert code == 0
    assert len(rows["none"]) == 3 and all(r["termination"] == "submitted" for r in rows["none"])
    assert len(rows[strategy]) == 3
    for row in rows[strategy]:
        assert row["termination"] == "error" and all(text in row["error"] for text in texts), row["error"]


@pytest.mark.parametrize("hook", HOOKS)
def test_a_hook_raising_system_exit_ends_that_run_only_naming_the_hook(tmp_path, capsys, hook):
    """SystemExit from any hook is the run's `error`, naming the hook; the other runs finish,
    exit 0 (it ended the whole invocation: the runner caught Exception only)."""
    strategy = "misbehaving:RaiseInHook"
    code, rows = run_matrix(tmp_path, strategy, {"hook": hook})
    assert_contained(code, rows, strategy, "SystemExit: raised by", f"strategy {strategy}'s {hook}")


def test_on_context_window_error_raising_system_exit_ends_that_run_only(tmp_path, capsys):
    """SystemExit from on_context_window_error (a window too small for the first request) is the
    run's error naming the hook; `none` runs end context_overflow as usual, exit 0."""
    strategy = "misbehaving:RaiseInHook"
    code, rows = run_matrix(tmp_path, strategy, {"hook": "on_context_window_error"}, extra=["--window", "500"])
    assert code == 0 and all(r["termination"] == "context_overflow" for r in rows["none"])
    assert all(r["termination"] == "error" and f"{strategy}'s on_context_window_error" in r["error"]
               for r in rows[strategy]), [r["error"] for r in rows[strategy]]


@pytest.mark.parametrize("error", ["GeneratorExit", "SystemExit"])
def test_base_exceptions_are_contained_in_worker_processes_too(tmp_path, capsys, error):
    """With --workers 2 (runs in worker processes) a BaseException from a hook is that run's error
    row, and the other runs finish."""
    strategy = "misbehaving:RaiseInHook"
    code, rows = run_matrix(tmp_path, strategy, {"hook": "after_response", "error": error}, workers=2)
    assert_contained(code, rows, strategy, f"{error}: raised by after_response",
                     f"strategy {strategy}'s after_response")


def one_cell(tmp_path, strategy, config=None):
    task = next(t for t in load_tasks("smoke") if t.family == "chained_lookup")
    from harness.api import mock_profiles

    return Cell(task=task, strategy=StrategySpec(strategy, config or {}), seed=0, profiles=mock_profiles(),
                events_dir=str(tmp_path / "events"))


@pytest.mark.parametrize("hook", ["tools", "libraries"])
def test_a_strategy_raising_in_tools_or_libraries_during_its_run_ends_that_run(tmp_path, hook):
    """Validation calls tools() before any model call (and a raise there exits 2); a raise in the
    run's own call (tools, libraries) is that run's error naming the hook."""
    row = runner.run_cell(one_cell(tmp_path, "misbehaving:RaiseInHook", {"hook": hook}))
    assert row["termination"] == "error" and f"RaiseInHook's {hook}" in row["error"], row["error"]


def test_a_keyboard_interrupt_stops_the_invocation(tmp_path):
    """Ours (as pytest's runner): a KeyboardInterrupt cannot be told from a real Ctrl-C, so it is
    not contained: it stops the invocation."""
    cell = one_cell(tmp_path, "misbehaving:RaiseInHook", {"hook": "before_request", "error": "KeyboardInterrupt"})
    with pytest.raises(KeyboardInterrupt):
        runner.run_cell(cell)


@pytest.mark.parametrize("method", ["execute", "progress", "user_messages_due", "score"])
def test_task_code_raising_system_exit_ends_that_run_only(tmp_path, capsys, monkeypatch, method):
    """SystemExit from the task's own code (execute, progress, user_messages_due, score) is the
    run's error naming the task's method; the invocation finishes, exit 0."""
    from tasks.base import Environment

    original = getattr(Environment, method, None)
    calls = {"n": 0}

    def raising(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 3 or method in ("execute", "score"):
            raise SystemExit(f"task {method} exits")
        return original(self, *args, **kwargs)

    targets = {type(t.build(0)) for t in load_tasks("smoke") if t.family == "chained_lookup"}
    for kind in targets:
        monkeypatch.setattr(kind, method, raising)
    tasks = write_suite_file(tmp_path, "smoke", family="chained_lookup")
    assert main(["run", "--tasks", tasks, "--strategies", "none", "--workers", "1", "--no-progress",
                 "--out", str(tmp_path / "r")]) == 0
    rows = read_runs(tmp_path / "r")
    assert len(rows) == 3
    assert all(r["termination"] == "error" and f"'s {method}" in r["error"] and "SystemExit" in r["error"]
               for r in rows), [r["error"] for r in rows]


@pytest.mark.parametrize("workers", [1, 2])
def test_editing_the_response_message_is_a_message_edit_error_naming_the_strategy(tmp_path, capsys, workers):
    """The response message handed to after_response is the logged read-only one
    (harness.core.frozen): editing result.message["tool_calls"] ends that run with MessageEditError naming the
    strategy; the other runs finish (the edit went unseen before)."""
    strategy = "misbehaving:EditResponseToolCalls"
    code, rows = run_matrix(tmp_path, strategy, workers=workers)
    assert_contained(code, rows, strategy, "MessageEditError", f"strategy {strategy} edited a message in place",
                     "after_response")


@pytest.mark.parametrize("workers", [1, 2])
def test_an_event_the_metrics_cannot_read_ends_that_run_only(tmp_path, capsys, workers):
    """Metrics never crash the invocation: an agent message with tool_calls that are no list of
    calls ends that run as error (MetricsError, naming the event), the other runs finish (the invocation crashed
    in the metrics' result before)."""
    strategy = "misbehaving:EmitsOddAgentMessage"
    code, rows = run_matrix(tmp_path, strategy, workers=workers)
    assert_contained(code, rows, strategy, "MetricsError: the metrics cannot read event")


def test_a_run_that_ends_its_worker_process_is_an_error_row_and_the_others_finish(tmp_path, capsys):
    """A run whose code ends its worker process (os._exit) is an error row (WorkerExited); the
    worker is replaced, the other runs finish and nothing hangs (the invocation crashed with a traceback)."""
    strategy = "misbehaving:ExitsItsProcess"
    code, rows = run_matrix(tmp_path, strategy, workers=2)
    assert_contained(code, rows, strategy, "WorkerExited", "exit code 3")


def _send_a_big_result() -> str:
    return "x" * 64_000_000  # long enough to be mid-send when its process ends


def _end_this_process_soon() -> None:
    import os
    import time

    time.sleep(0.05)
    os._exit(3)


def _answer() -> str:
    return "answered"


def test_a_worker_ending_mid_send_cannot_stall_the_other_workers():
    """Ours: each worker says what its calls did on its own pipe. With one queue shared by
    all workers, a worker ending while its thread sent a result left the queue's lock held, and every
    other worker's answers waited for ever (the suite hung now and then on the worker-death test)."""
    from concurrent.futures import TimeoutError as FutureTimeout

    from harness.api import mock_profiles
    from harness.executors.process_threads import ThreadsInProcesses, WorkerExited

    executor = ThreadsInProcesses(2, 2, mock_profiles(), "fork")
    try:
        for attempt in range(3):  # the race the old queue lost is timing-dependent: give it several chances
            big = executor.submit_to(0, _send_a_big_result)
            ender = executor.submit_to(0, _end_this_process_soon)
            with pytest.raises(WorkerExited):
                ender.result(timeout=60)
            try:
                big.result(timeout=60)
            except WorkerExited:
                pass  # lost with its worker, or sent before the end
            try:
                assert executor.submit_to(1, _answer).result(timeout=20) == "answered"
            except FutureTimeout:
                pytest.fail(f"attempt {attempt}: worker 1's answer never arrived after worker 0 ended")
    finally:
        executor.shutdown()


def test_an_event_line_with_a_lone_surrogate_is_valid_json_that_reads_back_the_same():
    """A lone surrogate (a model's JSON "\\ud800") made the event line fail to encode as UTF-8."""
    event = {"id": 0, "type": "message", "message": {"content": "a\ud800b", "name": "é"}}
    line = json_line(event)
    assert line.endswith(b"\n") and json.loads(line) == event
    assert json_line({"content": "é"}).decode("utf-8") == '{"content":"é"}\n'  # UTF-8 lines stay UTF-8


@pytest.mark.parametrize("workers", [1, 2])
def test_tool_arguments_with_a_lone_surrogate_are_logged_and_replay_verifies(tmp_path, capsys, monkeypatch, workers):
    """The mock's tool call arguments carrying a lone surrogate (as a real model's JSON "\\ud800"
    decodes to) no longer end the run when the event is written; `ctxbench replay` verifies every view hash."""
    from harness.models.mock import provider

    respond = provider.respond

    def with_surrogate(messages, *args, **kwargs):
        reply = respond(messages, *args, **kwargs)
        if len(messages) > 2:  # the first reply of a run alone: its calls then fail, the agent calls again
            return reply
        calls = [{**call, "function": {**call["function"], "arguments": call["function"]["arguments"][:-1]
                                       + ', "note": "\ud800"}'}} for call in reply.get("tool_calls") or ()]
        return {**reply, "tool_calls": calls}

    monkeypatch.setattr(provider, "respond", with_surrogate)
    monkeypatch.setattr(pool, "_start_method", lambda: "fork")  # worker processes inherit the patched mock
    tasks = write_suite_file(tmp_path, "smoke", family="chained_lookup")
    assert main(["run", "--tasks", tasks, "--strategies", "none", "--workers", str(workers), "--no-progress",
                 "--out", str(tmp_path / "r")]) == 0
    rows = read_runs(tmp_path / "r")
    assert all(r["termination"] == "submitted" for r in rows), [r["error"] for r in rows]
    paths = sorted((tmp_path / "r" / "events").glob("*.jsonl.gz"))
    assert any("\ud800" in json.dumps(read_events(path), ensure_ascii=False) for path in paths)
    assert all(replay_file(path).ok for path in paths)
    assert main(["replay", str(paths[0])]) == 0


def test_a_row_with_a_lone_surrogate_is_written_and_reads_back_the_same(tmp_path):
    """Writing never fails on a string the JSON came with, rows included: a run's error
    text holding a lone surrogate (echoed from a model's tool arguments) ended the invocation on append."""
    from harness.results.layout import ResultsDir

    results = ResultsDir(tmp_path)
    results.append_run({"run_id": "a", "error": "bad \ud800 arg"})
    results.append_run({"run_id": "a", "error": "rerun"})
    results.compact()
    assert read_runs(tmp_path) == [{"run_id": "a", "error": "rerun"}]
    results.rewrite_runs([{"run_id": "b", "error": "bad \ud800 arg"}])
    assert read_runs(tmp_path) == [{"run_id": "b", "error": "bad \ud800 arg"}]


def test_a_guarded_state_is_read_afresh_each_time_and_its_failure_names_it():
    """Ours (Guarded makes each state's guarded read once, not per read):
    a state (`submitted`) is read afresh every time, and when reading it raises, the RunCrash names it."""
    from harness.run.contain import Guarded, RunCrash

    class Task:
        reads = 0

        @property
        def submitted(self) -> bool:
            self.reads += 1
            if self.reads > 2:
                raise SystemExit("the task's state exits")
            return self.reads == 2

    guarded = Guarded(Task(), "task t")
    assert guarded.submitted is False and guarded.submitted is True
    with pytest.raises(RunCrash) as info:
        guarded.submitted
    assert info.value.where == "task t's submitted" and isinstance(info.value.error, SystemExit)
