"""ctxbench runs in Inspect's log viewer, checked in a real browser.

`inspect view` serves the Inspect logs on a free loopback port; headless Debian Chromium loads
the page; the test checks what a user sees: the log list names every log file (none hidden as a
"retried" duplicate), a log's sample list names its task and samples, and one run's transcript, reached through its outline's "compaction"
entry as a user would (the event list is virtualised, off-screen events are not in the page),
renders its compaction (Inspect's
CompactionEventView: a panel titled "Compaction[: source]" over a grid of tokens_before,
tokens_after and the event's metadata; inspect_ai/_view/dist/assets/index.js). Screenshots of each
page go to $CTXBENCH_BROWSER_ARTIFACTS (default tests/artifacts/inspect_view/), printed by the test.

Marked `browser` (not in the default run): it needs chromium, chromium-driver, selenium and the
`inspect` extra, and is skipped naming what is missing. `.ci/run` installs them and runs it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.browser_helpers import click_link, headless_chromium, inspect_view, missing_browser_pieces, wait_for_text

pytestmark = pytest.mark.browser

ARTIFACTS = Path(os.environ.get("CTXBENCH_BROWSER_ARTIFACTS", Path(__file__).parents[1] / "artifacts" / "inspect_view"))


@dataclass(frozen=True)
class ViewerLogs:
    """Inspect logs in a directory, and what the viewer must show of them (read back from the files)."""

    log_dir: Path
    samples: dict[str, tuple[str, list[str]]]  # log file name -> (task name, sample ids)
    compacted: tuple[str, str, int, list[str]]  # log file, sample id, epoch, texts its compaction panel shows


def _read_expectations(log_dir: Path) -> ViewerLogs:
    """What each log holds, via inspect_ai.log.read_eval_log: task, sample ids, one sample with a compaction."""
    from inspect_ai.event import CompactionEvent
    from inspect_ai.log import read_eval_log

    samples: dict[str, tuple[str, list[str]]] = {}
    compacted = None
    for path in sorted(log_dir.glob("*.eval")):
        log = read_eval_log(str(path))
        samples[path.name] = (log.eval.task, [str(sample.id) for sample in log.samples or []])
        for sample in log.samples or []:
            event = next((e for e in sample.events if isinstance(e, CompactionEvent)), None)
            if event is not None and compacted is None:
                shown = ["Compaction" + (f": {event.source}" if event.source and event.source != "inspect" else "")]
                for name in ("tokens_before", "tokens_after"):  # the panel's grid: a label, then the number
                    if getattr(event, name):
                        shown += [name, f"{getattr(event, name):,}"]
                compacted = (path.name, str(sample.id), sample.epoch, shown)
    assert samples, f"no Inspect logs (*.eval) in {log_dir}"
    assert compacted is not None, f"no sample with a CompactionEvent in {sorted(samples)}"
    return ViewerLogs(log_dir, samples, compacted)


@pytest.fixture(scope="module")
def viewer_logs(tmp_path_factory) -> ViewerLogs:
    """Inspect logs of ctxbench smoke runs: `ctxbench run` (a window small enough to compact), then
    `ctxbench export --format inspect`."""
    missing = missing_browser_pieces()
    if missing:
        pytest.skip("the browser test needs: " + "; ".join(missing))
    base = tmp_path_factory.mktemp("inspect_view")
    log_dir = base / "inspect"
    log_dir.mkdir()
    from harness.cli import main

    results = base / "results"
    assert main(["run", "--suite", "smoke", "--strategies", "none,hard_summarize", "--window", "20000",
                 "--no-progress", "--out", str(results)]) == 0
    assert main(["export", str(results), "--format", "inspect", "--out", str(log_dir)]) == 0
    return _read_expectations(log_dir)


def _log_route(log_file: str) -> str:
    """The viewer's hash route to a log file in the served directory."""
    return "#/logs/" + quote(log_file)


def _shot(driver, name: str) -> Path:
    """Save a screenshot under ARTIFACTS and print where, so a run says where to look."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    driver.save_screenshot(str(path))
    print(f"screenshot: {path}")
    return path


def test_inspect_view_lists_logs_and_samples_and_renders_a_compaction(viewer_logs, tmp_path):
    """In headless Chromium, `inspect view` on exported ctxbench runs lists every
    log file, each log's task and every run as a sample, and one run's transcript shows its compaction panel."""
    with inspect_view(viewer_logs.log_dir, tmp_path / "inspect_view.log") as url, headless_chromium() as driver:
        # The Logs listing, one row per file; Inspect hides a log sharing its task_id with a newer one
        # ("retried"), so logs of two strategies with one task_id would show as one.
        driver.get(url + "/#/logs")
        wait_for_text(driver, list(viewer_logs.samples))
        _shot(driver, "log_list.png")
        for log_file, (task, sample_ids) in viewer_logs.samples.items():
            driver.get(url + "/" + _log_route(log_file))
            wait_for_text(driver, [task, *sample_ids])
        _shot(driver, "sample_list.png")
        log_file, sample_id, epoch, shown = viewer_logs.compacted
        driver.get(f"{url}/{_log_route(log_file)}/samples/sample/{quote(sample_id)}/{epoch}/transcript")
        wait_for_text(driver, [sample_id])
        _shot(driver, "sample_transcript_top.png")
        click_link(driver, "compaction")  # the transcript's outline; the event list is virtualised
        wait_for_text(driver, shown)
        _shot(driver, "sample_transcript.png")
