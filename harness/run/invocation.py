"""One invocation of the runner on a results directory: a fresh matrix or a resumed one.

Resuming reuses the directory's config.json, skips every cell with a row in runs.jsonl, reruns
the others from the start (their partial event logs are overwritten) and cuts a torn last line
first, so the directory ends with each cell's row exactly once. Before anything runs it checks what
it resumes: config.json must hold a matrix of the types `ctxbench run` writes, and
every line of runs.jsonl a row of one of its cells run with that cell's strategy config, model and seed;
otherwise it stops naming the line, and `--repair` moves such lines to runs.quarantine.jsonl instead.
A row that ended on an outage (`transient`), or with `--rerun-errors` any `error` row (never a
`strategy_failed` one: that is the strategy's result), is rerun; its new row replaces it (runs.jsonl
keeps the last row per cell). Spending limits: per run
(`max_cost_usd`, the run ends `budget`) and per invocation (`max_total_cost_usd`: once reached,
no further cell starts and runs in flight in this process stop at their next request; those are
not finished, so they get no row: with the cells never started they are listed in unstarted.json,
and --resume runs them).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

from harness.core.config import check_writable_dir
from harness.models.profiles import MAIN_PROFILE
from harness.core.errors import ConfigError, CtxbenchError
from harness.models.limits import INVOCATION_LIMIT_REACHED, INVOCATION_SPENDING
from harness.results.layout import CONFIG_FILE, QUARANTINE_FILE, ResultsDir, read_runs, scan_runs
from harness.models.profiles import build_profiles
from harness.run.runner import Cell, Matrix, run_cells
from harness.core.secrets import REDACTED, redact, redact_text
from strategies import StrategySpec
from harness.core.user_files import load_json
from tasks.suites import TaskRow

UNSTARTED_FILE = "unstarted.json"


def with_invocation_options(profiles: dict[str, dict[str, Any]], *, cache: str | None = None,
                            max_concurrency: int | None = None) -> dict[str, dict[str, Any]]:
    """Profiles with this invocation's response cache and per-model request limit applied."""
    if max_concurrency is not None and max_concurrency < 1:
        raise ConfigError(f"--max-concurrency must be a positive integer, got {max_concurrency}")
    if cache:
        from harness.models.response_cache import check_cache

        check_writable_dir(cache, "--cache")
        check_cache(cache)
    updated = {}
    for name, profile in profiles.items():
        if not isinstance(profile, dict):  # as build_profiles says it, before anything copies the profile
            raise ConfigError(f"profiles.{name}: expected a mapping of options, got {profile!r}")
        profile = dict(profile)
        if cache:
            profile["response_cache"] = str(cache)
        if max_concurrency is not None:
            profile["max_concurrency"] = max_concurrency
        updated[name] = profile
    return updated


def check_budgets(profiles: dict[str, dict[str, Any]], max_cost_usd: float | None,
                  max_total_cost_usd: float | None) -> None:
    """Spending limits must be positive, and every model they apply to must have known prices."""
    for option, value in (("--max-cost-usd", max_cost_usd), ("--max-total-cost-usd", max_total_cost_usd)):
        if value is None:
            continue
        if not value > 0:
            raise ConfigError(f"{option} must be a positive number of USD, got {value}")
        for name, profile in build_profiles(profiles).items():
            if profile.pricing() is None:
                raise ConfigError(f"{option}: profiles.{name}: model {profile.model!r} has no prices in litellm's "
                                  "cost map, so spending cannot be counted; set its price_model (--price-model)")


def check_credentials(profiles: dict[str, dict[str, Any]]) -> None:
    """A real model without its API key fails here, before any request, not after retries."""
    import litellm

    for name, profile in build_profiles(profiles).items():
        if profile.is_mock:
            continue
        key = profile.params.get("api_key")
        missing = litellm.validate_environment(model=profile.model, api_key=key, api_base=profile.api_base)
        if missing.get("missing_keys"):
            hint = " (serve-mock accepts any value)" if profile.api_base else ""
            raise ConfigError(f"profiles.{name}: model {profile.model!r} needs {', '.join(missing['missing_keys'])} "
                              f"in the environment or params.api_key{hint}")


def served_mock_window(api_base: str, model: str) -> int:
    """The window serve-mock at `api_base` advertises for `model` in its model list (GET <api_base>/models;
    credentials in the URL, user:password@ or a query, are left out: serve-mock takes none)."""
    import http.client
    import urllib.parse
    import urllib.request

    base = urllib.parse.urlsplit(api_base)
    url = urllib.parse.urlunsplit((base.scheme, base.netloc.rpartition("@")[2], f"{base.path.rstrip('/')}/models",
                                   "", ""))
    where = f"{redact_text(url)} (is `ctxbench serve-mock` running there?)"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            listed = json.loads(response.read())
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise ConfigError(f"model {model!r}: cannot read the mock's window from {where}: "
                          f"{redact_text(str(getattr(exc, 'reason', exc)))}") from exc
    entries = listed.get("data") if isinstance(listed, dict) else None
    model_id = model.partition("/")[2]
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model_id:
            window = entry.get("max_input_tokens")
            if isinstance(window, int) and not isinstance(window, bool) and window > 0:
                return window
    raise ConfigError(f"model {model!r}: {where} lists no window (max_input_tokens) for {model_id!r}")


def resolve_served_mock_window(profiles: dict[str, dict[str, Any]]) -> None:
    """Give a main profile of the mock over HTTP (LLMProfile.serves_mock) the server's window as its input
    budget, as the in-process mock's budget is its window: strategies then plan for the window that is
    enforced. A budget already set (--window, max_input_tokens) must equal the server's window. Only the
    main profile's budget reaches strategies (harness.conversation.context), so only its server is asked."""
    main = build_profiles(profiles)[MAIN_PROFILE]
    if not main.serves_mock:
        return
    window = served_mock_window(str(main.api_base), main.model)
    if main.max_input_tokens is not None and main.max_input_tokens != window:
        raise ConfigError(f"profiles.{MAIN_PROFILE}: max_input_tokens (--window) {main.max_input_tokens} is not the "
                          f"window {window} of serve-mock at {redact_text(str(main.api_base))}; leave --window out to "
                          f"take the server's, or start serve-mock with --window {main.max_input_tokens}")
    profiles[MAIN_PROFILE]["max_input_tokens"] = window


def reruns(row: dict[str, Any], rerun_errors: bool) -> bool:
    """A row resume runs again: an outage always, any `error` row when asked."""
    return row.get("transient") is True or (rerun_errors and row.get("termination") == "error")


def execute(results: ResultsDir, cells: list[Cell], *, workers: int, progress: bool,
            max_total_cost_usd: float | None = None, rerun_errors: bool = False,
            watch: Callable[[dict[str, Any]], None] | None = None, executor: str = "local",
            ray_address: str | None = None) -> list[str]:
    """Run the cells (on `executor`: harness.executors) without a row yet, or whose row `reruns`; return the run ids left unfinished for
    lack of budget. A rerun's row is appended, then runs.jsonl is rewritten with the last row per cell.
    `watch` is told of each row once it is in runs.jsonl (`run --inspect-log`)."""
    results.repair()
    rows = read_runs(results.path)
    finished = {row["run_id"] for row in rows if not reruns(row, rerun_errors)}
    todo = [cell for cell in cells if cell.run_id not in finished]
    again = len(rows) - len(finished)
    if again:
        print(f"ctxbench: rerunning {again} run(s) that ended on an outage"
              f"{' or an error' if rerun_errors else ''}", file=sys.stderr)
    spent = 0.0
    stopped: list[str] = []

    def on_row(row: dict[str, Any]) -> None:
        nonlocal spent
        spent += row.get("cost_usd") or 0.0
        if row["termination"] == "budget" and row.get("error") == INVOCATION_LIMIT_REACHED:
            stopped.append(row["run_id"])  # cut short by the limit, not finished: resume reruns it
        else:
            results.append_run(row)
            if watch is not None:
                watch(row)

    def may_start() -> bool:
        return spent < max_total_cost_usd and not INVOCATION_SPENDING.exhausted()

    INVOCATION_SPENDING.start(max_total_cost_usd)
    try:
        unstarted = stopped + [cell.run_id for cell in run_cells(todo, workers=workers, on_row=on_row,
                                                                  progress=progress, executor=executor,
                                                                  ray_address=ray_address, may_start=None if max_total_cost_usd is None else may_start)]
    finally:
        INVOCATION_SPENDING.start(None)
        results.compact()
    marker = results.path / UNSTARTED_FILE
    if unstarted:
        marker.write_text(json.dumps({
            "reason": f"spending reached the invocation's limit of {max_total_cost_usd:g} USD "
                      f"({spent:.6f} USD spent); runs in flight were stopped and are not in runs.jsonl",
            "run_ids": unstarted,
        }, indent=2) + "\n", encoding="utf-8")
    elif marker.exists():
        marker.unlink()
    return unstarted


def _drop_redacted(data: Any) -> Any:
    """Secrets were never written; leave them unset so the model's client finds them in the environment."""
    if isinstance(data, dict):
        return {k: _drop_redacted(v) for k, v in data.items() if v != REDACTED}
    if isinstance(data, list):
        return [_drop_redacted(v) for v in data]
    return data


def restore_api_base(profiles: dict[str, dict[str, Any]], given: str | None) -> None:
    """Put back an api_base whose credentials (user:password@, ?api_key=) were never written: the user gives
    the URL again (--resume DIR --api-base URL); it replaces each recorded api_base it redacts to."""
    matched = False
    for name, profile in profiles.items():
        recorded = profile.get("api_base")
        if given is not None and recorded == redact_text(given):
            profile["api_base"], matched = given, True
        elif isinstance(recorded, str) and REDACTED in recorded:
            raise ConfigError(f"--resume: profiles.{name}.api_base {recorded} held credentials, which are never "
                              "written to config.json; give the URL again with --api-base")
    if given is not None and not matched:
        raise ConfigError(f"--api-base {redact_text(given)}: matches no api_base recorded in config.json "
                          f"({sorted({str(p.get('api_base')) for p in profiles.values()})})")


def check_secret_points(strategies: list[StrategySpec], knobs: dict[str, Any] | None = None,
                        fields: dict[str, Any] | None = None) -> None:
    """Two strategies that differed only in secrets (a sweep over api_key) cannot be resumed: the
    secrets were never written, so both would run the same configuration under two labels. Points
    that differ in their mock knobs (`knobs`, label -> knobs) or profile fields (`fields`) differ."""
    seen: dict[str, str] = {}
    for spec in strategies:
        key = json.dumps([spec.name, spec.config, (knobs or {}).get(spec.display), (fields or {}).get(spec.display)],
                         sort_keys=True, default=str)
        if key in seen:
            raise ConfigError(f"--resume: strategies {seen[key]} and {spec.display} differ only in secret values, "
                              "which are never written; rerun them as a new run")
        seen[key] = spec.display


def _checked_config(path: Path, config: Any) -> dict[str, Any]:
    """config.json's matrix entries, each of the type `ctxbench run` writes (ConfigError naming the entry)."""
    def bad(where: str, what: str) -> ConfigError:
        return ConfigError(f"--resume: {path}: {where}: {what}; it was not written by `ctxbench run` as it is")

    def is_int(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    if not isinstance(config, dict):
        raise bad("top level", f"expected an object, got a JSON {type(config).__name__}")
    for key, kind in (("tasks", list), ("strategies", list), ("seeds", list), ("profiles", dict)):
        if key not in config:
            raise bad(key, "missing")
        if not isinstance(config[key], kind) or not config[key]:
            raise bad(key, f"expected a non-empty {'list' if kind is list else 'object'}, got {config[key]!r:.80}")
    for i, seed in enumerate(config["seeds"]):
        if not is_int(seed) or seed < 0:
            raise bad(f"seeds[{i}]", f"expected a non-negative integer, got {seed!r:.80}")
    if not is_int(config.get("max_requests")) or config["max_requests"] < 1:
        raise bad("max_requests", f"expected a positive integer, got {config.get('max_requests')!r:.80}")
    cost = config.get("max_cost_usd")
    if cost is not None and (not isinstance(cost, (int, float)) or isinstance(cost, bool) or not cost > 0):
        raise bad("max_cost_usd", f"expected null or a positive number, got {cost!r:.80}")
    if not isinstance(config.get("clock") or {}, dict):
        raise bad("clock", f"expected an object, got {config['clock']!r:.80}")
    windows = config.get("windows") or []
    if not isinstance(windows, list) or not all(is_int(window) and window > 0 for window in windows):
        raise bad("windows", f"expected a list of positive integers, got {windows!r:.80}")
    for key in ("strategy_knobs", "strategy_profiles"):
        if not isinstance(config.get(key) or {}, dict):
            raise bad(key, f"expected an object, got {config[key]!r:.80}")
    for name, profile in config["profiles"].items():
        if not isinstance(profile, dict):
            raise bad(f"profiles.{name}", f"expected an object, got {profile!r:.80}")
    if "main" not in config["profiles"]:
        raise bad("profiles.main", "missing")
    for i, task in enumerate(config["tasks"]):
        if not isinstance(task, dict):
            raise bad(f"tasks[{i}]", f"expected an object, got {task!r:.80}")
    for i, spec in enumerate(config["strategies"]):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not isinstance(spec.get("label"), str):
            raise bad(f"strategies[{i}]", f"expected an object with string name and label, got {spec!r:.80}")
        if not isinstance(spec.get("config") or {}, dict):
            raise bad(f"strategies[{i}].config", f"expected an object, got {spec['config']!r:.80}")
    return config


def load_matrix(results_dir: str | Path, api_base: str | None = None) -> Matrix:
    """The matrix recorded in a results directory's config.json."""
    path = Path(results_dir) / CONFIG_FILE
    try:
        config = load_json(path)
    except ConfigError as exc:
        raise ConfigError(f"--resume: {exc}") from exc
    config = _checked_config(path, config)
    tasks = []
    for i, task in enumerate(config["tasks"]):
        try:
            tasks.append(TaskRow(**task))
        except (TypeError, ValueError, CtxbenchError) as exc:
            raise ConfigError(f"--resume: {path}: tasks[{i}]: {exc}") from exc
    matrix = Matrix(
        tasks=tasks,
        strategies=[StrategySpec(name=s["name"], config=_drop_redacted(s.get("config") or {}),
                                 label=s["label"] if s["label"] != s["name"] else "")
                    for s in config["strategies"]],
        seeds=list(config["seeds"]),
        profiles=_drop_redacted(config["profiles"]),
        max_requests=config["max_requests"],
        max_cost_usd=config.get("max_cost_usd"),
        clock=config.get("clock") or {},
        strategy_knobs=config.get("strategy_knobs") or {},
        strategy_profiles=config.get("strategy_profiles") or {},
        windows=list(config.get("windows") or []),
    )
    restore_api_base(matrix.profiles, api_base)
    check_secret_points(matrix.strategies, matrix.strategy_knobs, matrix.strategy_profiles)
    return matrix


def _comparable(config: Any) -> Any:
    """A strategy config as config.json keeps it: secrets left out (they are redacted there)."""
    return _drop_redacted(redact(config or {}))


def _mismatch(row: dict[str, Any], cell: Cell | None) -> str | None:
    """Why a row of runs.jsonl is not a result of `cell` (None: it is)."""
    if cell is None:
        return f"run_id {row['run_id']!r:.120} is not a cell of {CONFIG_FILE}'s matrix (a row of another run?)"
    expected = {"task_id": cell.task.task_id, "strategy": cell.strategy.display, "seed": cell.seed,
                "model": cell.profiles["main"].get("model"), "strategy_config": _comparable(cell.strategy.config),
                **({"window": cell.window} if cell.window is not None else {})}
    for key, want in expected.items():
        got = _comparable(row.get(key)) if key == "strategy_config" else row.get(key)
        if got != want:
            return f"run {row['run_id']}: {key} {got!r:.120} is not {CONFIG_FILE}'s {want!r:.120} (was it replaced?)"
    return None


def check_rows(results: ResultsDir, cells: list[Cell], *, repair: bool) -> None:
    """What --resume resumes: every line of runs.jsonl a row of a cell of this matrix, run as config.json
    says. Otherwise ConfigError naming the lines, before anything runs; with `repair`, those lines move
    to runs.quarantine.jsonl (with their line numbers and reasons) and the rest is kept."""
    results.repair()  # a torn last line (a kill mid-write) is cut, as always
    by_id = {cell.run_id: cell for cell in cells}
    lines = scan_runs(results.runs_file)
    problems = []
    for line in lines:
        reason = line.problem or _mismatch(line.row, by_id.get(line.row["run_id"]))
        if reason:
            problems.append((line, reason))
    if not problems:
        return
    if not repair:
        named = "; ".join(f"line {line.number}: {reason}" for line, reason in problems[:3])
        more = f" (and {len(problems) - 3} more lines)" if len(problems) > 3 else ""
        raise ConfigError(f"--resume: {results.runs_file}: {named}{more}. Nothing was run; "
                          f"`--resume {results.path} --repair` moves such lines to {QUARANTINE_FILE} and keeps the rest")
    bad = {line.number for line, _ in problems}
    results.quarantine(problems)
    results.rewrite_runs(line.row for line in lines if line.number not in bad)
    print(f"ctxbench: --repair: moved {len(problems)} line(s) of {results.runs_file} to "
          f"{results.path / QUARANTINE_FILE}", file=sys.stderr)


def apply_profile_options(profiles: dict[str, dict[str, Any]], *, retry: Any = None, faults: Any = None) -> None:
    """Put --retry and --mock-faults into the main profile."""
    main = profiles["main"]
    if retry is not None:
        main["retry"] = retry
    if faults is not None:
        if "mock" not in main:
            raise ConfigError("--mock-faults: the model is not a mock/... model; give the faults to "
                              "`ctxbench serve-mock --faults` instead")
        main["mock"]["faults"] = faults
