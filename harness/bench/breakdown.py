"""The breakdown, for information: where a suite's mock runs
spend their time, per strategy, as microseconds per main-model request of each part of the run path.

Each part is a set of functions (PARTS), timed while one pass of the suite's runs is under way by a timer around
every call that counts the call's own time apart from the other timed calls inside it (so the parts add up to the
run, with nothing counted twice). What no part names is counted in the part that called it: the runner's loop
holds the hook guards; the strategy's hooks (an adapter's: its library's time with them) are their own part.
Wall time (perf_counter): read it on a quiet host. Each timer adds ~0.5 us per call to the part that made the
call, so a part called ~20 times a request reads ~10 us high; the line's note gives the run's CPU with the timers
on, and the overhead figure the run untimed. The timers are removed when the pass ends, whatever it raised.

A sampling profiler (py-spy) agrees with it on the large parts, but no profile of this kind replaces the
overhead figure: timers and samples alike move the run they measure. The figure's denominator (tokenizing each
distinct text once) is given per request too, so a part can be read against it: tokenizing inside a run costs
~1.05-1.35x of it, so the overhead goal (3.5) leaves ~2.2x of it for everything else.
"""
from __future__ import annotations

import importlib
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.bench import common
from harness.bench.common import BenchOptions, Figure

# Part -> the functions ("module:qualname") whose own time is that part's.
PARTS: dict[str, tuple[str, ...]] = {
    "tokenize": ("harness.core.tokens:tokenize_count",),
    "agent": ("harness.models.mock.agents:respond",),
    "summarizer": ("harness.models.mock.summarizer:summarize",),
    "tool": ("tasks.base:Environment.execute",),
    "log": ("harness.conversation.events:EventLog.append",),
    "metrics": ("harness.results.metrics:RunMetrics.add",),
    "view": ("harness.conversation.view:ViewState.apply", "harness.conversation.view:ViewState.to_messages"),
    "view hash": ("harness.conversation.view:ViewState.hash", "harness.run.runner:request_fields"),
    "client": ("harness.models.llm:LLMClient.complete",),
    "provider": ("harness.models.mock.provider:MockProvider.serve", "harness.models.mock.cache:BlockChain.read",
                 "harness.models.mock.cache:PrefixCache.lookup"),
    "recording": ("harness.conversation.context:RunContext.emit", "harness.conversation.context:RunContext.record_response",
                  "harness.run.runner:add_tool_result"),
    "loop": ("harness.run.runner:_loop",),
    "per run": ("harness.run.runner:_run_cell",),
}
HOOKS = ("before_request", "after_response", "action_payload", "handle_tool_call", "transform_tool_result",
         "on_context_window_error")  # a strategy's own part ("strategy"): these methods, wherever its class finds them


def figures(options: BenchOptions) -> list[Figure]:
    return breakdown(options.overhead_suite, options.strategies)


class Timers:
    """Each timed function's own time (its calls' time minus that of the timed calls inside them), by part."""

    def __init__(self) -> None:
        self.own_ns: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self._inner: list[int] = []  # per timed call under way: the time of the timed calls inside it so far

    def timed(self, part: str, function: Callable[..., Any]) -> Callable[..., Any]:
        own, calls, inner, clock = self.own_ns, self.calls, self._inner, time.perf_counter_ns
        own.setdefault(part, 0)
        calls.setdefault(part, 0)

        def timer(*args: Any, **kwargs: Any) -> Any:
            inner.append(0)
            started = clock()
            try:
                return function(*args, **kwargs)
            finally:
                spent = clock() - started
                own[part] += spent - inner.pop()
                calls[part] += 1
                if inner:
                    inner[-1] += spent

        timer.__wrapped__ = function  # type: ignore[attr-defined]
        return timer


def _resolve(target: str) -> tuple[Any, str]:
    """(the module or class holding the function, its name) of "module:qualname"."""
    module_name, qualname = target.split(":")
    owner: Any = importlib.import_module(module_name)
    *path, name = qualname.split(".")
    for attribute in path:
        owner = getattr(owner, attribute)
    return owner, name


@contextmanager
def installed(timers: Timers, strategy_classes: list[type]) -> Iterator[None]:
    """Every function of PARTS (and the strategies' hooks) timed, where it is defined and wherever a loaded module
    imported it by name; all put back on leaving."""
    undo: list[tuple[Any, str, Any]] = []

    def replace(owner: Any, name: str, part: str) -> None:
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        timer = timers.timed(part, original)
        undo.append((owner, name, original))
        setattr(owner, name, timer)
        if not isinstance(owner, type):  # `from module import function` elsewhere: that binding too
            for module in list(sys.modules.values()):  # a module's own namespace: no lazy __getattr__ woken
                if module is not owner and getattr(module, "__dict__", {}).get(name) is original:
                    undo.append((module, name, original))
                    setattr(module, name, timer)

    try:
        for part, targets in PARTS.items():
            for target in targets:
                replace(*_resolve(target), part)
        hooks = {}  # (the class defining a hook the strategies run, its name): an adapter's are on its base class
        for kind in strategy_classes:
            for name in HOOKS:
                owner = next((base for base in kind.__mro__ if name in base.__dict__), None)
                if owner is not None:
                    hooks[(owner, name)] = None
        for owner, name in hooks:
            replace(owner, name, "strategy")
        yield
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def breakdown(suite: str, strategies: list[str]) -> list[Figure]:
    """One line per strategy: its timed parts' total per main request, each part's own time per request in the note
    (with the denominator's, and the run's CPU with the timers on)."""
    from harness.core import tokens
    from harness.run.runner import run_cell
    from strategies import build_strategy, strategy_class
    from tasks.suites import load_tasks

    common.warm_up()
    for task in load_tasks(suite):
        task.build()  # generated once per process, as the overhead figure does
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for strategy in strategies:
            library = getattr(strategy_class(strategy), "library", None)
            if library is not None and not library.available():  # as overhead_adapters lists it: not measured
                lines.append(Figure(f"  info: breakdown {strategy} ({suite}) us/request", None, None,
                                    note=f"not installed here: {library.install_hint()}"))
                continue
            for cell in common.cells(suite, [strategy], str(Path(tmp) / f"{strategy}-untimed")):
                run_cell(cell)  # this strategy's lazy imports and first-call work, untimed
            cells = common.cells(suite, [strategy], str(Path(tmp) / strategy))
            timers = Timers()
            kinds = list(dict.fromkeys(type(build_strategy(cell.strategy)) for cell in cells))
            tokens.forget_counts()
            with installed(timers, kinds):
                started = time.process_time()
                rows = [run_cell(cell) for cell in cells]
                cpu = time.process_time() - started
            once = common.tokenize_seconds(tokens._text_counts)
            requests = max(sum(row["requests"] or 0 for row in rows), 1)
            parts = sorted(((part, own / 1000 / requests) for part, own in timers.own_ns.items() if own),
                           key=lambda item: -item[1])
            note = (", ".join(f"{part} {us:.0f}" for part, us in parts)
                    + f"; tokenize once {once * 1e6 / requests:.0f}; {requests:,} requests, run CPU with the timers "
                      f"{cpu * 1e6 / requests:.0f} us/request")
            lines.append(Figure(f"  info: breakdown {strategy} ({suite}) us/request",
                                sum(timers.own_ns.values()) / 1000 / requests, None, note=note))
    return lines
