"""How figures read wherever ctxbench prints them (terminal tables and sentences, report.md, sweeps, dry
runs, notebooks): thousands separators, never an exponent, dollars with four significant digits (costs span
$0.0001 to $1,000 between models and suites), and one text for a figure that is missing. Plain Python:
the command line's dry run formats costs without loading pandas."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

MISSING = "n/a"


def is_missing(value: Any) -> bool:
    """None, NaN, or pandas' NA / NaT (told by type name: pandas is not imported here)."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, float) and math.isnan(value)


def fixed(value: float, decimals: int = 0, signed: bool = False) -> str:
    """`value` with thousands separators and `decimals` decimals; a value that rounds to zero reads `0`,
    never `-0` or `+0`, and `signed` puts `+` before a positive one."""
    if not math.isfinite(value):
        return str(value)
    if round(value, decimals) == 0:
        return f"{0:.{decimals}f}"
    return f"{value:{'+' if signed else ''},.{decimals}f}"


def significant(value: float, digits: int = 4, signed: bool = False) -> str:
    """`value` with `digits` significant digits and never an exponent (0.04591, 12.35, 1,235)."""
    if value == 0 or not math.isfinite(value):
        return fixed(value)
    return fixed(value, max(0, digits - 1 - math.floor(math.log10(abs(value)))), signed)


@dataclass(frozen=True)
class Format:
    """How one kind of figure reads: `number` without its unit, which `prefix`/`suffix` add around it."""

    number: Callable[[float], str]
    prefix: str = ""
    suffix: str = ""

    def __call__(self, value: Any, missing: str = MISSING) -> str:
        if is_missing(value):
            return missing
        text = self.number(float(value))
        sign, text = (text[0], text[1:]) if text[:1] in "+-" else ("", text)
        return f"{sign}{self.prefix}{text}{self.suffix}"

    def interval(self, mean: Any, lo: Any, hi: Any, missing: str = MISSING) -> str:
        """`85% [70, 95]`: the estimate with its unit, then its interval's bounds."""
        if is_missing(mean):
            return missing
        bounds = ", ".join(MISSING if is_missing(b) else self.number(float(b)) for b in (lo, hi))
        return f"{self(mean)} [{bounds}]"


COUNT = Format(fixed)
MEAN = Format(lambda v: fixed(v, 2))
PERCENT = Format(lambda v: fixed(v * 100), suffix="%")
USD = Format(significant, prefix="$")
POINTS = Format(lambda v: fixed(v * 100, signed=True), suffix=" pt")  # a difference of two rates
SIGNED_COUNT = Format(lambda v: fixed(v, signed=True))
SIGNED_USD = Format(lambda v: significant(v, signed=True), prefix="$")
DOLLARS = Format(significant)  # a dollar figure in a column whose header says the unit
