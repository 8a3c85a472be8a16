"""A test-only masking strategy with one numeric parameter, for sweeps (not a registered strategy)."""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.config import require
from strategies.base import Strategy

PLACEHOLDER = "[Older tool result masked; call the tool again to see it.]"


@dataclass
class KeepLastConfig:
    keep: int = 2

    def __post_init__(self) -> None:
        require(self.keep >= 0, f"keep: expected 0 or more tool results to keep, got {self.keep}")


class KeepLastToolResults(Strategy):
    """Before each request, masks every tool result but the last `keep` ones."""

    name = "keep_last_tool_results"
    Config = KeepLastConfig

    def before_request(self, ctx):
        tools = [i for i in ctx.view.ids if ctx.view.messages[i].get("role") == "tool"]
        older = tools[:len(tools) - self.config.keep] if self.config.keep else tools
        ops = [{"op": "replace", "id": i, "message": {**ctx.view.messages[i], "content": PLACEHOLDER}}
               for i in older if not ctx.view.is_replaced(i)]
        if ops:
            ctx.emit("compaction", step="mask", view_ops=ops, reclaimed_tokens=0)
