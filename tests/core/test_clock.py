"""The run's simulated clock: tools and users take time, and cache TTLs expire on it."""
import json

import pytest

from harness import api
from harness.models.cache_marks import CacheMarks
from harness.cli import main
from harness.core.clock import ClockConfig, RunClock, draw_s
from harness.core.errors import ConfigError
from harness.conversation.events import event_log_name, read_events
from harness.models.mock.cache import PrefixCache
from harness.models.mock.provider import MockConfig, MockProvider
from harness.conversation.replay import replay_file
from harness.results.layout import read_runs
from tasks import family_module
from tasks.base import DEFAULT_TOOL_S

TTL_S = PrefixCache().ttl_s
SLOW_READ = {"tool_durations": {"read_file": [TTL_S + 100, TTL_S + 100]}}  # every read outlives the cache
FAST_READ = {"tool_durations": {"read_file": [1, 1]}}


def run(tmp_path, name, *, suite="smoke", strategies="none", clock=None, **options):
    out = api.run(suite, strategies=strategies, out=tmp_path / name, clock=clock, **options)
    return out, read_runs(out)


def cached_after_reads(out, rows):
    """Cached tokens of each main request that follows a read_file result and a request whose prefix was
    cacheable (1,024+ tokens), over every run."""
    cached = []
    for row in rows:
        tools, previous = [], None
        for event in read_events(out / "events" / event_log_name(row['run_id'])):
            if event["type"] == "message" and event["message"].get("role") == "tool":
                tools.append(event["message"]["name"])
            elif event["type"] == "llm_call" and event.get("profile") == "main" and event["ok"]:
                if "read_file" in tools and previous is not None and previous >= 1024:
                    cached.append(event["usage"]["cached_tokens"])
                tools, previous = [], event["usage"]["input_tokens"]
    return cached


AUTOMATIC = CacheMarks(automatic="5m")  # Anthropic's automatic caching, 5-minute TTL


def test_cache_entries_expire_on_the_clock_the_request_carries():
    """The mock provider reads the run's clock from the request (`now_s`), not its own:
    a repeat within the 5-minute TTL (Anthropic's default) hits, one after it misses."""
    messages = [{"role": "system", "content": "word " * 3000}, {"role": "user", "content": "Start at record AB-1234."}]
    for gap, hit in ((TTL_S - 1, True), (TTL_S + 1, False)):
        provider, config = MockProvider(), MockConfig(session="s")
        provider.serve("agent", messages, [], config, seed=0, now_s=0.0, marks=AUTOMATIC)
        _, usage = provider.serve("agent", messages, [], config, seed=0, now_s=gap, marks=AUTOMATIC)  # from the first
        assert (usage["cache_read_input_tokens"] > 0) is hit


def test_the_agent_does_not_see_the_clock():
    """DESIGN "The mock LLM" rule 1 ("not part of the messages"): the reply is the same at any
    clock reading; only the provider's cache accounting depends on it."""
    messages = [{"role": "system", "content": "word " * 3000}, {"role": "user", "content": "Start at record AB-1234."}]
    replies = []
    for now_s in (0.0, 10.0, 1e6):
        provider = MockProvider()
        replies.append(provider.serve("agent", messages, [], MockConfig(session="s"), seed=0, now_s=now_s)[0])
    assert replies[0] == replies[1] == replies[2]


def test_a_slow_tool_expires_the_cache_and_a_fast_one_does_not(tmp_path):
    """A tool call that outlives the TTL makes the next request a cache miss; a fast one a hit."""
    for name, clock in (("slow", SLOW_READ), ("fast", FAST_READ)):
        after_reads = cached_after_reads(*run(tmp_path, name, clock=clock))
        assert len(after_reads) >= 3, name
        if name == "slow":
            assert all(cached == 0 for cached in after_reads)
        else:
            assert all(cached > 0 for cached in after_reads)
    slow, fast = read_runs(tmp_path / "slow"), read_runs(tmp_path / "fast")
    assert sum(r["cached_tokens"] for r in slow) < sum(r["cached_tokens"] for r in fast)
    assert [r["success"] for r in slow] == [r["success"] for r in fast]  # the agent never sees the clock


def test_tool_durations_are_seeded_family_specific_and_the_same_under_every_strategy(tmp_path):
    """Durations are drawn from the run's task, seed and the call (name, how many before), in the
    family's range: repo_maintenance's run_tests takes tens of seconds to minutes, a file read about a second."""
    repo = family_module("repo_maintenance").RepoMaintenance
    assert repo.tool_seconds["run_tests"][0] >= 30 and repo.tool_seconds_range(repo, "read_file") == DEFAULT_TOOL_S
    a, b = RunClock(ClockConfig(), ["t", 0]), RunClock(ClockConfig(), ["t", 0])
    draws = [a.tool("run_tests", repo.tool_seconds["run_tests"]) for _ in range(5)]
    assert draws == [b.tool("run_tests", repo.tool_seconds["run_tests"]) for _ in range(5)]
    assert len(set(draws)) == 5 and all(30 <= d <= 240 for d in draws)
    assert draw_s((30, 240), "t", 1, "tool", "run_tests", 0) != draws[0]  # another seed, another draw
    out, rows = run(tmp_path, "two", strategies="none,agent_reset", suite="smoke")
    again_out, again = run(tmp_path, "again", strategies="none,agent_reset", suite="smoke")
    strip = lambda rs: {r["run_id"]: (r["simulated_s"], r["tool_s"], r["model_s"]) for r in rs}  # noqa: E731
    assert strip(rows) == strip(again)
    firsts = {}
    for row in rows:
        if row["family"] == "repo_maintenance":
            events = read_events(out / "events" / event_log_name(row['run_id']))
            tests = [e["tool_s"] for e in events if e["type"] == "message" and e["message"].get("name") == "run_tests"]
            firsts[row["strategy"]] = tests[0]
            assert 30 <= tests[0] <= 240
    assert firsts["none"] == firsts["agent_reset"]


def test_user_delays_advance_the_clock(tmp_path):
    """A later user message arrives after a seeded delay (minutes by default); the next request is
    sent that much later. user_scale 0 takes the delays away."""
    task = "plant_early_ask_late-smoke-0"
    for name, clock in (("users", None), ("instant", {"user_scale": 0})):
        out, rows = run(tmp_path, name, clock=clock)
        row = next(r for r in rows if r["task_id"] == task)
        events = read_events(out / "events" / event_log_name(row['run_id']))
        users = [e for e in events if e["type"] == "message" and e["origin"] == "user" and "delay_s" in e]
        assert len(users) == 2  # the second batch, then the questions
        if clock is None:
            assert all(60 <= e["delay_s"] <= 600 for e in users)
            assert row["user_wait_s"] == pytest.approx(sum(e["delay_s"] for e in users), abs=0.01)
            following = next(e for e in events if e["type"] == "llm_call" and e["id"] > users[0]["id"])
            assert following["clock_s"] == pytest.approx(users[0]["clock_s"])
            assert users[0]["clock_s"] >= users[0]["delay_s"]
        else:
            assert row["user_wait_s"] == 0
    assert row["simulated_s"] == pytest.approx(row["model_s"] + row["tool_s"] + row["user_wait_s"], abs=0.01)


def test_the_http_path_gets_the_run_clock_as_in_process(mock_server, tmp_path):
    """Over HTTP (`openai/...` with an api base) the clock travels in a header serve-mock reads, and
    its simulated latency comes back in one: with reads slower than the TTL, rows equal the in-process ones."""
    server = mock_server()
    clock = json.dumps(SLOW_READ)
    common = ["run", "--suite", "smoke", "--strategies", "none", "--workers", "1", "--no-progress", "--clock", clock]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    assert main([*common, "--out", str(tmp_path / "http"), "--model", "openai/mock-agent", "--api-base", server.url,
                 "--price-model", "claude-sonnet-4-6", "--window", "200000"]) == 0
    ignore = {"wall_s", "cpu_s", "model"}
    local, remote = ({r["run_id"]: {k: v for k, v in r.items() if k not in ignore} for r in read_runs(tmp_path / d)}
                     for d in ("local", "http"))
    assert remote == local
    assert all(r["simulated_s"] > TTL_S for r in local.values() if r["family"] == "chained_lookup")


def test_replay_passes_on_a_log_with_the_clock(tmp_path):
    """The clock's fields ride on the events; `ctxbench replay` still rebuilds every view."""
    out, rows = run(tmp_path, "replay", strategies="none,hard_summarize,llm_summarizing", clock=SLOW_READ)
    for row in rows:
        assert replay_file(out / "events" / event_log_name(row['run_id'])).ok
    assert main(["replay", str(out)]) == 0


@pytest.mark.parametrize("clock, message", [
    ({"tool_scale": -1}, "tool_scale must be a number >= 0"),
    ({"user_scale": "fast"}, "user_scale"),
    ({"tool_durations": {"run_tests": [60]}}, "tool_durations.run_tests must be [low, high]"),
    ({"tool_durations": {"run_tests": [300, 60]}}, "0 <= low <= high"),
    ({"user_delay_s": [-1, 5]}, "user_delay_s must have 0 <= low <= high"),
    ({"tool_time": 1}, "unknown key"),
])
def test_bad_clock_config_is_a_config_error(clock, message, tmp_path, capsys):
    """Bad input at the edge (ours): --clock values fail with exit 2, naming the key, before any model call."""
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--no-progress", "--out", str(tmp_path / "x"),
                 "--clock", json.dumps(clock)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    with pytest.raises(ConfigError):
        RunClock(api_clock(clock), [])


def api_clock(data):
    from harness.core.config import build_dataclass

    return build_dataclass(ClockConfig, data, "clock")


@pytest.mark.parametrize("key", [["t1", 0, "tool", "read_file"], ["tâche", 3, "tool", "ré"], ["t", 1.5, "tool", "x"],
                                 ["t", 2**70, "tool", 'q"\x7f']])
def test_counted_draws_equal_draw_s_of_the_whole_key(key):
    """Ours: a run's tool durations come from a hash state of the key made once per tool
    (harness.core.clock._CountedDraws); each draw equals draw_s of the whole key, counts past 9 and odd keys
    (non-ASCII, a float, a big int, DEL: the json module's spelling) included."""
    from harness.core.clock import _CountedDraws

    draws = _CountedDraws(key)
    for count in (0, 1, 9, 10, 123):
        for span in ((1.0, 60.0), (0.5, 0.5), (0.0, 3.0)):
            assert draws.draw_s(span, count) == draw_s(span, *key, count)
