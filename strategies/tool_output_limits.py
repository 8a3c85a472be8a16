"""ToolOutputLimits (seed 002): move oversized tool results out of the window, losslessly.

A result over `max_chars` characters (20,000, as the seed states) is saved whole to a per-run
store. Where the seed is silent, what the model sees is pydantic-ai-harness's `Spill` stand-in
(`tool_output_limits/_capability.py`, `_build_spill_preview`): a header naming the size and the
handle with the call that reads it back, then `preview_chars` (1,000) of the result, half from its
head and half from its tail around a `...[N chars omitted]...` line. `read_tool_result(handle,
offset=0, limit=200, from_end=False, pattern=None)` pages it back in lines, as the library's
`_read_slice` does: an optional literal-substring filter, offset and limit counted from the start
or the end, at most 1,000 lines and 50,000 characters per call. It costs no model call. The full
text is also recorded in the `tool_output_offloaded` event, so an audit (and a replay) sees
exactly what was held back. Compose it with any strategy through `with`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.core.config import option, require
from strategies.base import Strategy
from tasks.base import ToolCall, ToolResult, ToolSpec, require_args, tool_error

if TYPE_CHECKING:
    from harness.conversation.context import RunContext

READ_TOOL = "read_tool_result"
DEFAULT_LINES = 200  # the library's read_tool_result(limit=200)
MAX_READ_LINES = 1_000  # the library's _MAX_READ_LINES
MAX_READ_CHARS = 50_000  # the library's _MAX_READ_CHARS

SPILL_HEADER = ("[Tool output too large ({total:,} chars); stored to handle {handle!r}. Read it with "
                "read_tool_result(handle={handle!r}, offset=0, limit=200, from_end=False, pattern=None).]")
OMITTED = "\n...[{omitted:,} chars omitted]...\n"
PAGE_HEADER = "[handle {handle!r}: {total:,} matching line(s); showing {shown}{capped}]"
UNKNOWN_HANDLE = ("[No stored tool result for handle {handle!r}. Pass the handle exactly as the "
                  "'[Tool output too large ... stored to handle ...]' line names it, or call the original tool again.]")

READ_SPEC = ToolSpec(
    READ_TOOL,
    "Read lines of a tool output that was too large to show and was stored under a handle. Page with "
    "offset and limit (in lines), read from the end with from_end, keep only lines containing a literal "
    "pattern.",
    {"type": "object",
     "properties": {"handle": {"type": "string", "description": "the handle named where the output was stored"},
                    "offset": {"type": "integer", "default": 0,
                               "description": "matching lines to skip from the start (or the end); >= 0"},
                    "limit": {"type": "integer", "default": DEFAULT_LINES,
                              "description": f"most lines to return; >= 1, at most {MAX_READ_LINES}"},
                    "from_end": {"type": "boolean", "default": False,
                                 "description": "count offset and limit from the end of the output"},
                    "pattern": {"type": "string", "description": "only lines containing this literal text"}},
     "required": ["handle"]},
)


@dataclass
class ToolOutputLimitsConfig:
    max_chars: int = option(20_000, "a tool result over this many characters is stored and paged back with "
                                    "read_tool_result (seed 002: 20,000)")
    preview_chars: int = option(1_000, "characters of a stored result's head and tail shown in the window "
                                       "(pydantic-ai-harness Spill.preview_chars)")

    def __post_init__(self) -> None:
        require(self.max_chars >= 1, f"max_chars must be at least 1, got {self.max_chars}")
        require(self.preview_chars >= 0, f"preview_chars must be 0 or more, got {self.preview_chars}")


def spill_preview(handle: str, content: str, preview_chars: int) -> str:
    """The model's stand-in for a stored result: the header, then its head and tail."""
    body = content
    if len(content) > preview_chars:
        head = preview_chars // 2
        tail = preview_chars - head
        omitted = len(content) - head - tail
        body = content[:head] + OMITTED.format(omitted=omitted) + (content[-tail:] if tail else "")
    return SPILL_HEADER.format(total=len(content), handle=handle) + "\n" + body


def read_slice(content: str, handle: str, args: dict[str, Any]) -> ToolResult:
    """Lines of a stored result: filtered by a literal pattern, sliced from the start or the end, capped."""
    offset, limit = args.get("offset", 0), args.get("limit", DEFAULT_LINES)
    pattern, from_end = args.get("pattern"), bool(args.get("from_end", False))
    if not isinstance(offset, int) or offset < 0:
        return tool_error(f"{READ_TOOL}: offset must be >= 0, got {offset!r}")
    if not isinstance(limit, int) or limit < 1:
        return tool_error(f"{READ_TOOL}: limit must be >= 1, got {limit!r}")
    limit = min(limit, MAX_READ_LINES)
    lines = content.splitlines()
    if pattern is not None:
        lines = [line for line in lines if str(pattern) in line]
    total = len(lines)
    if from_end:
        end = max(0, total - offset)
        window = lines[max(0, end - limit):end]
    else:
        window = lines[offset:offset + limit]
    body = "\n".join(window)
    capped = ""
    if len(body) > MAX_READ_CHARS:
        body, capped = body[:MAX_READ_CHARS], ", output capped"
    header = PAGE_HEADER.format(handle=handle, total=total, shown=len(window), capped=capped)
    return ToolResult(f"{header}\n{body}" if body else header)


class ToolOutputLimits(Strategy):
    name = "tool_output_limits"
    summary = "store oversized tool results and show a preview; the agent pages them back"
    source = "seed 002; pydantic-ai-harness ToolOutputLimits"
    Config = ToolOutputLimitsConfig

    def __init__(self, config: ToolOutputLimitsConfig | None = None):
        super().__init__(config)
        self.store: dict[str, str] = {}

    def tools(self) -> list[ToolSpec]:
        return [READ_SPEC]

    def on_run_start(self, ctx: "RunContext") -> None:
        self.store = {}

    def transform_tool_result(self, ctx: "RunContext", call: ToolCall, result: ToolResult) -> ToolResult:
        """Store a result over the limit and show its stand-in; the reader's own pages and errors pass."""
        content = result.content
        if call.name == READ_TOOL or result.is_error or len(content) <= self.config.max_chars:
            return result
        handle = f"result-{len(self.store) + 1}"
        self.store[handle] = content
        shown = spill_preview(handle, content, self.config.preview_chars)
        ctx.emit("tool_output_offloaded", result_id=handle, tool=call.name, tool_call_id=call.id,
                 total_chars=len(content), shown_chars=len(shown), content=content)
        return ToolResult(shown, is_error=result.is_error)

    def handle_tool_call(self, ctx: "RunContext", call: ToolCall) -> ToolResult | None:
        if call.name != READ_TOOL:
            return None
        if call.args is not None and call.args.get("pattern", "") is None:  # an explicit null: no filter
            call = ToolCall(call.id, call.name, call.arguments, {k: v for k, v in call.args.items() if k != "pattern"})
        problem = require_args(call, READ_SPEC)
        if problem is not None:
            return problem
        args = call.args or {}
        handle = args["handle"]
        content = self.store.get(handle)
        if content is None:
            return ToolResult(UNKNOWN_HANDLE.format(handle=handle))
        return read_slice(content, handle, args)
