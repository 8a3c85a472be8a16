"""Summaries, paired comparisons, report.md and plots of a results directory, from its files alone."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

from harness.conversation.events import find_event_log
from harness.core.errors import ConfigError
from harness.results.forgotten import forgotten_section
from harness.results.metrics import LOOP_CONDENSATIONS
from harness.core.numbers import DOLLARS, SIGNED_USD, USD
from harness.results.frames import runs_frame
from harness.results.layout import CONFIG_FILE, EVENTS_DIR, SUMMARY_FILE
from harness.core.user_files import load_json
from harness.results.tables import aligned, markdown
from harness.results.verdict import checker_parts
from harness.results.stats import (CLUSTER_KEY, DEFAULT_SEED, Estimate, bootstrap_mean, bootstrap_ratio,
                           paired_difference, paired_estimate, paired_frames, pareto_front)

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
# What an interval means, said in report.md (the README says the same near its first table).
INTERVAL_MEANING = ("over tasks: each resample draws task ids with replacement and takes all runs (every seed) "
                    "of each drawn task, so they say how much a figure would move on another draw of tasks like "
                    "these; more seeds of the same tasks do not narrow them unless outcomes vary between seeds.")

# Failure modes of a run (harness.results.metrics): runs.jsonl field, how a count of it reads.
FAILURE_MODES = (
    ("condensation_loops", "condensation loop(s)"),
    ("orphan_view_requests", "request(s) with a tool call or result missing its partner"),
    ("task_missing_requests", "request(s) without the task statement"),
    ("reexecuted_state_calls", "state-changing call(s) re-executed after a condensation"),
)
NO_FINISHED_RUNS = "(no finished runs)"  # the table of a results directory whose runs.jsonl holds no run yet


def _with_interval(row: dict[str, Any], column: str, estimate: Any) -> None:
    row[column], row[f"{column}_lo"], row[f"{column}_hi"] = estimate.mean, estimate.lo, estimate.hi


def _aggregate(group: pd.DataFrame, seed: int) -> dict[str, Any]:
    """A strategy's figures over its runs; every interval resamples tasks (harness.results.stats)."""
    row: dict[str, Any] = {"runs": len(group), "tasks": group[CLUSTER_KEY].nunique()}
    tasks = {"clusters": group[CLUSTER_KEY], "seed": seed}
    successes = group["success"].astype(float)
    _with_interval(row, "success_rate", bootstrap_mean(successes, **tasks))
    _with_interval(row, "mean_input_tokens", bootstrap_mean(group["input_tokens"], **tasks))
    _with_interval(row, "mean_cost_usd", bootstrap_mean(group["cost_usd"], **tasks))
    # Cost per success: all runs' cost over the successes, NaN without one.
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
    if "forgotten_references" in group:  # trace replays (harness.traces.replay) alone measure it
        forgotten = pd.to_numeric(group["forgotten_references"], errors="coerce")
        row["mean_forgotten_references"] = forgotten.mean()
        requests = group.loc[forgotten.notna(), "requests"].sum()  # those of the runs that measured it
        row["forgotten_per_request"] = forgotten.sum() / requests if requests else float("nan")
    failures = _failure_counts(group)  # sums per strategy (results written before these fields count 0)
    row.update({column: int(failures[column].sum()) for column in failures})
    row["runs_with_failures"] = int(failures[[column for column, _ in FAILURE_MODES]].gt(0).any(axis=1).sum())
    row.update(_cache_savings(group))
    return row


def known_costs(runs: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Cost and cost without the cache of the runs whose both are known (a model without prices has neither)."""
    cost = pd.to_numeric(runs["cost_usd"], errors="coerce")
    uncached = pd.to_numeric(runs.get("cost_usd_uncached"), errors="coerce")
    known = cost.notna() & uncached.notna()
    return cost[known], uncached[known]


def _cache_savings(group: pd.DataFrame) -> dict[str, float]:
    """What the prompt cache saved per run (cost without caching - cost) and as a share of the uncached cost."""
    cost, uncached = known_costs(group)
    saved, total = (uncached - cost).sum(), uncached.sum()
    return {"cache_savings_usd": saved / len(cost) if len(cost) else float("nan"),
            "cache_savings_rate": saved / total if total > 0 else float("nan")}


def _failure_counts(runs: pd.DataFrame) -> pd.DataFrame:
    columns = [column for column, _ in FAILURE_MODES] + ["condensations_in_loops"]
    return runs.reindex(columns=columns).apply(pd.to_numeric, errors="coerce").fillna(0)


def failure_section(runs: pd.DataFrame) -> list[str]:
    """report.md's section naming every run that shows a failure mode, and which."""
    lines = ["## Failure modes", "",
             f"Condensation loops: {LOOP_CONDENSATIONS} or more condensations (resets, summaries) in a row with no "
             "task progress between them (progress: the environment's milestones, e.g. hops resolved, items "
             "submitted, edits applied); requests counted of the main model's successful ones. "
             "Definitions: harness/results/metrics.py.", ""]
    failures = _failure_counts(runs)
    showing = failures[[column for column, _ in FAILURE_MODES]].ne(0).any(axis=1)  # visit only those runs
    rows = []
    for index, run in runs[showing].iterrows():
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
        rows = pd.DataFrame([{"family": family, "strategy": strategy, **_aggregate(group, seed)}
                             for strategy, group in subset.groupby("strategy", sort=False)])
        rows["rank"] = decision_order(rows).index.argsort() + 1
        rows["pareto"] = rows.index.isin(pareto_front(rows, "mean_cost_usd", "success_rate").index)
        return rows.to_dict("records")
    return _per_group(runs, make)


def decision_order(rows: pd.DataFrame) -> pd.DataFrame:
    """Summary rows in the order a user chooses by: success rate (highest first), then cost per success
    (lowest first, unknown last), then name; the report's tables and its "best" lines follow it."""
    return rows.sort_values(["success_rate", "cost_per_success", "strategy"], ascending=[False, True, True],
                            na_position="last", kind="stable")


def paired_differences(runs: pd.DataFrame, baseline: str = DEFAULT_BASELINE,
                       seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """Mean (strategy - baseline) per metric over the same task_id and seed, overall and per family."""
    strategies = [s for s in runs["strategy"].unique() if s != baseline]

    def make(family: str, subset: pd.DataFrame) -> list[dict[str, Any]]:
        rows = []
        values = subset.assign(success=subset["success"].astype(float))
        for strategy in strategies:
            frames = paired_frames(values, strategy, baseline, [field for _, field, _ in COMPARED])
            for field, pairs in frames.items():
                estimate = paired_estimate(pairs, seed=seed)
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
ORDER_RULE = "sorted by success rate, then cost per success (lowest first, unknown last), then name"


def _show(value: Any, fmt: str, missing: str = "n/a") -> str:
    return missing if pd.isna(value) else fmt.format(value)


def _show_interval(row: pd.Series, column: str, fmt: str, missing: str = "n/a") -> str:
    if pd.isna(row[column]):
        return missing
    return f"{fmt.format(row[column])} [{_show(row[f'{column}_lo'], fmt)}, {_show(row[f'{column}_hi'], fmt)}]"


def _dollar_interval(row: pd.Series, column: str, missing: str = "n/a") -> str:
    """A dollar figure of a table whose header says the unit, with its 95% interval: `3.719 [1.821, 6.031]`."""
    return DOLLARS.interval(row[column], row[f"{column}_lo"], row[f"{column}_hi"], missing)


def _compact_interval(row: pd.Series, column: str, show: Callable[[float], str], missing: str = "n/a") -> str:
    """`85% [70-95]`: the terminal's estimate with its 95% interval, units said once."""
    if pd.isna(row[column]):
        return missing
    return f"{show(row[column])} [{show(row[f'{column}_lo'])}-{show(row[f'{column}_hi'])}]"


def _percent_number(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value * 100:.0f}"


def _success_compact(row: pd.Series) -> str:
    return f"{row['success_rate']:.0%} [{_percent_number(row['success_rate_lo'])}-{_percent_number(row['success_rate_hi'])}]"


# The terminations of a failed run that mean the task's checker refused what the agent ended with.
CHECKER_ENDS = ("submitted", "gave_up")


def failure_classes(runs: pd.DataFrame) -> str:
    """Who failed the runs that did not succeed, most first: "20 by the task's checker, 3 strategy_failed,
    1 error" (the other classes are terminations: the run was stopped)."""
    failed = runs[~runs["success"].astype(bool)]
    ends = failed["termination"].astype(str).map(lambda t: "by the task's checker" if t in CHECKER_ENDS else t)
    counts = ends.value_counts(sort=False)
    order = sorted(counts.index, key=lambda name: (-counts[name], name))
    return ", ".join(f"{counts[name]} {name}" for name in order)


TERMINAL_WIDTH = 120
# Columns of the terminal table left out, in this order, while it is wider than TERMINAL_WIDTH (long labels
# of sweep points); report.md keeps them all.
OPTIONAL_COLUMNS = ("compactions", "resets", "cache hit")


def console_table(summary: pd.DataFrame, runs: pd.DataFrame) -> str:
    """The terminal's table: the overall rows in decision order with compact intervals, at most TERMINAL_WIDTH
    wide unless labels alone are wider, a legend, and how many of `runs` (the summary's) failed, by whom."""
    overall = decision_order(summary[summary["family"] == "all"])
    columns = {
        "strategy": overall["strategy"].astype(str),
        "runs": overall["runs"].astype(int).astype(str),
        "success": overall.apply(_success_compact, axis=1),
        "cost/success $": overall.apply(lambda r: _compact_interval(r, "cost_per_success", DOLLARS, NO_SUCCESS), axis=1),
        "cost/run $": overall["mean_cost_usd"].map(DOLLARS),
        "cache hit": overall["cache_hit_rate"].map(lambda v: _show(v, "{:.1%}")),
        "cache saved": overall["cache_savings_rate"].map(lambda v: _show(v, "{:.0%}")),
        "resets": overall["mean_resets"].map("{:.2f}".format),
        "compactions": overall["mean_compactions"].map("{:.2f}".format),
    }
    table = aligned(list(columns), [list(row) for row in zip(*columns.values())])
    for dropped in OPTIONAL_COLUMNS:
        if max(map(len, table.splitlines())) <= TERMINAL_WIDTH:
            break
        del columns[dropped]
        table = aligned(list(columns), [list(row) for row in zip(*columns.values())])
    lines = [table, "",
             "Best first: by success, then cost per success, then name. [lo-hi]: 95% interval over tasks;",
             "overlapping intervals do not tell two strategies apart. cache saved: share of the cost without",
             "the prompt cache. resets, compactions: mean per run. Every column: report.md."]
    failed = int((~runs["success"].astype(bool)).sum())
    if failed:
        lines += [f"{failed} of {len(runs)} runs failed ({failure_classes(runs)}).",
                  "report.md's \"Failed runs\" lists them with the checker's expected vs given."]
    return "\n".join(lines)


def _in_decision_order(summary: pd.DataFrame) -> pd.DataFrame:
    """Each family's rows (in order of appearance) in decision order."""
    return pd.concat([decision_order(group) for _, group in summary.groupby("family", sort=False)])


def markdown_table(summary: pd.DataFrame, family: bool = True) -> str:
    """Summary rows in decision order with their 95% intervals: success, cost per success and per run, input
    tokens, cache hit rate, resets, compactions, and whether the row is on its family's Pareto front."""
    header = ["strategy", "runs", "success", "cost per success (USD)", "mean cost (USD)", "mean input tokens",
              "cache hit rate", "resets", "compactions", "Pareto"]
    ordered = _in_decision_order(summary)
    rows = [[str(r["strategy"]), str(int(r["runs"])), _show_interval(r, "success_rate", "{:.0%}"),
             _dollar_interval(r, "cost_per_success", NO_SUCCESS), _dollar_interval(r, "mean_cost_usd"),
             _show_interval(r, "mean_input_tokens", "{:,.0f}"), _show_interval(r, "cache_hit_rate", "{:.1%}"),
             f"{r['mean_resets']:.2f}", f"{r['mean_compactions']:.2f}", "yes" if bool(r.get("pareto", False)) else ""]
            for _, r in ordered.iterrows()]
    if family:
        header = ["family", *header]
        rows = [[str(family_name), *row] for family_name, row in zip(ordered["family"], rows)]
    return markdown(header, rows, names=2 if family else 1)


def success_pivot(summary: pd.DataFrame) -> str:
    """Success % [95% interval] per strategy (rows, overall decision order) and family (columns, then all);
    a cell whose runs differ from its column's says its own n."""
    families = [f for f in summary["family"].unique() if f != "all"] + ["all"]
    cells = summary.set_index(["strategy", "family"])
    runs = {family: int(summary.loc[summary["family"] == family, "runs"].max()) for family in families}
    rows = []
    for strategy in decision_order(summary[summary["family"] == "all"])["strategy"]:
        row = [str(strategy)]
        for family in families:
            if (strategy, family) not in cells.index:
                row.append("")
                continue
            cell = cells.loc[(strategy, family)]
            n = "" if int(cell["runs"]) == runs[family] else f" (n={int(cell['runs'])})"
            row.append(f"{_success_compact(cell)}{n}")
        rows.append(row)
    return markdown(["strategy", *(f"{family} (n={runs[family]})" for family in families)], rows, names=1)


def cost_table(summary: pd.DataFrame) -> str:
    """Cost per run and per success, without the cache, and what the cache saved (absolute and share)."""
    header = ["strategy", "cost per run (USD)", "cost per success (USD)", "uncached per run (USD)",
              "saved by the cache per run (USD)", "saved (%)"]
    rows = [[str(r["strategy"]), _dollar_interval(r, "mean_cost_usd"),
             _dollar_interval(r, "cost_per_success", NO_SUCCESS), DOLLARS(r["mean_cost_usd_uncached"]),
             DOLLARS(r["cache_savings_usd"]), _show(r["cache_savings_rate"], "{:.1%}")]
            for _, r in decision_order(summary[summary["family"] == "all"]).iterrows()]
    return markdown(header, rows, names=1)


def cost_total(runs: pd.DataFrame) -> str:
    """One sentence: what all runs cost at cache prices and without the cache."""
    cost, uncached = known_costs(runs)
    if cost.empty:
        return "No run has a known cost (the model has no prices; choose one with `--price-model`)."
    saved, total = (uncached - cost).sum(), uncached.sum()
    share = f" ({saved / total:.1%})" if total > 0 else ""
    return (f"{len(cost)} of {len(runs)} runs with known prices cost {USD(cost.sum())} at cache "
            f"prices and would have cost {USD(total)} without the cache: the cache saved {USD(saved)}{share}.")


def _label(row: pd.Series) -> str:
    return (f"`{row['strategy']}` ({row['success_rate']:.0%} success, "
            f"{USD(row['mean_cost_usd'])} per run)")


def pareto_lines(overall: pd.DataFrame) -> list[str]:
    """Which strategies are on the Pareto front of success against cost per run, and who beats each other."""
    known = overall.dropna(subset=["mean_cost_usd", "success_rate"])
    front = decision_order(pareto_front(known, "mean_cost_usd", "success_rate"))
    lines = ["Pareto front of success against cost per run (no other strategy succeeds as often for less, or "
             "more often for no more): " + ", ".join(_label(r) for _, r in front.iterrows()) + "."]
    beaten = []
    for _, row in decision_order(known[~known.index.isin(front.index)]).iterrows():
        better = known[(known["mean_cost_usd"] <= row["mean_cost_usd"]) & (known["success_rate"] >= row["success_rate"])
                       & ((known["mean_cost_usd"] < row["mean_cost_usd"]) | (known["success_rate"] > row["success_rate"]))]
        beaten.append(f"`{row['strategy']}` (by `{decision_order(better).iloc[0]['strategy']}`)")
    if beaten:
        lines.append("Dominated: " + ", ".join(beaten) + ". These are point estimates: see the intervals before "
                     "ruling a strategy out.")
    if len(known) < len(overall):
        lines.append("Without a known cost, off the front: "
                     + ", ".join(f"`{s}`" for s in overall.loc[~overall.index.isin(known.index), "strategy"]) + ".")
    return lines


def _overlap(a: pd.Series, b: pd.Series, column: str) -> bool:
    """Whether two rows' 95% intervals of `column` overlap (unknown ends count as overlapping)."""
    lo_a, hi_a, lo_b, hi_b = (x[f"{column}_{end}"] for x in (a, b) for end in ("lo", "hi"))
    return not (lo_a > hi_b or lo_b > hi_a)


def _paired(runs: pd.DataFrame, best: pd.Series, runner_up: pd.Series, metric: str, seed: int) -> Estimate:
    values = runs.assign(success=runs["success"].astype(float))
    return paired_difference(values, best["strategy"], runner_up["strategy"], metric, seed=seed)


def caution(best: pd.Series, runner_up: pd.Series, runs: pd.DataFrame, seed: int = DEFAULT_SEED) -> str:
    """What a "best" line says of its runner-up. The honest test is the paired difference on the same tasks
    and seeds (harness.results.stats.paired_difference): of success when the success intervals overlap, of cost per run
    when the success rates tie (the order then rests on cost); a caution, "not distinguishable on these tasks",
    when its interval includes 0 or nothing pairs them. Empty when the success intervals are apart."""
    other = f"`{runner_up['strategy']}`"
    if best["success_rate"] == runner_up["success_rate"]:
        diff = _paired(runs, best, runner_up, "cost_usd", seed)
        if not diff.n or pd.isna(diff.mean) or diff.lo <= 0 <= diff.hi:
            shown = f", paired difference in cost per run {_dollars(diff)}," if diff.n and pd.notna(diff.mean) else ""
            return (f"Caution: same success rate as {other}{shown} and ranked on cost alone: not distinguishable "
                    "on these tasks.")
        return (f"Same success rate as {other}; cheaper on the same tasks and seeds (paired difference in cost "
                f"per run {_dollars(diff)}).")
    if not _overlap(best, runner_up, "success_rate"):
        return ""
    diff = _paired(runs, best, runner_up, "success", seed)
    if not diff.n:
        return (f"Caution: its success interval overlaps {other}'s and no runs pair them on the same tasks and "
                "seeds: not distinguishable on these tasks.")
    shown = f"{_points(diff.mean)} [{_points(diff.lo)}, {_points(diff.hi)}]"
    if diff.lo <= 0 <= diff.hi:
        return (f"Caution: its success interval overlaps {other}'s, and the paired difference on the same tasks "
                f"and seeds, {shown}, includes 0: not distinguishable on these tasks.")
    return (f"Its success interval overlaps {other}'s, but the paired difference on the same tasks and seeds, "
            f"{shown}, excludes 0.")


def _dollars(diff: Estimate) -> str:
    return SIGNED_USD.interval(diff.mean, diff.lo, diff.hi)


def _tie(ranked: pd.DataFrame) -> str:
    """The sentence for strategies with exactly the first one's success rate and cost per success (they did
    the same on these tasks, e.g. none of them had to act), which only their names order; empty if none."""
    first = ranked.iloc[0]
    same = ranked.iloc[1:][(ranked.iloc[1:]["success_rate"] == first["success_rate"])
                           & (ranked.iloc[1:]["cost_per_success"] == first["cost_per_success"])]
    if same.empty:
        return ""
    return (f"Tie: {', '.join(f'`{name}`' for name in same['strategy'])} had the same success rate and cost per "
            "success on these tasks; the first is listed by name only.")


def best_lines(summary: pd.DataFrame, runs: pd.DataFrame, seed: int = DEFAULT_SEED) -> list[str]:
    """One line overall and one per family naming the best strategy by the decision order, the runner-up, and
    a caution when the two are not told apart; only strategies with a success are ranked, and a family none
    succeeded on says so."""
    lines = []
    for family in ["all", *(f for f in summary["family"].unique() if f != "all")]:
        ranked = decision_order(summary[summary["family"] == family])
        ranked = ranked[ranked["success_rate"] > 0]  # no crown without a success
        name = "All tasks" if family == "all" else family
        if ranked.empty:
            lines.append(f"- **{name}**: no strategy succeeded on {'any task' if family == 'all' else family}.")
            continue
        best = ranked.iloc[0]
        line = (f"- **{name}**: `{best['strategy']}`, success {_show_interval(best, 'success_rate', '{:.0%}')}, "
                f"{USD(best['cost_per_success'], NO_SUCCESS)} per success.")
        if len(ranked) > 1:
            runner_up = ranked.iloc[1]
            subset = runs if family == "all" else runs[runs["family"] == family]
            line += (f" Runner-up `{runner_up['strategy']}`: {_show_interval(runner_up, 'success_rate', '{:.0%}')}, "
                     f"{USD(runner_up['cost_per_success'], NO_SUCCESS)} per success. "
                     f"{_tie(ranked) or caution(best, runner_up, subset, seed)}")
        lines.append(line.rstrip())
    return lines


FAILED_ROWS_SHOWN = 100  # rows of report.md's failures table; runs.jsonl holds every one
DETAIL_SHOWN = 160  # characters of a failure's checker text shown in report.md


def checker_text(detail: Any, error: Any = None) -> str:
    """A failure's checker detail (runs.jsonl `detail`) and error as one short cell; rows written before
    `detail` existed say so."""
    parts = checker_parts(detail, error)
    text = "; ".join(parts) or NO_SUCCESS
    text = text if len(text) <= DETAIL_SHOWN else text[:DETAIL_SHOWN - 1] + "…"
    return text.replace("|", "\\|").replace("\n", " ")


def failed_runs_section(runs: pd.DataFrame, results_dir: str | Path) -> list[str]:
    """report.md's table of the runs that did not succeed: task (linked to its event log, in the layout it was
    written in), strategy, seed, termination, score and what the checker expected and was given."""
    lines = ["## Failed runs", ""]
    failed = runs[~runs["success"].astype(bool)]
    if failed.empty:
        return lines + ["Every run succeeded.", ""]
    failed = failed.sort_values(["family", "task_id", "strategy", "seed"], kind="stable")
    lines += [f"{len(failed)} of {len(runs)} runs did not succeed. Termination: how the run ended (`submitted`: "
              "the agent answered, wrongly here; `gave_up`: it said it could not; `context_overflow`, "
              "`max_requests`, `budget`: it was stopped; `strategy_failed`: the strategy gave up on its own terms, "
              "e.g. it could not fit the window; `error`: a fault of the harness, the provider or a plug-in's code). "
              "Checker: what the task's checker expected and was given (runs.jsonl `detail`, whole in the event "
              "log's `run_end`).", ""]
    events_dir = Path(results_dir) / EVENTS_DIR
    rows = [[f"[{r['task_id']}]({EVENTS_DIR}/{find_event_log(events_dir, r['run_id']).name})", str(r["strategy"]),
             str(r["seed"]), str(r["termination"]), f"{float(r['score']):.2f}",
             checker_text(r.get("detail"), r.get("error"))]
            for r in failed.head(FAILED_ROWS_SHOWN).to_dict("records")]
    header = ["task", "strategy", "seed", "termination", "score", "checker: expected vs given"]
    lines.append(markdown(header, rows, names=len(header)))
    if len(failed) > FAILED_ROWS_SHOWN:
        lines.append(f"\n... and {len(failed) - FAILED_ROWS_SHOWN} more: runs.jsonl has every row.")
    return lines + [""]


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
    return load_json(path) if path.exists() else {}


def report_markdown(results_dir: Path, runs: pd.DataFrame, summary: pd.DataFrame, paired: pd.DataFrame,
                    baseline: str, plots: list[Path], extra_sections: list[str], seed: int = DEFAULT_SEED) -> str:
    """report.md: the answer first (best per family, Pareto front), then the tables it rests on."""
    config = _read_config(results_dir)
    main = (config.get("profiles") or {}).get("main") or {}
    overall = summary[summary["family"] == "all"]
    families = [f for f in summary["family"].unique() if f != "all"]
    lines = [f"# ctxbench report: {results_dir.name}", "",
             f"Suite `{config.get('suite', '?')}`, seeds {config.get('seeds', '?')}, model `{main.get('model', '?')}`: "
             f"{len(runs)} runs of {len(overall)} strategies on {runs[CLUSTER_KEY].nunique()} tasks in "
             f"{len(families)} families. Figures are estimate [95% interval]; what every column means and how to "
             "read an interval: docs/reporting.md.", "",
             "## Which strategy", "",
             f"Best strategy overall and per task family, {ORDER_RULE}; the runner-up and a caution when these tasks "
             "do not tell the two apart.", "",
             *best_lines(summary, runs, seed), "",
             *pareto_lines(overall), "",
             "## Strategies", "",
             f"All tasks, {ORDER_RULE}. Intervals are seeded 95% percentile-bootstrap intervals {INTERVAL_MEANING} "
             "Two strategies whose intervals overlap are not told apart by these tasks; the paired differences "
             "below are the sharper test. The cache hit rate is cached / input tokens over all requests; cost per "
             "success is the cost of all runs over the number of successes "
             f"({NO_SUCCESS} when none succeeded; an upper end of inf: some resamples of tasks hold no success). "
             "Pareto: on the front of success against cost per run.", "",
             markdown_table(overall, family=False), "",
             "## Success per task family", "",
             "Success rate % [95% interval] of each strategy (rows, best overall first) on each family's tasks; "
             "n: runs per strategy.", "",
             success_pivot(summary), "",
             "## Cost", "",
             "Mean cost per run at cache prices, cost per success, the same runs' cost without the prompt cache, "
             "and what the cache saved (uncached - cost, per run and as a share of the uncached cost).", "",
             cost_table(summary), "", cost_total(runs), "",
             "## Strategies per task family", "", markdown_table(summary[summary["family"] != "all"]), "",
             f"## Paired differences against `{baseline}`", ""]
    if paired.empty:
        lines.append(f"No paired differences: strategy `{baseline}` is not in these results "
                     "(choose another with `ctxbench report RESULTS_DIR --baseline NAME`).")
    else:
        lines += ["Mean of (strategy - baseline) over runs with the same task_id and seed, its interval "
                  "resampling tasks; success and cache hit rate in percentage points. An interval that spans 0: "
                  "no difference shown on these tasks.", "", markdown_paired(paired)]
    lines += ["", *failed_runs_section(runs, results_dir), *extra_sections, "## Plots", ""]
    lines += [f"![{path.stem}](plots/{path.name})" for path in plots]
    return "\n".join(lines) + "\n"


def check_baseline(runs: pd.DataFrame, baseline: str) -> None:
    """An explicitly chosen baseline must be one of the strategies in the results."""
    known = list(runs["strategy"].unique())
    if baseline not in known:
        raise ConfigError(f"report: baseline {baseline!r} is not a strategy in these results; "
                          f"strategies: {', '.join(known)}")


def write_report(results_dir: str | Path, baseline: str = DEFAULT_BASELINE, seed: int = DEFAULT_SEED,
                 plot_task: str | None = None, runs: pd.DataFrame | None = None) -> dict[str, Any]:
    """Write summary.csv, paired.csv, report.md and plots/ (the context plot of `plot_task` when given);
    return the tables and the console table. `runs`: the directory's runs_frame when the caller has read it
    already (runs.jsonl is then not read twice)."""
    from harness.results.plots import write_plots, write_window_plot
    from harness.results.tuning import write_tuning

    results_dir = Path(results_dir)
    runs = runs_frame(results_dir) if runs is None else runs
    if runs.empty:
        return {"summary": pd.DataFrame(), "paired": pd.DataFrame(), "table": NO_FINISHED_RUNS, "plots": []}
    _read_config(results_dir)  # read before any file is replaced: a config.json cut short fails here
    summary = summarize(runs, seed)
    summary.to_csv(results_dir / SUMMARY_FILE, index=False)
    paired = paired_differences(runs, baseline, seed)
    paired.to_csv(results_dir / PAIRED_FILE, index=False)
    plots = write_plots(results_dir, runs, summary, plot_task)
    window_lines: list[str] = []
    if len(run_windows(runs)) > 1:
        windows = window_summary(runs, seed)
        window_lines = window_section(windows)
        plots.append(write_window_plot(results_dir, windows))
    tuning_sections = write_tuning(results_dir, summary, runs)
    plots += tuning_sections.plots
    (results_dir / REPORT_FILE).write_text(
        report_markdown(results_dir, runs, summary, paired, baseline, plots,
                        forgotten_section(results_dir, runs) + failure_section(runs) + window_lines
                        + tuning_sections.markdown, seed),
        encoding="utf-8")
    return {"summary": summary, "paired": paired, "table": console_table(summary, runs), "plots": plots}



def run_windows(runs: pd.DataFrame) -> list[int]:
    """The distinct input windows of these runs, smallest first (rows written before the `window` column,
    or of a model whose limit is unknown, have none)."""
    if "window" not in runs:
        return []
    return sorted(int(window) for window in pd.to_numeric(runs["window"], errors="coerce").dropna().unique())


def window_summary(runs: pd.DataFrame, seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """One row per strategy x window (all tasks), with summarize's figures and 95% intervals: how each
    strategy fares as the window shrinks."""
    known = runs[pd.to_numeric(runs["window"], errors="coerce").notna()]
    rows = [{"strategy": strategy, "window": int(window), **_aggregate(group, seed)}
            for (strategy, window), group in known.groupby(["strategy", "window"], sort=False)]
    return pd.DataFrame(rows).sort_values("window", kind="stable").reset_index(drop=True)


def window_section(table: pd.DataFrame) -> list[str]:
    """report.md's section of a results directory run at several windows (`--window 32000,200000`)."""
    windows = sorted(table["window"].unique())
    strategies = list(dict.fromkeys(table["strategy"]))
    cells = table.set_index(["strategy", "window"])
    header = ["strategy", *(f"{int(window):,} tokens" for window in windows)]

    def grid(show: Callable[[pd.Series], str]) -> str:
        rows = [[str(strategy), *(show(cells.loc[(strategy, window)]) if (strategy, window) in cells.index else ""
                                   for window in windows)] for strategy in strategies]
        return markdown(header, rows, names=1)

    return ["## Against the window", "",
            f"Every cell was run at each of {len(windows)} input windows (columns, in tokens; the run id names the "
            "window). Success rate % [95% interval] and cost per success in USD [95% interval], intervals "
            f"{INTERVAL_MEANING} The strategy whose success holds up as the window shrinks degrades least. "
            "The tables above pool every window; plots/window.png draws these.", "",
            "Success rate:", "", grid(_success_compact), "",
            "Cost per success (USD):", "", grid(lambda row: _dollar_interval(row, "cost_per_success", NO_SUCCESS)), ""]


def replay_table(runs: pd.DataFrame) -> str:
    """`ctxbench traces`' console table: per strategy, totals over the traces replayed (harness.traces.replay)."""
    if runs.empty:
        return NO_FINISHED_RUNS
    rows = []
    for strategy, group in runs.groupby("strategy", sort=False):
        recorded = pd.to_numeric(group.get("recorded_input_tokens"), errors="coerce")
        cached, total_in = group["cached_tokens"].fillna(0).sum(), group["input_tokens"].fillna(0).sum()
        forgotten = pd.to_numeric(group["forgotten_references"], errors="coerce").fillna(0).sum()
        requests = group["requests"].sum()
        rows.append([str(strategy), f"{int(group['success'].sum())}/{len(group)}", f"{int(requests):,}",
                     f"{int(total_in):,}", "n/a" if recorded.isna().all() else f"{int(recorded.sum()):,}",
                     f"{cached / total_in:.0%}" if total_in else "n/a",
                     DOLLARS(pd.to_numeric(group['cost_usd'], errors='coerce').sum(min_count=1)),
                     f"{int((group['summaries'] + group['hard_resets']).sum())}",
                     f"{int(group['compactions'].sum())}", f"{int(forgotten):,}",
                     f"{forgotten / requests:.2f}" if requests else "n/a"])
    return markdown(["strategy", "traces completed", "requests", "input tokens", "recorded input", "cache hit",
                     "cost USD", "summaries", "compactions", "forgotten refs", "forgotten per request"], rows)
