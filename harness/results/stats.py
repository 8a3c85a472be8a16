"""Bootstrap statistics for comparing strategies (the protocol of "The Complexity Trap").

Every interval is a seeded percentile bootstrap, so a report is reproducible bit for bit.
The report resamples *tasks*, not runs (a cluster bootstrap over task ids):
the runs of one task under several seeds are correlated draws of one difficulty, so treating
them as independent data would narrow an interval merely by repeating a seed. Each resample
draws task ids with replacement and takes all runs of every drawn task. A mean is then the
ratio of sums (values / runs) over the drawn tasks, a ratio (cached / input tokens, cost /
successes) the ratio of the drawn tasks' sums. Paired differences compare two strategies on
the same (task_id, seed) cells only, so the task's difficulty cancels out, and resample the
task clusters of those pairs.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import pandas as pd

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
LEVEL = 0.95
PAIR_KEYS = ("task_id", "seed")
CLUSTER_KEY = "task_id"  # what the report resamples: a task with all its runs

Values = Sequence[float] | pd.Series


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its bootstrap interval; `n` is the number of observations used."""

    mean: float
    lo: float
    hi: float
    n: int


NAN_ESTIMATE = Estimate(float("nan"), float("nan"), float("nan"), 0)


@lru_cache(maxsize=2)
def _resample_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """The clusters each resample draws. A report's strategies share their tasks, so consecutive intervals draw
    the same (n, seed): kept (read-only), not drawn again."""
    index = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    index.flags.writeable = False
    return index


RESAMPLE_BLOCK = 256  # resamples summed at a time: the gathered values of every resample at once would be
# resamples x clusters floats twice over (hundreds of MB for thousands of tasks)


def _resampled_sums(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Each resample's sum of `values` over the clusters it drew (row by row as values[index].sum(axis=1))."""
    return np.concatenate([values[index[start:start + RESAMPLE_BLOCK]].sum(axis=1)
                           for start in range(0, len(index), RESAMPLE_BLOCK)])


def _percentile(ordered: np.ndarray, q: float) -> float:
    """numpy's linear percentile of sorted values, also where they hold +inf (numpy gives NaN there)."""
    position = q / 100 * (ordered.size - 1)
    below = int(np.floor(position))
    low, high = ordered[below], ordered[min(below + 1, ordered.size - 1)]
    fraction = position - below
    return float(low if fraction == 0 or low == high else low + (high - low) * fraction)


def _interval(stats: np.ndarray) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2 * 100
    ordered = np.sort(stats)
    return _percentile(ordered, tail), _percentile(ordered, 100 - tail)


def _numeric(values: Values) -> pd.Series:
    return pd.to_numeric(pd.Series(values, dtype="object"), errors="coerce").reset_index(drop=True)


def _ratio_of_sums(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den; a zero denominator gives +inf over a positive numerator (cost with no success) and
    NaN over zero (nothing to measure), which the interval leaves out."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.where(num > 0, np.inf, np.nan))


def bootstrap_ratio(numerators: Values, denominators: Values, *, clusters: Sequence | pd.Series | None = None,
                    seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES) -> Estimate:
    """sum(numerators) / sum(denominators) with its 95% interval, resampling clusters (task ids).

    Without `clusters` every observation is its own cluster. A row whose numerator or
    denominator is unknown is left out. The estimate is NaN when the denominators sum to 0
    (e.g. cost per success of a strategy with no success); a resample drawing no success
    counts as +inf, so the upper end says when too few tasks succeed to bound the ratio.
    """
    frame = pd.DataFrame({"num": _numeric(numerators), "den": _numeric(denominators)})
    frame["cluster"] = np.arange(len(frame)) if clusters is None else pd.Series(clusters).reset_index(drop=True)
    frame = frame.dropna(subset=["num", "den"])
    if frame.empty or frame["den"].sum() <= 0:
        return NAN_ESTIMATE
    codes, uniques = pd.factorize(frame["cluster"], sort=True)
    num = np.bincount(codes, weights=frame["num"].to_numpy(dtype=float), minlength=len(uniques))
    den = np.bincount(codes, weights=frame["den"].to_numpy(dtype=float), minlength=len(uniques))
    index = _resample_indices(len(uniques), resamples, seed)
    ratios = _ratio_of_sums(_resampled_sums(num, index), _resampled_sums(den, index))
    lo, hi = _interval(ratios[~np.isnan(ratios)])
    return Estimate(float(num.sum() / den.sum()), lo, hi, len(frame))


def bootstrap_mean(values: Values, *, clusters: Sequence | pd.Series | None = None, seed: int = DEFAULT_SEED,
                   resamples: int = DEFAULT_RESAMPLES) -> Estimate:
    """Mean of the known values and its 95% interval, resampling clusters (NaN when none is known).

    Without `clusters` every value is its own cluster (the plain bootstrap over values)."""
    data = _numeric(values)
    counts = pd.Series(1.0, index=data.index).where(data.notna())
    return bootstrap_ratio(data, counts, clusters=clusters, seed=seed, resamples=resamples)


def pair_keys(runs: pd.DataFrame) -> list[str]:
    """What makes two strategies' runs a pair: task and seed, and the window when runs carry one (a
    window axis runs each task and seed at several)."""
    return [*PAIR_KEYS, *(["window"] if "window" in runs else [])]


def paired_frames(runs: pd.DataFrame, strategy: str, baseline: str, metrics: Sequence[str]) -> dict[str, pd.DataFrame]:
    """paired_frame of each of `metrics`, the two strategies' runs matched once (a report pairs four metrics
    of every strategy: one merge each, not four)."""
    keys = pair_keys(runs)
    columns = [*keys, *metrics]
    ours = runs.loc[runs["strategy"] == strategy, columns]
    theirs = runs.loc[runs["strategy"] == baseline, columns]
    matched = ours.merge(theirs, on=keys, suffixes=("", "_baseline"), validate="one_to_one")
    frames = {}
    for metric in metrics:
        pairs = matched[[*keys, metric, f"{metric}_baseline"]].copy()
        pairs[metric] = pd.to_numeric(pairs[metric], errors="coerce")
        pairs[f"{metric}_baseline"] = pd.to_numeric(pairs[f"{metric}_baseline"], errors="coerce")
        pairs = pairs.dropna(subset=[metric, f"{metric}_baseline"])
        pairs["diff"] = pairs[metric].astype(float) - pairs[f"{metric}_baseline"].astype(float)
        frames[metric] = pairs.sort_values(keys).reset_index(drop=True)
    return frames


def paired_frame(runs: pd.DataFrame, strategy: str, baseline: str, metric: str) -> pd.DataFrame:
    """Rows of (task_id, seed, window) run by both strategies, with both values of `metric` and their difference."""
    return paired_frames(runs, strategy, baseline, [metric])[metric]


def paired_estimate(pairs: pd.DataFrame, *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES) -> Estimate:
    """The mean difference of a paired_frame with its interval, resampling the pairs' tasks."""
    return bootstrap_mean(pairs["diff"], clusters=pairs[CLUSTER_KEY], seed=seed, resamples=resamples)


def paired_difference(runs: pd.DataFrame, strategy: str, baseline: str, metric: str, *,
                      seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES) -> Estimate:
    """Mean of (strategy - baseline) over the same task_id and seed, resampling the pairs' tasks."""
    return paired_estimate(paired_frame(runs, strategy, baseline, metric), seed=seed, resamples=resamples)


def pareto_front(points: pd.DataFrame, cost: str, success: str) -> pd.DataFrame:
    """Points no other point beats on both axes (cost no higher and success no lower, one strictly)."""
    known = points.dropna(subset=[cost, success])
    keep = []
    for index, row in known.iterrows():
        dominated = ((known[cost] <= row[cost]) & (known[success] >= row[success])
                     & ((known[cost] < row[cost]) | (known[success] > row[success]))).any()
        if not dominated:
            keep.append(index)
    return known.loc[keep].sort_values(cost)
