"""The mini-swe-agent, SWE-agent and Inspect AI trace readers.

Each format is read from small fixtures authored for these tests (tests/fixtures/traces/<format>/);
the formats' rules come from the recording code: mini-swe-agent `DefaultAgent.serialize` and
`models/utils/actions_*.py`, SWE-agent `sweagent/agent/agents.py` (`add_step_to_history`,
`get_trajectory_data`) and `models.py` (`_history_to_messages`), Inspect's `read_eval_log`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.traces import TraceError, inspect_log, mini_swe_agent, swe_agent
from strategies.adapters import INSPECT_AI
from tests.adapter_helpers import requires

FIXTURES = Path(__file__).parents[1] / "fixtures" / "traces"
MINI, SWE, INSPECT_EVAL = FIXTURES / "mini-swe-agent", FIXTURES / "swe-agent", FIXTURES / "inspect" / "lookup.eval"
needs_inspect = requires(INSPECT_AI)


def only(traces):
    [trace] = traces
    return trace


def head_of(path: Path):
    """What the registry hands detect(): the parsed JSON, or None for a file that is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def calls(message):
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls", [])]


# ---------------------------------------------------------------- mini-swe-agent

def test_mini_tool_calls_kept_as_recorded_split_and_parallel():
    """mini-swe-agent v2 records litellm's tool_calls and `tool` results (actions_toolcall.py): kept,
    one call per message and two in one message alike; the `exit` message is the outcome, not a message."""
    trace = only(mini_swe_agent.read(MINI / "toolcalls.traj.json"))
    roles = [m["role"] for m in trace.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "tool", "assistant", "tool",
                     "user", "assistant"]
    assert calls(trace.messages[4]) == [("bash", {"command": "wc -c greet.py"}),
                                        ("bash", {"command": "git log -1 --format=%h"})]
    assert [m["tool_call_id"] for m in trace.messages[5:7]] == ["call_2", "call_3"]
    assert trace.messages[7]["content"] is None and trace.messages[8]["name"] == "bash"
    assert "«Grüß Gott» 👋" in trace.messages[10]["content"]
    assert all(set(m) <= {"role", "content", "tool_calls", "tool_call_id", "name"} for m in trace.messages)
    assert trace.tools == [mini_swe_agent.BASH_TOOL]
    assert trace.outcome == {"exit_status": "Submitted", "submission": "diff --git a/greet.py b/greet.py"}
    assert trace.model == "openai/gpt-4o-mini" and trace.source_format == "mini-swe-agent"
    assert trace.trace_id == "toolcalls"


def test_mini_usage_per_response_and_total_includes_format_errors():
    """Recorded usage is litellm's usage of each response (extra.response.usage); a response that failed
    the format leaves no assistant message, only its usage on the error message (litellm_model.query):
    it counts in recorded_input_tokens but is attributed to no message (ours)."""
    trace = only(mini_swe_agent.read(MINI / "toolcalls.traj.json"))
    assert trace.usage[2] == {"input_tokens": 120, "cached_tokens": 0, "output_tokens": 15}
    assert trace.usage[4] == {"input_tokens": 160, "cached_tokens": 120, "output_tokens": 30}
    assert sorted(trace.usage) == [2, 4, 7, 10]
    assert all(trace.messages[i]["role"] == "assistant" for i in trace.usage)
    assert trace.recorded_input_tokens == 120 + 160 + 200 + 9300 + 9350


def test_mini_text_actions_become_bash_calls_and_observations_tool_results():
    """Text-based mini-swe-agent (actions_text.py): each action in extra.actions becomes a `bash` tool call
    on the assistant message, whose text is kept; the user observation that follows becomes its tool
    result, so masking/output limits see it as tool output; format errors stay user messages (ours)."""
    trace = only(mini_swe_agent.read(MINI / "textbased.traj.json"))
    assert [m["role"] for m in trace.messages] == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert trace.messages[2]["content"].endswith("```mswea_bash_command\ncat greet.py\n```")
    assert calls(trace.messages[2]) == [("bash", {"command": "cat greet.py"})]
    assert trace.messages[3]["tool_call_id"] == trace.messages[2]["tool_calls"][0]["id"]
    assert "print('hello')" in trace.messages[3]["content"]
    assert trace.messages[4]["content"].startswith("Please always provide EXACTLY ONE action")
    assert trace.tools == []  # the text-based model was shown no tool schema
    assert trace.recorded_input_tokens == 100 + 130 + 170


def test_mini_v1_uses_the_agents_regex_exactly_one_block():
    """v1 trajectories (save_traj, "mini-swe-agent-1") record no actions: the agent's own rule applies,
    exactly one ```bash block is an action (DefaultAgent.parse_action in v1); no block -> no call, and
    the format error after it stays a user message. v1 records no tokens: recorded_input_tokens is None."""
    trace = only(mini_swe_agent.read(MINI / "v1.traj.json"))
    assert [m["role"] for m in trace.messages] == ["system", "user", "assistant", "tool", "assistant", "user",
                                                   "assistant", "tool"]
    assert calls(trace.messages[2]) == [("bash", {"command": "ls data | wc -l"})]
    assert "tool_calls" not in trace.messages[4]
    assert trace.usage == {} and trace.recorded_input_tokens is None
    assert "naïve" in trace.messages[1]["content"] and "timestamp" not in trace.messages[1]


def test_mini_responses_api_objects_become_chat_messages():
    """litellm_response_model records whole response objects and function_call_output items
    (actions_toolcall_response.py): one assistant message with both calls, two tool results."""
    trace = only(mini_swe_agent.read(MINI / "responses.traj.json"))
    assert [m["role"] for m in trace.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert trace.messages[2]["content"] == "Checking both files."
    assert calls(trace.messages[2]) == [("bash", {"command": "cat a.txt"}), ("bash", {"command": "cat b.txt"})]
    assert "α" in trace.messages[3]["content"] and trace.messages[4]["tool_call_id"] == "fc_2"
    assert trace.usage[2] == {"input_tokens": 90, "cached_tokens": 0, "output_tokens": 22}
    assert trace.outcome["exit_status"] == "LimitsExceeded"


def test_mini_trace_without_tools():
    """A trajectory where the agent only answers in text has no tool calls."""
    trace = only(mini_swe_agent.read(MINI / "no_tools.traj.json"))
    assert [m["role"] for m in trace.messages] == ["system", "user", "assistant"]
    assert "tool_calls" not in trace.messages[2] and trace.tools == []


def test_mini_long_observation_is_kept_whole():
    """The long observation is kept as recorded, so a small --window overflows on it."""
    trace = only(mini_swe_agent.read(MINI / "toolcalls.traj.json"))
    assert len(trace.messages[8]["content"]) > 20000 and "line 899: value_899" in trace.messages[8]["content"]


# ---------------------------------------------------------------- SWE-agent

def test_swe_function_calling_history_kept():
    """Function-calling SWE-agent records tool_calls on the action entry and the observation as a `tool`
    entry with tool_call_ids (agents.py add_step_to_history / models.py _history_to_messages): kept;
    tool calls over several messages, one per step; tokens_sent -> recorded_input_tokens."""
    trace = only(swe_agent.read(SWE / "function_calling.traj"))
    assert [m["role"] for m in trace.messages] == ["system", "user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert calls(trace.messages[6]) == [("str_replace_editor", {"command": "str_replace", "path": "pager.py",
                                                                "old_str": "n*10", "new_str": "(n-1)*10"})]
    assert trace.messages[7] == {"role": "tool", "tool_call_id": "toolu_3", "name": "str_replace_editor",
                                 "content": "The file pager.py has been edited."}
    assert len(trace.messages[5]["content"]) > 20000  # the long observation, whole
    assert "ça ne va pas" in trace.messages[1]["content"] and "→" in trace.messages[6]["content"]
    assert trace.recorded_input_tokens == 12345 and trace.usage == {}
    assert trace.outcome == {"exit_status": "submitted", "submission": "diff --git a/x b/x"}
    assert trace.model == "claude-sonnet-4-20250514" and trace.trace_id == "function_calling"


def test_swe_thought_action_maps_action_to_bash_and_folds_demos():
    """Thought-action configs write the command in the text and in `action`: it becomes a `bash` call and
    the next user observation its result (like mini-swe-agent). Demonstrations in the history (is_demo) were
    shown, not generated: they become one user message; another agent's entries are skipped (ours)."""
    trace = only(swe_agent.read(SWE / "thought_action.traj"))
    assert [m["role"] for m in trace.messages] == ["system", "user", "user", "assistant", "tool", "assistant", "tool"]
    assert trace.messages[1]["content"] == "Here is a demonstration:\nDISCUSSION\nDemo step.\n```\nls\n```\ndemo.txt"
    assert calls(trace.messages[3]) == [("bash", {"command": "ls -1"})]
    assert "文件" in trace.messages[3]["content"] and trace.messages[4]["content"] == "pager.py\nREADME.md"
    assert not any(m["content"] == "Reviewer note." for m in trace.messages)


def test_swe_retry_attempts_are_traces_and_one_has_no_tools():
    """RetryAgent writes `attempts` (agents.py RetryAgent.get_trajectory_data): one trace per attempt, each
    with its own info; tokens_sent 0 means nothing recorded (None)."""
    first, second = swe_agent.read(SWE / "retry.traj")
    assert (first.trace_id, second.trace_id) == ("retry/attempt0", "retry/attempt1")
    assert first.outcome["exit_status"] == "exit_cost" and first.recorded_input_tokens == 500
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant"]
    assert "tool_calls" not in second.messages[2] and second.recorded_input_tokens is None


@pytest.mark.parametrize("reader, path, index, problem", [
    (mini_swe_agent, MINI / "bad_arguments.traj.json", 2, "arguments as a string"),
    (mini_swe_agent, MINI / "bad_orphan_tool.traj.json", 4, "'call_9' answers no earlier tool call"),
    (mini_swe_agent, MINI / "bad_role.traj.json", 1, "got 'narrator'"),
    (swe_agent, SWE / "bad_orphan_tool.traj", 4, "['toolu_8'] answer no earlier tool call"),
    (swe_agent, SWE / "bad_entry.traj", 1, "must be an object"),
    (swe_agent, SWE / "bad_content.traj", 2, "content must be a string"),
], ids=lambda v: v.name if isinstance(v, Path) else None)
def test_malformed_refused_with_file_trace_and_index(reader, path, index, problem):
    """A malformed trace is refused naming file, trace and message index."""
    with pytest.raises(TraceError) as caught:
        reader.read(path)
    message = str(caught.value)
    trace_id = path.name.split(".")[0]
    assert str(path) in message and f"trace {trace_id!r}" in message
    assert f"message {index}:" in message and problem in message


def test_not_json_refused_naming_the_file(tmp_path):
    """A file that is not JSON is a TraceError naming it, not a traceback."""
    path = tmp_path / "broken.traj"
    path.write_text("{not json")
    for reader in (swe_agent, mini_swe_agent):
        with pytest.raises(TraceError, match="broken.traj: not readable as JSON"):
            reader.read(path)


# ---------------------------------------------------------------- detection

FORMATS = {"mini-swe-agent": mini_swe_agent, "swe-agent": swe_agent, "inspect": inspect_log}


def all_fixtures():
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".traj", ".eval"))


@pytest.mark.parametrize("module", FORMATS.values(), ids=FORMATS.keys())
def test_detection_claims_own_fixtures_and_rejects_the_others(module):
    """Each format detects its own fixtures and none of the other formats' fixtures in
    tests/fixtures/traces (auto-detection)."""
    own = [p for p in all_fixtures() if p.parent.name == module.FORMAT]
    others = [p for p in all_fixtures() if p.parent.name != module.FORMAT]
    assert own and others
    assert [p.name for p in own if not module.detect(p, head_of(p))] == []
    assert [str(p) for p in others if module.detect(p, head_of(p))] == []


def test_mini_detection_needs_its_marker():
    """A plain list of messages or an object with `messages` but no trajectory_format / mini_version is
    not claimed (the OpenAI reader's)."""
    assert not mini_swe_agent.detect(Path("x.json"), {"messages": []})
    assert not mini_swe_agent.detect(Path("x.json"), [{"role": "user", "content": "hi"}])
    assert mini_swe_agent.detect(Path("x.json"), {"messages": [], "info": {"mini_version": "1.0"}})


# ---------------------------------------------------------------- Inspect AI

@needs_inspect
def test_inspect_samples_to_traces():
    """One trace per sample and epoch (`task/sample/epoch`) from sample.messages: text content, argument
    dicts as JSON strings, tool results with call id and function; tools from the model call; scores."""
    alpha, hello = inspect_log.read(INSPECT_EVAL)
    assert (alpha.trace_id, hello.trace_id) == ("lookup_task/alpha/1", "lookup_task/hello/1")
    assert [m["role"] for m in alpha.messages] == ["user", "assistant", "tool", "assistant", "tool", "tool",
                                                   "assistant", "tool", "assistant"]
    assert calls(alpha.messages[3]) == [("lookup", {"key": "beta"}), ("lookup", {"key": "gamma"})]
    assert alpha.messages[5] == {"role": "tool", "tool_call_id": "call_g1", "name": "lookup", "content": "gamma → 日本 🚀"}
    assert len(alpha.messages[7]["content"]) > 8000  # ~ 4k tokens: overflows a small window
    assert [t["function"]["name"] for t in alpha.tools] == ["lookup"]
    assert alpha.tools[0]["function"]["parameters"]["properties"]["key"]["type"] == "string"
    assert alpha.outcome == {"scores": {"includes": "C"}} and alpha.model == "mockllm/model"
    assert [m["role"] for m in hello.messages] == ["user", "assistant"] and "tool_calls" not in hello.messages[1]


@needs_inspect
def test_inspect_usage_keyed_to_the_message_each_model_event_produced():
    """Each ModelEvent's output usage goes to the assistant message with its output's id; Inspect's
    input_tokens leaves out cache reads (its OpenAI provider subtracts them), so input = input_tokens +
    input_tokens_cache_read (+ cache writes); the total is recorded_input_tokens."""
    from inspect_ai.log import read_eval_log

    alpha = inspect_log.read(INSPECT_EVAL)[0]
    events = [e for e in read_eval_log(str(INSPECT_EVAL)).samples[0].events if e.event == "model"]
    expected = [e.output.usage.input_tokens + e.output.usage.input_tokens_cache_read for e in events]
    assert sorted(alpha.usage) == [1, 3, 6, 8]
    assert [alpha.usage[i]["input_tokens"] for i in (1, 3, 6, 8)] == expected
    assert [alpha.usage[i]["cached_tokens"] for i in (1, 3, 6, 8)] == [
        e.output.usage.input_tokens_cache_read for e in events]
    assert alpha.recorded_input_tokens == sum(expected)


@needs_inspect
def test_inspect_json_log_reads_like_the_eval(tmp_path):
    """The .json log format holds the same samples as .eval (Inspect's write_eval_log converts)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    path = tmp_path / "lookup.json"
    write_eval_log(read_eval_log(str(INSPECT_EVAL)), str(path), format="json")
    assert inspect_log.detect(path, head_of(path))
    from_json, from_eval = inspect_log.read(path), inspect_log.read(INSPECT_EVAL)
    assert [(t.trace_id, t.messages, t.usage) for t in from_json] == [(t.trace_id, t.messages, t.usage) for t in from_eval]


@needs_inspect
def test_inspect_malformed_sample_refused_with_trace_and_index(tmp_path):
    """A sample whose tool result answers no call is refused naming file, trace and message index."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(INSPECT_EVAL))
    log.samples[0].messages[3].tool_calls = None  # the parallel calls' results now answer nothing
    path = tmp_path / "broken.json"
    write_eval_log(log, str(path), format="json")
    with pytest.raises(TraceError, match=r"broken.json, trace 'lookup_task/alpha/1', message 4: tool result 'call_b1'"):
        inspect_log.read(path)


@needs_inspect
def test_inspect_unreadable_log_refused_naming_the_file(tmp_path):
    """A .eval that is not a zip log is a TraceError naming the file."""
    path = tmp_path / "junk.eval"
    path.write_bytes(b"not a zip")
    with pytest.raises(TraceError, match="junk.eval: Inspect AI could not read the log"):
        inspect_log.read(path)


def test_inspect_missing_extra_names_it(monkeypatch):
    """Without inspect_ai, reading a log is a ConfigError naming the extra (exit 2, no traceback)."""
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    with pytest.raises(ConfigError, match=r"pip install 'ctxbench\[inspect\]'"):
        inspect_log.read(INSPECT_EVAL)
