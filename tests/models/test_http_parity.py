"""A run through serve-mock over HTTP (`--model openai/mock-agent --api-base URL`) gives the rows of the
in-process mock (`--model mock/agent`), under every native strategy, at any concurrency, given only the
model and the api base: the summary profile, prices and window resolve as they do in process.

Compared field by field, except:
- `wall_s`, `cpu_s`, `library_cpu_s`: the host's own clocks, which differ between any two runs
  (the simulated clock's `simulated_s`, `model_s`, `tool_s`, `user_wait_s` are compared);
- `model`: the name of the same mock on each transport (`mock/agent`, `openai/mock-agent`);
- `error`: compared by `same_error`, since litellm's HTTP client wraps the provider's message in its own
  words (`OpenAIException - ...`): the same exception type, and the mock's message verbatim.
"""
import json

import pytest

from harness import api
from harness.cli import main
from harness.models.llm import LLMProfile
from harness.results.layout import read_runs
from strategies import REGISTRY, strategy_class

HOST_CLOCKS = {"wall_s", "cpu_s", "library_cpu_s"}
TRANSPORT_NAMED = {"model", "error"}
SMALL_WINDOW = 9000


def native_strategies() -> list[str]:
    """Every registered strategy that runs ctxbench's own code over any provider (not an adapter of a real library,
    nor a provider's own compaction, which needs that provider's route)."""
    return sorted(name for name in REGISTRY if strategy_class(name).library is None and strategy_class(name).provider is None)


def same_error(local: str | None, remote: str | None) -> bool:
    """The same exception type, and the HTTP text ends with the in-process message (what the mock said)."""
    if local is None or remote is None:
        return local == remote
    kind, _, message = local.partition(": ")
    return remote.partition(": ")[0] == kind and remote.endswith(message)


def assert_same_rows(local_dir, remote_dir) -> list[dict]:
    local = {row["run_id"]: row for row in read_runs(local_dir)}
    remote = {row["run_id"]: row for row in read_runs(remote_dir)}
    assert sorted(remote) == sorted(local)
    for run_id, row in local.items():
        other = remote[run_id]
        assert {k: v for k, v in other.items() if k not in HOST_CLOCKS | TRANSPORT_NAMED} == \
               {k: v for k, v in row.items() if k not in HOST_CLOCKS | TRANSPORT_NAMED}, run_id
        assert same_error(row["error"], other["error"]), (run_id, row["error"], other["error"])
    assert {row["model"] for row in remote.values()} == {"openai/mock-agent"}
    return list(local.values())


def run_both(server, tmp_path, *args, strategies=None, http_workers="4"):
    """The same `ctxbench run` in process, one run at a time, and over HTTP (given only --model and --api-base)
    with four workers: rows at any concurrency must be the sequential in-process ones."""
    base = ["run", "--strategies", ",".join(strategies or native_strategies()), "--no-progress", *args]
    assert main([*base, "--workers", "1", "--out", str(tmp_path / "local")]) == 0
    assert main([*base, "--workers", http_workers, "--model", "openai/mock-agent", "--api-base", server.url,
                 "--out", str(tmp_path / "http")]) == 0
    return assert_same_rows(tmp_path / "local", tmp_path / "http")


def test_a_default_task_over_http_matches_in_process_under_every_native_strategy(mock_server, tmp_path):
    """A task of the default suite where an agent reset, a hard summary, a proactive summary and overflows happen,
    at the default window (given to neither side: over HTTP it is serve-mock's)."""
    server = mock_server()
    rows = run_both(server, tmp_path, "--suite", "default", "--task-ids", "repo_maintenance-3")
    assert {"submitted", "context_overflow"} <= {row["termination"] for row in rows}
    assert sum(row["agent_resets"] for row in rows) > 0 and sum(row["hard_resets"] for row in rows) > 0
    assert sum(row["summarizer_requests"] for row in rows) > 0
    assert all(row["cost_usd"] is not None for row in rows)


@pytest.mark.slow
def test_default_suite_over_http_matches_in_process_under_every_native_strategy(mock_server, tmp_path):
    server = mock_server()
    rows = run_both(server, tmp_path, "--suite", "default")
    assert len(rows) == 20 * len(native_strategies())


def test_response_cache_over_http_replays_as_in_process(mock_server, tmp_path):
    """serve-mock's answers depend on the session's state, so a cached answer is one run's, as in process:
    the first invocation replays nothing across runs, the second replays everything."""
    server = mock_server()
    cache = ["--suite", "smoke", "--task-ids", "chained_lookup-smoke-0", "--cache", str(tmp_path / "cache")]
    for attempt in ("first", "again"):  # the two strategies send the same first requests
        run_both(server, tmp_path / attempt, *cache, strategies=["none", "observation_masking"], http_workers="1")
    first, again = read_runs(tmp_path / "first" / "http"), read_runs(tmp_path / "again" / "http")
    assert sum(row["response_cache_hits"] for row in first) == 0
    assert all(row["response_cache_hits"] == row["requests"] for row in again)


def test_served_mock_profiles_are_the_in_process_mocks():
    """The summary profile is the summarizer at the same api base; prices are the in-process mock's."""
    profiles = api.mock_profiles("openai/mock-agent", api_base="http://127.0.0.1:1/v1")
    assert profiles["summary"] == {"model": "openai/mock-summarizer", "api_base": "http://127.0.0.1:1/v1"}
    served = LLMProfile(model="openai/mock-agent", api_base="http://127.0.0.1:1/v1")
    assert served.pricing() == LLMProfile(model="mock/agent").pricing()
    assert LLMProfile(model="openai/mock-agent").serves_mock is False  # without an api base: a real model's name


def test_window_is_taken_from_the_server(mock_server, tmp_path):
    server = mock_server(window=SMALL_WINDOW)
    out = tmp_path / "http"
    assert main(["run", "--suite", "smoke", "--task-ids", "chained_lookup-smoke-0", "--strategies", "none",
                 "--no-progress", "--model", "openai/mock-agent", "--api-base", server.url, "--out", str(out)]) == 0
    profiles = json.loads((out / "config.json").read_text())["profiles"]
    assert profiles["main"]["max_input_tokens"] == SMALL_WINDOW


def test_window_other_than_the_servers_is_an_error_before_any_request(mock_server, tmp_path, capsys):
    server = mock_server(window=SMALL_WINDOW)
    code = main(["run", "--suite", "smoke", "--strategies", "none", "--no-progress", "--model", "openai/mock-agent",
                 "--api-base", server.url, "--window", "32000", "--out", str(tmp_path / "http")])
    assert code == 2
    assert f"max_input_tokens (--window) 32000 is not the window {SMALL_WINDOW} of serve-mock" in capsys.readouterr().err
    assert server.requests == 0
    assert not (tmp_path / "http").exists()


def test_unreachable_server_is_an_error_before_any_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    code = main(["run", "--suite", "smoke", "--strategies", "none", "--no-progress", "--model", "openai/mock-agent",
                 "--api-base", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "http")])
    assert code == 2
    assert "cannot read the mock's window from http://127.0.0.1:9/v1/models" in capsys.readouterr().err



@pytest.mark.slow  # two dry runs of the whole default suite
def test_dry_run_of_the_served_mock_estimates_as_the_in_process_mock(capsys, monkeypatch):
    """A dry run calls no server: the served mock stands in as the in-process mock, billed as it is."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    base = ["run", "--suite", "smoke", "--strategies", "none,hard_summarize", "--no-progress", "--dry-run"]
    assert main(base) == 0
    local = capsys.readouterr().out
    assert main([*base, "--model", "openai/mock-agent", "--api-base", "http://127.0.0.1:9/v1"]) == 0
    assert capsys.readouterr().out == local


def test_window_is_read_without_the_urls_credentials(mock_server):
    """user:password@ and a query in the api base are not sent for the model list (urllib would take the
    userinfo for the host; serve-mock takes no credentials)."""
    from harness.run.invocation import served_mock_window

    server = mock_server(window=SMALL_WINDOW)
    host = server.url.split("://", 1)[1]
    assert served_mock_window(f"http://user:pw@{host}?api_key=k", "openai/mock-agent") == SMALL_WINDOW


OPENAI_STRATEGIES = ["openai.compaction", "openai.compact"]
GPT = "openai/gpt-5.6"


def run_over_responses(server, tmp_path, *args) -> list[dict]:
    """OpenAI's compaction strategies in process (`mock/agent` caching as GPT-5.6 does, at the breakpoints the cache
    policy places, billed as gpt-5.6) and through serve-mock's Responses route with a GPT-5.x model (`--model
    openai/gpt-5.6 --api-base URL`, the server's window given; the breakpoints travel on the input items): rows
    equal field by field."""
    base = ["run", "--strategies", ",".join(OPENAI_STRATEGIES), "--no-progress", "--price-model", "gpt-5.6", *args]
    assert main([*base, "--workers", "1", "--cache-style", server.config.cache, "--out", str(tmp_path / "local")]) == 0
    assert main([*base, "--workers", "4", "--model", GPT, "--api-base", server.url, "--window", str(server.config.window),
                 "--out", str(tmp_path / "http")]) == 0
    local = {row["run_id"]: row for row in read_runs(tmp_path / "local")}
    remote = {row["run_id"]: row for row in read_runs(tmp_path / "http")}
    assert sorted(remote) == sorted(local)
    for run_id, row in local.items():
        assert {k: v for k, v in remote[run_id].items() if k not in HOST_CLOCKS | TRANSPORT_NAMED} == \
               {k: v for k, v in row.items() if k not in HOST_CLOCKS | TRANSPORT_NAMED}, run_id
        assert same_error(row["error"], remote[run_id]["error"])
    assert {row["model"] for row in remote.values()} == {GPT}
    return list(local.values())


def test_openai_compaction_over_the_responses_route_matches_in_process(mock_server, tmp_path, monkeypatch):
    """A task of the default suite past the threshold: each strategy compacts (server-side, or through
    /responses/compact), and every main request went through the Responses route."""
    from harness.models.serve_mock import responses_wire

    paths = []  # per Responses request: whether it was a /responses/compact call
    read = responses_wire.read_request

    def recording(body, compact=False):
        paths.append(compact)
        return read(body, compact)

    monkeypatch.setattr(responses_wire, "read_request", recording)
    server = mock_server(cache="openai-breakpoints")
    rows = run_over_responses(server, tmp_path, "--suite", "default", "--task-ids", "work_queue-2")
    assert all(row["summaries"] >= 1 and row["termination"] == "submitted" for row in rows)
    assert all(row["cached_tokens"] and row["cache_write_tokens"] for row in rows)
    compact_row = next(row for row in rows if row["strategy"] == "openai.compact")
    assert paths.count(True) == compact_row["summarizer_requests"] >= 1
    assert paths.count(False) == sum(row["requests"] for row in rows)


@pytest.mark.slow
def test_default_suite_over_the_responses_route_matches_in_process(mock_server, tmp_path):
    rows = run_over_responses(mock_server(cache="openai-breakpoints"), tmp_path, "--suite", "default")
    assert len(rows) == 20 * len(OPENAI_STRATEGIES)
    assert all(row["termination"] != "error" for row in rows)
