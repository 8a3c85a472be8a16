"""The `ctxbench` command line."""
from __future__ import annotations

import argparse
import errno
import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, NoReturn

import harness  # noqa: F401  (offline environment before anything imports litellm)
from harness.core.errors import ConfigError, CtxbenchError
from harness.models.mock.cache import CACHE_STYLES
from harness.core.user_files import INT64_MAX  # seeds are written to runs.jsonl and read back as 64-bit integers

DEFAULT_SUITE = "default"
DEFAULT_CACHE_STYLE = "anthropic"


MAX_WORKERS = 1024


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r:.200}") from exc
    if not values or any(not 0 <= v <= INT64_MAX for v in values):
        raise argparse.ArgumentTypeError(f"expected non-negative integers of at most 2**63 - 1, got {text!r:.200}")
    if len(set(values)) < len(values):  # a seed twice would run each of its cells twice under one run_id
        raise argparse.ArgumentTypeError(f"expected distinct integers, got {text!r}")
    return values


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _seed(text: str) -> int:
    """One seed: an integer in [0, 2**63 - 1], as --seeds takes them."""
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r:.200}") from exc
    if not 0 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f"expected an integer in [0, 2**63 - 1], got {text!r:.200}")
    return value


def _workers(text: str) -> int:
    """--workers: 1 to MAX_WORKERS. Each worker is a process holding pipes to this one, and the usual limit of
    open files per process is 1024 (`ulimit -n`), so more could not all start; no single machine ctxbench
    runs on has more cores than that either (a cluster is --executor ray's)."""
    value = _positive_int(text)
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_WORKERS} worker processes, got {value}")
    return value


def _window(text: str) -> int:
    """--window: a positive number of tokens, at most harness.core.config.MAX_TOKENS."""
    from harness.core.config import MAX_TOKENS

    value = _positive_int(text)
    if value > MAX_TOKENS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_TOKENS:,} tokens, got {value:,}")
    return value


def _windows(text: str) -> list[int]:
    """--window: one window, or several distinct ones separated by commas (a window axis)."""
    windows = [_window(part.strip()) for part in text.split(",")]
    repeated = sorted({window for window in windows if windows.count(window) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"{', '.join(map(str, repeated))} given more than once; "
                                         "each window names one run per cell")
    return windows


def _path(text: str) -> str:
    """A path option: one the OS can take (harness.core.user_files.check_path_text), else a usage error naming it."""
    from harness.core.user_files import check_path_text

    try:
        return check_path_text(text, "path")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("path: ")) from exc


def _version() -> str:
    """The installed distribution's version, as results' config.json records it."""
    from harness.results.layout import versions

    return versions()["ctxbench"]


def _add_provider_options(parser: argparse.ArgumentParser) -> None:
    """Window, cache, prices and extra profiles: shared by `run`, `sweep` and `traces`."""
    parser.add_argument("--window", type=_windows, metavar="TOKENS[,TOKENS...]",
                        help="context window in input tokens: the mock provider's window (default 200000), "
                             "and the input budget of a real model's profile; `run` and `sweep` take several "
                             "(32000,200000) and run every cell at each")
    parser.add_argument("--cache-style", choices=CACHE_STYLES,
                        help="prompt-cache simulation of the mock provider (default anthropic; openai-breakpoints: "
                             "OpenAI's GPT-5.6 and later; in a --dry-run of a real model, its provider's: anthropic "
                             "for Claude, openai-breakpoints for GPT-5.6 and later, else openai)")
    parser.add_argument("--price-model", help="cost-map entry the run is billed as (mock default claude-sonnet-4-6)")
    parser.add_argument("--cache-policy", metavar="NAME_OR_JSON",
                        help="where requests ask the provider to cache: auto (default: Anthropic automatic caching "
                             "+ system + tools; Bedrock/Vertex block markers; OpenAI a prompt_cache_key), none, last, "
                             "inspect, pydantic-ai, openhands, mini-swe-agent, claude-code, or JSON with options, "
                             "e.g. '{\"name\": \"inspect\", \"ttl\": \"1h\"}' (docs/caching.md)")
    parser.add_argument("--summarizer-knobs", metavar="JSON_OR_FILE",
                        help="imperfection knobs of the mock summarizer (the summary profile), "
                             "e.g. '{\"summary_completeness\": 0.5}'")
    parser.add_argument("--profiles", metavar="JSON_OR_FILE",
                        help="extra LLM profiles by name (e.g. a 'summary' profile for summarizing strategies)")


def _add_strategy_options(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--strategies", default=default,
                        help="comma-separated registered names or import paths (pkg.module:Class); "
                             "'all' = every registered strategy except observe-only add-ons such as "
                             f"warn_on_cache_busts (default {default})")
    parser.add_argument("--strategy-config", metavar="JSON_OR_FILE",
                        help="JSON or a JSON/YAML file mapping each strategy in --strategies to its config; "
                             "a config's 'with' list composes further strategies")


def _add_model_options(command: argparse.ArgumentParser) -> None:
    """Suite, model, seeds and parallelism: shared by `run` and `sweep`, in help groups."""
    parser = command.add_argument_group("tasks")
    parser.add_argument("--suite", default=DEFAULT_SUITE, type=_path,
                        help="suite name (smoke, default, long), a JSONL/Parquet task file or a hub dataset id "
                             f"(default: {DEFAULT_SUITE})")
    parser.add_argument("--tasks", metavar="FILE", type=_path, help="a task file (JSONL or Parquet); overrides --suite")
    parser.add_argument("--family", metavar="F[,F]",
                        help="run only these task families of the suite (see `ctxbench tasks list`)")
    parser.add_argument("--task-ids", metavar="ID[,ID]", help="run only these task ids of the suite")
    parser.add_argument("--limit", type=_positive_int, metavar="N",
                        help="run only the first N tasks of each family, after --family and --task-ids")
    parser = command.add_argument_group("model and simulated provider")
    parser.add_argument("--model", default="mock/agent",
                        help="litellm model name of the agent (default mock/agent, the offline simulated agent)")
    parser.add_argument("--api-base", help="API base URL for the model (e.g. an OpenAI-compatible server); with "
                                           "--resume, a recorded URL given again with the credentials it held")
    _add_provider_options(parser)
    parser.add_argument("--mock-knobs", metavar="JSON_OR_FILE",
                        help="imperfection knobs of the simulated agent, e.g. '{\"narrate\": 0.2}'")
    parser.add_argument("--clock", metavar="JSON_OR_FILE",
                        help="simulated durations of tools and users, e.g. '{\"tool_scale\": 0}' (no tool time) or "
                             "'{\"tool_durations\": {\"run_tests\": [60, 300]}}'; keys tool_scale, user_scale, "
                             "tool_durations, user_delay_s (default: each family's own table; docs/clock.md)")
    parser = command.add_argument_group("matrix and output")
    parser.add_argument("--seeds", type=_int_list, default=[0], help="comma-separated run seeds (default 0)")
    parser.add_argument("--max-requests", type=_positive_int, default=None,
                        help="main-model requests per run before it ends as max_requests (default 400)")
    parser.add_argument("--out", type=_path, help="results directory (default results/<timestamp>)")
    parser.add_argument("--workers", type=_workers, default=min(os.cpu_count() or 1, MAX_WORKERS),
                        help="parallel worker processes, at most 1024 (default: the number of cores); "
                             "with --executor ray and no --ray-address, the CPUs of the local Ray started")
    parser.add_argument("--executor", default="local", metavar="{local,in_process,ray}",
                        help="how the cells run, not what is measured: local worker processes (default), "
                             "in_process (one by one, here) or ray (Ray tasks; the `ray` extra; docs/scale.md)")
    parser.add_argument("--ray-address", metavar="ADDRESS",
                        help="with --executor ray: the Ray cluster to run on (auto: the one `ray start --head` "
                             "started here; ray://HOST:10001: a remote one); default: a local Ray of --workers CPUs")
    parser.add_argument("--baseline", default=None,
                        help="strategy the report's paired differences compare against (default none)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _add_run_parser(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser(
        "run", help="run strategies on a task suite and report",
        description="Run every task x strategy x seed cell, write results/<name>/, print a comparison table.",
        epilog="Examples: ctxbench run --suite smoke;  ctxbench run --family work_queue --limit 2 "
               "--strategies none,agent_reset;  ctxbench run --model anthropic/claude-sonnet-4-5 --dry-run",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_strategy_options(run, "all")
    _add_model_options(run)
    _add_run_options(run)
    _add_plot_task_option(run)


def _add_plot_task_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plot-task", metavar="TASK_ID",
                        help="task whose runs plots/context_per_request.png shows (default: the one with the most "
                             "resets and compactions)")


def _add_run_options(command: argparse.ArgumentParser) -> None:
    """Options of `run` and `sweep` for real models: dry run, resume, response cache, spending, concurrency,
    retries, faults (one function, so the two commands cannot drift apart)."""
    run = command.add_argument_group("before and around a paid run: estimate, resume, cache, spending, retries")
    run.add_argument("--inspect-log", nargs="?", const="", default=None, metavar="DIR", type=_path,
                     help="write Inspect AI eval logs as runs finish, to watch with `inspect view --log-dir DIR` "
                          "(default DIR: RESULTS_DIR/inspect/; needs the `inspect` extra; docs/inspect.md)")
    run.add_argument("--dry-run", action="store_true",
                     help="print the cells and an estimate of tokens and cost, from the mock agent run on these "
                          "cells in a temporary directory and billed as --model (or --price-model); writes "
                          "nothing and calls no real model")
    run.add_argument("--resume", metavar="RESULTS_DIR", type=_path,
                     help="finish an interrupted run: reuse RESULTS_DIR/config.json, skip cells already in its "
                          "runs.jsonl, rerun the unfinished ones and those that ended on an outage (transient "
                          "errors); matrix options may not be given with it")
    run.add_argument("--rerun-errors", action="store_true",
                     help="with --resume: rerun every run that ended 'error', not only the outages")
    run.add_argument("--repair", action="store_true",
                     help="with --resume: move lines of runs.jsonl that are not rows of config.json's matrix "
                          "(garbage, rows of another run or config) to runs.quarantine.jsonl, then resume")
    run.add_argument("--cache", metavar="DIR", type=_path,
                     help="response cache (SQLite in DIR): a request made before, by model, messages, tools, "
                          "parameters and repeat index, is answered from DIR instead of sent")
    run.add_argument("--max-cost-usd", type=float, metavar="USD",
                     help="spending limit per run: a run reaching it ends with termination 'budget'")
    run.add_argument("--max-total-cost-usd", type=float, metavar="USD",
                     help="spending limit of this invocation: once reached no further run starts; the runs left "
                          "are listed in unstarted.json (finish them later with --resume)")
    run.add_argument("--max-concurrency", type=int, metavar="N",
                     help="simultaneous requests per model in total (real models run as threads, spread over up to one "
                          "process per CPU when many runs are in flight)")
    run.add_argument("--retry", metavar="JSON_OR_FILE",
                     help="retry policy of the main profile, e.g. '{\"max_retries\": 6, \"initial_delay_s\": 1}'")
    run.add_argument("--mock-faults", metavar="JSON_OR_FILE",
                     help="seeded fault rates of the in-process mock, e.g. "
                          "'{\"rate_limit\": 0.05, \"server_error\": 0.02, \"timeout\": 0.01, "
                          "\"malformed_tool_args\": 0.05}'")


def _add_serve_mock_parser(commands: argparse._SubParsersAction) -> None:
    serve_mock = commands.add_parser(
        "serve-mock", help="serve the mock agent as an OpenAI-compatible endpoint on 127.0.0.1",
        description="Serve /v1/chat/completions (tools and tool calls; usage with "
                    "prompt_tokens_details.cached_tokens) and /v1/models on loopback. Run against it with "
                    "--model openai/mock-agent --api-base http://127.0.0.1:PORT/v1.")
    serve_mock.add_argument("--port", type=int, default=8765, help="TCP port on 127.0.0.1 (default 8765; 0 = any)")
    serve_mock.add_argument("--window", type=int, help="context window in tokens (default 200000)")
    serve_mock.add_argument("--cache-style", choices=CACHE_STYLES, default="anthropic",
                            help="prompt-cache simulation (default anthropic)")
    serve_mock.add_argument("--mock-knobs", metavar="JSON_OR_FILE", help="imperfection knobs of the simulated agent")
    serve_mock.add_argument("--summarizer-knobs", metavar="JSON_OR_FILE",
                            help="imperfection knobs of the mock summarizer, e.g. '{\"summary_completeness\": 0.5}'")
    serve_mock.add_argument("--faults", metavar="JSON_OR_FILE",
                            help="seeded fault rates, e.g. '{\"rate_limit\": 0.05, \"malformed_tool_args\": 0.05}'")
    serve_mock.add_argument("--latency-ms", type=float, default=0.0,
                            help="latency of each chat request: its answer goes out this long after the request "
                                 "arrived, the mock's own work included (default 0)")


def _add_sweep_parser(commands: argparse._SubParsersAction) -> None:
    sweep = commands.add_parser(
        "sweep", help="run a grid over a strategy's parameters and recommend a point",
        description="Run one strategy at every point of a parameter grid (each point labelled by its values), "
                    "write tuning.csv and plots/tuning_pareto.png, and name the recommended point: the cheapest per "
                    "success among the points (and --also baselines) whose success ties the best's within the 95% "
                    "interval of the paired difference (docs/sweeps.md). Takes run's task selection, spending, cache, "
                    "concurrency, retry and --dry-run options; --resume DIR finishes an interrupted sweep.",
        epilog="Example: ctxbench sweep --strategy observation_masking --grid keep_last=3,5,10 --also none "
               "(`ctxbench strategies NAME` lists the keys a grid can vary)")
    sweep.add_argument("grid_file", nargs="?", metavar="GRID_FILE", type=_path,
                       help="YAML/JSON file: {strategy, config (base), label, grid: {dotted.key: [values]}}")
    sweep.add_argument("--strategy", help="registered name or import path of the strategy to sweep")
    sweep.add_argument("--grid", nargs="+", action="extend", default=[], metavar="KEY=V1,V2",
                       help="a dotted key into the strategy config and its values, e.g. keep_last=3,5,10 "
                            "(observation_masking), condenser.warning_thresholds=[0.7,0.9],[0.8,0.95] (agent_reset) or "
                            "mock.notes_completeness=0.5,1.0 (a knob of the simulated agent); "
                            "values are read as JSON or YAML; adds to the file's grid")
    sweep.add_argument("--config", metavar="JSON_OR_FILE", help="base config of the strategy at every point")
    sweep.add_argument("--label", help="label prefix of the grid points (default: the strategy name)")
    sweep.add_argument("--also", default="", help="comma-separated strategies to run alongside, e.g. none")
    _add_model_options(sweep)
    _add_plot_task_option(sweep)
    _add_run_options(sweep)


def _add_traces_parser(commands: argparse._SubParsersAction) -> None:
    from harness.traces import FORMATS

    traces = commands.add_parser(
        "traces", help="replay recorded agent trajectories under strategies (no model is called)",
        description="Replay each recorded trajectory under each strategy, holding the recorded actions fixed: "
                    "the strategy decides each view, the mock provider prices it (window, prefix cache, usage), "
                    "the recorded message is the response. Writes the usual results layout (docs/traces.md).",
        epilog="Example: ctxbench traces my_traces/ --strategies none,observation_masking,hard_summarize --window 32000")
    traces.add_argument("paths", nargs="+", metavar="PATH", type=_path,
                        help="trace files or directories (searched recursively)")
    traces.add_argument("--format", default="auto", choices=FORMATS,
                        help="the traces' format (default auto: detected per file)")
    traces.add_argument("--include-sidechains", action="store_true",
                        help="Claude Code sessions: each subagent's thread becomes a trace of its own too "
                             "(default: the main thread only)")
    _add_strategy_options(traces, "none")
    _add_provider_options(traces)
    traces.add_argument("--calibrate", action="store_true",
                        help="replay each trace under none as its agent ran it (its model's cache and list prices, "
                             "its agent's cache breakpoints, a stand-in for its unrecorded system prompt and tools) "
                             "and print simulated / recorded input, cache reads, writes and cost (docs/validity.md)")
    traces.add_argument("--out", type=_path, help="results directory (default results/<timestamp>)")
    traces.add_argument("--baseline", default=None,
                        help="strategy the report's paired differences compare against (default none, else the first)")
    traces.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _add_show_parser(commands: argparse._SubParsersAction) -> None:
    show = commands.add_parser(
        "show", help="one run's timeline, the view sent at a request, or what changed between two (from its files)",
        description="A timeline of one run: a line per model request (context, cached and written tokens, cost, the "
                    "view's length, warnings, resets, compactions, tool calls) and each strategy decision with the "
                    "messages it removed, replaced or inserted; then how it ended and what the checker expected and "
                    "was given. Reads only the files (docs/show.md).",
        epilog="Example: ctxbench show results/default --run plant_early_ask_late-3--compaction_ladder--s0 --diff 42")
    show.add_argument("target", metavar="RESULTS_DIR|EVENT_LOG", type=_path,
                      help="a results directory or one events/<run_id>.jsonl.gz")
    show.add_argument("--run", metavar="RUN_ID", help="the run of RESULTS_DIR (default: its only run, else list them)")
    show.add_argument("--request", type=int, metavar="N", help="print the view exactly as sent at main request N (1-based)")
    show.add_argument("--json", action="store_true", help="with --request: the view's messages as a JSON list")
    show.add_argument("--diff", type=int, metavar="N", help="messages removed, replaced and added between requests N-1 and N")
    show.add_argument("--from", dest="from_request", type=int, metavar="N", help="timeline from request N")
    show.add_argument("--to", dest="to_request", type=int, metavar="N", help="timeline up to request N")
    show.add_argument("--all", action="store_true", help="do not fold streaks of uneventful requests")
    show.add_argument("--items", type=int, metavar="N",
                      help="messages listed per change (timeline default 8, user and system first; --diff: all)")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                      help="ANSI colour (default auto: when stdout is a terminal and NO_COLOR is unset)")


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are scrubbed of secrets: its message quotes the value it refused
    (`--workers sk-...`, an unrecognized argument), which may be a key pasted in the wrong place. Its
    subcommands' parsers are of this class too (argparse makes them of their parent's class)."""

    def error(self, message: str) -> NoReturn:
        from harness.core.secrets import remember, scrub

        remember()  # this environment's secret values, as the writers scrub them
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {scrub(message)}\n")


def build_parser() -> argparse.ArgumentParser:
    """The `ctxbench` parser with every subcommand (building it imports no heavy library)."""
    parser = _Parser(
        prog="ctxbench",
        description="Benchmark context-management strategies of LLM agents: tokens, prompt-cache hits, "
                    "resets, cost and task success.")
    parser.add_argument("--version", action="version", version=f"ctxbench {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_run_parser(commands)
    replay = commands.add_parser("replay", help="rebuild every sent view from event logs and check its hash",
                                 description="Rebuild each view sent to the model from the event log alone "
                                             "(no LLM or tool call) and compare it with the recorded hash.")
    replay.add_argument("events", nargs="+", type=_path, help="events/<run_id>.jsonl.gz files or results directories")
    _add_show_parser(commands)
    _add_sweep_parser(commands)
    _add_traces_parser(commands)
    report = commands.add_parser(
        "report", help="write summary.csv, paired.csv, report.md and plots/ for a results directory",
        description="Summaries with seeded 95% bootstrap intervals, paired differences against a baseline over "
                    "the same task and seed, report.md and plots, from the directory's files alone.")
    report.add_argument("results_dir", type=_path, help="a results directory written by run, sweep or traces")
    report.add_argument("--baseline", default=None, help="strategy to compare against (default none)")
    report.add_argument("--bootstrap-seed", type=_seed, default=0, help="seed of the bootstrap resampling (default 0)")
    _add_plot_task_option(report)
    strategies = commands.add_parser(
        "strategies", help="list strategies, or show one's source and config keys",
        description="Without NAME: every registered strategy with a one-line description and its source. "
                    "With NAME: its description, source, and every config key with type, default and meaning "
                    "(the schema that validates --strategy-config).",
        epilog="Example: ctxbench strategies compaction_ladder")
    strategies.add_argument("name", nargs="?", metavar="NAME", help="a registered strategy name or import path")
    _add_serve_mock_parser(commands)
    export = commands.add_parser(
        "export", help="write a results directory in another tool's format (Inspect AI eval logs, Parquet)",
        description="--format inspect: one Inspect AI eval log per strategy, each run a sample (messages, model, "
                    "tool and compaction events, the checker's score, the run's metrics), for `inspect view "
                    "--log-dir DIR` and inspect_ai.analysis; needs the `inspect` extra. Details: docs/inspect.md. "
                    "--format parquet: runs.parquet (one row per run, structured fields as JSON text) and, with "
                    "--requests, requests.parquet (one row per LLM request, from the event logs), for pandas, "
                    "polars or DuckDB; needs the `parquet` extra.")
    export.add_argument("results_dir", type=_path, help="a results directory written by run, sweep or traces")
    export.add_argument("--format", choices=["inspect", "parquet"], required=True, help="the output format")
    export.add_argument("--out", type=_path, help="directory for the files (default RESULTS_DIR/inspect/ or "
                                                  "RESULTS_DIR/parquet/)")
    export.add_argument("--requests", action="store_true",
                        help="parquet: also write requests.parquet from the event logs (one run's log at a time)")
    tasks = commands.add_parser("tasks", help="list task families and suites, or show one task instance",
                                description="`tasks list`: families with their knobs, suites with their instances. "
                                            "`tasks show ID`: one instance's prompt, opening messages and tools.")
    tasks_commands = tasks.add_subparsers(dest="tasks_command", required=True)
    tasks_commands.add_parser("list", help="families and suites")
    show = tasks_commands.add_parser("show", help="one task instance's prompt and tools")
    show.add_argument("task_id", help="a task_id from a suite (see `tasks list`)")
    show.add_argument("--suite", help="suite name, JSONL/Parquet file or hub id to look in (default: every built-in suite)")
    show.add_argument("--seed", type=_seed, default=0,
                      help="run seed: show the instance a run with this seed gets (default 0, the row's own)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.command_line = list(argv) if argv is not None else sys.argv[1:]
    # Like `python -m`, let --strategy mymodule:MyStrategy find modules in the working directory.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if args.command in ("run", "sweep", "traces") and not getattr(args, "resume", None) and not args.out:
        from harness.api import default_out

        args.out = str(default_out())  # fixed now, so the last-resort handler knows where the results go
    try:
        return _dispatch(args)
    except CtxbenchError as exc:
        from harness.core.secrets import scrub

        print(f"ctxbench: error: {scrub(str(exc))}", file=sys.stderr)  # a message may echo a value
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped (`ctxbench strategies | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141  # as a shell reports a command ended by SIGPIPE
    except OSError as exc:
        if exc.errno in REFUSED_BY_FILE_SYSTEM and exc.filename is not None:
            print(f"ctxbench: error: {scrub_text(exc.filename)}: {exc.strerror}", file=sys.stderr)
            return 2
        return _internal_error(exc, args)
    except Exception as exc:  # a bug of ours, not bad input: one line, the traceback kept in a file
        return _internal_error(exc, args)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the chosen command; its exit code."""
    if args.command == "run":
        return _cmd_run(args)
    if args.command == "replay":
        return _cmd_replay(args)
    if args.command == "show":
        from harness.results.show import show_command

        return show_command(args)
    if args.command == "report":
        return _cmd_report(args)
    if args.command == "serve-mock":
        from harness.models.serve_mock import server

        return server.run_command(args)
    if args.command == "sweep":
        return _cmd_sweep(args)
    if args.command == "traces":
        return _cmd_traces(args)
    if args.command == "tasks":
        return _cmd_tasks(args)
    if args.command == "export":
        return _cmd_export(args)
    return _cmd_strategies(args)


INTERNAL_ERROR_FILE = "internal-error-{stamp}-{pid}.txt"
# OSErrors that are the file system refusing a path the user gave (too long, not allowed, not a directory,
# full): reported as bad input, naming the path. A missing file (ENOENT) is not among them: the user's
# missing files are named by the checks that read them, so one missing here is a bug of ours.
REFUSED_BY_FILE_SYSTEM = frozenset({errno.ENAMETOOLONG, errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTDIR,
                                    errno.ELOOP, errno.EROFS, errno.ENOSPC, errno.EDQUOT})


def scrub_text(value: Any) -> str:
    """`value` as text with every known secret scrubbed (a path may hold a pasted key)."""
    from harness.core.secrets import scrub

    return scrub(str(value))


def _results_dir(args: argparse.Namespace) -> Path | None:
    """The results directory of the command, where one is named and exists (else None; a path the OS refuses
    to look at, e.g. too long, is none)."""
    for name in ("resume", "out", "results_dir"):
        value = getattr(args, name, None)
        try:
            if value and Path(value).is_dir():
                return Path(value)
        except (OSError, ValueError):
            continue
    return None


def _internal_error(exc: Exception, args: argparse.Namespace) -> int:
    """Report an internal error in one line (secrets scrubbed), the traceback saved to a file under the
    results directory, else a temp file; exit code 1 (2 is bad input, 0 success). The report itself never
    raises: whatever fails in it leaves a one-line note instead of a second traceback."""
    try:
        import traceback

        from harness.core.secrets import remember, scrub

        remember()  # the environment's secrets, with those this invocation met already
        saved = _save_traceback(scrub("".join(traceback.format_exception(exc))), _results_dir(args))
        message = scrub(str(exc)).strip().splitlines()
        first = message[0][:500] if message else ""
    except Exception as fault:  # noqa: BLE001  (the handler of last resort must not fail)
        saved, first = f"traceback not saved (reporting it failed: {type(fault).__name__})", ""
    print(f"ctxbench: internal error: {type(exc).__name__}: {first}", file=sys.stderr)
    print(f"ctxbench: {saved}; please report it", file=sys.stderr)
    return 1


def _save_traceback(text: str, results_dir: Path | None) -> str:
    """Write `text` under the results directory, else to a temp file; say where (or why nowhere)."""
    import tempfile

    name = INTERNAL_ERROR_FILE.format(stamp=time.strftime("%Y%m%d-%H%M%S"), pid=os.getpid())
    if results_dir is not None:
        try:
            (results_dir / name).write_text(text, encoding="utf-8")
            return f"traceback saved to {results_dir / name}"
        except (OSError, ValueError):
            pass
    try:
        handle, path = tempfile.mkstemp(prefix="ctxbench-" + name.removesuffix(".txt") + "-", suffix=".txt")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        return f"traceback saved to {path}"
    except (OSError, ValueError) as exc:
        return f"traceback not saved ({getattr(exc, 'strerror', None) or type(exc).__name__})"


def _cmd_strategies(args: argparse.Namespace) -> int:
    from strategies.catalog import list_text, show_text

    print(show_text(args.name) if args.name else list_text())
    return 0


def _profiles(args: argparse.Namespace, model: str | None = None) -> dict:
    """The profiles of the model options; `model`: the main model when the command has no --model (traces)."""
    from harness import api
    from harness.core.config import parse_inline_or_file

    mock_knobs = getattr(args, "mock_knobs", None)
    knobs = parse_inline_or_file(mock_knobs, "--mock-knobs") if mock_knobs else None
    extra = parse_inline_or_file(args.profiles, "--profiles") if args.profiles else None
    summarizer_knobs = (parse_inline_or_file(args.summarizer_knobs, "--summarizer-knobs")
                        if args.summarizer_knobs else None)
    main_model = model or args.model
    windows = args.window or []
    if len(windows) > 1 and model is not None:
        raise ConfigError(f"--window: {args.command} takes one window; several are a window axis of `run` and `sweep`")
    if args.cache_style and not main_model.startswith("mock/") and not getattr(args, "dry_run", False):
        raise ConfigError(f"--cache-style sets the in-process mock's cache (mock/...), not {main_model!r}'s; it "
                          "applies to a real model's --dry-run estimate only (serve-mock takes its own --cache-style)")
    return api.mock_profiles(main_model, window=windows[0] if len(windows) == 1 else None, cache=args.cache_style or DEFAULT_CACHE_STYLE,
                             knobs=knobs, cache_policy=_cache_policy(args.cache_policy),
                             api_base=getattr(args, "api_base", None), price_model=args.price_model, extra=extra,
                             summarizer_knobs=summarizer_knobs)


def _cache_policy(text: str | None) -> Any:
    """--cache-policy as plain data (a name, or a JSON mapping with options), checked here: exit 2 on a bad one."""
    from harness.models.cache_policy import parse_policy

    if text is None:
        return None
    data: Any = text.strip()
    if data.startswith("{"):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--cache-policy: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    return parse_policy(data, "--cache-policy").as_data()


INVOCATION_OPTIONS = ("cache", "max_cost_usd", "max_total_cost_usd", "max_concurrency")
# Options that say how, not what, to run: --resume may be given them (the matrix comes from config.json).
RESUME_OPTIONS = {*INVOCATION_OPTIONS, "resume", "workers", "executor", "ray_address", "no_progress", "baseline", "rerun_errors", "repair",
                  "api_base"}


def _run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of api.run / api.sweep given by the shared options of `run` and `sweep`."""
    from harness.core.config import parse_inline_or_file
    from harness.run.invocation import apply_profile_options
    from harness.run.selection import parse_names

    clock = parse_inline_or_file(args.clock, "--clock") if args.clock else None
    profiles = _profiles(args)
    apply_profile_options(profiles, retry=parse_inline_or_file(args.retry, "--retry") if args.retry else None,
                          faults=parse_inline_or_file(args.mock_faults, "--mock-faults") if args.mock_faults else None)
    return {"seeds": args.seeds, "profiles": profiles, "max_requests": args.max_requests, "out": args.out,
            "clock": clock, "workers": args.workers, "executor": args.executor, "ray_address": args.ray_address,
            "progress": not args.no_progress, "baseline": args.baseline,
            "command_line": args.command_line, "families": parse_names(args.family, "--family"),
            "task_ids": parse_names(args.task_ids, "--task-ids"), "limit": args.limit,
            "windows": args.window if args.window and len(args.window) > 1 else (),
            **{name: getattr(args, name) for name in INVOCATION_OPTIONS}}


def _rows_by_id(results_dir: str | Path) -> dict[str, dict[str, Any]]:
    """The rows of a results directory by run_id; none when it cannot be read yet (--resume then says why)."""
    from harness.results.layout import read_runs

    try:
        return {row["run_id"]: row for row in read_runs(results_dir)}
    except CtxbenchError:
        return {}


def _made_text(before: dict[str, dict[str, Any]] | None, out: Path, total: int, seconds: float) -> str:
    """How many runs this invocation made: all rows of a new directory; for --resume, the rows new or
    replaced since `before` (a resume with nothing left makes none)."""
    if before is None:
        return f"{total} runs in {seconds:.1f}s"
    after = _rows_by_id(out)
    made = sum(1 for run_id, row in after.items() if before.get(run_id) != row)
    if not made:
        return f"0 runs: all {total} were already done"
    return f"{made} runs in {seconds:.1f}s ({total} in all)"


def _print_outcome(out: Path, started: float, before: dict[str, dict[str, Any]] | None = None) -> None:
    from harness.run.invocation import UNSTARTED_FILE
    from harness.results.report import NO_FINISHED_RUNS, console_table, runs_frame, summarize

    runs = runs_frame(out)
    print(NO_FINISHED_RUNS if runs.empty else console_table(summarize(runs), runs))
    _print_cache_note(out)
    print(f"\n{_made_text(before, out, len(runs), time.perf_counter() - started)} -> {out}/ "
          f"(runs.jsonl, summary.csv, paired.csv, report.md, events/, plots/)")
    _print_tuning(out)
    if (out / UNSTARTED_FILE).exists():
        print(f"Spending limit reached: runs not started are listed in {out / UNSTARTED_FILE}; "
              f"finish them with --resume {out}", file=sys.stderr)


def _print_cache_note(out: Path) -> None:
    """Say in words when the run's provider caches only marked prefixes and its cache policy marked none, and when
    the mock bills as a model whose provider caches otherwise than the mock was told to."""
    from harness.models.cache_policy import uncached_note
    from harness.results.layout import CONFIG_FILE

    try:
        main = json.loads((out / CONFIG_FILE).read_text(encoding="utf-8"))["profiles"]["main"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    for note in (uncached_note(main), _style_note(main)):
        if note:
            print(f"\nNOTE: {note}.")


def _style_note(main: dict[str, object]) -> str | None:
    """The mock billed as another provider's model (`--price-model`) but caching in the style it was given: the
    cost is that model's prices over the other provider's cache rules."""
    from harness.run.dryrun import provider_cache_style

    mock = main.get("mock") if isinstance(main.get("mock"), dict) else {}
    price_model = main.get("price_model") or mock.get("price_model")
    if not str(main.get("model", "")).startswith("mock/") or not isinstance(price_model, str):
        return None
    simulated, own = mock.get("cache") or "anthropic", provider_cache_style(price_model)
    if simulated in (own, "none"):
        return None
    return (f"the mock billed as {price_model} but cached by the {simulated!r} rules; that model's provider caches "
            f"by the {own!r} ones (--cache-style {own})")


def _command_defaults(command: str) -> dict[str, object]:
    """The default of every option of `command`, to tell which ones a user gave."""
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command")
    (_add_run_parser if command == "run" else _add_sweep_parser)(commands)
    return vars(parser.parse_args([command]))


def _check_resume_only(args: argparse.Namespace) -> None:
    """--rerun-errors and --repair act on a results directory: without --resume they are a mistake."""
    if args.rerun_errors or args.repair:
        raise ConfigError(f"{'--rerun-errors' if args.rerun_errors else '--repair'} works on a results "
                          "directory: give it with --resume RESULTS_DIR")


def _resume(args: argparse.Namespace) -> Path:
    """`run --resume` / `sweep --resume`: the matrix from config.json, only how-to-run options on top."""
    from harness import api

    if args.dry_run:
        raise ConfigError("--dry-run estimates a new matrix; it does not combine with --resume")
    given = sorted(f"--{k.replace('_', '-')}" for k, v in _command_defaults(args.command).items()
                   if k not in RESUME_OPTIONS and getattr(args, k) != v)
    if given:
        raise ConfigError(f"--resume takes the runs to make from {args.resume}/config.json; drop {', '.join(given)}")
    return api.resume(args.resume, workers=args.workers, executor=args.executor, ray_address=args.ray_address,
                      progress=not args.no_progress, api_base=args.api_base,
                      **({"baseline": args.baseline} if args.baseline else {}),
                      **{name: getattr(args, name) for name in INVOCATION_OPTIONS},
                      rerun_errors=args.rerun_errors, repair=args.repair)


def _dry_run(options: dict[str, Any], launch: Callable[..., Path], cache_style: str | None) -> int:
    """Run the matrix with the mock standing in for every real model, in a temporary directory; print the
    cells and the estimate (harness.run.dryrun). `launch` is api.run or api.sweep with its matrix bound.

    The mock's cells run on local processes whatever `--executor` says (ours): an estimate needs no cluster,
    and starting Ray would cost more than the mock's runs; the executor options are still checked."""
    import tempfile

    from harness.run.dryrun import estimate_text, in_matrix_order, stand_in_profiles
    from harness.executors import check_executor
    from harness.results.layout import CONFIG_FILE, read_runs

    check_executor(options["executor"], options["ray_address"])
    profiles = stand_in_profiles(options["profiles"], cache_style)
    with tempfile.TemporaryDirectory(prefix="ctxbench-dry-run-") as temp:
        out = launch(**{**options, "profiles": profiles, "out": Path(temp) / "dry-run", "cache": None,
                        "max_total_cost_usd": None, "command_line": None, "executor": "local", "ray_address": None})
        rows = in_matrix_order(read_runs(out), json.loads((out / CONFIG_FILE).read_text(encoding="utf-8")))
    print(estimate_text(rows, profiles, options["max_total_cost_usd"]))
    return 0


def _print_tuning(out: Path) -> None:
    """A sweep's directory (sweep.json, whether swept or resumed by `run --resume`): its tuning table and the
    recommendation, as tuning.csv holds them."""
    from harness.results.layout import SWEEP_FILE, TUNING_FILE
    from harness.results.tuning import recommendation_text, tuning_console

    if not (out / SWEEP_FILE).exists() or not (out / TUNING_FILE).exists():
        return
    from harness.api import read_table

    tuning = read_table(out / TUNING_FILE)  # tuning.csv alone: load_results would read every event log too
    print(f"\nTuning ({out / TUNING_FILE}; every column in report.md):\n{tuning_console(tuning)}\n\n"
          f"recommended: {recommendation_text(tuning)}")


def _cmd_run(args: argparse.Namespace) -> int:
    from harness import api
    from harness.core.config import parse_inline_or_file

    started = time.perf_counter()
    before = _rows_by_id(args.resume) if args.resume else None
    if args.resume:
        out = _resume(args)
    else:
        _check_resume_only(args)
        configs = parse_inline_or_file(args.strategy_config, "--strategy-config") if args.strategy_config else None
        specs = api.strategy_specs(args.strategies, configs)
        options = _run_options(args)
        live = _live_inspect_logs(args)
        if args.dry_run:
            return _dry_run(options, functools.partial(api.run, args.tasks or args.suite, strategies=specs,
                                                       plot_task=args.plot_task), args.cache_style)
        out = api.run(args.tasks or args.suite, strategies=specs, **options, plot_task=args.plot_task, watch=live)
        _finish_inspect_logs(live)
    _print_outcome(out, started, before)
    return 0


def _live_inspect_logs(args: argparse.Namespace) -> Any:
    """`run`/`sweep --inspect-log [DIR]`: the row watcher writing Inspect logs as runs finish, or None."""
    if args.inspect_log is None:
        return None
    if args.dry_run:
        raise ConfigError("--inspect-log logs a real run; it does not combine with --dry-run")
    from harness.results.exports.inspect import LiveInspectLogs

    return LiveInspectLogs(args.out, args.inspect_log or None)


def _finish_inspect_logs(live: Any) -> None:
    """Mark the live Inspect logs finished ("success") and say where they are."""
    if live is not None and live.finish():
        print(f"Inspect eval logs -> {live.logs.out}/ (open: inspect view --log-dir {live.logs.out})")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from harness import api
    from harness.core.config import parse_inline_or_file
    from harness.sweep import load_grid_file, make_grid, parse_grid_args

    started = time.perf_counter()
    before = _rows_by_id(args.resume) if args.resume else None
    if args.resume:
        out = _resume(args)
    else:
        _check_resume_only(args)
        data = load_grid_file(args.grid_file) if args.grid_file else {}
        axes = dict(data.get("grid") or {})
        for key, values in parse_grid_args(args.grid).items():
            axes[key] = values
        base = parse_inline_or_file(args.config, "--config") if args.config else data.get("config")
        grid = make_grid(args.strategy or data.get("strategy"), axes, base, args.label or data.get("label"),
                         where=f"sweep {args.grid_file}" if args.grid_file else "sweep")
        also = [name.strip() for name in args.also.split(",") if name.strip()]
        options = _run_options(args)
        live = _live_inspect_logs(args)
        if args.dry_run:
            return _dry_run(options, functools.partial(api.sweep, grid, args.tasks or args.suite, also=also,
                                                       plot_task=args.plot_task), args.cache_style)
        out = api.sweep(grid, args.tasks or args.suite, also=also, **options, plot_task=args.plot_task, watch=live)
        _finish_inspect_logs(live)
    _print_outcome(out, started, before)
    return 0


def _cmd_traces(args: argparse.Namespace) -> int:
    from harness import api
    from harness.core.config import parse_inline_or_file
    from harness.results.report import replay_table, runs_frame
    from harness.traces.replay import REPLAY_MODEL, replayable

    configs = parse_inline_or_file(args.strategy_config, "--strategy-config") if args.strategy_config else None
    started = time.perf_counter()
    specs = api.strategy_specs(args.strategies, configs)
    named = {name.strip() for name in args.strategies.split(",")}
    if "all" in named:  # `all` means every strategy a replay can run; one named outright is refused with its reason
        kept, skipped = replayable(specs)
        specs = kept + [spec for spec in specs if spec.display in skipped and spec.name in named]
        for label, reason in skipped.items():
            if label not in named:
                print(f"note: --strategies all leaves out {label}: {reason}", file=sys.stderr)
    out = api.traces(args.paths, strategies=specs, fmt=args.format,
                     profiles=_profiles(args, REPLAY_MODEL), out=args.out or api.default_out(),
                     progress=not args.no_progress, baseline=args.baseline,
                     command_line=args.command_line, calibrate=args.calibrate, chosen=_chosen(args),
                     include_sidechains=args.include_sidechains)
    runs = runs_frame(out)
    print(replay_table(runs))
    _print_cache_note(out)
    if args.calibrate:
        from harness.results.calibration import CALIBRATION_TEXT

        print("\n" + (out / CALIBRATION_TEXT).read_text(encoding="utf-8"), end="")
    print(f"\n{len(runs)} replays in {time.perf_counter() - started:.1f}s -> {out}/ "
          f"(runs.jsonl, summary.csv, paired.csv, report.md, events/, plots/)")
    return 0


def _chosen(args: argparse.Namespace) -> list[str]:
    """The provider options given on the command line, which a calibration keeps (harness.traces.calibration)."""
    given = {"cache_style": args.cache_style, "price_model": args.price_model, "cache_policy": args.cache_policy,
             "window": args.window}
    return [name for name, value in given.items() if value]


def _cmd_tasks(args: argparse.Namespace) -> int:
    from tasks.catalog import find_row, list_text, show_text

    print(list_text() if args.tasks_command == "list" else show_text(find_row(args.task_id, args.suite), args.seed))
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from harness.conversation.replay import replay_file
    from harness.conversation.events import event_logs
    from harness.results.layout import EVENTS_DIR

    files: list[Path] = []
    for item in args.events:
        path = Path(item)
        files.extend(event_logs(path / EVENTS_DIR) if path.is_dir() else [path])
    if not files:
        raise ConfigError(f"replay: no event files in {args.events}")
    failed = 0
    for path in files:
        result = replay_file(path)
        status = "ok" if result.ok else "MISMATCH"
        print(f"{status:8s} {path}: {result.checked} views checked")
        for line in result.mismatches[:10]:
            print(f"         {line}")
        failed += not result.ok
    print(f"{len(files) - failed}/{len(files)} event logs replayed without mismatch")
    return 1 if failed else 0


def _cmd_export(args: argparse.Namespace) -> int:
    from harness.results.exports.inspect import export_inspect

    if args.format == "parquet":
        from harness.results.exports.parquet import export_parquet

        written = export_parquet(args.results_dir, args.out, requests=args.requests)
        print("\n".join(str(path) for path in written))
        return 0
    if args.requests:
        raise ConfigError("export: --requests is an option of --format parquet (an Inspect log holds each run's "
                          "requests already)")
    written = export_inspect(args.results_dir, args.out)
    print("\n".join(str(path) for path in written))
    print(f"{len(written)} Inspect eval logs -> {Path(written[0]).parent}/ (open: inspect view --log-dir "
          f"{Path(written[0]).parent})")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from harness.results.lock import hold
    from harness.results.report import DEFAULT_BASELINE, check_baseline, runs_frame, write_report
    from harness.results.plots import check_plot_task

    from harness.results.layout import CONFIG_FILE, RUNS_FILE

    path = Path(args.results_dir)
    if not path.is_dir():
        raise ConfigError(f"report: {path} is not a directory")
    if not (path / RUNS_FILE).is_file() and not (path / CONFIG_FILE).is_file():
        raise ConfigError(f"report: {path} is not a results directory (it has neither {RUNS_FILE} nor {CONFIG_FILE})")
    with hold(path, "report"):  # not while a run writes it
        runs = runs_frame(path)
        if runs.empty:  # a report of nothing would replace the files of a directory that had some
            has = "holds no run" if (path / RUNS_FILE).is_file() else "does not exist"
            raise ConfigError(f"report: {path / RUNS_FILE} {has}; nothing to report")
        if args.baseline:
            check_baseline(runs, args.baseline)
        if args.plot_task and not runs.empty:
            check_plot_task(args.plot_task, runs["task_id"])
        report = write_report(path, baseline=args.baseline or DEFAULT_BASELINE, seed=args.bootstrap_seed,
                              plot_task=args.plot_task, runs=runs)
    print(report["table"])
    print(f"\n-> {Path(args.results_dir) / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
