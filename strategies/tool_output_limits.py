"""ToolOutputLimits (seed 002): move oversized tool results out of the window, losslessly.

A result over `max_chars` characters (20,000 by default, as in the seed) is saved whole to
a per-run store; the model gets its head, cut at a line end, then a newline and a last line
saying how to read on with `read_tool_result` (the contract other helpers parse). It costs no model call. The full text is also recorded in
the `tool_output_offloaded` event, so the store is rebuilt from the log on replay and an
audit can see exactly what was held back. Compose it with any strategy through `with`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.config import require
from strategies.base import Strategy
from tasks.base import ToolCall, ToolResult, ToolSpec, require_args, tool_error

if TYPE_CHECKING:
    from harness.context import RunContext

READ_TOOL = "read_tool_result"
DEFAULT_LIMIT = 20_000

TRUNCATED_LINE = ("[Output truncated: {shown} of {total} characters shown. Full output saved as {result_id}; "
                  "call read_tool_result(result_id=\"{result_id}\", offset={shown}) to read more.]")
CHUNK_HEADER = "[{result_id}: characters {offset}-{end} of {total}]"
MORE_LINE = "[More: call read_tool_result(result_id=\"{result_id}\", offset={end}) to continue.]"

READ_SPEC = ToolSpec(
    READ_TOOL,
    "Read part of a tool output that was too long to show in full. Pass the result_id named in the "
    "truncation notice and the character offset to start from.",
    {"type": "object",
     "properties": {"result_id": {"type": "string", "description": "id from the truncation notice"},
                    "offset": {"type": "integer", "description": "first character to return (default 0)"},
                    "limit": {"type": "integer", "description": f"characters to return (default {DEFAULT_LIMIT})"}},
     "required": ["result_id"]},
)


@dataclass
class ToolOutputLimitsConfig:
    max_chars: int = 20_000  # results longer than this are offloaded; also the most a page returns

    def __post_init__(self) -> None:
        require(self.max_chars >= 1, f"max_chars must be at least 1, got {self.max_chars}")


class ToolOutputLimits(Strategy):
    name = "tool_output_limits"
    Config = ToolOutputLimitsConfig

    def __init__(self, config: ToolOutputLimitsConfig | None = None):
        super().__init__(config)
        self.store: dict[str, str] = {}

    def tools(self) -> list[ToolSpec]:
        return [READ_SPEC]

    def on_run_start(self, ctx: "RunContext") -> None:
        self.store = {}

    def transform_tool_result(self, ctx: "RunContext", call: ToolCall, result: ToolResult) -> ToolResult:
        content = result.content
        if call.name == READ_TOOL or len(content) <= self.config.max_chars:
            return result
        result_id = f"result-{len(self.store) + 1}"
        self.store[result_id] = content
        head = content[: self.config.max_chars]
        line_end = head.rfind("\n")
        if line_end >= self.config.max_chars // 2:
            head = head[: line_end + 1]
        shown = len(head)
        ctx.emit("tool_output_offloaded", result_id=result_id, tool=call.name, tool_call_id=call.id,
                 total_chars=len(content), shown_chars=shown, content=content)
        notice = TRUNCATED_LINE.format(shown=shown, total=len(content), result_id=result_id)
        return ToolResult(head + "\n" + notice, is_error=result.is_error)

    def handle_tool_call(self, ctx: "RunContext", call: ToolCall) -> ToolResult | None:
        if call.name != READ_TOOL:
            return None
        problem = require_args(call, READ_SPEC)
        if problem is not None:
            return problem
        args = call.args or {}
        result_id = args["result_id"]
        offset = args.get("offset", 0)
        limit = args.get("limit", DEFAULT_LIMIT)
        content = self.store.get(result_id)
        if content is None:
            known = ", ".join(self.store) or "none yet"
            return tool_error(f"{READ_TOOL}: no saved output {result_id!r}; saved outputs: {known}")
        if not 0 <= offset < len(content):
            return tool_error(f"{READ_TOOL}: offset {offset} is outside {result_id} (0 to {len(content) - 1})")
        if limit < 1:
            return tool_error(f"{READ_TOOL}: limit must be at least 1, got {limit}")
        end = min(offset + min(limit, self.config.max_chars), len(content))
        text = CHUNK_HEADER.format(result_id=result_id, offset=offset, end=end, total=len(content)) + "\n"
        text += content[offset:end]
        if end < len(content):
            text += "\n" + MORE_LINE.format(result_id=result_id, end=end)
        return ToolResult(text)
