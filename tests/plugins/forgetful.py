"""Test strategies that a user could write: they plug in by import path."""
from __future__ import annotations

from dataclasses import dataclass

from strategies.base import Strategy


@dataclass
class PlaceholderConfig:
    placeholder: str = "[tool result removed]"


class PlaceholderEverything(Strategy):
    """Replaces every tool result with a placeholder before each request: deletes all evidence."""

    name = "placeholder_everything"
    Config = PlaceholderConfig

    def before_request(self, ctx):
        ops = [{"op": "replace", "id": i,
                "message": {**ctx.view.messages[i], "content": self.config.placeholder}}
               for i in ctx.view.ids
               if ctx.view.messages[i].get("role") == "tool" and not ctx.view.is_replaced(i)]
        if ops:
            ctx.emit("compaction", step="placeholder_all", view_ops=ops, reclaimed_tokens=0)


class LooksBackInTheLog(Strategy):
    """Reads the run's past events from memory, which a run does not keep: it must be told where they are."""

    name = "looks_back_in_the_log"

    def before_request(self, ctx):
        return ctx.log.events[-1]
