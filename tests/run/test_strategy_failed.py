"""Outcomes that say who failed: a strategy giving up on its own terms ends its run `strategy_failed`
(its failure, not transient, never rerun), while a fault in a plug-in's code stays `error`."""
from harness.cli import main
from harness.conversation.events import event_log_name, read_events
from harness.results.layout import RUNS_FILE
from tests.run.test_contained_failures import run_matrix

GIVES_UP = "misbehaving:RaiseInHook"


def test_a_plugin_raising_strategy_failed_ends_its_runs_strategy_failed_not_transient(tmp_path, capsys):
    """StrategyFailed from a plug-in's hook: termination strategy_failed with its message, success false,
    not transient; the run_end event says the same; `none`'s runs are untouched."""
    code, rows = run_matrix(tmp_path, GIVES_UP, {"error": "StrategyFailed"})
    assert code == 0 and all(r["termination"] == "submitted" for r in rows["none"])
    for row in rows[GIVES_UP]:
        assert row["termination"] == "strategy_failed", row
        assert row["success"] is False and row["transient"] is False
        assert row["error"].startswith("StrategyFailed: raised by before_request")
        end = list(read_events(tmp_path / "r" / "events" / event_log_name(row['run_id'])))[-1]
        assert end["type"] == "run_end" and end["termination"] == "strategy_failed"


def test_a_plugin_raising_a_plain_exception_still_ends_error(tmp_path, capsys):
    """A plain exception from a plug-in's hook is a bug in its code: `error`, as before."""
    code, rows = run_matrix(tmp_path, GIVES_UP, {"error": "ValueError"})
    assert code == 0
    assert all(r["termination"] == "error" and r["error"].startswith("ValueError") for r in rows[GIVES_UP])


def test_resume_with_rerun_errors_does_not_rerun_strategy_failed_runs(tmp_path, capsys):
    """--resume --rerun-errors reruns `error` rows only: a strategy's own failure is a result, kept as it is."""
    run_matrix(tmp_path, GIVES_UP, {"error": "StrategyFailed"})
    before = (tmp_path / "r" / RUNS_FILE).read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["run", "--resume", str(tmp_path / "r"), "--rerun-errors", "--no-progress"]) == 0
    assert "rerunning" not in capsys.readouterr().err
    assert (tmp_path / "r" / RUNS_FILE).read_text(encoding="utf-8") == before

