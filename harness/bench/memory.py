"""The memory figure: per `long` task (strategy `none`), in a fresh subprocess, the growth of peak RSS
(VmHWM, reset just before the run) during the run over the RSS before it (and tracemalloc's peak, in another subprocess),
divided by the UTF-8 size of the distinct message contents of the run's event log. As for the overhead
figure, the task instance is generated before (once per process); the run works on its copy. Goal <= 3.

Repeats and noise: the RSS growth of one child is a lottery of the allocator's state at the small
contents of these tasks (`work_queue-long-0`: +0.04 or +0.8 MB over 0.28 MB of content, the same code in
fresh processes, as the heap the warm-up left does or does not hold the run's pages). So each task's RSS
child runs MEMORY_REPEATS times; the figure is their median and the note gives their range.
"""
from __future__ import annotations

import gc
import json
import statistics
import sys
import tempfile
import tracemalloc
from typing import Any

from harness.bench import common
from harness.conversation.events import event_log_path
from harness.bench.common import BenchOptions, Figure

MEMORY_REPEATS = 3  # fresh RSS children per task: the figure is their median, their range is in the note


def figures(options: BenchOptions) -> list[Figure]:
    return memory()


def memory_child(suite: str, task_id: str, strategy: str, trace: bool) -> dict[str, Any]:
    """Run one cell in this (fresh) process; its peak memory over what was there before it."""
    from harness.run.runner import run_cell

    common.warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        cell = common.cells(suite, [strategy], tmp, tasks=[task_id])[0]
        cell.task.build(cell.seed)  # generated once per process, as for the overhead figure; the run works on a copy
        gc.collect()
        common.reset_peak_rss()
        before = common.status_bytes("VmRSS")
        if trace:
            tracemalloc.start()
        run_cell(cell)
        peak_traced = tracemalloc.get_traced_memory()[1] if trace else None
        if trace:
            tracemalloc.stop()
        peak = common.status_bytes("VmHWM")
        texts = common.distinct_contents(common.events(event_log_path(tmp, cell.run_id)))
    return {"rss_growth": max(peak - before, 0), "traced_peak": peak_traced,
            "content": sum(len(t.encode("utf-8")) for t in texts)}


def memory(suite: str = "long", strategy: str = "none", repeats: int = MEMORY_REPEATS) -> list[Figure]:
    from tasks.suites import load_tasks

    figures = []
    for task in load_tasks(suite):
        children = [common.child("memory", [suite, task.task_id, strategy]) for _ in range(repeats)]
        content = children[0]["content"]  # the same run each time: its log's content does not change
        growths = [child["rss_growth"] for child in children]
        growth = statistics.median(growths)
        spread = f", {repeats} runs: +{min(growths) / 1e6:.2f}-{max(growths) / 1e6:.2f}MB" if repeats > 1 else ""
        traced = common.child("memory", [suite, task.task_id, strategy, "--trace"])
        figures.append(Figure(f"memory {task.task_id}", growth / content, 3.0,
                              note=f"peak RSS +{growth / 1e6:.2f}MB (median{spread}; tracemalloc peak "
                                   f"{traced['traced_peak'] / 1e6:.1f}MB = {traced['traced_peak'] / content:.2f}x) "
                                   f"/ distinct content {content / 1e6:.2f}MB"))
    return figures


if __name__ == "__main__":  # the child: SUITE TASK STRATEGY [--trace]
    print(json.dumps(memory_child(*sys.argv[1:4], trace="--trace" in sys.argv[4:])))
