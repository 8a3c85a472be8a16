"""`ctxbench export RESULTS_DIR --format parquet [--requests]`: rows and requests as Parquet files."""
import json
import sys

import pandas as pd
import pytest

from harness import api
from harness.cli import main
from harness.results.frames import requests_frame, runs_frame
from harness.results.layout import RUNS_FILE, field_kind

NEEDS_PYARROW = "the Parquet export needs the `parquet` extra (pip install 'ctxbench[parquet]')"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A smoke run of two strategies, exported with its requests into a directory of its own."""
    pytest.importorskip("pyarrow", reason=NEEDS_PYARROW)
    base = tmp_path_factory.mktemp("parquet")
    results = api.run("smoke", strategies="none,compaction_ladder", out=base / "run")
    assert main(["export", str(results), "--format", "parquet", "--requests", "--out", str(base / "pq")]) == 0
    return results, base / "pq"


def test_runs_round_trip_through_pandas(exported):
    """runs.parquet holds runs_frame's rows and columns in its order; the structured fields are JSON text that
    reads back as the row's values, every other field as it was."""
    results, out = exported
    runs, read = runs_frame(results), pd.read_parquet(out / "runs.parquet")
    assert list(read.columns) == list(runs.columns) and len(read) == len(runs)
    assert read["run_id"].tolist() == runs["run_id"].tolist()
    structured = [name for name in runs.columns if field_kind(name) == "structured"]
    assert {"strategy_config", "detail", "warnings_by_level", "compactions_by_step"} <= set(structured)
    for name in structured:
        assert [json.loads(text) for text in read[name]] == runs[name].tolist(), name
    plain = [name for name in runs.columns if name not in structured]
    pd.testing.assert_frame_equal(read[plain], runs[plain], check_dtype=False)


def test_requests_round_trip_through_pandas(exported):
    """requests.parquet holds requests_frame's rows of every run, in run order, with its columns."""
    results, out = exported
    expected = requests_frame(results, runs_frame(results))
    read = pd.read_parquet(out / "requests.parquet")
    assert list(read.columns) == list(expected.columns) and len(read) == len(expected) > 0
    numbers = [name for name in read.columns if pd.api.types.is_numeric_dtype(read[name])]
    expected[numbers] = expected[numbers].apply(pd.to_numeric)  # a column of nulls: None in pandas, NaN read back
    pd.testing.assert_frame_equal(read, expected, check_dtype=False)


def test_duckdb_reads_the_export(exported):
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is not installed")
    results, out = exported
    count = duckdb.sql(f"select count(*) from '{out / 'runs.parquet'}'").fetchone()[0]
    assert count == len(runs_frame(results))


def test_polars_reads_the_export(exported):
    polars = pytest.importorskip("polars", reason="polars is not installed")
    results, out = exported
    assert polars.read_parquet(out / "requests.parquet").height == len(requests_frame(results, runs_frame(results)))


def test_default_out_is_the_results_parquet_directory_without_requests(exported, capsys):
    results, _ = exported
    assert main(["export", str(results), "--format", "parquet"]) == 0
    assert capsys.readouterr().out.split() == [str(results / "parquet" / "runs.parquet")]
    assert not (results / "parquet" / "requests.parquet").exists()


def test_results_of_the_older_layout_export(tmp_path):
    """Rows written before newer fields existed (no window, detail, cache_policy) and no event logs: the rows
    export, and requests.parquet is written empty with its columns."""
    pytest.importorskip("pyarrow", reason=NEEDS_PYARROW)
    rows = [{"run_id": f"t{i}--none--s0", "task_id": f"t{i}", "family": "f", "strategy": "none", "seed": 0,
             "success": i % 2 == 0, "score": 1.0, "requests": 3, "input_tokens": 100 + i, "cost_usd": None,
             "warnings_by_level": {"1": i}} for i in range(3)]
    (tmp_path / RUNS_FILE).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert main(["export", str(tmp_path), "--format", "parquet", "--requests"]) == 0
    read = pd.read_parquet(tmp_path / "parquet" / "runs.parquet")
    assert read["input_tokens"].tolist() == [100, 101, 102] and read["cost_usd"].isna().all()
    assert [json.loads(text) for text in read["warnings_by_level"]] == [{"1": 0}, {"1": 1}, {"1": 2}]
    requests = pd.read_parquet(tmp_path / "parquet" / "requests.parquet")
    assert requests.empty and "input_tokens" in requests.columns


@pytest.mark.parametrize("argv, said", [
    (["--format", "parquet", "--out", "{file}"], "is a file, not a directory"),
    (["--format", "inspect", "--requests"], "--requests is an option of --format parquet"),
    (["--format", "csv"], "invalid choice: 'csv'"),
])
def test_bad_out_or_format_exits_2_naming_it(tmp_path, capsys, argv, said):
    (tmp_path / RUNS_FILE).write_text(json.dumps({"run_id": "a", "task_id": "t", "family": "f", "strategy": "s",
                                                  "seed": 0, "success": True}) + "\n", encoding="utf-8")
    (tmp_path / "taken").write_text("", encoding="utf-8")
    argv = [part.replace("{file}", str(tmp_path / "taken")) for part in argv]
    with pytest.raises(SystemExit) if "csv" in argv else _no_exit():
        assert main(["export", str(tmp_path), *argv]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "parquet").exists()


def test_without_pyarrow_the_export_names_the_extra(tmp_path, monkeypatch, capsys):
    """Exit 2 naming the `parquet` extra, before anything is written."""
    (tmp_path / RUNS_FILE).write_text(json.dumps({"run_id": "a", "task_id": "t", "family": "f", "strategy": "s",
                                                  "seed": 0, "success": True}) + "\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert main(["export", str(tmp_path), "--format", "parquet"]) == 2
    assert "needs the `parquet` extra: pip install 'ctxbench[parquet]'" in capsys.readouterr().err
    assert not (tmp_path / "parquet").exists()


class _no_exit:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
