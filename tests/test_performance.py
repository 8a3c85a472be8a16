"""Performance (issue 8): the memoized readings of the mock agent, the bench driver, and the benchmarks.

The benchmarks are marked `benchmark` (run with `pytest -m benchmark`); `python -m harness.bench`
prints every figure with its goal.
"""
import re

import pytest

from harness import bench
from harness.bench import adapters, common, flat, memory, overhead, parallel, real, session
from harness.mock.agents import memo
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
    assert memo.pattern(r"(\d+)").findall("a1b22") == ("1", "22")


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


def test_check_exits_nonzero_when_a_goal_is_missed(monkeypatch, capsys):
    """`python -m harness.bench --check` exits 1 on a missed goal, 0 without --check."""
    monkeypatch.setattr(bench, "measure", lambda names, **_: [common.Figure("overhead none (long)", 9.0, 3.0)])
    assert bench.main(["--figures", "overhead", "--check"]) == 1
    assert bench.main(["--figures", "overhead"]) == 0
    assert "missed goals: overhead none (long)" in capsys.readouterr().out


def test_unknown_figure_is_refused(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--figures", "speed"])
    assert "unknown figure(s) ['speed']" in capsys.readouterr().err


def test_request_step_driver_grows_the_context():
    """The flat benchmark's driver sends real mock requests and reports the context it measured at."""
    seconds, tokens = flat.per_request_seconds(3_000, 12, steps=3, warm=1)
    assert seconds > 0 and 2_000 < tokens < 6_000


def _recording_mock_server(received: list[tuple[str, str, dict]]):
    """serve-mock in a thread that keeps each chat request's session and (request index, clock, JSON body)."""
    import io
    import json

    from harness.clock import CLOCK_HEADER
    from harness.llm import REQUEST_HEADER, SESSION_HEADER
    from harness.mock.provider import MockConfig
    from harness.server import MockServer, _Handler

    class Recording(_Handler):
        def _chat(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append((self.headers.get(SESSION_HEADER), (self.headers.get(REQUEST_HEADER),
                                                                self.headers.get(CLOCK_HEADER), json.loads(body))))
            self.rfile = io.BytesIO(body)
            super()._chat()

    server = MockServer(0, MockConfig())
    server.RequestHandlerClass = Recording
    server.start()
    return server


@pytest.mark.parametrize("layout", [(1, 2), (2, 1)])
def test_real_floor_sends_exactly_the_requests_the_harness_sent(tmp_path, monkeypatch, layout):
    """Issue 23 item 4: the real figure's floor (a bare litellm.completion loop) sends the same requests as the
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
    from harness.tokens import _tokenizer

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
    """Issue 8.3: harness time per request at ~400k tokens / at ~10k tokens <= 1.5 (harness.bench.flat's definition)."""
    figure = flat.flat()[0]
    assert figure.met, figure.line()


@pytest.mark.benchmark
def test_memory_of_a_long_run():
    """Issue 8.4: peak RSS growth of a long run <= 3x the distinct content of its event log."""
    figures = memory.memory()
    assert all(f.met for f in figures), [f.line() for f in figures]


@pytest.mark.benchmark
@pytest.mark.xfail(reason="issue 18's checks cost 10-20% (read-only messages, failure-mode bookkeeping, each result "
                          "checked against its call, the clock): 2.83-3.15 for most strategies, observation_masking "
                          "3.46, llm_summarizing 3.76 (it follows OpenHands: twice the requests of issue 16's runs); "
                          "before them 2.57-2.80, 3.00 and 3.21 (docs/performance.md); issue 24 takes the goal on",
                   strict=False)
@pytest.mark.parametrize("strategy", comparison_strategies())
def test_overhead_ratio_long(strategy):
    """Issue 8.2: CPU of the mock long runs / tokenizing their distinct contents once <= 3, per strategy."""
    figure = overhead.overhead("long", [strategy])[0]
    assert figure.met, figure.line()


@pytest.mark.benchmark
@pytest.mark.xfail(reason="met in ten of twelve runs since each task instance stays in one worker (median of 3 pairs: "
                          "1.68-1.87, the last three 1.79-1.82): both workers still spend ~5% more CPU than one "
                          "process, and a noisy minute of the shared host takes the median just under 1.7",
                   strict=False)
def test_parallel_scaling_of_the_default_suite():
    """Issue 8.5: the default suite with 2 workers at least 1.7x faster than with 1 (median of 3 pairs of runs)."""
    figure = parallel.parallel()[0]
    assert figure.met, figure.line()


@pytest.mark.benchmark
def test_real_path_overhead_over_a_litellm_floor():
    """Issue 23 item 4 (redefines issue 8.6): 64 runs against serve-mock (100 ms per request) at max-concurrency 16
    within 1.15x the wall time of a bare litellm.completion loop sending the same requests the same way (median of
    3 interleaved pairs, harness.bench.real's definition)."""
    figures = real.figures(bench.BenchOptions(strategies=[]))
    assert figures[0].met, "\n".join(figure.line() for figure in figures)


@pytest.mark.benchmark
def test_adapters_convert_the_view_in_time_of_the_new_messages():
    """Issue 16: an adapter's own CPU per request (the library's time left out) at 400 messages within
    1.5x of that at 40, for every adapter whose library is installed here."""
    figures = adapters.adapters()
    if not figures:
        pytest.skip("no adapter library installed: pip install -e '.[pydantic-ai,inspect]'")
    assert all(figure.met for figure in figures), "\n".join(figure.line() for figure in figures)
