"""Summaries, paired comparisons, report.md and plots of a results directory, from its files alone."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from harness.errors import ConfigError
from harness.events import read_events
from harness.metrics import LOOP_CONDENSATIONS
from harness.results import CONFIG_FILE, EVENTS_DIR, SUMMARY_FILE, read_runs
from harness.stats import CLUSTER_KEY, DEFAULT_SEED, bootstrap_mean, bootstrap_ratio, paired_difference

PAIRED_FILE = "paired.csv"
REPORT_FILE = "report.md"
DEFAULT_BASELINE = "none"
# Metrics compared between strategies: (summary column, runs.jsonl field, how to show a value).
COMPARED = (
    ("success_rate", "success", "{:.0%}"),
    ("mean_input_tokens", "input_tokens", "{:,.0f}"),
    ("mean_cost_usd", "cost_usd", "{:.4f}"),
    ("cache_hit_rate", "cache_hit_rate", "{:.1%}"),
)
REQUEST_COLUMNS = ["run_id", "task_id", "family", "strategy", "seed", "profile", "request", "input_tokens",
                   "cached_tokens", "cache_write_tokens", "output_tokens", "cost_usd", "resets_before",
                   "compactions_before"]


# What an interval means, said in report.md (the README says the same near its first table).
INTERVAL_MEANING = ("over tasks: each resample draws task ids with replacement and takes all runs (every seed) "
                    "of each drawn task, so they say how much a figure would move on another draw of tasks like "
                    "these; more seeds of the same tasks do not narrow them unless outcomes vary between seeds.")

# Failure modes of a run (issue 18 part 4; harness.metrics): runs.jsonl field, how a count of it reads.
FAILURE_MODES = (
    ("condensation_loops", "condensation loop(s)"),
    ("orphan_view_requests", "request(s) with a tool call or result missing its partner"),
    ("task_missing_requests", "request(s) without the task statement"),
    ("reexecuted_state_calls", "state-changing call(s) re-executed after a condensation"),
)
NO_FINISHED_RUNS = "(no finished runs)"  # the table of a results directory whose runs.jsonl holds no run yet


def runs_frame(results_dir: str | Path) -> pd.DataFrame:
    """The runs in run_id order: runs.jsonl holds them in completion order, which varies with the
    workers, and the seeded bootstrap resamples by position, so intervals must not depend on it."""
    runs = pd.DataFrame(read_runs(results_dir))
    return runs.sort_values("run_id", kind="stable", ignore_index=True) if "run_id" in runs else runs


def _run_requests(path: Path, run: dict[str, Any]) -> list[dict[str, Any]]:
    rows, numbers = [], {}
    resets = compactions = 0
    for event in read_events(path):
        if event["type"] == "condensation":
            resets += 1
        elif event["type"] == "compaction":
            compactions += 1
        elif event["type"] == "llm_call" and event.get("ok"):
            profile = event.get("profile")
            numbers[profile] = numbers.get(profile, 0) + 1
            usage = event.get("usage") or {}
            rows.append({**{k: run.get(k) for k in ("run_id", "task_id", "family", "strategy", "seed")},
                         "profile": profile, "request": numbers[profile],
                         **{k: usage.get(k) for k in ("input_tokens", "cached_tokens", "cache_write_tokens",
                                                      "output_tokens")},
                         "cost_usd": event.get("cost_usd"), "resets_before": resets,
                         "compactions_before": compactions})
            resets = compactions = 0
    return rows


def requests_frame(results_dir: str | Path, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per successful LLM request of every finished run, numbered per profile.

    `resets_before` and `compactions_before` count the condensation and compaction events
    since the previous request: where the sawtooth drops.
    """
    runs = runs_frame(results_dir) if runs is None else runs
    rows: list[dict[str, Any]] = []
    for run in runs.to_dict("records"):
        path = Path(results_dir) / EVENTS_DIR / f"{run['run_id']}.jsonl"
        if path.exists():
            rows.extend(_run_requests(path, run))
    return pd.DataFrame(rows, columns=REQUEST_COLUMNS)


def _with_interval(row: dict[str, Any], column: str, estimate: Any) -> None:
    row[column], row[f"{column}_lo"], row[f"{column}_hi"] = estimate.mean, estimate.lo, estimate.hi


def _aggregate(group: pd.DataFrame, seed: int) -> dict[str, Any]:
    """A strategy's figures over its runs; every interval resamples tasks (harness.stats)."""
    row: dict[str, Any] = {"runs": len(group), "tasks": group[CLUSTER_KEY].nunique()}
    tasks = {"clusters": group[CLUSTER_KEY], "seed": seed}
    successes = group["success"].astype(float)
    _with_interval(row, "success_rate", bootstrap_mean(successes, **tasks))
    _with_interval(row, "mean_input_tokens", bootstrap_mean(group["input_tokens"], **tasks))
    _with_interval(row, "mean_cost_usd", bootstrap_mean(group["cost_usd"], **tasks))
    # Cost per success (issue 18 part 7): all runs' cost over the successes, NaN without one.
    # Cost per run rewards failing early (an overflow stops cheap); this does not.
    _with_interval(row, "cost_per_success", bootstrap_ratio(group["cost_usd"], successes, **tasks))
    _with_interval(row, "cache_hit_rate", bootstrap_ratio(group["cached_tokens"], group["input_tokens"], **tasks))
    row.update({
        "mean_score": group["score"].mean(),
        "mean_requests": group["requests"].mean(),
        "mean_cost_usd_uncached": pd.to_numeric(group["cost_usd_uncached"], errors="coerce").mean(),
        # Every condensation of the history: agent resets, hard resets and summaries.
        "mean_resets": (group["agent_resets"] + group["hard_resets"] + group.get("summaries", 0)).mean(),
        "mean_compactions": group["compactions"].mean(),
        "mean_rereads": group["rereads"].mean(),
        "overflow_rate": (group["termination"] == "context_overflow").mean(),
    })
    if "forgotten_references" in group:  # trace replays (harness.trace_replay) alone measure it
        row["mean_forgotten_references"] = pd.to_numeric(group["forgotten_references"], errors="coerce").mean()
    failures = _failure_counts(group)  # sums per strategy (results written before these fields count 0)
    row.update({column: int(failures[column].sum()) for column in failures})
    row["runs_with_failures"] = int(failures[[column for column, _ in FAILURE_MODES]].gt(0).any(axis=1).sum())
    return row


def _failure_counts(runs: pd.DataFrame) -> pd.DataFrame:
    columns = [column for column, _ in FAILURE_MODES] + ["condensations_in_loops"]
    return runs.reindex(columns=columns).apply(pd.to_numeric, errors="coerce").fillna(0)


def failure_section(runs: pd.DataFrame) -> list[str]:
    """report.md's section naming every run that shows a failure mode, and which."""
    lines = ["## Failure modes", "",
             f"Condensation loops: {LOOP_CONDENSATIONS} or more condensations (resets, summaries) in a row with no "
             "task progress between them (progress: the environment's milestones, e.g. hops resolved, items "
             "submitted, edits applied); requests counted of the main model's successful ones. "
             "Definitions: harness/metrics.py.", ""]
    failures = _failure_counts(runs)
    rows = []
    for index, run in runs.iterrows():
        modes = [f"{int(failures.at[index, column]):,} {label}" for column, label in FAILURE_MODES
                 if failures.at[index, column]]
        if modes and failures.at[index, "condensation_loops"]:
            modes[0] += f" ({int(failures.at[index, 'condensations_in_loops']):,} condensations)"
        if modes:
            rows.append([str(run["run_id"]), str(run["strategy"]), "yes" if run["success"] else "no", "; ".join(modes)])
    if not rows:
        return lines + ["No run shows a failure mode.", ""]
    return lines + [markdown(["run", "strategy", "success", "failure modes"], rows), ""]


def _per_group(runs: pd.DataFrame, make: Callable[[str, pd.DataFrame], list[dict[str, Any]]]) -> pd.DataFrame:
    """Rows for all runs (family "all"), then for each family, in order of first appearance."""
    rows = make("all", runs)
    for family in runs["family"].unique():
        rows.extend(make(family, runs[runs["family"] == family]))
    return pd.DataFrame(rows)


def summarize(runs: pd.DataFrame, seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """One row per strategy (family "all") and one per strategy x family, with 95% bootstrap intervals."""
    def make(family: str, subset: pd.DataFrame) -> list[dict[str, Any]]:
        return [{"family": family, "strategy": strategy, **_aggregate(group, seed)}
                for strategy, group in subset.groupby("strategy", sort=False)]
    return _per_group(runs, make)


def paired_differences(runs: pd.DataFrame, baseline: str = DEFAULT_BASELINE,
                       seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """Mean (strategy - baseline) per metric over the same task_id and seed, overall and per family."""
    strategies = [s for s in runs["strategy"].unique() if s != baseline]

    def make(family: str, subset: pd.DataFrame) -> list[dict[str, Any]]:
        rows = []
        values = subset.assign(success=subset["success"].astype(float))
        for strategy in strategies:
            for _, field, _ in COMPARED:
                estimate = paired_difference(values, strategy, baseline, field, seed=seed)
                if estimate.n:
                    rows.append({"family": family, "strategy": strategy, "baseline": baseline, "metric": field,
                                 "pairs": estimate.n, "mean_diff": estimate.mean, "lo": estimate.lo,
                                 "hi": estimate.hi})
        return rows

    columns = ["family", "strategy", "baseline", "metric", "pairs", "mean_diff", "lo", "hi"]
    if baseline not in set(runs["strategy"]):
        return pd.DataFrame(columns=columns)
    return _per_group(runs, make).reindex(columns=columns)


NO_SUCCESS = "—"  # cost per success of a strategy none of whose runs succeeded


def _show(value: Any, fmt: str, missing: str = "n/a") -> str:
    return missing if pd.isna(value) else fmt.format(value)


def _show_interval(row: pd.Series, column: str, fmt: str, missing: str = "n/a") -> str:
    if pd.isna(row[column]):
        return missing
    return f"{fmt.format(row[column])} [{_show(row[f'{column}_lo'], fmt)}, {_show(row[f'{column}_hi'], fmt)}]"


def console_table(summary: pd.DataFrame) -> str:
    overall = summary[summary["family"] == "all"]
    table = pd.DataFrame({
        "strategy": overall["strategy"],
        "runs": overall["runs"].astype(int),
        "success": overall["success_rate"].map("{:.0%}".format),
        "mean input tok": overall["mean_input_tokens"].map("{:,.0f}".format),
        "cache hit": overall["cache_hit_rate"].map(lambda v: _show(v, "{:.1%}")),
        "mean cost $": overall["mean_cost_usd"].map(lambda v: _show(v, "{:.4f}")),
        "cost/success $": overall["cost_per_success"].map(lambda v: _show(v, "{:.4f}", NO_SUCCESS)),
        "resets": overall["mean_resets"].map("{:.2f}".format),
        "compactions": overall["mean_compactions"].map("{:.2f}".format),
        "rereads": overall["mean_rereads"].map("{:.2f}".format),
    })
    return table.to_string(index=False)


def markdown(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; the first two columns (names) left-aligned, the rest (figures) right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def markdown_table(summary: pd.DataFrame) -> str:
    """Summary rows with their 95% intervals: success, input tokens, cost per run and per success, cache hit
    rate, resets, compactions."""
    header = ["family", "strategy", "runs", "success", "mean input tokens", "mean cost (USD)",
              "cost per success (USD)", "cache hit rate", "resets", "compactions"]
    rows = [[str(r["family"]), str(r["strategy"]), str(int(r["runs"])),
             *(_show_interval(r, column, fmt) for column, _, fmt in COMPARED[:3]),
             _show_interval(r, "cost_per_success", "{:.4f}", NO_SUCCESS),
             _show_interval(r, "cache_hit_rate", "{:.1%}"), f"{r['mean_resets']:.2f}", f"{r['mean_compactions']:.2f}"]
            for _, r in summary.iterrows()]
    return markdown(header, rows)


def _points(value: float) -> str:
    return f"{value * 100:+.1f} pt"


# How a difference of each compared metric is shown: rates in percentage points.
DIFF_FORMATS: dict[str, Callable[[float], str]] = {
    "success": _points,
    "input_tokens": "{:+,.0f}".format,
    "cost_usd": "{:+.4f}".format,
    "cache_hit_rate": _points,
}


def markdown_paired(paired: pd.DataFrame) -> str:
    header = ["family", "strategy", "metric", "pairs", "mean difference", "95% interval"]
    rows = []
    for _, r in paired.iterrows():
        show = DIFF_FORMATS[r["metric"]]
        rows.append([str(r["family"]), str(r["strategy"]), str(r["metric"]), str(int(r["pairs"])),
                     show(r["mean_diff"]), f"[{show(r['lo'])}, {show(r['hi'])}]"])
    return markdown(header, rows)


def _read_config(results_dir: Path) -> dict[str, Any]:
    path = results_dir / CONFIG_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def report_markdown(results_dir: Path, summary: pd.DataFrame, paired: pd.DataFrame, baseline: str,
                    plots: list[Path], extra_sections: list[str]) -> str:
    config = _read_config(results_dir)
    main = (config.get("profiles") or {}).get("main") or {}
    lines = [f"# ctxbench report: {results_dir.name}", "",
             f"Suite `{config.get('suite', '?')}`, seeds {config.get('seeds', '?')}, model `{main.get('model', '?')}`, "
             f"{int(summary.loc[summary['family'] == 'all', 'runs'].sum())} runs. "
             f"Intervals are seeded 95% percentile-bootstrap intervals {INTERVAL_MEANING} The cache hit rate is "
             "cached / input tokens over all requests; cost per success is the cost of all runs over the "
             f"number of successes ({NO_SUCCESS} when none succeeded; an upper end of inf: some resamples "
             "of tasks hold no success).", "",
             "## Strategies", "", markdown_table(summary[summary["family"] == "all"]), "",
             "## Strategies per task family", "", markdown_table(summary[summary["family"] != "all"]), "",
             f"## Paired differences against `{baseline}`", ""]
    if paired.empty:
        lines.append(f"No paired differences: strategy `{baseline}` is not in these results "
                     "(choose another with `ctxbench report RESULTS_DIR --baseline NAME`).")
    else:
        lines += ["Mean of (strategy - baseline) over runs with the same task_id and seed, its interval "
                  "resampling tasks; success and cache hit rate in percentage points.", "", markdown_paired(paired)]
    lines += ["", *extra_sections, "## Plots", ""]
    lines += [f"![{path.stem}](plots/{path.name})" for path in plots]
    return "\n".join(lines) + "\n"


def check_baseline(runs: pd.DataFrame, baseline: str) -> None:
    """An explicitly chosen baseline must be one of the strategies in the results."""
    known = list(runs["strategy"].unique())
    if baseline not in known:
        raise ConfigError(f"report: baseline {baseline!r} is not a strategy in these results; "
                          f"strategies: {', '.join(known)}")


def write_report(results_dir: str | Path, baseline: str = DEFAULT_BASELINE,
                 seed: int = DEFAULT_SEED, plot_task: str | None = None) -> dict[str, Any]:
    """Write summary.csv, paired.csv, report.md and plots/ (the context plot of `plot_task` when given);
    return the tables and the console table."""
    from harness.plots import write_plots
    from harness.sweep import write_tuning

    results_dir = Path(results_dir)
    runs = runs_frame(results_dir)
    if runs.empty:
        return {"summary": pd.DataFrame(), "paired": pd.DataFrame(), "table": NO_FINISHED_RUNS, "plots": []}
    summary = summarize(runs, seed)
    summary.to_csv(results_dir / SUMMARY_FILE, index=False)
    paired = paired_differences(runs, baseline, seed)
    paired.to_csv(results_dir / PAIRED_FILE, index=False)
    requests = requests_frame(results_dir, runs)
    plots = write_plots(results_dir, runs, requests, summary, plot_task)
    tuning_sections = write_tuning(results_dir, summary)
    plots += tuning_sections.plots
    (results_dir / REPORT_FILE).write_text(
        report_markdown(results_dir, summary, paired, baseline, plots, failure_section(runs) + tuning_sections.markdown),
        encoding="utf-8")
    return {"summary": summary, "paired": paired, "table": console_table(summary), "plots": plots}



def replay_table(runs: pd.DataFrame) -> str:
    """`ctxbench traces`' console table: per strategy, totals over the traces replayed (harness.trace_replay)."""
    if runs.empty:
        return NO_FINISHED_RUNS
    rows = []
    for strategy, group in runs.groupby("strategy", sort=False):
        recorded = pd.to_numeric(group.get("recorded_input_tokens"), errors="coerce")
        cached, total_in = group["cached_tokens"].fillna(0).sum(), group["input_tokens"].fillna(0).sum()
        rows.append([str(strategy), f"{int(group['success'].sum())}/{len(group)}", f"{int(group['requests'].sum()):,}",
                     f"{int(total_in):,}", "n/a" if recorded.isna().all() else f"{int(recorded.sum()):,}",
                     f"{cached / total_in:.0%}" if total_in else "n/a",
                     f"{pd.to_numeric(group['cost_usd'], errors='coerce').sum():.4f}",
                     f"{int((group['summaries'] + group['hard_resets']).sum())}",
                     f"{int(group['compactions'].sum())}",
                     f"{int(pd.to_numeric(group['forgotten_references'], errors='coerce').fillna(0).sum()):,}"])
    return markdown(["strategy", "traces completed", "requests", "input tokens", "recorded input", "cache hit",
                     "cost USD", "summaries", "compactions", "forgotten refs"], rows)
