"""The report's plots, each drawn on a given matplotlib Axes so notebooks can reuse them."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

from harness.results import PLOTS_DIR
from harness.stats import pareto_front


def sawtooth_run(runs: pd.DataFrame) -> tuple[str, int]:
    """The (task_id, seed) whose runs show the most resets and compactions, then the most requests."""
    events = runs.assign(_changes=runs["agent_resets"] + runs["hard_resets"] + runs["compactions"])
    totals = events.groupby(["task_id", "seed"], sort=False)[["_changes", "requests"]].sum()
    task_id, seed = totals.sort_values(["_changes", "requests"], ascending=False, kind="stable").index[0]
    return str(task_id), int(seed)


def plot_context(ax: Any, requests: pd.DataFrame, runs: pd.DataFrame, task_id: str, seed: int) -> None:
    """Input tokens per main request of one task under every strategy; x marks a reset, o a compaction."""
    chosen = runs[(runs["task_id"] == task_id) & (runs["seed"] == seed)]
    main = requests[requests["profile"] == "main"]
    for _, run in chosen.iterrows():
        series = main[main["run_id"] == run["run_id"]]
        line, = ax.plot(series["request"], series["input_tokens"],
                        label=f"{run['strategy']} ({'ok' if run['success'] else 'fail'})")
        for column, marker in (("resets_before", "x"), ("compactions_before", "o")):
            marked = series[series[column] > 0]
            ax.scatter(marked["request"], marked["input_tokens"], marker=marker, color=line.get_color(), zorder=3)
    ax.set_xlabel("main-model request")
    ax.set_ylabel("input tokens")
    ax.set_title(f"Context size per request: {task_id} (seed {seed}); x reset, o compaction", fontsize=9)
    ax.legend(fontsize=7)


def plot_success_vs_cost(ax: Any, table: pd.DataFrame, label: str = "strategy",
                         highlight: str | None = None) -> None:
    """Mean cost against success rate with 95% intervals; the Pareto front joins the undominated points."""
    known = table.dropna(subset=["mean_cost_usd", "success_rate"])
    ax.errorbar(known["mean_cost_usd"], known["success_rate"],
                xerr=[known["mean_cost_usd"] - known["mean_cost_usd_lo"], known["mean_cost_usd_hi"] - known["mean_cost_usd"]],
                yerr=[known["success_rate"] - known["success_rate_lo"], known["success_rate_hi"] - known["success_rate"]],
                fmt="o", alpha=0.7, capsize=2)
    front = pareto_front(known, "mean_cost_usd", "success_rate")
    ax.plot(front["mean_cost_usd"], front["success_rate"], "--", color="gray", label="Pareto front")
    texts = [("* " if r[label] == highlight else "") + str(r[label]) for _, r in known.iterrows()]
    points = list(zip(known["mean_cost_usd"], known["success_rate"]))
    for text, point, offset in zip(texts, points, label_offsets(ax, points, texts)):
        ax.annotate(text, point, fontsize=7, fontweight="bold" if text.startswith("* ") else "normal",
                    xytext=offset, textcoords="offset points",
                    arrowprops={"arrowstyle": "-", "color": "gray", "lw": 0.5} if offset[1] != 4 else None)
    ax.set_xlabel("mean cost per run (USD, cache prices)")
    ax.set_ylabel("success rate")
    ax.set_title("Success against cost")
    ax.legend(fontsize=7)


LABEL_POINTS = 7  # font size of point labels
_CHAR_WIDTH, _LINE_HEIGHT = 0.62 * LABEL_POINTS, 1.5 * LABEL_POINTS  # of a label's text, in points


def label_offsets(ax: Any, points: list[tuple[float, float]], texts: list[str]) -> list[tuple[float, float]]:
    """Where each point's label goes (offset in points): beside its point, or stacked above or below it
    when the label would cover one already placed, so labels of close points stay readable."""
    ax.figure.canvas.draw()  # fixes the axes' limits, so data converts to display points
    to_points = 72.0 / ax.figure.dpi
    x0, y0, x1, y1 = (value * to_points for value in ax.bbox.extents)
    placed: list[tuple[float, float, float, float]] = []
    offsets = []
    for (x, y), text in sorted(zip(points, texts), key=lambda item: (item[0][0], -item[0][1])):
        px, py = (value * to_points for value in ax.transData.transform((x, y)))
        width = _CHAR_WIDTH * len(text)
        for step in range(40):
            dy = 4 + _LINE_HEIGHT * ((step + 1) // 2) * (1 if step % 2 else -1) if step else 4
            box = (px + 4, py + dy, px + 4 + width, py + dy + _LINE_HEIGHT)
            inside = y0 <= box[1] and box[3] <= y1
            if inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3]
                                  for b in placed):
                break
        placed.append(box)
        offsets.append(((x, y, text), (4, dy)))
    where = dict(offsets)
    return [where[(x, y, text)] for (x, y), text in zip(points, texts)]


def plot_cache_hit_rate(ax: Any, summary: pd.DataFrame) -> None:
    overall = summary[summary["family"] == "all"].fillna({"cache_hit_rate": 0.0})
    lo = (overall["cache_hit_rate"] - overall["cache_hit_rate_lo"]).fillna(0)
    hi = (overall["cache_hit_rate_hi"] - overall["cache_hit_rate"]).fillna(0)
    ax.bar(overall["strategy"], overall["cache_hit_rate"], yerr=[lo, hi], capsize=3)
    ax.set_ylabel("cached / input tokens")
    ax.set_ylim(0, 1)
    ax.set_title("Prompt-cache hit rate per strategy")
    ax.tick_params(axis="x", labelrotation=30, labelsize=7)


def plot_resets_compactions(ax: Any, runs: pd.DataFrame) -> None:
    """Mean resets (agent + hard) and compaction edits per run, per strategy."""
    counts = runs.assign(resets=runs["agent_resets"] + runs["hard_resets"])
    means = counts.groupby("strategy", sort=False)[["resets", "compactions"]].mean()
    positions = range(len(means))
    ax.bar([p - 0.2 for p in positions], means["resets"], width=0.4, label="resets")
    ax.bar([p + 0.2 for p in positions], means["compactions"], width=0.4, label="compactions")
    ax.set_xticks(list(positions), means.index, rotation=30, fontsize=7)
    ax.set_ylabel("per run (mean)")
    ax.set_title("Resets and compactions per run")
    ax.legend(fontsize=7)


def save_plot(results_dir: str | Path, name: str, draw: Callable[[Any], None],
              size: tuple[float, float] = (7, 4.5)) -> Path:
    """Draw on a fresh figure and save it as plots/<name>.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(results_dir) / PLOTS_DIR / f"{name}.png"
    path.parent.mkdir(exist_ok=True)
    fig, ax = plt.subplots(figsize=size)
    draw(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_plots(results_dir: str | Path, runs: pd.DataFrame, requests: pd.DataFrame,
                summary: pd.DataFrame) -> list[Path]:
    task_id, seed = sawtooth_run(runs)
    overall = summary[summary["family"] == "all"]
    return [
        save_plot(results_dir, "context_per_request", lambda ax: plot_context(ax, requests, runs, task_id, seed)),
        save_plot(results_dir, "success_vs_cost", lambda ax: plot_success_vs_cost(ax, overall)),
        save_plot(results_dir, "cache_hit_rate", lambda ax: plot_cache_hit_rate(ax, summary)),
        save_plot(results_dir, "resets_compactions", lambda ax: plot_resets_compactions(ax, runs)),
    ]
