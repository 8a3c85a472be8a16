"""Failure modes measured per run: condensation loops, orphaned tool calls or results
in a view, the task statement missing from a view, state-changing calls re-executed after a condensation."""
import json
import random

import pytest

from harness.conversation.events import EventLog, event_log_name, read_events
from harness.results.metrics import LOOP_CONDENSATIONS, compute_metrics
from harness.results.report import write_report
from harness.conversation.view import ViewState, fold
from tasks.suites import load_tasks


def _events(kinds):
    """A log of `condensation` (c) and `progress` (p) events, in order."""
    return [{"id": i, "type": "condensation" if k == "c" else "progress", "kind": "summary", "value": i}
            for i, k in enumerate(kinds)]


@pytest.mark.parametrize("kinds, loops, inside", [
    ("c" * (LOOP_CONDENSATIONS - 1), 0, 0),
    ("c" * LOOP_CONDENSATIONS, 1, LOOP_CONDENSATIONS),
    ("ccpcc", 0, 0),
    ("cccpcccc", 2, 7),
    ("pcccp", 1, 3),
])
def test_a_loop_is_k_condensations_with_no_progress_between_them(kinds, loops, inside):
    """Ours (k = 3): consecutive condensations with no `progress` event between them; a
    progress event ends a streak."""
    metrics = compute_metrics(_events(kinds))
    assert (metrics["condensation_loops"], metrics["condensations_in_loops"]) == (loops, inside)


def _call(event_id, call_id, name, arguments):
    return {"id": event_id, "type": "message", "origin": "agent",
            "message": {"role": "assistant", "content": "", "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}}


def _result(event_id, call_id, is_error=False):
    return {"id": event_id, "type": "message", "origin": "tool", "is_error": is_error,
            "message": {"role": "tool", "tool_call_id": call_id, "content": "ok"}}


def _reexecuted(*events):
    start = {"id": -1, "type": "run_start", "state_changing_tools": ["submit_result"]}
    return compute_metrics([start, *events])["reexecuted_state_calls"]


def test_state_changing_calls_repeated_after_a_condensation_are_counted():
    """OpenHands #10508/#11910: a state-changing call with the same name and arguments
    (key order aside) as one that ran before the last condensation counts; before any condensation, after
    an error, or for a read-only tool it does not."""
    condense = {"id": 10, "type": "condensation", "kind": "agent_reset"}
    first = [_call(1, "a", "submit_result", '{"order_id": "X", "amount": 3}'), _result(2, "a")]
    again = [_call(11, "b", "submit_result", '{"amount": 3, "order_id": "X"}'), _result(12, "b")]
    assert _reexecuted(*first, condense, *again) == 1
    assert _reexecuted(*first, *again) == 0  # no condensation between
    assert _reexecuted(first[0], _result(2, "a", is_error=True), condense, *again) == 0
    read = [_call(1, "a", "get_order", '{"order_id": "X"}'), _result(2, "a")]
    assert _reexecuted(*read, condense, _call(11, "b", "get_order", '{"order_id": "X"}'), _result(12, "b")) == 0


def _orphans_by_scan(view):
    """Tool call ids whose calls and results in the view as sent do not pair up, by a full scan."""
    balance = {}
    for message in view.to_messages():
        for call in message.get("tool_calls") or ():
            balance[call["id"]] = balance.get(call["id"], 0) + 1
        if message.get("role") == "tool":
            balance[message.get("tool_call_id")] = balance.get(message.get("tool_call_id"), 0) - 1
    return sum(1 for value in balance.values() if value)


def _holds_statement_by_scan(view, statement):
    return any(statement in (m.get("content") or "") for m in view.to_messages() if m.get("role") != "tool")


def test_orphans_and_the_task_statement_kept_as_ops_apply_equal_a_full_scan():
    """OpenHands #7512: the view keeps, op by op, its unpaired tool call ids and whether
    the task statement is in it (in a message other than a tool result); after random appends, replaces, drops and sets both equal a full scan."""
    rng = random.Random(18)
    log = EventLog()
    view = ViewState()
    statement = "Find the sum of the weights."
    view.apply(log.append("message", message={"role": "system", "content": "sys"}, origin="task"))
    view.apply(log.append("message", message={"role": "user", "content": statement}, origin="user"))
    for step in range(300):
        kind = rng.choice(["call", "result", "result", "replace", "drop", "set", "quote"])
        if kind == "call":
            calls = [{"id": f"c{rng.randint(0, 20)}", "function": {"name": "f", "arguments": "{}"}}]
            event = log.append("message", message={"role": "assistant", "content": "", "tool_calls": calls},
                               origin="agent")
        elif kind == "result":
            content = statement if rng.random() < 0.2 else f"r{step}"  # a tool's output is no task statement
            event = log.append("message", message={"role": "tool", "tool_call_id": f"c{rng.randint(0, 20)}",
                                                   "content": content}, origin="tool")
        elif kind == "quote":  # a summary quoting the statement, logged outside the view
            event = log.append("message", message={"role": "user", "content": f"Summary: {statement}"},
                               origin="strategy", placement="none")
        elif kind == "replace" and view.ids:
            target = rng.choice(sorted(view.messages))
            event = log.append("compaction", view_ops=[{"op": "replace", "id": target, "message": {
                "role": view.messages[target]["role"], "content": "[cleared]",
                **({"tool_call_id": "c99"} if rng.random() < 0.3 else {})}}])
        elif kind == "drop" and len(view.ids) > 2:
            event = log.append("compaction", view_ops=[{"op": "drop", "ids": rng.sample(list(view.ids), 2)}])
        else:
            kept = sorted(rng.sample(sorted(view.messages), min(len(view.messages), rng.randint(1, 8))))
            event = log.append("condensation", kind="test", view_ops=[{"op": "set", "ids": kept}])
        view.apply(event)
        assert view.orphaned_tool_ids == _orphans_by_scan(view), step
        assert view.task_statement_missing == (not _holds_statement_by_scan(view, statement)), step
    rebuilt = fold(log.events)
    assert (rebuilt.orphaned_tool_ids, rebuilt.task_statement_missing) == (view.orphaned_tool_ids,
                                                                           view.task_statement_missing)


def test_stand_ins_show_their_failure_modes_and_none_shows_none(run_suite):
    """A strategy that forgets everything before each request loops (and re-fetches the
    dumps it fetched: re-executed state-changing calls); one that drops the agent's calls leaves orphaned
    results; `none` shows no failure mode. The mock never sees progress: only the runner logs it."""
    runs = run_suite("smoke", strategies="none,stand_ins:ForgetEverything,stand_ins:DropCalls",
                     max_requests=20).set_index("run_id")
    modes = ["condensation_loops", "orphan_view_requests", "task_missing_requests", "reexecuted_state_calls"]
    assert not runs[runs["strategy"] == "none"][modes].to_numpy().any()
    forget = runs[runs["strategy"] == "stand_ins:ForgetEverything"]
    assert (forget["condensation_loops"] == 1).all() and (forget["condensations_in_loops"] == 19).all()
    assert forget.loc["big_output-smoke-0--stand_ins_ForgetEverything--s0", "reexecuted_state_calls"] > 0
    dropped = runs[runs["strategy"] == "stand_ins:DropCalls"]
    assert (dropped["orphan_view_requests"] > 0).all() and not dropped["condensation_loops"].any()


def test_task_statement_dropped_from_the_view_is_counted_per_request(run_suite):
    """A view without the first user message's text counts, request by request."""
    runs = run_suite("smoke", strategies="stand_ins:SlidingWindow", strategy_configs={
        "stand_ins:SlidingWindow": {"keep_messages": 4}}, max_requests=20)
    events_dir = runs.attrs["out"] / "events"
    for run in runs.to_dict("records"):
        calls = read_events(events_dir / event_log_name(run['run_id']))
        sent = [e for e in calls if e["type"] == "llm_call" and e.get("ok") and e["profile"] == "main"]
        assert run["task_missing_requests"] == sum(bool(e.get("task_statement_missing")) for e in sent)
    assert runs["task_missing_requests"].sum() > 0


def test_report_names_the_runs_with_failure_modes_and_summary_sums_them(run_suite):
    """`report.md` has a section naming each run with a failure mode and the modes;
    summary.csv carries per-strategy counts."""
    runs = run_suite("smoke", strategies="none,stand_ins:ForgetEverything", max_requests=10)
    out = runs.attrs["out"]
    write_report(out)
    report = (out / "report.md").read_text()
    section = report.split("## Failure modes", 1)[1].split("\n## ", 1)[0]
    for run_id in runs.loc[runs["strategy"] == "stand_ins:ForgetEverything", "run_id"]:
        assert f"| {run_id} |" in section
    assert "--none--" not in section and "condensation loop(s) (9 condensations)" in section
    summary = __import__("pandas").read_csv(out / "summary.csv").set_index(["family", "strategy"])
    assert summary.loc[("all", "stand_ins:ForgetEverything"), "condensation_loops"] == len(runs) // 2
    assert summary.loc[("all", "none"), "runs_with_failures"] == 0


@pytest.mark.parametrize("family, milestone", [
    ("chained_lookup", "read a file holding a chain record"),
    ("work_queue", "submit an item"),
    ("repo_maintenance", "apply an edit"),
    ("big_output", "fetch a dump"),
    ("plant_early_ask_late", "record a count"),
])
def test_each_family_reports_progress_at_its_milestones_only(family, milestone):
    """Progress is a monotone count read from the environment's state: it moves at the
    family's milestones, not at listings, notes or a milestone reached again."""
    from tasks.base import ToolCall

    environment = next(t for t in load_tasks("smoke") if t.family == family).build()
    before = environment.progress()
    listing = environment.execute(ToolCall("1", "list_files", "{}", {}))
    assert environment.progress() == before
    paths = listing.content.splitlines()
    if family == "chained_lookup":
        holding = next(p for p in paths if p in environment.hop_files)
        call = ToolCall("2", "read_file", "", {"path": holding})
    elif family == "work_queue":
        call = ToolCall("2", "submit_result", "", {"order_id": environment.tickets[0].order, "amount": 1})
    elif family == "repo_maintenance":
        bug = environment.bugs[0]
        call = ToolCall("2", "edit_file", "", {"path": bug.path, "old": bug.line(bug.wrong), "new": bug.line(bug.right)})
    elif family == "big_output":
        call = ToolCall("2", "fetch_dump", "", {"dump": "D1"})
    else:
        call = ToolCall("2", "record_count", "", {"path": environment.batch_files[0][0], "errors": 1})
    assert not environment.execute(call).is_error, milestone
    reached = environment.progress()
    assert reached > before
    environment.execute(call)  # the same milestone again is no new one
    environment.execute(ToolCall("3", "write_file", "", {"path": "notes/a.md", "content": "x"}))
    assert environment.progress() == reached


def test_agent_reset_looping_on_repo_maintenance_at_a_32k_window_is_flagged(run_suite, suite_file):
    """A known case: at a 32k window agent_reset on repo_maintenance resets 80 times without
    an edit. With notes_completeness 0 (notes hold nothing, whatever the agent's notes rules) it cannot get
    out, and every run that ends at max_requests shows the loop with all its resets inside."""
    runs = run_suite(suite_file("default", family="repo_maintenance"), strategies="agent_reset", window=32_000,
                     knobs={"notes_completeness": 0.0})
    looping = runs[runs["termination"] == "max_requests"]
    assert not looping.empty
    assert (looping["condensation_loops"] >= 1).all()
    assert (looping["condensations_in_loops"] == looping["agent_resets"]).all()
