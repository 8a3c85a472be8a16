"""The scale figure: wall time of the default suite (all strategies) on a local Ray of 2
CPUs divided by that on 2 local worker processes, each measured in a fresh subprocess around the runs alone
(imports excluded; for Ray, its start-up, `ray.init` and its cell actors' start and imports before any
cell (harness.executors.ray_cluster.RayCluster.start_s), and its stop after the last row (`stop_s`) are
timed apart, fixed costs of an invocation: an info line gives the ratio with them; forked local workers
start with everything imported); the median of `--repeats` (default 3) such pairs. The per-cell overhead is (Ray wall - local wall) / cells. Goal <= 1.25: on one
machine Ray has no advantage, so this is what its scheduling, actors and the event logs' round trip cost.
Needs the `ray` extra (else not measured).
"""
from __future__ import annotations

import importlib.util
import json
import statistics
import sys
import tempfile
import time
from typing import Any

from harness.bench import common
from harness.bench.common import BenchOptions, Figure

WORKERS = 2


def figures(options: BenchOptions) -> list[Figure]:
    return scale(repeats=options.repeats)


def scale_child(suite: str, executor: str, workers: int) -> dict[str, Any]:
    """Wall seconds of the suite's cells on `executor` in this (fresh) process, after validating the cells
    and settling the heap as parallel_child does; for "ray", the executor's start-up (joining or starting
    Ray, its actors' start and imports: `start_s`) apart from the runs' wall."""
    from harness.executors import make_executor, settle_heap
    from harness.run.runner import lost_row, run_cell, validate_cells, warm_worker

    with tempfile.TemporaryDirectory() as tmp:
        cells = common.cells(suite, "all", tmp)
        validate_cells(cells)
        settle_heap()
        chosen = make_executor(executor, workers, cells, warm=warm_worker)
        started = time.perf_counter()
        chosen.run(cells, run_cell, lambda row: None, None, lost_row)
        total = time.perf_counter() - started
        start_s, stop_s = getattr(chosen, "start_s", 0.0), getattr(chosen, "stop_s", 0.0)
        return {"wall_s": total - start_s - stop_s, "start_s": start_s, "stop_s": stop_s, "total_s": total,
                "cells": len(cells)}


def scale(suite: str = "default", repeats: int = 3) -> list[Figure]:
    name = f"scale {suite} ray / local, {WORKERS} workers"
    if importlib.util.find_spec("ray") is None:
        return [Figure(name, None, 1.25, note="needs the `ray` extra")]
    ratios, totals, walls, starts, stops, per_cell = [], [], [], [], [], []
    for _ in range(repeats):
        local = common.child("scale", [suite, "local", str(WORKERS)])
        on_ray = common.child("scale", [suite, "ray", str(WORKERS)])
        ratios.append(on_ray["wall_s"] / local["wall_s"])
        totals.append(on_ray["total_s"] / local["total_s"])
        walls.append(f"{on_ray['wall_s']:.1f}s/{local['wall_s']:.1f}s")
        starts.append(on_ray["start_s"])
        stops.append(on_ray["stop_s"])
        per_cell.append((on_ray["wall_s"] - local["wall_s"]) / on_ray["cells"] * 1000)
    spread = f"; spread {min(ratios):.2f}-{max(ratios):.2f}" if repeats > 1 else ""
    return [Figure(name, statistics.median(ratios), 1.25,
                   note=f"runs' wall {', '.join(walls)}{spread}; per cell {statistics.median(per_cell):+.0f} ms"),
            Figure("  info: with Ray's start and stop", statistics.median(totals), 1.25,
                   note=f"Ray start-up {statistics.median(starts):.1f}s (ray.init, then its actors' start and "
                        f"imports, in parallel) before the first cell, stop {statistics.median(stops):.1f}s after "
                        f"the last row; forked local workers start with everything imported")]


if __name__ == "__main__":  # the child: SUITE EXECUTOR WORKERS
    print(json.dumps(scale_child(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
