"""Stand-ins for the kinds of cut real strategies make, written to the contracts between helpers.

`TruncateWithPaging` keeps a result's head and offers `read_tool_result` exactly as the
ToolOutputLimits contract words it; `ClampHeadTail` keeps head and tail with no way back;
`ClearOlderTurns` clears tool results of earlier turns (compaction at a turn boundary);
`SlidingWindow` keeps only the latest messages. The task tests use them to show which
family each kind of cut breaks and which it leaves whole.

Misbehaving ones, for the harness's own checks: `ClearInPlace` makes ClearOlderTurns'
cut by editing the messages in place instead of emitting view ops (the run must end in an
error); `ForgetEverything` condenses to the task alone before every request (a condensation loop);
`DropCalls` drops the agent's tool calls but keeps their results (orphans).
"""
from __future__ import annotations

from dataclasses import dataclass

from strategies.base import Strategy
from tasks.base import ToolResult, ToolSpec


@dataclass
class LimitConfig:
    max_chars: int = 20_000


class TruncateWithPaging(Strategy):
    name = "truncate_with_paging"
    Config = LimitConfig

    def __init__(self, config=None):
        super().__init__(config)
        self.saved: dict[str, str] = {}

    def tools(self):
        return [ToolSpec("read_tool_result", "Read more of a saved tool result.",
                         {"type": "object", "properties": {"result_id": {"type": "string"},
                                                           "offset": {"type": "integer"}, "limit": {"type": "integer"}},
                          "required": ["result_id"]})]

    def handle_tool_call(self, ctx, call):
        if call.name != "read_tool_result":
            return None
        args = call.args or {}
        full = self.saved.get(args.get("result_id", ""))
        if full is None:
            return ToolResult("Error: no such result", is_error=True)
        offset, limit = args.get("offset", 0), args.get("limit", 20_000)
        end = min(len(full), offset + limit)
        rid = args["result_id"]
        text = f"[{rid}: characters {offset}-{end} of {len(full)}]\n{full[offset:end]}"
        if end < len(full):
            text += f'\n[More: call read_tool_result(result_id="{rid}", offset={end}) to continue.]'
        return ToolResult(text)

    def transform_tool_result(self, ctx, call, result):
        if call.name == "read_tool_result" or len(result.content) <= self.config.max_chars:
            return result
        rid = f"result_{len(self.saved) + 1}"
        self.saved[rid] = result.content
        shown = self.config.max_chars
        return ToolResult(result.content[:shown] + f"\n[Output truncated: {shown} of {len(result.content)} characters "
                          f"shown. Full output saved as {rid}; call read_tool_result(result_id=\"{rid}\", "
                          f"offset={shown}) to read more.]", result.is_error)


class ClampHeadTail(Strategy):
    name = "clamp_head_tail"
    Config = LimitConfig

    def transform_tool_result(self, ctx, call, result):
        if len(result.content) <= self.config.max_chars:
            return result
        half = self.config.max_chars // 2
        cut = len(result.content) - 2 * half
        return ToolResult(f"{result.content[:half]}\n[... {cut} characters clamped ...]\n{result.content[-half:]}",
                          result.is_error)


@dataclass
class WindowConfig:
    keep_messages: int = 20


class ClearOlderTurns(Strategy):
    """Clears tool results from before the latest user message (what compaction does at a turn boundary)."""

    name = "clear_older_turns"

    def before_request(self, ctx):
        ids = list(ctx.view.ids)
        users = [i for i in ids if ctx.view.messages[i].get("role") == "user"]
        if not users:
            return
        ops = [{"op": "replace", "id": i,
                "message": {**ctx.view.messages[i], "content": "[tool result cleared; call the tool again]"}}
               for i in ids if i < users[-1] and ctx.view.messages[i].get("role") == "tool"
               and not ctx.view.is_replaced(i)]
        if ops:
            ctx.emit("compaction", step="clear_older_turns", view_ops=ops, reclaimed_tokens=0)


class SlidingWindow(Strategy):
    """Keeps the system prompt and the last `keep_messages` messages (a window that slides over everything)."""

    name = "sliding_window"
    Config = WindowConfig

    def before_request(self, ctx):
        ids = list(ctx.view.ids)
        if len(ids) <= self.config.keep_messages + 1:
            return
        kept = ids[-self.config.keep_messages:]
        while kept and ctx.view.messages[kept[0]].get("role") == "tool":
            kept = kept[1:]
        ctx.emit("compaction", step="slide", view_ops=[{"op": "set", "ids": [ids[0], *kept]}], reclaimed_tokens=0)


class PermuteResults(Strategy):
    """Sends the tool results in reverse order under the calls' ids (through `replace` view ops; ids and
    order kept): the latest call is answered by the oldest call's output, and so on.

    Models a strategy that mixes results up; the agent must use a result only for the call it answers."""

    name = "permute_results"

    def before_request(self, ctx):
        tools = [i for i in ctx.view.ids if ctx.view.messages[i].get("role") == "tool"]
        contents = [ctx.view.messages[i].get("content") for i in reversed(tools)]
        ops = [{"op": "replace", "id": i, "message": {**ctx.view.messages[i], "content": content}}
               for i, content in zip(tools, contents) if ctx.view.message(i).get("content") != content]
        if ops:
            ctx.emit("compaction", step="permute_results", view_ops=ops, reclaimed_tokens=0)


class ClearInPlace(Strategy):
    """ClearOlderTurns' cut made by editing each old tool result's dict in place: no view op, no event."""

    name = "clear_in_place"

    def before_request(self, ctx):
        ids = list(ctx.view.ids)
        users = [i for i in ids if ctx.view.messages[i].get("role") == "user"]
        for i in ids:
            if users and i < users[-1] and ctx.view.message(i).get("role") == "tool":
                ctx.view.message(i)["content"] = "[tool result cleared; call the tool again]"


class ForgetEverything(Strategy):
    """Before every request but the first, condenses the view to the system prompt and the task statement."""

    name = "forget_everything"

    def before_request(self, ctx):
        ids = list(ctx.view.ids)
        if ctx.requests and len(ids) > 2:
            ctx.emit("condensation", kind="hard_reset", forgotten_ids=ids[2:], view_ops=[{"op": "set", "ids": ids[:2]}])


class DropCalls(Strategy):
    """Drops the agent's messages that made tool calls, all but the latest, and keeps their results."""

    name = "drop_calls"

    def before_request(self, ctx):
        calls = [i for i in ctx.view.ids if ctx.view.messages[i].get("tool_calls")]
        if len(calls) > 1:
            ctx.emit("compaction", step="drop_calls", view_ops=[{"op": "drop", "ids": calls[:-1]}], reclaimed_tokens=0)
