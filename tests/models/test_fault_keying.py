"""Faults over HTTP keyed by the client's request index and attempt: a run meets the same
faults in process, against serve-mock, and across a serve-mock restart."""
import json
import urllib.error
import urllib.request

import litellm
import pytest

from conftest import write_suite_file
from harness.cli import main
from harness.conversation.events import read_events
from harness.models.llm import ATTEMPT_HEADER, REQUEST_HEADER, SESSION_HEADER
from harness.models.mock.faults import Faults, draw
from harness.results.layout import read_runs

FAULTS = {"rate_limit": 0.12, "server_error": 0.08, "timeout": 0.08}
RETRY = json.dumps({"initial_delay_s": 0.001, "max_delay_s": 0.002, "max_retries": 10})
OUTCOME = ("success", "score", "termination", "requests", "failed_requests", "retries", "output_tokens")


def run(tmp_path, name, *extra):
    tasks = write_suite_file(tmp_path, "smoke", family="chained_lookup")
    assert main(["run", "--tasks", tasks, "--strategies", "none,observation_masking", "--seeds", "0,1",
                 "--workers", "1", "--no-progress", "--out", str(tmp_path / name), "--retry", RETRY,
                 "--window", "200000", *extra]) == 0
    return tmp_path / name


def http(server):
    return ["--model", "openai/mock-agent", "--api-base", server.url, "--price-model", "claude-sonnet-4-6"]


def fault_sequences(out):
    """Per run, the faults it met: (successful main requests before it, retry number, error type) of each retry."""
    sequences = {}
    for path in sorted((out / "events").glob("*.jsonl.gz")):
        done, met = 0, []
        for event in read_events(path):
            if event["type"] == "llm_call" and event.get("ok"):
                done += 1
            elif event["type"] == "llm_retry":
                met.append((done, event["retry"], event["error_type"]))
        sequences[path.stem] = met
    return sequences


def rows(out, fields=None):
    return {r["run_id"]: {k: v for k, v in r.items() if k not in ("wall_s", "cpu_s", "model")
                          and (fields is None or k in fields)} for r in read_runs(out)}


def test_a_retried_request_has_the_same_index_and_its_own_attempt():
    """A retry draws afresh (attempt 1, 2, ...) so it can succeed; the same attempt draws the same."""
    faults = Faults(rate_limit=0.5)
    first = [draw(faults, seed=0, session="s", index=3, attempt=a).error for a in range(40)]
    assert first == [draw(faults, seed=0, session="s", index=3, attempt=a).error for a in range(40)]
    assert {None, "rate_limit"} == set(first)


def test_serve_mock_draws_the_clients_request_index_not_its_own_count(mock_server):
    """A fresh server told request 7, attempt 2 of a session answers as the server that saw the
    session's first 7 requests would (it drew from its own counter: a restart met other faults)."""
    rates = {"server_error": 0.5}
    body = json.dumps({"model": "mock-agent", "messages": [{"role": "user", "content": "hello"}], "seed": 0}).encode()

    def status(server, index, attempt):
        request = urllib.request.Request(server.url + "/chat/completions", data=body, headers={
            "Content-Type": "application/json", SESSION_HEADER: "s", REQUEST_HEADER: str(index),
            ATTEMPT_HEADER: str(attempt)})
        try:
            with urllib.request.urlopen(request):
                return 200
        except urllib.error.HTTPError as exc:
            return exc.code

    expected = [500 if draw(Faults(**rates), seed=0, session="s", index=i, attempt=a).error else 200
                for i in range(12) for a in range(2)]
    assert len(set(expected)) == 2
    assert [status(mock_server(faults=rates), i, a) for i in range(12) for a in range(2)] == expected


def test_a_bad_request_index_header_is_a_malformed_request(mock_server):
    """Ours: an index or attempt that is no whole number >= 0 is a 400 naming the headers."""
    server = mock_server()
    request = urllib.request.Request(server.url + "/chat/completions", data=b'{"messages": []}', headers={
        "Content-Type": "application/json", REQUEST_HEADER: "1", ATTEMPT_HEADER: "-1"})
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request)
    assert raised.value.code == 400 and ATTEMPT_HEADER in raised.value.read().decode()


def test_runs_meet_the_same_faults_across_serve_mock_restarts_and_in_process(tmp_path, capsys, mock_server,
                                                                              monkeypatch):
    """A matrix against serve-mock with faults, run against one server and again against servers
    restarted mid-way (the client goes on against a fresh one after 15 and 40 requests), meets the same fault
    sequence per run (from its llm_retry events) with the same outcomes; two fresh servers give identical rows, and
    the in-process mock (--mock-faults, keyed the same way by design) gives both."""
    first = run(tmp_path, "first", *http(mock_server(faults=FAULTS)))
    second = run(tmp_path, "second", *http(mock_server(faults=FAULTS)))
    local = run(tmp_path, "local", "--mock-faults", json.dumps(FAULTS))
    sequences = fault_sequences(first)
    assert sum(map(len, sequences.values())) > 10 and len({e for s in sequences.values() for _, _, e in s}) == 3
    assert fault_sequences(second) == sequences == fault_sequences(local)
    assert rows(second) == rows(first) == rows(local)

    servers = [mock_server(faults=FAULTS) for _ in range(3)]
    completion, sent = litellm.completion, {"n": 0}

    def restarted(**kwargs):  # the servers that answer: a fresh one after 15 and after 40 requests
        sent["n"] += 1
        return completion(**{**kwargs, "api_base": servers[(sent["n"] > 15) + (sent["n"] > 40)].url})

    monkeypatch.setattr(litellm, "completion", restarted)
    restart = run(tmp_path, "restart", *http(servers[0]))
    assert all(server.requests for server in servers)
    assert fault_sequences(restart) == sequences
    assert rows(restart, OUTCOME) == rows(first, OUTCOME)  # a restart loses the prompt cache alone
