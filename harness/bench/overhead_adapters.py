"""The adapters' overhead figure, for information: per adapter (strategies/adapters/, the real libraries), the
CPU seconds (all threads) of the mock runs of a suite (default `long`) under it, minus the library's own
time in them (`library_cpu_s` of the rows: CPU inside the library's code, its side calls through
ctxbench's LLM layer not included), divided by tokenizing each distinct text those runs counted once
(harness.bench.overhead's repeats, median figure and spread); the library's median time is in the note.

It has no goal. What is left once the library's time is taken out is ctxbench's conversion into the
library's types and the native run path, and the latter is slowed by the library itself: its working set
evicts ctxbench's from the CPU's caches between two requests, the more so the more the library does per
request (beside OpenHands' SDK, ~20 ms of its own a request, ctxbench's parts take 1.5-2x their native
time). No change to ctxbench's code sets that figure. What an adapter's own code must hold is guarded by
the adapters figure (harness.bench.adapters: its conversion costs O(new messages)).

An adapter whose library is not installed in this interpreter is listed as not measured with its
install hint; the OpenHands SDK needs Python >= 3.12, so its adapters are measured by running the
bench with that interpreter (a Python 3.12 venv with the `openhands` extra: `python -m harness.bench --figures
overhead_adapters`). Where `--strategies` names adapters, the figure is theirs alone; else every adapter's.
"""
from __future__ import annotations

import tempfile

from harness.bench.common import OVERHEAD_REPEATS, BenchOptions, Figure
from harness.bench.overhead import overhead


def figures(options: BenchOptions) -> list[Figure]:
    adapters = set(adapter_names())
    named = [name for name in options.strategies if name in adapters]
    return overhead_adapters(options.overhead_suite, options.overhead_repeats, named or None)


def adapter_names() -> list[str]:
    """Every registered adapter (a strategy that runs a real library)."""
    from strategies import REGISTRY, strategy_class

    return sorted(name for name in REGISTRY if strategy_class(name).library is not None)


def installed(name: str) -> bool:
    from strategies import strategy_class

    return strategy_class(name).library.available()


def overhead_adapters(suite: str, repeats: int = OVERHEAD_REPEATS, names: list[str] | None = None) -> list[Figure]:
    """The figure of each adapter named (default: every one) that is installed, without a goal; one not-measured
    line for each other."""
    from strategies import strategy_class

    names = names or adapter_names()
    here = [name for name in names if installed(name)]
    missing = [Figure(f"overhead {name} ({suite})", None, None,
                      note=f"not installed here: {strategy_class(name).library.install_hint()}")
               for name in names if name not in here]
    warm_up(here)
    return (overhead(suite, here, repeats, goal=None) if here else []) + missing


def warm_up(names: list[str]) -> None:
    """One smoke run under each adapter, untimed: its library's imports and first-use setup are not billed."""
    from harness.bench import common
    from harness.run.runner import run_cell

    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            run_cell(common.cells("smoke", [name], tmp)[0])
