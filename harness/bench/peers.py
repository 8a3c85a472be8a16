"""The peers figure: one shared workload run on ctxbench and, where installed, on Inspect AI
and pydantic-ai, interleaved, and each harness's CPU per request.

The workload: one conversation of N requests (`--peer-requests`, default 200). The response to requests
1..N-1 is a call of a one-tool environment (`read`, argument `part`), whose result is a fixed text of
~RESULT_TOKENS tokens (distinct per part, generated once before any clock starts, the same for every
harness; ctxbench's token memo is emptied before each of its runs, so its tokenizing each result once is in
its time), so the context grows to ~150k tokens; the response to request N ends the run (a `submit` call
in ctxbench and Inspect, a final text in pydantic-ai). Every harness gets the same model: a script that
emits the next call by its count of requests and checks that the last tool result it was shown is the
expected text (so a broken driver cannot look fast).

* ctxbench: `harness.run.runner.run_cell`, the real loop (strategy hooks, view, LLM layer, event log on disk,
  metrics, row) with `ScriptedClient`: the mock provider path (`via: direct`, mock/replay told its reply),
  so the window check, prefix-cache accounting and pricing of every request stay in ctxbench's time.
* Inspect AI: `eval()` of one sample, `react()` with the `read` tool, a `@modelapi` ModelAPI emitting the
  next call; logs written to a temp dir (`.eval` format, as `inspect eval` does by default), display none.
* pydantic-ai: an `Agent` with a `FunctionModel` and the `read` tool, `run_sync` with a request limit of N+1.
* With clearing: ctxbench `clear_tool_uses` (trigger CLEAR_TRIGGER tokens) against Inspect's
  `CompactionEdit(threshold=CLEAR_TRIGGER)` through `react(compaction=...)`.

CPU per request: process CPU (`time.process_time()`, all threads) between the first and the last model
call over N-1; the run's whole CPU over N (set-up, log and metrics included) is kept too. Late/early: the
median CPU per request of the last 20% of requests over the first 20%'s (the ratio of means beside it). Interleaved (ctxbench, Inspect,
pydantic-ai, ctxbench, ...) for `--peer-repeats` rounds (default 3): medians and spread (min-max).
Goals: the fastest peer's CPU per request / ctxbench's >= 20; ctxbench's late/early <= 1.1.
"""
from __future__ import annotations

import functools
import json
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from harness.api import mock_profiles
from harness.bench.common import PEER_REPEATS, PEER_REQUESTS, BenchOptions, Figure
from harness.models.llm import LLMClient, LLMResult
from harness.run.runner import Cell, run_cell
from harness.core.tokens import forget_counts
from strategies import StrategySpec
from tasks.base import Environment, Score, ToolCall, ToolResult, ToolSpec
from tasks.suites import TaskRow

RESULT_TOKENS = 750  # each tool result: 200 of them make a ~150k-token context
CLEAR_TRIGGER = 60_000  # tokens: clear_tool_uses' trigger and CompactionEdit's threshold
MIN_REQUESTS = CLEAR_TRIGGER // RESULT_TOKENS + 20  # the clearing run's context passes its trigger, then clears
EDGE = 0.2  # late/early: the last and first 20% of requests
RATIO_GOAL = 20.0
FLAT_GOAL = 1.1
TASK = "Read parts 0, 1, 2, ... with the read tool, one per turn, until told to submit; then submit 'done'."
INSTALL = {"inspect": "pip install 'ctxbench[inspect]'", "pydantic-ai": "pip install 'ctxbench[pydantic-ai]'"}


def figures(options: BenchOptions) -> list[Figure]:
    return peers(options.peer_requests, options.peer_repeats)


@dataclass
class Workload:
    """The shared conversation: its length and the tool result of each part, generated once."""

    requests: int
    texts: list[str]

    @classmethod
    def make(cls, requests: int) -> "Workload":
        from harness.bench.session import file_text

        return cls(requests, [file_text(index, RESULT_TOKENS) for index in range(max(requests - 1, 0))])


@dataclass
class Script:
    """The model every harness gets: the next call by its count of requests; the CPU clock at each request;
    whether each request showed the previous result as sent (seen) or changed (cleared)."""

    workload: Workload
    stamps: list[float] = field(default_factory=list)
    seen: int = 0
    cleared_seen: int = 0  # requests whose last tool result was not the text sent (a strategy changed it)
    final_messages: int = 0
    final_chars: int = 0  # characters of tool results in the last request: the final context's size
    final_cleared: int = 0  # tool results of the last request that are not their text as sent

    def next_part(self, last_result: str | None) -> int | None:
        """Record one request; the part to read next, None to end the run."""
        self.stamps.append(time.process_time())
        index = len(self.stamps) - 1
        if index > 0:
            if last_result == self.workload.texts[index - 1]:
                self.seen += 1
            else:
                self.cleared_seen += 1
        return index if index < self.workload.requests - 1 else None

    def final(self, results: list[str]) -> None:
        """The last request's tool results (read once, at the end): the final context's size."""
        self.final_messages = len(results)
        self.final_chars = sum(len(text) for text in results)
        self.final_cleared = sum(text != sent for text, sent in zip(results, self.workload.texts))

    def measured(self, cpu_s: float) -> dict[str, Any]:
        """The run's figures: requests made, CPU per request in the loop and overall, late/early growth: the median
        CPU per request of the last EDGE of requests over the first's (a burst of the host, a GC pass, shifts a
        mean of 40 requests of 0.1 ms by 10-20%; the ratio of means is kept as growth_mean)."""
        deltas = [b - a for a, b in zip(self.stamps, self.stamps[1:])]
        edge = max(int(len(deltas) * EDGE), 1)
        early, late = deltas[:edge], deltas[-edge:]
        return {"requests": len(self.stamps), "per_request_s": (self.stamps[-1] - self.stamps[0]) / len(deltas),
                "whole_per_request_s": cpu_s / len(self.stamps),
                "growth": statistics.median(late) / max(statistics.median(early), 1e-9),
                "growth_mean": statistics.fmean(late) / max(statistics.fmean(early), 1e-9),
                "seen": self.seen, "cleared_seen": self.cleared_seen, "final_messages": self.final_messages,
                "final_chars": self.final_chars, "final_cleared": self.final_cleared}


# ----- ctxbench: the real runner loop with a scripted model through the mock provider


class PeerEnvironment(Environment):
    """The one-tool environment: `read(part)` returns the workload's text of that part; `submit` ends the run."""

    system_prompt = "You read parts with the read tool."

    def __init__(self, texts: tuple[str, ...]):
        super().__init__()
        self.texts = texts

    def initial_user_messages(self) -> list[str]:
        return [TASK]

    def tool_specs(self) -> list[ToolSpec]:
        return [ToolSpec("read", "Read one part.", {"type": "object", "properties": {"part": {"type": "integer"}},
                                                    "required": ["part"]}),
                ToolSpec("submit", "Submit the answer.", {"type": "object", "properties": {"answer": {"type": "string"}},
                                                          "required": ["answer"]}, changes_state=True)]

    def run_tool(self, call: ToolCall) -> ToolResult:
        if call.name == "submit":
            self.submitted, self.answer = True, call.args["answer"]
            return ToolResult("submitted")
        return ToolResult(self.texts[call.args["part"]])

    def score(self) -> Score:
        return Score(self.submitted, float(self.submitted))


@dataclass(frozen=True)
class PeerTask(TaskRow):
    """A task row whose environment is the peers workload's (not a task family of the catalog)."""

    texts: tuple[str, ...] = ()

    def build(self, run_seed: int = 0) -> PeerEnvironment:
        return PeerEnvironment(self.texts)

    def as_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "family": self.family, "parts": len(self.texts)}  # the texts are not logged


class ScriptedClient(LLMClient):
    """The main model's client: every request is answered with the script's next call (the mock provider told
    its reply, as a trace replay's is: window, prefix cache, usage and price simulated all the same)."""

    script: Script

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 clock_s: float | None = None, reply: dict[str, Any] | None = None,
                 options: dict[str, Any] | None = None) -> LLMResult:
        last = messages[-1]
        part = self.script.next_part(last.get("content") if last.get("role") == "tool" else None)
        if part is None:
            self.script.final([m.get("content") or "" for m in messages if m.get("role") == "tool"])
            name, arguments = "submit", {"answer": "done"}
        else:
            name, arguments = "read", {"part": part}
        message = {"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call_{len(self.script.stamps)}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}]}
        return super().complete(messages, tools, clock_s, reply=message, options=options)


def ctxbench_run(workload: Workload, clear_at: int | None = None) -> dict[str, Any]:
    """One run of the workload through `run_cell`; with `clear_at`, `clear_tool_uses` triggered at that many tokens."""
    script = Script(workload)
    strategy = StrategySpec("clear_tool_uses", {"trigger": clear_at}) if clear_at else StrategySpec("none", {})
    window = 10 * RESULT_TOKENS * workload.requests + 100_000

    def client(*args: Any, **kwargs: Any) -> ScriptedClient:
        made = ScriptedClient(*args, **kwargs)
        made.script = script
        return made

    with tempfile.TemporaryDirectory() as tmp:
        cell = Cell(task=PeerTask("peers", "peers", 0, max_requests=workload.requests + 1, texts=tuple(workload.texts)),
                    strategy=strategy, seed=0, profiles=mock_profiles("mock/replay", window=window), events_dir=tmp)
        forget_counts()  # each result is tokenized in the run, once, as in a real run: ctxbench's time
        started = time.process_time()
        row = run_cell(cell, client)
        cpu = time.process_time() - started
    if row["termination"] != "submitted":
        raise RuntimeError(f"ctxbench peer run ended {row['termination']}: {row['error']}")
    return {**script.measured(cpu), "row": row}


# ----- Inspect AI: eval() of one sample, react(), a ModelAPI emitting the next call

_INSPECT_SCRIPT: list[Script] = []  # the script of the Inspect run under way (the ModelAPI is built by name)


def inspect_run(workload: Workload, clear_at: int | None = None) -> dict[str, Any]:
    """One `eval()` of the workload as one sample with `react()`; with `clear_at`, `CompactionEdit` at that threshold."""
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.agent import react
    from inspect_ai.dataset import Sample
    from inspect_ai.model import CompactionEdit

    _register_inspect_model()
    script = Script(workload)
    _INSPECT_SCRIPT[:] = [script]
    texts = workload.texts
    task = Task(dataset=[Sample(input=TASK, target="done")],
                solver=react(tools=[_inspect_read_tool(texts)],
                             compaction=CompactionEdit(threshold=clear_at) if clear_at else None))
    with tempfile.TemporaryDirectory() as tmp:
        started = time.process_time()
        logs = inspect_eval(task, model="ctxbenchpeer/script", log_dir=tmp, display="none", score=False,
                            message_limit=4 * workload.requests + 10)
        cpu = time.process_time() - started
    if logs[0].status != "success":
        raise RuntimeError(f"Inspect peer run ended {logs[0].status}: {logs[0].error}")
    return script.measured(cpu)


def _inspect_read_tool(texts: list[str]) -> Any:
    from inspect_ai.tool import tool

    @tool
    def read() -> Any:
        async def execute(part: int) -> str:
            """Read one part.

            Args:
                part: the part's number.
            """
            return texts[part]

        return execute

    return read()


@functools.cache
def _register_inspect_model() -> None:
    """Register the `ctxbenchpeer` model API with Inspect (once): the script's next call for each generate."""
    from inspect_ai.model import ChatMessageTool, ModelAPI, ModelOutput, modelapi

    @modelapi(name="ctxbenchpeer")
    class ScriptModel(ModelAPI):
        async def generate(self, input: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> ModelOutput:
            script = _INSPECT_SCRIPT[0]
            last = input[-1]
            part = script.next_part(last.text if isinstance(last, ChatMessageTool) else None)
            call_id = f"call_{len(script.stamps)}"
            if part is None:
                script.final([m.text for m in input if isinstance(m, ChatMessageTool)])
                return ModelOutput.for_tool_call("script", "submit", {"answer": "done"}, tool_call_id=call_id)
            return ModelOutput.for_tool_call("script", "read", {"part": part}, tool_call_id=call_id)


# ----- pydantic-ai: an Agent with a FunctionModel and the read tool, run_sync


def pydantic_ai_run(workload: Workload, clear_at: int | None = None) -> dict[str, Any]:
    """One `Agent.run_sync` of the workload: a `FunctionModel` emitting the next call (a final text to end);
    no clearing is measured here (`clear_at` must be None)."""
    assert clear_at is None, "pydantic-ai has no tool-result clearing of its own in this figure"
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import UsageLimits

    script = Script(workload)
    texts = workload.texts

    def model(messages: list[Any], info: Any) -> ModelResponse:
        last = messages[-1].parts[-1] if isinstance(messages[-1], ModelRequest) else None
        part = script.next_part(last.content if isinstance(last, ToolReturnPart) else None)
        if part is None:
            script.final([p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts
                          if isinstance(p, ToolReturnPart)])
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("read", {"part": part}, tool_call_id=f"call_{len(script.stamps)}")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def read(part: int) -> str:
        """Read one part."""
        return texts[part]

    started = time.process_time()
    result = agent.run_sync(TASK, usage_limits=UsageLimits(request_limit=workload.requests + 1))
    cpu = time.process_time() - started
    if result.output != "done":
        raise RuntimeError(f"pydantic-ai peer run ended with {result.output!r}")
    return script.measured(cpu)


# ----- the figure: interleaved rounds, medians and spread

# harness -> (the extra that installs it, the module it needs, its run); ctxbench first, the peers after
DRIVERS: dict[str, tuple[str | None, str | None, Any]] = {
    "ctxbench": (None, None, ctxbench_run),
    "inspect": ("inspect", "inspect_ai", inspect_run),
    "pydantic-ai": ("pydantic-ai", "pydantic_ai", pydantic_ai_run),
}
CLEARING = ("ctxbench", "inspect")  # the harnesses with tool-result clearing measured: clear_tool_uses, CompactionEdit


def installed(name: str) -> bool:
    import importlib.util

    module = DRIVERS[name][1]
    return module is None or importlib.util.find_spec(module) is not None


def check_run(name: str, measured: dict[str, Any], workload: Workload, clearing: bool) -> None:
    """A run that did not do the work must not look fast: N requests, every result seen as sent (or, with
    clearing, some cleared), and the final context holding every result."""
    parts = workload.requests - 1
    problems = []
    if measured["requests"] != workload.requests:
        problems.append(f"{measured['requests']} requests, not {workload.requests}")
    if measured["seen"] + measured["cleared_seen"] != parts or measured["final_messages"] != parts:
        problems.append(f"{measured['seen']} results seen and {measured['final_messages']} in the final context, "
                        f"not {parts}")
    if clearing and not measured["final_cleared"]:
        problems.append("no tool result was cleared")
    if not clearing and (measured["final_cleared"] or measured["seen"] != parts):
        problems.append(f"{measured['final_cleared']} results changed without clearing")
    if problems:
        raise RuntimeError(f"peer run {name} (clearing {'on' if clearing else 'off'}): {'; '.join(problems)}")


def measure(requests: int, repeats: int, clearing: bool) -> dict[str, list[dict[str, Any]]]:
    """Each installed harness's runs of the workload, interleaved for `repeats` rounds after a warm-up run."""
    workload = Workload.make(requests)
    names = [n for n in DRIVERS if installed(n) and (not clearing or n in CLEARING)]
    warm = Workload.make(6)
    for name in names:
        DRIVERS[name][2](warm, CLEAR_TRIGGER if clearing else None)  # imports and first-call set-up are not billed to a measured run
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            measured = DRIVERS[name][2](workload, CLEAR_TRIGGER if clearing else None)
            check_run(name, measured, workload, clearing)
            runs[name].append(measured)
    return runs


def _spread(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    """median [min-max], scaled."""
    return (f"{statistics.median(values) * scale:.{digits}f} "
            f"[{min(values) * scale:.{digits}f}-{max(values) * scale:.{digits}f}]")


def default_cells() -> tuple[float, float, float]:
    """The default suite's cells with the mock: the mean requests of a cell under `none`, and the mean CPU seconds
    per cell (the mock agent's replies included) two ways: a cell alone (`none`, its task generated for it, every
    memo empty) and a cell of the default comparison run in one process as a worker runs its share (every
    comparison strategy, each task generated once and copied, the token counts and the agent's readings of
    texts it has seen before shared across the cells of one task)."""
    from harness.core import tokens
    from harness.bench import common
    from strategies import comparison_strategies

    common.warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        alone = []
        for cell in common.cells("default", ["none"], tmp + "/alone"):
            tokens.forget_counts()
            started = time.process_time()
            alone.append(run_cell(cell))
            alone[-1]["cpu_s"] = time.process_time() - started  # its task's generation included
        tokens.forget_counts()
        started = time.process_time()
        cells = common.cells("default", comparison_strategies(), tmp + "/sweep")
        for cell in cells:
            run_cell(cell)
        sweep_cpu = (time.process_time() - started) / len(cells)
    return statistics.fmean(row["requests"] for row in alone), statistics.fmean(row["cpu_s"] for row in alone), sweep_cpu


def missing_peers() -> list[Figure]:
    """An info line per peer not installed, naming the extra that installs it (not an error)."""
    return [Figure(f"  info: peer {name}", None, RATIO_GOAL, at_most=False, note=f"not installed ({INSTALL[extra]})")
            for name, (extra, _, _) in DRIVERS.items() if extra and not installed(name)]


def peers(requests: int = PEER_REQUESTS, repeats: int = PEER_REPEATS) -> list[Figure]:
    """The figures: per clearing setting, ctxbench's CPU per request, each peer's ratio to it, each one's growth;
    the peers not installed named with their extra; cells of a default-suite sweep per CPU-minute."""
    out: list[Figure] = []
    cell_requests, cell_cpu, sweep_cpu = default_cells()
    out.extend(missing_peers())
    for clearing in (False, True):
        runs = measure(requests, repeats, clearing)
        label = " (clearing 60k)" if clearing else ""
        ours = [r["per_request_s"] for r in runs["ctxbench"]]
        base = statistics.median(ours)
        peer_names = [n for n in runs if n != "ctxbench"]
        out.append(Figure(f"peers: ctxbench late/early{label}", statistics.median(r["growth"] for r in runs["ctxbench"]),
                          FLAT_GOAL, note=f"{_spread(ours, 1000, 3)} ms/request over {requests} requests, "
                                          f"{repeats} rounds; growth {_spread([r['growth'] for r in runs['ctxbench']])}; "
                                          f"context {runs['ctxbench'][-1]['row']['peak_context_tokens']:,} tokens "
                                          f"at its peak"))
        if peer_names:
            fastest = min(peer_names, key=lambda n: statistics.median(r["per_request_s"] for r in runs[n]))
            ratio = statistics.median(r["per_request_s"] for r in runs[fastest]) / base
            out.append(Figure(f"peers: fastest peer / ctxbench{label}", ratio, RATIO_GOAL, at_most=False,
                              note=f"fastest: {fastest}"))
        for name in runs:
            values = [r["per_request_s"] for r in runs[name]]
            whole = [r["whole_per_request_s"] for r in runs[name]]
            cleared = f"; cleared {runs[name][-1]['final_cleared']} of {requests - 1}" if clearing else ""
            cleared += f"; final context {runs[name][-1]['final_chars'] / 1000:,.0f}k characters of results"
            out.append(Figure(f"  info: {name}{label} ms/request", statistics.median(values) * 1000, None,
                              note=f"{_spread(values, 1000, 3)}; whole run {_spread(whole, 1000, 3)}; ratio "
                                   f"{statistics.median(values) / base:.1f}; late/early "
                                   f"{_spread([r['growth'] for r in runs[name]])} (of means "
                                   f"{_spread([r['growth_mean'] for r in runs[name]])}){cleared}"))
        rates = {name: 60 / (statistics.median(r["whole_per_request_s"] for r in runs[name]) * cell_requests)
                 for name in runs}
        out.append(Figure(f"  info: cells per CPU-minute{label}", rates["ctxbench"], None,
                          note=", ".join(f"{name} {rate:,.0f}" for name, rate in rates.items())
                          + f": 60 s / (R x whole-run CPU per request), R = {cell_requests:.1f} requests, a "
                            f"default-suite cell's mean (mock, strategy none); such a cell itself, its mock agent "
                            f"included: {60 / cell_cpu:,.0f} cells/CPU-minute alone (its task generated for it, "
                            f"every memo empty), {60 / sweep_cpu:,.0f} within the default comparison run in one "
                            f"process (tasks generated once, memos of seen texts shared)"))
    return out
