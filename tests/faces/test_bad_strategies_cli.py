"""Bad strategies, CLI values and files ("Every bad input exits 2"): each ends in exit 2 with a
message naming what and where, before any model call and before config.json is written, and with no
traceback; an internal error (a bug of ours) prints one line and keeps its traceback in a file (exit 1)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.event_log_helpers import stored_bytes, write_stored
from harness import cli
from harness.cli import main
from cli_helpers import drawn_log, exit_code

SMOKE = ["run", "--suite", "smoke", "--workers", "1", "--no-progress"]




def assert_refused(capsys, code: int, message: str, out: Path | None = None) -> str:
    """Exit 2, the message on stderr, no traceback, and nothing a --resume would trust in `out`."""
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err
    assert "Traceback" not in err
    if out is not None:
        assert not (out / "config.json").exists() and not (out / "runs.jsonl").exists()
    return err


@pytest.fixture
def unwritable(tmp_path) -> Path:
    """A directory nothing can be created in (root ignores modes, so then /sys, which refuses even root)."""
    if os.geteuid() == 0:
        if not Path("/sys").is_dir():
            pytest.skip("no unwritable directory for root on this machine")
        return Path("/sys")
    path = tmp_path / "read-only"
    path.mkdir()
    path.chmod(0o555)
    return path


def test_a_strategy_whose_module_has_a_syntax_error_exits_2(tmp_path, monkeypatch, capsys, no_model_calls):
    """A user module that cannot even be compiled is bad input, not a crash."""
    (tmp_path / "syntax_broken.py").write_text("def f(:\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "r"
    code = exit_code([*SMOKE, "--out", str(out), "--strategies", "syntax_broken:Anything"])
    assert_refused(capsys, code, "importing module 'syntax_broken' raised SyntaxError", out)


@pytest.mark.parametrize("strategies, message", [
    ("raises_on_import:Anything", "strategy 'raises_on_import:Anything': importing module 'raises_on_import' raised "
                                  "RuntimeError: this module is broken"),
    ("no_such_module_20:Strategy", "cannot import module 'no_such_module_20'"),
    ("broken:Missing", "broken:Missing is not a subclass of strategies.base.Strategy"),
    ("broken:NOT_A_CLASS", "broken:NOT_A_CLASS is not a subclass"),
    (":", "strategy ':': an import path names a module and a class"),
    ("broken:", "strategy 'broken:': an import path names a module and a class"),
    (",", "strategies: none named in ','"),
    ("", "strategies: none named in ''"),
    (" , ,", "strategies: none named"),
    ("broken:InitRaises", "strategy broken:InitRaises: InitRaises.__init__ raised ValueError: cannot start"),
    ("broken:ExitsOnInit", "strategy broken:ExitsOnInit: ExitsOnInit.__init__ raised SystemExit: 3"),
    ("broken:ToolsRaise", "strategy broken:ToolsRaise: ToolsRaise.tools raised KeyError"),
    ("broken:ProfilesRaise", "strategy broken:ProfilesRaise: ProfilesRaise.profiles_needed raised RuntimeError"),
    ("broken:NotDataclassConfig", "strategy 'broken:NotDataclassConfig': broken:NotDataclassConfig.Config must be a "
                                  "dataclass"),
])
def test_a_bad_strategy_exits_2_naming_it_and_the_method(tmp_path, capsys, no_model_calls, strategies, message):
    """Strategy modules that raise on import, missing modules or classes, empty import paths,
    no strategy named (`--strategies ,` ran nothing and exited 0), and strategy code raising while it is
    validated (its __init__, tools(), profiles_needed()) or a Config that is no dataclass."""
    out = tmp_path / "r"
    assert_refused(capsys, exit_code([*SMOKE, "--out", str(out), "--strategies", strategies]), message, out)


@pytest.mark.parametrize("argv, message", [
    (["--strategy-config", "[1]"], "--strategy-config (inline JSON): expected a mapping, got [1]"),
    (["--strategy-config", '{"none": 3}'], "strategy configs: none: expected a mapping of options, got 3"),
    (["--strategy-config", '{"none": [1]}'], "strategy configs: none: expected a mapping of options, got [1]"),
    (["--strategy-config", "{scalar}"], "--strategy-config (scalar.yaml): expected a mapping, got 3"),
    (["--strategy-config", "{missing}"], "--strategy-config: missing.yaml: cannot read"),
    (["--strategy-config", '{"none": {"with": [{"name": 3}]}}'], "strategy none.with[0]: expected {name, config}"),
    (["--strategy-config", '{"none": {"with": [{"name": "none", "config": 3}]}}'],
     "strategy none.with[0]: expected a mapping of options, got 3"),
    (["--profiles", '{"summary": 3}'], "profiles.summary: expected a mapping of options, got 3"),
    (["--profiles", "[1]"], "--profiles (inline JSON): expected a mapping, got [1]"),
    (["--profiles", "{scalar}"], "--profiles (scalar.yaml): expected a mapping, got 3"),
    (["--profiles", '{"summary": {"model": 3}}'], "profiles.summary.model: expected a string, got 3"),
    (["--profiles", '{"summary": {"model": "mock/summarizer", "mock": 3}}'],
     "profiles.summary.mock: expected a mapping, got 3"),
    (["--profiles", '{"summary": {"model": "mock/summarizer", "params": [1]}}'],
     "profiles.summary.params: expected a mapping"),
    (["--mock-knobs", "[0.5]"], "--mock-knobs (inline JSON): expected a mapping"),
    (["--clock", "{scalar}"], "--clock (scalar.yaml): expected a mapping"),
])
def test_a_non_object_strategy_config_or_profile_exits_2(tmp_path, capsys, no_model_calls, argv, message):
    """Non-object strategy configs and profiles (inline, in a YAML file holding a scalar,
    nested in a `with` list) and profile values of the wrong type; they crashed with a TypeError."""
    (tmp_path / "scalar.yaml").write_text("3\n", encoding="utf-8")
    argv = [arg.replace("{scalar}", str(tmp_path / "scalar.yaml")).replace("{missing}", str(tmp_path / "missing.yaml"))
            for arg in argv]
    message = message.replace("scalar.yaml", str(tmp_path / "scalar.yaml")).replace(
        "missing.yaml", str(tmp_path / "missing.yaml"))
    out = tmp_path / "r"
    assert_refused(capsys, exit_code([*SMOKE, "--strategies", "none", "--out", str(out), *argv]), message, out)


@pytest.mark.parametrize("hard_condenser, message", [
    ({"llm_profile_ref": "nosuch"}, "strategy agent_reset: LLM profile(s) ['nosuch'] are not defined"),
    ({"llm_profile_ref": ""}, "strategy agent_reset.hard_condenser: llm_profile_ref must name an LLM profile"),
    ({"condenser_kind": "nosuch"}, "strategy agent_reset.hard_condenser: condenser_kind must be one of"),
    ({"hard_context_reset_max_retries": "x"},
     "strategy agent_reset.hard_condenser.hard_context_reset_max_retries: expected an integer"),
])
def test_a_bad_hard_condenser_exits_2_naming_the_field(tmp_path, capsys, no_model_calls, hard_condenser, message):
    """The hard condenser uses an LLM profile of its own: a profile name that is
    not defined fails before any model call, not at the first overflow; and an error inside an optional
    block names the field (it said only "fits none of the allowed types")."""
    out = tmp_path / "r"
    config = {"agent_reset": {"hard_condenser": hard_condenser}}
    code = exit_code([*SMOKE, "--out", str(out), "--strategies", "agent_reset", "--strategy-config", json.dumps(config)])
    err = assert_refused(capsys, code, message, out)
    assert "fits none of the allowed types" not in err


@pytest.mark.parametrize("argv, message", [
    (["--out", "{file}"], "--out {file}: {file} is a file, not a directory"),
    (["--out", "{file}/sub"], "--out {file}/sub: {file} is a file, not a directory"),
    (["--out", "{unwritable}/r"], "--out {unwritable}/r: cannot write in {unwritable}"),
    (["--cache", "{file}"], "--cache {file}: {file} is a file, not a directory"),
    (["--cache", "{unwritable}/c"], "--cache {unwritable}/c: cannot write in {unwritable}"),
    (["--cache", "{garbage_cache}"], "responses.sqlite is not a response cache"),
    (["--baseline", "nosuch"], "baseline 'nosuch' is not among the strategies run: none"),
    (["--model", "mock/nosuch"], "profiles.main.model: unknown mock model 'mock/nosuch'"),
    (["--price-model", "nosuch-model"], "profiles.main: price_model 'nosuch-model' has no prices in litellm's cost map"),
    (["--profiles", '{"summary": {"model": "mock/summarizer", "mock": {"price_model": "nosuch-model"}}}'],
     "profiles.summary.mock: price_model 'nosuch-model' has no prices"),
    (["--window", "0"], "argument --window: expected a positive integer, got 0"),
    (["--window", "-5"], "argument --window: expected a positive integer, got -5"),
    (["--seeds", "x"], "argument --seeds: expected comma-separated integers, got 'x'"),
    (["--seeds", "-1"], "argument --seeds: expected non-negative integers"),
    (["--seeds", ","], "argument --seeds: expected non-negative integers"),
    (["--seeds", "0,0"], "argument --seeds: expected distinct integers, got '0,0'"),
])
def test_a_bad_cli_value_exits_2_before_any_model_call(tmp_path, capsys, no_model_calls, unwritable, argv, message):
    """--out or --cache that is a file or unwritable (tried by writing, before any model call;
    they crashed, or ran and failed later), a garbage response cache, a --baseline not among the strategies
    run, an unknown mock model or price model (all three were accepted), bad --window and --seeds (a seed
    given twice ran every cell twice under one run_id)."""
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    garbage_cache = tmp_path / "cache"
    garbage_cache.mkdir()
    (garbage_cache / "responses.sqlite").write_text("not a database", encoding="utf-8")
    names = {"{file}": str(afile), "{unwritable}": str(unwritable), "{garbage_cache}": str(garbage_cache)}
    for key, value in names.items():
        argv = [arg.replace(key, value) for arg in argv]
        message = message.replace(key, value)
    out = tmp_path / "r"
    given_out = "--out" in argv
    code = exit_code([*SMOKE, "--strategies", "none", *([] if given_out else ["--out", str(out)]), *argv])
    assert_refused(capsys, code, message, out)
    assert afile.read_text(encoding="utf-8") == "x"


@pytest.mark.parametrize("content, message", [
    (None, "cannot read: No such file or directory"),
    ("<dir>", "cannot read: Is a directory"),
    (b"\xff\xfe\x00grid", "not UTF-8 text"),
    ("strategy: [\n", "not valid YAML"),
    ("3\n", "expected a mapping with keys"),
    ("strategy: observation_masking\ngrid: [1]\n", "'grid' must be a mapping of dotted key to a list of values"),
    ("strategy: observation_masking\ngrid: {keep_last: 3}\n", "grid key 'keep_last': expected a non-empty list"),
    ("strategy: observation_masking\ngrid: {keep_last: []}\n", "grid key 'keep_last': expected a non-empty list"),
    ("strategy: observation_masking\ngrid: {}\n", "the grid is empty"),
    ("strategy: no_such_strategy\ngrid: {keep_last: [1]}\n", "unknown strategy 'no_such_strategy'"),
    ("strategy: observation_masking\nlabel: [1]\ngrid: {keep_last: [1]}\n", "the label must be a string, got [1]"),
    ("strategy: observation_masking\nconfig: 3\ngrid: {keep_last: [1]}\n", "the base config must be a mapping"),
    ("strategy: observation_masking\ngrid: {keep_last: [1]}\ncolour: red\n", "unknown key(s) ['colour']"),
])
def test_a_bad_sweep_grid_file_exits_2_naming_it(tmp_path, capsys, no_model_calls, content, message):
    """Grid files missing, a directory, not UTF-8, not YAML, not a mapping, a grid that is not
    a mapping (crashed), values that are no lists or empty lists, an unknown strategy, a label of the wrong type
    (was accepted)."""
    grid = tmp_path / "grid.yaml"
    if content == "<dir>":
        grid.mkdir()
    elif isinstance(content, bytes):
        grid.write_bytes(content)
    elif content is not None:
        grid.write_text(content, encoding="utf-8")
    out = tmp_path / "r"
    code = exit_code(["sweep", str(grid), "--suite", "smoke", "--workers", "1", "--no-progress", "--out", str(out)])
    assert_refused(capsys, code, message, out)


def test_a_sweep_baseline_must_be_a_point_or_an_also(tmp_path, capsys, no_model_calls):
    """`--baseline` of a sweep names a grid point or a strategy of --also."""
    out = tmp_path / "r"
    code = exit_code(["sweep", "--strategy", "observation_masking", "--grid", "keep_last=3", "--suite", "smoke",
                      "--workers", "1", "--no-progress", "--out", str(out), "--baseline", "none"])
    assert_refused(capsys, code, "baseline 'none' is not among the strategies run: observation_masking[keep_last=3]",
                   out)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A small finished results directory to corrupt copies of."""
    out = tmp_path_factory.mktemp("good") / "r"
    assert main([*SMOKE, "--strategies", "none", "--out", str(out)]) == 0
    return out


CORRUPTIONS = {
    "binary": (b"\xff\xfe\x00\x01garbage\n", ":1: not UTF-8 text"),
    "garbage": (b"not json at all\n", ":1: not a JSON event"),
    "scalar": (b"[1, 2]\n", ":1: not an event (a JSON object with a type), got list"),
    "second line": (None, ":2: not UTF-8 text"),
}


def _corrupt(results: Path, tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """A copy of `results` with one corrupt event log, one the report reads."""
    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    log = drawn_log(copy)
    data, _ = CORRUPTIONS[kind]
    if data is None:  # a valid first event, then bytes that are no UTF-8
        data = stored_bytes(log).split(b"\n")[0] + b"\n\xc3\x28\n"
    write_stored(log, data)
    return copy, log


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
@pytest.mark.parametrize("command", ["replay", "report"])
def test_replay_and_report_of_a_corrupt_event_log_exit_2_naming_file_and_line(results, tmp_path, capsys, command,
                                                                               kind):
    """Binary, non-UTF-8, garbage and non-object event logs ended replay and report in a
    traceback (UnicodeDecodeError, AttributeError)."""
    copy, log = _corrupt(results, tmp_path, kind)
    _, message = CORRUPTIONS[kind]
    assert_refused(capsys, exit_code([command, str(copy)]), f"{log}{message}")


@pytest.mark.parametrize("argv, message", [
    (["replay", "{tmp}/nosuch.jsonl"], "{tmp}/nosuch.jsonl: cannot read event log: No such file or directory"),
    (["replay", "{tmp}"], "replay: no event files in"),
    (["report", "{tmp}/nosuch"], "report: {tmp}/nosuch is not a directory"),
    (["report", "{tmp}"], "report: {tmp} is not a results directory (it has neither runs.jsonl nor config.json)"),
])
def test_replay_and_report_of_missing_files_exit_2(tmp_path, capsys, argv, message):
    """A missing event log crashed replay (FileNotFoundError); report on a directory that holds
    no results wrote an empty report and exited 0."""
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    assert_refused(capsys, exit_code(argv), message.replace("{tmp}", str(tmp_path)))
    assert not (tmp_path / "report.md").exists()


@pytest.mark.parametrize("events, problem", [
    ([{"id": 0, "type": "run_start"}], "the run_start event has no tools_hash"),
    ([{"id": 0, "type": "run_start", "tools_hash": "x"}, {"id": 1, "type": "message", "view_ops": 3}],
     "event 1: invalid message event or view operation"),
    ([{"id": 0, "type": "run_start", "tools_hash": "x"}, {"id": 1, "type": "message", "message": 3}],
     "event 1: invalid message event or view operation"),
])
def test_replay_of_a_malformed_event_is_a_mismatch_not_a_crash(tmp_path, capsys, events, problem):
    """Events of the wrong shape (a log not written by a run) are reported as the replay's
    mismatches (exit 1), where they raised KeyError/TypeError/AttributeError."""
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    assert main(["replay", str(log)]) == 1
    captured = capsys.readouterr()
    assert problem in captured.out and "Traceback" not in captured.err


def _fail(*args, **kwargs):
    raise RuntimeError(f"an internal bug near {os.environ['CTXBENCH_TEST_API_KEY']}\nsecond line")


@pytest.mark.parametrize("out_exists", [True, False])
def test_an_internal_error_prints_one_line_and_saves_the_traceback(tmp_path, capsys, monkeypatch, out_exists):
    """Ours (last resort): anything but bad input is an internal error: no traceback on
    stderr, one line naming its type and message (secrets scrubbed), the traceback saved under the results
    directory (a temp file when it does not exist yet), exit 1, never 0."""
    secret = "sk-test-internal-error-secret"
    monkeypatch.setenv("CTXBENCH_TEST_API_KEY", secret)
    monkeypatch.setattr("harness.api.run", _fail)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "r"
    if out_exists:
        out.mkdir()
    assert main([*SMOKE, "--strategies", "none", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert lines[0] == "ctxbench: internal error: RuntimeError: an internal bug near <redacted>"
    assert "Traceback" not in err and secret not in err and "second line" not in err
    saved = list(out.glob(cli.INTERNAL_ERROR_FILE.split("{")[0] + "*")) if out_exists else \
        list((tmp_path / "tmp").glob("ctxbench-internal-error-*"))
    assert len(saved) == 1 and str(saved[0]) in lines[1]
    text = saved[0].read_text(encoding="utf-8")
    assert "Traceback" in text and "_fail" in text and secret not in text


def test_keyboard_interrupt_prints_interrupted_and_exits_130(tmp_path, capsys, monkeypatch):
    """Ours (the shell's 128 + SIGINT): Ctrl-C is neither a traceback nor a success."""
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr("harness.api.run", interrupt)
    assert main([*SMOKE, "--strategies", "none", "--out", str(tmp_path / "r")]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "interrupted"


@pytest.mark.parametrize("option, typo, suggestion", [
    ("--price-model", "claude-sonet-4-6", "'claude-sonnet-4-6'"),
    ("--model", "mock/agnet", "'mock/agent'"),
    ("--baseline", "obsrvation_masking", "'observation_masking'"),
    ("--strategies", "hard_sumarize", "'hard_summarize'"),
])
def test_a_mistyped_name_exits_2_with_its_close_matches(tmp_path, capsys, no_model_calls, option, typo, suggestion):
    """An unknown price model, mock model, baseline or strategy exits 2 naming the closest
    names it could have meant (difflib), before any model call."""
    out = tmp_path / "out"
    code = exit_code(["run", "--suite", "smoke", option, typo, "--out", str(out), "--no-progress"])
    err = assert_refused(capsys, code, repr(typo), out)
    assert f"did you mean {suggestion}" in err


def test_a_name_like_no_choice_gets_no_suggestion():
    """A suggestion only when a name is close to a choice (no noise for a far-off name)."""
    from harness.core.errors import did_you_mean

    assert did_you_mean("zzzz", ["observation_masking", "none"]) == ""
    assert did_you_mean("nnoe", ["observation_masking", "none"]) == " (did you mean 'none'?)"
