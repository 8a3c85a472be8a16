"""The overhead figure: CPU seconds (all threads) of the mock runs of a suite (default `long`), per strategy, divided
by the CPU seconds to tokenize each distinct message content of those runs once with the
same tokenizer (litellm's bundled cl100k encoding, `harness.core.tokens`). The contents
are every distinct text the runs counted: the messages of every request, summarizer requests
included, and the tool schemas; the count memo is emptied before each strategy, so none was
tokenized beforehand. As in a comparison, each task instance is generated once per process
before the runs (which copy it).

A guard, not a target: GOAL (3.5) is the median a native strategy stays under on a quiet 2-core machine,
so `--check` fails when a change makes the run path markedly slower, not when the host is a little slower.
The ratio moves with the CPU (the run's Python work and tiktoken's native loop do not scale alike) and with
the host's noise, so the strategies' runs take turns (`--overhead-repeats`, default common.OVERHEAD_REPEATS),
each repeat followed by the best of 3 tokenizations of its texts, both sides sampled over the same minutes.
The figure is each side's median over the repeats; the note gives the best (each side's best: noise only adds
CPU time) and the spread, the run CPU's and the tokenizing's range and that of the repeats' own ratios, for
information. `overhead_traces` and `overhead_adapters` report the same way (`turns` and `ratio_figure` here).
"""
from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness.bench import common
from harness.bench.common import OVERHEAD_REPEATS, BenchOptions, Figure

GOAL = 3.5  # a native strategy's median run CPU at most 3.5x tokenizing its distinct texts once


def figures(options: BenchOptions) -> list[Figure]:
    names = [name for name in options.strategies if is_native(name)]  # an adapter's figure is overhead_adapters'
    return overhead(options.overhead_suite, names, options.overhead_repeats) if names else []


def is_native(name: str) -> bool:
    """Whether a strategy is ctxbench's own (the guard's concern) rather than an adapter running a real library."""
    from strategies import strategy_class

    return strategy_class(name).library is None


def goal_for(name: str) -> float | None:
    """The guard for a native strategy; none for an adapter, whose figure the library's presence sets."""
    return GOAL if is_native(name) else None


@dataclass
class Samples:
    """One label's repeats: run CPU, the wrapped library's share of it, tokenizing once, texts counted."""

    cpu: list[float] = field(default_factory=list)
    library: list[float] = field(default_factory=list)
    once: list[float] = field(default_factory=list)
    texts: int = 0

    def own(self) -> list[float]:
        """Each repeat's run CPU without the library's own time (ctxbench's part)."""
        return [cpu - library for cpu, library in zip(self.cpu, self.library)]


def turns(labels: list[str], prepare: Callable[[str, int], Callable[[], float]], repeats: int) -> dict[str, Samples]:
    """For each label in turn, `repeats` times: `prepare(label, repeat)` (not timed) gives the work to time,
    which returns the wrapped library's CPU seconds within it (0 for native code); then tokenize the
    texts it counted once."""
    from harness.core import tokens

    samples = {label: Samples() for label in labels}
    for repeat in range(repeats):  # labels take turns, so a slow minute of the host hits one repeat of each
        for label in labels:
            work = prepare(label, repeat)
            tokens.forget_counts()  # every text these runs send is tokenized within them, none before
            started = time.process_time()  # every thread of the process: background work counts too
            library = work()
            samples[label].cpu.append(time.process_time() - started)
            samples[label].library.append(library)
            samples[label].once.append(common.tokenize_seconds(tokens._text_counts))  # both sides sampled alike
            samples[label].texts = len(tokens._text_counts)
    return samples


def _range(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    return f"{min(values) * scale:.{digits}f}-{max(values) * scale:.{digits}f}"


def ratio_figure(name: str, samples: Samples, goal: float | None = GOAL) -> Figure:
    """One label's figure: the median of its samples (ctxbench's own CPU / tokenizing once), judged against `goal`
    (None: for information); the best, the spread and the library's time (left out of the ratio) in the note."""
    own, once = samples.own(), samples.once
    cpu, tokenize = statistics.median(own), statistics.median(once)
    library = (f"; library itself {statistics.median(samples.library):.2f}s (median, left out)"
               if any(samples.library) else "")
    spread = (f"; best {min(own) / min(once):.2f}; {len(own)} repeats: run CPU {_range(own)}s, tokenizing "
              f"{_range(once, 1000, 0)}ms, ratio {_range([c / o for c, o in zip(own, once)])}" if len(own) > 1 else "")
    return Figure(name, cpu / tokenize, goal,
                  note=f"median {'own' if library else 'run'} CPU {cpu:.2f}s / tokenize once {tokenize * 1000:.1f}ms "
                       f"({samples.texts:,} texts){library}{spread}")


def overhead(suite: str, strategies: list[str], repeats: int = OVERHEAD_REPEATS,
             goal: float | None = GOAL) -> list[Figure]:
    from harness.run.runner import run_cell
    from tasks.suites import load_tasks

    common.warm_up()
    for task in load_tasks(suite):
        task.build()  # generated once per process like imports are loaded once; each run copies it
    with tempfile.TemporaryDirectory() as tmp:
        def prepare(strategy: str, repeat: int) -> Callable[[], float]:
            cells = common.cells(suite, [strategy], str(Path(tmp) / f"{strategy}-{repeat}"))
            return lambda: sum(run_cell(cell)["library_cpu_s"] or 0.0 for cell in cells)

        samples = turns(strategies, prepare, repeats)
    return [ratio_figure(f"overhead {strategy} ({suite})", samples[strategy], goal) for strategy in strategies]
