"""What the notebooks share: which results directory they read, and tables formatted for people.

A notebook runs as it is: its `parameters` cell (papermill's convention) leaves
RESULTS_DIR at None, and `results_dir` picks, in this order, the parameter, the environment
variable CTXBENCH_RESULTS, or the newest results directory under the nearest `results/` (the
working directory's or a parent's, so a notebook started in notebooks/ finds the repository's).
"Newest" is by the modification time of config.json, which every run and sweep writes when it
starts: directory names are the user's choice (`--out`), so a timestamp in them cannot be relied on.

The tables are DataFrames of strings, formatted as everything ctxbench prints (harness.core.numbers): counts with
thousands separators, rates in %, dollars with 4 significant digits, and intervals as `85% [70, 95]` (the
bounds in the estimate's unit).
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from harness.core.errors import ConfigError
from harness.core.numbers import COUNT, MEAN, MISSING, PERCENT, POINTS, SIGNED_COUNT, SIGNED_USD, USD  # noqa: F401
from harness.results.layout import CONFIG_FILE
from harness.results.layout import SWEEP_FILE

RESULTS_ENV = "CTXBENCH_RESULTS"
RESULTS_ROOT = "results"
FIRST_RUN = "ctxbench run --suite smoke"  # what to run when no results exist yet (seconds, with the mock)
FIRST_SWEEP = "ctxbench sweep --strategy observation_masking --grid keep_last=1,3,10 --also none --suite smoke"


def find_results_root(start: Path | None = None) -> Path | None:
    """The `results/` directory in `start` (default: the working directory) or its nearest parent."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / RESULTS_ROOT).is_dir():
            return folder / RESULTS_ROOT
    return None


def newest_results(root: Path, sweep: bool = False) -> Path | None:
    """The directory under `root` whose config.json is newest (with `sweep`: only sweeps' directories)."""
    found = [d for d in root.iterdir() if (d / CONFIG_FILE).is_file() and (not sweep or (d / SWEEP_FILE).is_file())]
    return max(found, key=lambda d: (d / CONFIG_FILE).stat().st_mtime, default=None)


def _checked(path: Path, where: str, sweep: bool) -> Path:
    if not path.is_dir():
        raise ConfigError(f"{where}: {path} is not a directory")
    if not (path / CONFIG_FILE).is_file():
        raise ConfigError(f"{where}: {path} is not a results directory (no {CONFIG_FILE}); `{FIRST_RUN}` writes one")
    if sweep and not (path / SWEEP_FILE).is_file():
        raise ConfigError(f"{where}: {path} holds no {SWEEP_FILE}, so it is not a sweep's; `{FIRST_SWEEP}` writes one")
    return path


def results_dir(given: str | Path | None = None, *, sweep: bool = False, start: Path | None = None) -> Path:
    """The results directory to read: `given` (a notebook's RESULTS_DIR), else $CTXBENCH_RESULTS, else the
    newest under results/; a ConfigError says what to run first when there is none."""
    if given not in (None, ""):
        return _checked(Path(given), "RESULTS_DIR", sweep)
    if os.environ.get(RESULTS_ENV):
        return _checked(Path(os.environ[RESULTS_ENV]), f"${RESULTS_ENV}", sweep)
    root = find_results_root(start)
    newest = newest_results(root, sweep) if root else None
    if newest is None:
        what = "sweep" if sweep else "run"
        raise ConfigError(f"no {what} results found under {root or f'{RESULTS_ROOT}/ (none here or above)'}: "
                          f"run `{FIRST_SWEEP if sweep else FIRST_RUN}` first, or set RESULTS_DIR or ${RESULTS_ENV} "
                          "to a results directory")
    return newest


# paired.csv's metrics: their titles, and how a difference reads (rates in percentage points).
DIFFERENCES = {"success": ("success", POINTS), "cost_usd": ("cost per run", SIGNED_USD),
               "input_tokens": ("input tokens per run", SIGNED_COUNT), "cache_hit_rate": ("cache hit rate", POINTS)}
# summary.csv's estimates with intervals, and how each reads.
SUMMARY_INTERVALS = {"success_rate": ("success", PERCENT), "cost_per_success": ("cost per success", USD),
                     "mean_cost_usd": ("mean cost", USD), "mean_input_tokens": ("mean input tokens", COUNT),
                     "cache_hit_rate": ("cache hit rate", PERCENT)}


def _by_choice(table: pd.DataFrame) -> pd.DataFrame:
    """The order a user chooses in: highest success, then lowest cost per success (none last)."""
    return table.sort_values(["success_rate", "cost_per_success"], ascending=[False, True], na_position="last",
                             kind="stable")


def summary_table(summary: pd.DataFrame, family: str = "all") -> pd.DataFrame:
    """One row per strategy of `family` ("all", a family, or None for every family), best first."""
    rows = _by_choice(summary if family is None else summary[summary["family"] == family])
    if family is None:  # families in their order of appearance, each best first
        order = {name: index for index, name in enumerate(summary["family"].unique())}
        rows = rows.sort_values("family", key=lambda names: names.map(order), kind="stable")
    shown = pd.DataFrame({"family": rows["family"], "strategy": rows["strategy"], "runs": rows["runs"].map(COUNT)})
    for column, (title, show) in SUMMARY_INTERVALS.items():
        shown[title] = [show.interval(*values) for values in
                        zip(rows[column], rows[f"{column}_lo"], rows[f"{column}_hi"])]
    shown["resets"] = rows["mean_resets"].map(MEAN)
    shown["compactions"] = rows["mean_compactions"].map(MEAN)
    return (shown.drop(columns="family") if family is not None else shown).reset_index(drop=True)


def family_pivot(summary: pd.DataFrame) -> pd.DataFrame:
    """Success with its interval, one row per strategy (best overall first) and one column per family."""
    overall = _by_choice(summary[summary["family"] == "all"])["strategy"]
    cells = summary.assign(shown=[PERCENT.interval(m, lo, hi) for m, lo, hi in
                                  zip(summary["success_rate"], summary["success_rate_lo"], summary["success_rate_hi"])])
    pivot = cells.pivot(index="strategy", columns="family", values="shown")
    families = [f for f in summary["family"].unique() if f != "all"] + ["all"]
    return pivot.reindex(index=list(overall), columns=families).rename_axis(columns=None)


def paired_table(paired: pd.DataFrame, family: str = "all", order: list[str] | None = None) -> pd.DataFrame:
    """One row per strategy (in `order`, default as they come), one column per compared metric: its mean
    difference against the baseline over the same task and seed, with its 95% interval, as `+5 pt [-10, +20]`."""
    rows = paired[paired["family"] == family]
    cells = rows.assign(shown=[DIFFERENCES[m][1].interval(d, lo, hi) for m, d, lo, hi in
                               zip(rows["metric"], rows["mean_diff"], rows["lo"], rows["hi"])])
    table = cells.pivot(index="strategy", columns="metric", values="shown")
    strategies = list(rows["strategy"].unique())
    table = table.reindex(index=[s for s in order if s in strategies] if order else strategies,
                          columns=[m for m in DIFFERENCES if m in set(rows["metric"])])
    baseline = rows["baseline"].iloc[0] if len(rows) else "baseline"
    pairs = rows.groupby("strategy", sort=False)["pairs"].max().map(COUNT)
    titles = {metric: title for metric, (title, _) in DIFFERENCES.items()}
    return table.rename(columns=titles).rename_axis(index=f"strategy - {baseline}", columns=None).assign(pairs=pairs)


# runs.jsonl fields the runs table shows, and how.
RUN_COLUMNS = {"requests": COUNT, "input_tokens": COUNT, "cached_tokens": COUNT, "cache_hit_rate": PERCENT,
               "cost_usd": USD, "agent_resets": COUNT, "hard_resets": COUNT, "compactions": COUNT, "rereads": COUNT}


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: what it was, whether it succeeded, how it ended, its figures formatted, and the
    checker's detail when the runs have one."""
    shown = runs[["task_id", "strategy", "seed", "termination"]].copy()
    shown.insert(3, "success", runs["success"].map({True: "yes", False: "no"}))
    for column, show in RUN_COLUMNS.items():
        shown[column] = runs[column].map(show)
    if "detail" in runs:  # the checker's expected vs given, where runs.jsonl records it
        shown["detail"] = runs["detail"].fillna("").astype(str)
    return shown


def context_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per strategy, from the rows alone (no event log is read): runs, main-model requests per run, and the
    mean and peak context per run in input tokens (means over runs, and the largest peak)."""
    grouped = runs.groupby("strategy", sort=False)
    return pd.DataFrame({"runs": grouped.size().map(COUNT),
                         "requests per run": grouped["requests"].mean().map(MEAN),
                         "mean context": grouped["mean_context_tokens"].mean().map(COUNT),
                         "peak context": grouped["peak_context_tokens"].mean().map(COUNT),
                         "largest peak": grouped["peak_context_tokens"].max().map(COUNT)})


def tuning_table(tuning: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """A sweep's points in tuning.csv order: their values, success and cost with intervals, and flags."""
    shown = tuning[["label", *keys]].copy()
    shown["runs"] = tuning["runs"].map(COUNT)
    shown["success"] = [PERCENT.interval(*v) for v in
                        zip(tuning["success_rate"], tuning["success_rate_lo"], tuning["success_rate_hi"])]
    shown["mean cost"] = [USD.interval(*v) for v in
                          zip(tuning["mean_cost_usd"], tuning["mean_cost_usd_lo"], tuning["mean_cost_usd_hi"])]
    shown["cost per success"] = tuning["cost_per_success"].map(USD)
    shown["mean input tokens"] = tuning["mean_input_tokens"].map(COUNT)
    shown["cache hit rate"] = tuning["cache_hit_rate"].map(PERCENT)
    for flag in ("pareto", "recommended"):
        shown[flag] = tuning[flag].map({True: "yes", False: ""})
    return shown
