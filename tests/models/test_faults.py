"""Fault injection in the mock, retries with backoff, and runs that survive them."""
import random

import litellm
import pytest

from harness import api
from harness.core.errors import ConfigError
from harness.conversation.events import read_events
from harness.models.mock.faults import Faults, draw
from harness.models.mock.provider import MockConfig
from harness.results.layout import read_runs
from harness.models.profiles import build_profiles
from tasks.suites import load_tasks
from harness.models.retry import RetryPolicy, call_with_retries

FAST_RETRY = {"initial_delay_s": 0.001, "max_delay_s": 0.002, "max_retries": 8}


def run_with_faults(tmp_path, name, faults, retry=FAST_RETRY, seeds=(0, 1)):
    profiles = api.mock_profiles()
    profiles["main"]["mock"]["faults"] = faults
    profiles["main"]["retry"] = retry
    out = api.run("smoke", strategies="none", seeds=seeds, profiles=profiles, out=tmp_path / name)
    return out, read_runs(out)


def test_fault_draws_are_deterministic_per_seed_and_request():
    faults = Faults(rate_limit=0.2, server_error=0.1, timeout=0.1, malformed_tool_args=0.3)
    first = [draw(faults, seed=3, session="run-a", index=i) for i in range(400)]
    assert first == [draw(faults, seed=3, session="run-a", index=i) for i in range(400)]
    assert first != [draw(faults, seed=4, session="run-a", index=i) for i in range(400)]
    errors = [d.error for d in first]
    assert 40 < errors.count("rate_limit") < 120 and errors.count(None) > 150
    assert 70 < sum(d.malformed for d in first) < 170


def test_fault_rates_are_validated():
    with pytest.raises(ConfigError, match="rate_limit must be a probability"):
        MockConfig(faults={"rate_limit": 1.5})
    with pytest.raises(ConfigError, match="at most 1"):
        MockConfig(faults={"rate_limit": 0.6, "server_error": 0.6})
    with pytest.raises(ConfigError, match="unknown key"):
        MockConfig(faults={"rate_limits": 0.1})


def test_under_faults_no_finished_result_is_lost_or_duplicated(tmp_path):
    """Rate limits, server errors and timeouts are retried (each an llm_retry event); every cell has one row."""
    _, clean = run_with_faults(tmp_path, "clean", {})
    out, faulty = run_with_faults(tmp_path, "faulty", {"rate_limit": 0.15, "server_error": 0.1, "timeout": 0.1})
    assert sorted(r["run_id"] for r in faulty) == sorted(r["run_id"] for r in clean)
    assert len({r["run_id"] for r in faulty}) == len(faulty) == 2 * len(load_tasks("smoke"))
    retries = [e for path in (out / "events").glob("*.jsonl.gz") for e in read_events(path) if e["type"] == "llm_retry"]
    assert {e["error_type"] for e in retries} == {"RateLimitError", "InternalServerError", "Timeout"}
    assert all(e["delay_s"] <= FAST_RETRY["max_delay_s"] for e in retries)
    strip = lambda rows: {r["run_id"]: (r["success"], r["score"], r["requests"], r["output_tokens"]) for r in rows}  # noqa: E731
    assert strip(faulty) == strip(clean)
    assert sum(r["retries"] for r in faulty) == len(retries)


def test_malformed_tool_arguments_get_an_error_result_the_agent_recovers_from(tmp_path):
    out, rows = run_with_faults(tmp_path, "malformed", {"malformed_tool_args": 0.5})
    events = [e for path in (out / "events").glob("*.jsonl.gz") for e in read_events(path)]
    errors = [e for e in events if e["type"] == "message" and e["origin"] == "tool"
              and "arguments are not valid JSON" in e["message"]["content"]]
    assert errors and all(e.get("is_error") for e in errors)
    assert all(r["success"] and r["termination"] == "submitted" for r in rows)


def test_a_run_whose_retries_run_out_ends_error_and_the_others_go_on(tmp_path):
    _, rows = run_with_faults(tmp_path, "exhausted", {"server_error": 0.3}, retry={"max_retries": 0}, seeds=(0, 1, 2))
    assert len(rows) == 3 * len(load_tasks("smoke"))
    failed = [r for r in rows if r["termination"] == "error"]
    assert failed and all("InternalServerError" in r["error"] for r in failed)
    assert any(r["termination"] == "submitted" and r["success"] for r in rows)


def _flaky(failures, error):
    calls = {"n": 0}

    def call():
        calls["n"] += 1
        if calls["n"] <= failures:
            raise error
        return "ok"
    return call, calls


def test_retry_is_bounded_in_count_and_recorded():
    seen, sleeps = [], []
    call, calls = _flaky(10, litellm.RateLimitError(message="slow down", llm_provider="x", model="m"))
    policy = RetryPolicy(max_retries=3, initial_delay_s=1.0, multiplier=2.0, max_delay_s=3.0, jitter=0.5)
    with pytest.raises(litellm.RateLimitError):
        call_with_retries(call, policy, rng=random.Random(0), on_retry=lambda n, d, e: seen.append((n, d)),
                          sleep=sleeps.append)
    assert calls["n"] == 4 and [n for n, _ in seen] == [1, 2, 3]
    for (n, delay), base in zip(seen, (1.0, 2.0, 3.0)):  # exponential, capped, jittered down by at most half
        assert base * 0.5 <= delay <= base
    assert sleeps == [d for _, d in seen]


def test_retry_is_bounded_in_time_and_skips_permanent_errors():
    call, calls = _flaky(1, litellm.Timeout(message="t", model="m", llm_provider="x"))
    with pytest.raises(litellm.Timeout):
        call_with_retries(call, RetryPolicy(initial_delay_s=10, max_total_s=5), rng=random.Random(0), sleep=lambda s: None)
    assert calls["n"] == 1
    call, calls = _flaky(1, litellm.BadRequestError(message="bad", model="m", llm_provider="x"))
    with pytest.raises(litellm.BadRequestError):
        call_with_retries(call, RetryPolicy(), rng=random.Random(0), sleep=lambda s: None)
    assert calls["n"] == 1
    call, calls = _flaky(2, litellm.InternalServerError(message="oops", llm_provider="x", model="m"))
    assert call_with_retries(call, RetryPolicy(initial_delay_s=0), rng=random.Random(0), sleep=lambda s: None) == "ok"


def test_retry_policy_is_validated():
    with pytest.raises(ConfigError, match="profiles.main: retry: unknown key"):
        build_profiles({"main": {"model": "mock/agent", "retry": {"retries": 3}}})
    with pytest.raises(ConfigError, match="max_retries must be 0 or more"):
        build_profiles({"main": {"model": "mock/agent", "retry": {"max_retries": -1}}})
