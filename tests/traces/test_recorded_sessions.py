"""What a replay takes from a session log beyond its messages: the recorded clock, the recorded agent's own context
resets, and the usage the provider billed (ours: harness/traces/replay.py, docs/traces.md#calibration)."""
from __future__ import annotations

import pytest

from harness.conversation.events import event_log_name
from harness.conversation.replay import replay_file
from harness.models.usage import Pricing, Usage
from harness.results.frames import requests_frame
from harness.traces import Trace, TraceError, check_trace
from harness.traces.replay import recorded_totals, request_times
from harness.traces.replay import REPLAY_MODEL
from tests.traces.test_traces import call, events_of, replay, trace_of

BIG = "word " * 3000  # a prefix well past every cache minimum


def chat(gap_s: float) -> Trace:
    """Two requests `gap_s` apart by the recorded clock, sharing a long first user message."""
    messages = [{"role": "user", "content": "Read KEY-1. " + BIG},
                {"role": "assistant", "content": None, "tool_calls": [call("a", "read", key="KEY-1")]},
                {"role": "tool", "tool_call_id": "a", "name": "read", "content": "KEY-1 is 4410"},
                {"role": "assistant", "content": "4410"}]
    trace = trace_of(messages)
    trace.times = {0: 1_000.0, 1: 1_002.0, 2: 1_002.5 + gap_s, 3: 1_004.0 + gap_s}
    return trace


def test_a_request_is_sent_at_the_recorded_time_of_its_last_input():
    """Ours: the request answered by a recorded response left when its last input was recorded; the first at the
    trace's first time; seconds count from the trace's first recorded time."""
    assert request_times(chat(100.0)) == {1: 0.0, 3: 102.5}
    untimed = chat(0.0)
    untimed.times = {}
    assert request_times(untimed) == {}


@pytest.mark.parametrize("gap_s, reads", [(10.0, True), (600.0, False)])
def test_the_recorded_clock_expires_the_simulated_cache(tmp_path, gap_s, reads):
    """Anthropic's 5-minute TTL (docs/caching.md) applies on the recorded clock: ten minutes between two requests
    of a session lose the cached prefix, ten seconds keep it."""
    row = replay(tmp_path, chat(gap_s), cache_policy="auto")
    calls = [e for e in events_of(tmp_path, row) if e["type"] == "llm_call"]
    assert calls[1]["clock_s"] >= gap_s
    assert (calls[1]["usage"]["cached_tokens"] > 0) is reads


def reset_trace() -> Trace:
    """A session whose agent compacted its own context before message 4 (the summary it kept)."""
    messages = [{"role": "system", "content": "You look up records."},
                {"role": "user", "content": "Read KEY-1."},
                {"role": "assistant", "content": None, "tool_calls": [call("a", "read", key="KEY-1")]},
                {"role": "tool", "tool_call_id": "a", "name": "read", "content": "KEY-1 is 4410 " + BIG},
                {"role": "user", "content": "Summary of the conversation so far: KEY-1 was read."},
                {"role": "assistant", "content": "KEY-1 is 4410."}]
    trace = trace_of(messages)
    trace.resets = {4: "compaction"}
    return check_trace(trace)


@pytest.mark.parametrize("strategy", ["none", "observation_masking"])
def test_a_recorded_reset_drops_the_earlier_messages_under_every_strategy(tmp_path, strategy):
    """Ours: the recorded agent's own compaction is part of the recording: its next request held the system prompt
    and what came after the reset, whatever strategy replays it; the reset is logged as itself, not as the
    strategy's condensation, and the value it cited from before the reset counts as forgotten."""
    row = replay(tmp_path, reset_trace(), strategy)
    events = events_of(tmp_path, row)
    resets = [e for e in events if e["type"] == "recorded_reset"]
    assert [(e["kind"], e["trace_index"]) for e in resets] == [("compaction", 4)]
    last = [e for e in events if e["type"] == "llm_call"][-1]
    assert last["view_len"] == 2  # the system prompt and the summary
    assert last["forgotten_references"] == 1 and last["forgotten_examples"] == ["4410"]
    assert row["summaries"] == row["hard_resets"] == 0 and row["recorded_resets"] == 1
    assert row["termination"] == "trace_end"
    assert replay_file(tmp_path / "events" / event_log_name(row['run_id'])).ok  # the log rebuilds every view it sent


def test_a_reset_outside_the_trace_is_refused():
    trace = reset_trace()
    trace.resets = {9: "compaction"}
    with pytest.raises(TraceError, match="context reset at message 9 lies outside the trace's 6 messages"):
        check_trace(trace)


def billed_trace() -> Trace:
    trace = chat(10.0)
    trace.model = "claude-sonnet-4-5"
    trace.usage = {1: {"input_tokens": 5000, "cached_tokens": 0, "cache_write_tokens": 4900, "output_tokens": 30},
                   3: {"input_tokens": 5100, "cached_tokens": 4900, "cache_write_tokens": 150, "output_tokens": 12,
                       "cache_write_1h_tokens": None}}
    return trace


def test_each_replayed_request_carries_the_recorded_one_at_list_prices(tmp_path):
    """Ours: a replayed request logs the usage the trace recorded for it and its cost at the recorded model's
    prices in litellm's cost map; the requests table and the row carry them beside the simulated figures."""
    trace = billed_trace()
    row = replay(tmp_path, trace)
    pricing = Pricing.for_model("claude-sonnet-4-5")
    costs = [pricing.cost(Usage.from_dict(trace.usage[i]))[0] for i in (1, 3)]
    calls = [e for e in events_of(tmp_path, row) if e["type"] == "llm_call"]
    assert [c["recorded"]["cached_tokens"] for c in calls] == [0, 4900]
    assert [c["recorded"]["cost_usd"] for c in calls] == pytest.approx(costs)
    assert costs[1] < costs[0]  # the read is billed at a tenth of the input price
    requests = requests_frame(tmp_path, __import__("pandas").DataFrame([row]))
    assert list(requests["trace_index"]) == [1, 3]
    assert list(requests["recorded_cache_write_tokens"]) == [4900, 150]
    totals = recorded_totals(trace)
    assert totals["recorded_input_tokens"] == 10_100 and totals["recorded_cached_tokens"] == 4900
    assert totals["recorded_cache_write_tokens"] == 5050 and totals["recorded_output_tokens"] == 42
    assert totals["recorded_cost_usd"] == pytest.approx(sum(costs))
    assert row["recorded_cost_usd"] == pytest.approx(sum(costs))


def test_a_model_without_list_prices_records_no_cost(tmp_path):
    trace = billed_trace()
    trace.model = "my-own-finetune"
    row = replay(tmp_path, trace)
    assert row["recorded_cost_usd"] is None and row["recorded_input_tokens"] == 10_100
    assert all("cost_usd" not in e["recorded"] for e in events_of(tmp_path, row) if e["type"] == "llm_call")


# ----- calibration (ours: harness/traces/calibration.py, harness/results/calibration.py)
def session_file(tmp_path, gap_s: float = 10.0):
    """A billed two-request session as an OpenAI-format trace file with usage the test states."""
    import json

    trace = billed_trace()
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"id": "s1", "model": trace.model, "messages": trace.messages}), encoding="utf-8")
    return path


def test_calibration_replays_as_the_recorded_agent_ran(monkeypatch):
    """The recorded model's cache and list prices, the recorded agent's policy, a window no request reaches;
    what the user set stays."""
    from harness import api
    from harness.traces.calibration import calibration_profiles

    trace = billed_trace()
    trace.source_format = "codex"
    base = api.mock_profiles("mock/replay")
    own = calibration_profiles(trace, base)
    assert own["main"]["mock"]["cache"] == "anthropic" and own["main"]["price_model"] == "claude-sonnet-4-5"
    assert own["main"]["cache_policy"] == "auto" and own["main"]["mock"]["window"] >= 10_200
    kept = calibration_profiles(trace, api.mock_profiles("mock/replay", cache="openai", cache_policy="last"),
                                chosen=["cache_style", "cache_policy"])
    assert kept["main"]["mock"]["cache"] == "openai" and kept["main"]["cache_policy"] == "last"
    trace.model = "gpt-4o"
    assert calibration_profiles(trace, base)["main"]["mock"]["cache"] == "openai"
    assert base["main"].get("price_model") is None  # the caller's profiles are not changed


def test_the_unrecorded_prefix_stands_in_for_the_missing_system_prompt(tmp_path):
    """The first recorded request held more than the trace shows (a session log keeps no system prompt or tool
    schemas): a filler system message of that size makes the first simulated request as long as the recorded one."""
    from harness.core.tokens import count_message, count_tools
    from harness.traces.calibration import filler_message, unrecorded_prefix

    trace = billed_trace()
    shown = count_tools(trace.tools) + count_message(trace.messages[0])
    trace.usage[1]["input_tokens"] = shown + 2_000
    assert unrecorded_prefix(trace) == 2_000
    assert count_message(filler_message(2_000)) == 2_000 and filler_message(3) is None
    trace.usage[1]["input_tokens"] = shown - 50  # a provider counting fewer tokens: no negative prefix
    assert unrecorded_prefix(trace) == 0


def test_calibrate_refuses_other_strategies(tmp_path, capsys):
    from harness.cli import main as cli

    code = cli(["traces", str(session_file(tmp_path)), "--calibrate", "--strategies", "none,observation_masking",
                "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 2 and "--calibrate replays under none alone" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_calibration_compares_each_recorded_request(tmp_path):
    """Per trace and in total: simulated / recorded over the same requests; each request's reasons."""
    from harness.results.calibration import calibration_table, compared_requests
    from harness.results.report import runs_frame
    from harness import api

    trace = billed_trace()
    trace.times = {0: 0.0, 1: 2.0, 2: 900.0, 3: 901.0}  # 15 minutes before the second request: past the TTL
    out = tmp_path / "out"
    from harness.traces.replay import build_cells, replay_cell
    from harness.results.layout import ResultsDir

    cells = build_cells([trace], api.strategy_specs("none"), api.mock_profiles(REPLAY_MODEL), str(out / "events"),
                        calibrate=True)
    results = ResultsDir(out)
    results.append_run(replay_cell(cells[0]))
    requests = compared_requests(out)
    assert list(requests["trace_index"]) == [1, 3]
    assert "prefix" in requests["reasons"][0] and "ttl" in requests["reasons"][1]
    table = calibration_table(requests, runs_frame(out))
    assert list(table["trace"]) == ["t1", "total"]
    total = table.iloc[-1]
    assert total["recorded_cached_tokens"] == 4900 and total["requests"] == 2
    assert total["simulated_input_tokens"] == requests["input_tokens"].sum()
    assert total["cost_usd_ratio"] == pytest.approx(requests["cost_usd"].sum() / requests["recorded_cost_usd"].sum())


@pytest.mark.parametrize("version, writes_1h, policy", [
    ("2.1.112", None, "claude-code"),
    ("2.1.38", None, {"name": "claude-code", "messages": 2}),
    ("2.1.112", 800, {"name": "claude-code", "ttl": "1h"}),
    (None, None, "claude-code"),
])
def test_a_claude_code_session_calibrates_under_its_own_version_and_ttl(version, writes_1h, policy):
    """Claude Code marks two messages before 2.1.59 and one from then on, and writes 1h entries for subscribers
    (docs/caching.md, Claude Code): calibration takes both from the session itself."""
    from harness.traces.calibration import recorded_policy

    trace = billed_trace()
    trace.source_format, trace.agent_version = "claude-code", version
    trace.usage[3]["cache_write_1h_tokens"] = writes_1h
    assert recorded_policy(trace) == policy


# ----- real sessions (tests/fixtures/traces/*/SOURCES.md)
FIXTURES = __import__("pathlib").Path(__file__).parents[1] / "fixtures" / "traces"
SUBAGENT = FIXTURES / "claude-code" / "8463c716-a2ea-4c14-9efa-87158ebd9f20" / "subagents" / "agent-a7be2f0.jsonl"
REAL = [FIXTURES / "claude-code" / "d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl",
        FIXTURES / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
        FIXTURES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"]


def replay_real(tmp_path, strategies, paths, window: int | None = None):
    from harness import api
    from harness.results.layout import read_runs

    out = api.traces(paths, strategies=strategies, out=tmp_path / "out", include_sidechains=True,
                     profiles=api.mock_profiles(REPLAY_MODEL, window=window))
    return read_runs(out)


def replayable_strategies() -> list:
    """Every registered strategy a replay can run here: not one needing the agent's call, not one whose extra is
    missing from this environment."""
    from harness import api
    from harness.core.errors import ConfigError
    from harness.traces.replay import check_replayable
    from strategies import REGISTRY

    specs = []
    for spec in api.strategy_specs(list(REGISTRY)):
        try:
            check_replayable(spec, api.mock_profiles(REPLAY_MODEL))
        except ConfigError:
            continue
        specs.append(spec)
    return specs


def test_real_sessions_replay_with_their_recorded_bill(tmp_path):
    """Real Claude Code and Codex CLI sessions replay to their end, each row carrying the bill it recorded."""
    from harness import api

    rows = replay_real(tmp_path, api.strategy_specs("none,observation_masking,llm_summarizing"), REAL)
    assert len(rows) == 9 and {row["termination"] for row in rows} == {"trace_end"}
    assert all(row["recorded_cached_tokens"] and row["recorded_input_tokens"] for row in rows)
    assert {row["family"] for row in rows} == {"claude-code", "codex"}


@pytest.mark.slow
def test_a_real_session_replays_under_every_replayable_strategy(tmp_path):
    """Every registered strategy a replay can run, on a real 13-request Claude Code thread at a window small enough
    for them to act: each replay ends at the trace's end or, for a strategy that cannot recover, on the overflow;
    none ends in an error."""
    specs = replayable_strategies()
    assert len(specs) >= 20
    rows = replay_real(tmp_path, specs, [SUBAGENT], window=5000)
    assert len(rows) == len(specs)
    ends = {row["strategy"]: row["termination"] for row in rows}
    assert set(ends.values()) <= {"trace_end", "context_overflow", "strategy_failed"}, \
        {row["strategy"]: row["error"] for row in rows if row["termination"] not in ("trace_end", "context_overflow")}
    # Inspect's native compaction raises when Anthropic's compaction cannot trigger under its 50,000-token minimum
    # (it says to use CompactionAuto, which falls back to a summary): the library's own failure, not the replay's.
    assert [name for name, end in ends.items() if end == "strategy_failed"] == ["inspect.compaction_native"]
    acted = {row["strategy"] for row in rows if (row["summaries"] or row["hard_resets"] or row["compactions"])}
    assert {"llm_summarizing", "hard_summarize", "observation_masking", "clear_tool_uses"} <= acted


def test_a_compaction_pass_needs_no_recorded_reply(tmp_path):
    """OpenAI's `/responses/compact` answers with the compaction item alone, which the simulated provider makes
    itself: a replay (which hands the provider only recorded responses) runs `openai.compact` like any strategy."""
    from tests.traces.test_traces import lookup_trace

    row = replay(tmp_path, lookup_trace(hops=8, filler=300), "openai.compact", {"compact_threshold": 1500},
                 window=4000)
    assert row["termination"] == "trace_end" and row["summaries"] >= 1


def test_calibrate_reports_a_real_session_against_its_bill(tmp_path, capsys):
    """`--calibrate` on a real Claude Code thread: past its first request, the share of each request read from
    cache under Claude Code's own placement agrees with the recorded share within 5 points (the claim
    docs/validity.md rests on); under a policy caching nothing it does not."""
    import pandas as pd

    from harness.cli import main as cli

    def shares(out, *extra):
        code = cli(["traces", str(SUBAGENT), "--include-sidechains", "--calibrate", "--out", str(out),
                    "--no-progress", *extra])
        assert code == 0
        requests = pd.read_csv(out / "calibration_requests.csv")
        later = requests[requests["request"] > 1]
        return (later["cached_tokens"] / later["input_tokens"]
                - later["recorded_cached_tokens"] / later["recorded_input_tokens"]).abs()

    assert (shares(tmp_path / "own") <= 0.05).all()
    printed = capsys.readouterr().out
    assert "Calibration (simulated / recorded" in printed and "8463c716-a2ea-4c14-9efa-87158ebd9f20/a7be2f0" in printed
    table = pd.read_csv(tmp_path / "own" / "calibration.csv")
    assert list(table["trace"]) == ["8463c716-a2ea-4c14-9efa-87158ebd9f20/a7be2f0", "total"]
    assert (shares(tmp_path / "nothing", "--cache-policy", "none") > 0.5).all()
