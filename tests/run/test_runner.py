"""The runner, results layout, replay and CLI."""
import json

import pandas as pd

from harness.cli import main
from harness.conversation.events import event_log_name, read_events
from harness.conversation.replay import replay_file

REQUIRED_FIELDS = (
    "run_id task_id family strategy strategy_config seed model success score termination requests input_tokens "
    "cached_tokens cache_write_tokens output_tokens cache_hit_rate cost_usd cost_usd_uncached peak_context_tokens "
    "agent_resets hard_resets warnings compactions rereads wall_s"
).split()
WALL_CLOCK = {"wall_s", "cpu_s"}


def _rows(frame):
    return sorted((json.dumps({k: v for k, v in row.items() if k not in WALL_CLOCK}, sort_keys=True, default=str)
                   for row in frame.to_dict("records")))


def test_rows_have_every_required_field_and_the_results_layout(run_suite):
    runs = run_suite("smoke")
    out = runs.attrs["out"]
    for name in REQUIRED_FIELDS:
        assert name in runs.columns, name
    assert (out / "config.json").exists() and (out / "summary.csv").exists()
    for run_id in runs["run_id"]:
        assert (out / "events" / event_log_name(run_id)).exists()
    assert list(out.glob("plots/*.png"))


def test_same_command_twice_gives_identical_rows_apart_from_wall_clock(run_suite):
    """Determinism, also across worker counts."""
    first = run_suite("smoke", seeds=(0, 1))
    second = run_suite("smoke", seeds=(0, 1), workers=2)
    assert _rows(first) == _rows(second)


def test_event_log_records_requests_with_usage_and_the_end(run_suite):
    runs = run_suite("smoke")
    events = read_events(runs.attrs["out"] / "events" / event_log_name(runs['run_id'][0]))
    types = [e["type"] for e in events]
    assert types[0] == "run_start" and types[-1] == "run_end"
    calls = [e for e in events if e["type"] == "llm_call"]
    assert calls and all(set(c["usage"]) == {"input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens",
                                             "cache_write_1h_tokens"} for c in calls)


def test_replay_rebuilds_every_view_and_detects_tampering(run_suite, tmp_path, capsys):
    runs = run_suite("smoke")
    out = runs.attrs["out"]
    assert main(["replay", str(out)]) == 0
    path = out / "events" / event_log_name(runs['run_id'][0])
    report = replay_file(path)
    assert report.ok and report.checked == runs["requests"][0]
    events = read_events(path)
    tool = next(event for event in events if event["type"] == "message" and event["message"]["role"] == "tool")
    tool["message"]["content"] += " (edited)"
    tampered = tmp_path / "tampered.jsonl"  # the layout before compression: every text in its line
    tampered.write_text("".join(json.dumps(event) + "\n" for event in events))
    assert main(["replay", str(tampered)]) == 1
    assert "MISMATCH" in capsys.readouterr().out


def test_max_requests_ends_a_run(run_suite):
    runs = run_suite("smoke", max_requests=2)
    assert (runs["termination"] == "max_requests").all()
    assert (runs["requests"] == 2).all()
    assert not runs["success"].any()


def test_none_with_a_too_small_window_ends_in_context_overflow(run_suite):
    runs = run_suite("smoke", window=700)
    assert (runs["termination"] == "context_overflow").all()
    assert runs["error"].str.contains("ContextWindowExceededError").all()


def test_user_strategy_loads_by_import_path_with_a_json_config(tmp_path, capsys):
    out = tmp_path / "user"
    code = main(["run", "--suite", "smoke", "--strategies", "forgetful:PlaceholderEverything", "--strategy-config",
                 '{"forgetful:PlaceholderEverything": {"placeholder": "[gone]"}}', "--out", str(out), "--workers", "1",
                 "--no-progress"])
    assert code == 0
    runs = pd.read_json(out / "runs.jsonl", lines=True)
    assert (runs["strategy"] == "forgetful:PlaceholderEverything").all()
    events = read_events(out / "events" / event_log_name(runs['run_id'][0]))
    replaced = [op for e in events for op in e.get("view_ops", ())]
    assert replaced and all(op["message"]["content"] == "[gone]" for op in replaced)


def test_bad_strategy_input_fails_with_exit_2_before_any_run(tmp_path, capsys):
    out = tmp_path / "bad"
    assert main(["run", "--suite", "smoke", "--strategies", "nonexistent", "--out", str(out)]) == 2
    assert "unknown strategy 'nonexistent'" in capsys.readouterr().err
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--strategy-config", '{"none": {"keep": 3}}',
                 "--out", str(out)]) == 2
    assert "unknown key(s) 'keep'" in capsys.readouterr().err
    assert main(["run", "--suite", "smoke", "--mock-knobs", '{"narrate": 1.5}', "--out", str(out)]) == 2
    assert "narrate must be in [0, 1]" in capsys.readouterr().err
    assert not (out / "runs.jsonl").exists()


def test_default_run_prints_a_table_per_strategy(tmp_path, capsys):
    assert main(["run", "--suite", "smoke", "--out", str(tmp_path / "t"), "--workers", "1", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "success" in printed and "cache hit" in printed and "none" in printed


def test_the_metrics_folded_during_a_run_equal_those_recomputed_from_its_saved_log(run_suite):
    from harness.results.metrics import compute_metrics

    out = run_suite("smoke", strategies="all", window=8_000).attrs["out"]
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(rows) >= 8 and any(row["summarizer_requests"] for row in rows) and any(row["compactions"] for row in rows)
    for row in rows:
        saved = compute_metrics(read_events(out / "events" / event_log_name(row['run_id'])))
        assert saved == {name: row[name] for name in saved}, row["run_id"]


def test_a_strategy_reading_past_events_from_memory_is_told_where_the_run_log_is(tmp_path):
    out = tmp_path / "looks_back"
    assert main(["run", "--suite", "smoke", "--strategies", "forgetful:LooksBackInTheLog", "--out", str(out),
                 "--workers", "1", "--no-progress"]) == 0
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert rows and all(row["termination"] == "error" for row in rows)
    for row in rows:
        assert "not kept in memory" in row["error"] and f"{row['run_id']}.jsonl" in row["error"], row["error"]
        assert "ctx.view" in row["error"]
        assert read_events(out / "events" / event_log_name(row['run_id']))[-1]["type"] == "run_end"
