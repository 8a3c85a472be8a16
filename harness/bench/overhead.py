"""The overhead figure: CPU seconds (all threads) of the mock runs of a suite (default `long`), per strategy, divided
by the CPU seconds to tokenize each distinct message content of those runs once with the
same tokenizer (litellm's bundled cl100k encoding, `harness.tokens`). Goal <= 3. The contents
are every distinct text the runs counted: the messages of every request, summarizer requests
included, and the tool schemas; the count memo is emptied before each strategy, so none was
tokenized beforehand. As in a comparison, each task instance is generated once per process
before the runs (which copy it).

Repeats and noise (issue 24 item 1): the strategies' runs take turns (`--overhead-repeats`, default
common.OVERHEAD_REPEATS), each repeat followed by the best of 3 tokenizations of its texts, so both sides are sampled over
the same minutes of the shared host. Each strategy gives two figures, both held to the goal (so
`--check` fails when either misses): `median`, each side's median over the repeats (what a user
typically sees), and `best`, each side's best (noise only adds CPU time, so this is the floor). The
note gives the spread: the run CPU's and the tokenizing's range over the repeats, and the range of
the repeats' own ratios. `overhead_traces` and `overhead_adapters` report the same way
(`turns` and `ratio_figures` here).
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

GOAL = 3.0  # issue 8 item 2, issue 24 item 1: run CPU <= 3x tokenizing its distinct texts once


def figures(options: BenchOptions) -> list[Figure]:
    return overhead(options.overhead_suite, options.strategies, options.overhead_repeats)


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
    from harness import tokens

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


def ratio_figures(name: str, samples: Samples, goal: float = GOAL) -> list[Figure]:
    """The median and the best figure of one label's samples (ctxbench's own CPU / tokenizing once), the
    spread and the library's time (left out of the ratio) in the notes."""
    own, once = samples.own(), samples.once
    library = (f"; library itself {statistics.median(samples.library):.2f}s (median, left out)"
               if any(samples.library) else "")
    spread = (f"; {len(own)} repeats: run CPU {_range(own)}s, tokenizing {_range(once, 1000, 0)}ms, "
              f"ratio {_range([c / o for c, o in zip(own, once)])}" if len(own) > 1 else "")
    figures = []
    for kind, pick in (("median", statistics.median), ("best", min)):
        cpu, tokenize = pick(own), pick(once)
        figures.append(Figure(f"{name} {kind}", cpu / tokenize, goal,
                              note=f"{'own' if library else 'run'} CPU {cpu:.2f}s / tokenize once {tokenize * 1000:.1f}ms "
                                   f"({samples.texts:,} texts){library}{spread if kind == 'median' else ''}"))
    return figures


def overhead(suite: str, strategies: list[str], repeats: int = OVERHEAD_REPEATS) -> list[Figure]:
    from harness.runner import run_cell
    from tasks.suites import load_tasks

    common.warm_up()
    for task in load_tasks(suite):
        task.build()  # generated once per process like imports are loaded once; each run copies it
    with tempfile.TemporaryDirectory() as tmp:
        def prepare(strategy: str, repeat: int) -> Callable[[], float]:
            cells = common.cells(suite, [strategy], str(Path(tmp) / f"{strategy}-{repeat}"))
            return lambda: sum(run_cell(cell)["library_cpu_s"] or 0.0 for cell in cells)

        samples = turns(strategies, prepare, repeats)
    return [figure for strategy in strategies
            for figure in ratio_figures(f"overhead {strategy} ({suite})", samples[strategy])]
