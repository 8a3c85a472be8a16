"""The in-process mock answers the same whether reached directly or through litellm.completion.

`MockConfig.via = "direct"` (the default) skips litellm's per-call wrapper for speed;
this is the check that the shortcut changes nothing a run records.
"""
import pytest

from harness import api
from harness.core.errors import ConfigError
from harness.conversation.events import read_events
from harness.models.mock.provider import MockConfig
from harness.results.layout import read_runs

TIMING = {"wall_s", "cpu_s", "latency_s", "ts"}
SETTINGS = {"profiles"}  # the run_start event records the profiles, which name the transport


def _run(tmp_path, via):
    profiles = api.mock_profiles(window=9000)
    profiles["main"]["mock"].update(via=via, faults={"rate_limit": 0.1, "malformed_tool_args": 0.1})
    profiles["main"]["retry"] = {"initial_delay_s": 0.001, "max_delay_s": 0.002, "max_retries": 8}
    profiles["summary"]["mock"]["via"] = via
    out = api.run("smoke", strategies=["none", "agent_reset", "hard_summarize", "compaction_ladder"],
                  profiles=profiles, out=tmp_path / via, workers=1)
    rows = {r["run_id"]: {k: v for k, v in r.items() if k not in TIMING} for r in read_runs(out)}
    events = {path.name: [{k: v for k, v in e.items() if k not in TIMING | SETTINGS} for e in read_events(path)]
              for path in sorted((out / "events").glob("*.jsonl.gz"))}
    return rows, events


def test_direct_and_litellm_transports_record_identical_runs(tmp_path):
    """Overflows, resets, hard summaries, compaction, retried rate limits and malformed calls included."""
    direct_rows, direct_events = _run(tmp_path, "direct")
    litellm_rows, litellm_events = _run(tmp_path, "litellm")
    assert direct_rows == litellm_rows
    assert direct_events == litellm_events
    terminations = {row["termination"] for row in direct_rows.values()}
    assert {"submitted", "context_overflow"} <= terminations
    assert sum(row["retries"] for row in direct_rows.values()) > 0
    assert sum(row["hard_resets"] for row in direct_rows.values()) > 0


def test_transport_is_validated():
    with pytest.raises(ConfigError, match="via must be one of direct, litellm"):
        MockConfig(via="http")
