"""Plots a person can read: labels apart and inside, percentages, readable scales,
the context window line and --plot-task, the tuning plot titled as a sweep with its baseline shown.

Every check draws with matplotlib's Agg backend and measures the rendered artists; no image goldens."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from harness import api  # noqa: E402

from harness.results import plots
from harness.cli import main  # noqa: E402
from harness.results.frames import requests_frame  # noqa: E402
from harness.results.report import runs_frame, summarize  # noqa: E402


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    """The default suite under every strategy, as the README's table is made."""
    out = tmp_path_factory.mktemp("plots") / "default"
    return api.run("default", strategies="all", out=out, workers=2)


def _overall(results_dir) -> pd.DataFrame:
    summary = summarize(runs_frame(results_dir))
    return summary[summary["family"] == "all"]


def _label_boxes(fig, labels):
    """Each label's text box as the renderer draws it in the finished figure (leader lines left out)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [Text.get_window_extent(label, renderer) for label in labels]


def _assert_readable(fig, labels, points_px=()):
    """No two label boxes overlap, every box lies inside the axes (so inside the figure: not clipped), and no
    box covers any part of a point's marker (its own included)."""
    radius = plots.MARKER_SIZE / 2 * fig.dpi / 72
    boxes = _label_boxes(fig, labels)
    frame = fig.axes[0].get_window_extent(fig.canvas.get_renderer())
    for i, a in enumerate(boxes):
        assert frame.x0 <= a.x0 and a.x1 <= frame.x1 and frame.y0 <= a.y0 and a.y1 <= frame.y1, labels[i].get_text()
        assert fig.bbox.contains(a.x0, a.y0) and fig.bbox.contains(a.x1, a.y1)
        for j, b in enumerate(boxes[i + 1:], i + 1):
            assert not a.overlaps(b), (labels[i].get_text(), labels[j].get_text())
        for x, y in points_px:
            assert not (a.x0 < x + radius and x - radius < a.x1 and a.y0 < y + radius and y - radius < a.y1), \
                labels[i].get_text()


def _draw_success(table, **options):
    labels = []
    fig = plots.draw_figure(lambda ax: labels.extend(plots.plot_success_vs_cost(ax, table, **options)))
    ax = fig.axes[0]
    points = [tuple(ax.transData.transform(p)) for p in zip(table["mean_cost_usd"], table["success_rate"])]
    return fig, labels, points


def _crowded(n: int = 12) -> pd.DataFrame:
    """A comparison with adapters: a dozen strategies at nearly the same cost and success."""
    rows = []
    for i in range(n):
        cost, success = 1.5 + 0.01 * i, 0.9 if i % 2 else 0.95
        rows.append({"strategy": f"strategy.number_{i}", "label": f"strategy.number_{i}", "mean_cost_usd": cost,
                     "mean_cost_usd_lo": cost - 0.5, "mean_cost_usd_hi": cost + 0.6, "success_rate": success,
                     "success_rate_lo": success - 0.2, "success_rate_hi": min(1.0, success + 0.05)})
    return pd.DataFrame(rows)


def test_success_vs_cost_labels_apart_and_inside_on_the_default_suite(default_run):
    """No overlapping labels in success_vs_cost, on the default suite's own summary (the old
    placement let agent_reset's label run over a marker)."""
    table = _overall(default_run)
    fig, labels, points = _draw_success(table)
    assert [label.get_text() for label in labels] == list(table["strategy"])
    _assert_readable(fig, labels, points)
    plt.close(fig)


def test_crowded_labels_apart_and_the_recommended_one_not_clipped():
    """8+ points close together (a corner of the plot, the highlighted one at the top edge)
    still get labels that cover neither each other nor a point, all inside the axes; far ones get a leader."""
    table = _crowded(12)
    fig, labels, points = _draw_success(table, label="label", highlight="strategy.number_4")
    _assert_readable(fig, labels, points)
    best = labels[4]
    assert best.get_fontweight() == "bold"
    assert any(label.arrow_patch is not None for label in labels)  # stacked labels point back at their points
    plt.close(fig)


def test_wide_labels_are_measured_not_guessed():
    """Ours: label boxes come from the renderer's text extents, not a width per character (the old guess,
    0.62 of the font size, is narrower than a capital W), so wide labels of crowded points stay apart too."""
    table = _crowded(9)
    table["strategy"] = [f"WWWWWWWWWW_{i}" for i in range(len(table))]
    fig, labels, points = _draw_success(table)
    _assert_readable(fig, labels, points)
    plt.close(fig)


def test_success_in_percent_light_intervals_and_a_step_front():
    """Success in %, error bars that do not dominate (thin, light, small caps), the Pareto
    front drawn as a step line through the undominated points in cost order."""
    table = _crowded(8)
    fig, _, _ = _draw_success(table)
    ax = fig.axes[0]
    assert all(tick.get_text().endswith("%") for tick in ax.get_yticklabels() if tick.get_text())
    fig.canvas.draw()
    shown = [tick.get_text() for tick in ax.get_yticklabels() if tick.get_text()]
    assert shown and all(int(text.rstrip("%")) <= 100 for text in shown)  # a success rate cannot exceed 100%
    bars = [c for c in ax.collections if c.get_label().startswith("_")]
    assert bars and all(max(c.get_linewidths()) <= 1.0 and c.get_alpha() <= 0.5 for c in bars)
    caps = [line for line in ax.lines if line.get_marker() in ("|", "_")]
    assert caps and all(line.get_markersize() <= 3 for line in caps)  # points; the old caps were 4
    front = next(line for line in ax.lines if line.get_label() == "Pareto front")
    assert front.get_drawstyle() == "steps-post"
    expected = plots.pareto_front(table, "mean_cost_usd", "success_rate")
    assert list(front.get_xdata()) == sorted(expected["mean_cost_usd"])
    plt.close(fig)


def test_sweep_baseline_rows_get_their_own_marker_and_legend_entry():
    """In the tuning plot the --also rows (tuning.csv's `baseline` column, helper S) are drawn
    with a different marker and a legend entry; without the column nothing claims to be a baseline."""
    table = _crowded(6)
    table["label"] = [f"observation_masking[keep_last={k}]" for k in (1, 2, 3, 5, 8, 10)]
    with_baseline = pd.concat([table, pd.DataFrame([{**table.iloc[0].to_dict(), "label": "none", "mean_cost_usd": 3.0,
                                                     "mean_cost_usd_lo": 2.0, "mean_cost_usd_hi": 4.0,
                                                     "success_rate": 0.5}])], ignore_index=True)
    with_baseline["baseline"] = [False] * len(table) + [True]
    title = "Sweep of observation_masking over keep_last (baseline: none)"
    fig, labels, points = _draw_success(with_baseline, label="label", highlight="observation_masking[keep_last=3]",
                                        title=title)
    ax = fig.axes[0]
    assert ax.get_title() == title
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "baseline (--also)" in legend and "recommended" in legend
    squares = [line for line in ax.lines if line.get_marker() == "s"]
    assert len(squares) == 1 and list(squares[0].get_xdata()) == [3.0]
    assert "keep_last=3" in [label.get_text() for label in labels]  # the strategy is in the title, not each label
    assert "none" in [label.get_text() for label in labels]
    _assert_readable(fig, labels, points)
    plt.close(fig)
    fig, _, _ = _draw_success(table, label="label")
    assert "baseline (--also)" not in [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)


def test_points_of_several_axes_are_labelled_by_their_values_in_the_titles_key_order():
    """Ours (no label wider than it must be): a grid over two or more keys labels each point
    by its values alone, in the order the sweep's title lists the keys; one key keeps `key=value`; a
    baseline keeps its name; and list values with commas stay whole."""
    two_axes = ["none", "compaction_ladder[turn_boundary_target=1000,clear_tool_keep_pairs=4]",
                "compaction_ladder[turn_boundary_target=2000,clear_tool_keep_pairs=1]"]
    assert plots.point_names(two_axes) == ["none", "1000, 4", "2000, 1"]
    assert plots.point_names(["masking[keep_last=10]", "masking[keep_last=3]"]) == ["keep_last=10", "keep_last=3"]
    lists = ["agent_reset[condenser.warning_thresholds=[0.7,0.9],mock.notes_completeness=0.5]",
             "agent_reset[condenser.warning_thresholds=[0.8],mock.notes_completeness=1.0]"]
    assert plots.point_names(lists) == ["[0.7,0.9], 0.5", "[0.8], 1.0"]
    assert plots.point_names(["a[x=1,y=2]", "a[x=1]"]) == ["x=1,y=2", "x=1"]  # keys differ: shown in full


def test_write_tuning_titles_the_plot_as_a_sweep(smoke_sweep, monkeypatch):
    """The tuning plot is titled as a sweep (harness.sweep.sweep_title: strategy, keys and
    the --also baseline), given to plot_success_vs_cost so the layout and labels account for it."""
    from harness.results.report import summarize as summarize_runs
    from harness.results.tuning import write_tuning

    titles = []
    real = plots.plot_success_vs_cost
    monkeypatch.setattr(plots, "plot_success_vs_cost",
                        lambda ax, table, **kw: titles.append(kw["title"]) or real(ax, table, **kw))
    runs = runs_frame(smoke_sweep)
    write_tuning(smoke_sweep, summarize_runs(runs), runs)
    assert titles == ["Sweep of masking:KeepLastToolResults over keep (baseline: none)"]


def test_cache_hit_rate_in_percent_with_values(default_run):
    """Cache_hit_rate reads in %, each bar with its value; axes labelled."""
    summary = summarize(runs_frame(default_run))
    fig = plots.draw_figure(lambda ax: plots.plot_cache_hit_rate(ax, summary))
    ax = fig.axes[0]
    fig.canvas.draw()
    assert all(tick.get_text().endswith("%") for tick in ax.get_yticklabels() if tick.get_text())
    values = [text.get_text() for text in ax.texts]
    assert len(values) == len(summary[summary["family"] == "all"]) and all(v.endswith("%") for v in values)
    assert ax.get_xlabel() and ax.get_ylabel()
    plt.close(fig)


def _runs(rows):
    return pd.DataFrame([{"agent_resets": 0, "hard_resets": 0, "summaries": 0, "compactions": 0, **row} for row in rows])


def test_few_resets_stay_visible_beside_many_compactions():
    """Resets under 41 compactions are visible (their bar at least 5% of the axes' height,
    where a linear scale gave 0.6%), and each bar carries its value."""
    runs = _runs([{"strategy": "agent_reset", "agent_resets": 1}, {"strategy": "agent_reset"},
                  {"strategy": "agent_reset"}, {"strategy": "agent_reset"},
                  {"strategy": "observation_masking", "compactions": 41}])
    fig = plots.draw_figure(lambda ax: plots.plot_resets_compactions(ax, runs))
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    height = ax.get_window_extent(renderer).height
    resets = ax.containers[0].patches[0]  # agent_reset's resets: 0.25 per run
    assert resets.get_window_extent(renderer).height > 0.05 * height
    assert {"0.25", "41"} <= {text.get_text() for text in ax.texts}
    assert ax.get_xlabel() and ax.get_ylabel()
    plt.close(fig)


def test_summaries_count_as_resets_in_the_resets_plot():
    """Ours, a fix: llm_summarizing's summaries condense the history like resets (report.py's mean_resets counts
    them); the plot showed 0 for it."""
    runs = _runs([{"strategy": "llm_summarizing", "summaries": 2}])
    fig = plots.draw_figure(lambda ax: plots.plot_resets_compactions(ax, runs))
    assert fig.axes[0].containers[0].patches[0].get_height() == 2
    plt.close(fig)


def test_context_window_from_the_run_start_event_then_config_then_mock_default(run_suite, tmp_path):
    """The context plot's window line is the profile's window, read from the run's run_start
    event, else config.json's profiles; the mock's default is 200000."""
    runs = run_suite("smoke", strategies="none", window=32_000)
    out = runs.attrs["out"]
    run_ids = list(runs["run_id"])
    assert plots.context_window(out, run_ids) == 32_000
    assert plots.context_window(out, ["no-such-run"]) == 32_000  # config.json's profiles
    assert plots.context_window(tmp_path, run_ids) is None  # neither readable: no line
    assert plots.profile_window({"model": "mock/agent", "mock": {"cache": "anthropic"}}) == 200_000
    assert plots.profile_window({"model": "openai/x", "max_input_tokens": 8000}) == 8000


def test_context_plot_draws_a_labelled_window_line(run_suite):
    """A horizontal line at the context window, labelled with its size, axes labelled; ours: a
    window over 4x the largest request is named in a corner instead of squashing the curves to the bottom."""
    runs = run_suite("smoke", strategies="none,agent_reset")
    requests = requests_frame(runs.attrs["out"], runs)
    task_id, seed = plots.sawtooth_run(runs)
    chosen = runs[(runs["task_id"] == task_id) & (runs["seed"] == seed)]["run_id"]
    peak = int(requests[requests["run_id"].isin(chosen)]["input_tokens"].max())
    for window, line_drawn in ((2 * peak, True), (10 * peak, False)):
        fig = plots.draw_figure(lambda ax: plots.plot_context(ax, requests, runs, task_id, seed, window=window))
        ax = fig.axes[0]
        assert any(list(line.get_ydata()) == [window, window] for line in ax.lines) == line_drawn
        assert any(f"{window:,}" in text.get_text() for text in ax.texts)
        assert (ax.get_ylim()[1] > window) == line_drawn and ax.get_xlabel() and ax.get_ylabel()
        plt.close(fig)


def test_plot_task_chooses_the_context_plot_task(default_run, monkeypatch, capsys):
    """`ctxbench report --plot-task TASK_ID` draws that task's runs; the default stays the
    run with the most resets and compactions (sawtooth_run)."""
    chosen = []
    real = plots.plot_context
    monkeypatch.setattr(plots, "plot_context", lambda ax, requests, runs, task_id, seed, **kw:
                        chosen.append(task_id) or real(ax, requests, runs, task_id, seed, **kw))
    assert main(["report", str(default_run), "--plot-task", "big_output-1"]) == 0
    assert main(["report", str(default_run)]) == 0
    assert chosen == ["big_output-1", plots.sawtooth_run(runs_frame(default_run))[0]]


def test_unknown_plot_task_exits_2_with_close_matches(default_run, tmp_path, capsys):
    """The bad-input rule: an unknown --plot-task exits 2 naming close matches, before any
    model call and before config.json is written (run), before any file is rewritten (report)."""
    report_md = (default_run / "report.md").stat().st_mtime_ns
    assert main(["report", str(default_run), "--plot-task", "big_outptu-1"]) == 2
    assert "did you mean 'big_output-1'" in capsys.readouterr().err
    assert (default_run / "report.md").stat().st_mtime_ns == report_md
    out = tmp_path / "never"
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--plot-task", "chained_lookup-smok-0",
                 "--out", str(out), "--no-progress"]) == 2
    assert "did you mean 'chained_lookup-smoke-0'" in capsys.readouterr().err
    assert not out.exists()


def test_saved_plots_fit_readme_width_and_label_their_axes(default_run):
    """Every saved plot is about README width (~800 px); every axes has both axis labels."""
    paths = plots.write_plots(default_run, runs_frame(default_run), summarize(runs_frame(default_run)))
    for path in paths:
        height, width = plt.imread(path).shape[:2]
        assert 760 <= width <= 840 and height <= 620, path.name
    for draw in (lambda ax: plots.plot_resets_compactions(ax, runs_frame(default_run)),
                 lambda ax: plots.plot_success_vs_cost(ax, _overall(default_run))):
        fig = plots.draw_figure(draw)
        assert fig.axes[0].get_xlabel() and fig.axes[0].get_ylabel()
        plt.close(fig)


def test_no_known_cost_draws_an_empty_plot():
    """Ours: a real model without prices has no cost; the plot is drawn empty, not an error."""
    table = _crowded(3).assign(mean_cost_usd=float("nan"))
    fig, labels, _ = _draw_success(table)
    assert labels == []
    plt.close(fig)


def test_bar_plots_name_sweep_points_short_and_say_what_for():
    """Ours: the cache and resets bar charts of a sweep name each point as the tuning plot
    does, and the axis label names the strategy and its keys; plain strategy names stay, under `strategy`."""
    labels = ["compaction_ladder[turn_boundary_target=1000,clear_tool_keep_pairs=1]",
              "compaction_ladder[turn_boundary_target=2000,clear_tool_keep_pairs=4]"]
    runs = pd.DataFrame({"strategy": labels, "agent_resets": [0, 0], "hard_resets": [0, 1], "compactions": [3, 0]})
    summary = pd.DataFrame({"family": "all", "strategy": labels, "cache_hit_rate": [0.5, 0.7],
                            "cache_hit_rate_lo": [0.4, 0.6], "cache_hit_rate_hi": [0.6, 0.8]})
    for draw in (lambda ax: plots.plot_resets_compactions(ax, runs), lambda ax: plots.plot_cache_hit_rate(ax, summary)):
        fig = plots.draw_figure(draw)
        ax = fig.axes[0]
        assert [tick.get_text() for tick in ax.get_xticklabels()] == ["1000, 1", "2000, 4"]
        assert ax.get_xlabel() == "compaction_ladder at (turn_boundary_target, clear_tool_keep_pairs)"
        plt.close(fig)
    fig = plots.draw_figure(lambda ax: plots.plot_resets_compactions(ax, runs.assign(strategy=["none", "agent_reset"])))
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["none", "agent_reset"]
    assert fig.axes[0].get_xlabel() == "strategy"
    plt.close(fig)


def test_context_plot_legend_names_sweep_points_short_and_fits_the_figure():
    """Ours: the context plot's legend names a sweep's points as the other plots do, titled
    with what they are short for, in as many columns as fit, so the saved figure holds the whole legend."""
    labels = ["compaction_ladder[turn_boundary_target=1000,clear_tool_keep_pairs=1]",
              "compaction_ladder[turn_boundary_target=2000,clear_tool_keep_pairs=4]"]
    runs = pd.DataFrame({"run_id": ["a", "b"], "task_id": "t", "seed": 0, "strategy": labels, "success": [True, False]})
    requests = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "profile": "main", "request": [1, 2, 1, 2],
                             "input_tokens": [100, 200, 100, 150], "resets_before": 0, "compactions_before": 0})
    fig = plots.draw_figure(lambda ax: plots.plot_context(ax, requests, runs, "t", 0))
    legend = fig.axes[0].get_legend()
    texts = [text.get_text() for text in legend.get_texts()]
    assert texts[:2] == ["1000, 1 (ok)", "2000, 4 (fail)"]
    assert legend.get_title().get_text() == "compaction_ladder at (turn_boundary_target, clear_tool_keep_pairs)"
    fig.canvas.draw()
    box, frame = legend.get_window_extent(), fig.bbox
    assert box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0
    plt.close(fig)
