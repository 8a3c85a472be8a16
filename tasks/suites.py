"""Suites: rows of (task_id, family, seed, params), loaded with `datasets` and validated.

Row schema (JSONL or Parquet; one task instance per row):

| field          | type            | meaning                                                        |
|----------------|-----------------|----------------------------------------------------------------|
| `task_id`      | string, unique  | stable name of the instance                                    |
| `family`       | string          | a family in `tasks.FAMILIES`                                   |
| `seed`         | integer >= 0    | generation seed of the instance                                |
| `params`       | object or JSON string | the family's scale knobs; a missing or null knob takes its default |
| `max_requests` | integer, optional | per-instance request limit (else the run's `--max-requests`) |
| `pinned`       | boolean, optional (false) | the instance is the row's own under every run seed |

Seeds are samples (issue 18 part 2): run seed 0 runs the row's own instance (generated from
`seed`), so a single-seed table is the suite as written; any other run seed draws a fresh
instance of the row's family and params, generated from `instance_seed(row seed, run seed)`.
A `pinned` row keeps its own instance under every run seed (a fixed regression case, a
hand-picked instance), so its runs across seeds vary only in the model's sampling.

An invalid row is refused before any run with an error naming the file and line (JSONL) or
row (Parquet, hub dataset) and the field, e.g. `mine.jsonl:3: field params: items must be in [1, 500], got 0`.
"""
from __future__ import annotations

import copy
import json
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import harness  # noqa: F401  (offline environment)
from harness.config import build_dataclass
from harness.errors import ConfigError, TaskFileError
from harness.tokens import stable_hash
from tasks import family_module
from tasks.base import Environment

SUITES_DIR = Path(__file__).parent / "suites"
GENERATED_KEPT = 64  # generated instances kept per process for copying (least recently used dropped)
_GENERATED: OrderedDict[str, Environment] = OrderedDict()
ROW_FIELDS = {"task_id", "family", "seed", "params", "max_requests", "pinned"}
INSTANCE_SEEDS = 2**31  # derived instance seeds lie in [0, INSTANCE_SEEDS)


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


def _validate_row(raw: dict[str, Any], where: str) -> TaskRow:
    # `datasets` gives every row every column seen in the file (None where absent): only set values count.
    unknown = sorted(k for k in set(raw) - ROW_FIELDS if raw[k] is not None)
    if unknown:
        raise TaskFileError(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(ROW_FIELDS))}")
    for name in ("task_id", "family", "seed"):
        if raw.get(name) is None:
            raise TaskFileError(f"{where}: missing field {name!r}")
    if not isinstance(raw["task_id"], str) or not raw["task_id"].strip():
        raise TaskFileError(f"{where}: field 'task_id' must be a non-empty string")
    if not isinstance(raw["seed"], int) or isinstance(raw["seed"], bool) or raw["seed"] < 0:
        raise TaskFileError(f"{where}: field 'seed' must be an integer >= 0, got {raw['seed']!r}")
    params = raw.get("params") or {}
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{where}: field 'params' is not a JSON object ({exc.msg})") from exc
    if not isinstance(params, dict):
        raise TaskFileError(f"{where}: field 'params' must be an object")
    params = {k: v for k, v in params.items() if v is not None}
    max_requests = raw.get("max_requests")
    if max_requests is not None and (not isinstance(max_requests, int) or max_requests < 1):
        raise TaskFileError(f"{where}: field 'max_requests' must be a positive integer")
    pinned = raw.get("pinned")
    if pinned is not None and not isinstance(pinned, bool):
        raise TaskFileError(f"{where}: field 'pinned' must be true or false, got {pinned!r}")
    row = TaskRow(task_id=raw["task_id"], family=raw["family"], seed=raw["seed"], params=params,
                  max_requests=max_requests, pinned=bool(pinned))
    try:
        module = family_module(row.family)
    except TaskFileError as exc:
        raise TaskFileError(f"{where}: field 'family': {exc}") from exc
    try:
        build_dataclass(module.Params, params, "params")
    except ConfigError as exc:
        raise TaskFileError(f"{where}: field {exc}") from exc
    return row


def _read_rows(source: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, row) pairs of a JSONL/Parquet file or a hub dataset id, read through `datasets`.

    `where` names the file and line (JSONL) or row (Parquet, hub) for error messages."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    path = Path(source)
    if path.suffix in (".jsonl", ".json"):
        # Parse line by line first so a broken line is reported by its number.
        lines = path.read_text(encoding="utf-8").splitlines()
        numbers = []
        for number, line in enumerate(lines, 1):
            if line.strip():
                numbers.append(number)
                try:
                    json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TaskFileError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        dataset = datasets.load_dataset("json", data_files=str(path), split="train")
        return [(f"{path}:{n}", dict(r)) for n, r in zip(numbers, dataset)]
    if path.suffix == ".parquet":
        dataset = datasets.load_dataset("parquet", data_files=str(path), split="train")
        return [(f"{path} row {n}", dict(r)) for n, r in enumerate(dataset, 1)]
    dataset = datasets.load_dataset(source, split="train")
    return [(f"{source} row {n}", dict(r)) for n, r in enumerate(dataset, 1)]


def load_tasks(source: str) -> list[TaskRow]:
    """Load a suite by name (`smoke`, `default`, `long`), a JSONL/Parquet path, or a hub id."""
    if source in suite_names():
        source = str(SUITES_DIR / f"{source}.jsonl")
    elif not Path(source).exists() and "/" not in source:
        raise TaskFileError(f"unknown suite {source!r}; known suites: {', '.join(suite_names())}, or give a file path")
    elif not Path(source).exists() and Path(source).suffix in (".jsonl", ".json", ".parquet"):
        raise TaskFileError(f"{source}: no such task file")
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
