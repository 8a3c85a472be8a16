"""The Codex CLI session-log reader (harness/traces/codex_cli.py).

Fixtures (tests/fixtures/traces/codex/, SOURCES.md): a real Codex 0.58 rollout (an excerpt of a public one) and
two hand-made sessions with Codex's own compaction, in the shapes of its source (openai/codex,
codex-rs/protocol/src/protocol.rs `RolloutLine` / `CompactedItem` / `TokenCountEvent`, models.rs `ResponseItem`,
codex-rs/core/src/compact.rs): the newer one (items before their `token_count`, a `replacement_history` with an
encrypted compaction item) and an older one (`token_count` before its items, a summary `message` alone).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.traces import TraceError, codex_cli, detect_format, load_traces, read_head
from harness.traces.codex_cli import _newest_within

FIXTURES = Path(__file__).parents[1] / "fixtures" / "traces"
REAL = FIXTURES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
REMOTE = FIXTURES / "codex" / "compaction_remote.jsonl"
LEGACY = FIXTURES / "codex" / "compaction_legacy.jsonl"
META = {"timestamp": "2026-03-02T10:00:00.000Z", "type": "session_meta", "payload": {"id": "s-1", "cwd": "/w"}}


def only(path: Path):
    [trace] = load_traces([path])
    return trace


def calls(message):
    return [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls", [])]


def usage(input_tokens, cached, output, write=None):
    return {"input_tokens": input_tokens, "cached_tokens": cached, "cache_write_tokens": write, "output_tokens": output}


def line(kind: str, payload, second: int = 1) -> dict:
    return {"timestamp": f"2026-03-02T10:00:{second:02d}.000Z", "type": kind, "payload": payload}


def item(**payload) -> dict:
    return line("response_item", payload)


USER = item(type="message", role="user", content=[{"type": "input_text", "text": "list the files"}])
CALL = item(type="function_call", name="exec_command", arguments='{"cmd":"ls"}', call_id="c1")


def write(tmp_path: Path, *records, name: str = "rollout.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def refused(tmp_path: Path, *records, match: str) -> None:
    with pytest.raises(TraceError, match=match):
        codex_cli.read(write(tmp_path, *records))


# ----- the real session (Codex 0.58)
def test_real_session_roles_calls_and_tool_results():
    """codex-rs/protocol models.rs ResponseItem: user messages (input_text joined), one assistant message per
    model response (reasoning not content) holding its function_call, function_call_output as the tool
    message answering it; ghost_snapshot and event_msg lines are not context (context_manager `for_prompt`)."""
    trace = only(REAL)
    assert [m["role"] for m in trace.messages] == ["user", "user", "assistant", "tool", "assistant", "tool",
                                                   "assistant", "tool"]
    assert trace.messages[0]["content"].startswith("<environment_context>\n  <cwd>/home/user/projects/temp/chatbot-ui")
    assert trace.messages[1]["content"].endswith('"LM Studio configuration.md" read this to help you')
    assert calls(trace.messages[2]) == [("call_GfHib9GW3d5m9EB1wMTper0j", "shell",
                                         {"command": ["bash", "-lc", "ls"], "workdir": "/home/user/projects/temp/chatbot-ui"})]
    assert [calls(trace.messages[i])[0][2]["command"][2] for i in (4, 6)] == ["cat 'LM Studio configuration.md'",
                                                                             'rg -n "ollama" -n']
    assert all(trace.messages[i]["content"] is None for i in (2, 4, 6))
    tool = trace.messages[3]
    assert tool["tool_call_id"] == "call_GfHib9GW3d5m9EB1wMTper0j" and tool["name"] == "shell"
    assert json.loads(tool["content"])["metadata"] == {"exit_code": 0, "duration_seconds": 0.0}
    assert "handleLocalChat" in trace.messages[5]["content"]


def test_real_session_usage_is_each_requests_last_token_usage_once():
    """protocol.rs TokenUsageInfo: `last_token_usage` is one request's, `total_token_usage` their running sum.
    Codex 0.58 writes a request's token_count before its output items and repeats it unchanged after the tool
    output: each request's usage lands on its own response, repeats and `info: null` count nothing.
    input includes the cached tokens (OpenAI's usage); no cache write field was recorded (None)."""
    trace = only(REAL)
    assert trace.usage == {2: usage(10128, 0, 37), 4: usage(10334, 0, 43), 6: usage(11862, 10240, 109)}
    assert trace.recorded_input_tokens == 32324  # the last total_token_usage.input_tokens


def test_real_session_id_model_times_and_no_resets():
    """Trace id is session_meta.id; model is turn_context.model; each message's time is its line's timestamp;
    a session without a `compacted` line has no reset; no base_instructions recorded in 0.58: no system message."""
    trace = only(REAL)
    assert trace.trace_id == "019a93b9-f380-7600-98ff-940e6b99603c" and trace.source_format == "codex"
    assert trace.model == "gpt-5.1-codex" and trace.resets == {}
    assert trace.times[0] == pytest.approx(1763415045.025)  # 2025-11-17T21:30:45.025Z
    assert trace.times[2] == pytest.approx(1763415170.530)  # its first output item, 21:32:50.530Z
    assert sorted(trace.times) == list(range(len(trace.messages)))


# ----- newer Codex: replacement_history
def test_newer_session_instructions_developer_and_usage_after_items():
    """session_meta.base_instructions is the Responses `instructions` ("a system (or developer) message"):
    system; a developer message: system. Newer Codex writes token_count after the output items: still each
    request's own; a repeated total counts once; `cache_write_input_tokens` is the cache write."""
    trace = only(REMOTE)
    assert [m["role"] for m in trace.messages[:4]] == ["system", "system", "user", "user"]
    assert trace.messages[0]["content"].startswith("You are a coding agent running in a terminal.")
    assert trace.messages[1]["content"].startswith("<permissions instructions>")
    assert {i: trace.usage[i] for i in (4, 6, 8)} == {4: usage(9000, 0, 120), 6: usage(9200, 8960, 140, write=200),
                                                     8: usage(9300, 9088, 30)}
    assert trace.model == "gpt-5.5" and trace.trace_id == "019cb2a0-5d1e-7c11-9f00-00000000c0de"


def test_custom_local_shell_and_web_search_items():
    """models.rs: custom_tool_call (free-form `input`) becomes arguments {"input": ...}; local_shell_call the tool
    `local_shell` with its `action`; a function_call_output given as content items joins their text;
    web_search_call is text in the response (ours)."""
    trace = only(REMOTE)
    [(call_id, name, arguments)] = calls(trace.messages[6])
    assert (call_id, name) == ("call_002", "apply_patch") and arguments["input"].startswith("*** Begin Patch\n")
    assert trace.messages[7] == {"role": "tool", "tool_call_id": "call_002", "name": "apply_patch",
                                 "content": "Success. Updated the following files:\nM calc.py\n"}
    assert calls(trace.messages[16]) == [("call_003", "local_shell", {
        "type": "exec", "command": ["bash", "-lc", "cat test_calc.py"], "timeout_ms": 10000,
        "working_directory": "/work/demo", "env": None, "user": None})]
    assert trace.messages[17]["content"] == "def test_add():\n    assert add(2, 3) == 5\n"
    assert trace.messages[18]["content"] == ('[web_search_call {"type": "search", "query": "pytest parametrize '
                                             'negative numbers"}]\nAdded test_add_negative to test_calc.py.')


def test_replacement_history_is_the_context_after_a_compaction():
    """compact.rs / compact_remote: after `compacted` the next request holds the instructions and the
    replacement_history; its encrypted compaction item is a placeholder. resets marks the first message
    kept; the compaction request's own usage attaches to no message but counts in recorded_input_tokens,
    and the zero-input estimate Codex writes after it is no request."""
    trace = only(REMOTE)
    assert trace.resets == {10: "compaction"}
    after = trace.messages[10:16]
    assert [m["role"] for m in after] == ["system", "system", "user", "user", "user", "user"]
    assert after[0] == trace.messages[0] and after[1] == trace.messages[1]
    assert [m["content"] for m in after[3:]] == ["Fix the failing test in calc.py", "Now add a test for negative numbers",
                                                "[compaction item]"]
    assert trace.usage[16] == usage(2100, 0, 40) and trace.usage[18] == usage(2300, 2048, 35)
    assert sorted(trace.usage) == [4, 6, 8, 16, 18]
    assert trace.recorded_input_tokens == 9000 + 9200 + 9300 + 9400 + 2100 + 2300
    assert trace.times[10] == pytest.approx(trace.times[15])  # the compacted line's time


def test_a_token_count_without_input_is_no_request(tmp_path):
    """protocol.rs TokenUsageInfo::fill_to_context_window (context window exceeded) and recompute_token_usage
    (after a compaction) write a token_count with no input tokens: no request's usage, so it neither lands on
    the response still waiting for its usage nor counts; the request's own event that follows does."""
    fill = {"total_token_usage": {"total_tokens": 258400}, "last_token_usage": {"total_tokens": 1200}}
    real = {"input_tokens": 700, "cached_input_tokens": 512, "output_tokens": 9}
    trace = only(write(tmp_path, META, USER, CALL, line("event_msg", {"type": "token_count", "info": fill}),
                       line("event_msg", {"type": "token_count", "info": {"total_token_usage": real,
                                                                          "last_token_usage": real}})))
    assert trace.usage == {1: usage(700, 512, 9)} and trace.recorded_input_tokens == 700


# ----- older Codex: a summary message alone
def test_older_compaction_rebuilds_initial_context_user_messages_and_summary():
    """compact.rs build_compacted_history (Codex without replacement_history): the initial context, the user's
    own messages (not the <user_instructions> / <environment_context> ones), then the summary as a user message;
    session_meta.instructions (AGENTS.md, recorded again as a user message) adds nothing."""
    trace = only(LEGACY)
    assert trace.resets == {7: "compaction"}
    assert [m["role"] for m in trace.messages] == ["user", "user", "user", "assistant", "tool", "assistant", "user",
                                                   "user", "user", "user", "user", "user", "assistant"]
    assert trace.messages[7:9] == trace.messages[0:2]
    assert [m["content"] for m in trace.messages[9:12]] == [
        "Rename foo to bar in util.py", "Also update the README",
        "Summary of the work so far: foo was renamed to bar in util.py; the README still mentions foo."]
    assert trace.usage == {3: usage(5000, 0, 50), 5: usage(5200, 4992, 60), 12: usage(900, 0, 20)}
    assert trace.recorded_input_tokens == 5000 + 5200 + 5400 + 900
    assert trace.model == "gpt-5-codex" and not any(m["role"] == "system" for m in trace.messages)


def test_older_compaction_keeps_the_newest_user_messages_within_20000_tokens():
    """compact.rs COMPACT_USER_MESSAGE_MAX_TOKENS = 20,000 at 4 bytes a token (approx_token_count): newest
    first; the message crossing the limit is cut in the middle, older ones are dropped."""
    old, middle, new = "o" * 8_000, "m" * 60_000, "n" * 40_000  # 2,000 / 15,000 / 10,000 tokens
    kept = _newest_within([old, middle, new], 20_000)
    assert len(kept) == 2 and kept[1] == new
    assert kept[0].startswith("m" * 20_000) and kept[0].endswith("m" * 20_000) and "5000 tokens truncated" in kept[0]
    assert _newest_within([old, new], 20_000) == [old, new]


def test_a_system_role_item_and_a_rollout_line_of_unknown_type_are_skipped(tmp_path):
    """context_manager history.rs is_api_message: a `system`-role message is not sent; lines of a type this
    reader does not know (newer Codex adds some) and ghost snapshots carry no context."""
    trace = only(write(tmp_path, META, item(type="message", role="system", content=[{"type": "input_text", "text": "x"}]),
                       line("world_state", {"full": True}), USER, item(type="ghost_snapshot", ghost_commit={"id": "a"}),
                       item(type="message", role="assistant", content=[{"type": "output_text", "text": "done"}])))
    assert [m["role"] for m in trace.messages] == ["user", "assistant"] and trace.trace_id == "s-1"


# ----- detection
def test_auto_detection_claims_codex_sessions_and_nothing_else():
    """A rollout's first line is `{timestamp, type: session_meta, payload}` (protocol.rs RolloutLine): --format
    auto reads every codex fixture as codex, and no other format's fixture as codex."""
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file()):
        try:
            head = read_head(path)
        except TraceError:
            continue  # a fixture made to be unreadable
        claimed = codex_cli.detect(path, head)
        assert claimed == (path.parent.name == "codex"), path
        if claimed:
            assert detect_format(path, head)[0] == "codex"
    assert codex_cli.detect(Path("x.jsonl"), line("response_item", {"type": "message"}))  # another rollout line
    assert not codex_cli.detect(Path("x.jsonl"), {"type": "session_meta"})


def test_a_directory_of_sessions_reads_each_file():
    """`ctxbench traces ~/.codex/sessions/` reads every rollout under it (auto-detected)."""
    traces = load_traces([FIXTURES / "codex"])
    assert sorted(t.trace_id for t in traces) == ["019a93b9-f380-7600-98ff-940e6b99603c",
                                                   "019aa0f1-3c2b-7d40-8e11-00000000abcd",
                                                   "019cb2a0-5d1e-7c11-9f00-00000000c0de"]
    assert {t.source_format for t in traces} == {"codex"}


def test_cli_replays_the_sessions_in_process(tmp_path, capsys):
    """`ctxbench traces <codex sessions> --strategies none,observation_masking` runs to the end of each."""
    out = tmp_path / "out"
    assert cli(["traces", str(FIXTURES / "codex"), "--strategies", "none,observation_masking", "--out", str(out),
                "--no-progress"]) == 0
    rows = [json.loads(text) for text in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6 and {row["family"] for row in rows} == {"codex"}
    assert all(row["termination"] == "trace_end" for row in rows)
    assert {row["task_id"]: row["recorded_model"] for row in rows}["019a93b9-f380-7600-98ff-940e6b99603c"] == "gpt-5.1-codex"


# ----- refusals: each names the file and line (exit 2)
def test_refuses_a_line_that_is_not_json(tmp_path):
    refused(tmp_path, META, "{not json", match=r"rollout.jsonl, line 2: not JSON")


def test_refuses_a_line_that_is_not_an_object(tmp_path):
    refused(tmp_path, META, "[1, 2]", match=r"line 2: a rollout line is a JSON object, got list")


def test_refuses_a_line_without_a_type(tmp_path):
    refused(tmp_path, META, {"timestamp": "2026-03-02T10:00:01Z", "payload": {}}, match=r"line 2: .*needs a `type`")


def test_refuses_a_line_without_a_payload(tmp_path):
    refused(tmp_path, META, {"timestamp": "2026-03-02T10:00:01Z", "type": "response_item"},
            match=r"line 2: a 'response_item' line needs a `payload` object")


def test_refuses_a_line_without_a_timestamp(tmp_path):
    refused(tmp_path, META, {"type": "response_item", "payload": USER["payload"]}, match=r"line 2: `timestamp` must be")


def test_refuses_a_response_item_without_a_type(tmp_path):
    refused(tmp_path, META, item(role="user"), match=r"line 2: a response item needs a `type`")


def test_refuses_a_message_of_unknown_role(tmp_path):
    refused(tmp_path, META, item(type="message", role="robot", content=[]), match=r"line 2: a message's role")


def test_refuses_a_message_whose_content_is_not_parts(tmp_path):
    refused(tmp_path, META, item(type="message", role="user", content={"text": "hi"}),
            match=r"line 2: content must be a string or a list of parts")


def test_refuses_a_tool_output_answering_no_earlier_call(tmp_path):
    refused(tmp_path, META, USER, item(type="function_call_output", call_id="c9", output="x"),
            match=r"line 3: function_call_output 'c9' answers no earlier call")


def test_refuses_a_call_without_id_or_name(tmp_path):
    refused(tmp_path, META, USER, item(type="function_call", name="exec_command", arguments="{}"),
            match=r"line 3: a function_call needs a `call_id` and a `name`")


def test_refuses_call_arguments_that_are_not_a_string(tmp_path):
    refused(tmp_path, META, USER, item(type="function_call", name="exec_command", arguments={"cmd": "ls"}, call_id="c1"),
            match=r"line 3: a function_call's `arguments` is a JSON string")


def test_refuses_a_token_count_that_is_not_a_count(tmp_path):
    bad = {"input_tokens": "ten", "cached_input_tokens": 0, "output_tokens": 1}
    refused(tmp_path, META, USER, CALL, line("event_msg", {"type": "token_count", "info": {
        "total_token_usage": bad, "last_token_usage": bad}}), match=r"line 4: token_count `input_tokens` must be a count")


def test_refuses_a_compacted_line_without_summary_or_history(tmp_path):
    refused(tmp_path, META, USER, CALL, line("compacted", {}), match=r"line 4: a compacted line needs a `message`")


def test_refuses_a_replacement_history_that_is_not_a_list(tmp_path):
    refused(tmp_path, META, USER, CALL, line("compacted", {"message": "", "replacement_history": {}}),
            match=r"line 4: `replacement_history` must be a list")


def test_refuses_a_session_with_no_model_response(tmp_path):
    refused(tmp_path, META, USER, match=r"rollout.jsonl, trace 's-1': the session holds no model response")


def test_refuses_a_line_that_is_not_utf8(tmp_path):
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(json.dumps(META).encode() + b"\n\xff\xfe\n")
    with pytest.raises(TraceError, match=r"rollout.jsonl, line 2: not UTF-8"):
        codex_cli.read(path)


def test_cli_refusal_exits_2_naming_file_and_line_without_traceback(tmp_path, capsys):
    """A malformed session stops `ctxbench traces` with exit 2, the file and line named, no traceback."""
    path = write(tmp_path, META, USER, item(type="function_call_output", call_id="nobody", output="x"))
    assert cli(["traces", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "rollout.jsonl, line 3: function_call_output 'nobody' answers no earlier call" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
