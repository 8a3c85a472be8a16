"""The layout figure: what the event logs' layout (gzip'd JSON Lines, large contents stored once by hash,
harness.conversation.events) saves on disk and costs in run time, against the layout written before it (plain
JSON Lines, every text in its line), on the same cells. Each side runs the default suite (all strategies, seed 0,
the mock, one at a time in this process) in a fresh subprocess that writes the layout named; the two alternate
`--repeats` times (default 3), medians taken.

* bytes: the results directory's bytes on disk (allocated blocks, as `du` counts them: a small blob costs a
  block) before / now. Goal >= 8.
* run CPU: the process CPU seconds of the runs, now / before: what compressing, hashing and storing blobs add.
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


def layout_child(suite: str, suffix: str) -> dict[str, Any]:
    """The suite's cells run here one at a time, their logs written with `suffix`'s layout: CPU seconds of the
    runs, the directory's bytes on disk and the number of runs."""
    from harness.conversation import events
    from harness.executors import settle_heap
    from harness.results.layout import ResultsDir
    from harness.run.runner import run_cell, validate_cells

    events.WRITTEN_SUFFIX = suffix  # the layout this child writes (read by event_log_name at each run's start)
    common.warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        results = ResultsDir(Path(tmp) / "r")
        cells = common.cells(suite, "all", str(results.events_dir))
        validate_cells(cells)
        settle_heap()
        started, wall_started = time.process_time(), time.perf_counter()
        for cell in cells:
            results.append_run(run_cell(cell))
        cpu, wall = time.process_time() - started, time.perf_counter() - wall_started
        return {"cpu_s": cpu, "wall_s": wall, "bytes": common.disk_bytes(results.path), "runs": len(cells)}


def layout(suite: str = SUITE, repeats: int = 3) -> list[Figure]:
    before: list[dict[str, Any]] = []
    now: list[dict[str, Any]] = []
    for _ in range(repeats):
        before.append(common.child("layout", [suite, BEFORE]))
        now.append(common.child("layout", [suite, NOW]))
    runs = now[0]["runs"]
    bytes_before, bytes_now = statistics.median(r["bytes"] for r in before), statistics.median(r["bytes"] for r in now)
    ratios = [n["cpu_s"] / b["cpu_s"] for b, n in zip(before, now)]
    spread = f"; spread {min(ratios):.3f}-{max(ratios):.3f}" if repeats > 1 else ""
    return [Figure(f"layout {suite} bytes: before / now", bytes_before / bytes_now, 8, at_most=False,
                   note=f"{bytes_before / runs / 1e6:.3f} MB -> {bytes_now / runs / 1e6:.3f} MB a run on disk, "
                        f"{runs} runs"),
            Figure(f"layout {suite} run CPU: now / before", statistics.median(ratios), 1.05,
                   note=f"{statistics.median(n['cpu_s'] for n in now):.1f}s vs "
                        f"{statistics.median(b['cpu_s'] for b in before):.1f}s CPU for {runs} runs{spread}")]


if __name__ == "__main__":  # the child: SUITE SUFFIX
    print(json.dumps(layout_child(sys.argv[1], sys.argv[2])))
