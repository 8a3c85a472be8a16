"""`ctxbench export --format parquet`: a results directory's rows, and optionally its requests, as Parquet files
for pandas, polars or DuckDB.

- `runs.parquet`: the latest row of each run (read_runs' rows, in run_id order), one column per field; the
  structured fields (strategy_config, detail, the `*_by_level` and `*_by_step` counts, ...) as JSON text, so
  every reader gets the same plain column whatever it makes of nested types.
- `requests.parquet` (`--requests`): harness.results.frames' request rows of every run, read from the event
  logs one run at a time and written as they are read, so memory does not grow with the number of runs.

Needs pyarrow, the `parquet` extra, imported only when called.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.core.config import check_writable_dir
from harness.core.errors import ConfigError
from harness.results.frames import REQUEST_COLUMNS, logged_requests, run_columns
from harness.results.layout import RUNS_FILE, field_kind

RUNS_PARQUET, REQUESTS_PARQUET = "runs.parquet", "requests.parquet"
DEFAULT_DIR = "parquet"  # under the results directory when --out is not given
INSTALL_HINT = "pip install 'ctxbench[parquet]'"
# Request columns that are not integers (harness.results.frames.run_requests); the rest are counts or text.
REQUEST_TEXT = ("run_id", "task_id", "family", "strategy", "profile")
REQUEST_FLOATS = ("cost_usd", "clock_s", "recorded_cost_usd")


def _pyarrow() -> Any:
    """pyarrow and its Parquet module, or a ConfigError naming the extra (exit 2, before anything is written)."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"the Parquet export needs the `parquet` extra: {INSTALL_HINT} ({exc})") from exc
    return pyarrow


def _request_schema(pa: Any) -> Any:
    return pa.schema([(name, pa.string() if name in REQUEST_TEXT else pa.float64() if name in REQUEST_FLOATS
                       else pa.int64()) for name in REQUEST_COLUMNS])


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, default=str)


def export_parquet(results_dir: str | Path, out: str | Path | None = None, requests: bool = False) -> list[Path]:
    """Write runs.parquet (and with `requests`, requests.parquet) into `out` (default RESULTS_DIR/parquet/);
    returns their paths. Each file is written beside its name and renamed into place when whole."""
    path = Path(results_dir)
    if not path.is_dir():
        raise ConfigError(f"export: {path} is not a directory")
    if not (path / RUNS_FILE).is_file():
        raise ConfigError(f"export: {path} is not a results directory (it has no {RUNS_FILE})")
    out = path / DEFAULT_DIR if out is None else Path(out)
    check_writable_dir(out, "export: --out")
    pa = _pyarrow()
    columns = run_columns(path, complete=False, missing=None)
    if not columns:
        raise ConfigError(f"export: {path / RUNS_FILE} holds no finished run")
    out.mkdir(parents=True, exist_ok=True)
    written = [_write_runs(pa, columns, out / RUNS_PARQUET)]
    if requests:
        count = len(columns["run_id"])
        runs = ({name: column[i] for name, column in columns.items()} for i in range(count))
        written.append(_write_requests(pa, path, runs, out / REQUESTS_PARQUET))
    return written


def _write_runs(pa: Any, columns: dict[str, list[Any]], target: Path) -> Path:
    arrays = {}
    for name, values in columns.items():
        if field_kind(name) == "structured":
            values = [_json_text(value) for value in values]
        try:
            arrays[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # a field holding numbers of kinds Arrow cannot unite
            raise ConfigError(f"export: runs.jsonl's field {name!r} cannot be one Parquet column: {exc}") from exc
    import pyarrow.parquet as pq

    partial = target.with_name(target.name + ".tmp")
    pq.write_table(pa.table(arrays), partial)
    os.replace(partial, target)
    return target


def _request_table(pa: Any, schema: Any, rows: list[dict[str, Any]]) -> Any:
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ConfigError(f"export: the event log of run {rows[0]['run_id']!r} holds a request whose figures are "
                          f"not numbers: {exc}") from exc


def _write_requests(pa: Any, results_dir: Path, runs: Any, target: Path) -> Path:
    """One row group per run with requests, written as each run's log is read."""
    import pyarrow.parquet as pq

    schema = _request_schema(pa)
    partial = target.with_name(target.name + ".tmp")
    try:
        with pq.ParquetWriter(partial, schema) as writer:
            for rows in logged_requests(results_dir, runs):
                if rows:
                    writer.write_table(_request_table(pa, schema, rows))
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)
    return target
