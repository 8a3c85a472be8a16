"""Strategies whose own code is broken, for the harness's validation: each must make
`ctxbench run` exit 2 naming the strategy and the method, before any model call, never a traceback."""
from __future__ import annotations

from strategies.base import Strategy


class InitRaises(Strategy):
    name = "init_raises"

    def __init__(self, config=None):
        raise ValueError("cannot start")


class ExitsOnInit(Strategy):
    name = "exits_on_init"

    def __init__(self, config=None):
        raise SystemExit(3)


class ToolsRaise(Strategy):
    name = "tools_raise"

    def tools(self):
        raise KeyError("no tool list")


class ProfilesRaise(Strategy):
    name = "profiles_raise"

    def profiles_needed(self):
        raise RuntimeError("no profiles")


class PlainConfig:
    """Not a dataclass: build_dataclass cannot read options into it."""


class NotDataclassConfig(Strategy):
    name = "not_dataclass_config"
    Config = PlainConfig


NOT_A_CLASS = 3
