"""Test strategies that misbehave: each raises or edits where a run must contain it."""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import StrategyFailed
from strategies.base import Strategy


@dataclass
class RaiseConfig:
    hook: str = "before_request"  # the hook that raises
    error: str = "SystemExit"  # SystemExit, GeneratorExit, KeyboardInterrupt, ValueError or StrategyFailed
    at_request: int = 1  # hooks given the run's context raise once it has made this many requests


ERRORS = {"SystemExit": SystemExit, "GeneratorExit": GeneratorExit, "KeyboardInterrupt": KeyboardInterrupt,
          "ValueError": ValueError, "StrategyFailed": StrategyFailed}


class RaiseInHook(Strategy):
    """Raises `error` from hook `hook` (once the run has made `at_request` requests)."""

    name = "raise_in_hook"
    Config = RaiseConfig

    def _maybe_raise(self, hook: str, ctx=None) -> None:
        if hook == self.config.hook and (ctx is None or ctx.requests >= self.config.at_request):
            raise ERRORS[self.config.error](f"raised by {hook}")

    def tools(self):  # raising here fails validation (exit 2): a test runs the cell alone to see the run contain it
        self._maybe_raise("tools")
        return []

    def libraries(self):
        self._maybe_raise("libraries")
        return []

    def on_run_start(self, ctx):
        self._maybe_raise("on_run_start")

    def before_request(self, ctx):
        self._maybe_raise("before_request", ctx)

    def after_response(self, ctx, result):
        self._maybe_raise("after_response", ctx)

    def action_payload(self, calls):
        self._maybe_raise("action_payload")
        return None

    def on_context_window_error(self, ctx, error):
        self._maybe_raise("on_context_window_error")
        return False

    def handle_tool_call(self, ctx, call):
        self._maybe_raise("handle_tool_call", ctx)
        return None

    def transform_tool_result(self, ctx, call, result):
        self._maybe_raise("transform_tool_result", ctx)
        return result


class EditResponseToolCalls(Strategy):
    """Edits the response message it is handed in after_response: drops its tool calls."""

    name = "edit_response_tool_calls"

    def after_response(self, ctx, result):
        if result.message.get("tool_calls"):
            result.message["tool_calls"] = []


class ExitsItsProcess(Strategy):
    """Ends the whole process it runs in at its first request (os._exit: no exception, no cleanup)."""

    name = "exits_its_process"

    def before_request(self, ctx):
        import os

        os._exit(3)


class EmitsOddAgentMessage(Strategy):
    """Logs an agent message whose tool_calls are a string, not a list of calls, before its first request."""

    name = "emits_odd_agent_message"

    def before_request(self, ctx):
        if ctx.requests == 0:
            ctx.emit("message", message={"role": "assistant", "content": "", "tool_calls": "garbage"}, origin="agent")
