"""Secrets: API keys and authorization headers never reach any file written."""
import json
from pathlib import Path

from harness import api
from harness.cli import main
from harness.results.layout import read_runs

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


def test_litellms_credential_parameters_are_secret_keys():
    """From litellm (get_litellm_params.py's credential kwargs, workload_identity's
    WIF_SECRET_BEARING_KEYS, sensitive_data_masker's rule): every credential parameter litellm takes is
    redacted, those without a key-like ending included; counts and prices are not."""
    from litellm.litellm_core_utils.get_litellm_params import AWS_CREDENTIAL_KWARGS_KEYS, OPTIONAL_KWARGS_KEYS
    from litellm.litellm_core_utils.sensitive_data_masker import SensitiveDataMasker
    from litellm.types.workload_identity import WIF_SECRET_BEARING_KEYS

    from harness.core.secrets import NOT_SECRET_KEYS, is_secret_key

    masker = SensitiveDataMasker()
    for name in AWS_CREDENTIAL_KWARGS_KEYS | OPTIONAL_KWARGS_KEYS:
        if masker.is_sensitive_key(name) and name not in NOT_SECRET_KEYS:
            assert is_secret_key(name), name
    assert all(is_secret_key(name) for name in WIF_SECRET_BEARING_KEYS)
    assert all(is_secret_key(name) for name in ("aws_secret_access_key", "aws_access_key_id", "aws_session_token",
                                                "vertex_credentials", "azure_ad_token", "client_secret",
                                                "azure_password", "X-Api-Key", "extra_headers", "OPENAI_API_KEY"))
    assert not any(is_secret_key(name) for name in ("max_tokens", "input_cost_per_token", "aws_region_name",
                                                    "keep_last", "api_base", "TOKENIZERS_PARALLELISM"))


def test_url_credentials_are_cut_from_any_text():
    """The userinfo of a URL and its secret-named query parameters (litellm's
    secret_redaction patterns: ?api_key=, ?key=, &token=, sig=) never reach an output; the rest stays."""
    from harness.core.secrets import redact, redact_text, secret_values

    url = "https://alice:pa55word-xyz@host:8/v1?api_key=abcdefgh123&key=AIzaSecret99&token=tok-12345678&model=m"
    assert redact_text(url) == "https://<redacted>@host:8/v1?api_key=<redacted>&key=<redacted>&token=<redacted>&model=m"
    assert redact({"api_base": url})["api_base"] == redact_text(url)
    assert {"pa55word-xyz", "abcdefgh123", "AIzaSecret99", "tok-12345678"} <= secret_values({"api_base": url},
                                                                                             environment=False)
    assert redact_text("in line 2: api_key: sk-0123456789") == "in line 2: api_key: <redacted>"
    assert redact_text("keep_last: expected an integer, got 'many'") == "keep_last: expected an integer, got 'many'"


def test_a_sweep_over_a_secret_key_labels_points_by_position(tmp_path):
    """A grid over a secret-named key (or a value holding a secret) labels its points
    `<redacted-N>`, so labels, run ids, file names and tables hold no value and the points stay apart."""
    from harness.sweep import Grid, grid_points, sweep_file_text

    grid = Grid(strategy="none", axes={"api_key": ["sk-first-0123456789", "sk-second-0123456789"],
                                       "llm": [{"token": "tok-0123456789"}, {"n": 1}]})
    points = grid_points(grid)
    assert [point.spec.label for point in points] == [
        "none[api_key=<redacted-1>,llm=<redacted-1>]", 'none[api_key=<redacted-1>,llm={"n":1}]',
        "none[api_key=<redacted-2>,llm=<redacted-1>]", 'none[api_key=<redacted-2>,llm={"n":1}]']
    assert points[0].spec.config == {"api_key": "sk-first-0123456789", "llm": {"token": "tok-0123456789"}}
    assert "0123456789" not in sweep_file_text(grid, points)


def test_resume_asks_again_for_an_api_base_whose_credentials_were_not_written():
    """Ours: credentials in an api_base are never written, so a resume must be given the
    URL again (--api-base); it must match the recorded URL once redacted, or the resume exits 2."""
    import pytest

    from harness.core.errors import ConfigError
    from harness.run.invocation import restore_api_base

    url = "http://u:secret-pass-123@host/v1"
    with pytest.raises(ConfigError, match=r"profiles.judge.api_base http://<redacted>@host/v1 held credentials"):
        restore_api_base({"judge": {"api_base": "http://<redacted>@host/v1"}}, None)
    with pytest.raises(ConfigError, match="matches no api_base"):
        restore_api_base({"judge": {"api_base": "http://other/v1"}}, url)
    profiles = {"judge": {"api_base": "http://<redacted>@host/v1"}, "main": {"model": "mock/agent"}}
    restore_api_base(profiles, url)
    assert profiles["judge"]["api_base"] == url


def test_resume_refuses_strategies_that_differed_only_in_secrets(tmp_path):
    """Ours: the points of a sweep over api_key cannot be told apart once their keys
    were left out, so resuming them exits 2 instead of running one configuration under two labels."""
    out = tmp_path / "sweep"
    assert main(["sweep", "--strategy", "keyed:KeyedService", "--grid", "api_key=sk-aaaa-0123456789,sk-bbbb-0123456789",
                 "--suite", "smoke", "--no-progress", "--out", str(out)]) == 0
    (out / "runs.jsonl").write_text("")
    assert main(["run", "--resume", str(out), "--no-progress"]) == 2


def test_credentials_known_by_their_shape_are_cut_from_any_text():
    """Ours: a credential in a provider's documented format is redacted wherever it stands in free text (a key
    pasted as the wrong argument, quoted by an error), with no secret-named key next to it; identifiers of the
    same alphabet that are not keys stay."""
    from harness.core.secrets import REDACTED, redact_text

    keys = ["sk-ant-api03-" + "a1B2" * 10, "sk-proj-" + "Zx9_" * 8, "AKIA" + "ABCDEFGHIJ234567",
            "AIza" + "b" * 35, "ghp_" + "c3" * 18, "github_pat_" + "d4" * 12, "hf_" + "e5" * 16,
            "xoxb-1234567890-abcdefghij", "gsk_" + "f6" * 12, "xai-" + "g7" * 12,
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"]
    for key in keys:
        text = redact_text(f"argument --workers: expected an integer, got '{key}'")
        assert key not in text and REDACTED in text, key
    for plain in ["chained_lookup-long-0--none--s0", "task-abcdefghijklmnopqrstuvwxyz0123", "ask-abcdefghijklmnopqrstu",
                  "gpt-4o-mini", "anthropic/claude-sonnet-4-5", "ENT-4821"]:
        assert redact_text(plain) == plain


def test_a_usage_error_does_not_echo_a_secret(capsys, monkeypatch):
    """Ours: argparse quotes the value it refused; a key pasted in the wrong place, or any secret value of the
    environment given as an argument, is redacted from that message (exit 2 as argparse gives)."""
    import pytest

    monkeypatch.setenv("OPENAI_API_KEY", "plainvalue12345")
    for argv in (["run", "--workers", "sk-ant-" + "k" * 30], ["run", "--bogus", "plainvalue12345"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert argv[-1] not in err and "<redacted>" in err and "error:" in err
