"""The real figure: 64 runs against `serve-mock` (100 ms latency per request) at --max-concurrency 16,
wall time divided by the ideal, requests x latency / concurrency. Goal <= 1.3. The note says how
long a request held its slot on average (the llm_calls' `latency_s`: the client's litellm work
around the exchange included) and the CPU spent per request on each side.
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.bench import common
from harness.bench.common import BenchOptions, Figure

REAL_RUNS = 64
REAL_LATENCY_S = 0.1
REAL_CONCURRENCY = 16


def figures(options: BenchOptions) -> list[Figure]:
    return real()


def _own_cpu_seconds() -> float:
    """CPU seconds of this process and of its children reaped so far (the run's worker processes)."""
    import resource

    return sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def real(suite: str = "default", runs: int = REAL_RUNS) -> list[Figure]:
    from harness.api import mock_profiles
    from harness.invocation import with_invocation_options
    from harness.llm import DEFAULT_PRICE_MODEL as PRICE_MODEL
    from harness.runner import run_cells
    from strategies import comparison_strategies
    from tasks.suites import load_tasks

    server = subprocess.Popen([sys.executable, "-m", "harness", "serve-mock", "--port", "0",
                               "--latency-ms", str(REAL_LATENCY_S * 1000)], stdout=subprocess.PIPE, text=True)
    try:
        url = re.search(r"(http://\S+/v1)", server.stdout.readline()).group(1)  # type: ignore[union-attr]
        strategies = comparison_strategies()
        tasks = [t.task_id for t in load_tasks(suite)][: max(runs // len(strategies), 1)]
        params = {"api_key": "unused-by-serve-mock"}
        summary = {"model": "openai/mock-summarizer", "api_base": url, "price_model": PRICE_MODEL, "params": params}
        profiles = with_invocation_options(
            mock_profiles("openai/mock-agent", api_base=url, window=200_000, price_model=PRICE_MODEL,
                          extra={"summary": summary}), max_concurrency=REAL_CONCURRENCY)
        profiles["main"]["params"] = params
        with tempfile.TemporaryDirectory() as tmp:
            cells = common.cells(suite, strategies, tmp, tasks=tasks, profiles=profiles)[:runs]
            rows: list[dict[str, Any]] = []
            server_cpu, client_cpu = _cpu_seconds(server.pid), _own_cpu_seconds()
            started = time.perf_counter()
            run_cells(cells, workers=1, on_row=rows.append, progress=False)
            wall = time.perf_counter() - started
            server_cpu, client_cpu = _cpu_seconds(server.pid) - server_cpu, _own_cpu_seconds() - client_cpu
            held = [event["latency_s"] for path in Path(tmp).glob("*.jsonl") for event in common.events(path)
                    if event["type"] == "llm_call" and event.get("ok")]
    finally:
        server.terminate()
        server.wait(timeout=30)
    served = sum(row["requests"] + row["summarizer_requests"] for row in rows)
    ideal = served * REAL_LATENCY_S / REAL_CONCURRENCY
    errors = sum(1 for row in rows if row["termination"] == "error")
    return [Figure(f"real {len(rows)} runs via serve-mock", wall / ideal, 1.3,
                   note=f"wall {wall:.1f}s / ideal {ideal:.1f}s ({served} requests x {REAL_LATENCY_S * 1000:g}ms "
                        f"/ {REAL_CONCURRENCY}); {errors} runs ended in error; a request held its slot "
                        f"{statistics.mean(held) * 1000:.0f}ms on average; CPU {client_cpu * 1000 / served:.1f}ms "
                        f"(client) + {server_cpu * 1000 / served:.1f}ms (serve-mock) per request, "
                        f"{(client_cpu + server_cpu) / wall:.2f} of {os.cpu_count()} CPUs busy")]
