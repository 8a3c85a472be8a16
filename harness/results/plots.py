"""The report's plots, each drawn on a given matplotlib Axes so notebooks can reuse them.

How to read each one: docs/plots.md. The saved PNGs are FIGURE_SIZE at DPI, about 800 px wide (README width).
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from harness.conversation.events import find_event_log, first_event
from harness.core.errors import ConfigError, did_you_mean
from harness.results.frames import requests_frame
from harness.results.layout import CONFIG_FILE, EVENTS_DIR, PLOTS_DIR
from harness.results.stats import pareto_front
from harness.core.user_files import load_json

# A `key=` of a grid point's label (`key=value,key=value`; keys are dotted config names, values JSON or text).
GRID_KEY = re.compile(r"(?:^|,)([A-Za-z_][\w.]*)=")

FIGURE_SIZE = (7.3, 4.6)  # inches; at DPI, 803 x 506 px
CONTEXT_FIGURE_SIZE = (7.3, 5.2)  # room for its legend of every strategy below the axes
DPI = 110
LABEL_SIZE = 8  # points: a point label or legend entry
MARKER_SIZE = 6  # points: a strategy's marker in success_vs_cost
INTERVAL_STYLE = {"elinewidth": 0.8, "capsize": 1.5, "capthick": 0.8, "alpha": 0.35}  # thin and light: the points lead


def sawtooth_run(runs: pd.DataFrame, task_id: str | None = None) -> tuple[str, int]:
    """The (task_id, seed) whose runs show the most resets and compactions, then the most requests;
    with `task_id`, that task's seed chosen the same way (an unknown id is a ConfigError)."""
    if task_id is not None:
        check_plot_task(task_id, runs["task_id"])
        runs = runs[runs["task_id"] == task_id]
    events = runs.assign(_changes=runs["agent_resets"] + runs["hard_resets"] + runs["compactions"])
    totals = events.groupby(["task_id", "seed"], sort=False)[["_changes", "requests"]].sum()
    chosen, seed = totals.sort_values(["_changes", "requests"], ascending=False, kind="stable").index[0]
    return str(chosen), int(seed)


def check_plot_task(task_id: str | None, known: Iterable[str], where: str = "these runs") -> None:
    """`--plot-task` must name a task of the results (or of the suite about to run), with close matches if not."""
    known = list(dict.fromkeys(map(str, known)))
    if task_id is not None and task_id not in known:
        raise ConfigError(f"--plot-task: no task {task_id!r} in {where}{did_you_mean(task_id, known)}; "
                          f"tasks: {', '.join(known[:12])}{' ...' if len(known) > 12 else ''}")


def profile_window(profile: dict[str, Any]) -> int | None:
    """The input budget a run's main profile had (its max_input_tokens, the mock's window or its default)."""
    from harness.models.llm import DEFAULT_MODEL, LLMProfile

    return LLMProfile(model=profile.get("model", DEFAULT_MODEL), max_input_tokens=profile.get("max_input_tokens"),
                      mock=profile.get("mock") or {}).input_budget()


def context_window(results_dir: str | Path, run_ids: Iterable[str]) -> int | None:
    """The main profile's window of these runs: from each run's run_start event (its first line), else
    config.json's profiles; None when neither is readable or the model's limit is unknown."""
    for run_id in run_ids:
        start = first_event(find_event_log(Path(results_dir) / EVENTS_DIR, run_id)) or {}
        main = (start.get("profiles") or {}).get("main")
        if isinstance(main, dict):
            return profile_window(main)
    try:
        main = load_json(Path(results_dir) / CONFIG_FILE)["profiles"]["main"]
    except (ConfigError, KeyError, TypeError):
        return None
    return profile_window(main) if isinstance(main, dict) else None


WINDOW_SHOWN_FROM = 0.25  # the window line is drawn when the largest request reaches this share of it


def plot_context(ax: Any, requests: pd.DataFrame, runs: pd.DataFrame, task_id: str, seed: int,
                 window: int | None = None) -> None:
    """Input tokens per main request of one task under every strategy; x marks a reset or summary, a dot a
    compaction; a dashed line at the context window (when known) shows how close each strategy came. A window
    over four times the largest request is named in a corner instead, so the curves keep the plot's height."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    chosen = runs[(runs["task_id"] == task_id) & (runs["seed"] == seed)]
    main = requests[requests["profile"] == "main"]
    names, what = short_names([str(strategy) for strategy in chosen["strategy"]])
    for name, (_, run) in zip(names, chosen.iterrows()):
        series = main[main["run_id"] == run["run_id"]]
        line, = ax.plot(series["request"], series["input_tokens"], lw=1.2,
                        label=f"{name} ({'ok' if run['success'] else 'fail'})")
        for column, marker, size in (("resets_before", "x", 30), ("compactions_before", ".", 14)):
            marked = series[series[column] > 0]
            ax.scatter(marked["request"], marked["input_tokens"], marker=marker, s=size, color=line.get_color(),
                       zorder=3)
    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], ls="", marker="x", color="black", label="reset or summary"),
                Line2D([], [], ls="", marker=".", color="black", label="compaction")]
    peak = main[main["run_id"].isin(chosen["run_id"])]["input_tokens"].max()
    if window and peak >= WINDOW_SHOWN_FROM * window:
        ax.axhline(window, color="black", ls="--", lw=0.9)
        ax.annotate(f"context window {window:,} tokens", (0.99, window), xycoords=("axes fraction", "data"),
                    xytext=(0, 3), textcoords="offset points", ha="right", va="bottom", fontsize=LABEL_SIZE)
        ax.set_ylim(0, window * 1.1)
    elif window:  # a line that far up would flatten every curve at the bottom: say where it is instead
        ax.text(0.99, 0.98, f"context window {window:,} tokens (off the scale)", transform=ax.transAxes,
                ha="right", va="top", fontsize=LABEL_SIZE)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.set_xlabel("main-model request")
    ax.set_ylabel("input tokens of the request")
    ax.set_title(f"Context size per request: {task_id} (seed {seed})")
    widest = max((len(handle.get_label()) for handle in handles), default=0)
    ax.legend(handles=handles, fontsize=LABEL_SIZE - 1, ncol=max(1, min(4, 100 // (widest + 6))), frameon=False,
              loc="upper center", bbox_to_anchor=(0.5, -0.13), title=None if what == "strategy" else what,
              title_fontsize=LABEL_SIZE - 1)


def point_names(labels: list[str]) -> list[str]:
    """Labels as drawn: grid points `strategy[key=value]` of one strategy lose the shared `strategy[...]`
    (the title names it), so `observation_masking[keep_last=10]` reads `keep_last=10`; where every point
    names the same two or more keys, only the values are drawn (`1000, 4`: the title lists the keys in
    that order), since `key=value` pairs of several axes made labels wider than the points' spacing."""
    prefixes = {label.split("[", 1)[0] for label in labels if label.endswith("]") and "[" in label}
    if len(prefixes) != 1:
        return labels
    prefix = prefixes.pop() + "["
    points = [i for i, label in enumerate(labels) if label.startswith(prefix) and label.endswith("]")]
    inner = [labels[i][len(prefix):-1] for i in points]
    keys = [GRID_KEY.findall(text) for text in inner]
    if len(keys[0]) > 1 and all(found == keys[0] for found in keys):
        inner = [", ".join(GRID_KEY.split(text)[2::2]) for text in inner]
    shown = list(labels)
    for i, text in zip(points, inner):
        shown[i] = text
    return shown


def short_names(labels: list[str]) -> tuple[list[str], str]:
    """point_names' labels, and what they name: `strategy`, or for a sweep's points the strategy and its
    keys (`compaction_ladder at (turn_boundary_target, clear_tool_keep_pairs)`)."""
    shown = point_names(labels)
    first = next((label for label, name in zip(labels, shown) if label != name), None)
    if first is None:
        return shown, "strategy"
    strategy = first.split("[", 1)[0]
    keys = GRID_KEY.findall(first[len(strategy) + 1:-1])
    return shown, f"{strategy} at ({', '.join(keys)})" if len(keys) > 1 else f"{strategy} grid point"


def strategy_axis(ax: Any, labels: list[str], positions: list[float] | None = None) -> None:
    """Bar-chart ticks named as short_names draws them, the axis label saying what they are short for: a
    sweep's full labels, rotated, took more room than the bars."""
    shown, title = short_names(labels)
    ax.set_xticks(range(len(labels)) if positions is None else positions, shown, rotation=30, ha="right",
                  fontsize=LABEL_SIZE)
    ax.set_xlabel(title)


def plot_success_vs_cost(ax: Any, table: pd.DataFrame, label: str = "strategy",
                         highlight: str | None = None, title: str = "Success against cost") -> list[Any]:
    """Mean cost against success rate with 95% intervals; the Pareto front is the step line through the
    undominated points (the most success to be had at each cost). Rows whose `baseline` column is true (a
    sweep's `--also` strategies) get a square marker; `highlight` (the recommended row) a star and a bold label.
    Returns the point labels (matplotlib Annotations), placed so none covers another, a point or the legend."""
    from matplotlib.ticker import FormatStrFormatter, FuncFormatter, MaxNLocator

    known = table.dropna(subset=["mean_cost_usd", "success_rate"]).reset_index(drop=True)
    is_baseline = known["baseline"].fillna(False).astype(bool) if "baseline" in known else pd.Series(False, known.index)
    is_best = known[label] == highlight
    for rows, marker, size, name in ((~is_baseline & ~is_best, "o", MARKER_SIZE, None),
                                     (is_baseline & ~is_best, "s", MARKER_SIZE, "baseline (--also)"),
                                     (is_best, "*", MARKER_SIZE * 2, "recommended")):
        part = known[rows]
        if part.empty:
            continue
        ax.errorbar(part["mean_cost_usd"], part["success_rate"], fmt="none", color="C0", **INTERVAL_STYLE,
                    xerr=_arms(part, "mean_cost_usd"), yerr=_arms(part, "success_rate"))
        ax.plot(part["mean_cost_usd"], part["success_rate"], ls="", marker=marker, ms=size, zorder=3,
                color="C1" if marker == "*" else ("gray" if marker == "s" else "C0"), label=name)
    front = pareto_front(known, "mean_cost_usd", "success_rate").sort_values("mean_cost_usd")
    ax.step(front["mean_cost_usd"], front["success_rate"], where="post", ls="--", lw=1, color="gray",
            label="Pareto front", zorder=2)
    ax.plot([], [], color="C0", lw=0.8, alpha=0.5, label="95% interval")
    ax.yaxis.set_major_locator(MaxNLocator(nbins=7, steps=[1, 2, 5, 10]))  # whole percentages
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value * 100:.0f}%" if value <= 1.0001 else ""))
    ax.xaxis.set_major_formatter(FormatStrFormatter("$%g"))
    ax.margins(0.08)
    low, high = ax.get_ylim()
    high = min(high, 1.06)  # room for labels above 100%, but no tick there: a success rate cannot exceed it
    ax.set_ylim(max(min(low, high - 0.2), -0.02), high)  # at least 20 points of range, none below 0%
    ax.set_xlabel("mean cost per run (USD, with prompt-cache prices)")
    ax.set_ylabel("success rate")
    ax.set_title(title)
    legend = ax.legend(fontsize=LABEL_SIZE, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4, frameon=False)
    texts = point_names([str(value) for value in known[label]])
    order = sorted(range(len(known)), key=lambda i: (not is_best[i], -known["success_rate"][i], known["mean_cost_usd"][i]))
    points = [(known["mean_cost_usd"][i], known["success_rate"][i]) for i in order]
    placed = place_labels(ax, points, [texts[i] for i in order], bold=[bool(is_best[i]) for i in order],
                          avoid=[legend])
    return [placed[order.index(i)] for i in range(len(known))]


def _arms(table: pd.DataFrame, column: str) -> list[pd.Series]:
    """An interval's lengths below and above its estimate, for errorbar (which refuses negative ones: a
    bootstrap interval need not contain the mean, then that side has no length)."""
    return [(table[column] - table[f"{column}_lo"]).clip(lower=0), (table[f"{column}_hi"] - table[column]).clip(lower=0)]


# Where a label may go, in points from its point: beside it (right, then left), then stacked above and
# below on either side; far ones get a leader line. Nearest first.
_STEP = 1.15 * LABEL_SIZE
LABEL_OFFSETS = sorted(((dx, k * _STEP) for dx in (5, -5, 28, -28, 60, -60) for k in range(-14, 15)),
                       key=lambda o: (math.hypot(o[0] / 2, o[1]), o[0] < 0))
LEADER_BEYOND = 0.8 * _STEP  # points: a label farther than this from its point gets a leader line


def place_labels(ax: Any, points: list[tuple[float, float]], texts: list[str], bold: list[bool] | None = None,
                 avoid: Iterable[Any] = ()) -> list[Any]:
    """Annotate each point with its text at one of LABEL_OFFSETS: in order, each label takes the nearest
    offset whose box (measured by the renderer) lies inside the axes and covers no point, no label or
    leader line placed before it and no `avoid` artist, and whose own leader crosses none of them (else the
    one costing least); then a few rounds move any label to a cheaper offset (fewer crossings, then nearer)
    while one exists. A lone axes is laid out (tight_layout) before measuring, so the labels sit where the
    saved figure draws them."""
    fig = ax.figure
    if len(fig.axes) == 1:
        fig.tight_layout()
    fig.canvas.draw()  # fixes limits and layout: data converts to display pixels
    renderer = fig.canvas.get_renderer()
    pixels = [tuple(ax.transData.transform(point)) for point in points]
    radius = MARKER_SIZE * fig.dpi / 72.0
    board = _Board(tuple(ax.get_window_extent(renderer).extents),
                   [(x - radius, y - radius, x + radius, y + radius) for x, y in pixels],
                   [tuple(artist.get_window_extent(renderer).extents) for artist in avoid], fig.dpi / 72.0)
    weights = ["bold" if heavy else "normal" for heavy in bold or [False] * len(texts)]
    sizes = []
    for text, weight in zip(texts, weights):
        probe = ax.text(0, 0, text, fontsize=LABEL_SIZE, fontweight=weight)
        sizes.append(probe.get_window_extent(renderer))
        probe.remove()
    offsets = [board.place(i, at, size, first_free=True) for i, (at, size) in enumerate(zip(pixels, sizes))]
    for _ in range(SETTLE_ROUNDS):
        moved = [board.place(i, at, size, first_free=False) for i, (at, size) in enumerate(zip(pixels, sizes))]
        if moved == offsets:
            break
        offsets = moved
    return [ax.annotate(text, point, xytext=(dx, dy), textcoords="offset points", fontsize=LABEL_SIZE,
                        fontweight=weight, ha="left" if dx > 0 else "right", va=_valign(dy),
                        arrowprops=LEADER_STYLE if _has_leader(dx, dy) else None)
            for text, point, weight, (dx, dy) in zip(texts, points, weights, offsets)]


CROSSING_COST = 400.0  # px^2: a leader line through a label, a point or another leader costs like that much overlap
DISTANCE_COST = 1.0  # per point of offset, when settling: of two free offsets the nearer wins
SETTLE_ROUNDS = 3
LEADER_STYLE = {"arrowstyle": "-", "color": "0.35", "lw": 0.7, "shrinkA": 1, "shrinkB": 3}

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels
Segment = tuple[tuple[float, float], tuple[float, float]]


class _Board:
    """What labels must keep clear of, in display pixels: the axes' frame, the points' markers, other boxes
    (the legend), and each label's box and leader line (by label index, so a label can be moved)."""

    def __init__(self, frame: Box, markers: list[Box], avoid: list[Box], scale: float):
        self.frame, self.markers, self.boxes, self.scale = frame, markers, avoid, scale
        self.slots: dict[int, tuple[Box, Segment | None]] = {}

    def place(self, index: int, at: tuple[float, float], size: Any, first_free: bool) -> tuple[float, float]:
        """Put label `index` at its cheapest offset (in points): with `first_free`, the first without any
        conflict; else the least conflict plus distance."""
        self.slots.pop(index, None)
        best, best_cost, best_slot = LABEL_OFFSETS[0], math.inf, None
        for dx, dy in LABEL_OFFSETS:
            box = _label_box(at[0] + dx * self.scale, at[1] + dy * self.scale, size.width, size.height, dx, dy)
            slot = (box, (at, _centre(box)) if _has_leader(dx, dy) else None)
            conflict = self.conflict(at, *slot)
            cost = conflict if first_free else conflict + DISTANCE_COST * math.hypot(dx, dy)
            if cost < best_cost:
                best, best_cost, best_slot = (dx, dy), cost, slot
            if first_free and conflict == 0:
                break
        self.slots[index] = best_slot
        return best

    def conflict(self, at: tuple[float, float], box: Box, leader: Segment | None) -> float:
        """Overlap (px^2) of a label's box with what it must keep clear of, plus its crossings and ambiguity."""
        frame = self.frame
        if not (frame[0] <= box[0] and box[2] <= frame[2] and frame[1] <= box[1] and box[3] <= frame[3]):
            return 1e9  # outside the axes: only when nothing inside is left
        labels = [other for other, _ in self.slots.values()]
        leaders = [segment for _, segment in self.slots.values() if segment]
        cost = sum(_overlap(box, other) for other in (*self.markers, *self.boxes, *labels))
        cost += CROSSING_COST * sum(_crosses(segment, box) for segment in leaders)
        if leader:
            others = [m for m in self.markers if not _inside(leader[0], m)]  # not its own point's marker
            cost += CROSSING_COST * (sum(_crosses(leader, other) for other in (*others, *labels))
                                     + sum(_intersect(leader, other) for other in leaders))
        else:  # a label without a leader must sit nearer its own point than any other, or it reads as theirs
            own = _gap(at, box)
            cost += CROSSING_COST * sum(_gap(_centre(m), box) < own for m in self.markers if not _inside(at, m))
        return cost


def _has_leader(dx: float, dy: float) -> bool:
    return math.hypot(dx, dy) > LEADER_BEYOND + 5


def _centre(box: Box) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def _gap(point: tuple[float, float], box: Box) -> float:
    """Distance from a point to a box (0 inside it)."""
    return math.hypot(max(box[0] - point[0], 0, point[0] - box[2]), max(box[1] - point[1], 0, point[1] - box[3]))


def _inside(point: tuple[float, float], box: Box) -> bool:
    return box[0] < point[0] < box[2] and box[1] < point[1] < box[3]


def _crosses(segment: Segment, box: Box) -> bool:
    """Whether a leader line passes through a box's inside (Liang-Barsky clipping: some stretch of the
    segment, not just an end point touching an edge, lies within it)."""
    (x0, y0), (x1, y1) = segment
    low, high = 0.0, 1.0
    for delta, start, lo, hi in ((x1 - x0, x0, box[0], box[2]), (y1 - y0, y0, box[1], box[3])):
        if delta == 0:
            if not lo < start < hi:
                return False
            continue
        t0, t1 = sorted(((lo - start) / delta, (hi - start) / delta))
        low, high = max(low, t0), min(high, t1)
    return high - low > 1e-6


def _intersect(a: Segment, b: Segment) -> bool:
    """Whether two leader lines cross (strictly: sharing an end point does not count)."""
    def side(p: tuple[float, float], q: tuple[float, float], r: tuple[float, float]) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    return (side(*a, b[0]) * side(*a, b[1]) < 0) and (side(*b, a[0]) * side(*b, a[1]) < 0)


def _valign(dy: float) -> str:
    return "bottom" if dy > 0 else "top" if dy < 0 else "center"


def _label_box(x: float, y: float, width: float, height: float, dx: float, dy: float) -> Box:
    """The display box of a label anchored at (x, y) and aligned as place_labels aligns it, padded so
    neighbours keep a gap."""
    left = x if dx > 0 else x - width
    bottom = {"bottom": y, "top": y - height, "center": y - height / 2}[_valign(dy)]
    return left - 3, bottom - 1, left + width + 3, bottom + height + 1


def _overlap(a: Box, b: Box) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return width * height if width > 0 and height > 0 else 0.0


def plot_cache_hit_rate(ax: Any, summary: pd.DataFrame) -> None:
    """Cached over input tokens per strategy (all tasks), in %, with 95% intervals and each bar's value."""
    from matplotlib.ticker import PercentFormatter

    overall = summary[summary["family"] == "all"].fillna({"cache_hit_rate": 0.0})
    lo = (overall["cache_hit_rate"] - overall["cache_hit_rate_lo"]).fillna(0)
    hi = (overall["cache_hit_rate_hi"] - overall["cache_hit_rate"]).fillna(0)
    bars = ax.bar(range(len(overall)), overall["cache_hit_rate"], yerr=[lo, hi], color="C0",
                  error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "gray"})
    for bar, value in zip(bars, overall["cache_hit_rate"]):  # at the bar's foot: clear of its interval
        ax.text(bar.get_x() + bar.get_width() / 2, 0.015, f"{value:.0%}", ha="center", va="bottom",
                color="white" if value > 0.06 else "black", fontsize=LABEL_SIZE)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_ylim(0, 1.05)
    strategy_axis(ax, [str(name) for name in overall["strategy"]])
    ax.set_ylabel("prompt-cache hit rate (cached / input tokens)")
    ax.set_title("Prompt-cache hit rate per strategy")


def plot_resets_compactions(ax: Any, runs: pd.DataFrame) -> None:
    """Mean condensations (agent resets, hard resets, summaries) and compaction edits per run, per strategy, on a
    symmetric log scale (linear below 1) with each bar's value, so 0.25 resets stand beside 41 compactions."""
    from matplotlib.ticker import FuncFormatter

    summaries = runs["summaries"] if "summaries" in runs else 0
    counts = runs.assign(resets=runs["agent_resets"] + runs["hard_resets"] + summaries)
    means = counts.groupby("strategy", sort=False)[["resets", "compactions"]].mean()
    positions = list(range(len(means)))
    for shift, column, name in ((-0.2, "resets", "resets and summaries"), (0.2, "compactions", "compactions")):
        bars = ax.bar([p + shift for p in positions], means[column], width=0.4, label=name)
        ax.bar_label(bars, labels=[f"{value:.2g}" for value in means[column]], padding=1, fontsize=LABEL_SIZE - 1)
    ax.set_yscale("symlog", linthresh=1, linscale=0.6)
    ax.set_ylim(0, max(10.0, float(means.to_numpy().max()) * 4))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    strategy_axis(ax, [str(name) for name in means.index], positions)
    ax.set_ylabel("mean per run (log scale above 1)")
    ax.set_title("Resets and compactions per run")
    ax.legend(fontsize=LABEL_SIZE, loc="upper left")


WINDOW_FIGURE_SIZE = (7.3, 4.9)  # two panels side by side, the legend of every strategy below them


def plot_against_window(ax: Any, table: pd.DataFrame, column: str, ylabel: str, title: str) -> None:
    """One figure of window_summary's rows (harness.results.report) against the window, one line per strategy
    with 95% intervals; the windows on a log axis (halving the window is one step wherever it starts). A
    strategy's point without a value (no success: no cost per success) is left out of its line."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    windows = sorted(table["window"].unique())
    strategies = list(dict.fromkeys(table["strategy"]))
    names, _ = short_names([str(strategy) for strategy in strategies])
    spread = 0.012 * (len(strategies) - 1)  # side by side at each window, so the intervals do not cover each other
    for i, (strategy, name) in enumerate(zip(strategies, names)):
        rows = table[table["strategy"] == strategy].sort_values("window")
        rows = rows[rows[column].notna() & (rows[column] != math.inf)]
        shift = 10 ** (i * 0.024 - spread) if len(strategies) > 1 else 1.0
        x = rows["window"] * shift
        # matplotlib's colours repeat after ten: each round of them has its own marker, so no two lines look alike
        line, = ax.plot(x, rows[column], marker=WINDOW_MARKERS[i // 10 % len(WINDOW_MARKERS)], ms=4, lw=1.2, label=name)
        arms = [arm.replace(math.inf, float("nan")).fillna(0) for arm in _arms(rows, column)]
        ax.errorbar(x, rows[column], yerr=arms, fmt="none", color=line.get_color(), **INTERVAL_STYLE)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(windows))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value / 1000:g}k"))
    ax.set_xlabel("context window (input tokens)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=LABEL_SIZE + 2)


def plot_window(axes: Any, table: pd.DataFrame) -> None:
    """Success rate and cost per success against the window (a window axis: `--window 32000,200000`)."""
    from matplotlib.ticker import FormatStrFormatter, PercentFormatter

    success, cost = axes
    plot_against_window(success, table, "success_rate", "success rate", "Success against the window")
    success.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    success.set_ylim(-0.03, 1.05)
    plot_against_window(cost, table, "cost_per_success", "cost per success (USD)", "Cost per success against the window")
    cost.yaxis.set_major_formatter(FormatStrFormatter("$%g"))
    cost.set_ylim(bottom=0)
    handles, labels = success.get_legend_handles_labels()
    _, what = short_names(list(dict.fromkeys(table["strategy"].astype(str))))
    success.figure.legend(handles, labels, fontsize=LABEL_SIZE, loc="lower center", ncol=legend_columns(labels),
                          frameon=False, title=None if what == "strategy" else what, title_fontsize=LABEL_SIZE)


WINDOW_MARKERS = ("o", "s", "^", "D")
WINDOW_LEGEND_COLUMNS = 4  # at most; fewer when the names are long
LEGEND_ROW_CHARACTERS = 110  # characters of LABEL_SIZE text a legend row below a FIGURE_SIZE-wide figure holds


def legend_columns(labels: list[str]) -> int:
    """Legend columns that fit the figure's width: each takes its longest label and the line's handle."""
    longest = max((len(label) for label in labels), default=0)
    return max(1, min(WINDOW_LEGEND_COLUMNS, LEGEND_ROW_CHARACTERS // (longest + 6)))


def write_window_plot(results_dir: str | Path, table: pd.DataFrame) -> Path:
    """plots/window.png of window_summary's rows, room left below the panels for the legend's rows."""
    names, _ = short_names([str(strategy) for strategy in dict.fromkeys(table["strategy"])])
    legend_rows = math.ceil(len(names) / legend_columns(names))
    return save_plot(results_dir, "window", lambda axes: plot_window(axes, table), WINDOW_FIGURE_SIZE, panels=2,
                     bottom=0.03 + 0.04 * legend_rows)


def draw_figure(draw: Callable[[Any], Any], size: tuple[float, float] = FIGURE_SIZE, panels: int = 1,
                bottom: float = 0.0) -> Any:
    """A fresh Agg figure with `draw` applied to its axes (one, or a row of `panels`) and laid out above
    `bottom` (a share of the height left to a figure legend): what save_plot saves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, panels, figsize=size, dpi=DPI)
    draw(ax)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def save_plot(results_dir: str | Path, name: str, draw: Callable[[Any], Any],
              size: tuple[float, float] = FIGURE_SIZE, panels: int = 1, bottom: float = 0.0) -> Path:
    """Draw on a fresh figure and save it as plots/<name>.png."""
    import matplotlib.pyplot as plt

    path = Path(results_dir) / PLOTS_DIR / f"{name}.png"
    path.parent.mkdir(exist_ok=True)
    fig = draw_figure(draw, size, panels, bottom)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def write_plots(results_dir: str | Path, runs: pd.DataFrame, summary: pd.DataFrame,
                plot_task: str | None = None) -> list[Path]:
    """The report's four plots; `plot_task` chooses the context plot's task (default: sawtooth_run's, chosen from
    the rows' own counts), drawn at the smallest window when the runs have several (one line per strategy). Only
    the event logs of the runs that plot draws are read."""
    at_window = runs
    if "window" in runs and runs["window"].nunique() > 1:
        at_window = runs[runs["window"] == runs["window"].min()]
    task_id, seed = sawtooth_run(at_window, plot_task)
    chosen = at_window[(at_window["task_id"] == task_id) & (at_window["seed"] == seed)]
    window = context_window(results_dir, chosen["run_id"])
    requests = requests_frame(results_dir, chosen)
    overall = summary[summary["family"] == "all"]
    return [
        save_plot(results_dir, "context_per_request",
                  lambda ax: plot_context(ax, requests, at_window, task_id, seed, window=window), CONTEXT_FIGURE_SIZE),
        save_plot(results_dir, "success_vs_cost", lambda ax: plot_success_vs_cost(ax, overall)),
        save_plot(results_dir, "cache_hit_rate", lambda ax: plot_cache_hit_rate(ax, summary)),
        save_plot(results_dir, "resets_compactions", lambda ax: plot_resets_compactions(ax, runs)),
    ]
