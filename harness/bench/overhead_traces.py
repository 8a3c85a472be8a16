"""The trace replay's overhead figure: per native strategy that can replay recorded traces
(harness.traces.replay; agent_reset cannot), the CPU seconds (all threads) of replaying a set of long
traces under it, divided by tokenizing each distinct text the replays counted once. A guard like the
runs' (harness.bench.overhead, whose repeats, median figure, goal of 3.5 and spread this shares): a replay
is the native run path with a recorded response in place of the simulated agent, so it is held to the
same bound; an adapter named in `--strategies` is replayed too, for information (no goal, as in
harness.bench.overhead_adapters).

The traces are the `long` suite's own event logs, read back as ctxbench traces (harness.traces.ctxbench_log):
its six tasks run once under `none` (the conversation left to grow until the window) and once under
`observation_masking` (every task to its end), recorded before timing: 12 traces, ~1,900 recorded
responses, up to ~200k tokens. They are read once before timing, as a suite's tasks are built once;
the memo of the texts' references (harness.traces.references) is emptied before each strategy's replays, as
the count memo is, so each strategy pays for reading them as a fresh `ctxbench traces` process would.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

from harness.bench import common
from harness.bench.common import OVERHEAD_REPEATS, BenchOptions, Figure
from harness.bench.overhead import goal_for, ratio_figure, turns

TRACE_SUITE = "long"
RECORDED_UNDER = ("none", "observation_masking")  # the strategies whose runs of TRACE_SUITE become the traces


def figures(options: BenchOptions) -> list[Figure]:
    return overhead_traces(options.strategies, options.overhead_repeats)


def replayable(strategies: list[str], profiles: dict[str, dict[str, Any]]) -> list[str]:
    """The strategies a trace replay accepts (one needing the agent's cooperation is refused)."""
    from harness.core.errors import ConfigError
    from harness.traces.replay import check_replayable
    from strategies import StrategySpec

    accepted = []
    for name in strategies:
        try:
            check_replayable(StrategySpec(name, {}), profiles)
        except ConfigError:
            continue
        accepted.append(name)
    return accepted


def record(directory: Path) -> list[Any]:
    """Run TRACE_SUITE under RECORDED_UNDER into `directory` and read its event logs back as traces."""
    from harness.run.runner import run_cell
    from harness.traces import load_traces

    for cell in common.cells(TRACE_SUITE, list(RECORDED_UNDER), str(directory)):
        run_cell(cell)
    return load_traces([directory], "ctxbench")


def overhead_traces(strategies: list[str], repeats: int = OVERHEAD_REPEATS) -> list[Figure]:
    from harness.traces import references
    from harness.api import mock_profiles, strategy_specs
    from harness.traces.replay import REPLAY_MODEL, build_cells, replay_cell

    profiles = mock_profiles(REPLAY_MODEL)
    names = replayable(strategies, profiles)
    common.warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        traces = record(Path(tmp) / "recorded")
        requests = sum(message["role"] == "assistant" for trace in traces for message in trace.messages)
        shortest = min(traces, key=lambda trace: len(trace.messages))  # the replay path's lazy imports, untimed
        replay_cell(build_cells([shortest], strategy_specs(["none"]), profiles, str(Path(tmp) / "warm"))[0])

        def prepare(strategy: str, repeat: int) -> Callable[[], float]:
            cells = build_cells(traces, strategy_specs([strategy]), profiles, str(Path(tmp) / f"{strategy}-{repeat}"))
            references.forget()  # each text's references read within the replay, as by a fresh process
            return lambda: sum(replay_cell(cell)["library_cpu_s"] or 0.0 for cell in cells)

        samples = turns(names, prepare, repeats)
    label = f"{len(traces)} {TRACE_SUITE} traces, {requests:,} responses"
    return [ratio_figure(f"overhead replay {name} ({label})", samples[name], goal_for(name)) for name in names]
