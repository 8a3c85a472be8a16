"""Summaries and plots of a results directory, from its files alone."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from harness.events import read_events
from harness.results import EVENTS_DIR, PLOTS_DIR, SUMMARY_FILE, read_runs


def runs_frame(results_dir: str | Path) -> pd.DataFrame:
    return pd.DataFrame(read_runs(results_dir))


def _aggregate(group: pd.DataFrame) -> pd.Series:
    input_sum = group["input_tokens"].sum(min_count=1)
    cached_sum = group["cached_tokens"].sum(min_count=1)
    return pd.Series({
        "runs": len(group),
        "success_rate": group["success"].mean(),
        "mean_score": group["score"].mean(),
        "mean_requests": group["requests"].mean(),
        "mean_input_tokens": group["input_tokens"].mean(),
        "cache_hit_rate": (cached_sum / input_sum) if pd.notna(cached_sum) and input_sum else float("nan"),
        "mean_cost_usd": group["cost_usd"].mean(),
        "mean_cost_usd_uncached": group["cost_usd_uncached"].mean(),
        "mean_resets": (group["agent_resets"] + group["hard_resets"]).mean(),
        "mean_compactions": group["compactions"].mean(),
        "mean_rereads": group["rereads"].mean(),
        "overflow_rate": (group["termination"] == "context_overflow").mean(),
    })


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy (family "all") and one per strategy x family."""
    overall = runs.groupby("strategy", sort=False).apply(_aggregate, include_groups=False).reset_index()
    overall.insert(0, "family", "all")
    per_family = runs.groupby(["family", "strategy"], sort=False).apply(_aggregate, include_groups=False).reset_index()
    return pd.concat([overall, per_family], ignore_index=True)


def console_table(summary: pd.DataFrame) -> str:
    overall = summary[summary["family"] == "all"]
    table = pd.DataFrame({
        "strategy": overall["strategy"],
        "runs": overall["runs"].astype(int),
        "success": overall["success_rate"].map("{:.0%}".format),
        "mean input tok": overall["mean_input_tokens"].map("{:,.0f}".format),
        "cache hit": overall["cache_hit_rate"].map(lambda v: "n/a" if pd.isna(v) else f"{v:.1%}"),
        "mean cost $": overall["mean_cost_usd"].map(lambda v: "n/a" if pd.isna(v) else f"{v:.4f}"),
        "resets": overall["mean_resets"].map("{:.2f}".format),
        "compactions": overall["mean_compactions"].map("{:.2f}".format),
        "rereads": overall["mean_rereads"].map("{:.2f}".format),
    })
    return table.to_string(index=False)


def markdown_table(summary: pd.DataFrame) -> str:
    overall = summary[summary["family"] == "all"]
    lines = ["| strategy | runs | success | mean input tokens | cache hit rate | mean cost (USD) | resets | compactions |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for _, r in overall.iterrows():
        hit = "n/a" if pd.isna(r["cache_hit_rate"]) else f"{r['cache_hit_rate']:.1%}"
        cost = "n/a" if pd.isna(r["mean_cost_usd"]) else f"{r['mean_cost_usd']:.4f}"
        lines.append(f"| {r['strategy']} | {int(r['runs'])} | {r['success_rate']:.0%} | {r['mean_input_tokens']:,.0f} "
                     f"| {hit} | {cost} | {r['mean_resets']:.2f} | {r['mean_compactions']:.2f} |")
    return "\n".join(lines)


def context_series(results_dir: str | Path, run_id: str) -> list[int]:
    """Input tokens of each main-model request of one run (the sawtooth)."""
    events = read_events(Path(results_dir) / EVENTS_DIR / f"{run_id}.jsonl")
    return [e["usage"]["input_tokens"] for e in events
            if e["type"] == "llm_call" and e.get("ok") and e.get("profile") == "main"]


def write_plots(results_dir: str | Path, runs: pd.DataFrame) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots = Path(results_dir) / PLOTS_DIR
    plots.mkdir(exist_ok=True)
    written: list[Path] = []
    # Context size per request for the longest task (by requests under the first strategy).
    first_strategy = runs["strategy"].iloc[0]
    pick = runs[runs["strategy"] == first_strategy].sort_values("requests", ascending=False).iloc[0]
    task_id, seed = pick["task_id"], pick["seed"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for _, row in runs[(runs["task_id"] == task_id) & (runs["seed"] == seed)].iterrows():
        series = context_series(results_dir, row["run_id"])
        ax.plot(range(1, len(series) + 1), series, label=f"{row['strategy']} ({'ok' if row['success'] else 'fail'})")
    ax.set_xlabel("main-model request")
    ax.set_ylabel("input tokens")
    ax.set_title(f"Context size per request: {task_id} (seed {seed})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = plots / "context_per_request.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    overall = summarize(runs)
    overall = overall[overall["family"] == "all"]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.scatter(overall["mean_cost_usd"], overall["success_rate"])
    for _, r in overall.iterrows():
        ax.annotate(r["strategy"], (r["mean_cost_usd"], r["success_rate"]), fontsize=8,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("mean cost per run (USD, cache prices)")
    ax.set_ylabel("success rate")
    ax.set_title("Success against cost")
    fig.tight_layout()
    path = plots / "success_vs_cost.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def write_report(results_dir: str | Path) -> dict[str, Any]:
    """Write summary.csv and plots; return the summary and the console table."""
    runs = runs_frame(results_dir)
    if runs.empty:
        return {"summary": pd.DataFrame(), "table": "(no finished runs)", "plots": []}
    summary = summarize(runs)
    summary.to_csv(Path(results_dir) / SUMMARY_FILE, index=False)
    plots = write_plots(results_dir, runs)
    return {"summary": summary, "table": console_table(summary), "plots": plots}
