"""The Python API: what the CLI does, callable from notebooks and tests."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from harness.core.config import check_writable_dir
from harness.core.errors import ConfigError, did_you_mean
from harness.results.lock import hold
from harness.results.plots import check_plot_task
from harness.results.frames import requests_frame
from harness.results.report import DEFAULT_BASELINE, PAIRED_FILE, runs_frame, write_report
from harness.results.layout import EVENTS_DIR, RUNS_FILE, SUMMARY_FILE, ResultsDir
from harness.core.secrets import redact, redact_text, remember
from harness.results.layout import SWEEP_FILE, TUNING_FILE
from harness.sweep import Grid, grid_from_mapping, point_knobs, point_profiles, sweep_file_text, validate_grid
from harness.results.tuning import recommended_label
from strategies import StrategySpec, comparison_strategies


def strategy_specs(names: Iterable[str] | str = "all", configs: dict[str, Any] | None = None) -> list[StrategySpec]:
    """Specs for registered names or import paths, with an optional config per name."""
    given = names
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    chosen: list[str] = []
    for name in names:  # "all" stands for the native comparison, and can be extended: all,pai.tiered_compaction
        chosen.extend(n for n in (comparison_strategies() if name == "all" else [name]) if n not in chosen)
    if not chosen:
        raise ConfigError(f"strategies: none named in {given!r}; give registered names or import paths "
                          "(see `ctxbench strategies`)")
    configs = {} if configs is None else configs
    if not isinstance(configs, dict):
        raise ConfigError(f"strategy configs: expected a mapping of strategy name to config, got {configs!r}")
    unknown = sorted(set(configs) - set(chosen))
    if unknown:
        raise ConfigError(f"strategy configs: given for {unknown}, which are not among the strategies {chosen}")
    for name, config in configs.items():
        if config is not None and not isinstance(config, dict):
            raise ConfigError(f"strategy configs: {name}: expected a mapping of options, got {config!r}")
    return [StrategySpec(name=name, config=configs.get(name) or {}) for name in chosen]


def report_baseline(baseline: str | None, specs: list[StrategySpec], default: str = DEFAULT_BASELINE) -> str:
    """The strategy the report's paired differences compare against: one given must be among the
    strategies run (else the report would silently compare nothing); `default` when none is given."""
    labels = [spec.display for spec in specs]
    if baseline is not None and baseline not in labels:
        raise ConfigError(f"baseline {baseline!r} is not among the strategies run{did_you_mean(baseline, labels)}: "
                          f"{', '.join(labels)}")
    return default if baseline is None else baseline


SUMMARY_PROFILE = "summary"


def default_summary_profile(main: dict[str, Any]) -> dict[str, Any]:
    """The `summary` profile summarizing strategies use unless one is given: the mock summarizer
    for a mock agent (same cache style, prices and window), in process or over HTTP (`openai/mock-agent`:
    `openai/mock-summarizer` at the same api base), else the main model itself without its budget."""
    from harness.models.llm import serves_mock

    if serves_mock(main["model"], main.get("api_base")):
        return {**main, "model": f"{main['model'].partition('/')[0]}/mock-summarizer"}
    if main["model"].startswith("mock/"):
        # ours, marked: the summarizer's own window (a real summarizer's provider enforces one; seed 000:
        # "The hard condenser uses its own LLM profile"), by default the main model's
        window = {"window": main["mock"]["window"]} if "window" in main["mock"] else {}
        return {"model": "mock/summarizer", "mock": {"cache": main["mock"]["cache"], **window},
                **{key: main[key] for key in ("price_model", "cache_policy") if key in main}}
    return {k: v for k, v in main.items() if k != "max_input_tokens"}


def mock_profiles(model: str = "mock/agent", *, window: int | None = None, cache: str = "anthropic",
                  knobs: dict[str, Any] | None = None, api_base: str | None = None, price_model: str | None = None,
                  extra: dict[str, Any] | None = None,
                  summarizer_knobs: dict[str, Any] | None = None,
                  cache_policy: Any = None) -> dict[str, dict[str, Any]]:
    """LLM profiles as plain data: the main profile from these options, a default `summary`
    profile, plus `extra` ones (which replace profiles of the same name). `knobs` are the mock
    agent's, `summarizer_knobs` the mock summarizer's (set on the `summary` profile); `cache_policy`
    (harness.models.cache_policy) is the main profile's and the default summary profile's. `cache` and `knobs` set the
    in-process mock only: knobs given for another model are a ConfigError, not silently dropped."""
    main: dict[str, Any] = {"model": model}
    if api_base:
        main["api_base"] = api_base
    if cache_policy is not None:
        main["cache_policy"] = cache_policy
    if price_model:
        main["price_model"] = price_model
    if knobs and not model.startswith("mock/"):
        raise ConfigError(f"--mock-knobs: they set the in-process mock (mock/...), not {model!r}: "
                          f"{_served_mock_hint(model, api_base, '--mock-knobs') or 'a real model has no knobs'}")
    if model.startswith("mock/"):
        mock: dict[str, Any] = {"cache": cache}
        if window:
            mock["window"] = window
        if knobs:
            mock["knobs"] = knobs
        main["mock"] = mock
    elif window:
        main["max_input_tokens"] = window
    profiles = {"main": main, SUMMARY_PROFILE: default_summary_profile(main)}
    if extra:
        if not isinstance(extra, dict):
            raise ConfigError(f"profiles: expected a mapping of profile name to profile, got {extra!r}")
        if "main" in extra:
            raise ConfigError("profiles: 'main' is set by the model options")
        profiles.update(extra)
    if summarizer_knobs:
        _set_summarizer_knobs(profiles, summarizer_knobs)
    return profiles


def _served_mock_hint(model: str, api_base: str | None, option: str) -> str:
    """Where a mock option goes when `model` is the mock behind serve-mock, else ""."""
    from harness.models.llm import serves_mock

    return f"over HTTP, give them to `ctxbench serve-mock {option}`" if serves_mock(model, api_base) else ""


def _set_summarizer_knobs(profiles: dict[str, dict[str, Any]], knobs: dict[str, Any]) -> None:
    """The summary profile's mock knobs, which must be the mock summarizer's and not set twice."""
    from harness.models.mock.summarizer import is_summarizer  # here: reading results need not load the mock

    summary = profiles.get(SUMMARY_PROFILE)
    model = summary.get("model") if isinstance(summary, dict) else None
    if not (isinstance(model, str) and model.startswith("mock/") and is_summarizer(model)):
        hint = _served_mock_hint(model, summary.get("api_base"), "--summarizer-knobs") if isinstance(model, str) else ""
        served = f" ({hint})" if hint else ""
        raise ConfigError(f"summarizer knobs: the {SUMMARY_PROFILE!r} profile's model is {model!r}, "
                          f"not the mock summarizer (mock/summarizer); they set only the mock summarizer{served}")
    mock = summary.get("mock") if isinstance(summary.get("mock"), dict) else {}
    if mock.get("knobs"):
        raise ConfigError(f"summarizer knobs: given both as an option and in profiles.{SUMMARY_PROFILE}.mock.knobs")
    summary["mock"] = {**mock, "knobs": knobs}


def run(suite: str = "default", *, strategies: Iterable[StrategySpec] | Iterable[str] | str = "all",
        strategy_configs: dict[str, Any] | None = None, seeds: Iterable[int] = (0,),
        profiles: dict[str, dict[str, Any]] | None = None, max_requests: int | None = None,
        out: str | Path | None = None, workers: int = 1, progress: bool = False,
        baseline: str | None = None, cache: str | Path | None = None, max_cost_usd: float | None = None,
        max_total_cost_usd: float | None = None, max_concurrency: int | None = None,
        clock: dict[str, Any] | None = None, command_line: list[str] | None = None,
        extra_files: dict[str, str] | None = None,
        strategy_knobs: dict[str, dict[str, dict[str, Any]]] | None = None,
        strategy_profiles: dict[str, dict[str, dict[str, Any]]] | None = None, families: Iterable[str] = (),
        task_ids: Iterable[str] = (), limit: int | None = None, plot_task: str | None = None,
        watch: Callable[[dict[str, Any]], None] | None = None, executor: str = "local",
        ray_address: str | None = None, windows: Iterable[int] = ()) -> Path:
    """Run every task x strategy x seed cell (at each of `windows`, when given), write the results layout and report; return its path.

    `load_results(run(...))` gives the runs and requests as DataFrames. cache: response-cache
    directory; max_cost_usd: per run; max_total_cost_usd: per call (cells left unstarted are
    listed in unstarted.json); max_concurrency: requests per model at once; clock: how long tools
    and users take on the simulated clock (harness.core.clock.ClockConfig; default: each family's table);
    extra_files: name -> text written beside config.json once every input is validated (a sweep's sweep.json);
    strategy_knobs: strategy label -> profile name -> mock knobs its runs use on top of that profile's
    (a sweep's `mock.<knob>` axes; runner.Matrix); strategy_profiles: strategy label -> profile name -> profile
    fields its runs use instead (a sweep's `cache_policy` axis).
    families, task_ids, limit: which of the suite's tasks run (harness.run.selection; limit is per family).
    plot_task: the task of plots/context_per_request.png (harness.results.plots.write_plots).
    watch: told of each finished run's row once it is in runs.jsonl (`run --inspect-log`).
    executor: how the cells run, not what is measured ("local", "in_process" or "ray"; harness.executors);
    ray_address: the Ray cluster of "ray" ("auto", "ray://host:10001"; None: a local Ray of `workers` CPUs).
    windows: a window axis: every cell at each input window (the mock's window, a real model's
    max_input_tokens); with more than one, the window is part of each run id (harness.run.runner.Matrix).
    """
    # Imported here so that reading results (notebooks) does not load litellm and datasets.
    from harness.executors import check_executor
    from harness.run.invocation import (check_budgets, check_credentials, resolve_served_mock_window,
                                    with_invocation_options)
    from harness.run.runner import DEFAULT_MAX_REQUESTS, Matrix, validate_cells
    from harness.run.selection import TaskSelection
    from harness.run.thresholds import print_warnings, threshold_notes
    from tasks.suites import load_tasks

    check_executor(executor, ray_address)

    selection = TaskSelection(tuple(families), tuple(task_ids), limit)
    tasks = selection.apply(load_tasks(suite), suite)
    check_plot_task(plot_task, (task.task_id for task in tasks), f"suite {suite}")
    strategies = list(strategies) if not isinstance(strategies, str) else strategies
    if isinstance(strategies, str) or (strategies and isinstance(strategies[0], str)):
        specs = strategy_specs(strategies, strategy_configs)  # type: ignore[arg-type]
    else:
        specs = list(strategies)  # type: ignore[arg-type]
    profiles = with_invocation_options(profiles or mock_profiles(), cache=cache and str(cache),
                                       max_concurrency=max_concurrency)
    resolve_served_mock_window(profiles)
    matrix = Matrix(tasks=tasks, strategies=specs, seeds=list(seeds), profiles=profiles,
                    max_requests=max_requests or DEFAULT_MAX_REQUESTS, max_cost_usd=max_cost_usd,
                    clock=clock or {}, strategy_knobs=strategy_knobs or {},
                    strategy_profiles=strategy_profiles or {}, windows=list(windows))
    remember(profiles, [spec.config for spec in specs])  # this invocation's secrets, scrubbed from all it writes
    out_path = Path(out) if out else default_out()
    cells = matrix.build(str(out_path / EVENTS_DIR))
    validate_cells(cells)
    thresholds = threshold_notes(cells)
    baseline = report_baseline(baseline, specs)
    check_writable_dir(out_path, "--out")
    check_budgets(profiles, max_cost_usd, max_total_cost_usd)
    check_credentials(profiles)
    print_warnings(thresholds)
    out_path.mkdir(parents=True, exist_ok=True)
    with hold(out_path, "run"):
        _run_locked(out_path, suite, selection, tasks, specs, seeds, matrix, cells, thresholds, workers=workers,
                    progress=progress,
                    baseline=baseline, max_cost_usd=max_cost_usd, max_total_cost_usd=max_total_cost_usd,
                    command_line=command_line, extra_files=extra_files or {}, plot_task=plot_task, watch=watch,
                    executor=executor, ray_address=ray_address)
    return out_path


def _run_locked(out_path: Path, suite: str, selection: Any, tasks: list[Any], specs: list[StrategySpec],
                seeds: Iterable[int], matrix: Any, cells: list[Any], thresholds: dict[str, Any], *, workers: int,
                progress: bool, baseline: str,
                max_cost_usd: float | None, max_total_cost_usd: float | None, command_line: list[str] | None,
                extra_files: dict[str, str], plot_task: str | None = None,
                watch: Callable[[dict[str, Any]], None] | None = None, executor: str = "local",
                ray_address: str | None = None) -> None:
    """run's writing part, with the directory's lock held (a second writer was refused before this)."""
    from harness.run.invocation import execute

    if (out_path / RUNS_FILE).exists():
        raise ConfigError(f"{out_path} already holds runs; finish it with --resume {out_path} or choose another --out")
    results = ResultsDir(out_path)
    for name, text in extra_files.items():
        (out_path / name).write_text(text, encoding="utf-8")
    results.write_config({
        "suite": suite,
        "selection": selection.as_dict(),  # which of the suite's tasks; `tasks` holds them, so resume needs no more
        "tasks": [t.as_dict() for t in tasks],
        "strategies": [{"label": s.display, "name": s.name, "config": redact(s.config)} for s in specs],
        "strategy_thresholds": thresholds,  # per label and window: the effective token thresholds, and warnings
        "seeds": list(seeds),
        "profiles": redact(matrix.profiles),
        "max_requests": matrix.max_requests,
        "max_cost_usd": max_cost_usd,
        "clock": matrix.clock,
        **({"strategy_knobs": matrix.strategy_knobs} if matrix.strategy_knobs else {}),
        **({"strategy_profiles": matrix.strategy_profiles} if matrix.strategy_profiles else {}),
        **({"windows": matrix.windows} if matrix.windows else {}),
        "workers": workers,
        "executor": executor_info(executor, ray_address),
    }, command_line=command_line)
    execute(results, cells, workers=workers, progress=progress, max_total_cost_usd=max_total_cost_usd, watch=watch,
            executor=executor, ray_address=ray_address)
    write_report(out_path, baseline=baseline, plot_task=plot_task)


def resume(results_dir: str | Path, *, workers: int = 1, progress: bool = False, cache: str | Path | None = None,
           max_cost_usd: float | None = None, max_total_cost_usd: float | None = None,
           max_concurrency: int | None = None, baseline: str | None = None, rerun_errors: bool = False,
           repair: bool = False, api_base: str | None = None, executor: str = "local",
           ray_address: str | None = None) -> Path:
    """Finish an interrupted run: the matrix of its config.json, minus the cells already in runs.jsonl
    (rows that ended on an outage, or with rerun_errors any `error` row, are run again and replaced).
    Every line of runs.jsonl must be a row of that matrix; repair moves the others to runs.quarantine.jsonl.
    `api_base`: a URL whose credentials config.json could not hold, given again (harness.run.invocation)."""
    from harness.executors import check_executor

    check_executor(executor, ray_address)
    if not Path(results_dir).is_dir():
        raise ConfigError(f"--resume: cannot read {Path(results_dir) / 'config.json'}: no such directory")
    with hold(results_dir, "run --resume"):
        return _resume_locked(results_dir, workers=workers, progress=progress, cache=cache, max_cost_usd=max_cost_usd,
                              max_total_cost_usd=max_total_cost_usd, max_concurrency=max_concurrency,
                              baseline=baseline, rerun_errors=rerun_errors, repair=repair,
                              api_base=api_base, executor=executor, ray_address=ray_address)


def _resume_locked(results_dir: str | Path, *, workers: int, progress: bool, cache: str | Path | None,
                   max_cost_usd: float | None, max_total_cost_usd: float | None, max_concurrency: int | None,
                   baseline: str | None, rerun_errors: bool, repair: bool,
                   api_base: str | None, executor: str, ray_address: str | None) -> Path:
    from harness.run.invocation import (check_budgets, check_credentials, check_rows, execute, load_matrix,
                                    resolve_served_mock_window, with_invocation_options)
    from harness.run.runner import validate_cells

    matrix = load_matrix(results_dir, api_base)
    remember(matrix.profiles, [spec.config for spec in matrix.strategies])
    matrix.profiles = with_invocation_options(matrix.profiles, cache=cache and str(cache),
                                              max_concurrency=max_concurrency)
    resolve_served_mock_window(matrix.profiles)  # recorded budgets: the server must still have that window
    if max_cost_usd is not None:
        matrix.max_cost_usd = max_cost_usd
    cells = matrix.build(str(Path(results_dir) / EVENTS_DIR))
    validate_cells(cells)
    baseline = report_baseline(baseline, matrix.strategies)
    check_writable_dir(results_dir, "--resume")
    check_budgets(matrix.profiles, matrix.max_cost_usd, max_total_cost_usd)
    check_credentials(matrix.profiles)
    results = ResultsDir(results_dir)
    check_rows(results, cells, repair=repair)
    execute(results, cells, workers=workers, progress=progress, max_total_cost_usd=max_total_cost_usd,
            rerun_errors=rerun_errors, executor=executor, ray_address=ray_address)
    write_report(results_dir, baseline=baseline)
    return Path(results_dir)


def executor_info(executor: str, ray_address: str | None) -> dict[str, Any]:
    """What config.json says of how the cells ran (not of what was measured): the executor, and the Ray
    address scrubbed of credentials it may hold."""
    return {"name": executor, **({"ray_address": redact_text(ray_address)} if ray_address else {})}


def default_out() -> Path:
    return Path("results") / time.strftime("%Y%m%d-%H%M%S")


def sweep(grid: Grid | dict[str, Any], suite: str = "default", *, also: Iterable[str] = (),
          seeds: Iterable[int] = (0,), profiles: dict[str, dict[str, Any]] | None = None,
          max_requests: int | None = None, out: str | Path | None = None, workers: int = 1, progress: bool = False,
          baseline: str | None = None, cache: str | Path | None = None, max_cost_usd: float | None = None,
          max_total_cost_usd: float | None = None, max_concurrency: int | None = None,
          clock: dict[str, Any] | None = None, command_line: list[str] | None = None,
          families: Iterable[str] = (), task_ids: Iterable[str] = (), limit: int | None = None,
          plot_task: str | None = None, watch: Callable[[dict[str, Any]], None] | None = None,
          executor: str = "local", ray_address: str | None = None, windows: Iterable[int] = ()) -> Path:
    """Run every grid point (plus the strategies in `also`, e.g. the baseline) and write tuning.csv.

    `grid`: a Grid, or a grid file's own mapping ({"strategy", "config", "label", "grid": {key: [values]}});
    keys `mock.<knob>` / `summarizer.<knob>` vary the mock's knobs per point (harness.sweep). Every other
    option is `run`'s, forwarded: spending, cache, concurrency, task selection, the window axis (retries: in `profiles`,
    as `ctxbench run --retry` puts them). The report's baseline is `none` if run, else the first of `also`.
    Every point's strategy and knobs are checked before any model call, so a bad key fails at once. An
    interrupted sweep is finished by `resume(its directory)`, tuning.csv included. Returns the results
    directory; `load_results(...)` gives its tables, tuning included.
    """
    if not isinstance(grid, Grid):
        grid = grid_from_mapping(grid, "sweep grid")
    remember(grid.base, grid.axes)  # before the points are built: their errors may echo a value
    points = validate_grid(grid)
    extra = strategy_specs(list(also)) if list(also) else []
    if baseline is None and extra and DEFAULT_BASELINE not in [spec.display for spec in extra]:
        baseline = extra[0].display
    out_path = Path(out) if out else default_out()
    check_writable_dir(out_path, "--out")
    return run(suite, strategies=[point.spec for point in points] + extra, seeds=seeds, profiles=profiles,
               max_requests=max_requests, out=out_path, workers=workers, progress=progress, baseline=baseline,
               cache=cache, max_cost_usd=max_cost_usd, max_total_cost_usd=max_total_cost_usd,
               max_concurrency=max_concurrency, clock=clock, command_line=command_line,
               extra_files={SWEEP_FILE: sweep_file_text(grid, points)}, strategy_knobs=point_knobs(points),
               strategy_profiles=point_profiles(points),
               families=families, task_ids=task_ids, limit=limit, plot_task=plot_task, watch=watch,
               executor=executor, ray_address=ray_address, windows=windows)


def traces(paths: Iterable[str | Path], *, strategies: Iterable[StrategySpec] | str = "none",
           strategy_configs: dict[str, Any] | None = None, fmt: str = "auto",
           profiles: dict[str, dict[str, Any]] | None = None, out: str | Path | None = None,
           progress: bool = False, baseline: str | None = None, command_line: list[str] | None = None,
           calibrate: bool = False, chosen: Iterable[str] = (), include_sidechains: bool = False) -> Path:
    """Replay recorded trajectories under each strategy (harness.traces.replay); write the results layout.

    Every trace is read and checked, and every strategy built, before anything is written: bad input
    raises ConfigError and leaves `out` as it was. `profiles`: as `mock_profiles("mock/replay", ...)`.
    `calibrate`: replay each trace as its agent ran it (harness.traces.calibration; `chosen`: the provider
    options the caller set, which it keeps) and write calibration.csv (harness.results.calibration).
    `include_sidechains`: Claude Code sessions' subagent threads become traces of their own too.
    """
    from harness.traces.replay import REPLAY_MODEL, build_cells
    from harness.traces import load_traces

    paths = [str(path) for path in paths]
    specs = strategy_specs(strategies, strategy_configs) if isinstance(strategies, str) else list(strategies)
    profiles = profiles or mock_profiles(REPLAY_MODEL)
    remember(profiles, [spec.config for spec in specs])
    options = {"include_sidechains": True} if include_sidechains else {}
    loaded = load_traces(paths, fmt, **options)
    out_path = Path(out) if out else default_out()
    check_writable_dir(out_path, "--out")
    cells = build_cells(loaded, specs, profiles, str(out_path / EVENTS_DIR), calibrate=calibrate, chosen=tuple(chosen))
    labels = [spec.display for spec in specs]
    baseline = report_baseline(baseline, specs, DEFAULT_BASELINE if DEFAULT_BASELINE in labels else labels[0])
    out_path.mkdir(parents=True, exist_ok=True)
    with hold(out_path, "traces"):
        _traces_locked(out_path, paths, fmt, options, loaded, specs, profiles, cells, progress=progress,
                       baseline=baseline, command_line=command_line, calibrate=calibrate)
    return out_path


def _traces_locked(out_path: Path, paths: list[str], fmt: str, options: dict[str, Any], loaded: list[Any],
                   specs: list[StrategySpec], profiles: dict[str, dict[str, Any]], cells: list[Any], *,
                   progress: bool, baseline: str, command_line: list[str] | None, calibrate: bool) -> None:
    """traces' writing part, with the directory's lock held."""
    from harness.traces.replay import replay_cells

    if (out_path / RUNS_FILE).exists():
        raise ConfigError(f"{out_path} already holds runs; choose another --out")
    results = ResultsDir(out_path)
    results.write_config({
        "traces": paths, "format": fmt, "format_options": options,
        "trace_ids": [trace.trace_id for trace in loaded],
        "strategies": [{"label": s.display, "name": s.name, "config": redact(s.config)} for s in specs],
        "seeds": [0], "profiles": redact(profiles), "calibrate": calibrate,
    }, command_line=command_line)
    replay_cells(cells, results.append_run, progress=progress)
    write_report(out_path, baseline=baseline)
    if calibrate:
        from harness.results.calibration import CALIBRATION_TEXT, write_calibration

        (out_path / CALIBRATION_TEXT).write_text(write_calibration(out_path) + "\n", encoding="utf-8")


@dataclass
class Results:
    """A results directory's tables as DataFrames (what notebooks work with). `requests` reads every run's
    event log, so it is built on first use only; `requests_of(runs)` reads only those runs' logs."""

    path: Path
    runs: pd.DataFrame = field(repr=False)
    summary: pd.DataFrame = field(repr=False)
    paired: pd.DataFrame = field(repr=False)
    tuning: pd.DataFrame | None = field(repr=False)
    _requests: pd.DataFrame | None = field(default=None, init=False, repr=False)

    @property
    def requests(self) -> pd.DataFrame:
        """One row per successful LLM request of every run (harness.results.frames.requests_frame)."""
        if self._requests is None:
            self._requests = self.requests_of(self.runs)
        return self._requests

    def requests_of(self, runs: pd.DataFrame) -> pd.DataFrame:
        """The requests of `runs` (rows of `self.runs`), read from their event logs alone."""
        return requests_frame(self.path, runs)

    @property
    def is_sweep(self) -> bool:
        return self.tuning is not None

    @property
    def recommended(self) -> str | None:
        """The recommended row of a sweep's tuning table (the rule of harness.sweep), a baseline possibly."""
        return recommended_label(self.tuning)


def read_table(path: Path) -> pd.DataFrame:
    """A CSV table of a results directory (summary, paired, tuning); empty when not written (yet)."""
    return pd.read_csv(path) if path.exists() and path.stat().st_size else pd.DataFrame()


def load_results(path: str | Path) -> Results:
    """Runs (runs.jsonl), the report's tables and, when first asked for, the requests (from the event logs)."""
    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"load_results: {path} is not a results directory")
    runs = runs_frame(path)
    return Results(path=path, runs=runs, summary=read_table(path / SUMMARY_FILE),
                   paired=read_table(path / PAIRED_FILE),
                   tuning=read_table(path / TUNING_FILE) if (path / SWEEP_FILE).exists() else None)
