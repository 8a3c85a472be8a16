"""Hostile input through the command line: over-long paths, special files, deep nesting, YAML alias bombs,
results files cut short or ill-typed, values past the documented bounds. Each ends in exit 2 with a message
naming the file or option, no traceback, nothing already written touched; the internal-error report itself
never fails. A Hypothesis fuzzer feeds random and mutated task rows, strategy configs, traces and result rows."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.event_log_helpers import stored_lines, write_stored
from harness import cli
from harness.cli import main
from harness.results.layout import RUNS_FILE
from harness.core.user_files import MAX_DEPTH, MAX_YAML_ALIASES
from cli_helpers import deny_open, drawn_log, exit_code

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ["run", "--suite", "smoke", "--strategies", "none", "--limit", "1", "--workers", "1", "--no-progress"]
LONG = "a" * 300  # a path component past NAME_MAX (255)
DEEP = "[" * 200_000 + "]" * 200_000
TRACE = ROOT / "tests" / "fixtures" / "traces" / "openai" / "single.json"




def refused(capsys, argv: list[str], *fragments: str) -> str:
    """Run the CLI: exit 2, every fragment in stderr, no traceback, no internal error."""
    code = exit_code(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    for fragment in fragments:
        assert fragment in err, err
    return err


def snapshot(directory: Path) -> dict[Path, bytes]:
    return {p.relative_to(directory): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and p.name != ".lock"}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A small finished results directory (smoke, one task per family, strategy none)."""
    out = tmp_path_factory.mktemp("finished") / "r"
    assert main([*SMOKE, "--out", str(out)]) == 0
    return out


@pytest.fixture
def results_copy(finished, tmp_path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(finished, copy)
    return copy


def rewrite_row(results: Path, index: int, **fields) -> None:
    lines = (results / RUNS_FILE).read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[index])
    row.update(fields)
    lines[index] = json.dumps(row)  # NaN as the json module writes it
    (results / RUNS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")


# --- the internal-error report never fails itself ---

def _bug(*args, **kwargs):
    raise RuntimeError("a bug of ours")


def _no_write(*args, **kwargs):
    raise OSError(28, "No space left on device")


def test_the_internal_error_report_falls_back_to_a_temp_file_when_the_results_dir_refuses_it(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("harness.api.run", _bug)
    monkeypatch.setattr(Path, "write_text", _no_write)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    out = tmp_path / "r"
    out.mkdir()
    assert main([*SMOKE, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    saved = list(tmp_path.glob("ctxbench-internal-error-*"))
    assert "Traceback" not in err and len(saved) == 1 and f"traceback saved to {saved[0]}" in err


def test_the_internal_error_report_is_a_one_line_note_when_no_file_can_be_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("harness.api.run", _bug)
    monkeypatch.setattr(Path, "write_text", _no_write)
    monkeypatch.setattr(tempfile, "mkstemp", _no_write)
    out = tmp_path / "r"
    out.mkdir()
    assert main([*SMOKE, "--out", str(out)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["ctxbench: internal error: RuntimeError: a bug of ours",
                     "ctxbench: traceback not saved (No space left on device); please report it"]


def test_the_internal_error_report_survives_a_failure_of_its_own(tmp_path, capsys, monkeypatch):
    """Formatting the traceback itself fails: still one note, no second traceback."""
    monkeypatch.setattr("harness.api.run", _bug)
    monkeypatch.setattr("traceback.format_exception", _bug)
    assert main([*SMOKE, "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "ctxbench: internal error: RuntimeError" in err and "traceback not saved (reporting it failed" in err


def test_the_internal_error_report_survives_a_results_dir_the_os_refuses_to_look_at(tmp_path, capsys, monkeypatch):
    def too_long(self):
        raise OSError(36, "File name too long", str(self))
    monkeypatch.setattr("harness.api.run", _bug)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    out = tmp_path / "r"
    monkeypatch.setattr(Path, "is_dir", too_long)
    assert cli._internal_error(RuntimeError("a bug of ours"), cli.build_parser().parse_args(
        [*SMOKE, "--out", str(out)])) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "traceback saved to" in err


# --- over-long path components, special and unreadable files ---

@pytest.mark.parametrize("argv, option", [
    ([*SMOKE, "--out", f"/tmp/{LONG}/x"], "--out"),
    (["report", f"/tmp/{LONG}"], "results_dir"),
    (["traces", str(TRACE), "--out", f"/tmp/{LONG}"], "--out"),
    (["run", "--resume", f"/tmp/{LONG}"], "--resume"),
    ([*SMOKE, "--cache", f"/tmp/{LONG}", "--out", "{tmp}/r"], "--cache"),
    (["run", "--tasks", f"/tmp/{LONG}.jsonl", "--out", "{tmp}/r"], "--tasks"),
])
def test_a_path_component_over_the_name_limit_exits_2_naming_the_option(tmp_path, capsys, no_model_calls,
                                                                        argv, option):
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    refused(capsys, argv, f"argument {option}: a path component is 30", "file names have at most 255")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("make, message", [
    (lambda tmp: str(tmp), "cannot read: Is a directory"),
    (lambda tmp: (os.mkfifo(tmp / "fifo.json"), str(tmp / "fifo.json"))[1], "cannot read: not a regular file"),
    (lambda tmp: "/dev/zero", "/dev/zero: cannot read: not a regular file"),
    (lambda tmp: f"{tmp}/{LONG}.yaml", "a path component is 305 bytes long"),
])
def test_a_special_file_as_strategy_config_exits_2_at_once(tmp_path, capsys, no_model_calls, make, message):
    """A FIFO used to block the open and /dev/zero to read forever."""
    refused(capsys, [*SMOKE, "--strategy-config", make(tmp_path), "--out", str(tmp_path / "r")],
            "--strategy-config", message)


def test_a_strategy_config_the_os_refuses_to_open_exits_2(tmp_path, capsys, no_model_calls, monkeypatch):
    """Permission denied (made to fail at the open: tests may run as root, who reads any file)."""
    path = tmp_path / "config.yaml"
    path.write_text("none: {}\n")
    deny_open(monkeypatch, path)
    refused(capsys, [*SMOKE, "--strategy-config", str(path), "--out", str(tmp_path / "r")],
            f"--strategy-config: {path}: cannot read: Permission denied")


def test_a_path_the_file_system_refuses_mid_command_exits_2_naming_it(tmp_path, capsys, monkeypatch):
    """An OSError on a path (not allowed, read-only, full...) is the user's file system saying no, not a bug."""
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "r" / "summary.csv"))
    monkeypatch.setattr("harness.api.run", refuse)
    refused(capsys, [*SMOKE, "--out", str(tmp_path / "r")],
            f"ctxbench: error: {tmp_path}/r/summary.csv: Permission denied")


# --- deep nesting ---

def test_a_task_file_nested_200000_deep_exits_2_naming_the_line(tmp_path, capsys, no_model_calls):
    path = tmp_path / "tasks.jsonl"
    path.write_text(DEEP + "\n")
    refused(capsys, ["run", "--tasks", str(path), "--out", str(tmp_path / "r")],
            f"{path}:1: nested 200000 arrays/objects deep; at most {MAX_DEPTH}")


@pytest.mark.parametrize("name", ["deep.json", "deep.jsonl"])
def test_a_trace_file_nested_200000_deep_exits_2_naming_it(tmp_path, capsys, no_model_calls, name):
    path = tmp_path / name
    path.write_text(DEEP + "\n")
    refused(capsys, ["traces", str(path), "--out", str(tmp_path / "r")], str(path), "nested 200000 arrays/objects")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name, text", [
    ("deep.yaml", "[" * 5000 + "]" * 5000),
    ("deep.json", '{"none": ' + "[" * 5000 + "]" * 5000 + "}"),
])
def test_a_strategy_config_nested_deep_exits_2(tmp_path, capsys, no_model_calls, name, text):
    path = tmp_path / name
    path.write_text(text)
    refused(capsys, [*SMOKE, "--strategy-config", str(path), "--out", str(tmp_path / "r")], str(path), "deep")


def test_nesting_up_to_the_bound_is_accepted_and_one_more_is_refused():
    from harness.core.errors import ConfigError
    from harness.core.user_files import parse_json, parse_yaml

    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x") is not None
    assert parse_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x") is not None
    assert parse_json('"[[[[" ', "x") == "[[[["  # brackets in strings do not count
    for parse in (parse_json, parse_yaml):
        with pytest.raises(ConfigError, match="deep"):
            parse("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "x")


@pytest.mark.parametrize("command", ["report", "replay"])
def test_an_event_log_nested_200000_deep_exits_2_naming_file_and_line(results_copy, capsys, command):
    log = drawn_log(results_copy)  # a log the report reads
    first = stored_lines(log)[0]
    write_stored(log, first + "\n" + DEEP + "\n")
    refused(capsys, [command, str(results_copy)], f"{log}:2: nested 200000 arrays/objects deep")


def test_a_fifo_as_event_log_exits_2_without_waiting(tmp_path, capsys):
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    refused(capsys, ["replay", str(fifo)], f"{fifo}: cannot read event log: not a regular file")


# --- YAML aliases ---

BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in zip("abcdefgh", "bcdefghi"))


def test_a_yaml_alias_bomb_as_strategy_config_exits_2_within_seconds(tmp_path):
    """It spun at 100% CPU with no output. A subprocess, so that a hang is a timeout, not a stuck test run."""
    path = tmp_path / "bomb.yaml"
    path.write_text(BILLION_LAUGHS)
    done = subprocess.run([sys.executable, "-m", "harness.cli", *SMOKE, "--strategy-config", str(path),
                           "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr
    assert f"--strategy-config: {path}: expands to more than" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("text, message", [
    ("a: &a [*a]", "an alias refers to a node that contains it"),
    ("a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_YAML_ALIASES + 1)) + "]", f"more than {MAX_YAML_ALIASES} aliases"),
])
def test_a_cyclic_or_alias_heavy_yaml_file_exits_2(tmp_path, capsys, no_model_calls, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    refused(capsys, [*SMOKE, "--strategy-config", str(path), "--out", str(tmp_path / "r")], str(path), message)


def test_yaml_with_a_few_aliases_still_loads():
    from harness.core.user_files import parse_yaml

    assert parse_yaml("base: &b {keep_last: 3}\nnone: {}\nobservation_masking: *b\n", "x") == {
        "base": {"keep_last": 3}, "none": {}, "observation_masking": {"keep_last": 3}}


# --- results files cut short or ill-typed ---

def test_report_of_a_config_json_cut_short_exits_2_naming_it_and_writes_nothing(results_copy, capsys):
    config = results_copy / "config.json"
    config.write_text(config.read_text()[:200])
    before = snapshot(results_copy)
    refused(capsys, ["report", str(results_copy)], f"{config}: not valid JSON (Unterminated string")
    assert snapshot(results_copy) == before


@pytest.mark.parametrize("fields, message", [
    ({"success": "maybe"}, "field 'success' is 'maybe', not true or false"),
    ({"cost_usd": math.nan}, "field 'cost_usd' is nan, not a finite number"),
    ({"input_tokens": 1e30}, "field 'input_tokens' is 1e+30, not a finite number"),
    ({"seed": 2**64}, "field 'seed' is 18446744073709551616, not an integer in [0, 2**63 - 1]"),
    ({"strategy": 3}, "field 'strategy' is 3, not a string"),
])
@pytest.mark.parametrize("command", ["report", "resume"])
def test_an_ill_typed_row_exits_2_naming_file_line_and_field_and_touches_nothing(results_copy, capsys,
                                                                                 no_model_calls, fields, message,
                                                                                 command):
    rewrite_row(results_copy, 1, **fields)
    before = snapshot(results_copy)
    argv = ["report", str(results_copy)] if command == "report" else ["run", "--resume", str(results_copy),
                                                                       "--no-progress"]
    refused(capsys, argv, f"{results_copy / RUNS_FILE}", "line 2", message)
    assert snapshot(results_copy) == before


@pytest.mark.parametrize("runs, message", [(None, "runs.jsonl does not exist"), ("", "runs.jsonl holds no run")])
def test_report_of_a_directory_without_runs_exits_2_and_writes_nothing(results_copy, capsys, runs, message):
    if runs is None:
        (results_copy / RUNS_FILE).unlink()
    else:
        (results_copy / RUNS_FILE).write_text(runs)
    before = snapshot(results_copy)
    refused(capsys, ["report", str(results_copy)], message, "nothing to report")
    assert snapshot(results_copy) == before


def test_resume_with_nothing_left_says_no_run_was_made(results_copy, capsys, no_model_calls):
    total = len((results_copy / RUNS_FILE).read_text().splitlines())
    assert main(["run", "--resume", str(results_copy), "--no-progress"]) == 0
    assert f"0 runs: all {total} were already done -> {results_copy}/" in capsys.readouterr().out


# --- values past the documented bounds ---

@pytest.mark.parametrize("argv, message", [
    (["--seeds", str(2**63)], "argument --seeds: expected non-negative integers of at most 2**63 - 1"),
    (["--workers", "100000"], f"argument --workers: expected at most {cli.MAX_WORKERS} worker processes"),
    (["--window", str(10**12)], "argument --window: expected at most 1,000,000,000 tokens"),
    (["--strategies", "clear_tool_uses", "--strategy-config", json.dumps({"clear_tool_uses": {"trigger": 10**38}})],
     "clear_tool_uses.trigger: expected an integer within +-(2**63 - 1)"),
    (["--strategies", "clear_tool_uses", "--strategy-config", json.dumps({"clear_tool_uses": {"trigger": 10**12}})],
     "clear_tool_uses.trigger: 1,000,000,000,000 tokens is more than any model holds; at most 1,000,000,000"),
    (["--strategies", "compaction_ladder", "--strategy-config",
      '{"compaction_ladder": {"target_tokens": 1e309}}'], "expected an integer"),
    (["--mock-knobs", '{"narrate": NaN}'], "expected a finite number"),
])
def test_a_value_past_its_documented_bound_exits_2(tmp_path, capsys, no_model_calls, argv, message):
    argv = [*SMOKE, "--out", str(tmp_path / "r"), *argv]
    refused(capsys, argv, message)
    assert not (tmp_path / "r").exists()


def test_the_bounds_themselves_are_accepted():
    args = cli.build_parser().parse_args([*SMOKE, "--seeds", f"0,{2**63 - 1}", "--workers", str(cli.MAX_WORKERS),
                                          "--window", str(10**9)])
    assert args.seeds == [0, 2**63 - 1] and args.workers == cli.MAX_WORKERS and args.window == [10**9]


# --- property-based: random and mutated files never end in exit 1 or a traceback ---

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12)
TASK_ROW = {"task_id": "fuzz-1", "family": "chained_lookup", "seed": 0, "params": {"hops": 2}}
TRACE_RECORD = {"id": "fuzz", "messages": json.loads(TRACE.read_text())}
FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
FUZZ_SLOW = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def mutated(draw, valid):
    """`valid` with one value replaced by a random one, one removed or a random one added, at the top or up
    to three levels down (through objects and lists); or a random value outright."""
    if draw(st.integers(0, 4)) == 0:
        return draw(JSON_VALUES)
    value = json.loads(json.dumps(valid))
    target = value
    for _ in range(draw(st.integers(0, 3))):
        children = [item for item in (target.values() if isinstance(target, dict) else target)
                    if isinstance(item, (dict, list)) and item]
        if not children:
            break
        target = draw(st.sampled_from(children))
    slots = sorted(target) if isinstance(target, dict) else list(range(len(target)))
    action = draw(st.sampled_from(["replace", "remove", "add"]))
    if action == "add" or not slots:
        if isinstance(target, dict):
            target[draw(st.text(max_size=12))] = draw(JSON_VALUES)
        else:
            target.append(draw(JSON_VALUES))
    elif action == "remove":
        del target[draw(st.sampled_from(slots))]
    else:
        target[draw(st.sampled_from(slots))] = draw(JSON_VALUES)
    return value


def assert_clean_exit(capsys, argv: list[str]) -> None:
    """Exit 0, or exit 2 with a `ctxbench: error:` / usage message; never 1 or a traceback."""
    code = exit_code(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    assert code == 0 or (code == 2 and "error:" in err), (code, err)


def _fuzz_task_row(tmp_path, capsys, value) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(value) + "\n")
    task_id = value.get("task_id") if isinstance(value, dict) and isinstance(value.get("task_id"), str) else "x"
    assert_clean_exit(capsys, ["tasks", "show", task_id, "--suite", str(path)])


def _fuzz_strategy_config(tmp_path, capsys, value) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(value))
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    assert_clean_exit(capsys, ["run", "--suite", "smoke", "--family", "chained_lookup", "--limit", "1",
                               "--strategies", "observation_masking,clear_tool_uses", "--strategy-config", str(path),
                               "--max-requests", "2", "--executor", "in_process", "--no-progress", "--out", str(out)])


def _fuzz_trace(tmp_path, capsys, value) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(value))
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    assert_clean_exit(capsys, ["traces", str(path), "--format", "openai", "--no-progress", "--out", str(out)])


CONFIGS = {"observation_masking": {"keep_last": 3}, "clear_tool_uses": {"trigger": 1000, "keep": 2}}


@given(value=mutated(TASK_ROW))
@FUZZ
def test_fuzzed_task_rows_exit_0_or_2(tmp_path, capsys, value):
    _fuzz_task_row(tmp_path, capsys, value)


@given(value=mutated(CONFIGS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_strategy_configs_exit_0_or_2(tmp_path, capsys, value):
    """Fewer examples: a config that passes runs its one task (~0.35 s)."""
    _fuzz_strategy_config(tmp_path, capsys, value)


@given(value=mutated(TRACE_RECORD))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_trace_records_exit_0_or_2(tmp_path, capsys, value):
    """Fewer examples: a trace that passes is replayed and reported (~0.3 s)."""
    _fuzz_trace(tmp_path, capsys, value)


@pytest.fixture(scope="module")
def one_run(tmp_path_factory) -> Path:
    """A results directory of one run: the quickest to report on."""
    out = tmp_path_factory.mktemp("one") / "r"
    assert main([*SMOKE, "--family", "chained_lookup", "--out", str(out)]) == 0
    return out


ROW_FIELDS = st.dictionaries(st.sampled_from(["success", "cost_usd", "input_tokens", "seed", "strategy", "task_id",
                                              "family", "score", "termination", "run_id", "requests", "detail"]),
                             JSON_VALUES, min_size=1, max_size=3)


def _fuzz_result_row(one_run, tmp_path, capsys, fields) -> None:
    copy = tmp_path / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(one_run, copy)
    rewrite_row(copy, 0, **fields)
    assert_clean_exit(capsys, ["report", str(copy)])


@given(fields=ROW_FIELDS)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_result_rows_exit_0_or_2_on_report(one_run, tmp_path, capsys, fields):
    """Fewer examples: a report that passes the checks draws its plots (~1 s each)."""
    _fuzz_result_row(one_run, tmp_path, capsys, fields)


@pytest.mark.slow
@given(fields=ROW_FIELDS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_result_rows_exit_0_or_2_on_report_at_length(one_run, tmp_path, capsys, fields):
    _fuzz_result_row(one_run, tmp_path, capsys, fields)


@pytest.mark.slow
@given(value=mutated(TASK_ROW))
@FUZZ_SLOW
def test_fuzzed_task_rows_exit_0_or_2_at_length(tmp_path, capsys, value):
    _fuzz_task_row(tmp_path, capsys, value)


@pytest.mark.slow
@given(value=mutated(CONFIGS))
@FUZZ_SLOW
def test_fuzzed_strategy_configs_exit_0_or_2_at_length(tmp_path, capsys, value):
    _fuzz_strategy_config(tmp_path, capsys, value)


@pytest.mark.slow
@given(value=mutated(TRACE_RECORD))
@FUZZ_SLOW
def test_fuzzed_trace_records_exit_0_or_2_at_length(tmp_path, capsys, value):
    _fuzz_trace(tmp_path, capsys, value)
