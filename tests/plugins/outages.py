"""A strategy whose runs crash while CTXBENCH_TEST_CRASH is set: a non-transient `error` row that a
later `--resume --rerun-errors` can turn into a result (issue 20 part 4)."""
from __future__ import annotations

import os

from strategies.base import Strategy

CRASH_FLAG = "CTXBENCH_TEST_CRASH"


class CrashWhileFlagged(Strategy):
    def before_request(self, ctx):
        if os.environ.get(CRASH_FLAG):
            raise RuntimeError("crashed on purpose")
