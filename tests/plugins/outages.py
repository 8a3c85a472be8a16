"""A strategy whose runs crash while CTXBENCH_TEST_CRASH is set: with "outage", on a provider outage (as
a strategy's own request meets one after its retries), otherwise on a bug of its own: the transient and
the plain `error` rows, which a later `--resume` (`--rerun-errors`) turns into results."""
from __future__ import annotations

import os

import litellm

from strategies.base import Strategy

CRASH_FLAG = "CTXBENCH_TEST_CRASH"


class CrashWhileFlagged(Strategy):
    def before_request(self, ctx):
        flag = os.environ.get(CRASH_FLAG)
        if flag == "outage":
            raise litellm.ServiceUnavailableError(message="provider down", llm_provider="mock", model="mock/agent")
        if flag:
            raise RuntimeError("crashed on purpose")
