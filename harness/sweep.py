"""Threshold sweeps: a grid over one strategy's parameters, each point a labelled StrategySpec.

A grid names dotted keys into the strategy's config (`keep_last`, `stages.0.level`, ...) and
the values to try. Every point's strategy is built (so validated) before any model call.
The sweep runs like `ctxbench run` and writes, next to the usual layout, `sweep.json` (the
grid) and `tuning.csv` (one row per point); the recommended point has the highest success
rate, then the lowest mean cost, then comes first in the grid.
"""
from __future__ import annotations

import copy
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import yaml

from harness.config import load_data_file
from harness.errors import ConfigError
from harness.report import markdown
from harness.secrets import is_secret_path, redact, remember
from harness.stats import pareto_front
from strategies import StrategySpec, build_strategy

SWEEP_FILE = "sweep.json"
TUNING_FILE = "tuning.csv"
GRID_FILE_KEYS = {"strategy", "config", "label", "grid"}


@dataclass
class Grid:
    """One strategy, its base config, and the values to try for each dotted key."""

    strategy: str
    axes: dict[str, list[Any]]
    base: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def prefix(self) -> str:
        return self.label or self.strategy


def split_values(text: str) -> list[str]:
    """Split on commas outside brackets and quotes, so `[0.7,0.9],[0.8]` is two values."""
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts]


def _parse_value(key: str, text: str) -> Any:
    """JSON first (so 1e3 is a number), then YAML (bare words, quoted strings)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return yaml.safe_load(text) if text else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--grid {key}: cannot read value {text!r}: {exc}") from exc


def parse_grid_args(items: Iterable[str]) -> dict[str, list[Any]]:
    """`key=v1,v2` items -> {key: [v1, v2]}; values are JSON or YAML (numbers, booleans, lists, words)."""
    axes: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise ConfigError(f"--grid {item!r}: expected key=value1,value2,...")
        if key in axes:
            raise ConfigError(f"--grid: key {key!r} given twice")
        axes[key] = [_parse_value(key, value) for value in split_values(values)]
        remember({key: axes[key]})  # a secret-named key's values stay out of every output
    return axes


def load_grid_file(path: str | Path) -> dict[str, Any]:
    """A YAML/JSON grid file: {strategy, config (base), label, grid: {dotted key: [values]}}."""
    data = load_data_file(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with keys {sorted(GRID_FILE_KEYS)}")
    unknown = sorted(set(data) - GRID_FILE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; known keys: {sorted(GRID_FILE_KEYS)}")
    if not isinstance(data.get("grid") or {}, dict):
        raise ConfigError(f"{path}: 'grid' must be a mapping of dotted key to a list of values, got {data['grid']!r}")
    return data


def make_grid(strategy: str | None, axes: dict[str, Any], base: Any = None, label: str | None = None,
              where: str = "sweep") -> Grid:
    """Check the grid's shape (not yet the keys' meaning: `validate_grid` builds each point)."""
    if not strategy or not isinstance(strategy, str):
        raise ConfigError(f"{where}: name the strategy to sweep (--strategy NAME or 'strategy:' in the grid file)")
    if not isinstance(axes, dict) or not axes:
        raise ConfigError(f"{where}: the grid is empty; give at least one key=value1,value2")
    for key, values in axes.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}: grid key {key!r}: expected a non-empty list of values, got {values!r}")
    if base is not None and not isinstance(base, dict):
        raise ConfigError(f"{where}: the base config must be a mapping, got {base!r}")
    if label is not None and not isinstance(label, str):
        raise ConfigError(f"{where}: the label must be a string, got {label!r}")
    return Grid(strategy=strategy, axes={str(k): list(v) for k, v in axes.items()}, base=dict(base or {}),
                label=label or "")


def set_dotted(config: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of `config` with `value` at dotted `key`; digits index into lists (`with.0.config.n`)."""
    result = copy.deepcopy(config)
    parts = key.split(".")
    node: Any = result
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"sweep: grid key {key!r}: {part!r} is not an index of a list of {len(node)}")
            index: Any = int(part)
        elif isinstance(node, dict):
            index = part
            if not last and index not in node:
                node[index] = {}
        else:
            raise ConfigError(f"sweep: grid key {key!r}: {'.'.join(parts[:depth])!r} is {node!r}, not a mapping")
        if last:
            node[index] = copy.deepcopy(value)
        else:
            node = node[index]
    return result


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def shown_value(key: str, values: list[Any], index: int) -> Any:
    """The value at `index` of axis `key` as labels, sweep.json and tuning.csv show it: a secret (a
    secret-named key's, or one inside the value) as `<redacted-N>`, N its 1-based place on the axis,
    so the points stay apart without holding the value (issue 20 part 3)."""
    value = values[index]
    if is_secret_path(key) or redact(value) != value:
        return f"<redacted-{index + 1}>"
    return value


def shown_axes(grid: Grid) -> dict[str, list[Any]]:
    """The grid's axes with every secret value replaced (`shown_value`)."""
    return {key: [shown_value(key, values, i) for i in range(len(values))] for key, values in grid.axes.items()}


def grid_points(grid: Grid) -> list[tuple[dict[str, Any], StrategySpec]]:
    """Every combination of the grid's values, in order, as (params as shown, labelled spec)."""
    points = []
    shown = shown_axes(grid)
    for indexes in itertools.product(*(range(len(values)) for values in grid.axes.values())):
        config = grid.base
        for (key, values), index in zip(grid.axes.items(), indexes):
            config = set_dotted(config, key, values[index])
        params = {key: shown[key][index] for key, index in zip(grid.axes, indexes)}
        label = f"{grid.prefix}[{','.join(f'{k}={_show(v)}' for k, v in params.items())}]"
        points.append((params, StrategySpec(name=grid.strategy, config=config, label=label)))
    return points


def validate_grid(grid: Grid) -> list[tuple[dict[str, Any], StrategySpec]]:
    """Build the base, then each key alone, then every point: errors name the key or point at fault."""
    build_strategy(StrategySpec(name=grid.strategy, config=grid.base, label=f"{grid.prefix} (base config)"))
    for key, values in grid.axes.items():
        for index, value in enumerate(values):
            try:
                build_strategy(StrategySpec(name=grid.strategy, config=set_dotted(grid.base, key, value),
                                            label=grid.prefix))
            except ConfigError as exc:
                shown = shown_value(key, values, index)
                raise ConfigError(f"sweep: grid key {key!r} = {_show(shown)}: {exc}") from exc
    points = grid_points(grid)
    for _, spec in points:
        build_strategy(spec)
    return points


def sweep_file_text(grid: Grid, points: list[tuple[dict[str, Any], StrategySpec]]) -> str:
    """sweep.json: the grid and its points' labels and values (secrets redacted), which marks a results
    directory as a sweep's."""
    data = {"strategy": grid.strategy, "base": redact(grid.base), "grid": shown_axes(grid),
            "points": [{"label": spec.display, "params": params} for params, spec in points]}
    return json.dumps(data, indent=2, default=str) + "\n"


def recommend(tuning: pd.DataFrame) -> str | None:
    """The highest success rate, then the lowest mean cost (unknown cost last), then grid order."""
    if tuning.empty:
        return None
    ranked = tuning.assign(_order=range(len(tuning))).sort_values(
        ["success_rate", "mean_cost_usd", "_order"], ascending=[False, True, True], na_position="last", kind="stable")
    return str(ranked.iloc[0]["label"])


TUNING_COLUMNS = ["runs", "success_rate", "success_rate_lo", "success_rate_hi", "mean_cost_usd", "mean_cost_usd_lo",
                  "mean_cost_usd_hi", "cost_per_success", "mean_input_tokens", "cache_hit_rate", "mean_resets",
                  "mean_compactions"]


def tuning_table(summary: pd.DataFrame, sweep: dict[str, Any]) -> pd.DataFrame:
    """One row per grid point that has runs: its parameters, summary figures, Pareto and recommended flags."""
    overall = summary[summary["family"] == "all"].set_index("strategy")
    rows = []
    for point in sweep["points"]:
        if point["label"] in overall.index:
            params = {key: _show(value) if isinstance(value, (list, dict)) else value
                      for key, value in point["params"].items()}
            rows.append({"label": point["label"], **params, **overall.loc[point["label"], TUNING_COLUMNS].to_dict()})
    tuning = pd.DataFrame(rows)
    if tuning.empty:
        return tuning
    front = pareto_front(tuning, "mean_cost_usd", "success_rate")
    tuning["runs"] = tuning["runs"].astype(int)
    tuning["pareto"] = tuning.index.isin(front.index)
    tuning["recommended"] = tuning["label"] == recommend(tuning)
    return tuning


@dataclass
class TuningOutput:
    markdown: list[str] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)


def write_tuning(results_dir: str | Path, summary: pd.DataFrame) -> TuningOutput:
    """For a sweep's results (sweep.json present): tuning.csv, its Pareto plot and a report section."""
    from harness.plots import plot_success_vs_cost, save_plot

    path = Path(results_dir) / SWEEP_FILE
    if not path.exists():
        return TuningOutput()
    sweep = json.loads(path.read_text(encoding="utf-8"))
    tuning = tuning_table(summary, sweep)
    tuning.to_csv(Path(results_dir) / TUNING_FILE, index=False)
    if tuning.empty:
        return TuningOutput(["## Tuning", "", "No grid point has finished runs yet.", ""])
    best = recommend(tuning)
    plot = save_plot(results_dir, "tuning_pareto",
                     lambda ax: plot_success_vs_cost(ax, tuning, label="label", highlight=best,
                                                     title=f"Sweep of {sweep['strategy']}: {', '.join(sweep['grid'])}"))
    shown = tuning.drop(columns=[c for c in tuning.columns if c.endswith(("_lo", "_hi"))])
    return TuningOutput(["## Tuning", "", f"Recommended point (highest success, then lowest cost): **{best}**", "",
                         markdown(list(shown.columns), [[_cell(v) for v in row] for row in shown.itertuples(index=False)]),
                         ""], [plot])


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
