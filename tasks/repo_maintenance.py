"""repo_maintenance: fix a simulated repository until its long test log is clean.

Source files under src/ hold configuration constants; some have wrong values. run_tests
prints a long log of passing tests; each failure's detail (which constant, in which file,
what it should be) sits in the middle of the log, and only the failure count is at its end.
The agent must read the source file and make an exact edit (edit_file replaces text that
occurs exactly once), and near-miss constants (`MAX_RETRY_LIMIT` beside `RETRY_LIMIT`) punish
loose edits. Success is the final repository passing the checker: every wrong constant set
right and nothing else changed. The score is the fraction of constants right, zero when
anything else was changed.
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any

from tasks.base import Knobs, Score, ToolCall, ToolResult, ToolSpec, tool_error
from tasks.memfs import PathError, normalize_path
from tasks.workspace import WorkspaceEnvironment, object_schema

FAMILY = "repo_maintenance"
_MODULES = ("settings", "network", "storage", "billing", "scheduler", "cache", "auth", "export", "search", "mailer")
_STEMS = ("RETRY_LIMIT", "TIMEOUT_SECONDS", "POOL_SIZE", "BATCH_SIZE", "PAGE_SIZE", "MAX_WORKERS", "BACKOFF_MS",
          "QUEUE_DEPTH", "CHUNK_KB", "TTL_MINUTES", "PORT_OFFSET", "SHARD_COUNT", "FLUSH_EVERY", "WINDOW_SIZE")
_SUFFIXES = ("", "_EU", "_US", "_APAC", "_TEST", "_BULK", "_LIVE", "_EDGE", "_CORE", "_LEGACY")
_NAMES = tuple(stem + suffix for suffix in _SUFFIXES for stem in _STEMS)
_NOUNS = ("request", "worker", "upload", "session", "record", "invoice", "report", "token", "shard", "batch")
_VERBS = ("parse", "load", "flush", "render", "merge", "sync", "index", "route", "encode", "verify")


@dataclass
class Params(Knobs):
    """Scale knobs. At the bounds: ~1 s and ~170 MB to generate; each run_tests log ~7 MB."""

    BOUNDS = {"bugs": (1, len(_NAMES)), "modules": (1, len(_MODULES)), "log_lines": (10, 100_000),
              "file_lines": (0, 100_000), "distractors": (0, 2)}

    bugs: int = 2  # wrong constants to fix (the horizon: one test run per fix)
    modules: int = 3  # source files the constants are spread over
    log_lines: int = 300  # passing-test lines in each test log (output size)
    file_lines: int = 20  # filler code lines per source file
    distractors: int = 1  # near-miss constants per wrong one


SYSTEM_PROMPT = (
    "You are a software maintenance agent working on a simulated repository through tools. Work one tool "
    "call at a time. You may keep notes in files under notes/ with write_file and read them back with read_file."
)
TASK = ("The repository's tests fail. Make the test suite pass: call run_tests() to see the failures (the log is "
        "long; each failure's details are in the middle, only the count is at the end), read the source file a "
        "failure names, and fix it with edit_file(path, old, new), where old must match the file's text exactly "
        "and occur once. Fix only the constant the failure names; change nothing else. Run the tests again after "
        "each fix. When all tests pass, call submit_answer with a one-line summary.")
FAILURE = ("____________________ {test} ____________________\n"
           "    def {test}():\n"
           ">       assert {module}.{name} == {expected}\n"
           "E       AssertionError: {name} in {path} should be {expected}, found {found}\n"
           "tests/test_{module}.py:{line}: AssertionError")


@dataclass(frozen=True)
class Constant:
    path: str
    name: str
    right: int
    wrong: int
    comment: str

    def line(self, value: int) -> str:
        return f"{self.name} = {value}  # {self.comment}"


class RepoMaintenance(WorkspaceEnvironment):
    family = FAMILY
    tool_seconds = {"run_tests": (30.0, 240.0)}  # the whole suite: tens of seconds to minutes (ours)
    system_prompt = SYSTEM_PROMPT
    generated = ("params", "bugs", "expected", "modules", "passing", "log_state")

    def __init__(self, params: Params, seed: int):
        rng = random.Random(f"{FAMILY}:{seed}")
        modules = rng.sample(_MODULES, params.modules)
        stems = rng.sample(_NAMES, params.bugs)
        self.bugs: list[Constant] = []
        lines: dict[str, list[str]] = {f"src/{m}.py": [f'"""The {m} module\'s configuration and helpers."""', ""]
                                       for m in modules}
        for stem in stems:
            path = f"src/{rng.choice(modules)}.py"
            right = rng.randint(2, 500)
            bug = Constant(path, stem, right, rng.choice([v for v in range(2, 500) if v != right]),
                           f"{rng.choice(_NOUNS)} {stem.lower().replace('_', ' ')}")
            self.bugs.append(bug)
            lines[path].append(bug.line(bug.wrong))
            for prefix in ("MAX_", "DEFAULT_")[: params.distractors]:
                lines[path].append(f"{prefix}{stem} = {bug.wrong}  # {rng.choice(_NOUNS)} {prefix.lower()}limit")
        for path in lines:
            constants = lines[path][2:]
            rng.shuffle(constants)
            lines[path][2:] = constants
            lines[path].append("")
            for i in range(params.file_lines // 2):
                lines[path].append(f"def {rng.choice(_VERBS)}_{rng.choice(_NOUNS)}_{i}(item):")
                lines[path].append(f"    return item  # {rng.choice(_VERBS)} step {i}")
        files = {path: "\n".join(body) + "\n" for path, body in lines.items()}
        self.expected = {path: text for path, text in files.items()}
        for bug in self.bugs:
            self.expected[bug.path] = self.expected[bug.path].replace(bug.line(bug.wrong) + "\n",
                                                                      bug.line(bug.right) + "\n")
        super().__init__(files)
        self.params = params
        self.modules = modules
        self.passing, self.log_state = self._passing_lines(f"{FAMILY}:{seed}:log")
        self.edits_applied = 0
        self._checked_paths = sorted({bug.path for bug in self.bugs})
        self._last_log: tuple[tuple[str | None, ...], str] | None = None  # (those files' texts, their test log)

    def initial_user_messages(self) -> list[str]:
        return [TASK]

    def extra_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec("run_tests", "Run the whole test suite and return its (long) log.", object_schema({})),
            ToolSpec("edit_file", "Replace text in a source file: `old` must occur exactly once in the file.",
                     object_schema({"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
                                   ["path", "old", "new"]), changes_state=True),
        ]

    def _failing(self) -> list[Constant]:
        """The constants whose right line is not in their file; each file is framed by newlines once, not
        once per constant (a long suite's task checks 70 constants in 10 files on every test run)."""
        framed = {path: "\n" + self.fs.files.get(path, "") for path in self._checked_paths}
        return [bug for bug in self.bugs if f"\n{bug.line(bug.right)}\n" not in framed[bug.path]]

    def _as_shipped(self, path: str, text: str) -> str:
        """The file with every checked constant put back to its shipped value: what else changed shows."""
        for bug in self.bugs:
            if bug.path == path:
                text = text.replace(f"\n{bug.line(bug.right)}\n", f"\n{bug.line(bug.wrong)}\n")
        return text

    def _passing_lines(self, log_seed: str) -> tuple[list[str], Any]:
        """The test log's PASSED lines and its generator's state after them: the same for every run_tests."""
        rng = random.Random(log_seed)
        lines = []
        for i in range(self.params.log_lines):
            module = rng.choice(self.modules)
            percent = (i + 1) * 100 // self.params.log_lines
            lines.append(f"tests/test_{module}.py::test_{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}_{i} PASSED "
                         f"[{percent:3d}%]")
        return lines, rng.getstate()

    def _log(self) -> str:
        """The test log of the files as they are; the last one is kept with the texts it was made of, as the log
        depends on nothing else (ours: an agent runs the tests again and again between edits)."""
        texts = tuple(self.fs.files.get(path) for path in self._checked_paths)
        if self._last_log is None or self._last_log[0] != texts:
            self._last_log = (texts, self._fresh_log())
        return self._last_log[1]

    def _fresh_log(self) -> str:
        rng = random.Random()
        rng.setstate(self.log_state)
        failing = self._failing()
        lines = list(self.passing)
        middle = len(lines) // 2
        values = {path: _assigned(self.fs.files.get(path, "")) for path in {bug.path for bug in failing}}
        for offset, bug in enumerate(failing):
            module = bug.path[4:-3]
            block = FAILURE.format(test=f"test_{bug.name.lower()}", module=module, name=bug.name,
                                   expected=bug.right, found=values[bug.path].get(bug.name, "missing"), path=bug.path,
                                   line=rng.randint(10, 200))
            lines.insert(middle + offset * 3, block)
        summary = (f"{len(failing)} failed, {self.params.log_lines} passed" if failing
                   else f"{self.params.log_lines} passed")
        return "\n".join(["============ test session starts ============", *lines,
                          f"============ {summary} in {rng.randint(20, 90)}.{rng.randint(0, 9)}s ============"])

    def run_extra(self, call: ToolCall) -> ToolResult:
        args = call.args or {}
        if call.name == "run_tests":
            return ToolResult(self._log())
        if call.name == "edit_file":
            try:
                path = normalize_path(args["path"])
            except PathError as exc:
                return tool_error(f"edit_file: {exc}")
            if not path.startswith("src/"):
                return tool_error(f"edit_file: only files under src/ can be edited, not {path}")
            text = self.fs.files.get(path)
            if text is None:
                return tool_error(f"edit_file: no such file: {path}")
            if not args["old"]:
                return tool_error("edit_file: old must not be empty")
            found = text.count(args["old"])
            if found != 1:
                return tool_error(f"edit_file: old text occurs {found} times in {path}; it must occur exactly once "
                                  "(include more of the line)")
            self.fs.write(path, text.replace(args["old"], args["new"]))
            self.edits_applied += 1
            return ToolResult(f"Edited {path}: replaced 1 occurrence.")
        return tool_error(f"unknown tool {call.name!r}")

    def progress(self) -> int:
        """Edits applied, then the final answer."""
        return self.edits_applied + int(self.submitted)

    def score(self) -> Score:
        source = {p: t for p, t in self.fs.files.items() if p.startswith("src/")}
        clean = source == self.expected
        untouched = set(source) == set(self.expected) and all(
            self._as_shipped(p, source[p]) == self._as_shipped(p, self.expected[p]) for p in self.expected)
        right = len(self.bugs) - len(self._failing())
        return Score(success=clean, score=right / len(self.bugs) if untouched else 0.0,
                     detail={"fixed": right, "bugs": len(self.bugs), "other_changes": not untouched})


def build(params: Params, seed: int) -> RepoMaintenance:
    return RepoMaintenance(params, seed)


@functools.lru_cache(maxsize=256)
def _assigned(source: str) -> dict[str, str]:
    """The value of each `NAME = value  # comment` line of a source file (the first line of each name).
    Kept for the last files read (read-only): a test log reads the same unedited files again and again."""
    values: dict[str, str] = {}
    for line in source.splitlines():
        name, equals, _ = line.partition(" = ")
        if equals:
            values.setdefault(name, line.split("=", 1)[1].split("#")[0].strip())
    return values
