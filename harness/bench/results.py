"""The results figure: what a results directory costs on disk and what reporting it costs as it grows.

- bytes per run, by suite: each suite named (default smoke, default and long, the first task of each family,
  every strategy of the bench, one seed) run once with the mock into a temporary directory; the bytes its
  files take on disk (allocated blocks, as `du` counts them) of events/ and of everything else, over its runs.
- `ctxbench report` at each row count (default 1,000, 10,000 and 100,000), each in a child process of its own:
  wall time (imports included) and peak RSS (VmHWM, reset as the child starts). The rows are made from the first
  suite's real rows: copy k of a row gets a run id and task id of its own (the task id shared by SYNTH_SEEDS copies,
  which get seeds 0..SYNTH_SEEDS-1), so tasks (the bootstrap's clusters) grow with the rows as they do when a
  suite grows; no event log is written, as a report reads none but the context plot's.
- the growth exponents: the slope of log time against log rows, and of log peak-RSS growth (over the smallest
  size's peak) against log rows, by least squares; 1 is linear (each note gives the other reading: time above the
  smallest size's, the whole peak).
Goals: a report of 100,000 rows in at most 60 s and 1 GiB of peak RSS; growth exponents at most 1.2.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from harness.bench import common
from harness.bench.common import BenchOptions, Figure

SYNTH_SEEDS = 3  # copies of a task that share its (new) task id, as seeds
GOAL_ROWS = 100_000  # the row count the time and memory goals are set at
GOAL_REPORT_S, GOAL_REPORT_MIB, GOAL_EXPONENT = 60.0, 1024.0, 1.2


def figures(options: BenchOptions) -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        found = [bytes_per_run(suite, options.strategies, Path(tmp) / suite) for suite in options.results_suites]
        source = Path(tmp) / options.results_suites[0]
        timed = [report_cost(source, rows, Path(tmp) / f"rows{rows}") for rows in options.report_rows]
    return [*found, *(figure for pair in timed for figure in pair), *growth(options.report_rows, timed)]


def bytes_per_run(suite: str, strategies: list[str], out: Path) -> Figure:
    """One run of `suite` (the first task of each family, one seed) and its bytes on disk per run."""
    from harness import api
    from harness.results.layout import EVENTS_DIR, read_runs

    api.run(suite, strategies=strategies, out=out, limit=1, workers=min(2, os.cpu_count() or 1))
    runs = len(read_runs(out))
    events = common.disk_bytes(out / EVENTS_DIR)
    rest = common.disk_bytes(out) - events
    return Figure(f"results: KB per run, {suite}", (events + rest) / runs / 1000, None,
                  note=f"events/ {events / runs / 1000:,.1f} KB + the rest {rest / runs / 1000:,.1f} KB per run, "
                       f"{runs} runs (first task of each family, one seed)")


def synthesize(source: Path, rows: int, out: Path) -> None:
    """A results directory of `rows` rows made from `source`'s (module docstring), its config.json copied."""
    from harness.results.layout import CONFIG_FILE, RUNS_FILE, read_runs

    base = read_runs(source)
    out.mkdir(parents=True)
    shutil.copyfile(source / CONFIG_FILE, out / CONFIG_FILE)
    with open(out / RUNS_FILE, "w", encoding="utf-8") as handle:
        for number in range(rows):
            copy, row = divmod(number, len(base))
            row = {**base[row], "run_id": f"{base[row]['run_id']}~{copy}",
                   "task_id": f"{base[row]['task_id']}~{copy // SYNTH_SEEDS}", "seed": copy % SYNTH_SEEDS}
            handle.write(json.dumps(row) + "\n")


def report_child(results_dir: str) -> dict[str, float]:
    """In a fresh process: `ctxbench report RESULTS_DIR` as the command line runs it (imports included), its wall
    seconds and the process's peak RSS in MiB (VmHWM, reset when the process starts: a forked child's high-water
    mark starts at its parent's, so wait4's ru_maxrss would report the bench's own size)."""
    common.reset_peak_rss()
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        from harness.cli import main

        status = main(["report", results_dir])
    if status:
        raise SystemExit(f"ctxbench report {results_dir} exited {status}")
    return {"wall_s": time.perf_counter() - start, "peak_mib": common.status_bytes("VmHWM") / 2**20}


def report_cost(source: Path, rows: int, out: Path) -> tuple[Figure, Figure]:
    """The wall time and peak RSS of a report of `rows` synthesized rows."""
    synthesize(source, rows, out)
    size = (out / "runs.jsonl").stat().st_size
    measured = common.child("results", [str(out)])
    wall, peak = measured["wall_s"], measured["peak_mib"]
    at_goal = rows == GOAL_ROWS
    return (Figure(f"report: s at {rows:,} rows", wall, GOAL_REPORT_S if at_goal else None,
                   note=f"runs.jsonl {size / 1e6:,.1f} MB; wall time of `ctxbench report` in a child"),
            Figure(f"report: peak MiB at {rows:,} rows", peak, GOAL_REPORT_MIB if at_goal else None,
                   note="peak RSS of that child (VmHWM)"))


def slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of log y against log x (nan with fewer than two points)."""
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(points) < 2:
        return float("nan")
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else float("nan")


def growth(rows: tuple[int, ...], timed: list[tuple[Figure, Figure]]) -> list[Figure]:
    """The exponent of time against rows, and of peak-RSS growth above the smallest size's peak (what the rows
    add to the interpreter and libraries); each note gives the other reading."""
    walls = [wall.value or 0.0 for wall, _ in timed]
    peaks = [peak.value or 0.0 for _, peak in timed]
    larger = list(rows[1:])
    time_growth = slope(larger, [wall - walls[0] for wall in walls[1:]])
    return [Figure("report: time exponent", slope(list(rows), walls), GOAL_EXPONENT,
                   note=f"slope of log wall time against log rows (1: linear; start-up and plots make it lower); "
                        f"of the time above {walls[0]:.1f} s at {rows[0]:,} rows: {time_growth:.2f}"),
            Figure("report: memory exponent", slope(larger, [peak - peaks[0] for peak in peaks[1:]]), GOAL_EXPONENT,
                   note=f"slope of log (peak RSS - {peaks[0]:.0f} MiB at {rows[0]:,} rows) against log rows; of the "
                        f"whole peak: {slope(list(rows), peaks):.2f}")]


if __name__ == "__main__":  # the child: RESULTS_DIR
    print(json.dumps(report_child(sys.argv[1])))
