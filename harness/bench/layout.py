"""The layout figure: what the event logs' layout (gzip'd JSON Lines, large texts stored once in packs,
harness.conversation.events) saves on disk and costs in run time, against the layout written before it (plain
JSON Lines, every text in its line), on the default suite (all strategies, seed 0, the mock), in a fresh
subprocess.

* bytes: the suite run once in each layout, one run at a time; the results directory's bytes on disk (allocated
  blocks, as `du` counts them) before / now. Goal >= 8.
* run CPU: the runs' CPU with their logs written now / before (the runs' CPU, measured writing the layout before,
  with what writing it cost replaced by what writing the layout now costs). The two
  layouts differ only in how a log is written (harness.conversation.events.EventLog's file), so that is what is
  timed: the suite's own events, recorded from its runs, appended again through an EventLog writing each layout,
  the two alternating `--repeats` times (default 3), medians taken, over the runs' CPU. Timing whole runs of each
  layout instead cannot resolve a 5% bound here: two runs of the same layout differ by up to 15% on a 2-core VM.
  Goal <= 1.05.
"""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.bench import common
from harness.bench.common import BenchOptions, Figure

SUITE = "default"
BEFORE, NOW = ".jsonl", ".jsonl.gz"  # the written suffix of each layout (harness.conversation.events)


def figures(options: BenchOptions) -> list[Figure]:
    return layout(repeats=options.repeats)


def run_suite(suite: str, directory: Path) -> tuple[float, int, list[str]]:
    """The suite's cells run here one at a time into `directory`: CPU seconds of the runs, bytes on disk, run ids."""
    from harness.executors import settle_heap
    from harness.results.layout import ResultsDir
    from harness.run.runner import run_cell, validate_cells

    results = ResultsDir(directory)
    cells = common.cells(suite, "all", str(results.events_dir))
    validate_cells(cells)
    settle_heap()
    started = time.process_time()
    for cell in cells:
        results.append_run(run_cell(cell))
    return time.process_time() - started, common.disk_bytes(directory), [cell.run_id for cell in cells]


Appended = list[list[tuple[str, dict[str, Any]]]]  # per run, each event's type and fields as appended


def write_seconds(runs: Appended, suffix: str) -> float:
    """CPU seconds to write these runs' events as logs of `suffix`'s layout, as a fresh process would."""
    from harness.conversation import blobs
    from harness.conversation.events import EventLog

    blobs._PACKS.clear()  # nothing stored yet, as in a new process
    with tempfile.TemporaryDirectory() as tmp:
        started = time.process_time()
        for number, run in enumerate(runs):
            log = EventLog(Path(tmp) / f"{number}{suffix}", in_memory=False)
            for kind, values in run:
                log.append(kind, **values)
            log.close()
        return time.process_time() - started


def layout_child(suite: str, repeats: int) -> dict[str, Any]:
    from harness.conversation import events

    common.warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        events.WRITTEN_SUFFIX = BEFORE
        run_cpu, bytes_before, run_ids = run_suite(suite, Path(tmp) / "before")
        runs = [[(event["type"], {k: v for k, v in event.items() if k not in ("id", "type")})
                 for event in events.read_events(events.find_event_log(Path(tmp) / "before" / "events", run_id))]
                for run_id in run_ids]
        events.WRITTEN_SUFFIX = NOW
        _, bytes_now, _ = run_suite(suite, Path(tmp) / "now")
    before, now = [], []
    for _ in range(repeats):
        before.append(write_seconds(runs, BEFORE))
        now.append(write_seconds(runs, NOW))
    return {"run_cpu_s": run_cpu, "write_before_s": statistics.median(before), "write_now_s": statistics.median(now),
            "bytes_before": bytes_before, "bytes_now": bytes_now, "runs": len(run_ids)}


def layout(suite: str = SUITE, repeats: int = 3) -> list[Figure]:
    found = common.child("layout", [suite, str(repeats)])
    runs, before = found["runs"], found["run_cpu_s"]  # the runs' CPU, their logs written in the layout before
    now = before - found["write_before_s"] + found["write_now_s"]
    return [Figure(f"layout {suite} bytes: before / now", found["bytes_before"] / found["bytes_now"], 8,
                   at_most=False, note=f"{found['bytes_before'] / runs / 1e6:.3f} MB -> "
                                       f"{found['bytes_now'] / runs / 1e6:.3f} MB a run on disk, {runs} runs"),
            Figure(f"layout {suite} run CPU: now / before", now / before, 1.05,
                   note=f"writing the logs {found['write_now_s']:.2f}s now vs {found['write_before_s']:.2f}s before, "
                        f"for {runs} runs of {before:.2f}s CPU")]


if __name__ == "__main__":  # the child: SUITE REPEATS
    print(json.dumps(layout_child(sys.argv[1], int(sys.argv[2]))))
