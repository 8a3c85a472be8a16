"""Bad input: a clear error naming the field or line, exit code 2, before any model call."""
import pytest

from harness.cli import main

SMOKE = ["run", "--suite", "smoke", "--strategies", "none", "--workers", "1", "--no-progress"]




def task_file(tmp_path, *lines):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


GOOD_ROW = '{"task_id": "t1", "family": "chained_lookup", "seed": 0, "params": {"hops": 2}}'


@pytest.mark.parametrize("argv, message", [
    (["--strategies", "no_such_strategy"], "unknown strategy 'no_such_strategy'"),
    (["--strategy-config", '{"none": {"bogus": 1}}'], "unknown key(s) 'bogus'"),
    (["--mock-knobs", '{"narrate": 2}'], "narrate must be in [0, 1], got 2"),
    (["--mock-knobs", '{"narate": 0.5}'], "unknown key(s) 'narate'"),
    # The knob that condensed at a fixed stage is gone; the error names its replacement
    (["--mock-knobs", '{"reset_stage": 0.8}'], "'reset_stage' was replaced by 'reset_at_warning'"),
    (["--mock-knobs", '{"reset_at_warning": 0}'], "reset_at_warning must be 1 or more"),
    (["--mock-faults", '{"timeout": -0.1}'], "profiles.main.mock: faults: timeout must be a probability"),
    (["--retry", '{"multiplier": 0.5}'], "profiles.main: retry: multiplier must be at least 1"),
    (["--profiles", '{"summary": {"model": "mock/agent", "temperature": 0}}'],
     "profiles.summary: unknown key(s) 'temperature'"),
    (["--max-concurrency", "0"], "--max-concurrency must be a positive integer"),
    (["--max-total-cost-usd", "0"], "--max-total-cost-usd must be a positive number"),
])
def test_bad_option_names_the_field_and_exits_2(tmp_path, capsys, no_model_calls, argv, message):
    out = tmp_path / "r"
    assert main([*SMOKE, "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxbench: error: ") and message in err
    assert not (out / "runs.jsonl").exists()


@pytest.mark.parametrize("lines, message", [
    ((GOOD_ROW, '{"task_id": "t2", "family": '), "tasks.jsonl:2: not valid JSON"),
    ((GOOD_ROW, '{"task_id": "t2", "family": "chained_lookup", "seed": -1}'), "tasks.jsonl:2: field 'seed'"),
    (('{"task_id": "t1", "family": "chained_lookup", "seed": 0, "params": {"hops": 0}}',), "tasks.jsonl:1: field"),
    ((GOOD_ROW, '{"task_id": "t2", "family": "no_family", "seed": 0}'), "tasks.jsonl:2"),
    ((GOOD_ROW, '{"task_id": "t2", "family": "chained_lookup", "seed": 0, "colour": 1}'),
     "tasks.jsonl:2: unknown field(s) colour"),
])
def test_malformed_task_file_names_the_line_and_exits_2(tmp_path, capsys, no_model_calls, lines, message):
    assert main([*SMOKE, "--tasks", task_file(tmp_path, *lines), "--out", str(tmp_path / "r")]) == 2
    assert message in capsys.readouterr().err


def test_real_model_without_its_key_fails_before_any_call(tmp_path, capsys, monkeypatch, no_model_calls):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main([*SMOKE, "--out", str(tmp_path / "r"), "--model", "openai/gpt-4o-mini"]) == 2
    assert "needs OPENAI_API_KEY" in capsys.readouterr().err


def test_serve_mock_refuses_bad_config(capsys):
    assert main(["serve-mock", "--port", "0", "--faults", '{"rate_limit": 2}']) == 2
    assert "rate_limit must be a probability" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--model", "openai/mock-agent", "--api-base", "http://127.0.0.1:9/v1", "--mock-knobs", '{"narrate": 0.5}'],
     "give them to `ctxbench serve-mock --mock-knobs`"),
    (["--model", "anthropic/claude-sonnet-4-6", "--mock-knobs", '{"narrate": 0.5}'], "a real model has no knobs"),
    (["--model", "anthropic/claude-sonnet-4-6", "--cache-style", "openai"], "applies to a real model's --dry-run"),
])
def test_an_option_of_the_in_process_mock_given_for_another_model_is_refused_not_dropped(tmp_path, capsys, monkeypatch,
                                                                                        no_model_calls, argv, message):
    """--mock-knobs and --cache-style set the in-process mock; for another model they would silently do nothing."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    assert main(SMOKE + ["--out", str(tmp_path / "o"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
