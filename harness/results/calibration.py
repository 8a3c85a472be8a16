"""The simulated bill of a trace replay against the bill the trace recorded (`ctxbench traces --calibrate`).

Reads a results directory (runs and their requests, harness.results.report) and compares, request by request,
what the replay simulated with what the provider recorded for the same request: input tokens, cache reads,
cache writes and cost (both at the recorded model's list prices). Per trace and in total, the ratio simulated /
recorded; then the requests where they differ most, each with what explains the difference (`reasons`):

- `prefix`: the first request (or the first after the recorded agent's own reset) carries the part of the
  prompt the log does not hold (system prompt, tool schemas), stood in for by filler of the same size;
- `ttl`: the recorded clock had passed the cache's lifetime since the previous request (5 minutes, or an hour
  where the recorded writes used the 1h TTL), so one side's cache had expired;
- `tokenizer`: the same messages counted differently (ctxbench counts with litellm's bundled tokenizer and its
  own framing; the provider with its own tokenizer, chat template, and content the log keeps in another form);
- `cache`: the recorded provider read a larger share of the request than the simulation (a breakpoint the
  policy does not place, or a prefix the log does not show whole; on the first request, a prefix another
  session or subagent had written: `warm before the trace`) or a smaller one (its cache missed: an eviction,
  another cache node, or an earlier block the agent changed where the log does not show it);
- `output`: the response was billed for more (or fewer) output tokens than its logged text counts: reasoning
  or thinking the log does not hold, or another tokenizer.
Ours throughout: the thresholds below are where a difference stops being rounding.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from harness.models.profiles import MAIN_PROFILE
from harness.results.forgotten import replay_runs
from harness.results.frames import requests_frame, runs_frame

FIGURES = ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens", "cost_usd")
LABELS = {"input_tokens": "input", "cached_tokens": "cache read", "cache_write_tokens": "cache write",
          "output_tokens": "output", "cost_usd": "cost"}
TTL_S = {"5m": 300.0, "1h": 3600.0}
TOKENIZER_TOLERANCE = 0.05  # a request's input differing by more than this share is counted differently
CACHE_TOLERANCE = 0.05  # the share of a request read from cache differing by more than this
WORST = 5  # requests shown where simulated and recorded differ most
CALIBRATION_FILE, CALIBRATION_REQUESTS_FILE = "calibration.csv", "calibration_requests.csv"
CALIBRATION_TEXT = "calibration.txt"  # what `traces --calibrate` printed
TABLE_COLUMNS = ["trace", "requests", "unrecorded_prefix_tokens",
                 *(f"{kind}_{name}" for name in FIGURES for kind in ("simulated", "recorded")),
                 *(f"{name}_ratio" for name in FIGURES)]


def compared_requests(results_dir: str | Path) -> pd.DataFrame:
    """The main requests of every replay that carry a recorded counterpart, each with its gap since the previous
    request and the reasons it differs; empty when no trace recorded usage."""
    runs = replay_runs(runs_frame(results_dir))  # only replays record a provider's bill: no other log is read
    requests = requests_frame(results_dir, runs)
    requests = requests[(requests["profile"] == MAIN_PROFILE) & requests["recorded_input_tokens"].notna()].copy()
    if requests.empty:
        return requests.assign(gap_s=[], reasons=[])
    requests = requests.sort_values(["run_id", "request"], kind="stable")
    requests["gap_s"] = requests.groupby("run_id")["clock_s"].diff()
    one_hour = _writes_1h(runs, results_dir)
    requests["reasons"] = [", ".join(_reasons(row, one_hour.get(row["run_id"], False)))
                           for row in requests.to_dict("records")]
    return requests.reset_index(drop=True)


def _writes_1h(runs: pd.DataFrame, results_dir: str | Path) -> dict[str, bool]:
    """Whether each run's recorded writes used the 1h TTL (any request recording 1h writes)."""
    from harness.conversation.events import find_event_log, read_events
    from harness.results.layout import EVENTS_DIR

    found: dict[str, bool] = {}
    for run_id in runs["run_id"]:
        path = find_event_log(Path(results_dir) / EVENTS_DIR, run_id)
        found[run_id] = path.exists() and any(
            (event.get("recorded") or {}).get("cache_write_1h_tokens") for event in read_events(path)
            if event["type"] == "llm_call")
    return found


def _reasons(row: dict[str, Any], one_hour: bool) -> list[str]:
    """What explains this request's difference (module docstring), most specific first."""
    reasons = []
    if row["request"] == 1 or row["resets_before"]:
        reasons.append("prefix")
    gap, ttl = row["gap_s"], TTL_S["1h" if one_hour else "5m"]
    if pd.notna(gap) and gap > ttl:
        reasons.append("ttl")
    simulated, recorded = row["input_tokens"] or 0, row["recorded_input_tokens"] or 0
    if recorded and abs(simulated - recorded) > TOKENIZER_TOLERANCE * recorded and "prefix" not in reasons:
        reasons.append("tokenizer")
    read, recorded_read = row["cached_tokens"] or 0, _number(row["recorded_cached_tokens"])
    # Shares of the request read from cache: a tokenizer's difference scales a read and its input alike.
    share, recorded_share = read / simulated if simulated else 0.0, recorded_read / recorded if recorded else 0.0
    if recorded and abs(share - recorded_share) > CACHE_TOLERANCE and "ttl" not in reasons:
        if recorded_share < share:
            reasons.append("cache: recorded read less")
        else:
            reasons.append("cache: warm before the trace" if "prefix" in reasons else "cache: recorded read more")
    output, recorded_output = row["output_tokens"] or 0, _number(row["recorded_output_tokens"])
    if recorded_output and abs(output - recorded_output) > TOKENIZER_TOLERANCE * recorded_output:
        reasons.append("output")
    return reasons


def _number(value: Any) -> float:
    return 0.0 if value is None or pd.isna(value) else float(value)


def calibration_table(requests: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per trace, then a total row: requests compared, the unrecorded prefix, and simulated and recorded input,
    cache reads, cache writes and cost with their ratio (simulated / recorded; empty where nothing was recorded)."""
    rows = []
    prefix = dict(zip(runs["run_id"], runs.get("unrecorded_prefix_tokens", pd.Series(0, index=runs.index))))
    for (run_id, trace), group in requests.groupby(["run_id", "task_id"], sort=True):
        rows.append(_figures(group, {"trace": trace, "requests": len(group),
                                     "unrecorded_prefix_tokens": prefix.get(run_id)}))
    if rows:
        rows.append(_figures(requests, {"trace": "total", "requests": len(requests),
                                        "unrecorded_prefix_tokens": None}))
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _figures(group: pd.DataFrame, row: dict[str, Any]) -> dict[str, Any]:
    for name in FIGURES:
        simulated = pd.to_numeric(group[name], errors="coerce")
        recorded = pd.to_numeric(group[f"recorded_{name}"], errors="coerce")
        both = simulated.notna() & recorded.notna()
        row[f"simulated_{name}"] = simulated[both].sum() if both.any() else None
        row[f"recorded_{name}"] = recorded[both].sum() if both.any() else None
        total = row[f"recorded_{name}"]
        row[f"{name}_ratio"] = row[f"simulated_{name}"] / total if total else None
    return row


def worst_requests(requests: pd.DataFrame, count: int = WORST) -> pd.DataFrame:
    """The requests whose simulated cost (or, without prices, cache reads) differs most from the recorded one."""
    if requests.empty:
        return requests
    by_cost = pd.to_numeric(requests["cost_usd"], errors="coerce") - \
        pd.to_numeric(requests["recorded_cost_usd"], errors="coerce")
    by_reads = pd.to_numeric(requests["cached_tokens"], errors="coerce") - \
        pd.to_numeric(requests["recorded_cached_tokens"], errors="coerce")
    gap = by_cost.abs() if by_cost.notna().any() else by_reads.abs()
    return requests.assign(difference=gap).nlargest(count, "difference")


def write_calibration(results_dir: str | Path) -> str:
    """calibration.csv (per trace and total) and calibration_requests.csv (every compared request with its
    reasons) in the results directory; returns the text to print (calibration_text)."""
    requests = compared_requests(results_dir)
    table = calibration_table(requests, runs_frame(results_dir))
    table.to_csv(Path(results_dir) / CALIBRATION_FILE, index=False)
    requests.to_csv(Path(results_dir) / CALIBRATION_REQUESTS_FILE, index=False)
    return calibration_text(table, requests)


def _ratio(value: Any) -> str:
    return "-" if value is None or pd.isna(value) else f"{value:.2f}"


def calibration_text(table: pd.DataFrame, requests: pd.DataFrame, limit: int = 20) -> str:
    """The table as printed: ratios per trace (at most `limit` traces, then the total), then the worst requests."""
    if table.empty:
        return "Calibration: no replayed trace records its provider's usage; nothing to compare."
    header = ["trace", "requests", "prefix", *(f"{LABELS[name]} sim/rec" for name in FIGURES)]
    traces = table[table["trace"] != "total"]
    shown = pd.concat([traces.head(limit), table[table["trace"] == "total"]])
    rows = []
    for row in shown.to_dict("records"):
        prefix = row["unrecorded_prefix_tokens"]
        rows.append([str(row["trace"]), str(row["requests"]), "-" if prefix is None or pd.isna(prefix)
                     else f"{int(prefix):,}", *(_ratio(row[f"{name}_ratio"]) for name in FIGURES)])
    widths = [max(len(cells[i]) for cells in [header, *rows]) for i in range(len(header))]
    lines = ["Calibration (simulated / recorded, same requests; cost at the recorded model's list prices)"]
    lines += ["  ".join(cell.rjust(width) if i else cell.ljust(width) for i, (cell, width) in
                        enumerate(zip(cells, widths))) for cells in [header, *rows]]
    if len(traces) > limit:
        lines.append(f"... {len(traces) - limit} more traces in {CALIBRATION_FILE}")
    lines.append("\nWhere they differ most (every request with its reasons: "
                 f"{CALIBRATION_REQUESTS_FILE}; reasons: docs/validity.md#calibration-against-real-bills)")
    for row in worst_requests(requests).to_dict("records"):
        cost = (f", cost {row['cost_usd']:.4f} vs {row['recorded_cost_usd']:.4f} USD"
                if pd.notna(row["cost_usd"]) and pd.notna(row["recorded_cost_usd"]) else "")
        lines.append(f"  {row['task_id']} message {int(row['trace_index'])}: input {int(row['input_tokens']):,} vs "
                     f"{int(row['recorded_input_tokens']):,}, cache read {int(row['cached_tokens'] or 0):,} vs "
                     f"{int(_number(row['recorded_cached_tokens'])):,}{cost}: {row['reasons'] or 'unexplained'}")
    return "\n".join(lines)
