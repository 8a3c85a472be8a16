"""Effect plots (paired differences against the baseline) and the README's figures.

`python -m harness.figures [RESULTS_DIR] [--out notebooks/figures] [--readme README.md]` redraws a
results directory's plots/ with harness.results.plots and copies the ones the README shows (README_FIGURES) to
--out; with --readme it also rewrites the README's result table (between its markers) as report.md's
Strategies table of that directory; without RESULTS_DIR it reads $CTXBENCH_RESULTS or the newest
results directory (harness.notebook).

The effect plots' axis rule (ours): a difference must not be zoomed into a
dramatic bar. Rates (success, cache hit rate) are in percentage points on the fixed range
-100..100, their whole possible span. Tokens and cost are in their own units on a symmetric range
of at least the baseline's mean either side (what a strategy saves can be at most all of it),
widened to hold every interval.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from harness.core.errors import ConfigError, CtxbenchError
from harness import notebook

README_FIGURES = ("context_per_request", "success_vs_cost")  # plots/<name>.png the README shows
# The lines around the README's result table (README.md's own text says how it is regenerated).
README_TABLE_START = "<!-- results table:"
README_TABLE_END = "<!-- end of results table -->"
DEFAULT_OUT = Path("notebooks") / "figures"
RATE_RANGE = 100.0  # an effect plot's half-width for rates, in percentage points
# paired.csv's metrics plotted -> the summary column of the baseline's mean (None: a rate, in points).
EFFECT_BASES: dict[str, str | None] = {"success": None, "cost_usd": "mean_cost_usd",
                                       "input_tokens": "mean_input_tokens", "cache_hit_rate": None}


def effect_axis(metric: str, summary: pd.DataFrame, baseline: str) -> tuple[float, float]:
    """(scale, least half-width) of `metric`'s axis: rates x100 on +-100 points; tokens and cost as they
    are, on at least +- the baseline's mean (1 when the summary lacks it)."""
    column = EFFECT_BASES[metric]
    if column is None:
        return 100.0, RATE_RANGE
    mean = summary.loc[(summary["family"] == "all") & (summary["strategy"] == baseline), column].abs()
    return 1.0, float(mean.iloc[0]) if len(mean) and mean.iloc[0] > 0 else 1.0


def effect_limit(least: float, lo: pd.Series, hi: pd.Series) -> float:
    """The axis half-width: `least`, or wider to hold every interval end (with a 5% margin)."""
    widest = pd.concat([lo.abs(), hi.abs()]).replace(float("inf"), float("nan")).max()
    return max(least, 1.05 * widest) if pd.notna(widest) else least


def usd_formatter() -> Any:
    """Axis ticks in dollars, as short as the tick values allow ($0.025, -$1.5)."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{'-' if value < 0 else ''}${abs(value):,g}")


def _tick_format(metric: str) -> Any:
    from matplotlib.ticker import EngFormatter, FuncFormatter

    if EFFECT_BASES[metric] is None:
        return FuncFormatter(lambda value, _: f"{value:+.0f}" if value else "0")
    return usd_formatter() if metric == "cost_usd" else EngFormatter(sep="")


def effect_rows(paired: pd.DataFrame, metric: str, order: list[str] | None = None) -> pd.DataFrame:
    """paired.csv's rows of `metric` over all families, in `order` of strategies (default: as they are)."""
    rows = paired[(paired["family"] == "all") & (paired["metric"] == metric)]
    if order is not None:
        rank = {strategy: index for index, strategy in enumerate(order)}
        rows = rows.sort_values("strategy", key=lambda names: names.map(rank), kind="stable")
    return rows.reset_index(drop=True)


def plot_effects(ax: Any, paired: pd.DataFrame, summary: pd.DataFrame, metric: str = "success",
                 order: list[str] | None = None) -> None:
    """Mean (strategy - baseline) over the same task and seed, one row per strategy (labelled with the
    figure and its interval), the 95% interval as an error bar, a zero line; the axis follows the rule above."""
    from matplotlib.ticker import MaxNLocator

    rows = effect_rows(paired, metric, order)
    title, show = notebook.DIFFERENCES[metric]
    if rows.empty:
        ax.set_axis_off()
        ax.set_title(f"{title}: no paired differences", fontsize=9)
        return
    baseline = str(rows["baseline"].iloc[0])
    scale, least = effect_axis(metric, summary, baseline)
    mean, lo, hi = rows["mean_diff"] * scale, rows["lo"] * scale, rows["hi"] * scale
    positions = list(range(len(rows)))[::-1]  # the first strategy on top
    ax.errorbar(mean, positions, xerr=[(mean - lo).clip(lower=0), (hi - mean).clip(lower=0)], fmt="o",
                capsize=3, color="tab:blue")
    ax.axvline(0, color="gray", lw=0.8)
    limit = effect_limit(least, lo, hi)
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_yticks(positions, [f"{row['strategy']}\n{show.interval(row['mean_diff'], row['lo'], row['hi'])}"
                              for _, row in rows.iterrows()], fontsize=7)
    ax.xaxis.set_major_locator(MaxNLocator(7, symmetric=True))
    ax.xaxis.set_major_formatter(_tick_format(metric))
    unit = "percentage points" if EFFECT_BASES[metric] is None else f"the axis spans at least ±{baseline}'s mean"
    ax.set_xlabel(f"difference ({unit})", fontsize=8)
    ax.set_title(f"{title}: strategy - {baseline}, 95% interval", fontsize=9)


def effects_figure(paired: pd.DataFrame, summary: pd.DataFrame, order: list[str] | None = None) -> Any:
    """A figure with one effect plot per compared metric (success, cost, input tokens, cache hit rate)."""
    import matplotlib.pyplot as plt

    strategies = max(1, paired["strategy"].nunique()) if not paired.empty else 1
    fig, axes = plt.subplots(2, 2, figsize=(12, 2.4 + 1.1 * strategies))
    for ax, metric in zip(axes.flat, EFFECT_BASES):
        plot_effects(ax, paired, summary, metric, order)
    fig.tight_layout()
    return fig


def write_readme_figures(results_dir: str | Path, out: str | Path = DEFAULT_OUT) -> list[Path]:
    """Redraw `results_dir`'s plots/ from its files and copy the README's figures to `out`."""
    from harness.results.plots import write_plots
    from harness.results.report import runs_frame, summarize

    source, out = Path(results_dir), Path(out)
    runs = runs_frame(source)
    if runs.empty:
        raise ConfigError(f"figures: {source} holds no finished runs")
    drawn = {path.stem: path for path in write_plots(source, runs, summarize(runs))}
    out.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copyfile(drawn[name], out / f"{name}.png")) for name in README_FIGURES]


def write_readme_table(results_dir: str | Path, readme: str | Path) -> Path:
    """Replace the lines between the README's table markers by report.md's Strategies table (all tasks, in
    decision order, with intervals) of `results_dir`, so the README shows what a run printed, never a copy."""
    from harness.results.report import markdown_table, runs_frame, summarize

    readme = Path(readme)
    if not readme.is_file():
        raise ConfigError(f"figures --readme: {readme} is not a file")
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith(README_TABLE_START)]
    ends = [i for i, line in enumerate(lines) if line.startswith(README_TABLE_END)]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ConfigError(f"figures --readme: {readme} lacks the result table's markers: one line starting "
                          f"{README_TABLE_START!r} and, after it, one line {README_TABLE_END!r}")
    runs = runs_frame(results_dir)
    if runs.empty:
        raise ConfigError(f"figures: {results_dir} holds no finished runs")
    summary = summarize(runs)
    table = markdown_table(summary[summary["family"] == "all"], family=False)
    readme.write_text("".join(lines[: starts[0] + 1]) + table + "\n" + "".join(lines[ends[0]:]), encoding="utf-8")
    return readme


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.figures", description=(
        "Regenerate the README's figures (" + ", ".join(f"{n}.png" for n in README_FIGURES) + ") from a "
        "results directory: redraw its plots/ and copy those to --out."))
    parser.add_argument("results_dir", nargs="?", metavar="RESULTS_DIR",
                        help="a results directory (default: $CTXBENCH_RESULTS, else the newest under results/)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help=f"where the figures go (default: {DEFAULT_OUT})")
    parser.add_argument("--readme", metavar="README", help="also rewrite this file's result table (between its markers)")
    args = parser.parse_args(argv)
    try:
        source = notebook.results_dir(args.results_dir)
        written = [write_readme_table(source, args.readme)] if args.readme else []  # first: it checks the file
        written += write_readme_figures(source, args.out)
    except CtxbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(map(str, written)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
