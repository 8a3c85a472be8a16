"""The scale figure (issue 23 item 3): wall time of the default suite (all strategies) on a local Ray of 2
CPUs divided by that on 2 local worker processes, each measured in a fresh subprocess around the runs alone
(imports excluded; for Ray, `ray.init` (harness.executors.ray_cluster.start_ray) is timed apart and
reported as start-up, while its cell actors' start and first imports are in the runs' wall time, as a
user waits for them: forked local workers start with everything imported); the median of `--repeats`
(default 3) such pairs. The per-cell overhead is (Ray wall - local wall) / cells. Goal <= 1.25: on one
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
    """Wall seconds of run_cells over the suite on `executor` in this (fresh) process, after validating the
    cells and settling the heap as parallel_child does; for "ray", the seconds of starting a local Ray
    (`start_s`) come first, apart."""
    from harness.executors import settle_heap
    from harness.runner import run_cells, validate_cells

    with tempfile.TemporaryDirectory() as tmp:
        cells = common.cells(suite, "all", tmp)
        validate_cells(cells)
        settle_heap()
        start_s = 0.0
        if executor == "ray":
            from harness.executors.ray_cluster import import_ray, start_ray

            ray = import_ray()
            began = time.perf_counter()
            start_ray(ray, workers, None)
            start_s = time.perf_counter() - began
        started = time.perf_counter()
        run_cells(cells, workers=workers, on_row=lambda row: None, progress=False, executor=executor)
        return {"wall_s": time.perf_counter() - started, "start_s": start_s, "cells": len(cells)}


def scale(suite: str = "default", repeats: int = 3) -> list[Figure]:
    name = f"scale {suite} ray / local, {WORKERS} workers"
    if importlib.util.find_spec("ray") is None:
        return [Figure(name, None, 1.25, note="needs the `ray` extra")]
    ratios, walls, starts, per_cell = [], [], [], []
    for _ in range(repeats):
        local = common.child("scale", [suite, "local", str(WORKERS)])
        on_ray = common.child("scale", [suite, "ray", str(WORKERS)])
        ratios.append(on_ray["wall_s"] / local["wall_s"])
        walls.append(f"{on_ray['wall_s']:.1f}s/{local['wall_s']:.1f}s")
        starts.append(on_ray["start_s"])
        per_cell.append((on_ray["wall_s"] - local["wall_s"]) / on_ray["cells"] * 1000)
    spread = f"; spread {min(ratios):.2f}-{max(ratios):.2f}" if repeats > 1 else ""
    return [Figure(name, statistics.median(ratios), 1.25,
                   note=f"wall {', '.join(walls)}{spread}; per cell +{statistics.median(per_cell):.0f} ms; "
                        f"ray start-up {statistics.median(starts):.1f}s (apart)")]


if __name__ == "__main__":  # the child: SUITE EXECUTOR WORKERS
    print(json.dumps(scale_child(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
