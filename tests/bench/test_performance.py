"""Performance: the memoized readings of the mock agent, the bench driver, and the benchmarks.

The benchmarks are marked `benchmark` (run with `pytest -m benchmark`); `python -m harness.bench`
prints every figure with its goal.
"""
import gc
import re
import time

import pytest

from harness import bench
from harness.bench import (adapters, common, flat, layout, memory, overhead, overhead_adapters, overhead_traces,
                           parallel, real, session)
from harness.api import mock_profiles
from harness.models.mock.agents import memo
from harness.traces.replay import REPLAY_MODEL
from strategies import comparison_strategies

TEXTS = ["record AB-0001 | weight 3 | successor AB-0002\nrecord AB-0002 | weight 5 | successor AB-0003",
         "no records here", ""]


@pytest.mark.parametrize("text", TEXTS)
def test_memoized_pattern_reads_like_re(text):
    """A memoized pattern gives what `re` gives, on a first and on a repeated reading."""
    expression = r"record ([A-Z]{2}-\d{4}) \| weight (\d+)"
    plain, cached = re.compile(expression, re.MULTILINE), memo.Pattern(expression, re.MULTILINE)
    for _ in range(2):
        assert cached.findall(text) == tuple(plain.findall(text))
        assert [m.groups() for m in cached.finditer(text)] == [m.groups() for m in plain.finditer(text)]
        found, expected = cached.search(text), plain.search(text)
        assert (found and found.group(0)) == (expected and expected.group(0))
        assert bool(cached.match(text)) == bool(plain.match(text))


def test_memo_keys_on_the_text_alone_and_forgets():
    """Equal texts read alike whatever object carries them; forget() drops every reading."""
    pattern = memo.Pattern(r"weight (\d+)")
    first = pattern.findall("weight 7 and weight 9")
    assert pattern.findall("".join(["weight 7 and ", "weight 9"])) is first
    memo.forget()
    assert pattern.findall("weight 7 and weight 9") is not first


def test_tool_arguments_parse_to_a_dict_or_nothing():
    """Malformed or non-object tool arguments read as {}, as the agent read them before."""
    assert memo.arguments('{"path": "a.txt"}') == {"path": "a.txt"}
    assert memo.arguments("[1, 2]") == {}
    assert memo.arguments("{not json") == {}


def test_distinct_contents_counts_each_rendering_once():
    events = [{"id": 0, "type": "message", "message": {"role": "user", "content": "hello"}},
              {"id": 1, "type": "message", "message": {"role": "user", "content": "hello"}},
              {"id": 2, "type": "compaction", "view_ops": [
                  {"op": "replace", "id": 1, "message": {"role": "user", "content": "[cleared]"}}]}]
    assert common.distinct_contents(events) == {"hello", "[cleared]"}


def test_figures_compare_against_their_goals():
    assert common.Figure("a", 2.0, 3.0).met is True
    assert common.Figure("b", 4.0, 3.0).met is False
    assert common.Figure("c", 1.8, 1.7, at_most=False).met is True
    assert common.Figure("d", None, 1.3).met is None
    assert "not measured" in common.Figure("d", None, 1.3).line()
    info = common.Figure("  info: e", 0.25, None)  # ours: a figure for information has no goal and no verdict
    assert info.met is None and "goal          -" in info.line() and "ok" not in info.line()


def test_check_exits_nonzero_when_a_goal_is_missed(monkeypatch, capsys):
    """`python -m harness.bench --check` exits 1 on a missed goal, 0 without --check."""
    monkeypatch.setattr(bench, "measure", lambda names, **_: [common.Figure("overhead none (long)", 9.0, 3.0)])
    assert bench.main(["--figures", "overhead", "--check"]) == 1
    assert bench.main(["--figures", "overhead"]) == 0
    assert "missed goals: overhead none (long)" in capsys.readouterr().out


def test_the_bench_names_the_machine_its_figures_were_measured_on(monkeypatch, capsys):
    """The first line names the CPU, its count, the OS, Python, the
    tokenizer's version and the load when measuring began, so a figure is never quoted without its machine."""
    import os
    import platform

    monkeypatch.setattr(bench, "measure", lambda names, **_: [])
    assert bench.main(["--figures", "flat"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("machine: ") and f"{os.cpu_count()} CPUs" in first
    assert f"Python {platform.python_version()}" in first and "tiktoken " in first and ", load " in first


def test_overhead_figure_is_the_median_of_the_repeats_with_the_best_and_spread_in_its_note():
    """The overhead figure is each side's (run CPU, tokenizing once) median over the repeats, judged against the
    goal; the best (each side's best) and the spread of the repeats are in the note, for information."""
    samples = overhead.Samples(cpu=[0.30, 0.66, 0.42], library=[0.0, 0.0, 0.0], once=[0.10, 0.11, 0.12], texts=7)
    figure = overhead.ratio_figure("overhead none (long)", samples)
    assert figure.name == "overhead none (long)"
    assert figure.value == pytest.approx(0.42 / 0.11) and figure.goal == 3.5 and figure.met is False
    assert "best 3.00" in figure.note
    assert "3 repeats: run CPU 0.30-0.66s, tokenizing 100-120ms, ratio 3.00-6.00" in figure.note


def test_overhead_guard_is_3_5_for_native_strategies_and_trace_replay():
    """A median of 3.4 meets the overhead guard (3.5) and 3.6 misses it, for the runs and the replays alike."""
    assert overhead.GOAL == 3.5
    meets = overhead.Samples(cpu=[0.34], library=[0.0], once=[0.1], texts=1)
    misses = overhead.Samples(cpu=[0.36], library=[0.0], once=[0.1], texts=1)
    assert overhead.ratio_figure("overhead none (long)", meets).met is True
    assert overhead.ratio_figure("overhead none (long)", misses).met is False


def test_overhead_guards_native_strategies_and_leaves_adapters_to_their_own_figure(monkeypatch):
    """The overhead figure measures the native strategies named (an adapter named in --strategies is
    overhead_adapters' figure, without a goal); a trace replay under an adapter is judged against no goal."""
    asked = []
    monkeypatch.setattr(overhead, "overhead", lambda suite, names, repeats: asked.append(names) or [])
    overhead.figures(bench.BenchOptions(strategies=["none", "pai.tiered_compaction", "llm_summarizing"]))
    assert overhead.figures(bench.BenchOptions(strategies=["pai.tiered_compaction"])) == []
    assert asked == [["none", "llm_summarizing"]]
    assert overhead.goal_for("observation_masking") == 3.5 and overhead.goal_for("inspect.compaction_edit") is None


def test_overhead_leaves_the_library_time_out_of_the_ratio():
    """For an adapter, the library's own time is reported apart and left out of the ratio."""
    samples = overhead.Samples(cpu=[1.0], library=[0.7], once=[0.1], texts=1)
    figure = overhead.ratio_figure("overhead pai.x (long)", samples)
    assert figure.value == pytest.approx(3.0)
    assert "own CPU 0.30s" in figure.note and "library itself 0.70s (median, left out)" in figure.note


def test_overhead_turns_interleave_the_labels_and_time_only_the_work():
    """The labels take turns within each repeat (so a slow minute hits one repeat of each); preparing the
    work is not timed; the texts tokenized once are those the work counted (ours)."""
    from harness.core import tokens

    calls = []

    def prepare(label, repeat):
        calls.append((label, repeat))
        return lambda: tokens.count_text(f"{label} text {repeat}") and 0.25

    samples = overhead.turns(["a", "b"], prepare, 2)
    assert calls == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    assert samples["a"].library == [0.25, 0.25] and samples["a"].texts == 1 and len(samples["b"].once) == 2


def test_check_fails_when_the_median_misses_though_the_best_meets(monkeypatch, capsys):
    """--check judges the overhead figure by its median: a median above 3.5 fails it though the best is below."""
    samples = overhead.Samples(cpu=[0.29, 0.40, 0.45], library=[0.0] * 3, once=[0.1] * 3, texts=1)
    monkeypatch.setattr(bench, "measure", lambda names, **_: [overhead.ratio_figure("overhead none (long)", samples)])
    assert bench.main(["--figures", "overhead", "--check"]) == 1
    assert "missed goals: overhead none (long)" in capsys.readouterr().out


def test_check_passes_when_the_median_meets_though_the_best_ratio_misses(monkeypatch, capsys):
    """The best (each side's least CPU) is information: a fast tokenizing repeat can put it above the goal while the
    median meets it, and --check passes."""
    samples = overhead.Samples(cpu=[0.30, 0.31, 0.32], library=[0.0] * 3, once=[0.08, 0.10, 0.10], texts=1)
    figure = overhead.ratio_figure("overhead none (long)", samples)
    assert figure.value == pytest.approx(3.1) and "best 3.75" in figure.note
    monkeypatch.setattr(bench, "measure", lambda names, **_: [figure])
    assert bench.main(["--figures", "overhead", "--check"]) == 0
    assert "missed goals" not in capsys.readouterr().out


def test_overhead_figures_of_trace_replay_and_adapters_are_named():
    """Trace replay and the adapters get the overhead figure, under their own names."""
    assert {"overhead", "overhead_traces", "overhead_adapters"} <= set(bench.FIGURES)
    assert all(name in bench.__doc__ for name in ("overhead_traces", "overhead_adapters"))
    assert set(overhead_adapters.adapter_names()) >= {"pai.tiered_compaction", "inspect.compaction_edit",
                                                      "openhands.llm_summarizing"}


def test_overhead_traces_replays_only_what_a_replay_accepts():
    """trace_replay refuses agent_reset (its condense tool needs the agent's call): the figure leaves it out."""
    from harness.api import mock_profiles
    from harness.traces.replay import REPLAY_MODEL

    names = overhead_traces.replayable(comparison_strategies(), mock_profiles(REPLAY_MODEL))
    assert "agent_reset" not in names and {"none", "clear_tool_uses", "llm_summarizing"} <= set(names)


def test_overhead_adapters_lists_a_missing_library_as_not_measured(monkeypatch):
    """An adapter whose library is not installed is a not-measured line with its install hint (nothing runs)."""
    from strategies.adapters import Library

    monkeypatch.setattr(Library, "version", lambda self: None)
    figures = overhead_adapters.overhead_adapters("smoke", 1)
    assert figures and all(f.value is None and "pip install" in f.note for f in figures)


def test_overhead_adapters_is_for_information_without_a_goal(monkeypatch):
    """The adapters' overhead has no goal (the library slows ctxbench's code beside it): its figures carry none, so
    --check never fails on them."""
    asked = []

    def measured(suite, names, repeats, goal=overhead.GOAL):
        asked.append(goal)
        return [overhead.ratio_figure(f"overhead {name} ({suite})", overhead.Samples([9.0], [0.0], [0.1], 1), goal)
                for name in names]

    monkeypatch.setattr(overhead_adapters, "installed", lambda name: True)
    monkeypatch.setattr(overhead_adapters, "warm_up", lambda names: None)
    monkeypatch.setattr(overhead_adapters, "overhead", measured)
    figures = overhead_adapters.overhead_adapters("smoke", 1, ["pai.tiered_compaction"])
    assert asked == [None] and [f.goal for f in figures] == [None] and figures[0].met is None


def test_overhead_adapters_measures_the_adapters_named_in_strategies(monkeypatch):
    """`--strategies` naming adapters limits the adapters' figure to them (a user measuring one library does not
    wait for the others); naming none of them leaves it every adapter's."""
    asked = []
    monkeypatch.setattr(overhead_adapters, "overhead_adapters",
                        lambda suite, repeats, names=None: asked.append(names) or [])
    for argv in (["--strategies", "pai.tiered_compaction,none"], ["--strategies", "none"], []):
        assert bench.main(["--figures", "overhead_adapters", *argv]) == 0
    assert asked == [["pai.tiered_compaction"], None, None]


def test_overhead_repeats_must_be_positive(capsys):
    """Bad input: --overhead-repeats 0 is refused before anything is measured (exit 2)."""
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--figures", "overhead", "--overhead-repeats", "0"])
    assert exit_info.value.code == 2 and "--overhead-repeats" in capsys.readouterr().err


def test_unknown_figure_is_refused(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--figures", "speed"])
    assert "unknown figure(s) ['speed']" in capsys.readouterr().err


@pytest.mark.parametrize("argv, named", [
    (["--figures", "overhead", "--strategies", "bogus"], "unknown strategy 'bogus'"),
    (["--figures", "overhead", "--overhead-suite", "nosuch"], "unknown suite 'nosuch'"),
    (["--figures", "parallel", "--repeats", "0"], "--repeats: at least 1"),
    (["--figures", "peers", "--peer-repeats", "0"], "--peer-repeats: at least 1"),
    (["--figures", "peers", "--peer-requests", "20"], "--peer-requests: at least 100"),
])
def test_bad_bench_options_exit_2_naming_them_before_anything_is_measured(capsys, monkeypatch, argv, named):
    """Bad input (ours): an unknown strategy or suite, a repeat count under 1, a peers conversation too short for
    its clearing run to clear are one line and exit 2 before any figure is measured (they were a traceback, or
    a figure of 15,565 for a strategy that does not exist)."""
    monkeypatch.setattr(bench, "measure", lambda *a, **k: pytest.fail("measured despite bad options"))
    with pytest.raises(SystemExit) as exit_info:
        bench.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err


def test_a_figure_that_cannot_be_measured_is_one_line_and_exit_1(capsys, monkeypatch):
    """Ours: a figure whose measurement fails (a peer's run that did not do the work) ends the bench with one
    line naming the error, exit 1, no traceback."""
    def broken(*args, **kwargs):
        raise RuntimeError("peer run ctxbench (clearing on): no tool result was cleared")

    monkeypatch.setattr(bench, "measure", broken)
    assert bench.main(["--figures", "flat"]) == 1
    err = capsys.readouterr().err
    assert "no tool result was cleared" in err and "Traceback" not in err


def test_request_step_driver_grows_the_context():
    """The flat benchmark's driver sends real mock requests and reports the context it measured at."""
    seconds, tokens = flat.per_request_seconds(3_000, 12, steps=3, warm=1)
    assert seconds > 0 and 2_000 < tokens < 6_000


def _recording_mock_server(received: list[tuple[str, str, dict]]):
    """serve-mock in a thread that keeps each chat request's session and (request index, clock, JSON body)."""
    import io
    import json

    from harness.core.clock import CLOCK_HEADER
    from harness.models.llm import REQUEST_HEADER, SESSION_HEADER
    from harness.models.mock.provider import MockConfig
    from harness.models.serve_mock.server import MockServer, _Handler

    class Recording(_Handler):
        def _chat(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append((self.headers.get(SESSION_HEADER), (self.headers.get(REQUEST_HEADER),
                                                                self.headers.get(CLOCK_HEADER), json.loads(body))))
            connection, self.rfile = self.rfile, io.BytesIO(body)  # the handler reads the body it was given...
            try:
                super()._chat()
            finally:  # ...and the connection's next request from the connection: else it sees EOF and closes a
                self.rfile = connection  # kept-alive connection the client may be sending on ("Server disconnected")

    server = MockServer(0, MockConfig())
    server.RequestHandlerClass = Recording
    server.start()
    return server


@pytest.mark.parametrize("layout", [(1, 2), (2, 1)])
def test_real_floor_sends_exactly_the_requests_the_harness_sent(tmp_path, monkeypatch, layout):
    """The real figure's floor (a bare litellm.completion loop) sends the same requests as the
    harness's runs, in each run's order: the same count and the same bodies, session and request index, in threads
    of this process and in forked processes."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused-by-serve-mock")
    received: list = []
    server = _recording_mock_server(received)
    try:
        cells = real.workload(server.url, str(tmp_path), suite="smoke", runs=2)
        recorded = real.record(cells)
        recording, received[:] = received[:], []
        rows, _ = real.run_harness(real.workload(server.url, str(tmp_path / "timed"), suite="smoke", runs=2))
        harness_sent, received[:] = received[:], []
        seconds = real.floor(recorded, server.url, layout, real.request_limits(cells))
        floor_sent = received[:]
    finally:
        server.shutdown()

    def per_session(sent):
        sessions: dict = {}
        for session, request in sent:
            sessions.setdefault(session, []).append(request)
        return sessions

    assert sum(row["requests"] + row["summarizer_requests"] + row["failed_requests"] for row in rows) == len(harness_sent) > 2
    assert per_session(recording) == per_session(harness_sent)  # the runs are deterministic: recorded once
    assert seconds > 0 and len(floor_sent) == len(harness_sent) == sum(map(len, recorded))
    assert per_session(floor_sent) == per_session(harness_sent)


# ----- benchmarks (pytest -m benchmark)

@pytest.mark.benchmark
def test_tokenize_once(benchmark):
    """The unavoidable cost the overhead ratio divides by: tokenizing a text once."""
    from harness.core.tokens import _tokenizer

    encoding = _tokenizer()
    text = session.file_text(1, 4_000)
    benchmark(lambda: encoding.encode(text, disallowed_special=()))


@pytest.mark.benchmark
@pytest.mark.parametrize("tokens", [10_000, 400_000])
def test_request_step(benchmark, tmp_path, tokens):
    """One runner step with the mock at a ~10k and a ~400k-token context of 200 messages."""
    primed = session.Session(str(tmp_path), tokens, 200, 60)
    steps = iter(range(60))
    benchmark.pedantic(lambda: primed.step(next(steps)), rounds=40, warmup_rounds=5)
    primed.close()


@pytest.mark.benchmark
def test_flat_per_request_cost():
    """Harness time per request at ~400k tokens / at ~10k tokens <= 1.5 (harness.bench.flat's definition)."""
    figure = flat.flat()[0]
    assert figure.met, figure.line()


@pytest.mark.benchmark
def test_the_event_log_layout_is_eight_times_smaller_for_at_most_5_percent_more_run_cpu():
    """The default suite's results directory on disk: before / now >= 8; its runs' CPU now / before <= 1.05."""
    figures = layout.layout(repeats=3)
    assert all(f.met for f in figures), [f.line() for f in figures]


@pytest.mark.benchmark
def test_memory_of_a_long_run():
    """Peak RSS growth of a long run <= 3x the distinct content of its event log."""
    figures = memory.memory()
    assert all(f.met for f in figures), [f.line() for f in figures]


@pytest.mark.benchmark
@pytest.mark.parametrize("strategy", comparison_strategies())
def test_overhead_ratio_long(strategy):
    """The overhead guard: CPU of the mock long runs / tokenizing their distinct contents once, the median of
    5 repeats, at most 3.5 per native strategy (read it on a quiet machine: a loaded host moves it by ~20%)."""
    figure, = overhead.overhead("long", [strategy])
    assert figure.met, figure.line()


# The replays that miss the guard, and why: what the ratio's two sides count differs from the runs'.
REPLAYS_ABOVE_THE_GUARD = {
    "tool_output_limits": "the denominator counts the clamped outputs, while the replay still reads the full "
                          "recorded ones to clamp them (medians of 5 on quiet 2-core machines: 4.2-4.5)",
    "observation_masking": "every request masks a result ~20 messages back, so the view's hash chain and the "
                           "provider's prefix keys are redone from there over texts the denominator counts once "
                           "(medians of 5 on quiet 2-core machines: 3.6-3.8)",
}
REPLAYABLE = [pytest.param(name, marks=pytest.mark.xfail(reason=REPLAYS_ABOVE_THE_GUARD[name], strict=False))
              if name in REPLAYS_ABOVE_THE_GUARD else name
              for name in overhead_traces.replayable(comparison_strategies(), mock_profiles(REPLAY_MODEL))]


@pytest.mark.benchmark
@pytest.mark.parametrize("strategy", REPLAYABLE)
def test_overhead_ratio_trace_replay(strategy):
    """The trace replay's overhead guard: CPU of replaying the long suite's own event logs / tokenizing their
    distinct texts once, the median of 5 repeats, at most 3.5 per replayable strategy."""
    figure, = overhead_traces.overhead_traces([strategy])
    assert figure.met, figure.line()


@pytest.mark.benchmark
@pytest.mark.xfail(reason="met in ten of twelve runs since each task instance stays in one worker (median of 3 pairs: "
                          "1.68-1.87, the last three 1.79-1.82): both workers still spend ~5% more CPU than one "
                          "process, and a noisy minute of the shared host takes the median just under 1.7",
                   strict=False)
def test_parallel_scaling_of_the_default_suite():
    """The default suite with 2 workers at least 1.7x faster than with 1 (median of 3 pairs of runs)."""
    figure = parallel.parallel()[0]
    assert figure.met, figure.line()


@pytest.mark.benchmark
def test_real_path_overhead_over_a_litellm_floor():
    """64 runs against serve-mock (100 ms per request) at max-concurrency 16
    within 1.15x the wall time of a bare litellm.completion loop sending the same requests the same way (median of
    3 interleaved pairs, harness.bench.real's definition)."""
    figures = real.figures(bench.BenchOptions(strategies=[]))
    assert figures[0].met, "\n".join(figure.line() for figure in figures)


@pytest.mark.benchmark
def test_adapters_convert_the_view_in_time_of_the_new_messages():
    """An adapter's own CPU per request (the library's time left out) at 400 messages within
    1.5x of that at 40, for every adapter whose library is installed here."""
    figures = adapters.adapters()
    if not figures:
        pytest.skip("no adapter library installed: pip install -e '.[pydantic-ai,inspect]'")
    assert all(figure.met for figure in figures), "\n".join(figure.line() for figure in figures)


def test_the_real_floors_request_limits_are_keyed_by_endpoint_as_the_harnesss_slots():
    """The floor holds the harness's own slots (harness.models.limits.model_slot keys a limit by
    `LLMProfile.endpoint`, one model at one API base): one model at two bases is two limits, not one."""
    from types import SimpleNamespace

    profiles = {"main": {"model": "openai/m", "api_base": "http://h1/v1", "max_concurrency": 2},
                "summarizer": {"model": "openai/m", "api_base": "http://h2/v1", "max_concurrency": 3}}
    assert real.request_limits([SimpleNamespace(profiles=profiles)]) == {"openai/m@http://h1/v1": 2,
                                                                         "openai/m@http://h2/v1": 3}


def test_a_failed_figure_child_says_why_with_the_end_of_its_stderr(monkeypatch):
    """A figure measured in a fresh process (real, parallel, memory) that fails names the child, its exit status
    and the last lines of its stderr: a bare 'returned non-zero exit status 1' left a failed benchmark unexplained."""
    import subprocess

    def failed(*args, **kwargs):
        return subprocess.CompletedProcess(args[0], 1, stdout="", stderr="Traceback ...\nhttpx.ReadTimeout: timed out\n")

    monkeypatch.setattr(common.subprocess, "run", failed)
    expected = r"(?s)harness.bench.real 3 exited 1 without its figures.*httpx.ReadTimeout: timed out"
    with pytest.raises(common.ChildFailed, match=expected):
        common.child("real", ["3"])


def test_breakdown_times_each_part_once_and_puts_every_function_back(tmp_path):
    """The breakdown's parts add up to the timed calls (a call's own time excludes the timed calls inside it), every
    timed function is put back where it was defined and where it was imported by name, and the timed runs give the
    rows an untimed run gives (timing fields aside)."""
    import harness.models.mock.provider as provider
    import harness.models.mock.agents as agents
    from harness.core import tokens
    from harness.bench import breakdown
    from harness.run.runner import run_cell
    from strategies.observation_masking import ObservationMasking

    before = {target: breakdown._resolve(target) for targets in breakdown.PARTS.values() for target in targets}
    originals = {target: vars(owner)[name] if isinstance(owner, type) else getattr(owner, name)
                 for target, (owner, name) in before.items()}
    hook = ObservationMasking.__dict__["before_request"]
    timers = breakdown.Timers()
    untimed = [run_cell(cell) for cell in common.cells("smoke", ["observation_masking"], str(tmp_path / "a"))]
    tokens.forget_counts()  # the timed runs tokenize their texts again
    cells = common.cells("smoke", ["observation_masking"], str(tmp_path / "b"))
    # What the suite's earlier tests left on the heap is put out of the collector's reach, as `run_cells` settles a
    # process's heap: else a full collection of it can fall between the runs (`runs_under_way` puts the young
    # threshold back as each run ends, so the next run's entry may collect), outside every part (seen in CI: 24%).
    # Left frozen, as settle_heap leaves it: unfreezing would hand the heap it froze back to the collector too.
    gc.collect()
    gc.freeze()
    with breakdown.installed(timers, [ObservationMasking]):
        assert provider.respond is not originals["harness.models.mock.agents:respond"]  # imported by name: timed there too
        started = time.perf_counter_ns()
        timed = [run_cell(cell) for cell in cells]
        elapsed = time.perf_counter_ns() - started
    for target, (owner, name) in before.items():
        assert (vars(owner)[name] if isinstance(owner, type) else getattr(owner, name)) is originals[target], target
    assert provider.respond is agents.respond is originals["harness.models.mock.agents:respond"]
    assert ObservationMasking.__dict__["before_request"] is hook
    drop = {"wall_s", "cpu_s", "library_cpu_s"}
    assert [{k: v for k, v in row.items() if k not in drop} for row in timed] == \
        [{k: v for k, v in row.items() if k not in drop} for row in untimed]
    for part in ("tokenize", "agent", "tool", "log", "metrics", "view", "view hash", "client", "provider", "recording",
                 "loop", "per run", "strategy"):
        assert timers.calls[part] > 0 and timers.own_ns[part] > 0, part
    assert timers.calls["per run"] == len(timed)
    assert sum(timers.own_ns.values()) <= elapsed  # nothing counted twice: the parts fit in the runs' wall time
    assert sum(timers.own_ns.values()) > 0.8 * elapsed  # and the runs' time is in them (`_run_cell` holds the rest)


def test_breakdown_figure_names_each_strategy_with_its_parts(monkeypatch):
    from harness.bench import breakdown

    monkeypatch.setattr(common, "warm_up", lambda: None)
    lines = breakdown.breakdown("smoke", ["none"])
    assert len(lines) == 1 and lines[0].goal is None and lines[0].value > 0
    assert "breakdown none (smoke)" in lines[0].name
    assert "agent" in lines[0].note and "tokenize once" in lines[0].note


def test_breakdown_lists_an_adapter_whose_library_is_missing_as_not_measured(monkeypatch):
    from harness.bench import breakdown
    from strategies import strategy_class

    library = strategy_class("pai.tiered_compaction").library
    monkeypatch.setattr(type(library), "available", lambda self: False)
    monkeypatch.setattr(common, "warm_up", lambda: None)
    [line] = breakdown.breakdown("smoke", ["pai.tiered_compaction"])
    assert line.value is None and "not installed here" in line.note and "pydantic-ai" in line.note
