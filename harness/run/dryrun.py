"""`--dry-run`: what an invocation would run and roughly what it would cost, before it spends anything.

The estimate comes from the mock's own behaviour on exactly the selected cells: each
profile whose model is real is replaced by the simulated agent (or summarizer), billed at that model's
prices from litellm's cost map and given that model's input window; the matrix then runs in-process in a
temporary directory. Nothing is written under --out, no response cache is touched and no real model is
called, so no API key is needed. A real model takes other steps than the mock, so the figures are the
mock's trajectory priced as the model, not a quote.
"""
from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from harness.core.errors import ConfigError
from harness.core.numbers import USD

SUMMARY_PROFILE = "summary"
SHOWN_RUN_IDS = 5


def provider_cache_style(model: str) -> str:
    """How the model's provider caches prompts, as the mock simulates it: Anthropic's explicit
    breakpoints with write premiums for Claude, OpenAI's breakpoints with write prices for its GPT-5.6 family and
    later, else automatic prefix caching (OpenAI-style)."""
    import litellm

    from harness.models import openai_breakpoints

    entry = litellm.model_cost.get(model) or litellm.model_cost.get(model.split("/", 1)[-1]) or {}
    provider = str(entry.get("litellm_provider", ""))
    if "anthropic" in provider or "claude" in model.lower():
        return "anthropic"
    return openai_breakpoints.STYLE if openai_breakpoints.takes_breakpoints(model) else "openai"


def stand_in_profiles(profiles: dict[str, dict[str, Any]], cache_style: str | None = None) -> dict[str, dict[str, Any]]:
    """The profiles with every real model replaced by the mock, priced, windowed and cached as that model
    (`cache_style`: the user's --cache-style, else the provider's)."""
    from harness.models.llm import LLMProfile, serves_mock
    from harness.models.usage import DEFAULT_PRICE_MODEL, Pricing

    replaced = {}
    for name, profile in profiles.items():
        if not isinstance(profile, dict) or str(profile.get("model", "")).startswith("mock/"):
            replaced[name] = copy.deepcopy(profile)
            continue
        model = str(profile.get("model"))
        served = serves_mock(model, profile.get("api_base"))  # serve-mock's mock bills as the in-process one
        price_model = profile.get("price_model") or (DEFAULT_PRICE_MODEL if served else model)
        if Pricing.for_model(price_model) is None:
            raise ConfigError(f"--dry-run: profiles.{name}: model {model!r} has no prices in litellm's cost map; "
                              "give the model to bill as with --price-model")
        window = LLMProfile(model=model, max_input_tokens=profile.get("max_input_tokens")).input_budget()
        mock: dict[str, Any] = {"cache": cache_style or provider_cache_style(price_model),
                                **({"window": window} if window else {})}
        replaced[name] = {"model": "mock/agent" if name == "main" else "mock/summarizer", "mock": mock,
                          "price_model": price_model,
                          **{key: profile[key] for key in ("retry", "cache_policy") if key in profile}}
    return replaced


def estimate_text(rows: list[dict[str, Any]], profiles: dict[str, dict[str, Any]],
                  max_total_cost_usd: float | None = None) -> str:
    """The cells (strategy x family counts, the first run ids) and the mock's tokens and cost, priced.
    `rows` in the matrix's order (`in_matrix_order`)."""
    main = profiles["main"]
    cells = Counter((row["strategy"], row["family"]) for row in rows)
    strategies = sorted({s for s, _ in cells})
    families = sorted({f for _, f in cells})
    width = max([len("strategy")] + [len(s) for s in strategies])
    seeds = len({row["seed"] for row in rows})
    axis = len({row.get("window") for row in rows})
    at = f", {_count(axis, 'window', '', 's')}" if axis > 1 else ""
    lines = [f"dry run: {_count(len(rows), 'cell', '', 's')} ({_count(len(strategies), 'strateg', 'y', 'ies')} x "
             f"{_count(len(families), 'famil', 'y', 'ies')}, {_count(seeds, 'seed', '', 's')}{at}); "
             "nothing was written and no real model was called", "",
             f"{'strategy':{width}s}  " + "  ".join(f"{f:>{max(len(f), 5)}s}" for f in families) + "  total"]
    for strategy in strategies:
        counts = [cells.get((strategy, f), 0) for f in families]
        lines.append(f"{strategy:{width}s}  " + "  ".join(f"{c:>{max(len(f), 5)}d}" for c, f in zip(counts, families))
                     + f"  {sum(counts):5d}")
    shown = ", ".join(row["run_id"] for row in rows[:SHOWN_RUN_IDS])
    lines += ["", f"first run ids: {shown}{', ...' if len(rows) > SHOWN_RUN_IDS else ''}", ""]
    total = {key: sum(row.get(key) or 0 for row in rows)
             for key in ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens")}
    requests = sum(row.get("requests") or 0 for row in rows)
    side = sum(row.get("summarizer_requests") or 0 for row in rows)
    cost = _sum(rows, "cost_usd")
    uncached = _sum(rows, "cost_usd_uncached")
    from harness.models.usage import DEFAULT_PRICE_MODEL
    from harness.models.mock import DEFAULT_MOCK_WINDOW

    billed = main.get("price_model") or main.get("mock", {}).get("price_model", DEFAULT_PRICE_MODEL)
    style = main.get("mock", {}).get("cache", "anthropic")
    # the window decides where runs overflow; a window axis has several (the rows say which each run had)
    windows = sorted({row["window"] for row in rows if row.get("window")}) or [
        main.get("mock", {}).get("window") or DEFAULT_MOCK_WINDOW]
    from harness.models.cache_policy import policy_label, uncached_note

    note = uncached_note(main)
    lines += [f"estimate from the mock agent's own runs of these cells, billed as {billed}, "
              f"{style}-style prompt caching, {_windows_text(windows)}:",
              f"  cache policy  {policy_label(main.get('cache_policy'))} (docs/caching.md)",
              f"  requests      {requests:,} to the agent, {side:,} to summarizers",
              f"  input tokens  {total['input_tokens']:,} (cached {total['cached_tokens']:,}, "
              f"cache writes {total['cache_write_tokens']:,})",
              f"  output tokens {total['output_tokens']:,}",
              f"  cost          {_usd(cost)} with prompt caching, {_usd(uncached)} without"]
    if note:
        lines.append(f"  NOTE: {note}")
    if max_total_cost_usd is not None:
        lines.append(f"  --max-total-cost-usd {max_total_cost_usd:g}: no run starts once that much is spent")
    lines.append("A real model takes other steps than the mock (more or fewer requests, other outputs), "
                 "so its bill differs: treat this as the order of magnitude.")
    return "\n".join(lines)


def in_matrix_order(rows: list[dict[str, Any]], config: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows as the matrix lists its cells (window, then task, strategy and seed), not as they finished."""
    windows = {window: i for i, window in enumerate(config.get("windows") or [])}
    tasks = {task["task_id"]: i for i, task in enumerate(config["tasks"])}
    strategies = {spec["label"]: i for i, spec in enumerate(config["strategies"])}
    return sorted(rows, key=lambda row: (windows.get(row.get("window"), 0), tasks[row["task_id"]],
                                         strategies[row["strategy"]], row["seed"]))


def _windows_text(windows: list[int]) -> str:
    """`a 32,000-token window`, or the windows of a window axis."""
    if len(windows) == 1:
        return f"a {windows[0]:,}-token window"
    return f"windows of {', '.join(f'{window:,}' for window in windows)} tokens (every cell at each)"


def _count(n: int, stem: str, one: str, many: str) -> str:
    return f"{n} {stem}{one if n == 1 else many}"


def _sum(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [row.get(key) for row in rows]
    return None if any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]


def _usd(value: float | None) -> str:
    return USD(value, "unknown (no prices)")

