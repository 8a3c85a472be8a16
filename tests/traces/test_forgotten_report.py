"""What each strategy forgot, as a trace replay's tables and report.md show it (ours: harness.results.forgotten,
docs/traces.md, docs/reporting.md).

The hand-written trace: an agent follows an order to its hub and answers citing what it read on the way.
Under observation_masking (keep_last 1) the last request's view has the results at trace messages 3 and 5
masked; its answer cites DHL-77 (first in message 3, again in 5) and AREA-04103 (only in 5), which no other
message holds: 2 forgotten there, none before. Under `none` nothing is forgotten.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.conversation.events import event_log_name
from harness import api
from harness.cli import main as cli
from harness.results import forgotten
from harness.results.forgotten import excerpt, first_forgotten, holding_line
from harness.results.frames import requests_frame
from harness.results.report import replay_table, runs_frame
from harness.results.tables import code_span
from tests.traces.test_traces import call, events_of, replay, trace_of

SECRET = "hunter2hunter2"
ANSWER = "ORD-5521 went by DHL-77 via HUB-12, area AREA-04103."


def order_messages(answer: str = ANSWER) -> list[dict]:
    return [{"role": "system", "content": "You track orders."},
            {"role": "user", "content": "Where did order ORD-5521 go?"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1", "read", key="ORD-5521")]},
            {"role": "tool", "tool_call_id": "c1", "name": "read",
             "content": f"order ORD-5521\ncarrier DHL-77 (portal password: {SECRET}), tracking TRK-9001\nstatus sent"},
            {"role": "assistant", "content": None, "tool_calls": [call("c2", "read", key="TRK-9001")]},
            {"role": "tool", "tool_call_id": "c2", "name": "read",
             "content": "TRK-9001: handed to DHL-77 at HUB-12, area AREA-04103"},
            {"role": "assistant", "content": None, "tool_calls": [call("c3", "read", key="HUB-12")]},
            {"role": "tool", "tool_call_id": "c3", "name": "read", "content": "HUB-12: the Leipzig depot"},
            {"role": "assistant", "content": answer}]


MASKING = {"observation_masking": {"keep_last": 1}}


def write_trace(directory: Path, trace_id: str, messages: list[dict]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{trace_id}.json"
    path.write_text(json.dumps({"id": trace_id, "messages": messages}), encoding="utf-8")
    return path


def replay_dir(tmp_path: Path, *traces: tuple[str, list[dict]]) -> Path:
    paths = [write_trace(tmp_path / "traces", trace_id, messages) for trace_id, messages in traces]
    return api.traces(paths, strategies="none,observation_masking", strategy_configs=MASKING, out=tmp_path / "out")


def section(report: str) -> str:
    start = report.index("## What each strategy forgot")
    return report[start:report.index("\n## ", start + 1)]


def table_rows(text: str, first_cell: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in text.splitlines()
            if line.startswith(f"| {first_cell}")]


# ----- the replay's log
def test_each_forgotten_example_names_the_message_it_first_appeared_in(tmp_path):
    """Ours: `forgotten_from`, aligned with `forgotten_examples`, is the trace index of the message where each
    reference first appeared (DHL-77: message 3, not 5 where it appeared again); the row's
    forgotten_per_request is the run's forgotten references over its requests (2 / 4)."""
    row = replay(tmp_path, trace_of(order_messages()), "observation_masking", MASKING["observation_masking"])
    calls = [e for e in events_of(tmp_path, row) if e["type"] == "llm_call" and e["ok"]]
    assert [(e["trace_index"], e["forgotten_references"]) for e in calls] == [(2, 0), (4, 0), (6, 0), (8, 2)]
    assert calls[-1]["forgotten_examples"] == ["AREA-04103", "DHL-77"] and calls[-1]["forgotten_from"] == [5, 3]
    assert all("forgotten_from" not in e for e in calls[:-1])
    assert row["forgotten_references"] == 2 and row["requests"] == 4 and row["forgotten_per_request"] == 0.5


def test_a_strategy_that_forgets_nothing_has_zero_per_request(tmp_path):
    """Ours: `none` keeps the whole trace in view: 0 forgotten, 0.0 per request (not null: it was measured)."""
    row = replay(tmp_path, trace_of(order_messages()))
    assert row["forgotten_references"] == 0 and row["forgotten_per_request"] == 0.0


# ----- the tables
def test_requests_and_summary_carry_the_forgotten_counts(tmp_path):
    """Ours: the requests table (results.requests) has each replayed request's trace index and forgotten count;
    summary.csv's forgotten_per_request is a strategy's forgotten references over its requests; the terminal
    table of `ctxbench traces` shows it."""
    out = replay_dir(tmp_path, ("order", order_messages()))
    results = api.load_results(out)
    masked = results.requests[results.requests["strategy"] == "observation_masking"]
    assert masked["trace_index"].tolist() == [2, 4, 6, 8]
    assert masked["forgotten_references"].tolist() == [0, 0, 0, 2]
    overall = results.summary[results.summary["family"] == "all"].set_index("strategy")
    assert overall.loc["observation_masking", "forgotten_per_request"] == 0.5
    assert overall.loc["none", "forgotten_per_request"] == 0.0
    rows = {row[0]: row for row in table_rows(replay_table(runs_frame(out)), "")[1:]}
    assert rows["observation_masking"][-2:] == ["2", "0.50"] and rows["none"][-2:] == ["0", "0.00"]


def test_regular_runs_requests_have_no_forgotten_counts(tmp_path):
    """Ours: only a replay measures forgotten references: a run's requests have them null, and its report has no
    forgotten section."""
    out = api.run("smoke", strategies="none", out=tmp_path / "run", limit=1)
    requests = requests_frame(out, runs_frame(out))
    assert not requests.empty and requests["forgotten_references"].isna().all()
    assert requests["trace_index"].isna().all()
    assert "## What each strategy forgot" not in (out / "report.md").read_text(encoding="utf-8")


# ----- report.md
def test_report_says_per_strategy_what_was_forgotten_and_the_first_reference(tmp_path):
    """Ours: per strategy, requests replayed, requests with a forgotten reference, forgotten per request and the
    most at one request (`none`: zeros); per trace x strategy that forgot, the first request that did, the
    reference of it that appeared earliest, and its message: index, role and the line holding it, the
    password on that line redacted. `none` has no first-forgotten row."""
    out = replay_dir(tmp_path, ("order", order_messages()))
    report = (out / "report.md").read_text(encoding="utf-8")
    text = section(report)
    strategies = {row[0]: row[1:] for row in table_rows(text, "none") + table_rows(text, "observation_masking")}
    assert strategies["none"] == ["1", "4", "0 (0%)", "0.00", "0"]
    assert strategies["observation_masking"] == ["1", "4", "1 (25%)", "0.50", "2"]
    [first] = table_rows(text, "[order]")
    assert first[1:7] == ["observation_masking", "8", "2", "`DHL-77`", "3", "tool"]
    assert first[7] == "`carrier DHL-77 (portal password: <redacted>), tracking TRK-9001`"
    assert SECRET not in report
    assert "(events/order--observation_masking--s0.jsonl.gz)" in first[0]


def test_no_forgotten_reference_says_so(tmp_path):
    """Ours: when no strategy forgot anything, the section says so and has no first-forgotten table."""
    out = replay_dir(tmp_path, ("order", order_messages(answer="Done with ORD-5521.")))
    text = section((out / "report.md").read_text(encoding="utf-8"))
    assert "No strategy forgot a reference on these traces." in text and "from message #" not in text


def test_many_traces_cap_the_first_forgotten_rows(tmp_path, monkeypatch):
    """Ours: the first-forgotten table shows FIRST_ROWS_SHOWN trace x strategy rows and says how many more."""
    monkeypatch.setattr(forgotten, "FIRST_ROWS_SHOWN", 1)
    out = replay_dir(tmp_path, ("order-a", order_messages()), ("order-b", order_messages()))
    text = section((out / "report.md").read_text(encoding="utf-8"))
    assert len(table_rows(text, "[order")) == 1
    assert "... and 1 more trace x strategy pairs that forgot a reference" in text


def test_a_missing_event_log_says_n_a(tmp_path):
    """Ours: report.md is rewritten from the directory's files alone; a replay whose event log is gone keeps its
    first-forgotten row (its runs.jsonl row counts forgotten references) with n/a, and the report is written."""
    from harness.results.report import write_report

    out = replay_dir(tmp_path, ("order", order_messages()))
    (out / "events" / event_log_name("order--observation_masking--s0")).unlink()
    write_report(out)
    [first] = table_rows(section((out / "report.md").read_text(encoding="utf-8")), "[order]")
    assert first[1:3] == ["observation_masking", "n/a"]


def test_an_offloaded_tool_result_is_quoted_whole(tmp_path):
    """Ours: tool_output_limits shows a long result's head and tail; a reference from its middle is forgotten,
    and the line quoted is read from the whole result its `tool_output_offloaded` event holds."""
    messages = order_messages(answer="ORD-5521 left depot DEP-3131.")
    messages[3] = dict(messages[3], content="x" * 3000 + "\nmiddle line: depot DEP-3131\n" + "y" * 3000)
    out = tmp_path / "out"
    assert cli(["traces", str(write_trace(tmp_path / "traces", "order", messages)), "--strategies",
                "tool_output_limits", "--strategy-config", '{"tool_output_limits": {"max_chars": 1000, "preview_chars": 100}}',
                "--out", str(out), "--no-progress"]) == 0
    [first] = table_rows(section((out / "report.md").read_text(encoding="utf-8")), "[order]")
    assert first[2:8] == ["8", "1", "`DEP-3131`", "3", "tool", "`middle line: depot DEP-3131`"]


# ----- reading a log
def test_a_paused_requests_reply_is_not_a_trace_message():
    """Ours: after a provider paused to compact, the reply that counts for a trace index is the one of the next
    request for it; messages a strategy added (origin strategy) and a stand-in for an unrecorded prefix are not the
    trace's; a log written before `forgotten_from` names the reference with no source."""
    events = [{"type": "message", "origin": "task", "stand_in": "unrecorded prefix",
               "message": {"role": "system", "content": "filler XYZ-789"}},
              {"type": "message", "origin": "user", "message": {"role": "user", "content": "find ABC-123"}},
              {"type": "llm_call", "ok": True, "profile": "main", "trace_index": 1},
              {"type": "message", "origin": "agent", "message": {"role": "assistant", "content": "[compaction]"}},
              {"type": "message", "origin": "strategy", "message": {"role": "user", "content": "note ABC-123"}},
              {"type": "llm_call", "ok": True, "profile": "main", "trace_index": 1},
              {"type": "message", "origin": "agent", "message": {"role": "assistant", "content": "reading ABC-123 for XYZ-789"}},
              {"type": "message", "origin": "tool", "message": {"role": "tool", "content": "ABC-123 is XYZ-789"}},
              {"type": "llm_call", "ok": True, "profile": "main", "trace_index": 3, "forgotten_references": 1,
               "forgotten_examples": ["XYZ-789"], "forgotten_from": [2]}]
    found = first_forgotten(events)
    assert (found.request, found.source, found.role, found.line) == (3, 2, "tool", "ABC-123 is XYZ-789")
    events[-1] = {**events[-1], "forgotten_from": [1]}
    assert (first_forgotten(events).role, first_forgotten(events).line) == ("assistant", "reading ABC-123 for XYZ-789")
    events[-1] = {**events[-1], "forgotten_from": [0]}
    assert (first_forgotten(events).role, first_forgotten(events).line) == ("user", "")
    old = {k: v for k, v in events[-1].items() if k != "forgotten_from"}
    found = first_forgotten(events[:-1] + [old])
    assert (found.reference, found.source, found.role, found.line) == ("XYZ-789", None, None, "")


def test_the_line_holding_a_reference_in_tool_call_arguments():
    """Ours: a reference in a tool call's arguments is found in the raw JSON, or in the string it decodes to
    when JSON escaped it (a non-ASCII letter)."""
    message = {"role": "assistant", "content": "Reading.", "tool_calls": [call("a", "read", key="Straße-9 KEY-1")]}
    assert holding_line(message, "KEY-1") == json.dumps({"key": "Straße-9 KEY-1"})
    assert holding_line(message, "Straße-9") == "Straße-9 KEY-1"
    assert holding_line({"role": "user", "content": "a\nb KEY-2 c\nd"}, "KEY-2") == "b KEY-2 c"


def test_an_excerpt_is_cut_around_the_reference_after_redacting():
    """Ours: a line over EXCERPT_CHARS is cut to that many characters around the reference, marked `…` at each
    cut end; secrets are redacted before the cut, so no part of one is left (harness.core.secrets)."""
    line = "a" * 300 + " KEY-1 " + "b" * 300
    shown = excerpt(line, "KEY-1")
    assert shown.startswith("…") and shown.endswith("…") and len(shown) == forgotten.EXCERPT_CHARS + 2
    assert "KEY-1" in shown and abs(shown.index("KEY-1") - 50) <= 3
    assert excerpt("short KEY-1", "KEY-1") == "short KEY-1"
    secret = "api_key=" + "Q" * 200
    shown = excerpt(f"{secret} then KEY-1 {'c' * 200}", "KEY-1")
    assert "QQQQ" not in shown and "KEY-1" in shown


@pytest.mark.parametrize("text,shown", [("a|b", "`a\\|b`"), ("x `y` z", "``x `y` z``"), ("`q`", "`` `q` ``"),
                                        ("<redacted> __init__", "`<redacted> __init__`")])
def test_a_code_span_fits_a_table_cell(text, shown):
    """CommonMark 0.31.2, 6.1 Code spans: a fence one backtick longer than the text's longest run, a space pad
    where the text starts or ends with one; GFM 0.29, 4.10 Tables (example 200): a pipe escaped even inside it."""
    assert code_span(text) == shown

