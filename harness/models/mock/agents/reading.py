"""How a simulated agent reads tool results that strategies cut, page or clear.

Two paging contracts are recognised by their shape, each by a small recogniser behind one
reading interface (`reading`, `page_call`, `failed_pages`):

* ctxbench's native ToolOutputLimits (`NATIVE`): a cut result ends with the exact truncation
  line naming its result id; `read_tool_result(result_id, offset)` pages start with
  `[{result_id}: characters {offset}-{end} of {total}]`, in characters.
* pydantic-ai-harness's ToolOutputLimits spill (`SPILL`): a result starts with `[Tool output too
  large (N chars); stored to handle 'H'. Read it with read_tool_result(handle='H', ...).]`, then a
  head, `...[N chars omitted]...` and a tail; `read_tool_result(handle, offset, limit)` pages start
  with `[handle 'H': T matching line(s); showing n]` (`, output capped` when cut at its character
  cap), in lines.

Clearing and masking placeholders start with `[` and say `cleared` or `masked`. Only visible
messages are read.
"""
from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence

from harness.models.mock.agents.answers import PAGE, SPILL_PAGE, SPILLED
from harness.models.mock.agents.common import Exchange, Fold, Visible, _content, answered, same_shape
from harness.models.mock.agents.memo import Pattern, Readings, remember

TRUNCATED = Pattern(r"\[Output truncated: (\d+) of (\d+) characters shown\. Full output saved as (\S+); "
                    r"call read_tool_result\(result_id=\"([^\"]+)\", offset=(\d+)\) to read more\.\]\s*$")
MORE = Pattern(r"\n?\[More: call read_tool_result\(result_id=\"[^\"]+\", offset=\d+\) to continue\.\]\s*$")
MORE_OPENING = '[More: call read_tool_result(result_id="'
PAGER = "read_tool_result"
CLAMPED = "\n[clamped: removed "  # the clamp marker of compaction_ladder and pydantic-ai-harness

OMITTED = Pattern(r"\n\.\.\.\[([\d,]+) chars omitted\]\.\.\.\n")
SPILL_PAGE_LINES = 1_000  # it asks for as many lines as one call returns (more would be clamped to these)


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
    next_offset: int | None = None  # first unit (character or line) not yet seen, when the rest can be paged
    contract: Contract | None = None  # how this result is paged


Piece = tuple[float, float, Sequence[Any]]  # (first unit, end unit, the units): characters or lines


def _join(pieces: list[Piece], total: float, gap: Sequence[Any]) -> tuple[list[Sequence[Any]], int | None]:
    """The pieces in order, overlaps cut and each gap marked by `gap`; and the first unit not seen (None: all)."""
    parts: list[Sequence[Any]] = []
    covered: float = 0
    gap_at: float | None = None
    for start, end, chunk in sorted(pieces):
        if start > covered:
            gap_at = covered if gap_at is None else gap_at
            parts.append(gap)
            parts.append(chunk)
        else:
            parts.append(chunk[int(covered - start):])
        covered = max(covered, end)
    if gap_at is None and covered < total:
        gap_at = covered
    return parts, None if gap_at is None else int(gap_at)


class Contract(ABC):
    """One way a result is cut and paged back: what marks it, how its pages read, how to ask for more."""

    argument = "result_id"  # the page call's argument naming the result

    @abstractmethod
    def cut(self, result: str) -> re.Match[str] | None:
        """The marker's match when this contract cut `result` (None: it did not)."""

    @abstractmethod
    def result_id(self, match: re.Match[str]) -> str:
        """The id the marker gives the stored result."""

    @abstractmethod
    def is_page(self, text: str) -> bool:
        """Whether a read_tool_result answer is one of this contract's pages."""

    @abstractmethod
    def pages(self, visible: Visible, result_id: str) -> tuple[Any, ...]:
        """The visible pages of `result_id`, in call order."""

    @abstractmethod
    def joined(self, result: str, match: re.Match[str], pages: tuple[Any, ...]) -> Reading:
        """The cut result read together with its pages."""

    @abstractmethod
    def page_args(self, result_id: str, offset: int) -> dict[str, Any]:
        """The arguments of a read_tool_result call for the next page from `offset`."""


class Native(Contract):
    """ctxbench's ToolOutputLimits: a head of `shown` characters, pages by character offset."""

    def cut(self, result: str) -> re.Match[str] | None:
        return TRUNCATED.search(result)

    def result_id(self, match: re.Match[str]) -> str:
        return match.group(4)

    def is_page(self, text: str) -> bool:
        return PAGE.match(text) is not None

    def pages(self, visible: Visible, result_id: str) -> tuple[str, ...]:
        """The visible results of read_tool_result calls that are pages of `result_id`, in call order."""
        return tuple(e.result for e in visible.calls_with(PAGER, "result_id", result_id)
                     if e.result and (match := PAGE.match(e.result)) and match.group(1) == result_id)

    def joined(self, result: str, match: re.Match[str], pages: tuple[str, ...]) -> Reading:
        shown, total, result_id = int(match.group(1)), int(match.group(2)), match.group(4)
        pieces: list[Piece] = [(0, shown, result[:match.start()][:shown])]
        for page in pages:
            header = PAGE.match(page)
            pieces.append((int(header.group(2)), int(header.group(3)), _without_more_line(page[header.end():])))
        parts, gap_at = _join(pieces, total, "\n")
        return Reading("".join(parts), result_id, gap_at, self)  # type: ignore[arg-type]

    def page_args(self, result_id: str, offset: int) -> dict[str, Any]:
        return {"result_id": result_id, "offset": offset}


def _number(text: str) -> int:
    return int(text.replace(",", ""))


class Spilled(Contract):
    """pydantic-ai-harness's ToolOutputLimits spill: a head and a tail shown, pages by line.

    Read in line terms: the head's last line and the tail's first may be cut, so neither counts;
    the tail's place is known once a page says how many lines there are; a capped page's last line
    may be cut, so the next page starts there. Pages with a pattern or from the end are not its own.
    """

    argument = "handle"

    def cut(self, result: str) -> re.Match[str] | None:
        return SPILLED.match(result)

    def result_id(self, match: re.Match[str]) -> str:
        return match.group(3) if match.group(3) is not None else match.group(4)

    def is_page(self, text: str) -> bool:
        return SPILL_PAGE.match(text) is not None

    def pages(self, visible: Visible, result_id: str) -> tuple[tuple[int, str], ...]:
        """(offset, text) of the visible pages of `result_id` read from the start without a pattern, in call order."""
        return tuple((e.args.get("offset", 0), e.result) for e in visible.calls_with(PAGER, "handle", result_id)
                     if e.result and not e.args.get("from_end") and e.args.get("pattern") is None
                     and isinstance(e.args.get("offset", 0), int)
                     and (match := SPILL_PAGE.match(e.result)) and result_id in match.group(1, 2))

    def joined(self, result: str, match: re.Match[str], pages: tuple[tuple[int, str], ...]) -> Reading:
        body = result[match.end():]
        omitted = _omission(body, match)
        if omitted is None:  # the preview is the whole output
            return Reading(body)
        head, tail = body[:omitted.start()], body[omitted.end():]
        head_lines = head.splitlines(keepends=True)
        if head_lines and len(head_lines[-1].splitlines()[0]) == len(head_lines[-1]):
            head_lines.pop()  # cut mid-line
        pieces: list[Piece] = [(0, len(head_lines), tuple(line.splitlines()[0] for line in head_lines))]
        total: float = math.inf  # unknown until a page says
        for offset, page in pages:
            header = SPILL_PAGE.match(page)
            total, shown = _number(header.group(3)), int(header.group(4))
            lines = page[header.end() + 1:].split("\n") if shown else []
            if header.group(5):
                lines.pop()  # the character cap may have cut it
            pieces.append((offset, offset + len(lines), tuple(lines)))
        tail_lines = tuple(tail.splitlines()[1:])  # its first line may start mid-line
        pieces.append((total - len(tail_lines), total, tail_lines) if total < math.inf else (math.inf, math.inf, tail_lines))
        parts, gap_at = _join(pieces, total, ("",))
        return Reading("\n".join(line for part in parts for line in part), self.result_id(match), gap_at, self)

    def page_args(self, result_id: str, offset: int) -> dict[str, Any]:
        return {"handle": result_id, "offset": offset, "limit": SPILL_PAGE_LINES}


def _omission(body: str, spill: re.Match[str]) -> re.Match[str] | None:
    """The middle-elision marker between head and tail: the head is half the characters kept."""
    for found in OMITTED.finditer(body):
        if spill.group(2) != "chars" or found.start() == (_number(spill.group(1)) - _number(found.group(1))) // 2:
            return found
    return None


NATIVE, SPILL = Native(), Spilled()
CONTRACTS = (NATIVE, SPILL)


def _find_cut(result: str) -> tuple[Contract, re.Match[str]] | None:
    """The contract that cut this result, with its marker's match (None: shown whole)."""
    for contract in CONTRACTS:
        match = contract.cut(result)
        if match:
            return contract, match
    return None


# `_find_cut` of a text, worked out once per text (ours: a result is asked whether it was cut by
# each fold that reads it and by the agent, on every request that re-reads it; a recalled answer is one lookup,
# not four frames and two pattern lookups).
_cut = Readings(_find_cut).__getitem__


def is_cut(text: str) -> bool:
    """A result shown in part, whose reading later pages change."""
    return _cut(text) is not None


def _without_more_line(page: str) -> str:
    """The page without its closing "[More: ...]" line (what MORE.sub would leave, without scanning the page)."""
    at = page.rfind(MORE_OPENING)
    if at < 0 or not MORE.regex.match(page, at):
        return page
    return page[:at - 1] if at and page[at - 1] == "\n" else page[:at]


def shows_whole_file(read: Reading, path: str) -> bool:
    """Whether a reading shows a file from its `== path (` opening to its `== end of path ==` line,
    nothing between them left unseen (a spill shows its tail before its middle is paged)."""
    return (read.next_offset is None and read.text.startswith(f"== {path} (")
            and read.text.rstrip().endswith(f"== end of {path} =="))


def reading(visible: Visible, exchange: Exchange) -> Reading:
    """The result of `exchange` as far as visible: a cut result joined with its visible pages.

    A pure function of the result's text and its pages' texts, so it is worked out once per
    such combination (memo): an unchanged reading is not rebuilt on every request.
    """
    result = exchange.result or ""
    found = _cut(result)
    if found is None:
        return Reading(result)
    contract, match = found
    pages = contract.pages(visible, contract.result_id(match))
    return remember(("reading", result, pages), lambda: contract.joined(result, match, pages))


def page_call(visible: Visible, read: Reading) -> dict[str, Any] | None:
    """Arguments of the next `read_tool_result` call, if paging is offered and something remains."""
    if read.contract is None or read.next_offset is None or PAGER not in visible.tool_names:
        return None
    return read.contract.page_args(read.result_id, read.next_offset)


def page_calls(visible: Visible, read: Reading) -> list[Exchange]:
    """The visible `read_tool_result` calls that asked for pages of this reading's result."""
    if read.contract is None:
        return []
    return visible.calls_with(PAGER, read.contract.argument, read.result_id)


def failed_pages(visible: Visible, args: dict[str, Any]) -> int:
    """Visible page requests with these arguments whose result it cannot use (cleared, masked, error)."""
    return sum(1 for e in visible.calls(PAGER)
               if e.args == args and not (e.result and any(c.is_page(e.result) for c in CONTRACTS)))


class ReadableFold(Fold):
    """A fold that reads each cut result as its visible pages joined, not as sent."""

    def text(self, visible: Visible, message: dict[str, Any]) -> tuple[str | None, bool]:
        """The text, and True when it is a cut result's reading (which later pages change); a result that
        does not answer its call reads as nothing."""
        role = message.get("role")
        if role not in self.roles or (role == "tool" and not answered(visible, message)):
            return None, False
        call_id = message.get("tool_call_id")
        exchange = visible.exchange(call_id) if call_id is not None else None
        if exchange is None or not exchange.result or not is_cut(exchange.result):
            return _content(message), False
        return reading(visible, exchange).text, True

    def alike(self, visible: Visible, position: int, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """In a regular context a whole result reads as its own content; a cut one (old or new) reads
        with its pages, so it is read again."""
        if not same_shape(old, new):
            return False
        old_text, new_text = _content(old), _content(new)
        if is_cut(old_text) or is_cut(new_text):
            return False
        if old.get("role") not in self.roles:
            return True
        return self.same_effect(self.text(visible, old)[0], self.text(visible, new)[0])


def obtain(visible: Visible, name: str, args: dict[str, Any], since: int = -1) -> dict[str, Any] | None:
    """The next call that could still yield what a `name(args)` result should have shown.

    Pages on through a cut result when paging is offered; otherwise calls the tool
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
