"""One invocation of the runner on a results directory: a fresh matrix or a resumed one.

Resuming reuses the directory's config.json, skips every cell with a row in runs.jsonl, reruns
the others from the start (their partial event logs are overwritten) and cuts a torn last line
first, so the directory ends with each cell's row exactly once. Spending limits: per run
(`max_cost_usd`, the run ends `budget`) and per invocation (`max_total_cost_usd`: once reached,
no further cell starts and runs in flight in this process stop at their next request; those are
not finished, so they get no row: with the cells never started they are listed in unstarted.json,
and --resume runs them).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness.config import check_writable_dir
from harness.errors import ConfigError
from harness.limits import INVOCATION_LIMIT_REACHED, INVOCATION_SPENDING
from harness.results import CONFIG_FILE, ResultsDir, read_runs
from harness.runner import Cell, Matrix, build_profiles, run_cells
from harness.secrets import REDACTED
from strategies import StrategySpec
from tasks.suites import TaskRow

UNSTARTED_FILE = "unstarted.json"


def with_invocation_options(profiles: dict[str, dict[str, Any]], *, cache: str | None = None,
                            max_concurrency: int | None = None) -> dict[str, dict[str, Any]]:
    """Profiles with this invocation's response cache and per-model request limit applied."""
    if max_concurrency is not None and max_concurrency < 1:
        raise ConfigError(f"--max-concurrency must be a positive integer, got {max_concurrency}")
    if cache:
        from harness.response_cache import check_cache

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


def execute(results: ResultsDir, cells: list[Cell], *, workers: int, progress: bool,
            max_total_cost_usd: float | None = None) -> list[str]:
    """Run the cells without a row yet; return the run ids left unfinished for lack of budget."""
    results.repair()
    finished = {row.get("run_id") for row in read_runs(results.path)}
    todo = [cell for cell in cells if cell.run_id not in finished]
    spent = 0.0
    stopped: list[str] = []

    def on_row(row: dict[str, Any]) -> None:
        nonlocal spent
        spent += row.get("cost_usd") or 0.0
        if row["termination"] == "budget" and row.get("error") == INVOCATION_LIMIT_REACHED:
            stopped.append(row["run_id"])  # cut short by the limit, not finished: resume reruns it
        else:
            results.append_run(row)

    def may_start() -> bool:
        return spent < max_total_cost_usd and not INVOCATION_SPENDING.exhausted()

    INVOCATION_SPENDING.start(max_total_cost_usd)
    try:
        unstarted = stopped + [cell.run_id for cell in run_cells(todo, workers=workers, on_row=on_row,
                                                                  progress=progress,
                                                                  may_start=None if max_total_cost_usd is None else may_start)]
    finally:
        INVOCATION_SPENDING.start(None)
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


def load_matrix(results_dir: str | Path) -> Matrix:
    """The matrix recorded in a results directory's config.json."""
    path = Path(results_dir) / CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"--resume: cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--resume: {path} is not valid JSON ({exc.msg}, line {exc.lineno})") from exc
    try:
        matrix = Matrix(
            tasks=[TaskRow(**task) for task in config["tasks"]],
            strategies=[StrategySpec(name=s["name"], config=_drop_redacted(s.get("config") or {}),
                                     label=s["label"] if s["label"] != s["name"] else "")
                        for s in config["strategies"]],
            seeds=list(config["seeds"]),
            profiles=_drop_redacted(config["profiles"]),
            max_requests=config["max_requests"],
            max_cost_usd=config.get("max_cost_usd"),
            clock=config.get("clock") or {},
        )
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"--resume: {path} lacks a valid {exc} entry; it was not written by `ctxbench run`") from exc
    return matrix


def add_run_options(run: argparse.ArgumentParser) -> None:
    """`ctxbench run` options for real models: resume, response cache, spending, concurrency, faults."""
    run.add_argument("--resume", metavar="RESULTS_DIR",
                     help="finish an interrupted run: reuse RESULTS_DIR/config.json, skip cells already in its "
                          "runs.jsonl, rerun the unfinished ones (matrix options may not be given with it)")
    run.add_argument("--cache", metavar="DIR",
                     help="response cache (SQLite in DIR): a request made before, by model, messages, tools, "
                          "parameters and repeat index, is answered from DIR instead of sent")
    run.add_argument("--max-cost-usd", type=float, metavar="USD",
                     help="spending limit per run: a run reaching it ends with termination 'budget'")
    run.add_argument("--max-total-cost-usd", type=float, metavar="USD",
                     help="spending limit of this invocation: once reached no further run starts; the runs left "
                          "are listed in unstarted.json (finish them later with --resume)")
    run.add_argument("--max-concurrency", type=int, metavar="N",
                     help="simultaneous requests per model in total (real models run as threads, spread over up to one "
                          "process per CPU when many runs are in flight)")
    run.add_argument("--retry", metavar="JSON_OR_FILE",
                     help="retry policy of the main profile, e.g. '{\"max_retries\": 6, \"initial_delay_s\": 1}'")
    run.add_argument("--mock-faults", metavar="JSON_OR_FILE",
                     help="seeded fault rates of the in-process mock, e.g. "
                          "'{\"rate_limit\": 0.05, \"server_error\": 0.02, \"timeout\": 0.01, "
                          "\"malformed_tool_args\": 0.05}'")


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
