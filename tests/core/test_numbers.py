"""Every printed dollar figure reads one way (harness.core.numbers): four significant digits, never an exponent, never
rounded away. The dry run's estimate, the sweep's recommendation and the report's tables each had their own
format: `$0.00` for a run of a cheap model, `x.xxxx USD` in sweeps, `0.0000` in report.md's columns."""
import math

import pandas as pd

from harness.core import numbers


def test_dollars_keep_four_significant_digits_at_every_scale():
    assert numbers.USD(0.0041) == "$0.004100" and numbers.USD(0.00001234) == "$0.00001234"
    assert numbers.USD(2.5) == "$2.500" and numbers.USD(1597.2) == "$1,597" and numbers.USD(0) == "$0"
    assert numbers.SIGNED_USD(-0.1) == "-$0.1000" and numbers.SIGNED_USD(0.02) == "+$0.02000"
    assert numbers.DOLLARS(0.00001234) == "0.00001234"  # a column whose header says the unit


def test_missing_values_read_as_the_callers_missing_text():
    for missing in (None, float("nan"), pd.NA, pd.NaT):
        assert numbers.USD(missing) == numbers.MISSING and numbers.USD(missing, "unknown") == "unknown"
    assert numbers.DOLLARS.interval(math.nan, 1, 2, "—") == "—"
    assert numbers.USD.interval(0.5, math.nan, float("inf")) == "$0.5000 [n/a, inf]"


def test_a_cheap_models_dry_run_estimate_is_not_rounded_to_zero():
    from harness.run.dryrun import _usd

    assert _usd(0.0041) == "$0.004100"  # was "$0.00"
    assert _usd(None) == "unknown (no prices)"


def test_report_tables_keep_a_cheap_models_costs():
    from harness.results.report import cost_table, summarize

    runs = pd.DataFrame([{"run_id": f"t{i}--s--s0", "task_id": f"t{i}", "family": "f", "strategy": "s", "seed": 0,
                          "success": True, "score": 1.0, "input_tokens": 100, "cached_tokens": 0,
                          "cost_usd": 0.00001234, "cost_usd_uncached": 0.00002, "requests": 1, "agent_resets": 0,
                          "hard_resets": 0, "compactions": 0, "rereads": 0, "termination": "submitted",
                          "error": None, "detail": {}} for i in range(2)])
    row = cost_table(summarize(runs)).splitlines()[2]
    assert row.startswith("| s | 0.00001234 [0.00001234, 0.00001234] |")  # was 0.0000 [0.0000, 0.0000]
