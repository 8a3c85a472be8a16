"""Bad task files and suites; bounded knobs.

Every bad task file, row field or knob given with `--tasks`, `--suite` or `tasks show --suite` exits 2 with a
message naming the file, the line (JSONL) or row (Parquet) and the field, before any model call and before
anything is written to --out; no traceback reaches the user. Every knob of every family has a bound, checked
before the instance is generated, so validation never hangs.
"""
from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.conversation.events import event_log_name
from harness.cli import main
from harness.core.errors import ConfigError
from harness.run.runner import RUN_ID_MAX
from strategies import REGISTRY
from tasks import FAMILIES, family_module
from tasks.suites import TASK_ID_MAX
from cli_helpers import deny_open

GOOD = {"task_id": "t1", "family": "chained_lookup", "seed": 0, "params": {"hops": 2}}
RUN = ["run", "--strategies", "none", "--workers", "1", "--no-progress"]


pytestmark = pytest.mark.usefixtures("no_model_calls")


def refused(capsys, argv: list[str], out: Path | None, *expected: str) -> str:
    """Run the CLI in process: exit 2, one `ctxbench: error:` line holding every `expected` text, no traceback,
    nothing written to `out`."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxbench: error: ") and "Traceback" not in err, err
    for text in expected:
        assert text in err, (text, err)
    if out is not None:
        assert not (out / "config.json").exists() and not (out / "runs.jsonl").exists()
    return err


def write_rows(tmp_path: Path, kind: str, rows: list[Any]) -> Path:
    """A task file of `rows`: JSONL lines, or a Parquet table (pandas infers the column types)."""
    path = tmp_path / f"tasks.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    else:
        pd.DataFrame(rows).to_parquet(path)
    return path


# (kind, corruption) -> (file bytes, expected text after the path). The JSONL's good first line shows that the
# line named is the bad one.
def corrupt_file(tmp_path: Path, kind: str, corruption: str) -> tuple[bytes, str]:
    good_line = json.dumps(GOOD).encode() + b"\n"
    if kind == "jsonl":
        return {
            "empty": (b"", ": no task rows"),
            "whitespace_only": (b"  \n\t\n\r\n", ": no task rows"),
            "binary": (bytes(range(256)) * 4, ":1: a binary file"),
            "non_utf8": (good_line + b'{"task_id": "caf\xe9", "family": "chained_lookup", "seed": 0}\n',
                         ":2: not UTF-8 text (byte 0xe9"),
            "scalar_row": (good_line + b"3\n", ":2: a row must be an object, got a int"),
            "list_row": (good_line + b'["t2", "chained_lookup", 0]\n', ":2: a row must be an object, got a list"),
            "zero_rows": (b"\n\n\n", ": no task rows"),
            "truncated": (good_line + json.dumps({**GOOD, "task_id": "t2"}).encode()[:25],
                          ":2: not valid JSON (Unterminated string"),
        }[corruption]
    parquet = _parquet_bytes(tmp_path, pd.DataFrame([GOOD, {**GOOD, "task_id": "t2"}]))
    unreadable = ": not a readable Parquet file"
    return {
        "empty": (b"", unreadable),
        "whitespace_only": (b"  \n\t\n", unreadable),
        "binary": (bytes(range(256)) * 4, unreadable),
        "non_utf8": (b"caf\xe9\n" * 50, unreadable),
        "scalar_row": (_parquet_bytes(tmp_path, pd.DataFrame({"value": [3, 4]})), " row 1: unknown field(s) value"),
        "list_row": (_parquet_bytes(tmp_path, pd.DataFrame({"value": [["t2", "chained_lookup"]]})),
                     " row 1: unknown field(s) value"),
        "zero_rows": (_parquet_bytes(tmp_path, pd.DataFrame(
            {"task_id": pd.Series([], dtype=str), "family": pd.Series([], dtype=str),
             "seed": pd.Series([], dtype="int64")})), ": no task rows"),
        "truncated": (parquet[: len(parquet) // 2], unreadable),
    }[corruption]


def _parquet_bytes(tmp_path: Path, frame: pd.DataFrame) -> bytes:
    scratch = tmp_path / "scratch.parquet"
    frame.to_parquet(scratch)
    return scratch.read_bytes()


CORRUPTIONS = ("empty", "whitespace_only", "binary", "non_utf8", "scalar_row", "list_row", "zero_rows", "truncated")


@pytest.mark.parametrize("corruption", CORRUPTIONS)
@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
@pytest.mark.parametrize("option", ["--tasks", "--suite", "tasks show"])
def test_a_corrupt_task_file_exits_2_naming_file_and_line(tmp_path, capsys, kind, corruption, option):
    """Empty, whitespace-only, binary, non-UTF-8, scalar- or list-row, zero-row and truncated
    task files (JSONL and Parquet) exit 2 naming the file and the line or row; before, most ended in a traceback."""
    data, expected = corrupt_file(tmp_path, kind, corruption)
    path = tmp_path / f"bad.{kind}"
    path.write_bytes(data)
    out = tmp_path / "r"
    argv = ["tasks", "show", "t1", "--suite", str(path)] if option == "tasks show" else \
        [*RUN, option, str(path), "--out", str(out)]
    refused(capsys, argv, out, f"{path}{expected}")


@pytest.mark.parametrize("name, make, expected", [
    ("missing.jsonl", None, "missing.jsonl: no such task file"),
    ("missing.parquet", None, "missing.parquet: no such task file"),
    ("tasks", "file", "a task file's name ends in .jsonl, .json, .parquet (its format), this one has no suffix"),
    ("tasks.csv", "file", "this one has suffix '.csv'"),
    ("folder.jsonl", "dir", "folder.jsonl: is a directory"),
    ("folder", "dir", "folder: is a directory"),
])
@pytest.mark.parametrize("option", ["--tasks", "--suite", "tasks show"])
def test_a_missing_suffixless_or_directory_path_exits_2(tmp_path, capsys, name, make, expected, option):
    """A missing path, a path without a task-file suffix, a directory: exit 2 naming it."""
    path = tmp_path / name
    if make == "file":
        path.write_text(json.dumps(GOOD) + "\n")
    elif make == "dir":
        path.mkdir()
    out = tmp_path / "r"
    argv = ["tasks", "show", "t1", "--suite", str(path)] if option == "tasks show" else \
        [*RUN, option, str(path), "--out", str(out)]
    refused(capsys, argv, out, expected)


def test_a_missing_path_that_is_no_hub_id_names_the_suites(tmp_path, capsys):
    """Ours: an absolute path to nothing is not taken for a hub id; the error lists the suites."""
    out = tmp_path / "r"
    refused(capsys, [*RUN, "--suite", str(tmp_path / "no" / "such"), "--out", str(out)], out,
            "unknown suite", "known suites: default, long, smoke")


@pytest.mark.parametrize("option", ["--tasks", "--suite", "tasks show"])
def test_an_offline_hub_id_exits_2_saying_it_could_not_be_loaded(tmp_path, capsys, monkeypatch, option):
    """Machines are offline, so `datasets` raises a ConnectionError for a hub id; the error
    says the id could not be loaded and that the machine is offline or the id unknown (was a traceback)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r"
    argv = ["tasks", "show", "t1", "--suite", "someorg/no-such-tasks"] if option == "tasks show" else \
        [*RUN, option, "someorg/no-such-tasks", "--out", str(out)]
    refused(capsys, argv, out, "hub dataset 'someorg/no-such-tasks' could not be loaded", "offline",
            "or the id is unknown", "ConnectionError")


# Row fields: (bad row, field named, message). Each is written as the second JSONL line and as a one-row Parquet.
BAD_FIELDS = [
    ({"task_id": 7}, "field 'task_id' must be a non-empty string, got 7"),
    ({"task_id": ""}, "field 'task_id' must be a non-empty string"),
    ({"task_id": "x" * (TASK_ID_MAX + 1)}, f"field 'task_id' is {TASK_ID_MAX + 1} characters long; at most {TASK_ID_MAX}"),
    ({"task_id": "a b/c"}, "field 'task_id' 'a b/c' may hold only letters, digits"),
    ({"family": 3}, "field 'family' must be a string, got 3"),
    ({"family": "no_family"}, "field 'family': unknown task family 'no_family'"),
    ({"seed": "x"}, "field 'seed' must be an integer in [0, 2**63 - 1], got 'x'"),
    ({"seed": 1.5}, "field 'seed' must be an integer"),
    ({"seed": True}, "field 'seed' must be an integer in [0, 2**63 - 1], got True"),
    ({"seed": -1}, "field 'seed' must be an integer"),
    ({"params": 5}, "field 'params' must be an object of knobs, got 5"),
    ({"params": [1, 2]}, "field 'params' must be an object of knobs"),
    ({"params": "[1]"}, "field 'params' must be an object of knobs"),
    ({"params": "{oops"}, "field 'params' is not a JSON object"),
    ({"params": {"colour": 1}}, "field params: unknown key(s) 'colour'"),
    ({"params": {"hops": "many"}}, "field params.hops: expected an integer, got 'many'"),
    ({"params": {"hops": True}}, "field params.hops: expected an integer, got True"),
    ({"max_requests": True}, "field 'max_requests' must be an integer in [1, 2**63 - 1], got True"),
    ({"max_requests": 0}, "field 'max_requests' must be an integer in [1"),
    ({"max_requests": 2.0}, "field 'max_requests' must be an integer"),
    ({"pinned": "yes"}, "field 'pinned' must be true or false, got 'yes'"),
    ({"colour": "red"}, "unknown field(s) colour"),
]


@pytest.mark.parametrize("change, message", BAD_FIELDS, ids=[m[:40] for _, m in BAD_FIELDS])
@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_a_bad_row_field_exits_2_naming_line_and_field(tmp_path, capsys, kind, change, message):
    """Every field of tasks.suites.TaskRow is checked (type and range; `max_requests: true` was
    taken as 1, a non-string family was a TypeError); the error names the file, the line or row and the field."""
    bad = {**GOOD, "task_id": "t2", **change}
    rows = [GOOD, bad] if kind == "jsonl" else [bad]
    path = write_rows(tmp_path, kind, rows)
    where = f"{path}:2: " if kind == "jsonl" else f"{path} row 1: "
    out = tmp_path / "r"
    refused(capsys, [*RUN, "--tasks", str(path), "--out", str(out)], out, where + message)


def test_a_huge_integer_seed_is_refused(tmp_path, capsys):
    """Ours: a seed beyond 64 bits would be written to runs.jsonl, which pandas reads as 64-bit integers."""
    path = write_rows(tmp_path, "jsonl", [{**GOOD, "seed": 2**64}])
    out = tmp_path / "r"
    refused(capsys, [*RUN, "--tasks", str(path), "--out", str(out)], out, f"{path}:1: field 'seed' must be an integer")


def test_a_230_character_task_id_is_refused_before_config_json(tmp_path, capsys):
    """A 230-character task_id made an event file name beyond the file system's 255 bytes, so
    the run failed after config.json was written; it is refused at load, naming the bound."""
    path = write_rows(tmp_path, "jsonl", [{**GOOD, "task_id": "t" * 230}])
    out = tmp_path / "r"
    refused(capsys, [*RUN, "--tasks", str(path), "--out", str(out)], out,
            f"{path}:1: field 'task_id' is 230 characters long; at most {TASK_ID_MAX}")


def test_task_id_max_leaves_room_for_every_registered_label_and_runs(tmp_path, capsys):
    """Ours: TASK_ID_MAX is derived from the 255-byte file-name limit and run_id_for's format: with the longest
    registered strategy name and a 10-digit seed the run id fits, and a task_id of TASK_ID_MAX runs."""
    longest = max(map(len, REGISTRY))
    assert TASK_ID_MAX + len("--") + longest + len("--s") + 10 <= RUN_ID_MAX
    task_id = "t" * TASK_ID_MAX
    path = write_rows(tmp_path, "jsonl", [{**GOOD, "task_id": task_id}])
    out = tmp_path / "r"
    assert main([*RUN, "--tasks", str(path), "--out", str(out), "--mock-knobs", '{"narrate": 0}']) == 0
    assert (out / "events" / event_log_name(f"{task_id}--none--s0")).exists()


def test_a_run_id_beyond_the_file_name_limit_is_refused_before_anything_is_written(tmp_path):
    """A long strategy label with a long task_id would overflow the event file's name; the
    matrix is refused (ConfigError naming task, strategy and the limit) before config.json."""
    from harness.api import run
    from strategies import StrategySpec

    path = write_rows(tmp_path, "jsonl", [{**GOOD, "task_id": "t" * TASK_ID_MAX}])
    with pytest.raises(ConfigError, match=rf"strategy {'L' * 150} x seed 0: .* at most {RUN_ID_MAX}"):
        run(str(path), strategies=[StrategySpec("none", label="L" * 150)], out=tmp_path / "r")
    assert not (tmp_path / "r" / "config.json").exists()


# Knob bounds -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_every_knob_of_every_family_has_a_bound(family):
    """Every size knob has an upper bound (and a lower one), so no row can make validation
    generate an instance that hangs or exhausts memory; the bound admits its default."""
    params = family_module(family).Params
    names = [f.name for f in fields(params)]
    assert sorted(params.BOUNDS) == sorted(names)
    for f in fields(params):
        low, high = params.BOUNDS[f.name]
        assert low <= f.default <= high, (f.name, f.default, params.BOUNDS[f.name])


@pytest.mark.parametrize("family", FAMILIES)
def test_a_knob_beyond_its_bound_is_refused_before_generation(tmp_path, capsys, monkeypatch, family):
    """`filler_lines: 1000000000`, `hops: 100000000` hung validation (tens of GB); every knob
    one past its upper or lower bound exits 2 naming the knob, its bound and the row, and nothing is generated."""
    module = family_module(family)

    def generate(*args, **kwargs):
        raise AssertionError("an instance was generated despite an out-of-bound knob")
    monkeypatch.setattr(module, "build", generate)
    for name, (low, high) in module.Params.BOUNDS.items():
        for value in (high + 1, low - 1, 10**9):
            path = write_rows(tmp_path, "jsonl", [{"task_id": "big", "family": family, "seed": 0,
                                                   "params": {name: value}}])
            out = tmp_path / "r"
            refused(capsys, [*RUN, "--tasks", str(path), "--out", str(out)], out,
                    f"{path}:1: field params: {name} must be in [{low}, {high}], got {value}")


@pytest.mark.parametrize("family, params, message", [
    ("chained_lookup", {"hops": 2000, "distractors": 20000, "filler_lines": 200},
     "(hops + distractors) x (1 + filler_lines) archive lines must be at most 500000, got 4422000"),
    ("plant_early_ask_late", {"batches": 200, "files_per_batch": 100, "file_lines": 10000},
     "batches x files_per_batch x (file_lines + distractors) log lines must be at most 1000000"),
    ("plant_early_ask_late", {"facts": 2, "updates": 3}, "updates must be in [0, facts=2], got 3"),
    ("big_output", {"dumps": 100, "dump_chars": 5_000_000}, "dumps x dump_chars must be at most 50000000"),
    # 200 questions in one 2000-character dump: rng.sample raised ValueError (a traceback) before
    ("big_output", {"dumps": 1, "dump_chars": 2000, "questions": 200},
     "questions per dump (questions / dumps, rounded up) must be at most dump_chars / 300 = 6, got 200"),
])
def test_a_total_size_beyond_its_bound_is_refused(tmp_path, capsys, family, params, message):
    """Knobs that multiply (lines per record x records, dumps x characters) have a total bound;
    questions need room in their dumps' middles."""
    path = write_rows(tmp_path, "jsonl", [{"task_id": "big", "family": family, "seed": 0, "params": params}])
    out = tmp_path / "r"
    refused(capsys, [*RUN, "--tasks", str(path), "--out", str(out)], out, f"{path}:1: field params: {message}")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dump_chars", [2_000, 2_299, 3_001, 9_000])
def test_big_output_generates_at_its_question_bound(seed, dump_chars):
    """Ours: the questions-per-dump bound (dump_chars / 300) is one every instance has room for."""
    from tasks.big_output import CHARS_PER_QUESTION, Params, build

    dumps = 3
    params = Params(dumps=dumps, dump_chars=dump_chars, questions=dumps * (dump_chars // CHARS_PER_QUESTION))
    environment = build(params, seed)
    assert len(environment.questions) == params.questions


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_generates_at_its_lower_bounds(family):
    """The lower bounds are sizes generation works with (0 or 1 broke some before)."""
    module = family_module(family)
    lows = {name: low for name, (low, _) in module.Params.BOUNDS.items()}
    environment = module.build(module.Params(**lows), 0)
    assert environment.initial_user_messages()


def test_tasks_list_shows_the_knob_bounds(capsys):
    """`ctxbench tasks list` shows each knob's [low..high] bound beside its default."""
    assert main(["tasks", "list"]) == 0
    out = capsys.readouterr().out
    assert "hops=4 [1..2000]" in out and "dump_chars=110000 [2000..5000000]" in out


@pytest.mark.benchmark
@pytest.mark.parametrize("family, params", [
    ("chained_lookup", {"hops": 2000, "files": 1000, "distractors": 498, "filler_lines": 199}),
    ("chained_lookup", {"hops": 1, "files": 1, "distractors": 2499, "filler_lines": 199}),
    ("work_queue", {"items": 500, "filler_lines": 500, "distractors": 50}),
    ("plant_early_ask_late", {"batches": 200, "files_per_batch": 100, "file_lines": 49, "distractors": 1}),
    ("big_output", {"dumps": 10, "dump_chars": 5_000_000, "questions": 200, "distractors": 50}),
    ("repo_maintenance", {"bugs": 140, "modules": 10, "log_lines": 100_000, "file_lines": 100_000, "distractors": 2}),
])
def test_the_largest_allowed_instance_builds_in_seconds_and_hundreds_of_mb(family, params):
    """Benchmark: the largest instances the bounds allow build in under 15 s (a loaded machine) and 400 MB
    (figures in docs/reliability.md)."""
    import subprocess
    import sys

    script = ("import json, resource, sys, time\n"
              "from tasks import family_module\n"
              f"module = family_module({family!r})\n"
              f"params = module.Params(**{params!r})\n"
              "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "start = time.perf_counter(); module.build(params, 0)\n"
              "print(json.dumps([time.perf_counter() - start,"
              " (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024]))\n")
    seconds, mib = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                             check=True, cwd=Path(__file__).parents[2]).stdout)
    assert seconds < 15 and mib < 400, (seconds, mib)


def test_an_unreadable_task_file_exits_2(tmp_path, capsys, monkeypatch):
    """Ours: a task file that cannot be read (permissions; tests run as root, so the read is made to fail)."""
    path = write_rows(tmp_path, "jsonl", [GOOD])
    deny_open(monkeypatch, path)
    out = tmp_path / "r"
    refused(capsys, [*RUN, "--tasks", str(path), "--out", str(out)], out, f"{path}: cannot read: Permission denied")
