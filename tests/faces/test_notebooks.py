"""notebooks/ and what they use (harness.notebook, harness.figures): notebooks that run as they
are. Both are stripped in git, take RESULTS_DIR from a papermill `parameters` cell or $CTXBENCH_RESULTS (else the
newest results directory), show formatted tables and effect plots, and regenerate the README's figures."""
import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from harness import api, figures, notebook  # noqa: E402
from harness.core.errors import ConfigError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# Named, not globbed: an executed copy a user saves beside them (`jupyter execute --output`) is not checked.
NOTEBOOKS = [ROOT / "notebooks" / "report.ipynb", ROOT / "notebooks" / "tuning.ipynb"]
INTERVAL = re.compile(r"\d+% \[\d+, \d+\]")  # a rate and its interval, as `85% [70, 95]`
EXPONENT = re.compile(r"\d\.?\d*e[+-]\d\d")  # `3.249e+06`, what a table must never show


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """Smoke results of every family under `none` and `observation_masking` (a report's input)."""
    out = tmp_path_factory.mktemp("report") / "smoke"
    return api.run("smoke", strategies="none,observation_masking", profiles=api.mock_profiles(), out=out)


def execute(path: Path, parameters: dict | None = None, cwd: Path = ROOT) -> list[str]:
    """Run a notebook as papermill would (its `parameters` given, as an `injected-parameters` cell after the
    tagged one) and return every output's text, HTML and a marker per image; a cell error fails the test."""
    book = nbformat.read(path, as_version=4)
    if parameters is not None:
        source = "\n".join(f"{name} = {value!r}" for name, value in parameters.items())
        book.cells.insert(1, nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]}))
    NotebookClient(book, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    shown = []
    for cell in book.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            shown += [output.get("text", ""), data.get("text/plain", ""), data.get("text/html", "")]
            shown += ["<image/png>"] if "image/png" in data else []
    return shown


def test_both_notebooks_exist():
    assert all(path.is_file() for path in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_outputs_are_stripped(path):
    book = nbformat.read(path, as_version=4)
    for index, cell in enumerate(book.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name} cell {index} has outputs"
    assert "widgets" not in book.metadata


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_is_a_papermill_parameters_cell_that_names_no_directory(path):
    """Papermill's convention: the first cell is tagged `parameters` and leaves RESULTS_DIR
    to the environment (no hand edit, no relative directory nothing writes)."""
    first = nbformat.read(path, as_version=4).cells[0]
    assert first.cell_type == "code" and "parameters" in first.metadata.get("tags", [])
    assert re.search(r"^RESULTS_DIR = None$", first.source, re.M)


def test_report_notebook_runs_as_it_is_from_the_environment_variable(smoke_run, monkeypatch):
    """Unedited, the report reads $CTXBENCH_RESULTS and shows formatted tables (intervals as
    `85% [70, 95]`, no `3.249e+06`) and its plots, effect plots among them."""
    monkeypatch.setenv(notebook.RESULTS_ENV, str(smoke_run))
    shown = execute(ROOT / "notebooks" / "report.ipynb")
    text = "\n".join(shown)
    assert f"{smoke_run}: 14 runs" in text
    assert INTERVAL.search(text) and " pt [" in text and "$0." in text
    assert not EXPONENT.search(text), EXPONENT.search(text)
    assert shown.count("<image/png>") >= 3  # effects, context per request, success against cost & co.


def test_report_notebook_takes_an_injected_parameter_before_the_environment(smoke_sweep, tmp_path, monkeypatch):
    """A papermill parameter wins over $CTXBENCH_RESULTS, and README_FIGURES_DIR makes the
    notebook write the README's figures."""
    monkeypatch.setenv(notebook.RESULTS_ENV, str(tmp_path / "not-this-one"))
    out = tmp_path / "figures"
    text = "\n".join(execute(ROOT / "notebooks" / "report.ipynb",
                             {"RESULTS_DIR": str(smoke_sweep), "README_FIGURES_DIR": str(out)}))
    assert f"{smoke_sweep}: " in text
    for name in figures.README_FIGURES:
        assert (out / f"{name}.png").read_bytes().startswith(b"\x89PNG") and f"{name}.png" in text


def test_tuning_notebook_runs_from_the_environment_variable(smoke_sweep, monkeypatch):
    """Unedited, the tuning notebook reads $CTXBENCH_RESULTS; it names the sweep's own
    recommendation and shows formatted tables and plots."""
    monkeypatch.setenv(notebook.RESULTS_ENV, str(smoke_sweep))
    shown = execute(ROOT / "notebooks" / "tuning.ipynb")
    text = "\n".join(shown)
    assert f"recommended: {api.load_results(smoke_sweep).recommended}" in text
    assert INTERVAL.search(text) and not EXPONENT.search(text)
    assert shown.count("<image/png>") >= 3  # Pareto, effects against `none`, one per parameter


def test_tuning_notebook_takes_an_injected_parameter(smoke_sweep, smoke_run, monkeypatch):
    """The parameter wins over $CTXBENCH_RESULTS (here a run that is no sweep)."""
    monkeypatch.setenv(notebook.RESULTS_ENV, str(smoke_run))
    text = "\n".join(execute(ROOT / "notebooks" / "tuning.ipynb", {"RESULTS_DIR": str(smoke_sweep)}))
    assert f"{smoke_sweep}: strategy masking:KeepLastToolResults" in text


def _results(root: Path, name: str, mtime: float, sweep: bool = False) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    if sweep:
        (folder / "sweep.json").write_text("{}")
    os.utime(folder / "config.json", (mtime, mtime))
    return folder


def test_results_dir_defaults_to_the_newest_config_json_under_results(tmp_path, monkeypatch):
    """Ours (newest by config.json's time, not by name): from notebooks/ the repository's
    results/ is found; the tuning notebook takes the newest directory holding a sweep.json."""
    monkeypatch.delenv(notebook.RESULTS_ENV, raising=False)
    root = tmp_path / "results"
    _results(root, "zzz-named-last", 100)
    newest = _results(root, "aaa-named-first", 300)
    sweep = _results(root, "sweep", 200, sweep=True)
    (root / "half-made").mkdir()  # no config.json: not a results directory
    (tmp_path / "notebooks").mkdir()
    assert notebook.results_dir(start=tmp_path / "notebooks") == newest
    assert notebook.results_dir(sweep=True, start=tmp_path) == sweep


def test_results_dir_prefers_the_parameter_then_the_environment(tmp_path, monkeypatch):
    root = tmp_path / "results"
    given, env = _results(root, "given", 1), _results(root, "env", 2)
    _results(root, "newest", 3)
    monkeypatch.setenv(notebook.RESULTS_ENV, str(env))
    assert notebook.results_dir(given, start=tmp_path) == given
    assert notebook.results_dir(None, start=tmp_path) == env


def test_results_dir_says_what_to_run_first(tmp_path, monkeypatch):
    """With no results, a ConfigError names the command that makes them."""
    monkeypatch.delenv(notebook.RESULTS_ENV, raising=False)
    with pytest.raises(ConfigError, match="run `ctxbench run --suite smoke` first"):
        notebook.results_dir(start=tmp_path)
    _results(tmp_path / "results", "plain-run", 1)
    with pytest.raises(ConfigError, match="run `ctxbench sweep .* --also none --suite smoke` first"):
        notebook.results_dir(sweep=True, start=tmp_path)
    monkeypatch.setenv(notebook.RESULTS_ENV, str(tmp_path / "results" / "plain-run"))
    with pytest.raises(ConfigError, match=r"\$CTXBENCH_RESULTS: .* holds no sweep.json"):
        notebook.results_dir(sweep=True, start=tmp_path)
    with pytest.raises(ConfigError, match="RESULTS_DIR: .* is not a directory"):
        notebook.results_dir(tmp_path / "missing")


def test_formats_use_separators_percent_and_four_significant_dollars():
    """No `3.249e+06`; rates in %, dollars with 4 significant digits, intervals `85% [70, 95]`."""
    assert notebook.COUNT(3.249e6) == "3,249,000"
    assert notebook.USD(3.249e6) == "$3,249,000" and notebook.USD(0.045912) == "$0.04591"
    assert notebook.USD(12.3456) == "$12.35" and notebook.SIGNED_USD(-0.0012346) == "-$0.001235"
    assert notebook.PERCENT.interval(0.85, 0.70, 0.95) == "85% [70, 95]"
    assert notebook.POINTS.interval(0.05, -0.002, 0.15) == "+5 pt [0, +15]"  # never `-0`
    assert notebook.USD.interval(0.5, 0.25, float("inf")) == "$0.5000 [0.2500, inf]"
    assert notebook.PERCENT(float("nan")) == notebook.MISSING


def test_summary_table_is_sorted_by_success_then_cost_per_success():
    """The report's order, in the notebook: highest success, then lowest cost per success."""
    row = {f"{c}{end}": 0.5 for c in notebook.SUMMARY_INTERVALS for end in ("", "_lo", "_hi")}
    summary = pd.DataFrame([{**row, "family": "all", "strategy": name, "runs": 4, "mean_resets": 0,
                             "mean_compactions": 0, "success_rate": success, "cost_per_success": cost}
                            for name, success, cost in (("a", 0.5, 1.0), ("b", 0.75, 3.0), ("c", 0.75, 2.0))])
    assert list(notebook.summary_table(summary)["strategy"]) == ["c", "b", "a"]


def test_runs_table_shows_the_checkers_detail_when_runs_have_one():
    """The failures with expected vs given, in the notebook's runs tables."""
    run = {"task_id": "t", "strategy": "none", "seed": 0, "termination": "answered", "success": False,
           **{column: 1234.5 for column in notebook.RUN_COLUMNS}}
    assert "detail" not in notebook.runs_table(pd.DataFrame([run])).columns
    table = notebook.runs_table(pd.DataFrame([{**run, "detail": "expected 7, given 8"}, {**run, "detail": None}]))
    assert list(table["detail"]) == ["expected 7, given 8", ""] and table.at[0, "input_tokens"] == "1,234"


def _paired(metric: str, diff: float, lo: float, hi: float) -> pd.DataFrame:
    return pd.DataFrame([{"family": "all", "strategy": "s", "baseline": "none", "metric": metric, "pairs": 20,
                          "mean_diff": diff, "lo": lo, "hi": hi}])


SUMMARY = pd.DataFrame([{"family": "all", "strategy": "none", "mean_cost_usd": 2.0, "mean_input_tokens": 1e6}])


@pytest.mark.parametrize("metric, diff, lo, hi, limit", [
    ("success", 0.05, 0.0, 0.15, 100),          # one task of 20: a small mark on the whole -100..100 range
    ("cache_hit_rate", -0.43, -0.6, -0.26, 100),
    ("cost_usd", 0.01, -0.02, 0.04, 2.0),        # at least the baseline's mean either side
    ("cost_usd", 2.0, 0.8, 3.3, 3.3 * 1.05),     # widened to hold the interval
    ("input_tokens", -5e5, -9e5, -1e5, 1e6),
])
def test_effect_plot_axis_does_not_zoom_a_small_difference(metric, diff, lo, hi, limit):
    """Ours (the axis rule, harness.figures): a symmetric axis of at least +-100 points for rates
    and +- the baseline's mean for tokens and cost, a zero line, the interval as the error bar."""
    fig, ax = plt.subplots()
    figures.plot_effects(ax, _paired(metric, diff, lo, hi), SUMMARY, metric)
    assert ax.get_xlim() == pytest.approx((-limit, limit))
    assert any(list(line.get_xdata()) == [0, 0] for line in ax.lines)  # the zero line
    scale = 100 if metric in ("success", "cache_hit_rate") else 1
    [bars] = [c for c in ax.collections]
    [[(x0, _), (x1, _)]] = [list(segment) for segment in bars.get_segments()]
    assert (x0, x1) == pytest.approx((lo * scale, hi * scale))
    plt.close(fig)


def test_effect_plot_rows_follow_the_given_order():
    paired = pd.concat([_paired("success", 0.1, 0, 0.2).assign(strategy=name) for name in ("p=10", "p=3")])
    assert list(figures.effect_rows(paired, "success", order=["p=3", "p=10"])["strategy"]) == ["p=3", "p=10"]
    assert list(notebook.paired_table(paired, order=["p=3", "p=10"]).index) == ["p=3", "p=10"]


def test_figures_command_writes_every_figure_the_readme_shows(smoke_run, tmp_path, capsys):
    """`python -m harness.figures RESULTS_DIR --out DIR` regenerates each notebooks/figures/
    PNG that README.md shows."""
    shown = set(re.findall(r"notebooks/figures/([\w-]+)\.png", (ROOT / "README.md").read_text(encoding="utf-8")))
    assert shown and shown <= set(figures.README_FIGURES)
    assert figures.main([str(smoke_run), "--out", str(tmp_path / "out")]) == 0
    for name in shown:
        assert (tmp_path / "out" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
    assert str(tmp_path / "out") in capsys.readouterr().out


def test_figures_command_reports_a_bad_directory_without_a_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(notebook.RESULTS_ENV, raising=False)
    assert figures.main([str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "is not a directory" in err and "Traceback" not in err
    monkeypatch.chdir(tmp_path)
    assert figures.main([]) == 2
    assert "ctxbench run --suite smoke" in capsys.readouterr().err


def test_figures_command_rewrites_the_readme_table_from_the_results(smoke_run, tmp_path, capsys):
    """The README's result table is report.md's Strategies table of a results directory,
    rewritten between its markers by `python -m harness.figures RESULTS_DIR --readme FILE`; the text around it
    stays; a file without the markers exits 2 before any figure is written."""
    from harness.results.report import markdown_table, runs_frame, summarize

    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\n{figures.README_TABLE_START} how -->\n| old | table |\n"
                      f"{figures.README_TABLE_END}\n\nafter\n", encoding="utf-8")
    assert figures.main([str(smoke_run), "--out", str(tmp_path / "out"), "--readme", str(readme)]) == 0
    summary = summarize(runs_frame(smoke_run))
    table = markdown_table(summary[summary["family"] == "all"], family=False)
    assert readme.read_text(encoding="utf-8") == (f"# title\n\n{figures.README_TABLE_START} how -->\n{table}\n"
                                                  f"{figures.README_TABLE_END}\n\nafter\n")
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n", encoding="utf-8")
    assert figures.main([str(smoke_run), "--out", str(tmp_path / "none"), "--readme", str(bare)]) == 2
    assert "markers" in capsys.readouterr().err and not (tmp_path / "none").exists()
    assert bare.read_text(encoding="utf-8") == "no markers\n"
