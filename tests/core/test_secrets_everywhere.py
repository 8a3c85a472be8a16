""""No secret in any output": a distinct secret planted in every channel (environment,
profile fields and params, headers, api_base userinfo and query, a user strategy's config, a sweep grid)
reaches no file written under the results directories (nor a file name), nor stdout, nor stderr, through
the real CLI: run, sweep, traces, report and resume, a real client path served by serve-mock."""
from __future__ import annotations

import gzip
import json
import secrets as random_secrets
from pathlib import Path

import pytest

from harness.conversation.events import event_logs, read_events
from harness.cli import main
from harness.results.layout import read_runs

STRATEGY = "keyed:KeyedService"
TRACE = Path(__file__).parents[1] / "fixtures" / "traces" / "openai" / "single.json"


def planted(name: str) -> str:
    """A random secret that can be told apart from the others (>= 12 characters)."""
    return f"{name}{random_secrets.token_hex(10)}"


@pytest.fixture
def channels() -> dict[str, str]:
    """One distinct secret per channel, by channel name."""
    return {name: planted(name) for name in (
        "envopenai", "envaws", "envtoken", "paramkey", "paramaws", "paramawstoken", "paramvertex", "paramazure",
        "header", "bearer", "urluser", "urlpass", "urlquery", "urlkey", "strategykey", "gridone", "gridtwo",
        "badconfig")}


def secret_env(monkeypatch, values: dict[str, str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", values["envopenai"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", values["envaws"])
    monkeypatch.setenv("HF_TOKEN", values["envtoken"])


def assert_nothing_leaked(values: dict[str, str], roots: list[Path], texts: list[str]) -> int:
    """No planted value in any file (contents or name) under `roots`, nor in `texts`; returns files read."""
    count = 0
    for root in roots:
        for path in root.rglob("*"):
            for secret in values.values():
                assert secret not in str(path.relative_to(root)), f"{secret} in a file name: {path}"
            if path.is_file():
                count += 1
                data = path.read_bytes()
                if path.suffix == ".gz":  # an event log or a pack of its texts: what it holds, decompressed
                    data = gzip.decompress(data)
                for name, secret in values.items():
                    assert secret.encode() not in data, f"{name} secret leaked into {path}"
    for text in texts:
        for name, secret in values.items():
            assert secret not in text, f"{name} secret leaked into the console output: {text[-400:]}"
    return count


def test_no_planted_secret_reaches_any_output(mock_server, tmp_path, monkeypatch, capsys, channels):
    """Configs, labels, file names, argv, tables, event logs, stdout and stderr hold none
    of the planted secrets; litellm's credential parameters (aws_secret_access_key, aws_session_token,
    vertex_credentials, azure_ad_token) and URL credentials (user:password@, ?api_key=, &key=) included."""
    server = mock_server()
    values = channels
    secret_env(monkeypatch, values)
    host = server.url.split("://", 1)[1]
    leaky_base = (f"http://{values['urluser']}:{values['urlpass']}@{host}?api_key={values['urlquery']}"
                  f"&key={values['urlkey']}")
    params = {"api_key": values["paramkey"], "aws_secret_access_key": values["paramaws"],
              "aws_session_token": values["paramawstoken"], "azure_ad_token": values["paramazure"],
              "vertex_credentials": {"type": "service_account", "private_key": values["paramvertex"]},
              "extra_headers": {"X-Custom-Auth": values["header"], "Authorization": f"Bearer {values['bearer']}"}}
    profiles = {"summary": {"model": "openai/mock-summarizer", "api_base": server.url, "params": params},
                "judge": {"model": "openai/mock-agent", "api_base": leaky_base, "params": {"timeout": 5}}}
    model = ["--model", "openai/mock-agent", "--api-base", server.url, "--price-model", "claude-sonnet-4-6",
             "--profiles", json.dumps(profiles)]
    common = ["--suite", "smoke", "--workers", "1", "--no-progress"]
    config = {STRATEGY: {"api_key": values["strategykey"], "profile": "judge"}}
    runs, sweep, traces = tmp_path / "run", tmp_path / "sweep", tmp_path / "traces"
    outputs: list[str] = []

    def cli(*argv: str) -> int:
        """Run one command, then look for every planted secret in all written so far (the first leak fails)."""
        code = main(list(argv))
        captured = capsys.readouterr()
        outputs.extend([captured.out, captured.err])
        assert_nothing_leaked(values, [tmp_path], outputs)
        return code

    assert cli("run", *common, "--strategies", f"none,{STRATEGY}", "--strategy-config", json.dumps(config),
               "--out", str(runs), *model) == 0
    rows = read_runs(runs)
    assert {row["strategy"] for row in rows} == {"none", STRATEGY} and all(r["termination"] != "error" for r in rows)
    side_calls = [event for path in event_logs(runs / "events") if "KeyedService" in path.name
                  for event in read_events(path) if event.get("purpose") == "keyed_service"]
    assert side_calls and not any(event["ok"] for event in side_calls)  # the leaky URL's call failed, logged

    assert cli("sweep", *common, "--strategy", STRATEGY, "--grid",
               f"api_key={values['gridone']},{values['gridtwo']}", "--also", "none", "--out", str(sweep), *model) == 0
    tuning = (sweep / "tuning.csv").read_text()
    assert "<redacted-1>" in tuning and "<redacted-2>" in tuning  # the points stay apart

    assert cli("traces", str(TRACE), "--strategies", f"none,{STRATEGY}", "--strategy-config",
               json.dumps({STRATEGY: {"api_key": values["strategykey"], "fail": True}}),
               "--profiles", json.dumps({"judge": profiles["judge"]}), "--out", str(traces), "--no-progress") == 0
    failed = [row for row in read_runs(traces) if row["strategy"] == STRATEGY]
    assert failed and all("refused key <redacted>" in row["error"] for row in failed)

    assert cli("report", str(runs)) == 0
    lines = (runs / "runs.jsonl").read_text().splitlines()
    (runs / "runs.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # one cell left to run
    assert cli("run", "--resume", str(runs), "--no-progress", "--api-base", leaky_base) == 0
    assert len(read_runs(runs)) == len(lines)

    bad = {STRATEGY: {"api_key": [values["badconfig"]]}}
    assert cli("run", *common, "--strategies", STRATEGY, "--strategy-config", json.dumps(bad),
               "--out", str(tmp_path / "bad")) == 2
    assert "api_key" in outputs[-1]  # the error names the field, not its value

    config_json = json.loads((runs / "config.json").read_text())
    assert config_json["profiles"]["summary"]["params"]["aws_secret_access_key"] == "<redacted>"
    assert config_json["profiles"]["judge"]["api_base"].startswith("http://<redacted>@")
    assert assert_nothing_leaked(values, [tmp_path], outputs) > 40
