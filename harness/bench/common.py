"""What every figure of the bench shares: the figure and its goal, the options, the cells of a suite,
the warm-up before a measured run, the distinct texts a run sent, and fresh child processes."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from harness.core.tokens import message_text

OVERHEAD_REPEATS = 5  # repeats of each strategy's runs and tokenizing: each side's median is the figure (single repeats move ±15%)
PARALLEL_REPEATS = 3  # pairs of 1-worker and 2-worker runs; the median ratio is taken
PEER_REQUESTS = 200  # requests of the peers figure's shared conversation
REPORT_ROWS = (1_000, 10_000, 100_000)  # rows of the results figure's reports
RESULTS_SUITES = ("smoke", "default", "long")  # suites the results figure measures bytes per run of (smoke first:
# its rows are the ones the reports' rows are made from)
PEER_REPEATS = 5  # interleaved rounds of the peers figure; medians and spread reported (a burst of the host moves one round)


@dataclass
class BenchOptions:
    """What `python -m harness.bench` was asked for, handed to every figure's `figures(options)`."""

    strategies: list[str]
    overhead_suite: str = "long"
    overhead_repeats: int = OVERHEAD_REPEATS
    repeats: int = PARALLEL_REPEATS
    peer_requests: int = PEER_REQUESTS
    peer_repeats: int = PEER_REPEATS
    report_rows: tuple[int, ...] = REPORT_ROWS
    results_suites: tuple[str, ...] = RESULTS_SUITES


@dataclass
class Figure:
    name: str
    value: float | None  # None: not measured
    goal: float | None  # None: a figure for information, without a goal
    at_most: bool = True  # the goal is an upper bound (else a lower bound)
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.value is None or self.goal is None:
            return None
        return self.value <= self.goal if self.at_most else self.value >= self.goal

    def line(self) -> str:
        goal = "" if self.goal is None else f"{'<=' if self.at_most else '>='} {self.goal:g}"
        value = "not measured" if self.value is None else f"{self.value:.2f}"
        verdict = {None: "-", True: "ok", False: "MISSED"}[self.met]
        return f"{self.name:<34} {value:>12}   goal {goal:<8} {verdict:<7} {self.note}"


def machine() -> str:
    """The line a figure is read against (a figure means little without its machine): CPU model and count, OS,
    Python and tokenizer versions, and the load when measuring began (others' work moves every figure)."""
    from importlib.metadata import PackageNotFoundError, version

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), model)
    except OSError:
        pass
    try:
        tokenizer = f"tiktoken {version('tiktoken')}"
    except PackageNotFoundError:
        tokenizer = "tiktoken not installed"
    load = f", load {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    return (f"machine: {model}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, {tokenizer}{load}")


# ----- what the runs sent: distinct message contents

def distinct_contents(events: Iterable[dict[str, Any]]) -> set[str]:
    """Every distinct text a run's log holds as a message or as another rendering of one."""
    texts: set[str] = set()
    for event in events:
        if event["type"] == "message":
            texts.add(message_text(event["message"]))
        for op in event.get("view_ops", ()):
            if op.get("op") == "replace":
                texts.add(message_text(op["message"]))
    texts.discard("")
    return texts


def tokenize_seconds(texts: Iterable[str], repeats: int = 3) -> float:
    """CPU seconds to tokenize each text once as the harness does (`harness.core.tokens`, the memo left out;
    best of `repeats`). The fastest way it has: long texts are counted from tiktoken's packed buffer."""
    from harness.core.tokens import tokenize_count

    texts = list(texts)
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        for text in texts:
            tokenize_count(text)
        best = min(best, time.process_time() - started)
    return best


def events(path: Path) -> list[dict[str, Any]]:
    from harness.conversation.events import read_events

    return read_events(path)


# ----- the runs

def cells(suite: str, strategies: list[str] | str, events_dir: str, *, tasks: list[str] | None = None,
          profiles: dict[str, Any] | None = None) -> list[Any]:
    """The cells of `suite` (its tasks named in `tasks`, else all) x `strategies`, seed 0, with the mock."""
    from harness.api import mock_profiles, strategy_specs
    from harness.run.runner import Matrix
    from tasks.suites import load_tasks

    rows = [t for t in load_tasks(suite) if tasks is None or t.task_id in tasks]
    matrix = Matrix(tasks=rows, strategies=strategy_specs(strategies), seeds=[0], profiles=profiles or mock_profiles())
    return matrix.build(events_dir)


def warm_up() -> None:
    """One short mock run, so lazy imports inside litellm are not billed to the first measured run;
    then the heap settled as `run_cells` settles it before any run."""
    from harness.executors import settle_heap
    from harness.run.runner import run_cell

    with tempfile.TemporaryDirectory() as tmp:
        run_cell(cells("smoke", ["none"], tmp)[0])
    settle_heap()


CHILD_ERROR_LINES = 12  # of a failed child's stderr, quoted in the error that says it failed


class ChildFailed(RuntimeError):
    """A figure's fresh process ended without its figures; the message ends with the last lines of its stderr."""


def disk_bytes(directory: Path) -> int:
    """Bytes the files under `directory` take on disk: the blocks allocated, as `du` counts them (a small file
    costs a whole block)."""
    return sum(path.stat().st_blocks * 512 for path in directory.rglob("*") if path.is_file())


def status_bytes(field: str) -> int:
    """A size from /proc/self/status (VmRSS: resident now; VmHWM: its peak since the last reset)."""
    with open("/proc/self/status") as handle:
        line = next(line for line in handle if line.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def reset_peak_rss() -> None:
    """Start the peak-RSS mark afresh (Linux: writing 5 to clear_refs resets VmHWM)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def child(module: str, args: list[str]) -> dict[str, Any]:
    """Run `python -m harness.bench.<module> ARGS` in a fresh process; the JSON of its last line. A child that
    fails says why: its exit status and the end of its stderr (a bare exit status told nothing)."""
    out = subprocess.run([sys.executable, "-m", f"harness.bench.{module}", *args], capture_output=True, text=True)
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        tail = "\n".join(out.stderr.strip().splitlines()[-CHILD_ERROR_LINES:]) or "(nothing on stderr)"
        raise ChildFailed(f"harness.bench.{module} {' '.join(args)} exited {out.returncode} without its figures; "
                          f"the end of its stderr:\n{tail}")
    return json.loads(lines[-1])
