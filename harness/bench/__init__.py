"""`python -m harness.bench`: what the harness costs, as ratios measured in one process run.

With the mock, the harness is the whole cost of a sweep. Each figure is a ratio against what cannot
be avoided, printed next to its goal. One module per figure says what it measures and how:

* overhead (harness.bench.overhead): CPU of a suite's mock runs per strategy / tokenizing their
  distinct texts once, the median of the repeats (the best and the spread in the note). A guard:
  goal <= 3.5 for every native strategy on a quiet machine.
* overhead_traces (harness.bench.overhead_traces): the same for trace replay: CPU of replaying the
  `long` suite's own event logs under each replayable strategy / tokenizing their texts once. A guard: goal <= 3.5.
* overhead_adapters (harness.bench.overhead_adapters): the same for each installed adapter, the library's
  own time (`library_cpu_s`) reported apart and left out of the ratio. For information, no goal (the library
  slows ctxbench's own code beside it). The OpenHands adapters need Python >= 3.12: run the bench with that
  interpreter to measure them.
* breakdown (harness.bench.breakdown): for information, where the overhead figure's runs spend their time:
  each part of the run path's own microseconds per request (the agent, tokenizing, the log, the view, ...).
* flat (harness.bench.flat): harness CPU per request at ~400k tokens / at ~10k tokens. Goal <= 1.5.
* memory (harness.bench.memory): peak RSS growth of a `long` run / the distinct content of its log. Goal <= 3.
* parallel (harness.bench.parallel): the default suite's wall time with 1 worker / with 2. Goal >= 1.7.
* real (harness.bench.real): wall time of runs against `serve-mock` over the real client path / a bare
  `litellm.completion` loop sending the same requests, in the same run. Goal <= 1.15.
* adapters (harness.bench.adapters): an adapter's own CPU per request at 400 messages / at 40. Goal <= 1.5.
* peers (harness.bench.peers): one shared workload on ctxbench, Inspect AI and pydantic-ai, interleaved: the
  fastest peer's CPU per request / ctxbench's (goal >= 20) and ctxbench's late/early growth (goal <= 1.1).
* scale (harness.bench.scale): the default suite's wall time on a local Ray of 2 CPUs / on 2 local worker
  processes (the `ray` extra). Goal <= 1.25.
* layout (harness.bench.layout): the event logs' layout against the one written before it, on the default suite:
  bytes on disk before / now (goal >= 8) and run CPU now / before (goal <= 1.05).
* results (harness.bench.results): bytes per run of a results directory by suite, and `ctxbench report`'s wall
  time and peak RSS at 1,000, 10,000 and 100,000 rows (made from real rows) with their growth exponents. Goals: at
  100,000 rows <= 60 s and <= 1 GiB; exponents <= 1.2.

The first line names the machine (CPU, OS, Python, tokenizer, load when measuring began); `--check` exits 1
when a measured figure misses its goal.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Callable, Iterable

import harness  # noqa: F401  (offline environment first)
from harness.core.errors import CtxbenchError
from harness.bench import common
from harness.bench.common import (OVERHEAD_REPEATS, PARALLEL_REPEATS, PEER_REPEATS, PEER_REQUESTS, REPORT_ROWS,
                                   RESULTS_SUITES, BenchOptions, Figure)

FIGURES = ("overhead", "overhead_traces", "overhead_adapters", "breakdown", "flat", "memory", "parallel", "real",
           "adapters", "peers", "scale", "layout", "results")

__all__ = ["FIGURES", "BenchOptions", "Figure", "main", "measure"]


def measure(names: Iterable[str], *, options: BenchOptions, echo: Callable[[str], None] = print) -> list[Figure]:
    """Measure the figures named, in order, echoing each line as it is measured."""
    figures: list[Figure] = []
    for name in names:
        module = importlib.import_module(f"harness.bench.{name}")
        for figure in module.figures(options):
            echo(figure.line())
            figures.append(figure)
    return figures


def _options(args: argparse.Namespace, names: list[str]) -> BenchOptions:
    """The options of the figures named, every value checked first: an unknown figure, strategy or suite, a
    repeat count under 1, a peers conversation too short for its clearing run to clear."""
    from harness.core.errors import ConfigError
    from strategies import comparison_strategies, strategy_class

    unknown = sorted(set(names) - set(FIGURES))
    if unknown:
        raise ConfigError(f"unknown figure(s) {unknown}; choose from {', '.join(FIGURES)}")
    for option in ("overhead_repeats", "repeats", "peer_repeats"):
        if getattr(args, option) < 1:
            raise ConfigError(f"--{option.replace('_', '-')}: at least 1, got {getattr(args, option)}")
    if "peers" in names:
        from harness.bench.peers import MIN_REQUESTS

        if args.peer_requests < MIN_REQUESTS:
            raise ConfigError(f"--peer-requests: at least {MIN_REQUESTS} (the clearing run's context must pass its "
                              f"trigger), got {args.peer_requests}")
    strategies = comparison_strategies() if args.strategies == "all" else [
        name.strip() for name in args.strategies.split(",") if name.strip()]
    if not strategies:
        raise ConfigError(f"--strategies: none named in {args.strategies!r}")
    for name in strategies:
        strategy_class(name)  # a ConfigError naming an unknown strategy
    report_rows = _counts(args.report_rows, "--report-rows")
    results_suites = tuple(name.strip() for name in args.results_suites.split(",") if name.strip())
    if not results_suites:
        raise ConfigError(f"--results-suites: none named in {args.results_suites!r}")
    if {"overhead", "overhead_adapters", "breakdown"} & set(names):
        from tasks.suites import load_tasks

        load_tasks(args.overhead_suite)  # a TaskFileError naming an unknown suite or a bad task file
    if "results" in names:
        from tasks.suites import load_tasks

        for suite in results_suites:
            load_tasks(suite)
    return BenchOptions(strategies=strategies, overhead_suite=args.overhead_suite,
                        overhead_repeats=args.overhead_repeats, repeats=args.repeats,
                        peer_requests=args.peer_requests, peer_repeats=args.peer_repeats, report_rows=report_rows,
                        results_suites=results_suites)


def _counts(text: str, option: str) -> tuple[int, ...]:
    """Row counts given as `1000,10000`: each a whole number of at least 1, increasing."""
    from harness.core.errors import ConfigError

    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ConfigError(f"{option}: whole numbers separated by commas, got {text!r}") from None
    if not counts or min(counts) < 1 or list(counts) != sorted(set(counts)):
        raise ConfigError(f"{option}: increasing whole numbers of at least 1, got {text!r}")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--figures", default=",".join(FIGURES),
                        help=f"comma-separated figures to measure (default: all of {','.join(FIGURES)})")
    parser.add_argument("--strategies", default="all",
                        help="strategies of the overhead, overhead_traces and breakdown figures (default: all); "
                             "adapters named here are overhead_adapters' (default: every adapter), and replayed "
                             "for information by overhead_traces")
    parser.add_argument("--overhead-suite", default="long",
                        help="suite of the overhead, overhead_adapters and breakdown figures (default long)")
    parser.add_argument("--overhead-repeats", type=int, default=OVERHEAD_REPEATS,
                        help=f"repeats of each strategy's runs in the overhead figures, their median judged "
                             f"(default {OVERHEAD_REPEATS})")
    parser.add_argument("--repeats", type=int, default=PARALLEL_REPEATS,
                        help=f"pairs of runs of the parallel and real figures, median taken (default {PARALLEL_REPEATS})")
    parser.add_argument("--peer-requests", type=int, default=PEER_REQUESTS,
                        help=f"requests of the peers figure's conversation, at least 100 (default {PEER_REQUESTS})")
    parser.add_argument("--peer-repeats", type=int, default=PEER_REPEATS,
                        help=f"interleaved rounds of the peers figure, medians taken (default {PEER_REPEATS})")
    parser.add_argument("--report-rows", default=",".join(map(str, REPORT_ROWS)),
                        help=f"rows of the results figure's reports, increasing (default {','.join(map(str, REPORT_ROWS))})")
    parser.add_argument("--results-suites", default=",".join(RESULTS_SUITES),
                        help=f"suites the results figure measures bytes per run of; the first one's rows make the "
                             f"reports' rows (default {','.join(RESULTS_SUITES)})")
    parser.add_argument("--check", action="store_true", help="exit 1 when a measured figure misses its goal")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.figures.split(",") if n.strip()]
    try:
        options = _options(args, names)
    except CtxbenchError as exc:  # bad input: one line and exit 2, before anything is measured
        parser.error(str(exc))
    print(common.machine())
    try:
        figures = measure(names, options=options)
    except CtxbenchError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a figure that could not be measured (a peer's run that did not do the work, ...)
        print(f"{parser.prog}: error: a figure could not be measured: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    missed = [f.name for f in figures if f.met is False and not f.name.startswith("  info")]
    if missed:
        print(f"missed goals: {', '.join(missed)}")
    return 1 if args.check and missed else 0
