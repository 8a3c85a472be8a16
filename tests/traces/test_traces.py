"""Trace replay: recorded trajectories replayed under strategies, actions held fixed.

The OpenAI-style traces here are built as `Trace` objects directly (the format parsers are tested in
their own files); the ctxbench event-log fixtures are in tests/fixtures/traces/ctxbench/.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import api
from harness.cli import main as cli
from harness.core.errors import ConfigError
from harness.conversation.events import event_log_name, read_events
from harness.traces.references import ReferenceIndex, message_references, text_references
from harness.conversation.replay import replay_file
from harness.results.layout import read_runs
from harness.traces.replay import REPLAY_MODEL, build_cells, replay_cell
from harness.traces import Trace, TraceError, check_trace, load_traces

FIXTURES = Path(__file__).parents[1] / "fixtures" / "traces" / "ctxbench"
CTXBENCH_FIXTURE = FIXTURES / "ctxbench_small.jsonl"
TOOLS = [{"type": "function", "function": {"name": "read", "description": "read a record",
                                           "parameters": {"type": "object", "properties": {"key": {"type": "string"}}}}}]


def call(call_id: str, name: str, **args) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def trace_of(messages: list[dict], trace_id: str = "t1", tools: list | None = None) -> Trace:
    return check_trace(Trace(trace_id=trace_id, source_format="openai", path=f"{trace_id}.json", messages=messages,
                             tools=TOOLS if tools is None else tools))


def lookup_trace(hops: int = 6, filler: int = 0, trace_id: str = "lookup") -> Trace:
    """An agent that reads records one by one and finally cites the first record's id (KEY-1000)."""
    messages = [{"role": "system", "content": "You look up records."},
                {"role": "user", "content": "Start at KEY-1000 and follow the chain; report the first key."}]
    for hop in range(hops):
        key, following = f"KEY-{1000 + hop}", f"KEY-{1000 + hop + 1}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [call(f"c{hop}", "read", key=key)]})
        messages.append({"role": "tool", "tool_call_id": f"c{hop}", "name": "read",
                         "content": f"record {key}: next {following}, weight {hop * 111 + 100}" + " pad" * filler})
    messages.append({"role": "assistant", "content": "The chain started at KEY-1000."})
    return trace_of(messages, trace_id)


def replay(tmp_path: Path, trace: Trace, strategy: str = "none", config: dict | None = None, **profile) -> dict:
    specs = api.strategy_specs([strategy], {strategy: config} if config else None)
    profiles = api.mock_profiles(REPLAY_MODEL, **profile)
    cells = build_cells([trace], specs, profiles, str(tmp_path / "events"))
    return replay_cell(cells[0])


def events_of(tmp_path: Path, row: dict) -> list[dict]:
    return read_events(tmp_path / "events" / event_log_name(row['run_id']))


# ----- references (ours: harness/traces/references.py)
def test_references_are_ids_numbers_paths_and_quoted_values_not_words():
    """Ours: the reference tokenizer keeps identifiers with digits, 3+ digit numbers,
    paths, snake_case names and quoted values; plain words and short numbers are not references."""
    found = text_references('Open src/app.py, fix user_id for ENT-4821 (port 8080, step 7) and "Blue Lagoon".')
    assert {"src/app.py", "user_id", "ENT-4821", "8080", "Blue Lagoon"} <= found
    assert not {"Open", "fix", "for", "port", "step", "7"} & found
    args = message_references({"role": "assistant", "content": None,
                               "tool_calls": [call("c", "search", query="Paris", limit=500, exact=True)]})
    assert args == {"Paris", "500"}  # argument values, not the parameter names


TOKEN_CASES = ["plain words only here", "ENT-4821 a.b.c src/app.py user_id __init__ x_", "-:@#-a1 ::: 2² v1.2.3.",
               "a" * 300 + "1 " + "b-" * 200 + "c/", "naïve_façade Straße-9 ①②③ ٣٤٥ 東京_1 @@user #12 :x.y:",
               "tail.", "1,000,000 and 3.1415, 42 0x1f --flag=7"]


@pytest.mark.parametrize("text", TOKEN_CASES)
def test_token_pattern_matches_what_the_plain_pattern_matched(text):
    """Ours (trace replay's overhead): the possessive token pattern finds the same tokens as
    the plain one it replaced, [\\w./:@#-]*[\\d/_.][\\w./:@#-]* at each token's start (Unicode included)."""
    import re

    from harness.traces import references

    plain = re.compile(r"(?<![\w./:@#-])[\w./:@#-]*[\d/_.][\w./:@#-]*")
    assert references._TOKEN.findall(text) == plain.findall(text)


ASCII_CASES = [case for case in TOKEN_CASES if case.isascii()] + [
    '"a.b" `x_1` "ab"c" say "  ENT-1 " ok', "(src/app.py) [v1.2] {k:v_2} <a@b.c> 'x-1'", "..:://##@@-- _ __ ___",
    "1.2.3. 100, 1,000. -42- 0x1F/ab", "line\nbreak_1\r\n\ttab.2\x1c\x1fctl_3", "a" * 5000 + "_"]


def _str_references(text: str) -> set[str]:
    """text_references by the Unicode token pattern alone: what every text was read with before the ASCII path."""
    from harness.traces import references

    found = {value.strip() for match in references._QUOTED.finditer(text)
             for value in match.groups() if value is not None and len(value.strip()) >= 3}
    tokens = {token.strip(references._STRIP) for token in references._TOKEN.findall(text)}
    return found | {token for token in tokens if references._is_reference(token)}


@pytest.mark.parametrize("text", ASCII_CASES)
def test_ascii_token_pattern_matches_the_unicode_pattern(text):
    """Ours (trace replay's overhead): an ASCII text's tokens, found stripped by the byte
    pattern, are the Unicode pattern's stripped, and its references are the same."""
    from harness.traces import references

    unicode = {token.strip(references._STRIP) for token in references._TOKEN.findall(text)} - {""}
    assert {token for token in references._ASCII_STRIPPED.findall(text)} == unicode
    assert text_references(text) == _str_references(text)


def test_ascii_references_match_the_unicode_reading_on_random_texts():
    """Ours: on 3,000 random ASCII texts (token characters, quotes, punctuation, control
    characters, spaces), the byte path reads the same references as the Unicode one."""
    import random

    rng = random.Random(24)
    alphabet = "aZ09_./:@#-,;!?()[]{}\"'`\n\t \x1c\x7f" + "xy" * 4 + "7" * 3
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        assert text_references(text) == _str_references(text), repr(text)


def test_ascii_runs_hold_the_pattern_tokens_and_only_non_references_besides():
    """Ours: an ASCII text's runs (byte translation and split) hold every token the pattern
    finds, and each other run holds none of `0-9 / _ .`, so it is no reference: on the ASCII cases and 3,000
    random texts."""
    import random

    from harness.traces import references

    rng = random.Random(241)
    alphabet = "aZ09_./:@#-,;!?()[]{}\"'`\n\t \x1c\x7f" + "xy" * 4 + "7" * 3
    texts = ASCII_CASES + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    for text in texts:
        runs = {run.decode("ascii") for run in references._ascii_runs(text)}
        tokens = set(references._ASCII_STRIPPED.findall(text))
        assert tokens <= runs, repr(text)
        assert not any(set(run) & set("0123456789/_.") or references._kept(run) for run in runs - tokens), repr(text)


@pytest.mark.parametrize("text", ASCII_CASES + [case for case in TOKEN_CASES if not case.isascii()])
def test_wanted_references_are_the_references_that_are_wanted(text):
    """Ours: a message's references read for a wanted set (tokens judged only where wanted)
    are its full references intersected with that set, for any wanted set, ASCII or not."""
    from harness.traces import references

    message = {"role": "tool", "content": text}
    full = message_references(message)
    candidates = sorted(full | {"tail", "plain", "a.b", "1,000", "ab", "x_", "ENT-4821"})
    for size in (0, 1, 3, len(candidates)):
        wanted = frozenset(candidates[:size])
        references.forget()
        assert message_references(message, wanted) == full & wanted


def test_forgetting_references_reads_each_text_afresh():
    """Ours: harness.traces.references.forget() empties its memos (the overhead bench times a fresh process's reading)."""
    from harness.traces import references

    text = "fresh ENT-9999 reading"
    first = message_references({"role": "user", "content": text})
    assert message_references({"role": "user", "content": text}) is first
    references.forget()
    again = message_references({"role": "user", "content": text})
    assert again == first and again is not first


# ----- semantics
def test_none_replays_every_recorded_response_with_parallel_calls(tmp_path):
    """Each recorded assistant message is one request whose response is that message;
    parallel tool calls and their results are replayed in order."""
    messages = [{"role": "user", "content": "Read KEY-1 and KEY-2."},
                {"role": "assistant", "content": "both", "tool_calls": [call("a", "read", key="KEY-1"),
                                                                         call("b", "read", key="KEY-2")]},
                {"role": "tool", "tool_call_id": "a", "name": "read", "content": "KEY-1 is 4410"},
                {"role": "tool", "tool_call_id": "b", "name": "read", "content": "KEY-2 is 9921"},
                {"role": "assistant", "content": "Sum 14331"}]
    row = replay(tmp_path, trace_of(messages))
    assert row["termination"] == "trace_end" and row["success"] and row["requests"] == 2
    logged = [e["message"] for e in events_of(tmp_path, row) if e["type"] == "message"]
    assert [m["role"] for m in logged] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [c["id"] for c in logged[1]["tool_calls"]] == ["a", "b"]
    assert row["task_id"] == "t1" and row["family"] == "openai"


def test_a_trace_without_tools_replays(tmp_path):
    """A chat without tool calls or schemas is a trace like any other."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"},
                {"role": "assistant", "content": "Bye."}]
    row = replay(tmp_path, trace_of(messages, tools=[]))
    assert row["termination"] == "trace_end" and row["requests"] == 2 and row["input_tokens"] > 0


def test_unicode_content_survives_replay_and_the_log_replays(tmp_path):
    """Unicode (accents, CJK, emoji) passes through unchanged; `ctxbench replay` checks the views."""
    text = "Prüfe ENT-4821 — 日本語 🙂"
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": f"ok {text}"}]
    row = replay(tmp_path, trace_of(messages, tools=[]))
    logged = [e["message"]["content"] for e in events_of(tmp_path, row) if e["type"] == "message"]
    assert logged == [text, f"ok {text}"]
    assert replay_file(tmp_path / "events" / event_log_name(row['run_id'])).ok


def test_overflow_ends_none_and_hard_summarize_summarizes(tmp_path):
    """A view over --window raises the context-window error: `none` ends context_overflow at
    that request, hard_summarize summarizes (mock/summarizer) and serves the rest of the trace."""
    trace = lookup_trace(hops=8, filler=400)
    none = replay(tmp_path, trace, window=3000)
    assert none["termination"] == "context_overflow" and 0 < none["requests"] < 9
    assert "at trace message" in none["error"]
    summarized = replay(tmp_path, trace, "hard_summarize", window=3000)
    assert summarized["termination"] == "trace_end" and summarized["requests"] == 9
    assert summarized["hard_resets"] + summarized["summaries"] >= 1 and summarized["summarizer_requests"] >= 1


def test_tool_results_go_through_transform_tool_result(tmp_path):
    """Recorded tool results are appended through transform_tool_result, so
    tool_output_limits offloads an oversized one (the paging tool is offered, never called)."""
    row = replay(tmp_path, lookup_trace(hops=3, filler=6000), "tool_output_limits")
    assert row["tool_outputs_offloaded"] == 3 and row["termination"] == "trace_end"
    start = events_of(tmp_path, row)[0]
    assert "read_tool_result" in [t["function"]["name"] for t in start["tools"]]


# ----- forgotten references
def test_forgotten_references_zero_for_none_without_overflow(tmp_path):
    """`none` keeps every message, so with no overflow nothing is forgotten."""
    row = replay(tmp_path, lookup_trace())
    assert row["termination"] == "trace_end" and row["forgotten_references"] == 0


def test_masking_forgets_a_cited_id_and_names_it(tmp_path):
    """Observation_masking (keep_last 1) masks the results holding KEY-1002 ... and the
    recorded agent later cites them: counted per request (llm_call) and per run."""
    trace = lookup_trace()
    trace.messages[-1] = {"role": "assistant", "content": "Chain: KEY-1001, KEY-1002, weight 211."}
    row = replay(tmp_path, trace, "observation_masking", {"keep_last": 1})
    last = [e for e in events_of(tmp_path, row) if e["type"] == "llm_call"][-1]
    assert last["forgotten_references"] >= 1 and "211" in last["forgotten_examples"]
    assert row["forgotten_references"] == sum(e.get("forgotten_references", 0) for e in events_of(tmp_path, row)
                                              if e["type"] == "llm_call" and e["ok"])
    assert replay(tmp_path, trace)["forgotten_references"] == 0  # none kept them


def test_reference_index_matches_a_recount_of_the_view(tmp_path):
    """Ours: the incremental index (ViewState.watch) equals a fresh count over the final view, after
    masking replaced messages and a summary reset the view."""
    from harness.conversation.view import fold

    for strategy, config in (("observation_masking", {"keep_last": 1}), ("hard_summarize", None)):
        row = replay(tmp_path, lookup_trace(hops=8, filler=400), strategy, config, window=3000)
        events = events_of(tmp_path, row)
        index = ReferenceIndex()
        view = fold([])
        view.watch = index.watch
        for event in events:
            view.apply(event)
        recount: dict[str, int] = {}
        for message_id in view.ids:
            for reference in message_references(view.message(message_id)):
                recount[reference] = recount.get(reference, 0) + 1
        assert index.holders == recount, strategy


def test_an_index_of_wanted_references_matches_a_fresh_reading_of_each_view(tmp_path):
    """Ours: a replay's index counts only the recorded responses' references; after every
    view op its count of each wanted reference equals a fresh reading of the view's messages as sent."""
    from harness.conversation.view import fold

    for strategy, config in (("observation_masking", {"keep_last": 1}), ("hard_summarize", None)):
        trace = lookup_trace(hops=8, filler=400)
        row = replay(tmp_path, trace, strategy, config, window=3000)
        wanted = frozenset().union(*(message_references(m) for m in trace.messages if m["role"] == "assistant"))
        index = ReferenceIndex(wanted)
        view = fold([])
        view.watch = index.watch
        for event in events_of(tmp_path, row):
            view.apply(event)
            fresh: dict[str, int] = {}
            for message_id in view.ids:
                for reference in message_references(view.message(message_id)) & wanted:
                    fresh[reference] = fresh.get(reference, 0) + 1
            assert index.holders == fresh, strategy
            assert index.missing(wanted) == sorted(wanted - set(fresh))


def test_an_index_rereads_a_message_replaced_under_its_id():
    """Ours: the index's memo of a message's references is keyed by the message as sent, so a
    message replaced under the same id (masked, truncated) is read again, not answered from the stale memo."""
    index = ReferenceIndex(frozenset({"KEY-1", "KEY-2"}))
    index.watch(3, {"role": "tool", "content": "KEY-1 and KEY-2"}, 1)
    index.watch(3, {"role": "tool", "content": "KEY-1 and KEY-2"}, -1)
    index.watch(3, {"role": "tool", "content": "masked: KEY-2 only"}, 1)
    assert index.holders == {"KEY-2": 1} and index.missing(["KEY-1", "KEY-2"]) == ["KEY-1"]


# ----- what a replay refuses
def test_agent_reset_is_refused_with_the_reason(tmp_path):
    """Agent_reset needs the agent's condense call, which a recorded agent never made."""
    with pytest.raises(ConfigError, match="condense"):
        replay(tmp_path, lookup_trace(), "agent_reset")
    out = tmp_path / "out"
    assert cli(["traces", str(CTXBENCH_FIXTURE), "--strategies", "agent_reset", "--out", str(out)]) == 2
    assert not out.exists()


def test_malformed_input_exits_2_and_writes_nothing(tmp_path, capsys):
    """A malformed trace is refused naming file (and message index), exit 2, nothing written;
    a results directory already written is left as it was."""
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json", encoding="utf-8")
    out = tmp_path / "out"
    assert cli(["traces", str(bad_json), "--out", str(out)]) == 2
    assert "bad.json" in capsys.readouterr().err and not out.exists()
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"hello": 1}), encoding="utf-8")
    assert cli(["traces", str(unknown), "--out", str(out)]) == 2
    assert "no trace format recognizes" in capsys.readouterr().err
    orphan = tmp_path / "orphan.jsonl"
    lines = [json.loads(line) for line in CTXBENCH_FIXTURE.read_text(encoding="utf-8").splitlines()]
    lines[5]["message"]["tool_call_id"] = "nobody"
    orphan.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    with pytest.raises(TraceError, match=r"orphan.jsonl, trace 'fixture-task', message 3"):
        load_traces([orphan])
    assert cli(["traces", str(CTXBENCH_FIXTURE), "--out", str(out), "--no-progress"]) == 0
    before = (out / "runs.jsonl").read_bytes()
    assert cli(["traces", str(orphan), "--out", str(out)]) == 2
    assert cli(["traces", str(CTXBENCH_FIXTURE), "--out", str(out)]) == 2  # holds runs already
    assert (out / "runs.jsonl").read_bytes() == before
    with pytest.raises(SystemExit) as exited:  # argparse refuses an unknown format
        cli(["traces", str(CTXBENCH_FIXTURE), "--format", "bogus"])
    assert exited.value.code == 2


def test_a_format_missing_its_extra_names_the_extra(monkeypatch):
    """The inspect format needs the `inspect` extra; without it the error says which to install,
    and auto-detection lists it as unavailable instead of failing the other formats."""
    import importlib

    from harness import traces

    real = importlib.import_module

    def without_inspect_ai(name, *args):
        if name == traces.FORMAT_MODULES["inspect"]:
            raise ModuleNotFoundError("No module named 'inspect_ai'", name="inspect_ai")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_inspect_ai)
    with pytest.raises(ConfigError, match=r"ctxbench\[inspect\]"):
        traces.format_module("inspect")
    assert [trace.trace_id for trace in load_traces([CTXBENCH_FIXTURE])] == ["fixture-task"]
    _, tried, unavailable = traces.detect_format(Path("x.json"), {"hello": 1})
    assert "inspect" in unavailable and "inspect" not in tried and "ctxbench" in tried


def test_replay_model_needs_a_reply():
    """Ours: mock/replay has no agent of its own; it answers only with the reply it is handed."""
    from harness.models.llm import LLMClient, LLMProfile

    client = LLMClient(LLMProfile(model=REPLAY_MODEL), session="replay-test")
    with pytest.raises(ValueError, match="answers only with a reply"):
        client.complete([{"role": "user", "content": "hi"}], None)
    result = client.complete([{"role": "user", "content": "hi"}], None, reply={"role": "assistant", "content": "yo"})
    assert result.message["content"] == "yo" and result.usage.input_tokens > 0
    client.end_session()


# ----- ctxbench's own logs and calibration
def test_ctxbench_log_fixture_reads_the_conversation():
    """The logged conversation in order, strategy messages left out, an offloaded tool result
    restored to its full content, recorded usage per response, task_id as the trace id."""
    [trace] = load_traces([CTXBENCH_FIXTURE])
    assert trace.trace_id == "fixture-task" and trace.source_format == "ctxbench"
    assert [m["role"] for m in trace.messages] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert "FAILED test_parse_4821" in trace.messages[4]["content"]
    assert trace.usage == {2: {"input_tokens": 180, "cached_tokens": 0, "output_tokens": 40},
                           5: {"input_tokens": 420, "cached_tokens": 180, "output_tokens": 30}}
    assert trace.outcome == {"success": True, "score": 1.0, "termination": "submitted"}


def test_recosting_a_run_under_none_gives_its_recorded_tokens(tmp_path):
    """A mock run's logs replayed under `none` at the same window and cache style give the
    input and cached tokens it recorded, run by run; the rows carry both."""
    run_dir = api.run("smoke", strategies="none", out=tmp_path / "run",
                      profiles=api.mock_profiles(window=30_000, cache="openai"))
    out = api.traces([run_dir], strategies="none", out=tmp_path / "traces",
                     profiles=api.mock_profiles(REPLAY_MODEL, window=30_000, cache="openai"))
    recorded = {row["task_id"]: row for row in read_runs(run_dir)}
    replayed = read_runs(out)
    assert len(replayed) == len(recorded)
    for row in replayed:
        source = recorded[row["task_id"]]
        assert row["recorded_input_tokens"] == source["input_tokens"] == row["input_tokens"]
        assert row["recorded_cached_tokens"] == source["cached_tokens"] == row["cached_tokens"]
        assert row["requests"] == source["requests"]


def test_cli_writes_the_results_layout_that_reports_and_replay_read(tmp_path, capsys):
    """Runs.jsonl one row per trace x strategy, event logs, summary.csv, paired.csv, report.md,
    plots; load_results reads it and `ctxbench replay` rebuilds every view."""
    out = tmp_path / "out"
    assert cli(["traces", str(CTXBENCH_FIXTURE), "--strategies", "none,observation_masking,hard_summarize",
                "--window", "2000", "--out", str(out), "--no-progress"]) == 0
    assert "forgotten refs" in capsys.readouterr().out
    for name in ("runs.jsonl", "summary.csv", "paired.csv", "report.md", "config.json"):
        assert (out / name).exists(), name
    results = api.load_results(out)
    assert len(results.runs) == 3 and set(results.runs["family"]) == {"ctxbench"}
    assert not results.requests.empty
    assert cli(["replay", str(out)]) == 0
    assert cli(["report", str(out)]) == 0


# ----- speed: pytest -m benchmark -s prints requests per second per core
BENCH_CASES = [("none", None, 1_000_000), ("clear_tool_uses", None, 1_000_000), ("compaction_ladder", None, 1_000_000),
               ("hard_summarize", None, 1_000_000), ("hard_summarize", None, 32_000),
               ("llm_summarizing", None, 1_000_000), ("observation_masking", None, 1_000_000),
               ("tool_output_limits", None, 1_000_000)]


@pytest.mark.benchmark
@pytest.mark.parametrize("strategy,config,window", BENCH_CASES)
def test_replay_requests_per_second(benchmark, tmp_path, strategy, config, window):
    """A 2,000-request trace replayed under each native strategy; CPU seconds of this thread
    (one core), so the figure is requests per second per core."""
    import time

    trace = lookup_trace(hops=2000, filler=20)
    timings: list[tuple[int, float]] = []

    def once() -> None:
        started = time.thread_time()
        row = replay(tmp_path, trace, strategy, config, window=window)
        timings.append((row["requests"], time.thread_time() - started))

    benchmark.pedantic(once, rounds=3, warmup_rounds=1)
    requests, seconds = min(timings, key=lambda t: t[1])
    benchmark.extra_info["requests_per_cpu_s"] = round(requests / seconds)
    print(f"\n{strategy} window {window:,}: {requests} requests, {requests / seconds:,.0f} requests/s per core")
