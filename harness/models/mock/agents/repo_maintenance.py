"""Simulated agent for repo_maintenance: run the tests, fix one visible failure, run them again.

It acts on the latest test log it can see. Failures count only when their detail lines are
visible (in the log, in pages of it, or in its notes); a log whose end says tests failed but
whose failure details it cannot see is paged on when paging is offered, else run again
within the reread budget. An edit replaces the constant's whole line as last read from the
file, so near-miss constants are left alone. Past its budget it submits what it has.

Its notes hold what it found: each open failure and the line to edit, as well
as its fixes. With no test run visible (after a reset or a summary) it goes on from the failures
its notes or a summary state, fixing one before it runs the tests again.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.models.mock.agents.common import TOLD, Exchange, Visible
from harness.models.mock.agents.memo import LinePattern, Pattern
from harness.models.mock.agents.reading import obtain, reading, shows_whole_file

TASK = Pattern(r"Make the test suite pass: call run_tests\(\)")
FAILURE = Pattern(r"AssertionError: (\w+) in (\S+) should be (-?\d+), found")
SUMMARY = LinePattern(r"=+ (?:(\d+) failed, )?\d+ passed in [\d.]+s =+")
FIXED = Pattern(r"^Fixed (\w+) in (\S+)\.$", re.MULTILINE)
# A failure as a log, its notes or its own narration state it: "NAME in PATH should be VALUE".
STATED_FAILURE = LinePattern(r"\b(\w+) in (\S+) should be (-?\d+)\b")
# Its narration of an edit, or of a line found already right, as a summary may carry it.
SET = Pattern(r"Setting (\w+) to -?\d+ in (\S+)\.")
ALREADY = Pattern(r"(\w+) in (\S+) already reads -?\d+;")
NOTED_LINE = Pattern(r"^Line of (\w+) in (\S+): (.+)$", re.MULTILINE)
NOTES_ROLES = (*TOLD, "tool")  # where its notes are read back: a notes file's read, a summary
ASSIGNED = re.compile(r"(\w+) = ")  # the constant an edit's new line sets


@dataclass(frozen=True)
class Task:
    marker: str = "repo"


STATEMENT = (TASK,)  # find_task finds a task only in a message whose content as sent one of these matches


def find_task(visible: Visible) -> Task | None:
    return Task() if visible.first(TASK, (*TOLD, "tool")) else None


def _edits(visible: Visible) -> list[Exchange]:
    """Its edits the tool made, in order (read-only: kept until the visible calls or results change)."""
    return visible.derived("edits", lambda: [e for e in visible.calls("edit_file") if (e.result or "").startswith("Edited")])


def _fixed(visible: Visible, after: int) -> set[tuple[str, str]]:
    """(constant, path) pairs fixed by a visible edit after message position `after`, or noted as fixed
    (its notes' "Fixed" lines, or a summary carrying its narration of the edit)."""
    done = set(visible.found(FIXED, NOTES_ROLES)) | set(visible.found(SET, TOLD)) | set(visible.found(ALREADY, TOLD))
    for edit in _edits(visible):
        if edit.position > after:
            match = ASSIGNED.match(str(edit.args.get("new", "")))
            if match:
                done.add((match.group(1), str(edit.args.get("path", "")).strip()))
    return done


def _last_edit(visible: Visible, path: str) -> int:
    """The position of its latest edit of `path` (-1: none); edits are in call order, so the last one found."""
    return next((e.position for e in reversed(_edits(visible)) if str(e.args.get("path", "")).strip() == path), -1)


def _line(visible: Visible, path: str, name: str) -> str | None:
    """The constant's line in the latest whole read of the file after the latest edit to it."""
    last_edit = _last_edit(visible, path)
    for exchange in reversed(visible.calls("read_file")):
        if str(exchange.args.get("path", "")).strip() != path:
            continue
        if exchange.position < last_edit:
            return None
        read = reading(visible, exchange)
        if shows_whole_file(read, path):
            return _assignment_line(read.text, name)
    return _noted_line(visible, path, name)


def _assignment_line(text: str, name: str) -> str | None:
    """The first line of `text` that opens with `NAME = ` (the match of `^NAME = .*$`, re.MULTILINE), found
    by a substring search: no regular expression built per constant (ours: one per name
    was compiled and parsed at its first read, ~70 per long repo_maintenance task)."""
    opening = f"{name} = "
    if text.startswith(opening):
        start = 0
    else:
        start = text.find("\n" + opening) + 1
        if not start:
            return None
    end = text.find("\n", start)
    return text[start:] if end < 0 else text[start:end]


def _set_value(line: str, name: str, value: str) -> str:
    r"""`line` with the value after its opening `NAME = ` (up to a `#` or a space) set to `value`: what
    `re.sub(rf"^{re.escape(name)} = [^#\s]+", f"{name} = {value}", line)` gives, without a regular expression
    built per constant (ours); unchanged when it does not open so, or has no value there."""
    opening = f"{name} = "
    if not line.startswith(opening):
        return line
    end = len(opening)
    while end < len(line) and line[end] != "#" and not line[end].isspace():  # [^#\s]: str.isspace is \s
        end += 1
    return line if end == len(opening) else f"{opening}{value}{line[end:]}"


def _noted_line(visible: Visible, path: str, name: str) -> str | None:
    """The constant's line as its notes (or a summary) state it: an edit changes only the line it
    fixes, so a noted line holds until its own constant is fixed."""
    lines = [line for noted, at, line in visible.found(NOTED_LINE, NOTES_ROLES) if (noted, at) == (name, path)]
    return lines[-1] if lines else None


def _open_failures(visible: Visible) -> list[tuple[str, str, str]]:
    """Failures stated anywhere it can see (logs, notes, summaries, its narration), none of them fixed since."""
    fixed = _fixed(visible, -1)
    return [(name, path, value) for name, path, value in visible.found(STATED_FAILURE)
            if (name, path) not in fixed]


def _fix(visible: Visible, name: str, path: str, value: str) -> dict[str, Any]:
    """The next step of fixing one failure: read the file for its line, or edit the line."""
    line = _line(visible, path, name)
    if line is None:
        step = obtain(visible, "read_file", {"path": path}, since=_last_edit(visible, path))
        if step is None:
            return visible.call("submit_answer", {"answer": f"Could not read {path}."}, f"I cannot read {path}.")
        return visible.call(step["name"], step["args"], f"{name} in {path} should be {value}; reading the file.")
    new = _set_value(line, name, value)
    if new == line:  # the line already reads right: the failure it was told of is fixed
        return visible.call("run_tests", {}, f"{name} in {path} already reads {value}; running the tests.")
    return visible.call("edit_file", {"new": new, "old": line, "path": path}, f"Setting {name} to {value} in {path}.")


def act(visible: Visible, task: Task) -> dict[str, Any]:
    runs = visible.calls("run_tests")
    latest = runs[-1] if runs else None
    edits = _edits(visible)
    edited_since = latest is not None and bool(edits) and edits[-1].position > latest.position  # in call order
    if latest is None and not edits:
        noted = _open_failures(visible)  # what its notes or a summary say it found before
        if noted:
            return _fix(visible, *noted[0])
    if latest is None or edited_since:
        return visible.call("run_tests", {}, "Running the tests.")
    log = reading(visible, latest).text
    summary = SUMMARY.search(log)
    if summary and not summary.group(1):
        return visible.call("submit_answer", {"answer": "All tests pass."}, "All tests pass.")
    fixed = _fixed(visible, latest.position)
    failure = next(((name, path, value) for name, path, value in FAILURE.findall(log) if (name, path) not in fixed),
                   None)  # the first one not fixed since: the one it fixes
    if failure is None:
        last_edit = edits[-1].position if edits else -1
        step = obtain(visible, "run_tests", {}, since=last_edit)
        if step is None:
            return visible.call("submit_answer", {"answer": "Some tests still fail; I could not see which."},
                                "I cannot see the failure details.")
        return visible.call(step["name"], step["args"], "I need the failure details of the test log.")
    return _fix(visible, *failure)


def notes(visible: Visible, task: Task) -> str:
    """The task in the user's words, the open failures it found with the line to edit of each, and the
    fixes made since the latest visible test run (each fact kept as its writer draws)."""
    runs = visible.calls("run_tests")
    after = runs[-1].position if runs else -1
    lines = ["Task: The repository's tests fail. Make the test suite pass: call run_tests() to see the failures, "
             "fix each with edit_file(path, old, new) on the exact line, run the tests again after each fix, and "
             "call submit_answer when all tests pass."]
    for name, path, value in _open_failures(visible):
        if visible.keeps("failure", name, path):
            lines.append(f"Failing: {name} in {path} should be {value}.")
            line = _line(visible, path, name)
            if line is not None and visible.keeps("line", name, path):
                lines.append(f"Line of {name} in {path}: {line}")
    lines.extend(f"Fixed {name} in {path}." for name, path in sorted(_fixed(visible, after))
                 if visible.keeps(name))
    return "\n".join(lines)

