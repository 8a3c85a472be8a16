"""The parallel figure: wall time of the default suite (all strategies) with 1 worker divided by that with 2, each
measured in a fresh subprocess around the runs alone (imports excluded, no cache warmed by the other);
the median of `--repeats` (default 3) such pairs. Goal >= 1.7.
"""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from typing import Any

from harness.bench import common
from harness.bench.common import PARALLEL_REPEATS, BenchOptions, Figure


def figures(options: BenchOptions) -> list[Figure]:
    return parallel(repeats=options.repeats)


def parallel_child(suite: str, workers: int) -> dict[str, Any]:
    """Wall seconds of run_cells over the suite in this (fresh) process: no cache warmed by another run.

    The cells are validated first, as `ctxbench run` does before any run (which also generates
    each task instance once), and the heap is settled (`run_cells` does it once per process).
    """
    from harness.executors import settle_heap
    from harness.run.runner import run_cells, validate_cells

    with tempfile.TemporaryDirectory() as tmp:
        cells = common.cells(suite, "all", tmp)
        validate_cells(cells)
        settle_heap()
        started = time.perf_counter()
        run_cells(cells, workers=workers, on_row=lambda row: None, progress=False)
        return {"wall_s": time.perf_counter() - started}


def parallel(suite: str = "default", repeats: int = PARALLEL_REPEATS) -> list[Figure]:
    ratios, walls = [], []
    for _ in range(repeats):
        one = common.child("parallel", [suite, "1"])["wall_s"]
        two = common.child("parallel", [suite, "2"])["wall_s"]
        ratios.append(one / two)
        walls.append(f"{one:.1f}s/{two:.1f}s")
    spread = f"; spread {min(ratios):.2f}-{max(ratios):.2f}" if repeats > 1 else ""
    return [Figure(f"parallel {suite} workers 1 / 2", statistics.median(ratios), 1.7, at_most=False,
                   note=f"wall {', '.join(walls)}{spread}")]


if __name__ == "__main__":  # the child: SUITE WORKERS
    print(json.dumps(parallel_child(sys.argv[1], int(sys.argv[2]))))
