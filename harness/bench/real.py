"""The real figure: the harness's own overhead on the real client path, over a bare `litellm.completion`
loop that sends the same requests to the same `serve-mock`, measured in the same run. Goal <= 1.15.

The workload: 64 runs of the default suite (its first tasks x the comparison strategies) against
`serve-mock --latency-ms 100` at --max-concurrency 16 (`openai/mock-agent`, summaries by
`openai/mock-summarizer` on the same server).

The floor does the client work minus the harness:
* The same requests. Before timing, the runs are made once one by one, in a forked child of this
  process, against a zero-latency serve-mock, `litellm.completion` wrapped to record each call's keyword arguments
  (a run's calls in the order it sent them; the runs are deterministic, so these are the requests
  every measured harness run sends, which the figure checks by their count). The floor sends them
  as recorded: the same messages, tools, litellm parameters (seed, api_key, max_retries, the
  prices the harness passes), the same session/request/clock headers (so serve-mock keys its
  sessions as for the harness and does the same work), only `api_base` pointed at the timed server.
  The summarizer's side calls are litellm calls of their runs, so both sides include them.
* The same concurrency. The floor runs in the harness's layout (harness.executors.local_processes.
  layout: here 2 forked processes of 32 threads, 64 runs in flight); each thread takes the next run
  and sends its requests in sequence, each holding one of 16 slots of its model shared by the
  processes, as harness.models.limits.model_slot does; a run's next request waits for its reply, as in
  the harness.
* Both walls are taken around the whole call (the harness's run_cells with its worker start, the
  floor's process start and join).
It cannot reproduce the harness's retries (serve-mock has no faults here, so none happen).

Harness and floor alternate (REAL_PAIRS pairs, harness first); the figure is the median of the
pairs' harness wall / floor wall, with their spread. The info lines give each side's wall against
the ideal, requests x latency / concurrency, the figure this replaced (goal 1.3, which the
client's litellm CPU alone misses on 2 cores).
"""
from __future__ import annotations

import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, Iterator

from harness.bench import common
from harness.bench.common import BenchOptions, Figure

REAL_RUNS = 64
REAL_LATENCY_S = 0.1
REAL_CONCURRENCY = 16
REAL_PAIRS = 3  # harness, floor, harness, floor, ...: the median pair ratio is taken

# One run's litellm.completion calls in the order it sent them: each call's keyword arguments, and whether
# it raised (a request over the window is answered 400; the run ends there).
Run = list[tuple[dict[str, Any], bool]]


def figures(options: BenchOptions) -> list[Figure]:
    """Measured in a fresh process: one where litellm ran has its logging threads, so its runs would spawn
    their workers (seconds of imports) where `ctxbench run` forks them."""
    return [Figure(**figure) for figure in common.child("real", [str(options.repeats)])["figures"]]


@contextmanager
def serve_mock(latency_s: float) -> Iterator[str]:
    """A `serve-mock` process with this latency, for the block; its base URL."""
    server = subprocess.Popen([sys.executable, "-m", "harness", "serve-mock", "--port", "0",
                               "--latency-ms", str(latency_s * 1000)], stdout=subprocess.PIPE, text=True)
    try:
        yield re.search(r"(http://\S+/v1)", server.stdout.readline()).group(1)  # type: ignore[union-attr]
    finally:
        server.terminate()
        server.wait(timeout=30)


def workload(url: str, events_dir: str, suite: str = "default", runs: int = REAL_RUNS) -> list[Any]:
    """The cells of the figure: `runs` runs of `suite` against serve-mock at `url`, --max-concurrency 16."""
    from harness.api import mock_profiles
    from harness.run.invocation import with_invocation_options
    from harness.models.usage import DEFAULT_PRICE_MODEL as PRICE_MODEL
    from strategies import comparison_strategies
    from tasks.suites import load_tasks

    strategies = comparison_strategies()
    tasks = [t.task_id for t in load_tasks(suite)][: max(runs // len(strategies), 1)]
    params = {"api_key": "unused-by-serve-mock"}
    summary = {"model": "openai/mock-summarizer", "api_base": url, "price_model": PRICE_MODEL, "params": params}
    profiles = with_invocation_options(
        mock_profiles("openai/mock-agent", api_base=url, window=200_000, price_model=PRICE_MODEL,
                      extra={"summary": summary}), max_concurrency=REAL_CONCURRENCY)
    profiles["main"]["params"] = params
    return common.cells(suite, strategies, events_dir, tasks=tasks, profiles=profiles)[:runs]


def run_harness(cells: list[Any]) -> tuple[list[dict[str, Any]], float]:
    """The cells' rows and the wall seconds of their runs, run as `ctxbench run` runs them (the local executor,
    one worker), the cells validated first as it does before any run (each task instance generated once)."""
    from harness.run.runner import run_cells, validate_cells

    validate_cells(cells)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    run_cells(cells, workers=1, on_row=rows.append, progress=False)
    return rows, time.perf_counter() - started


def record(cells: list[Any]) -> list[Run]:
    """Each cell's litellm.completion calls, recorded while the harness runs the cells one by one in a forked
    child: this process never calls litellm, so it starts no litellm thread and the measured runs fork their
    workers, as `ctxbench run` does (harness.executors.local_processes._start_method)."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_record_into, args=(cells, sender))
    child.start()
    sender.close()
    runs = receiver.recv()
    child.join()
    return runs


def _fresh_clients() -> None:
    """Drop the HTTP clients a forked child inherited: their keep-alive connections are its parent's too."""
    import litellm

    litellm.in_memory_llm_clients_cache.flush_cache()


def _record_into(cells: list[Any], sender: Any) -> None:
    import litellm

    _fresh_clients()

    from harness.run.runner import run_cells

    original, calls, runs = litellm.completion, [], []

    def recording(**kwargs: Any) -> Any:
        call = {**kwargs, "messages": list(kwargs["messages"])}
        try:
            response = original(**kwargs)
        except Exception:
            calls.append((call, True))
            raise
        calls.append((call, False))
        return response

    def close_run(row: dict[str, Any]) -> None:
        runs.append(calls[:])
        calls.clear()

    litellm.completion = recording
    run_cells(cells, workers=1, on_row=close_run, progress=False, executor="in_process")
    sender.send(runs)
    sender.close()


def _send_runs(runs: list[Run], url: str, taken: Any, slots: dict[str, Any], threads: int) -> None:
    """`threads` threads, each sending the next run's requests (the next index from `taken`) in sequence."""
    import litellm

    errors: list[BaseException] = []

    def work() -> None:
        try:
            while (index := taken()) is not None:
                for call, raised in runs[index]:
                    with slots[f"{call['model']}@{url}"]:
                        try:
                            litellm.completion(**{**call, "api_base": url})
                        except Exception:
                            if not raised:  # the harness's request got its answer: so must the floor's
                                raise
        except BaseException as error:  # raised below, once every thread is done
            errors.append(error)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]


def floor(runs: list[Run], url: str, layout: tuple[int, int], limits: dict[str, int]) -> float:
    """Wall seconds of a bare litellm.completion loop sending `runs` to `url`: `layout`'s (processes, threads)
    runs at once, each run's requests in sequence, at most `limits[endpoint]` requests of one model at `url`
    at once (an endpoint as `LLMProfile.endpoint` names it)."""
    processes, threads = layout
    context = multiprocessing.get_context("fork")  # the children inherit the recorded runs
    indexes = context.Queue()
    for index in range(len(runs)):
        indexes.put(index)
    for _ in range(processes * threads):
        indexes.put(None)
    slots = {model: context.BoundedSemaphore(limit) for model, limit in limits.items()}
    started = time.perf_counter()
    if processes == 1:
        _send_runs(runs, url, indexes.get, slots, threads)
    else:
        children = [context.Process(target=_send_forked, args=(runs, url, indexes.get, slots, threads))
                    for _ in range(processes)]
        for child in children:
            child.start()
        for child in children:
            child.join()
        if any(child.exitcode for child in children):
            raise RuntimeError(f"a floor process failed: exit codes {[child.exitcode for child in children]}")
    return time.perf_counter() - started


def _send_forked(*args: Any) -> None:
    _fresh_clients()
    _send_runs(*args)


def _client_cpu_seconds() -> float:
    """CPU seconds of this process and of its children reaped so far (worker and floor processes)."""
    import resource

    return sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def request_limits(cells: list[Any]) -> dict[str, int]:
    """Each endpoint's request limit in these cells' profiles, keyed as the harness's slots are
    (harness.models.limits.model_slot of `LLMProfile.endpoint`: one model at one API base)."""
    from harness.models.profiles import build_profiles

    return {p.endpoint: p.max_concurrency for p in build_profiles(cells[0].profiles).values() if p.max_concurrency}


def real(suite: str = "default", runs: int = REAL_RUNS, pairs: int = REAL_PAIRS) -> list[Figure]:
    from harness.executors.local_processes import layout

    with tempfile.TemporaryDirectory() as tmp, serve_mock(0.0) as quick, serve_mock(REAL_LATENCY_S) as url:
        cells = workload(url, tmp, suite, runs)
        recorded = record(workload(quick, tmp, suite, runs))
        shape, limits = layout(cells, 1) or (1, 1), request_limits(cells)
        harness_walls, floor_walls, harness_cpu, floor_cpu, served = [], [], [], [], set()
        for _ in range(pairs):
            with tempfile.TemporaryDirectory() as events:
                timed = workload(url, events, suite, runs)
                cpu = _client_cpu_seconds()
                rows, wall = run_harness(timed)
                harness_walls.append(wall)
                harness_cpu.append(_client_cpu_seconds() - cpu)
            served.add(sum(row["requests"] + row["summarizer_requests"] + row["failed_requests"] for row in rows))
            cpu = _client_cpu_seconds()
            floor_walls.append(floor(recorded, url, shape, limits))
            floor_cpu.append(_client_cpu_seconds() - cpu)
    sent = sum(map(len, recorded))
    if served != {sent}:
        raise RuntimeError(f"the harness runs sent {sorted(served)} requests, the floor {sent}: not the same requests")
    ratios = [h / f for h, f in zip(harness_walls, floor_walls)]
    ideal = sent * REAL_LATENCY_S / REAL_CONCURRENCY
    median_h, median_f = statistics.median(harness_walls), statistics.median(floor_walls)
    return [
        Figure(f"real {len(recorded)} runs / litellm floor", statistics.median(ratios), 1.15,
               note=f"median of {pairs} pairs, {min(ratios):.2f}-{max(ratios):.2f}; harness "
                    f"{median_h:.1f}s / floor {median_f:.1f}s ({sent} requests, {shape[0]}x{shape[1]} runs at once, "
                    f"{REAL_CONCURRENCY} slots, {REAL_LATENCY_S * 1000:g}ms)"),
        Figure("  info: harness wall / ideal", median_h / ideal, 1.3,
               note=f"ideal {ideal:.1f}s = {sent} requests x {REAL_LATENCY_S * 1000:g}ms / {REAL_CONCURRENCY}"),
        Figure("  info: floor wall / ideal", median_f / ideal, 1.3,
               note=f"client CPU per request: harness {statistics.median(harness_cpu) * 1000 / sent:.1f}ms, floor "
                    f"{statistics.median(floor_cpu) * 1000 / sent:.1f}ms, on {os.cpu_count()} CPUs"),
    ]


if __name__ == "__main__":  # the child: PAIRS
    print(json.dumps({"figures": [asdict(figure) for figure in real(pairs=int(sys.argv[1]))]}))
