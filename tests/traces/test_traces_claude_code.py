"""The claude-code trace reader: Claude Code's per-session JSONL logs.

Fixtures (tests/fixtures/traces/claude-code/, sources in SOURCES.md): real recorded sessions (a whole
session, a session excerpt holding a compaction, a subagent's file, the compaction call's file) and one
hand-made session in the shape versions 1.0.x wrote (a subagent's thread inside the session file).
The rules come from how Claude Code writes and resumes sessions (its session storage:
`loadTranscriptFile`, `buildConversationChain`, `recoverOrphanedParallelToolResults`), cited per test.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.core.errors import ConfigError
from harness.results.layout import read_runs
from harness.traces import FORMAT_OPTIONS, NoTrace, TraceError, claude_code, detect_format, format_module, \
    load_traces, read_head

FIXTURES = Path(__file__).parents[1] / "fixtures" / "traces"
HERE = FIXTURES / "claude-code"
WHOLE = HERE / "d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl"  # a whole recorded session
COMPACTED = HERE / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"  # lines 1-25 and 754-778 of a recorded session
SUBAGENT = HERE / "ae4a77f8-aedd-4bc1-888f-c94edc91af04" / "subagents" / "agent-aac57f5.jsonl"
COMPACTION_CALL = HERE / "4d5611e5-241a-462a-8d15-5122611a9569" / "subagents" / "agent-acompact-e1f845.jsonl"
INLINE = HERE / "handmade-inline-sidechain.jsonl"  # hand-made, in the shape of version 1.0.x
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def only(traces):
    [trace] = traces
    return trace


def roles(trace):
    return [m["role"] for m in trace.messages]


def calls(message):
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls", [])]


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write(path: Path, entries: list) -> Path:
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries), encoding="utf-8")
    return path


def unix(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def entry(uuid, parent, kind, content, second, **extra):
    """A Claude Code thread entry (the fields the reader uses, as 2.x writes them)."""
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=extra.pop("message_id", f"msg_{uuid}"), model="claude-sonnet-4-5-20250929",
                       usage={"input_tokens": 3, "cache_read_input_tokens": 100 * second,
                              "cache_creation_input_tokens": 10, "output_tokens": 5})
    return {"parentUuid": parent, "isSidechain": False, "sessionId": "s-1", "type": kind, "message": message,
            "uuid": uuid, "timestamp": (START + timedelta(seconds=second)).isoformat().replace("+00:00", "Z"),
            **extra}


def text(uuid, parent, kind, said, second, **extra):
    return entry(uuid, parent, kind, said if kind == "user" else [{"type": "text", "text": said}], second, **extra)


# ----- reading the recorded sessions

def test_whole_session_thread_merged_responses_and_parallel_tool_results():
    """One streamed response is written as one assistant entry per content block with the same message.id;
    parallel tool results name their own entry (sourceToolAssistantUUID), so Claude Code puts the other
    blocks and results back after the response (recoverOrphanedParallelToolResults): ONE assistant message
    per response, its tool results right after it, in timestamp order. Local commands and interruptions
    are user messages (sent to the model); progress, snapshots, queue and system entries are not."""
    trace = only(claude_code.read(WHOLE))
    assert trace.trace_id == "d6e0bada-1959-4eec-a9d2-0bfade768d8f" and trace.source_format == "claude-code"
    assert roles(trace) == ["user", "assistant", "tool", "assistant", "tool", "user", "user", "user", "user", "user",
                            "assistant", "tool", "tool", "assistant", "tool", "tool", "user"]
    ids_per_response = {}
    for line in lines_of(WHOLE):
        if line["type"] == "assistant":
            ids_per_response.setdefault(line["message"]["id"], []).append(line)
    assert len(ids_per_response) == 4 and max(len(v) for v in ids_per_response.values()) >= 2  # streamed in parts
    assert [name for name, _ in calls(trace.messages[10])] == ["WebSearch", "Glob"]
    assert [name for name, _ in calls(trace.messages[13])] == ["Read", "WebFetch"]
    assert [m["tool_call_id"] for m in trace.messages[11:13]] == ["toolu_01JJds55jYrYwd9TktNGndRY",
                                                                  "toolu_01DKTWcKpZ2ksZQmoKKfxiw6"]
    assert trace.messages[11]["name"] == "Glob" and trace.messages[12]["name"] == "WebSearch"
    assert trace.messages[3]["content"].startswith("Phoenix server is starting in the background.")
    assert trace.messages[5]["content"] == "[Request interrupted by user]"
    assert "<command-name>/mcp</command-name>" in trace.messages[7]["content"]
    assert trace.messages[0]["content"] == "start phoenix in background"


def test_usage_is_the_last_entry_of_each_response_exactly_as_recorded():
    """Recorded usage per response: input = input_tokens + cache reads + cache writes (Anthropic's
    input_tokens excludes both), cached = cache reads, writes = cache creation, hour-long writes from
    cache_creation.ephemeral_1h_input_tokens; the response's last entry holds its final usage. The output count
    is recorded only where the log shows the stream's end (it grew past the first entry's, or a stop_reason)."""
    trace = only(claude_code.read(WHOLE))
    first_output, last_usage = {}, {}
    for line in lines_of(WHOLE):
        if line["type"] == "assistant":
            first_output.setdefault(line["message"]["id"], line["message"]["usage"]["output_tokens"])
            last_usage[line["message"]["id"]] = line["message"]["usage"]
    expected = [{"input_tokens": u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"],
                 "cached_tokens": u["cache_read_input_tokens"], "cache_write_tokens": u["cache_creation_input_tokens"],
                 "output_tokens": u["output_tokens"] if u["output_tokens"] > first_output[key] else None,
                 "cache_write_1h_tokens": u["cache_creation"]["ephemeral_1h_input_tokens"]}
                for key, u in last_usage.items()]
    assert [trace.usage[i] for i in sorted(trace.usage)] == expected
    assert sorted(trace.usage) == [1, 3, 10, 13] and all(trace.messages[i]["role"] == "assistant" for i in trace.usage)
    assert trace.usage[1] == {"input_tokens": 25801, "cached_tokens": 17915, "cache_write_tokens": 7883,
                              "output_tokens": None, "cache_write_1h_tokens": 7883}
    assert trace.usage[13]["output_tokens"] == 173  # the last entry's, grown past the first's
    assert trace.recorded_input_tokens == 25801 + 26007 + 26507 + 27666 == 105981
    assert trace.model == "claude-opus-4-6"


def test_times_are_the_entries_timestamps_a_merged_response_its_first():
    """`times`: each message's ISO `timestamp` as Unix seconds; a response spanning several entries is
    timed by its first entry (the nearest to its request); tool results by their own entries."""
    trace = only(claude_code.read(WHOLE))
    lines = lines_of(WHOLE)
    assert set(trace.times) == set(range(len(trace.messages)))
    first_user = next(line for line in lines if line["type"] == "user")
    assert trace.times[0] == unix(first_user["timestamp"]) == unix("2026-02-10T22:57:54.684Z")
    call_ids = {call["id"] for call in trace.messages[10]["tool_calls"]}  # the WebSearch + Glob response
    response_id = next(line["message"]["id"] for line in lines if line["type"] == "assistant"
                       and line["message"]["content"][0].get("id") in call_ids)
    parts = [line for line in lines if line["type"] == "assistant" and line["message"]["id"] == response_id]
    assert len(parts) == 4
    assert trace.times[10] == unix(parts[0]["timestamp"]) < unix(parts[-1]["timestamp"])
    assert trace.times[11] == unix(next(line["timestamp"] for line in lines if line["type"] == "user" and isinstance(
        line["message"]["content"], list) and line["message"]["content"][0].get("tool_use_id") ==
        trace.messages[11]["tool_call_id"]))


def test_a_compaction_boundary_is_crossed_and_becomes_a_reset():
    """A compact_boundary system entry (parentUuid null) then the isCompactSummary user entry: the thread
    continues before it (the recorded agent's earlier messages are kept) and the summary's index is a
    `resets` entry "compaction". This session's logicalParentUuid names an entry Claude Code did not write
    (as in the recorded file): the thread continues from its last message before the boundary (ours)."""
    trace = only(claude_code.read(COMPACTED))
    assert roles(trace) == ["user", "assistant", "tool", "tool", "user", "assistant", "tool", "assistant", "tool"]
    assert trace.resets == {4: "compaction"}
    assert trace.messages[4]["content"].startswith("This session is being continued from a previous conversation")
    assert trace.messages[0]["content"].startswith("Work on bead spotter-dov.")
    assert [name for name, _ in calls(trace.messages[1])] == ["Bash", "Bash"]  # two entries, one response
    assert sorted(trace.usage) == [1, 5, 7]
    assert trace.usage[5] == {"input_tokens": 3 + 21478 + 14600, "cached_tokens": 21478, "cache_write_tokens": 14600,
                              "output_tokens": 639, "cache_write_1h_tokens": 0}
    boundary = next(line for line in lines_of(COMPACTED) if line.get("subtype") == "compact_boundary")
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"] not in {
        line.get("uuid") for line in lines_of(COMPACTED)}


def test_a_logical_parent_in_the_file_is_followed(tmp_path):
    """Claude Code links a compaction boundary to what preceded it by logicalParentUuid: when that entry is
    in the file the thread before the compaction is the one ending there (here the first prompt only)."""
    lines = lines_of(COMPACTED)
    first_prompt = next(line for line in lines if line["type"] == "user")
    for line in lines:
        if line.get("subtype") == "compact_boundary":
            line["logicalParentUuid"] = first_prompt["uuid"]
    trace = only(claude_code.read(write(tmp_path / "linked.jsonl", lines)))
    assert roles(trace)[:2] == ["user", "user"] and trace.resets == {1: "compaction"}


def test_a_rewound_branch_is_left_out(tmp_path):
    """The thread ends at the newest user/assistant leaf (Claude Code's resume: leafUuids, findLatestMessage)
    and follows parentUuid back: a branch the user rewound and abandoned is not part of it."""
    path = write(tmp_path / "rewound.jsonl", [
        {"type": "summary", "summary": "demo", "leafUuid": "a3"},
        text("u1", None, "user", "hello", 1), text("a1", "u1", "assistant", "hi", 2),
        text("u2", "a1", "user", "first try", 3), text("a2", "u2", "assistant", "abandoned", 4),
        text("u3", "a1", "user", "second try", 5), text("a3", "u3", "assistant", "kept", 6)])
    trace = only(claude_code.read(path))
    assert [m["content"] for m in trace.messages] == ["hello", "hi", "second try", "kept"]
    assert trace.trace_id == "s-1"


def test_progress_entries_are_links_not_messages(tmp_path):
    """Claude Code's loader bridges `progress` entries: an entry whose parent is a progress entry is linked
    to the progress entry's own parent; progress is never a message."""
    path = write(tmp_path / "progress.jsonl", [
        text("u1", None, "user", "go", 1),
        {"type": "progress", "uuid": "p1", "parentUuid": "u1", "sessionId": "s-1", "data": {"type": "hook_progress"}},
        {"type": "progress", "uuid": "p2", "parentUuid": "p1", "sessionId": "s-1", "data": {"type": "hook_progress"}},
        text("a1", "p2", "assistant", "done", 2)])
    assert [m["content"] for m in only(claude_code.read(path)).messages] == ["go", "done"]


def test_synthetic_responses_are_skipped_and_thinking_is_not_content(tmp_path):
    """Entries Claude Code made up (model <synthetic>, isApiErrorMessage) are no model response; thinking
    blocks are not content (as the anthropic reader drops them)."""
    trace = only(claude_code.read(INLINE))
    assert roles(trace) == ["user", "assistant", "tool", "user", "assistant"]
    assert not any("API Error" in (m["content"] or "") for m in trace.messages)
    path = write(tmp_path / "thinking.jsonl", [
        text("u1", None, "user", "go", 1),
        entry("a1", "u1", "assistant", [{"type": "thinking", "thinking": "secret plan", "signature": "x"}], 2,
              message_id="msg_1"),
        entry("a2", "a1", "assistant", [{"type": "text", "text": "done"}], 3, message_id="msg_1")])
    assert only(claude_code.read(path)).messages[1]["content"] == "done"


def test_entries_without_uuids_are_read_in_file_order(tmp_path):
    """A file whose entries carry no uuid cannot be followed by parentUuid: its thread is the file order (ours)."""
    path = write(tmp_path / "plain.jsonl", [
        {"type": "user", "sessionId": "s-2", "message": {"role": "user", "content": "one"}},
        {"type": "assistant", "sessionId": "s-2", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "two"}]}},
        {"type": "system", "subtype": "compact_boundary", "sessionId": "s-2"},
        {"type": "user", "sessionId": "s-2", "isCompactSummary": True, "message": {"role": "user", "content": "sum"}},
        {"type": "assistant", "sessionId": "s-2", "message": {"role": "assistant", "content": "three"}}])
    trace = only(claude_code.read(path))
    assert [m["content"] for m in trace.messages] == ["one", "two", "sum", "three"] and trace.resets == {2: "compaction"}


# ----- subagents (sidechains)

def test_sidechains_inside_a_session_file_are_left_out_unless_asked_for():
    """Versions 1.0.x wrote a subagent's entries (isSidechain: true) into the session file: the main
    thread only by default; with include_sidechains each subagent thread is a trace of its own,
    `<session>/<uuid of its first entry>` (no agentId in those versions)."""
    main = only(claude_code.read(INLINE))
    assert main.trace_id == "5e1f0c3a-7b2d-4e8f-9a61-2c4d8e0b7f13"
    assert calls(main.messages[1]) == [("Task", {"description": "Count TODOs", "prompt":
                                                 "Count the TODO markers under src/ and report the number."})]
    both = claude_code.read(INLINE, include_sidechains=True)
    assert [t.trace_id for t in both] == [main.trace_id, f"{main.trace_id}/b0000000-0000-4000-8000-000000000001"]
    side = both[1]
    assert roles(side) == ["user", "assistant", "tool", "assistant"]
    assert side.messages[3]["content"].startswith("There are 7 TODO markers")
    assert side.usage == {1: {"input_tokens": 9004, "cached_tokens": 0, "cache_write_tokens": 9000,
                              "output_tokens": None},  # one entry, no stop_reason: logged before the stream's end
                          3: {"input_tokens": 9154, "cached_tokens": 9000, "cache_write_tokens": 150,
                              "output_tokens": None}}


def test_a_project_directory_reads_sessions_and_its_subagent_files_only_when_asked():
    """Newer versions write each subagent to `<sessionId>/subagents/agent-<agentId>.jsonl`, every entry
    isSidechain: skipped in a directory by default, read with include_sidechains as `<session>/<agentId>`.
    The compaction's own call (agent-acompact-*) is no subagent: never a trace."""
    sessions = {"4d5611e5-241a-462a-8d15-5122611a9569", "d6e0bada-1959-4eec-a9d2-0bfade768d8f",
                "5e1f0c3a-7b2d-4e8f-9a61-2c4d8e0b7f13"}
    assert {t.trace_id for t in load_traces([HERE])} == sessions
    everything = {t.trace_id: t for t in load_traces([HERE], include_sidechains=True)}
    assert set(everything) == sessions | {"ae4a77f8-aedd-4bc1-888f-c94edc91af04/aac57f5",
                                          "8463c716-a2ea-4c14-9efa-87158ebd9f20/a7be2f0",
                                          "5e1f0c3a-7b2d-4e8f-9a61-2c4d8e0b7f13/b0000000-0000-4000-8000-000000000001"}
    subagent = everything["ae4a77f8-aedd-4bc1-888f-c94edc91af04/aac57f5"]
    assert roles(subagent) == ["user", "assistant", *["tool"] * 6, "assistant", *["tool"] * 6, "assistant"]
    assert subagent.model == "claude-sonnet-4-5-20250929" and subagent.recorded_input_tokens == 50496
    with pytest.raises(NoTrace, match="--include-sidechains reads it"):
        load_traces([SUBAGENT])
    with pytest.raises(NoTrace, match="compaction's own call"):
        load_traces([COMPACTION_CALL], include_sidechains=True)


# ----- detection and options

def test_auto_detection_picks_claude_code_from_any_first_entry():
    """The first line of a session is a file-history-snapshot, a summary, a queue operation or a thread
    entry: each is claimed by claude-code (registered before anthropic/openai), and no other format's
    fixture is."""
    ours = sorted(HERE.rglob("*.jsonl"))
    firsts = {read_head(path)["type"] for path in ours}
    assert {"file-history-snapshot", "summary", "user"} <= firsts
    assert all(detect_format(path, read_head(path))[0] == "claude-code" for path in ours)
    assert claude_code.detect(Path("s.jsonl"), {"type": "queue-operation", "operation": "enqueue", "sessionId": "s"})
    others = [p for p in FIXTURES.rglob("*") if p.is_file() and HERE not in p.parents
              and p.suffix in (".json", ".jsonl")]
    assert others and not [str(p) for p in others if claude_code.detect(p, read_head(p))]
    assert not claude_code.detect(Path("s.json"), {"type": "user", "sessionId": "s"})  # JSONL only


def test_format_options_reach_only_the_formats_declaring_them():
    """A format takes options as keyword-only parameters of `read`, declared in FORMAT_OPTIONS; an option
    no format takes, or one the given format does not, is refused."""
    import inspect

    for fmt, names in FORMAT_OPTIONS.items():
        parameters = inspect.signature(format_module(fmt).read).parameters
        assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in names)
    with pytest.raises(ConfigError, match="for the claude-code format, not openai"):
        load_traces([WHOLE], "openai", include_sidechains=True)
    with pytest.raises(ConfigError, match="no trace format takes the option 'bogus'"):
        load_traces([WHOLE], bogus=True)
    ctxbench_log = FIXTURES / "ctxbench" / "ctxbench_small.jsonl"
    assert [t.trace_id for t in load_traces([ctxbench_log], include_sidechains=True)] == ["fixture-task"]


def test_trace_error_names_a_line_and_keeps_its_other_forms():
    assert str(TraceError("f.jsonl", "bad", line=3)) == "f.jsonl, line 3: bad"
    assert str(TraceError("f.json", "bad", trace="t", index=2)) == "f.json, trace 't', message 2: bad"


# ----- refusals: TraceError naming the file and the line

REFUSALS = {
    "not JSON": (lambda lines: lines.insert(2, "{not json"), 3, "not JSON"),
    "not an object": (lambda lines: lines.insert(2, "[1, 2]"), 3, "an entry is a JSON object, got list"),
    "no content": (lambda lines: lines[1]["message"].pop("content"), 2, "needs content"),
    "block without a type": (lambda lines: lines[2]["message"]["content"].append({"text": "x"}), 3,
                             "a content block is an object with a `type`"),
    "orphan tool result": (lambda lines: lines[4]["message"]["content"][0].update(tool_use_id="toolu_nobody"), 5,
                           "tool_result 'toolu_nobody' answers no earlier tool_use"),
    "dangling parent": (lambda lines: lines[4].update(parentUuid="nowhere"), 5,
                        "parentUuid 'nowhere' names no entry of this file"),
}


def small_session() -> list:
    return [{"type": "summary", "summary": "demo", "leafUuid": "a2"},
            text("u1", None, "user", "list files", 1),
            entry("a1", "u1", "assistant", [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                             "input": {"command": "ls"}}], 2),
            {"type": "progress", "uuid": "p1", "parentUuid": "a1", "sessionId": "s-1", "data": {}},
            entry("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}], 3),
            text("a2", "r1", "assistant", "one file: a.py", 4)]


def test_the_small_session_itself_reads(tmp_path):
    """The base of the refusal cases is well-formed (so each case fails for its own defect)."""
    trace = only(claude_code.read(write(tmp_path / "ok.jsonl", small_session())))
    assert roles(trace) == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize("case", REFUSALS, ids=list(REFUSALS))
def test_malformed_session_is_refused_naming_file_and_line(tmp_path, case):
    """Malformed input is a TraceError naming the file and the line it is on (exit 2 from the CLI)."""
    change, line, problem = REFUSALS[case]
    lines = small_session()
    change(lines)
    path = write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(TraceError) as caught:
        claude_code.read(path)
    assert f"{path}" in str(caught.value) and f"line {line}:" in str(caught.value) and problem in str(caught.value)


def test_an_empty_session_is_refused_when_named_and_skipped_in_a_directory(tmp_path):
    """A session with no assistant response holds nothing to replay: named alone it is refused (exit 2),
    in a project directory it is skipped like a file no format claims."""
    (tmp_path / "project").mkdir()
    empty = write(tmp_path / "project" / "empty.jsonl", [text("u1", None, "user", "/config", 1)])
    with pytest.raises(NoTrace, match="no assistant response"):
        load_traces([empty])
    write(tmp_path / "project" / "ok.jsonl", small_session())
    assert [t.trace_id for t in load_traces([tmp_path / "project"])] == ["s-1"]
    metadata_only = write(tmp_path / "meta.jsonl", [{"type": "summary", "summary": "x", "leafUuid": "y"}])
    with pytest.raises(NoTrace, match="only Claude Code's metadata"):
        claude_code.read(metadata_only)


def test_cli_refuses_a_malformed_session_with_exit_2_and_no_traceback(tmp_path, capsys):
    lines = small_session()
    lines.insert(2, "{not json")
    path = write(tmp_path / "broken.jsonl", lines)
    out = tmp_path / "out"
    assert cli(["traces", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{path}, line 3: not JSON" in err and "Traceback" not in err and not out.exists()


# ----- replaying

def test_cli_replays_the_sessions_under_none_and_observation_masking(tmp_path, capsys):
    """`ctxbench traces <project dir> --include-sidechains --strategies none,observation_masking` runs: a row per
    trace (sessions and subagents) x strategy, the recorded usage next to the replayed one."""
    out = tmp_path / "out"
    assert cli(["traces", str(HERE), "--include-sidechains", "--strategies", "none,observation_masking",
                "--out", str(out), "--no-progress"]) == 0
    assert "observation_masking" in capsys.readouterr().out
    rows = read_runs(out)
    assert len(rows) == 12 and {row["family"] for row in rows} == {"claude-code"}
    assert {row["recorded_input_tokens"] for row in rows if row["task_id"].startswith("d6e0bada")} == {105981}
    assert all(row["requests"] > 0 for row in rows)
    assert json.loads((out / "config.json").read_text())["format_options"] == {"include_sidechains": True}


# ----- speed and memory: pytest -m benchmark -s

def synthetic_session(path: Path, megabytes: int) -> int:
    """A session of Claude Code's 2.x shape, about `megabytes` MB: per turn a response streamed in two entries,
    hook progress, a tool result (with the toolUseResult copy Claude Code keeps), file snapshots now and then,
    a compaction half way. Returns the number of turns."""
    output = "x" * 1500 + "\n"
    turns = 0
    parent = "u0"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(text("u0", None, "user", "begin", 0)) + "\n")
        while handle.tell() < megabytes * 1_000_000:
            turns += 1
            n = turns
            response = f"msg_{n}"
            handle.write(json.dumps(entry(f"a{n}t", parent, "assistant", [{"type": "text", "text": f"step {n}"}],
                                          n, message_id=response)) + "\n")
            handle.write(json.dumps(entry(f"a{n}u", f"a{n}t", "assistant", [
                {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": f"run {n}"}}],
                n, message_id=response)) + "\n")
            previous = f"a{n}u"
            for k in range(4):
                handle.write(json.dumps({"parentUuid": previous, "isSidechain": False, "sessionId": "s-1",
                                         "type": "progress", "uuid": f"p{n}.{k}", "timestamp": "2026-01-01T00:00:00Z",
                                         "data": {"type": "hook_progress", "hookEvent": "PostToolUse",
                                                  "command": "hooks/check.sh"}}) + "\n")
                previous = f"p{n}.{k}"
            handle.write(json.dumps(entry(f"r{n}", f"a{n}u", "user", [
                {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"{n}: {output}"}], n,
                toolUseResult={"stdout": f"{n}: {output}", "stderr": ""})) + "\n")
            if n % 10 == 0:
                handle.write(json.dumps({"type": "file-history-snapshot", "messageId": f"r{n}",
                                         "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": False}) + "\n")
            parent = f"r{n}"
            if n == 1000:
                handle.write(json.dumps({"parentUuid": None, "logicalParentUuid": parent, "type": "system",
                                         "subtype": "compact_boundary", "uuid": "cb", "sessionId": "s-1"}) + "\n")
                handle.write(json.dumps(text("sum", "cb", "user", "summary of the work so far", 0,
                                             isCompactSummary=True)) + "\n")
                parent = "sum"
    return turns


@pytest.mark.benchmark
def test_a_30mb_session_is_read_line_by_line(benchmark, tmp_path):
    """A ~30 MB session read with the file streamed (never its whole text): peak Python memory (tracemalloc)
    stays below the file's size, most of which (progress, snapshots, toolUseResult copies) never reaches
    the trace."""
    import time
    import tracemalloc

    path = tmp_path / "big.jsonl"
    turns = synthetic_session(path, 30)
    size = path.stat().st_size
    timings = []

    def once() -> None:
        started = time.perf_counter()
        only(claude_code.read(path))
        timings.append(time.perf_counter() - started)

    benchmark.pedantic(once, rounds=3, warmup_rounds=1)
    tracemalloc.start()
    trace = only(claude_code.read(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(trace.usage) == turns and trace.resets == {2 * 1000 + 1: "compaction"}
    benchmark.extra_info.update(file_mb=round(size / 1e6, 1), peak_mb=round(peak / 1e6, 1), seconds=round(min(timings), 2))
    print(f"\n{size / 1e6:.1f} MB session, {turns} responses: read in {min(timings):.2f}s, "
          f"tracemalloc peak {peak / 1e6:.1f} MB ({peak / size:.2f}x the file)")
    assert peak < size


def test_the_session_records_the_claude_code_version_that_wrote_it():
    """Each entry carries Claude Code's `version`; the trace keeps the one its latest response ran under
    (calibration places Claude Code's cache markers by version)."""
    from harness.traces import load_traces

    (trace,) = load_traces([FIXTURES / "claude-code" / "d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl"])
    assert trace.agent_version and trace.agent_version.startswith("2.1.")


def test_an_output_count_logged_before_the_stream_ended_is_not_recorded(tmp_path):
    """Claude Code logs each content block as it completes, with the usage known then: input and cache counts are
    final from the stream's start, the output count only after its end (recorded 2.1.3x sessions: every subagent
    response keeps its start count, 1-10 tokens). A response whose output never grew and has no stop_reason
    records no output (None) and so no recorded cost; one with a stop_reason keeps its count."""
    def entry(uuid, parent, block, output, stop=None):
        return {"type": "assistant", "sessionId": "s-3", "uuid": uuid, "parentUuid": parent,
                "message": {"id": f"msg-{uuid[0]}", "role": "assistant", "content": [block], "stop_reason": stop,
                            "usage": {"input_tokens": 10, "cache_read_input_tokens": 0,
                                      "cache_creation_input_tokens": 0, "output_tokens": output}}}
    path = write(tmp_path / "outputs.jsonl", [
        {"type": "user", "sessionId": "s-3", "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": "go"}},
        entry("a1", "u1", {"type": "text", "text": "thinking aloud"}, 3),
        entry("a2", "a1", {"type": "text", "text": "more"}, 3),
        {"type": "user", "sessionId": "s-3", "uuid": "u2", "parentUuid": "a2",
         "message": {"role": "user", "content": "again"}},
        entry("b1", "u2", {"type": "text", "text": "done"}, 4, stop="end_turn")])
    trace = only(claude_code.read(path))
    assert [trace.usage[i]["output_tokens"] for i in sorted(trace.usage)] == [None, 4]
