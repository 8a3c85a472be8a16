"""`python -m harness.bench`: what the harness costs, as ratios measured in one process run.

With the mock, the harness is the whole cost of a sweep. Each figure is a ratio against
what cannot be avoided, printed next to its goal:

* overhead: CPU seconds (all threads) of the mock runs of a suite (default `long`), per strategy, divided
  by the CPU seconds to tokenize each distinct message content of those runs once with the
  same tokenizer (litellm's bundled cl100k encoding, `harness.tokens`). Goal <= 3. The contents
  are every distinct text the runs counted: the messages of every request, summarizer requests
  included, and the tool schemas; the count memo is emptied before each strategy, so none was
  tokenized beforehand. As in a comparison, each task instance is generated once per process
  before the runs (which copy it). The strategies' runs take turns (`--overhead-repeats`, default
  3), each repeat followed by the best of 3 tokenizations of its texts, so both sides are sampled
  over the same minutes of the shared host; each side is its best (noise only adds CPU time).
* flat: harness time per request with a ~400k-token context divided by that with a
  ~10k-token context, both of the same number of messages. Harness time per request is the
  CPU time (every thread of the process) of one runner step with the mock: build the view
  and its hash, send it through litellm to the mock provider (window check, prefix cache,
  simulated agent reply, usage), log the llm_call, the reply and a tool result of ~200 tokens
  (the same new content at both sizes); its one-time tokenization is done before the clock
  starts. Median of 20 steps; each size is measured in 3 fresh sessions and its lowest median taken.
  Goal <= 1.5. The same with the message count growing too (10k tokens in 20 messages vs
  400k in 400) is printed for information: a request still checks each message's identity.
* memory: per `long` task (strategy `none`), in a fresh subprocess, the growth of peak RSS
  (VmHWM, reset just before the run) during the run over the RSS before it (and tracemalloc's peak, in another subprocess),
  divided by the UTF-8 size of the distinct message contents of the run's event log. As for the overhead
  figure, the task instance is generated before (once per process); the run works on its copy. Goal <= 3.
* parallel: wall time of the default suite (all strategies) with 1 worker divided by that with 2, each
  measured in a fresh subprocess around the runs alone (imports excluded, no cache warmed by the other);
  the median of `--repeats` (default 3) such pairs. Goal >= 1.7.
* real: 64 runs against `serve-mock` (100 ms latency per request) at --max-concurrency 16,
  wall time divided by the ideal, requests x latency / concurrency. Goal <= 1.3. The note says how
  long a request held its slot on average (the llm_calls' `latency_s`: the client's litellm work
  around the exchange included) and the CPU spent per request on each side.

* adapters: per installed adapter (the real libraries, strategies/adapters/), the CPU of its own hooks per
  request minus the library's own time in them (`library_cpu_s`), on a conversation of 400 messages over one
  of 40 (the flat figure's sessions, ~10k tokens, configs under which the library looks but does not act).
  Goal <= 1.5: converting the view costs O(new messages). The note gives the library's time and the
  native strategy's it mirrors.

`--check` exits 1 when a measured figure misses its goal.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import harness  # noqa: F401  (offline environment first)
from harness.tokens import message_text

FIGURES = ("overhead", "flat", "memory", "parallel", "real", "adapters")
REAL_RUNS = 64
REAL_LATENCY_S = 0.1
REAL_CONCURRENCY = 16
OVERHEAD_REPEATS = 3  # repeats of each strategy's runs and tokenizing; each side's best is taken
PARALLEL_REPEATS = 3  # pairs of 1-worker and 2-worker runs; the median ratio is taken
FLAT_REPEATS = 3  # fresh sessions per context size in the flat figure; the lowest median is taken
STEP_RESULT_TOKENS = 200  # the tool result each measured step adds: the same at every context size


@dataclass
class Figure:
    name: str
    value: float | None  # None: not measured
    goal: float
    at_most: bool = True  # the goal is an upper bound (else a lower bound)
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.value is None:
            return None
        return self.value <= self.goal if self.at_most else self.value >= self.goal

    def line(self) -> str:
        goal = f"{'<=' if self.at_most else '>='} {self.goal:g}"
        value = "not measured" if self.value is None else f"{self.value:.2f}"
        verdict = {None: "-", True: "ok", False: "MISSED"}[self.met]
        return f"{self.name:<34} {value:>12}   goal {goal:<8} {verdict:<7} {self.note}"


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
    """CPU seconds to tokenize each text once as the harness does (`harness.tokens`, the memo left out;
    best of `repeats`). The fastest way it has: long texts are counted from tiktoken's packed buffer."""
    from harness.tokens import tokenize_count

    texts = list(texts)
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        for text in texts:
            tokenize_count(text)
        best = min(best, time.process_time() - started)
    return best


def _events(path: Path) -> list[dict[str, Any]]:
    from harness.events import read_events

    return read_events(path)


# ----- the runs

def _cells(suite: str, strategies: list[str] | str, events_dir: str, *, tasks: list[str] | None = None,
           profiles: dict[str, Any] | None = None) -> list[Any]:
    from harness.api import mock_profiles, strategy_specs
    from harness.runner import Matrix
    from tasks.suites import load_tasks

    rows = [t for t in load_tasks(suite) if tasks is None or t.task_id in tasks]
    matrix = Matrix(tasks=rows, strategies=strategy_specs(strategies), seeds=[0], profiles=profiles or mock_profiles())
    return matrix.build(events_dir)


def _warm_up() -> None:
    """One short mock run, so lazy imports inside litellm are not billed to the first measured run;
    then the heap settled as `run_cells` settles it before any run."""
    from harness.executors import settle_heap
    from harness.runner import run_cell

    with tempfile.TemporaryDirectory() as tmp:
        run_cell(_cells("smoke", ["none"], tmp)[0])
    settle_heap()


def overhead(suite: str, strategies: list[str], repeats: int = OVERHEAD_REPEATS) -> list[Figure]:
    from harness import tokens
    from harness.runner import run_cell
    from tasks.suites import load_tasks

    _warm_up()
    for task in load_tasks(suite):
        task.build()  # generated once per process like imports are loaded once; each run copies it
    cpus: dict[str, list[float]] = {strategy: [] for strategy in strategies}
    onces: dict[str, list[float]] = {strategy: [] for strategy in strategies}
    counted: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):  # strategies take turns, so a slow minute of the host hits one repeat of each
            for strategy in strategies:
                cells = _cells(suite, [strategy], str(Path(tmp) / f"{strategy}-{repeat}"))
                tokens.forget_counts()  # every text these runs send is tokenized within them, none before
                started = time.process_time()  # every thread of the process: background work counts too
                for cell in cells:
                    run_cell(cell)
                cpus[strategy].append(time.process_time() - started)
                onces[strategy].append(tokenize_seconds(tokens._text_counts))  # both sides sampled alike
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


# ----- flat per-request cost

_FILLER = ("amber basalt cedar delta ember fjord garnet harbor iris juniper kestrel lagoon meadow nectar onyx "
           "pewter quartz russet sierra tundra umber velvet willow xenon yarrow zephyr alder birch copper").split()


def _filler_line(index: int, row: int) -> str:
    return " ".join(_FILLER[(index * 7 + row + k) % len(_FILLER)] for k in range(12)) + f" {index}.{row}"


def _file_text(index: int, tokens: int) -> str:
    """A tool result of about `tokens` tokens: one chain record among distinct filler lines."""
    from harness.tokens import count_text

    path = f"archive/f{index:04d}.txt"
    head = [f"== {path} (records) ==", f"record QX-{index:04d} | weight {index % 97} | successor QX-{index + 1:04d}"]
    rows = max(tokens // (count_text(_filler_line(index, 0)) + 1) - 2, 0)
    return "\n".join([*head, *(_filler_line(index, row) for row in range(rows)), f"== end of {path} =="])


class _Session:
    """A run context primed with a chained_lookup conversation of `messages` messages of ~`tokens` tokens."""

    def __init__(self, tmp: str, tokens: int, messages: int, steps: int):
        from harness.api import mock_profiles
        from harness.context import MAIN_PROFILE, RunContext
        from harness.events import EventLog
        from harness.llm import LLMClient
        from harness.profiles import build_profiles
        from harness.tokens import count_text
        from tasks.suites import TaskRow

        environment = TaskRow("bench", "chained_lookup", 1, {"hops": 4, "files": 2, "distractors": 2}).build()
        profiles = build_profiles(mock_profiles(window=10 * tokens + 100_000))
        name = f"bench-{tokens}-{messages}"
        self.ctx = RunContext(EventLog(Path(tmp) / f"{name}.jsonl", in_memory=False), profiles, run_id=name, seed=0)
        self.main = LLMClient(profiles[MAIN_PROFILE], session=name, seed=0)
        self.ctx.tools = [spec.schema() for spec in environment.tool_specs()]
        self.ctx.add_message({"role": "system", "content": environment.system_prompt}, origin="task")
        self.ctx.add_message({"role": "user", "content": "Start at record QX-0000 and follow the successor chain "
                                                         "through 100000 records; submit the sum of their weights."},
                             origin="user")
        exchanges = max((messages - 2) // 2, 1)
        per_result = max((tokens - self.ctx.prompt_tokens_estimate()) // exchanges - 30, 8)
        for index in range(exchanges):
            self._exchange(f"call_{index}", _file_text(index, per_result))
        self.results = [_file_text(exchanges + i, STEP_RESULT_TOKENS) for i in range(steps)]
        for text in self.results:
            count_text(text)  # tokenized once, before any clock starts

    def _exchange(self, call_id: str, content: str) -> None:
        path = content.split(" ", 2)[1]
        self.ctx.add_message({"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}]}, origin="agent")
        self._result(call_id, content)

    def _result(self, call_id: str, content: str) -> None:
        self.ctx.add_message({"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": content},
                             origin="tool")

    def step(self, index: int) -> float:
        """One runner step; returns its CPU seconds."""
        ctx = self.ctx
        started = time.process_time()
        messages = ctx.view.to_messages()
        request = {"profile": "main", "model": self.main.profile.model, "view_hash": ctx.view.hash(ctx.tools_hash),
                   "view_len": len(messages), "context_tokens": ctx.prompt_tokens_estimate()}
        result = self.main.complete(messages, ctx.tools)
        ctx.record_response(request, result)
        call_id = (result.message.get("tool_calls") or [{"id": f"step_{index}"}])[0]["id"]
        self._result(call_id, self.results[index])
        return time.process_time() - started

    def close(self) -> None:
        self.ctx.log.close()
        self.main.end_session()


def per_request_seconds(tokens: int, messages: int, steps: int = 20, warm: int = 5) -> tuple[float, int]:
    """Median harness CPU seconds per request at this context size, and the context's tokens mid-way."""
    with tempfile.TemporaryDirectory() as tmp:
        session = _Session(tmp, tokens, messages, steps + warm)
        times = []
        for index in range(steps + warm):
            if index == warm + steps // 2:
                size = session.ctx.prompt_tokens_estimate()
            times.append(session.step(index))
        session.close()
    return statistics.median(times[warm:]), size


def _best_per_request_seconds(tokens: int, messages: int) -> tuple[float, int]:
    """The lowest of FLAT_REPEATS medians (fresh sessions): a noisy burst of the host only adds time."""
    return min(per_request_seconds(tokens, messages) for _ in range(FLAT_REPEATS))


def flat() -> list[Figure]:
    _warm_up()
    small, small_size = _best_per_request_seconds(10_000, 200)
    big, big_size = _best_per_request_seconds(400_000, 200)
    few, few_size = _best_per_request_seconds(10_000, 20)
    many, many_size = _best_per_request_seconds(400_000, 400)
    return [
        Figure("flat per-request (200 messages)", big / small, 1.5,
               note=f"{big * 1000:.2f}ms at {big_size:,} tokens / {small * 1000:.2f}ms at {small_size:,} tokens"),
        Figure("  info: 20 -> 400 messages", many / few, 1.5,
               note=f"{many * 1000:.2f}ms at {many_size:,} tokens / {few * 1000:.2f}ms at {few_size:,} tokens "
                    "(identity checks over the message list)"),
    ]


# ----- adapters: their own conversion cost per request

# The adapters that convert the view on every request, each with a config under which the library
# looks but does not act at these sizes (so the figure times conversion, not compaction), and the
# native strategy it mirrors (its CPU per request is printed beside).
ADAPTER_BENCH: dict[str, tuple[dict[str, Any], str]] = {
    "pai.tiered_compaction": ({}, "compaction_ladder"),
    "inspect.compaction_edit": ({}, "clear_tool_uses"),
    "inspect.compaction_trim": ({}, "compaction_ladder"),
    "inspect.compaction_summary": ({}, "llm_summarizing"),
    "openhands.llm_summarizing": ({"max_size": 100_000}, "llm_summarizing"),
}


def _strategy_per_request(name: str, config: dict[str, Any], messages: int, steps: int = 20,
                          warm: int = 5) -> tuple[float, float]:
    """Median CPU seconds per request of a strategy's own hooks (before_request and after_response)
    on a conversation of `messages` messages, and of the library's share of them (library_cpu_s)."""
    from strategies import StrategySpec, build_strategy

    with tempfile.TemporaryDirectory() as tmp:
        session = _Session(tmp, 10_000, messages, steps + warm)
        ctx = session.ctx
        strategy = build_strategy(StrategySpec(name, config))
        strategy.on_run_start(ctx)
        own, library = [], []
        for index in range(steps + warm):
            started, inside = time.thread_time(), ctx.library_cpu_s
            strategy.before_request(ctx)
            hooks = time.thread_time() - started
            session.step(index)
            started = time.thread_time()
            strategy.after_response(ctx, _last_result(ctx))
            hooks += time.thread_time() - started
            spent = ctx.library_cpu_s - inside
            own.append(hooks - spent)
            library.append(spent)
        session.close()
    return statistics.median(own[warm:]), statistics.median(library[warm:])


def _last_result(ctx: Any) -> Any:
    """The LLMResult of the request just made, as after_response receives it."""
    from harness.llm import LLMResult

    return LLMResult(ctx.view.message(ctx.last_message_id("agent")), ctx.last_usage, None, None, 0.0)


def adapters() -> list[Figure]:
    """Per installed adapter: its own CPU per request at 400 messages over that at 40 (goal <= 1.5: the
    conversion is O(new messages)); the note gives its own and the library's time per request, and the
    native strategy's it mirrors, at 400 messages."""
    from strategies import strategy_class

    _warm_up()
    figures = []
    for name, (config, native) in ADAPTER_BENCH.items():
        library = strategy_class(name).library
        if library is None or library.version() is None or sys.version_info < library.min_python:
            continue
        few = min(_strategy_per_request(name, config, 40)[0] for _ in range(FLAT_REPEATS))
        many, inside = min(_strategy_per_request(name, config, 400) for _ in range(FLAT_REPEATS))
        mirror = min(_strategy_per_request(native, {}, 400)[0] for _ in range(FLAT_REPEATS))
        figures.append(Figure(f"adapter {name} own cost 40 -> 400 messages", many / max(few, 1e-9), 1.5,
                              note=f"own {many * 1000:.3f}ms at 400 messages, {few * 1000:.3f}ms at 40; "
                                   f"{library.label} itself {inside * 1000:.3f}ms; native {native} "
                                   f"{mirror * 1000:.3f}ms"))
    return figures


# ----- memory

def _status_bytes(field: str) -> int:
    """A size from /proc/self/status (VmRSS: resident now; VmHWM: its peak since the last reset)."""
    with open("/proc/self/status") as handle:
        line = next(line for line in handle if line.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def _reset_peak_rss() -> None:
    """Start the peak-RSS mark afresh (Linux: writing 5 to clear_refs resets VmHWM)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def memory_child(suite: str, task_id: str, strategy: str, trace: bool) -> dict[str, Any]:
    """Run one cell in this (fresh) process; its peak memory over what was there before it."""
    from harness.runner import run_cell

    _warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        cell = _cells(suite, [strategy], tmp, tasks=[task_id])[0]
        cell.task.build(cell.seed)  # generated once per process, as for the overhead figure; the run works on a copy
        gc.collect()
        _reset_peak_rss()
        before = _status_bytes("VmRSS")
        if trace:
            tracemalloc.start()
        run_cell(cell)
        peak_traced = tracemalloc.get_traced_memory()[1] if trace else None
        if trace:
            tracemalloc.stop()
        peak = _status_bytes("VmHWM")
        texts = distinct_contents(_events(Path(tmp) / f"{cell.run_id}.jsonl"))
    return {"rss_growth": max(peak - before, 0), "traced_peak": peak_traced,
            "content": sum(len(t.encode("utf-8")) for t in texts)}


def _child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "harness.bench", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory(suite: str = "long", strategy: str = "none") -> list[Figure]:
    from tasks.suites import load_tasks

    figures = []
    for task in load_tasks(suite):
        rss = _child(["--memory-child", suite, task.task_id, strategy])
        traced = _child(["--memory-child", suite, task.task_id, strategy, "--trace"])
        figures.append(Figure(f"memory {task.task_id}", rss["rss_growth"] / rss["content"], 3.0,
                              note=f"peak RSS +{rss['rss_growth'] / 1e6:.1f}MB (tracemalloc peak "
                                   f"{traced['traced_peak'] / 1e6:.1f}MB = {traced['traced_peak'] / rss['content']:.2f}x) "
                                   f"/ distinct content {rss['content'] / 1e6:.2f}MB"))
    return figures


# ----- parallel scaling

def parallel_child(suite: str, workers: int) -> dict[str, Any]:
    """Wall seconds of run_cells over the suite in this (fresh) process: no cache warmed by another run.

    The cells are validated first, as `ctxbench run` does before any run (which also generates
    each task instance once), and the heap is settled (`run_cells` does it once per process).
    """
    from harness.executors import settle_heap
    from harness.runner import run_cells, validate_cells

    with tempfile.TemporaryDirectory() as tmp:
        cells = _cells(suite, "all", tmp)
        validate_cells(cells)
        settle_heap()
        started = time.perf_counter()
        run_cells(cells, workers=workers, on_row=lambda row: None, progress=False)
        return {"wall_s": time.perf_counter() - started}


def parallel(suite: str = "default", repeats: int = PARALLEL_REPEATS) -> list[Figure]:
    ratios, walls = [], []
    for _ in range(repeats):
        one = _child(["--parallel-child", suite, "1"])["wall_s"]
        two = _child(["--parallel-child", suite, "2"])["wall_s"]
        ratios.append(one / two)
        walls.append(f"{one:.1f}s/{two:.1f}s")
    spread = f"; spread {min(ratios):.2f}-{max(ratios):.2f}" if repeats > 1 else ""
    return [Figure(f"parallel {suite} workers 1 / 2", statistics.median(ratios), 1.7, at_most=False,
                   note=f"wall {', '.join(walls)}{spread}")]


# ----- the real client path against serve-mock

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
            cells = _cells(suite, strategies, tmp, tasks=tasks, profiles=profiles)[:runs]
            rows: list[dict[str, Any]] = []
            server_cpu, client_cpu = _cpu_seconds(server.pid), _own_cpu_seconds()
            started = time.perf_counter()
            run_cells(cells, workers=1, on_row=rows.append, progress=False)
            wall = time.perf_counter() - started
            server_cpu, client_cpu = _cpu_seconds(server.pid) - server_cpu, _own_cpu_seconds() - client_cpu
            held = [event["latency_s"] for path in Path(tmp).glob("*.jsonl") for event in _events(path)
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


# ----- entry point

def measure(names: Iterable[str], *, strategies: list[str], overhead_suite: str, repeats: int,
            overhead_repeats: int = OVERHEAD_REPEATS, echo: Callable[[str], None] = print) -> list[Figure]:
    runners: dict[str, Callable[[], list[Figure]]] = {
        "overhead": lambda: overhead(overhead_suite, strategies, overhead_repeats),
        "flat": flat,
        "memory": memory,
        "parallel": lambda: parallel(repeats=repeats),
        "real": real,
        "adapters": adapters,
    }
    figures: list[Figure] = []
    for name in names:
        for figure in runners[name]():
            echo(figure.line())
            figures.append(figure)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--figures", default=",".join(FIGURES),
                        help=f"comma-separated figures to measure (default: all of {','.join(FIGURES)})")
    parser.add_argument("--strategies", default="all", help="strategies of the overhead figure (default: all)")
    parser.add_argument("--overhead-suite", default="long", help="suite of the overhead figure (default long)")
    parser.add_argument("--overhead-repeats", type=int, default=OVERHEAD_REPEATS,
                        help=f"repeats of each strategy's runs in the overhead figure, best taken (default {OVERHEAD_REPEATS})")
    parser.add_argument("--repeats", type=int, default=PARALLEL_REPEATS,
                        help=f"pairs of runs of the parallel figure, median taken (default {PARALLEL_REPEATS})")
    parser.add_argument("--check", action="store_true", help="exit 1 when a measured figure misses its goal")
    parser.add_argument("--memory-child", nargs=3, metavar=("SUITE", "TASK", "STRATEGY"), help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--parallel-child", nargs=2, metavar=("SUITE", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_child(*args.memory_child, trace=args.trace)))
        return 0
    if args.parallel_child:
        print(json.dumps(parallel_child(args.parallel_child[0], int(args.parallel_child[1]))))
        return 0
    from strategies import comparison_strategies

    names = [n.strip() for n in args.figures.split(",") if n.strip()]
    unknown = sorted(set(names) - set(FIGURES))
    if unknown:
        parser.error(f"unknown figure(s) {unknown}; choose from {', '.join(FIGURES)}")
    strategies = comparison_strategies() if args.strategies == "all" else args.strategies.split(",")
    figures = measure(names, strategies=strategies, overhead_suite=args.overhead_suite, repeats=args.repeats,
                      overhead_repeats=args.overhead_repeats)
    missed = [f.name for f in figures if f.met is False and not f.name.startswith("  info")]
    if missed:
        print(f"missed goals: {', '.join(missed)}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
