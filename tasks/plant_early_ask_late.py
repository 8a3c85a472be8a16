"""plant_early_ask_late: facts stated early, some replaced later, asked about at the very end.

The opening message states facts; then the user hands over batches of log files to audit
(read each, record its ERROR-line count), one batch per turn, with updates that replace
earlier facts arriving alongside later batches. The last message asks the current value of
every fact, plus one fact never given, for which the right answer is `unknown`. Logs
contain memos mentioning the same fact names with other values: only the user's word
counts. A sliding window or a summary written before an update loses or stales the facts;
a strategy keeping user messages (or good notes) keeps them.
The score is the mean of the fraction of questions answered right and the fraction of logs
counted right; success is both being whole.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from harness.core.config import require
from tasks.base import Knobs, Score, ToolCall, ToolResult, ToolSpec, tool_error
from tasks.workspace import WorkspaceEnvironment, object_schema

FAMILY = "plant_early_ask_late"
FACT_NAMES = ("locker code", "courier name", "meeting room", "budget code", "vendor id", "backup day",
              "badge color", "parking bay", "server nickname", "escrow account", "radio channel", "shipping dock")
_WORDS = ("Ostrander Halvorsen Quillon Marrow Tesselby Varga Brightwater Calloway Dunmore Elsworth Fairweather "
          "Greystoke Hollins Ivers Jansky Kettering").split()
_CHOICES = {"name": _WORDS, "nickname": _WORDS,
            "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
            "color": ("teal", "amber", "crimson", "violet", "ochre", "slate", "olive", "indigo")}
_SERVICES = ("billing", "auth", "search", "ingest", "mailer", "scheduler", "export", "gateway")
_EVENTS = ("request served", "cache refreshed", "session closed", "job queued", "batch flushed", "retry scheduled",
           "connection pooled", "index merged", "token renewed", "heartbeat ok")
_FAILS = ("timeout talking to upstream", "disk quota exceeded", "checksum mismatch", "queue overflow",
          "connection reset by peer", "malformed payload")


MAX_LINES = 1_000_000  # log lines in all, batches x files_per_batch x (file_lines + distractors): ~2.5 s, ~60 MB


@dataclass
class Params(Knobs):
    """Scale knobs."""

    BOUNDS = {"facts": (1, len(FACT_NAMES) - 1), "updates": (0, len(FACT_NAMES) - 1), "batches": (1, 200),
              "files_per_batch": (1, 100), "file_lines": (1, 10_000), "distractors": (0, 1_000)}

    facts: int = 3  # facts stated in the opening message
    updates: int = 1  # facts replaced later (each by a new value)
    batches: int = 2  # stretches of tool work between the facts and the questions (the horizon)
    files_per_batch: int = 2  # log files to audit per batch
    file_lines: int = 12  # lines per log file (output size)
    distractors: int = 1  # memo lines per file naming a fact with a wrong value

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.updates <= self.facts, f"updates must be in [0, facts={self.facts}], got {self.updates}")
        lines = self.batches * self.files_per_batch * (self.file_lines + self.distractors)
        require(lines <= MAX_LINES, f"batches x files_per_batch x (file_lines + distractors) log lines must be at "
                                    f"most {MAX_LINES}, got {lines}")


SYSTEM_PROMPT = (
    "You are an assistant helping a user over a long session with simulated tools. The user tells you "
    "facts to remember and gives you work in batches. Work one tool call at a time. You may keep notes "
    "in files under notes/ with write_file and read them back with read_file."
)
OPENING = "Before we start, some facts to keep in mind; I will ask about them at the end:\n{facts}"
FACT = "- The {name} is {value}."
UPDATE = "Update: the {name} is now {value} (this replaces what I said before)."
BATCH = ("Audit batch {number} of {total}: {files}. For each file, read it with read_file and call "
         "record_count(path, errors) with the number of its lines that contain the word ERROR.")
QUESTIONS = ("Final questions. Call submit_answer with one line of 'name=value' pairs separated by '; ', "
             "in this order: {names}. Give the current values (after my updates). If I never told you a "
             "value, write unknown for it.")
ANSWER_PAIR = re.compile(r"\s*([^=;]+?)\s*=\s*([^;]*?)\s*(?:;|$)")


class PlantEarlyAskLate(WorkspaceEnvironment):
    family = FAMILY
    system_prompt = SYSTEM_PROMPT
    generated = ("params", "given", "never", "values", "current", "counts", "batch_files", "messages", "asked")

    def __init__(self, params: Params, seed: int):
        rng = random.Random(f"{FAMILY}:{seed}")
        names = rng.sample(FACT_NAMES, params.facts + 1)
        self.given, self.never = names[:-1], names[-1]
        self.values = {name: self._value(rng, name) for name in self.given}
        updated = rng.sample(self.given, params.updates)
        self.current = dict(self.values)
        update_lines: list[tuple[int, str]] = []  # (batch index the update arrives with, text)
        for name in updated:
            value = self._value(rng, name, avoid=self.values[name])
            self.current[name] = value
            update_lines.append((rng.randint(1, params.batches), UPDATE.format(name=name, value=value)))
        files: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.batch_files: list[list[str]] = []
        for b in range(params.batches):
            paths = [f"logs/batch{b + 1:02d}/{rng.choice(_SERVICES)}-{f + 1:02d}.log" for f in range(params.files_per_batch)]
            self.batch_files.append(paths)
            for path in paths:
                files[path], self.counts[path] = self._log(rng, params, names)
        super().__init__(files)
        self.params = params
        self.messages: list[str] = []
        for b, paths in enumerate(self.batch_files):
            head = [text for at, text in update_lines if at == b]
            self.messages.append("\n".join(head + [BATCH.format(number=b + 1, total=params.batches,
                                                                files=", ".join(paths))]))
        tail = [text for at, text in update_lines if at == params.batches]
        self.asked = rng.sample(self.given, len(self.given))
        self.asked.insert(rng.randint(0, len(self.asked)), self.never)
        self.messages.append("\n".join(tail + [QUESTIONS.format(names=", ".join(self.asked))]))
        self.messages[0] = OPENING.format(facts="\n".join(FACT.format(name=n, value=self.values[n])
                                                          for n in self.given)) + "\n\n" + self.messages[0]
        self.delivered = 1
        self.recorded: dict[str, int] = {}

    @staticmethod
    def _value(rng: random.Random, name: str, avoid: str = "") -> str:
        while True:
            words = _CHOICES.get(name.split()[-1])
            value = rng.choice(words) if words else f"{rng.choice('BCDFGHKMPRSTVZ')}{rng.randint(100, 9999)}"
            if value != avoid:
                return value

    def _log(self, rng: random.Random, params: Params, names: list[str]) -> tuple[str, int]:
        lines, errors = [], 0
        for i in range(params.file_lines):
            stamp = f"2026-03-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
            if rng.random() < 0.15:
                errors += 1
                lines.append(f"{stamp} ERROR {rng.choice(_SERVICES)}: {rng.choice(_FAILS)} (attempt {rng.randint(1, 9)})")
            else:
                lines.append(f"{stamp} INFO {rng.choice(_SERVICES)}: {rng.choice(_EVENTS)} in {rng.randint(2, 900)} ms")
        for _ in range(params.distractors):
            name = rng.choice(names)
            lines.insert(rng.randint(0, len(lines)),
                         f"2026-03-{rng.randint(1, 28):02d}T08:00:00 INFO memo: the {name} is {self._value(rng, name)}")
        return "\n".join(lines) + "\n", errors

    def initial_user_messages(self) -> list[str]:
        return [self.messages[0]]

    def _ready(self) -> bool:
        if self.delivered >= len(self.messages):
            return False
        return all(path in self.recorded for path in self.batch_files[self.delivered - 1])

    def user_messages_due(self, requests_done: int) -> list[str]:
        if not self._ready():
            return []
        self.delivered += 1
        return [self.messages[self.delivered - 1]]

    def has_pending_user_messages(self) -> bool:
        return self._ready()

    def extra_specs(self) -> list[ToolSpec]:
        return [ToolSpec("record_count", "Record the number of lines containing ERROR in an audited log file.",
                         object_schema({"path": {"type": "string"}, "errors": {"type": "integer"}},
                                       ["path", "errors"]), changes_state=True)]

    def run_extra(self, call: ToolCall) -> ToolResult:
        if call.name != "record_count":
            return tool_error(f"unknown tool {call.name!r}")
        path = call.args["path"].strip()
        assigned = {p for paths in self.batch_files[: self.delivered] for p in paths}
        if path not in assigned:
            return tool_error(f"record_count: {path!r} is not a log file of a batch you were given")
        self.recorded[path] = call.args["errors"]
        return ToolResult(f"Recorded {call.args['errors']} for {path}.")

    def progress(self) -> int:
        """Log files counted, then the answers submitted."""
        return len(self.recorded) + int(self.submitted)

    def expected_answers(self) -> dict[str, str]:
        return {name: self.current.get(name, "unknown") for name in self.asked}

    def score(self) -> Score:
        given = {k.strip().lower(): v.strip() for k, v in ANSWER_PAIR.findall(str(self.answer or ""))}
        expected = self.expected_answers()
        answers_right = sum(given.get(name, "").lower() == value.lower() for name, value in expected.items())
        counts_right = sum(self.recorded.get(path) == n for path, n in self.counts.items())
        score = (answers_right / len(expected) + counts_right / len(self.counts)) / 2
        success = self.submitted and answers_right == len(expected) and counts_right == len(self.counts)
        return Score(success=success, score=score,
                     detail={"expected": expected, "given": given, "answers_right": answers_right,
                             "counts_right": counts_right, "logs": len(self.counts)})


def build(params: Params, seed: int) -> PlantEarlyAskLate:
    return PlantEarlyAskLate(params, seed)
