"""Suites: rows of (task_id, family, seed, params), read and validated.

JSONL files are parsed here line by line (exact JSON types, the line of each error); Parquet
files and hub dataset ids are read with `datasets`.

Row schema (JSONL or Parquet; one task instance per row):

| field          | type            | meaning                                                        |
|----------------|-----------------|----------------------------------------------------------------|
| `task_id`      | string, unique, 1-128 of `A-Za-z0-9._-` | stable name of the instance; it names the run's event file |
| `family`       | string          | a family in `tasks.FAMILIES`                                   |
| `seed`         | integer in [0, 2**63 - 1] | generation seed of the instance                      |
| `params`       | object or JSON string | the family's scale knobs, each within its bounds (`ctxbench tasks list`); a missing or null knob takes its default |
| `max_requests` | integer in [1, 2**63 - 1], optional | per-instance request limit (else the run's `--max-requests`) |
| `pinned`       | boolean, optional (false) | the instance is the row's own under every run seed |

Seeds are samples: run seed 0 runs the row's own instance (generated from
`seed`), so a single-seed table is the suite as written; any other run seed draws a fresh
instance of the row's family and params, generated from `instance_seed(row seed, run seed)`.
A `pinned` row keeps its own instance under every run seed (a fixed regression case, a
hand-picked instance), so its runs across seeds vary only in the model's sampling.

An invalid file or row is refused before any run with an error naming the file and line (JSONL) or
row (Parquet, hub dataset) and the field, e.g. `mine.jsonl:3: field params: items must be in [1, 500], got 0`
(docs/reliability.md lists every case).
"""
from __future__ import annotations

import copy
import json
import os
import re
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import harness  # noqa: F401  (offline environment)
from harness.core.config import build_dataclass
from harness.core.errors import ConfigError, TaskFileError
from harness.core.user_files import INT64_MAX, check_depth, check_path_text, read_bytes
from harness.core.tokens import stable_hash
from tasks import family_module
from tasks.base import Environment

SUITES_DIR = Path(__file__).parent / "suites"
GENERATED_KEPT = 64  # generated instances kept per process for copying (least recently used dropped)
_GENERATED: OrderedDict[str, Environment] = OrderedDict()
ROW_FIELDS = {"task_id", "family", "seed", "params", "max_requests", "pinned"}
INSTANCE_SEEDS = 2**31  # derived instance seeds lie in [0, INSTANCE_SEEDS)
TASK_FILE_SUFFIXES = (".jsonl", ".json", ".parquet")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")  # owner/name
# A task_id names each run's event file, events/<task_id>--<label>--s<seed>.jsonl (harness.run.runner.run_id_for),
# whose name has at most 255 bytes (ext4, XFS, Btrfs, APFS, NTFS): 249 for the run id, of which 128 for the
# task_id leave 116 for the strategy label and the seed. Only file-name-safe ASCII, so run_id_for changes
# nothing in it and two task_ids never share an event file.
TASK_ID_MAX = 128
TASK_ID_CHARS = re.compile(r"[A-Za-z0-9._-]+")


def instance_seed(row_seed: int, run_seed: int) -> int:
    """The generation seed of a row's instance under a run seed: the row's own seed at run seed 0,
    else a stable hash of both (the same in every process and on every machine)."""
    if run_seed == 0:
        return row_seed
    return int(stable_hash(["instance", row_seed, run_seed]), 16) % INSTANCE_SEEDS


@dataclass(frozen=True)
class TaskRow:
    task_id: str
    family: str
    seed: int
    params: dict[str, Any] = field(default_factory=dict)
    max_requests: int | None = None
    pinned: bool = False

    def instance_seed(self, run_seed: int = 0) -> int:
        """The seed the instance of this row under `run_seed` is generated from."""
        return self.seed if self.pinned else instance_seed(self.seed, run_seed)

    def build(self, run_seed: int = 0) -> Environment:
        """A fresh environment of this row's instance under `run_seed`; copyable ones are generated
        once per process (per instance seed).

        A comparison runs each task under every strategy: copying a generated instance costs
        about 1% of generating it again.
        """
        seed = self.instance_seed(run_seed)
        key = json.dumps([self.family, seed, self.params], sort_keys=True, default=str)
        pristine = _GENERATED.get(key)
        if pristine is None:
            module = family_module(self.family)
            params = build_dataclass(module.Params, self.params, f"task {self.task_id} params")
            environment = module.build(params, seed)
            if not environment.copyable:
                return environment
            try:
                _GENERATED[key] = copy.deepcopy(environment)
            except (TypeError, copy.Error):  # holds something that cannot be copied after all: build each time
                return environment
            if len(_GENERATED) > GENERATED_KEPT:
                _GENERATED.popitem(last=False)
            return environment
        _GENERATED.move_to_end(key)
        return copy.deepcopy(pristine)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def suite_names() -> list[str]:
    return sorted(p.stem for p in SUITES_DIR.glob("*.jsonl"))


def _check_task_id(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise TaskFileError(f"{where}: field 'task_id' must be a non-empty string, got {value!r}")
    if len(value) > TASK_ID_MAX:
        raise TaskFileError(f"{where}: field 'task_id' is {len(value)} characters long; at most {TASK_ID_MAX} "
                            f"(it names the run's event file: docs/reliability.md)")
    if not TASK_ID_CHARS.fullmatch(value):
        raise TaskFileError(f"{where}: field 'task_id' {value!r} may hold only letters, digits, '.', '_' and '-' "
                            f"(it names the run's event file)")
    return value


def _check_count(raw: dict[str, Any], name: str, low: int, where: str) -> None:
    """Refuse a set integer field outside [low, INT64_MAX] (a bool is not an integer here: `true` is not 1)."""
    value = raw.get(name)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not low <= value <= INT64_MAX):
        raise TaskFileError(f"{where}: field {name!r} must be an integer in [{low}, 2**63 - 1], got {value!r}")


def _validate_row(raw: Any, where: str) -> TaskRow:
    """A row as a TaskRow, every field checked (type, range) and the family's knobs built (their bounds)."""
    if not isinstance(raw, dict):
        kind = "list" if isinstance(raw, list) else "null" if raw is None else type(raw).__name__
        raise TaskFileError(f"{where}: a row must be an object, got a {kind} ({str(raw)[:60]}); its fields: "
                            f"{', '.join(sorted(ROW_FIELDS))}")
    # `datasets` gives every row every column seen in the file (None where absent): only set values count.
    unknown = sorted(str(k) for k in set(raw) - ROW_FIELDS if raw[k] is not None)
    if unknown:
        raise TaskFileError(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(ROW_FIELDS))}")
    for name in ("task_id", "family", "seed"):
        if raw.get(name) is None:
            raise TaskFileError(f"{where}: missing field {name!r}")
    task_id = _check_task_id(raw["task_id"], where)
    if not isinstance(raw["family"], str):
        raise TaskFileError(f"{where}: field 'family' must be a string, got {raw['family']!r}")
    _check_count(raw, "seed", 0, where)
    params = raw.get("params")
    if params is None:
        params = {}
    if isinstance(params, str):
        try:
            check_depth(params, f"{where}: field 'params'")
            params = json.loads(params)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{where}: field 'params' is not a JSON object ({exc.msg})") from exc
    if not isinstance(params, dict):
        raise TaskFileError(f"{where}: field 'params' must be an object of knobs, got {params!r}")
    params = {k: v for k, v in params.items() if v is not None}
    _check_count(raw, "max_requests", 1, where)
    pinned = raw.get("pinned")
    if pinned is not None and not isinstance(pinned, bool):
        raise TaskFileError(f"{where}: field 'pinned' must be true or false, got {pinned!r}")
    row = TaskRow(task_id=task_id, family=raw["family"], seed=raw["seed"], params=params,
                  max_requests=raw.get("max_requests"), pinned=bool(pinned))
    try:
        module = family_module(row.family)
    except TaskFileError as exc:
        raise TaskFileError(f"{where}: field 'family': {exc}") from exc
    try:
        build_dataclass(module.Params, params, "params")
    except ConfigError as exc:
        raise TaskFileError(f"{where}: field {exc}") from exc
    return row


def _jsonl_rows(path: Path) -> list[tuple[str, Any]]:
    """(where, parsed line) of a JSONL file, parsed here rather than by `datasets`: its JSON loader
    coerces types across rows (a row's seed 0 becomes 0.0 when another row has 1.5), so an error
    would name the wrong line."""
    data = read_bytes(path)
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise TaskFileError(f"{path}:{line}: a binary file (NUL byte), not JSONL text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TaskFileError(f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}); "
                            "a task file is UTF-8 JSONL") from exc
    lines = text.split("\n")  # not splitlines(): a JSON string may hold U+2028 and other line separators
    rows = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                check_depth(line, f"{path}:{number}")
                rows.append((f"{path}:{number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                cut = " (the file ends mid-line: truncated?)" if number == len(lines) else ""
                raise TaskFileError(f"{path}:{number}: not valid JSON ({exc.msg}){cut}") from exc
    return rows


def _parquet_rows(path: Path) -> int:
    """The row count in a Parquet file's footer: a file that is not Parquet, or is cut short, has none."""
    import pyarrow
    import pyarrow.parquet

    try:
        return pyarrow.parquet.ParquetFile(path).metadata.num_rows
    except (pyarrow.ArrowException, OSError) as exc:
        raise TaskFileError(f"{path}: not a readable Parquet file, or cut short ({type(exc).__name__}: {exc})") from exc


def _load_with_datasets(kind: str, source: str, **options: Any) -> Any:
    """`datasets.load_dataset`, its failures as TaskFileError naming the source.

    It raises many unrelated types (ConnectionError offline, DatasetNotFoundError, ArrowInvalid for a
    file that is not Parquet, DatasetGenerationError...), so every Exception is caught at this boundary."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # its failures are reported here, once
    try:
        return datasets.load_dataset(kind, split="train", **options)
    except Exception as exc:  # noqa: BLE001  (see the docstring)
        detail = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
        if kind == "parquet":
            raise TaskFileError(f"{source}: not a readable Parquet file, or cut short ({detail})") from exc
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or \
            os.environ.get("HF_DATASETS_OFFLINE", "") not in ("", "0")
        why = ("this machine is offline (HF_HUB_OFFLINE), so only a dataset in the local cache loads, and it is not "
               "there; or the id is unknown" if offline else "the id is unknown or the hub cannot be reached")
        raise TaskFileError(f"hub dataset {source!r} could not be loaded: {why}; no file of that name exists "
                            f"either ({detail})") from exc


def _read_rows(source: str) -> list[tuple[str, Any]]:
    """(where, row) pairs of a JSONL/Parquet file or a hub dataset id.

    `where` names the file and line (JSONL) or row (Parquet, hub) for error messages."""
    path = Path(source)
    if path.suffix in (".jsonl", ".json"):
        return _jsonl_rows(path)
    if path.suffix == ".parquet":
        if not _parquet_rows(path):
            return []
        return [(f"{path} row {n}", dict(r))
                for n, r in enumerate(_load_with_datasets("parquet", source, data_files=source), 1)]
    return [(f"{source} row {n}", dict(r)) for n, r in enumerate(_load_with_datasets(source, source), 1)]


def _local_source(source: str) -> str:
    """`source` as a task file path or hub id to read, or a TaskFileError saying why it is neither."""
    if source in suite_names():
        return str(SUITES_DIR / f"{source}.jsonl")
    path = Path(check_path_text(source, "task source"))
    suffixes = ", ".join(TASK_FILE_SUFFIXES)
    if path.is_dir():
        raise TaskFileError(f"{source}: is a directory; give a task file ({suffixes})")
    if path.exists():
        if path.suffix not in TASK_FILE_SUFFIXES:
            got = f"suffix {path.suffix!r}" if path.suffix else "no suffix"
            raise TaskFileError(f"{source}: a task file's name ends in {suffixes} (its format), this one has {got}")
        return source
    if path.suffix in TASK_FILE_SUFFIXES:
        raise TaskFileError(f"{source}: no such task file")
    if not HUB_ID.fullmatch(source):
        raise TaskFileError(f"unknown suite {source!r}; known suites: {', '.join(suite_names())}, or give a task "
                            f"file ({suffixes}) or a hub dataset id (owner/name)")
    return source


def load_tasks(source: str) -> list[TaskRow]:
    """Load a suite by name (`smoke`, `default`, `long`), a JSONL/Parquet path, or a hub id."""
    source = _local_source(source)
    rows = _read_rows(source)
    if not rows:
        raise TaskFileError(f"{source}: no task rows")
    tasks: list[TaskRow] = []
    seen: set[str] = set()
    for where, raw in rows:
        row = _validate_row(raw, where)
        if row.task_id in seen:
            raise TaskFileError(f"{where}: duplicate task_id {row.task_id!r}")
        seen.add(row.task_id)
        tasks.append(row)
    return tasks
