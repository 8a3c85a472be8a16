"""The tuning tables of a sweep, beside its report: one row per grid point (and per strategy run alongside), the
paired comparison with the leader, and the recommendation (the rule: harness.sweep's docstring, docs/sweeps.md).

Read from a results directory's files alone (`sweep.json`, the summary, the runs), as every report is.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.core.numbers import USD
from harness.results.layout import SWEEP_FILE, TUNING_FILE
from harness.results.stats import DEFAULT_SEED, Estimate, paired_difference, pareto_front
from harness.results.tables import aligned, markdown
from harness.core.user_files import load_json


def value_text(value: Any) -> str:
    """A grid value as labels and tables show it: a string as it is, anything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


TUNING_COLUMNS = ["runs", "success_rate", "success_rate_lo", "success_rate_hi", "mean_cost_usd", "mean_cost_usd_lo",
                  "mean_cost_usd_hi", "cost_per_success", "mean_input_tokens", "cache_hit_rate", "mean_resets",
                  "mean_compactions"]


def tuning_table(summary: pd.DataFrame, sweep: dict[str, Any]) -> pd.DataFrame:
    """One row per strategy run alongside (`baseline` True, first) and per grid point that has runs
    (in sweep.json's order: by value), with its parameters and summary figures."""
    overall = summary[summary["family"] == "all"].set_index("strategy")
    labels = [point["label"] for point in sweep["points"]]
    rows = [{"label": label, "baseline": True, **overall.loc[label, TUNING_COLUMNS].to_dict()}
            for label in overall.index if label not in labels]
    for point in sweep["points"]:
        if point["label"] in overall.index:
            params = {key: value_text(value) if isinstance(value, (list, dict)) else value
                      for key, value in point["params"].items()}
            rows.append({"label": point["label"], **params, "baseline": False,
                         **overall.loc[point["label"], TUNING_COLUMNS].to_dict()})
    tuning = pd.DataFrame(rows)
    if tuning.empty:
        return tuning
    tuning["runs"] = tuning["runs"].astype(int)
    tuning["baseline"] = tuning["baseline"].astype(bool)
    axes = [key for key in sweep.get("grid") or {} if key in tuning]
    for key in axes:  # a baseline row has no value: keep an integer axis integer (3, not 3.0) beside it
        if all(type(point["params"].get(key)) is int for point in sweep["points"]):
            tuning[key] = tuning[key].astype("Int64")
    return tuning[["label", *axes, "baseline", *TUNING_COLUMNS]]


def decide(tuning: pd.DataFrame, runs: pd.DataFrame, seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """The tuning table with its Pareto flag and the recommendation's columns (the rule of the module
    docstring): `leader`, `success_vs_best` (_lo, _hi) the paired difference in success of the row
    minus the leader's, `ties_best` whether it ties with the leader, `recommended` the one chosen."""
    tuning = tuning.reset_index(drop=True)
    front = pareto_front(tuning, "mean_cost_usd", "success_rate")
    tuning["pareto"] = tuning.index.isin(front.index)
    order = tuning.assign(_order=range(len(tuning)), _no_success=-tuning["success_rate"])
    leader = order.sort_values(["_no_success", "cost_per_success", "mean_cost_usd", "_order"],
                               na_position="last", kind="stable").index[0]
    differences = [paired_difference(runs, label, tuning.loc[leader, "label"], "success", seed=seed)
                   if index != leader else Estimate(0.0, 0.0, 0.0, 0) for index, label in tuning["label"].items()]
    tuning["leader"] = tuning.index == leader
    tuning["success_vs_best"] = [d.mean for d in differences]
    tuning["success_vs_best_lo"] = [d.lo for d in differences]
    tuning["success_vs_best_hi"] = [d.hi for d in differences]
    tuning["ties_best"] = [not d.hi < 0 for d in differences]  # NaN (no pairs) ties: nothing tells them apart
    tied = order[tuning["ties_best"]].sort_values(["cost_per_success", "_no_success", "mean_cost_usd", "_order"],
                                                  na_position="last", kind="stable")
    tuning["recommended"] = tuning.index == tied.index[0]
    return tuning


def recommended_label(tuning: pd.DataFrame | None) -> str | None:
    """The label of the recommended row of a tuning table (as `decide` made it or tuning.csv holds it)."""
    if tuning is None or tuning.empty or "recommended" not in tuning:
        return None
    chosen = tuning.loc[tuning["recommended"].astype(bool), "label"]
    return str(chosen.iloc[0]) if len(chosen) else None


def recommendation_text(tuning: pd.DataFrame) -> str:
    """The recommendation in words, from the tuning table's columns alone (so tuning.csv says it again)."""
    best = recommended_label(tuning)
    if best is None:
        return "no recommendation: no point has finished runs"
    row = tuning[tuning["label"] == best].iloc[0]
    tied = list(tuning.loc[tuning["ties_best"].astype(bool), "label"])
    who = f"the baseline **{best}**" if bool(row["baseline"]) else f"**{best}**"
    if len(tied) > 1:
        others = ", ".join(label for label in tied if label != best)
        cost = f"{USD(row['cost_per_success'], 'cost unknown')} per success"
        if bool(row["leader"]):
            return (f"{who}: highest success ({row['success_rate']:.0%}) and the cheapest per success ({cost}) "
                    f"of the {len(tied)} rows tied on success within the 95% interval; also tied: {others}")
        leader = tuning[tuning["leader"].astype(bool)].iloc[0]
        return (f"{who}: tie on success within the 95% interval with the leader {leader['label']} "
                f"({leader['success_rate']:.0%} success) at {row['success_rate']:.0%}; the cheapest per success of "
                f"the {len(tied)} tied rows ({cost}); also tied: {others}")
    return (f"{who}: highest success ({row['success_rate']:.0%}), ahead of every other row by more than the 95% "
            "interval of the paired difference")


SHOWN_COLUMNS = ("runs", "success_rate", "success_vs_best", "cost_per_success", "mean_cost_usd", "mean_input_tokens",
                 "mean_resets", "mean_compactions", "baseline", "pareto", "leader", "ties_best", "recommended")


def _axis_columns(tuning: pd.DataFrame) -> list[str]:
    """The grid's axes among the tuning table's columns: tuning_table puts them between label and baseline."""
    return list(tuning.columns[1:list(tuning.columns).index("baseline")])


NO_POINT_FINISHED = "No grid point has finished runs yet."


def tuning_markdown(tuning: pd.DataFrame) -> str:
    """The tuning table as report.md and stdout show it: label, parameters, then the deciding figures."""
    if tuning.empty:  # a spending limit reached before any run finished
        return NO_POINT_FINISHED
    params = _axis_columns(tuning)
    columns = ["label", *params, *[c for c in SHOWN_COLUMNS if c in tuning]]
    rows = [[_tuning_cell(column, row) for column in columns] for _, row in tuning.iterrows()]
    return markdown(columns, rows)


def tuning_console(tuning: pd.DataFrame) -> str:
    """The tuning table for the terminal: each row's parameters, success with its interval, its paired
    difference to the leader, cost per success, and what the decision made of it; report.md has every column."""

    if tuning.empty:
        return NO_POINT_FINISHED
    params = _axis_columns(tuning)
    header = ["label", *params, "runs", "success", "vs leader", "cost/success $", "decision"]
    rows = []
    for _, row in tuning.iterrows():
        marks = [name for name, column in (("recommended", "recommended"), ("leader", "leader"),
                                           ("ties leader", "ties_best"), ("Pareto", "pareto"),
                                           ("baseline", "baseline")) if bool(row[column])]
        if "leader" in marks and "ties leader" in marks:
            marks.remove("ties leader")
        rows.append([str(row["label"]), *[_tuning_cell(key, row) for key in params], str(int(row["runs"])),
                     _tuning_cell("success_rate", row), _tuning_cell("success_vs_best", row),
                     _tuning_cell("cost_per_success", row), ", ".join(marks)])
    return aligned(header, rows, left=(0, len(header) - 1))


def _tuning_cell(column: str, row: pd.Series) -> str:
    """A cell of the shown tuning table; success figures in % with their interval where there is one."""
    value = row[column]
    if value is None or (not isinstance(value, (str, bool)) and pd.isna(value)):
        return ""
    if column == "success_vs_best":  # a difference of rates: percentage points
        lo, hi = row.get(f"{column}_lo"), row.get(f"{column}_hi")
        bounds = f" [{lo * 100:+.0f}, {hi * 100:+.0f}]" if pd.notna(lo) and pd.notna(hi) else ""
        return f"{value * 100:+.0f} pt{bounds}"
    if column == "success_rate":
        lo, hi = row.get(f"{column}_lo"), row.get(f"{column}_hi")
        bounds = f" [{lo:.0%}, {hi:.0%}]" if pd.notna(lo) and pd.notna(hi) else ""
        return f"{value:.0%}{bounds}"
    if column in CELL_FORMATS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return CELL_FORMATS[column].format(value)
    return f"{value:.4g}" if isinstance(value, float) else str(value)


CELL_FORMATS = {"cost_per_success": "{:.4f}", "mean_cost_usd": "{:.4f}", "mean_input_tokens": "{:,.0f}",
                "mean_resets": "{:.2f}", "mean_compactions": "{:.2f}"}


def sweep_title(sweep: dict[str, Any], baselines: list[str]) -> str:
    """The tuning plot's title: what was swept, and against what."""
    against = f" (baseline: {', '.join(baselines)})" if baselines else ""
    return f"Sweep of {sweep.get('strategy')} over {', '.join(sweep.get('grid') or {})}{against}"


@dataclass
class TuningOutput:
    markdown: list[str] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)


def write_tuning(results_dir: str | Path, summary: pd.DataFrame, runs: pd.DataFrame) -> TuningOutput:
    """For a sweep's results (sweep.json present): tuning.csv, its Pareto plot and a report section."""
    from harness.results.plots import plot_success_vs_cost, save_plot

    path = Path(results_dir) / SWEEP_FILE
    if not path.exists():
        return TuningOutput()
    sweep = load_json(path)
    tuning = tuning_table(summary, sweep)
    if tuning.empty:
        tuning.to_csv(Path(results_dir) / TUNING_FILE, index=False)
        return TuningOutput(["## Tuning", "", NO_POINT_FINISHED, ""])
    tuning = decide(tuning, runs)
    tuning.to_csv(Path(results_dir) / TUNING_FILE, index=False)
    best = recommended_label(tuning)
    title = sweep_title(sweep, list(tuning.loc[tuning["baseline"], "label"]))
    plot = save_plot(results_dir, "tuning_pareto",
                     lambda ax: plot_success_vs_cost(ax, tuning, label="label", highlight=best, title=title))
    return TuningOutput(["## Tuning", "", f"Recommended: {recommendation_text(tuning)}.", "", RULE_TEXT, "",
                         tuning_markdown(tuning), ""], [plot])


RULE_TEXT = ("The leader has the highest success rate; a row ties with it unless the 95% interval of the paired "
             "difference in success (same tasks and seeds, tasks resampled; `success_vs_best`) lies wholly below 0; "
             "the recommendation is the cheapest per success among the leader and the rows tying with it. "
             "Baselines (`--also`) take part in the Pareto front and the recommendation.")
