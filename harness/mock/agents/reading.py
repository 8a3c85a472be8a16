"""How a simulated agent reads tool results that strategies cut, page or clear.

Follows the contracts between helpers: a ToolOutputLimits result ends with the exact
truncation line naming its result id; `read_tool_result` pages start with
`[{result_id}: characters {offset}-{end} of {total}]`; clearing and masking placeholders
start with `[` and say `cleared` or `masked`. Only visible messages are read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.mock.agents.common import Exchange, Fold, Visible, _content, same_shape
from harness.mock.agents.memo import Pattern, remember

TRUNCATED = Pattern(r"\[Output truncated: (\d+) of (\d+) characters shown\. Full output saved as (\S+); "
                    r"call read_tool_result\(result_id=\"([^\"]+)\", offset=(\d+)\) to read more\.\]\s*$")
PAGE = Pattern(r"\[([^:\]\s]+): characters (\d+)-(\d+) of (\d+)\]\n")
MORE = Pattern(r"\n?\[More: call read_tool_result\(result_id=\"[^\"]+\", offset=\d+\) to continue\.\]\s*$")
MORE_OPENING = '[More: call read_tool_result(result_id="'
PAGER = "read_tool_result"
CLAMPED = "characters clamped from the middle of this message"  # the compaction ladder's clamp marker


def is_placeholder(text: str | None) -> bool:
    """A result a clearing or masking strategy replaced: its content is gone from the view."""
    return bool(text) and text.lstrip().startswith("[") and ("cleared" in text or "masked" in text)


def is_clamped(text: str) -> bool:
    """A message whose middle was cut out (its head and tail kept) to save context."""
    return CLAMPED in text


@dataclass(frozen=True)
class Reading:
    """What the agent can see of one result: the shown text, and where paging would continue."""

    text: str
    result_id: str | None = None
    next_offset: int | None = None  # first character not yet seen, when the rest can be paged


def _without_more_line(page: str) -> str:
    """The page without its closing "[More: ...]" line (what MORE.sub would leave, without scanning the page)."""
    at = page.rfind(MORE_OPENING)
    if at < 0 or not MORE.regex.match(page, at):
        return page
    return page[:at - 1] if at and page[at - 1] == "\n" else page[:at]


def _page_texts(visible: Visible, result_id: str) -> tuple[str, ...]:
    """The visible results of read_tool_result calls that are pages of `result_id`, in call order."""
    return tuple(e.result for e in visible.calls_with(PAGER, "result_id", result_id)
                 if e.result and (match := PAGE.match(e.result)) and match.group(1) == result_id)


def reading(visible: Visible, exchange: Exchange) -> Reading:
    """The result of `exchange` as far as visible: a truncated head joined with visible pages.

    A pure function of the result's text and its pages' texts, so it is worked out once per
    such combination (memo): an unchanged reading is not rebuilt on every request.
    """
    result = exchange.result or ""
    match = TRUNCATED.search(result)
    if not match:
        return Reading(result)
    pages = _page_texts(visible, match.group(4))
    return remember(("reading", result, pages), lambda: _joined(result, match, pages))


def _joined(result: str, match: re.Match[str], pages: tuple[str, ...]) -> Reading:
    shown, total, result_id = int(match.group(1)), int(match.group(2)), match.group(4)
    pieces = [(0, shown, result[:match.start()][:shown])]
    for page in pages:
        header = PAGE.match(page)
        pieces.append((int(header.group(2)), int(header.group(3)), _without_more_line(page[header.end():])))
    parts: list[str] = []
    covered = 0
    gap_at: int | None = None
    for start, end, chunk in sorted(pieces):
        if start > covered:
            gap_at = covered if gap_at is None else gap_at
            parts.append("\n")
            parts.append(chunk)
        else:
            parts.append(chunk[covered - start:])
        covered = max(covered, end)
    if gap_at is None and covered < total:
        gap_at = covered
    return Reading("".join(parts), result_id, gap_at)


def page_call(visible: Visible, read: Reading) -> dict[str, Any] | None:
    """Arguments of the next `read_tool_result` call, if paging is offered and something remains."""
    if read.result_id is None or read.next_offset is None or PAGER not in visible.tool_names:
        return None
    return {"result_id": read.result_id, "offset": read.next_offset}


def failed_pages(visible: Visible, args: dict[str, Any]) -> int:
    """Visible page requests with these arguments whose result it cannot use (cleared, masked, error)."""
    return sum(1 for e in visible.calls(PAGER) if e.args == args and not (e.result and PAGE.match(e.result)))


class ReadableFold(Fold):
    """A fold that reads each truncated result as its visible pages joined, not as sent."""

    def text(self, visible: Visible, message: dict[str, Any]) -> tuple[str | None, bool]:
        """The text, and True when it is a truncated result's reading (which later pages change)."""
        if message.get("role") not in self.roles:
            return None, False
        call_id = message.get("tool_call_id")
        exchange = visible.exchange(call_id) if call_id is not None else None
        if exchange is None or not exchange.result or not TRUNCATED.search(exchange.result):
            return _content(message), False
        return reading(visible, exchange).text, True

    def alike(self, visible: Visible, position: int, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """In a regular context an untruncated result reads as its own content; a truncated one (old
        or new) reads with its pages, so it is read again."""
        if not same_shape(old, new):
            return False
        old_text, new_text = _content(old), _content(new)
        if TRUNCATED.search(old_text) or TRUNCATED.search(new_text):
            return False
        if old.get("role") not in self.roles:
            return True
        return self.same_effect(old_text, new_text)


def obtain(visible: Visible, name: str, args: dict[str, Any], since: int = -1) -> dict[str, Any] | None:
    """The next call that could still yield what a `name(args)` result should have shown.

    Pages on through a truncated result when paging is offered; otherwise calls the tool
    (again), as long as its failed attempts (made after message position `since`) stay within
    the reread budget. None: give up.
    """
    candidates = visible.calls_with(name, *next(iter(args.items()))) if args else visible.calls(name)
    attempts = [e for e in candidates if e.args == args and e.position > since]
    budget = visible.knobs.reread_budget
    if attempts:
        page = page_call(visible, reading(visible, attempts[-1]))
        if page is not None and failed_pages(visible, page) <= budget:
            return {"name": PAGER, "args": page}
    if len(attempts) > budget:
        return None
    return {"name": name, "args": args}
