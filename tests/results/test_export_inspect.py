"""`ctxbench export RESULTS_DIR --format inspect`: ctxbench runs as Inspect AI eval logs."""
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="the Inspect AI export needs the `inspect` extra (pip install -e '.[inspect]')")

from inspect_ai.log import read_eval_log  # noqa: E402

from harness import api  # noqa: E402
from harness.cli import main  # noqa: E402
from harness.conversation.events import event_log_name, read_events  # noqa: E402
from harness.results.exports.inspect import INSTALL_HINT, to_chat_message  # noqa: E402
from harness.results.layout import read_runs  # noqa: E402

# A tiny window and eager settings, so the smoke suite resets (agent_reset), compacts (compaction_ladder)
# and summarizes after context-window errors (hard_summarize).
CONFIGS = {"agent_reset": {"condenser": {"warning_thresholds": [0.3]}},
           "compaction_ladder": {"turn_boundary": False, "target_tokens": 1500, "turn_boundary_target": 1500,
                                 "clear_tool_max_tokens": 100, "clear_tool_keep_pairs": 1, "min_clear_tokens": 0}}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A smoke run of three strategies under a 5,000-token window, exported with the command line of
    docs/inspect.md (and of the browser test): `ctxbench export RESULTS --format inspect --out DIR`."""
    base = tmp_path_factory.mktemp("inspect")
    results = api.run("smoke", strategies="agent_reset,compaction_ladder,hard_summarize", strategy_configs=CONFIGS,
                      profiles=api.mock_profiles(window=5_000), out=base / "smoke")
    out = base / "logs"
    assert main(["export", str(results), "--format", "inspect", "--out", str(out)]) == 0
    return results, out


def _logs(out: Path):
    return [read_eval_log(str(path)) for path in sorted(out.glob("*.eval"))]


def test_one_log_per_strategy_with_one_sample_per_run(exported):
    """One eval log per strategy (task = suite/strategy with a task id of its own, which
    Inspect's viewer needs to list every log; model = ctxbench's model), each run a sample (id = task_id,
    epoch = seed), its runs.jsonl row as the sample's metadata."""
    results, out = exported
    rows = read_runs(results)
    logs = _logs(out)
    assert sorted(log.eval.solver for log in logs) == sorted({row["strategy"] for row in rows})
    assert len({log.eval.task_id for log in logs}) == len(logs)
    for log in logs:
        mine = {row["run_id"]: row for row in rows if row["strategy"] == log.eval.solver}
        assert log.status == "success" and log.eval.task == f"smoke/{log.eval.solver}" and log.eval.model == "mock/agent"
        assert len(log.samples) == len(mine) == log.results.total_samples
        for sample in log.samples:
            row = mine[sample.metadata["run_id"]]
            assert (sample.id, sample.epoch) == (row["task_id"], 1)
            assert {k: sample.metadata[k] for k in row} == row
            assert sample.input and sample.input in sample.messages[1].text  # the task statement


def test_events_match_the_runs_metrics(exported):
    """Every request is a model event (main ones = requests, summary calls =
    summarizer_requests, failed ones carry an error), every reset, summary and compaction a compaction
    event, every tool result a tool event, every warning an info event; usage sums equal runs.jsonl's
    (Inspect's input_tokens exclude cache reads and writes, ctxbench's include them); score = success."""
    results, out = exported
    rows = {row["run_id"]: row for row in read_runs(results)}
    seen = Counter()
    for log in _logs(out):
        for sample in log.samples:
            row = rows[sample.metadata["run_id"]]
            events = read_events(results / "events" / event_log_name(row['run_id']))
            kinds = Counter(event.event for event in sample.events)
            model = [e for e in sample.events if e.event == "model"]
            assert sum(e.role == "main" and e.error is None for e in model) == row["requests"]
            assert sum(e.role != "main" and e.error is None for e in model) == row["summarizer_requests"]
            assert sum(e.error is not None for e in model) == row["failed_requests"]
            assert kinds["compaction"] == row["agent_resets"] + row["hard_resets"] + row["summaries"] + row["compactions"]
            assert kinds["tool"] == sum(e["type"] == "message" and e["message"]["role"] == "tool" for e in events)
            assert sum(e.event == "info" and e.source == "ctxbench/warning" for e in sample.events) == row["warnings"]
            usage = [e.output.usage for e in model if e.error is None]
            assert sum(u.input_tokens + u.input_tokens_cache_read + u.input_tokens_cache_write
                       for u in usage) == row["input_tokens"]
            assert sum(u.input_tokens_cache_read for u in usage) == row["cached_tokens"]
            assert sum(u.input_tokens_cache_write for u in usage) == row["cache_write_tokens"]
            assert sum(u.output_tokens for u in usage) == row["output_tokens"]
            assert sum(u.total_cost for u in usage) == pytest.approx(row["cost_usd"])
            assert sum(u.total_cost for u in sample.model_usage.values()) == pytest.approx(row["cost_usd"])
            score = sample.scores["checker"]
            assert score.value == row["score"] and (score.value == 1.0) == row["success"]
            assert [e.event for e in sample.events].count("score") == 1
            seen.update({"resets": row["agent_resets"], "hard": row["hard_resets"], "edits": row["compactions"],
                         "summaries": row["summarizer_requests"], "warnings": row["warnings"]})
    assert all(seen[name] for name in ("resets", "hard", "edits", "summaries", "warnings")), seen


def test_compaction_events_say_tokens_before_after_and_what_they_removed(exported):
    """A compaction event has tokens before and after; its metadata names the messages
    removed or replaced (id, role, tokens, first characters) and a summary's text."""
    _, out = exported
    compactions = [e for log in _logs(out) for s in log.samples for e in s.events if e.event == "compaction"]
    assert {e.type for e in compactions} >= {"summary", "edit"}
    for event in compactions:
        assert event.tokens_before > event.tokens_after >= 0
        touched = event.metadata["removed"]["messages"] + event.metadata.get("replaced", {}).get("messages", [])
        assert touched and all({"id", "role", "tokens", "head"} <= set(m) for m in touched)
        if event.metadata.get("kind") == "hard_reset":
            assert event.metadata["summary"].startswith("Summary of the earlier conversation")


def test_a_model_event_holds_the_view_as_sent_and_the_agents_reply(exported):
    """Ours (what a reader of the viewer expects): a main request's input is the view sent
    (as long as the log's view_len), its output the assistant message that followed it."""
    _, out = exported
    for log in _logs(out):
        for sample in log.samples:
            by_id = {m.id: m for m in sample.messages}
            for event in sample.events:
                if event.event == "model" and event.role == "main" and event.error is None:
                    assert len(event.input) == event.metadata["view_len"]
                    reply = event.output.message
                    assert reply.role == "assistant" and by_id[reply.id] is not None
                    assert event.output.stop_reason == ("tool_calls" if reply.tool_calls else "stop")


def test_samples_df_loads_one_row_per_run(exported):
    """Inspect's dataframes load the logs, one row per run, with ctxbench's metrics."""
    from inspect_ai.analysis import samples_df

    results, out = exported
    frame = samples_df(str(out))
    rows = read_runs(results)
    assert len(frame) == len(rows)
    assert sorted(frame["metadata_run_id"]) == sorted(row["run_id"] for row in rows)
    assert sorted(frame["metadata_cost_usd"]) == pytest.approx(sorted(row["cost_usd"] for row in rows))


def test_default_out_is_the_results_inspect_folder(exported, tmp_path):
    """Without --out the logs go to RESULTS_DIR/inspect/."""
    results, _ = exported
    assert main(["export", str(results), "--format", "inspect"]) == 0
    assert len(list((results / "inspect").glob("*.eval"))) == 3


@pytest.mark.parametrize("make, says", [
    (lambda tmp: tmp / "missing", "is not a directory"),
    (lambda tmp: tmp, "is not a results directory"),
])
def test_a_bad_results_dir_exits_2_naming_it(tmp_path, capsys, make, says):
    """The bad-input rule: a bad RESULTS_DIR is a ConfigError naming it (exit 2)."""
    assert main(["export", str(make(tmp_path)), "--format", "inspect"]) == 2
    err = capsys.readouterr().err
    assert says in err and str(make(tmp_path)) in err and "Traceback" not in err


def test_a_missing_event_log_exits_2_naming_the_file(exported, tmp_path, capsys):
    """Ours: a runs.jsonl row whose event log is gone is named, not a traceback."""
    results, _ = exported
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "runs.jsonl").write_text((results / "runs.jsonl").read_text())
    assert main(["export", str(copy), "--format", "inspect"]) == 2
    assert "event log of run" in capsys.readouterr().err


def test_without_the_extra_the_export_exits_2_naming_it(exported, monkeypatch, capsys):
    """A missing extra is a ConfigError naming `pip install -e '.[inspect]'`."""
    results, out = exported
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # import inspect_ai.log now raises ImportError
    assert main(["export", str(results), "--format", "inspect", "--out", str(out / "none")]) == 2
    assert INSTALL_HINT in capsys.readouterr().err
    assert not (out / "none").exists()


def test_exported_text_is_scrubbed_of_credentials():
    """Common rule (secrets): free text written from events passes through harness.core.secrets.scrub."""
    message = to_chat_message({"role": "user", "content": "see https://bob:hunter22secret@example.com/x"}, "1", "user")
    assert "hunter22secret" not in message.text and "example.com" in message.text



def test_run_inspect_log_rewrites_each_strategys_log_as_runs_finish(tmp_path):
    """`run --inspect-log` writes the logs as it goes: after each finished run its strategy's
    log holds the runs so far with status "started"; at the end every log is "success", holding what
    `ctxbench export` writes from the same directory."""
    from harness.results.exports.inspect import LiveInspectLogs

    results, logs = tmp_path / "live", tmp_path / "live-logs"
    live = LiveInspectLogs(results, logs)
    seen = []

    def watch(row):
        live(row)
        log = read_eval_log(str(live.logs.paths[row["strategy"]]))
        seen.append((row["strategy"], log.status, len(log.samples)))

    api.run("smoke", strategies="none,observation_masking", out=results, watch=watch)
    finished = [read_eval_log(str(path)) for path in live.finish()]
    runs = read_runs(results)
    assert len(seen) == len(runs) and {status for _, status, _ in seen} == {"started"}
    for label in ("none", "observation_masking"):
        assert [n for strategy, _, n in seen if strategy == label] == list(range(1, 1 + sum(
            row["strategy"] == label for row in runs)))
    assert [log.status for log in finished] == ["success", "success"]
    assert main(["export", str(results), "--format", "inspect", "--out", str(tmp_path / "export")]) == 0
    exported = {log.eval.solver: log for log in _logs(tmp_path / "export")}
    for log in finished:
        assert [(s.id, s.metadata) for s in log.samples] == [(s.id, s.metadata) for s in exported[log.eval.solver].samples]


def test_run_inspect_log_on_the_command_line(tmp_path, capsys):
    """`ctxbench run --inspect-log` (default DIR: RESULTS_DIR/inspect/)."""
    out = tmp_path / "run"
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--out", str(out), "--no-progress",
                 "--workers", "1", "--inspect-log"]) == 0
    (log,) = _logs(out / "inspect")
    assert log.status == "success" and len(log.samples) == len(read_runs(out))
    assert "inspect view --log-dir" in capsys.readouterr().out


def test_run_inspect_log_without_the_extra_exits_2_before_any_run(tmp_path, monkeypatch, capsys):
    """Without the extra, `run --inspect-log` stops naming it before any model call."""
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    out = tmp_path / "run"
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--out", str(out), "--no-progress",
                 "--inspect-log"]) == 2
    assert INSTALL_HINT in capsys.readouterr().err
    assert not (out / "runs.jsonl").exists()


def test_sweep_inspect_log_writes_one_log_per_grid_point(tmp_path):
    """Ours (sweep takes every option of run): a sweep's points are strategy labels, one log each."""
    out, logs = tmp_path / "sweep", tmp_path / "sweep-logs"
    assert main(["sweep", "--strategy", "observation_masking", "--grid", "keep_last=1,3", "--suite", "smoke",
                 "--family", "work_queue", "--limit", "1", "--no-progress", "--workers", "1", "--out", str(out),
                 "--inspect-log", str(logs)]) == 0
    assert sorted(log.eval.solver for log in _logs(logs)) == sorted({row["strategy"] for row in read_runs(out)})


def test_inspect_log_with_dry_run_exits_2(tmp_path, capsys):
    """Bad-input rule: --inspect-log logs a real run; with --dry-run it is refused, not ignored."""
    assert main(["run", "--suite", "smoke", "--dry-run", "--out", str(tmp_path / "d"), "--inspect-log"]) == 2
    assert "does not combine with --dry-run" in capsys.readouterr().err
