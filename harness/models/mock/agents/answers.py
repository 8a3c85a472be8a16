"""Whether a tool result answers the call whose id it carries.

The agent uses a tool result only for the call it answers. A careful reader
checks that what came back is what it asked for: a read of path A opens with A's header, a
lookup of ORD-1 with ORD-1's record, a page with the result id and offset asked for, an error
with the tool's name and the arguments it refuses. A result that opens as the answer to another
call (another path, another tool) answers nothing, so the agent takes no fact from it, as it
would from a garbled one: it fetches again within its reread budget, or gives up.

Texts of no known shape (a summary of an output, a placeholder, a strategy's note) are taken as
they are: nothing in them says they answer another call. A cut result is read by its opening
(the head kept, after pydantic-ai-harness's spill note), so a cut never hides which call it answers.
The check reads only a result's opening line with anchored patterns, each time it is asked (no
memo: a table of every result's shape would outweigh the work it saves).
"""
from __future__ import annotations

import re
from typing import Any

from harness.models.mock.agents.memo import Pattern, re_constants, re_parser

_QUOTED = r"(?:'([^'\\]*)'|\"([^\"\\]*)\")"  # a handle as Python's repr() shows it (no escapes in ctxbench's handles)
SPILLED = Pattern(r"\[Tool output too large \(([\d,]+) (chars|tokens)\); stored to handle " + _QUOTED
                  + r"\. Read it with read_tool_result\(handle=[^\n]*\)\.\]\n")
PAGE = Pattern(r"\[([^:\]\s]+): characters (\d+)-(\d+) of (\d+)\]\n")
SPILL_PAGE = Pattern(r"\[handle " + _QUOTED + r": ([\d,]+) matching line\(s\); showing (\d+)(, output capped)?\]")
ERROR = re.compile(r"Error: (\w+): ")

# (tool, the opening every answer of it has, the arguments its groups name in order): the tools of
# ctxbench's task families and strategies. A group None (an alternative not taken) names nothing.
SHAPES: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("fetch_dump", re.compile(r"== dump (\S+) \(\d+ requests\) ==\n"), ("dump",)),
    ("read_file", re.compile(r"== (.+?) \(\d+ lines\) ==\n"), ("path",)),
    ("search", re.compile(r"(?:No matches for (.+)\.|\d+ match\(es\) for (.+):)$"), ("text", "text")),
    ("write_file", re.compile(r"Wrote \d+ characters to (.+)\.$"), ("path",)),
    ("edit_file", re.compile(r"Edited (.+): replaced 1 occurrence\."), ("path",)),
    ("answer_question", re.compile(r"Answer (\d+) recorded\."), ("number",)),
    ("get_order", re.compile(r"Order (\S+) \| customer "), ("order_id",)),
    ("get_customer", re.compile(r"Customer (\S+) \| region "), ("customer_id",)),
    ("get_price", re.compile(r"Price (\S+) \| region (\S+) \| unit "), ("sku", "region")),
    ("record_count", re.compile(r"Recorded (-?\d+) for (.+)\.$"), ("errors", "path")),
    ("submit_result", re.compile(r"Recorded (\S+)\.(?: |$)"), ("order_id",)),
    ("run_tests", re.compile(r"=+ test session starts =+\n"), ()),
    ("condense", re.compile(r"Context condensation complete: "), ()),
    ("submit_answer", re.compile(r"Answer submitted\.$"), ()),
    ("read_tool_result", PAGE.regex, ("result_id", "offset")),
    ("read_tool_result", SPILL_PAGE.regex, ("handle", "handle")),
)
SEARCH_ARGUMENTS = {"text"}  # shown as Python's repr() of the argument
# The arguments an error of each tool names (ctxbench's tools name them in every refusal).
ERROR_NAMES = {"read_file": ("path",), "write_file": ("path",), "edit_file": ("path",), "record_count": ("path",),
               "fetch_dump": ("dump",), "answer_question": ("number",), "get_order": ("order_id",),
               "get_customer": ("customer_id",), "get_price": ("sku", "region"), "submit_result": ("order_id",),
               "read_tool_result": ("result_id", "handle")}


def first_characters(regex: re.Pattern[str]) -> frozenset[str] | None:
    """The characters every match of `regex` can start with (None: not known, any may)."""
    return None if regex.flags & re.IGNORECASE else _starts(list(re_parser.parse(regex.pattern, regex.flags)))


def _starts(sequence: list[Any]) -> frozenset[str] | None:
    if not sequence:
        return None
    op, value = sequence[0]
    if op is re_constants.LITERAL:
        return frozenset(chr(value))
    if op is re_constants.SUBPATTERN:
        return _starts(list(value[-1]))
    if op is re_constants.BRANCH:
        branches = [_starts(list(branch)) for branch in value[1]]
        return None if None in branches else frozenset().union(*branches)  # type: ignore[arg-type]
    if op in (re_constants.MAX_REPEAT, re_constants.MIN_REPEAT) and value[0] >= 1:
        return _starts(list(value[2]))
    if op is re_constants.IN and all(kind is re_constants.LITERAL for kind, _ in value):
        return frozenset(chr(code) for _, code in value)
    if op is re_constants.IN and value == [(re_constants.CATEGORY, re_constants.CATEGORY_DIGIT)]:
        return frozenset("0123456789")
    return None


def _by_first_character() -> tuple[dict[str, tuple[Any, ...]], tuple[Any, ...]]:
    """SHAPES by the character an opening starts with, each in SHAPES order; and those that may start with any."""
    starts = [first_characters(shape) for _, shape, _ in SHAPES]
    anywhere = tuple(entry for entry, chars in zip(SHAPES, starts) if chars is None)
    table = {char: tuple(entry for entry, chars in zip(SHAPES, starts) if chars is None or char in chars)
             for chars in starts if chars for char in chars}
    return table, anywhere


# A text's opening is tried only against the shapes that can start with its first character (ours: ~1 regex
# match per result instead of ~10; the same first match as trying every shape in order).
_SHAPES_BY_START, _SHAPES_ANYWHERE = _by_first_character()


def _shape(text: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """(tool, (argument, value) pairs) of the call a text opens as the answer of (None: no known shape)."""
    spill = SPILLED.regex.match(text)
    start = spill.end() if spill else 0
    end = text.find("\n", start)
    end = len(text) if end < 0 else end + 1  # the opening line, read in place (no copy of it is kept)
    for tool, shape, names in _SHAPES_BY_START.get(text[start:start + 1], _SHAPES_ANYWHERE):
        match = shape.match(text, start, end)
        if match:
            named = tuple(zip(names, match.groups()))
            return tool, tuple(pair for pair in named if pair[1] is not None) if None in match.groups() else named
    return None



def _value(argument: str, value: Any) -> str:
    """An argument's value as an answer shows it."""
    text = str(value).strip()
    return repr(text) if argument in SEARCH_ARGUMENTS else text


def answers(name: str, args: dict[str, Any], text: str) -> bool:
    """Whether `text`, sent as the result of the call `name(args)`, answers that call."""
    error = ERROR.match(text)
    if error:  # an error answers its own tool's call, naming the arguments it refuses
        return error.group(1) == name and all(str(args[argument]).strip() in text
                                              for argument in ERROR_NAMES.get(name, ()) if argument in args)
    shape = _shape(text)
    if shape is None:
        return True
    tool, named = shape
    if tool != name:
        return False
    for argument, value in named:  # a plain loop: a generator's frame costs more than the one or two pairs
        if _value(argument, args.get(argument, 0 if argument == "offset" else "")) != value:
            return False
    return True
