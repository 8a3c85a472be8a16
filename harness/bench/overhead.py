"""The overhead figure: CPU seconds (all threads) of the mock runs of a suite (default `long`), per strategy, divided
by the CPU seconds to tokenize each distinct message content of those runs once with the
same tokenizer (litellm's bundled cl100k encoding, `harness.tokens`). Goal <= 3. The contents
are every distinct text the runs counted: the messages of every request, summarizer requests
included, and the tool schemas; the count memo is emptied before each strategy, so none was
tokenized beforehand. As in a comparison, each task instance is generated once per process
before the runs (which copy it). The strategies' runs take turns (`--overhead-repeats`, default
3), each repeat followed by the best of 3 tokenizations of its texts, so both sides are sampled
over the same minutes of the shared host; each side is its best (noise only adds CPU time).
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from harness.bench import common
from harness.bench.common import OVERHEAD_REPEATS, BenchOptions, Figure


def figures(options: BenchOptions) -> list[Figure]:
    return overhead(options.overhead_suite, options.strategies, options.overhead_repeats)


def overhead(suite: str, strategies: list[str], repeats: int = OVERHEAD_REPEATS) -> list[Figure]:
    from harness import tokens
    from harness.runner import run_cell
    from tasks.suites import load_tasks

    common.warm_up()
    for task in load_tasks(suite):
        task.build()  # generated once per process like imports are loaded once; each run copies it
    cpus: dict[str, list[float]] = {strategy: [] for strategy in strategies}
    onces: dict[str, list[float]] = {strategy: [] for strategy in strategies}
    counted: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):  # strategies take turns, so a slow minute of the host hits one repeat of each
            for strategy in strategies:
                cells = common.cells(suite, [strategy], str(Path(tmp) / f"{strategy}-{repeat}"))
                tokens.forget_counts()  # every text these runs send is tokenized within them, none before
                started = time.process_time()  # every thread of the process: background work counts too
                for cell in cells:
                    run_cell(cell)
                cpus[strategy].append(time.process_time() - started)
                onces[strategy].append(common.tokenize_seconds(tokens._text_counts))  # both sides sampled alike
                counted[strategy] = len(tokens._text_counts)
    figures = []
    for strategy in strategies:
        cpu, once = min(cpus[strategy]), min(onces[strategy])
        spread = (f"; best of {repeats} repeats, run CPU {cpu:.2f}-{max(cpus[strategy]):.2f}s, tokenizing "
                  f"{once * 1000:.0f}-{max(onces[strategy]) * 1000:.0f}ms" if repeats > 1 else "")
        figures.append(Figure(f"overhead {strategy} ({suite})", cpu / once, 3.0,
                              note=f"run CPU {cpu:.2f}s / tokenize once {once * 1000:.1f}ms "
                                   f"({counted[strategy]:,} texts){spread}"))
    return figures
