"""Secrets (issue 7.7): API keys and authorization headers never reach any file written."""
import json
from pathlib import Path

from harness import api
from harness.cli import main
from harness.results import read_runs

ENV_KEY = "sk-planted-env-0123456789abcdef"
PARAM_KEY = "sk-planted-param-0123456789abcdef"
HEADER_KEY = "sk-planted-header-0123456789abcdef"
SECRETS = (ENV_KEY, PARAM_KEY, HEADER_KEY)


def assert_no_secret_written(root: Path) -> int:
    files = [p for p in root.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} leaked into {path}"
    return len(files)


def test_planted_keys_appear_in_no_file(mock_server, tmp_path, monkeypatch):
    server = mock_server()
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    secret_params = {"api_key": PARAM_KEY, "extra_headers": {"Authorization": f"Bearer {HEADER_KEY}"}}
    extra = {"summary": {"model": "openai/mock-agent", "api_base": server.url, "params": secret_params}}
    argv = ["run", "--suite", "smoke", "--strategies", "none", "--workers", "1", "--no-progress",
            "--out", str(tmp_path / "cli"), "--model", "openai/mock-agent", "--api-base", server.url,
            "--price-model", "claude-sonnet-4-6", "--cache", str(tmp_path / "cache"), "--profiles", json.dumps(extra)]
    assert main(argv) == 0  # config.json records this command line
    profiles = api.mock_profiles("openai/mock-agent", api_base=server.url, price_model="claude-sonnet-4-6")
    profiles["main"]["params"] = secret_params
    api.run("smoke", strategies="none", profiles=profiles, out=tmp_path / "api", seeds=(0, 1))
    assert all(r["termination"] == "submitted" for r in read_runs(tmp_path / "api") + read_runs(tmp_path / "cli"))
    config = json.loads((tmp_path / "cli" / "config.json").read_text())
    assert config["profiles"]["summary"]["params"] == {"api_key": "<redacted>", "extra_headers": "<redacted>"}
    assert config["argv"][:2] == ["run", "--suite"] and any("<redacted>" in arg for arg in config["argv"])
    assert json.loads((tmp_path / "api" / "config.json").read_text())["argv"] is None  # called from Python
    assert assert_no_secret_written(tmp_path) > 20  # results, events, config.json, summary, plots, cache
