"""How a text reads, worked out once per distinct text.

The simulated agent keeps its readings of a message prefix between requests (`memory`),
but some texts are still read again on every request: the results it inspects for what to
do next (is this read whole? where does paging continue?), and every text when its memory
cannot be reused (the request does not start with the objects it read). A regular expression's
matches and a tool call's parsed arguments are pure functions of one text, so they are
memoized by that text alone: a memo says how a given message reads, never which messages
were shown. Each request still reads exactly the texts it was sent, so the agent stays
context-faithful.

Strings the harness keeps (message contents) carry their hash, so a hit costs a dict
lookup, not a re-scan. Each kind of reading (one pattern's searches, say) has its own table
keyed by the text alone: no key tuple per entry. Memos are dropped when a mock session ends
(`forget`) and whenever they hold MAX_ENTRIES readings in all, so a long-lived process does
not keep old runs' texts alive.
"""
from __future__ import annotations

import json
import re
import weakref
from typing import Any, Callable, Hashable

import orjson

try:  # the regular-expression parser, to find the literals a pattern needs
    import re._constants as re_constants
    import re._parser as re_parser
except ImportError:  # Python 3.10
    import sre_constants as re_constants  # type: ignore[no-redef]
    import sre_parse as re_parser  # type: ignore[no-redef]

MAX_ENTRIES = 200_000
_tables: weakref.WeakValueDictionary[int, Table] = weakref.WeakValueDictionary()  # every live table, by id
_entries = 0  # readings held by every table together


class Table(dict):
    """Readings by what they are a pure function of, counted against MAX_ENTRIES and dropped by `forget`."""

    __slots__ = ("__weakref__",)

    def __init__(self) -> None:
        super().__init__()
        _tables[id(self)] = self

    def keep(self, key: Hashable, value: Any) -> Any:
        global _entries
        if _entries >= MAX_ENTRIES:
            forget()
        self[key] = value
        _entries += 1
        return value

    def recall(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        try:
            return self[key]
        except KeyError:
            return self.keep(key, compute())


class Readings(Table):
    """One kind of reading: `table[text]` reads `text` the first time it is asked (dict's `__missing__`
    hook) and recalls it after that, at the cost of a dict lookup."""

    __slots__ = ("_read",)

    def __init__(self, read: Callable[[Any], Any]):
        super().__init__()
        self._read = read

    def __missing__(self, key: Hashable) -> Any:
        return self.keep(key, self._read(key))


class Scans(Table):
    """One regular-expression method's readings by text: `table[text]` scans a text the first time it is
    asked, and reads a text that lacks every literal a match needs as `empty` without scanning it.

    (ours: a new text of a request is read once by each pattern of each fold, so a first
    reading takes two Python steps here, not four: no reader and literal check each in a frame of its own.)
    """

    __slots__ = ("_scan", "_needs", "_empty")

    def __init__(self, scan: Callable[[str], Any], needs: tuple[str, ...], empty: Any):
        super().__init__()
        self._scan, self._needs, self._empty = scan, needs, empty

    def __missing__(self, text: str) -> Any:
        for literal in self._needs:  # a plain loop: a generator's frame would cost more than most scans
            if literal in text:
                return self.keep(text, self._scan(text))
        return self.keep(text, self._empty if self._needs else self._scan(text))


_remembered = Table()


def remember(key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """`compute()`, worked out once per key: for readings that are pure functions of the texts in `key`."""
    return _remembered.recall(key, compute)


def forget() -> None:
    """Drop every memoized reading (a session ended; its texts need not stay alive)."""
    global _entries
    for table in list(_tables.values()):
        table.clear()
    _entries = 0


class Pattern:
    """A compiled regular expression whose search/match/findall/finditer results are memoized per text.

    A text that lacks the literals every match must contain (`required_literals`) cannot match:
    that is settled by a substring scan, much faster than the regular expression's own over a
    long result.
    """

    # search/match/findall/finditer(text): each its table's own lookup, so a reading recalled is one call in C,
    # with no Python frame of its own (ours: folds and agents ask ~10 per request).
    search: Callable[[str], re.Match[str] | None]
    match: Callable[[str], re.Match[str] | None]
    findall: Callable[[str], tuple[Any, ...]]
    finditer: Callable[[str], tuple[re.Match[str], ...]]

    def __init__(self, expression: str, flags: int = 0):
        self.regex = re.compile(expression, flags)
        self._needs = required_literals(self.regex)
        search, findall, finditer, scanned = self._scanners()
        self.search = Scans(search, scanned, None).__getitem__
        # A match is tried at the text's start alone, where it fails at once: no scan of the text for literals first.
        self.match = Scans(self.regex.match, (), None).__getitem__
        self.findall = Scans(findall, scanned, ()).__getitem__
        self.finditer = Scans(finditer, scanned, ()).__getitem__

    def _scanners(self) -> tuple[Callable[[str], Any], Callable[[str], Any], Callable[[str], Any], tuple[str, ...]]:
        """How a text is scanned for `search`, `findall` and `finditer` (the regular expression's own methods),
        and the literals a text is checked for first (those scans do not look for them)."""
        return self.regex.search, lambda text: tuple(self.regex.findall(text)), lambda text: tuple(
            self.regex.finditer(text)), self._needs

    @property
    def required(self) -> tuple[str, ...]:
        """Literals of which every match holds one (empty: none known, so no text is ruled out)."""
        return self._needs


class LinePattern(Pattern):
    """A Pattern none of whose matches holds a line break, and with a required literal: its findall, finditer
    and search scan only the lines that hold one (the same matches, in order, as a scan of the whole text).
    A scan tries the pattern at every position of the text; for a pattern starting with a word
    (`\\b(\\w+) ...`) that is slow over a long log with a few matching lines, and so is one anchored at line
    starts (`^Order ...`, re.MULTILINE), which no literal prefix lets the scan skip to.

    Anchors only with re.MULTILINE (ours): there `^` and `$` match at line starts and ends, which
    a line's scan sees as the whole text's does (`^` looks at the character before the line, `$` ends the line);
    without it they would match at a line's ends inside the text. A pattern opening with `^` and a literal is
    tried only on the lines that open with that literal.
    """

    def __init__(self, expression: str, flags: int = 0):
        self._opening = _line_opening(re.compile(expression, flags))  # before the tables are made (_scanners)
        super().__init__(expression, flags)
        anchored = "^" in expression or "$" in expression
        if not self._needs or (anchored and not flags & re.MULTILINE):
            raise ValueError(f"LinePattern {expression!r} needs a required literal, and no anchors but with "
                             "re.MULTILINE")

    def _scanners(self) -> tuple[Callable[[str], Any], Callable[[str], Any], Callable[[str], Any], tuple[str, ...]]:
        # Lines found by a literal they hold need no check for it first; lines found by their opening do.
        return self._search_lines, self._findall_lines, self._finditer_lines, self._needs if self._opening else ()

    def _lines(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each line that may hold a match, in order."""
        if not self._opening:
            return self._lines_holding(text)
        spans = []
        line = "\n" + self._opening
        at = 0 if text.startswith(self._opening) else text.find(line) + 1 or -1
        while at >= 0:
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            spans.append((at, end))
            at = text.find(line, end) + 1 or -1
        return spans

    def _lines_holding(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each line holding a required literal, in order."""
        spans = set()
        for literal in self._needs:
            at = text.find(literal)
            while at >= 0:
                start = text.rfind("\n", 0, at) + 1
                end = text.find("\n", at)
                end = len(text) if end < 0 else end
                spans.add((start, end))
                at = text.find(literal, end)
        return sorted(spans)

    def _findall_lines(self, text: str) -> tuple[Any, ...]:
        return tuple(item for start, end in self._lines(text) for item in self.regex.findall(text, start, end))

    def _finditer_lines(self, text: str) -> tuple[re.Match[str], ...]:
        """The whole-text finditer's matches (their groups and spans; their `pos` and `endpos` are their line's)."""
        return tuple(match for start, end in self._lines(text) for match in self.regex.finditer(text, start, end))

    def _search_lines(self, text: str) -> re.Match[str] | None:
        """The whole-text search's match (its groups and span; its `pos` and `endpos` are its line's)."""
        for start, end in self._lines(text):
            found = self.regex.search(text, start, end)
            if found:
                return found
        return None


def _line_opening(regex: re.Pattern[str]) -> str:
    """The literal a pattern's every match opens with right after a leading `^` ("" when it opens otherwise)."""
    parsed = list(re_parser.parse(regex.pattern, regex.flags))
    if not parsed or parsed[0] != (re_constants.AT, re_constants.AT_BEGINNING):
        return ""
    opening = []
    for op, value in parsed[1:]:
        if op is not re_constants.LITERAL:
            break
        opening.append(chr(value))
    return "".join(opening)


MIN_REQUIRED_LITERAL = 4  # shorter literals are too common to rule a text out


def required_literals(regex: re.Pattern[str]) -> tuple[str, ...]:
    """Literals of which every match of `regex` contains one (none known: empty).

    For each top-level alternative, its longest run of literal characters outside any group or
    repeat; nothing when an alternative has no run long enough or the pattern ignores case.
    """
    if regex.flags & re.IGNORECASE:
        return ()
    parsed = list(re_parser.parse(regex.pattern, regex.flags))
    if len(parsed) == 1 and parsed[0][0] is re_constants.BRANCH:
        alternatives = [_longest_literal_run(branch) for branch in parsed[0][1][1]]
    else:
        alternatives = [_longest_literal_run(parsed)]
    return tuple(alternatives) if all(len(run) >= MIN_REQUIRED_LITERAL for run in alternatives) else ()


def _longest_literal_run(sequence: Any) -> str:
    runs, run = [], []
    for op, value in sequence:
        if op is re_constants.LITERAL:
            run.append(chr(value))
        elif op is not re_constants.AT or run:  # a zero-width anchor before the run does not break it
            runs.append("".join(run))
            run = []
    runs.append("".join(run))
    return max(runs, key=len)


def arguments(text: str) -> dict[str, Any]:
    """A tool call's JSON arguments as a dict ({} when malformed or not an object); shared, so read-only."""
    return _arguments[text]


# Values orjson reads exactly as the json module does (it reads an integer past 64 bits as a float, and refuses
# NaN, Infinity and lone surrogates, which json reads).
_EXACT_VALUES = (str, int, bool, type(None))


def _parse_object(text: str) -> dict[str, Any]:
    """A call's arguments as json.loads reads them: by orjson (~5x faster) when they are an object of plain
    values, as the agent's and most recorded calls are; by json otherwise, so every text reads the same."""
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        parsed = None
    if type(parsed) is dict and all(type(value) in _EXACT_VALUES for value in parsed.values()):
        return parsed
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


_arguments = Readings(_parse_object)
