"""Bootstrap statistics for comparing strategies (the protocol of "The Complexity Trap").

Every interval is a seeded percentile bootstrap over runs, so a report is reproducible
bit for bit. Paired differences compare two strategies on the same (task_id, seed)
cells only: the task's difficulty cancels out, which a difference of means would not do.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
LEVEL = 0.95
PAIR_KEYS = ("task_id", "seed")


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its bootstrap interval; `n` is the number of observations used."""

    mean: float
    lo: float
    hi: float
    n: int


NAN_ESTIMATE = Estimate(float("nan"), float("nan"), float("nan"), 0)


def _resample_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _interval(stats: np.ndarray) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2 * 100
    lo, hi = np.percentile(stats, [tail, 100 - tail])
    return float(lo), float(hi)


def bootstrap_mean(values: Sequence[float] | pd.Series, *, seed: int = DEFAULT_SEED,
                   resamples: int = DEFAULT_RESAMPLES) -> Estimate:
    """Mean of the known values and its 95% percentile-bootstrap interval (NaN when none is known)."""
    data = pd.to_numeric(pd.Series(values, dtype="object"), errors="coerce").dropna().to_numpy(dtype=float)
    if data.size == 0:
        return NAN_ESTIMATE
    means = data[_resample_indices(data.size, resamples, seed)].mean(axis=1)
    lo, hi = _interval(means)
    return Estimate(float(data.mean()), lo, hi, int(data.size))


def bootstrap_ratio(numerators: Sequence[float] | pd.Series, denominators: Sequence[float] | pd.Series, *,
                    seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES) -> Estimate:
    """sum(numerators) / sum(denominators) over runs (e.g. cached / input tokens), resampling whole runs."""
    frame = pd.DataFrame({"num": pd.to_numeric(pd.Series(numerators, dtype="object"), errors="coerce"),
                          "den": pd.to_numeric(pd.Series(denominators, dtype="object"), errors="coerce")}).dropna()
    num, den = frame["num"].to_numpy(dtype=float), frame["den"].to_numpy(dtype=float)
    if num.size == 0 or den.sum() <= 0:
        return NAN_ESTIMATE
    index = _resample_indices(num.size, resamples, seed)
    den_sums = den[index].sum(axis=1)
    ratios = np.divide(num[index].sum(axis=1), den_sums, out=np.full(resamples, np.nan), where=den_sums > 0)
    lo, hi = _interval(ratios[~np.isnan(ratios)])
    return Estimate(float(num.sum() / den.sum()), lo, hi, int(num.size))


def paired_frame(runs: pd.DataFrame, strategy: str, baseline: str, metric: str) -> pd.DataFrame:
    """Rows of (task_id, seed) run by both strategies, with both values of `metric` and their difference."""
    columns = [*PAIR_KEYS, metric]
    ours = runs.loc[runs["strategy"] == strategy, columns]
    theirs = runs.loc[runs["strategy"] == baseline, columns]
    pairs = ours.merge(theirs, on=list(PAIR_KEYS), suffixes=("", "_baseline"), validate="one_to_one")
    pairs[metric] = pd.to_numeric(pairs[metric], errors="coerce")
    pairs[f"{metric}_baseline"] = pd.to_numeric(pairs[f"{metric}_baseline"], errors="coerce")
    pairs = pairs.dropna(subset=[metric, f"{metric}_baseline"])
    pairs["diff"] = pairs[metric].astype(float) - pairs[f"{metric}_baseline"].astype(float)
    return pairs.sort_values(list(PAIR_KEYS)).reset_index(drop=True)


def paired_difference(runs: pd.DataFrame, strategy: str, baseline: str, metric: str, *,
                      seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES) -> Estimate:
    """Mean of (strategy - baseline) over the same task_id and seed, with its bootstrap interval."""
    return bootstrap_mean(paired_frame(runs, strategy, baseline, metric)["diff"], seed=seed, resamples=resamples)


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
