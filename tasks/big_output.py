"""big_output: drain a queue of huge request dumps, then answer questions about their middles.

The opening turn asks the agent to fetch every dump (each 100k+ characters at default
scale) without analysing it; a dump leaves the queue when fetched, so it can never be
fetched again. Then the user asks one question per turn: the status of one request in one
dump. The asked line sits in the middle of its dump (35-65% of its characters) and
near-miss request ids with other statuses sit near its head and tail. Clamping a dump to
its head and tail loses the answer for good; offloading the whole dump and paging it
(read_tool_result) recovers it; keeping everything works while the dumps fit the window.
The score is the fraction of questions answered right; success is all of them.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from harness.core.config import require
from tasks.base import Knobs, Score, ToolCall, ToolResult, ToolSpec, tool_error
from tasks.workspace import WorkspaceEnvironment, object_schema

FAMILY = "big_output"
_PATHS = ("orders", "carts", "users", "invoices", "search", "inventory", "sessions", "reports", "payments")
_STATUSES = (200, 201, 204, 301, 304, 400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504)
HEX = "0123456789abcdef"


MAX_CHARS = 50_000_000  # dump characters in all, dumps x dump_chars: ~4 s, ~70 MB
# Characters per question a dump must have: a dump line has at most 80 characters (LINE, with its newline), and
# the asked lines are distinct lines of the middle 30%, so a dump of c characters has room for c / 267.
CHARS_PER_QUESTION = 300


@dataclass
class Params(Knobs):
    """Scale knobs."""

    BOUNDS = {"dumps": (1, 100), "dump_chars": (2_000, 5_000_000), "questions": (1, 200), "distractors": (0, 50)}

    dumps: int = 2  # dumps in the queue
    dump_chars: int = 110_000  # characters per dump (output size)
    questions: int = 2  # questions asked after the dumps are in (the horizon), spread evenly over the dumps
    distractors: int = 3  # near-miss request ids per question, near the dump's head and tail

    def __post_init__(self) -> None:
        super().__post_init__()
        chars = self.dumps * self.dump_chars
        require(chars <= MAX_CHARS, f"dumps x dump_chars must be at most {MAX_CHARS} characters, got {chars}")
        per_dump, room = -(-self.questions // self.dumps), self.dump_chars // CHARS_PER_QUESTION
        require(per_dump <= room, f"questions per dump (questions / dumps, rounded up) must be at most dump_chars / "
                                  f"{CHARS_PER_QUESTION} = {room}, got {per_dump}")


SYSTEM_PROMPT = (
    "You are an on-call assistant with simulated tools. Tool outputs can be very large. Work one tool "
    "call at a time. You may keep notes in files under notes/ with write_file and read them back with read_file."
)
OPENING = ("Collect the overnight request dumps: call fetch_dump(dump) for each of the {dumps} dumps D1 to "
           "D{dumps}, in order. A fetched dump leaves the queue and cannot be fetched again. "
           "Don't analyse them yet; afterwards I will ask you questions about them, one at a time.")
QUESTION = ("Question {number} of {total}: in dump {dump}, what is the status of request {request}? Answer with "
            "answer_question(number={number}, value=<the status code>); request ids must match exactly.")
LINE = "{request} host=web-{host:02d} status={status} latency={latency}ms path=/api/v2/{path}/{item}"


@dataclass(frozen=True)
class Question:
    dump: str
    request: str
    status: int


def _request_id(rng: random.Random) -> str:
    return "req-" + "".join(rng.choice(HEX) for _ in range(8))


def _near_miss(request: str, rng: random.Random) -> str:
    position = rng.randrange(4, len(request))
    return request[:position] + rng.choice(HEX.replace(request[position], "")) + request[position + 1:]


def _line(rng: random.Random, request: str, status: int | None = None) -> str:
    return LINE.format(request=request, host=rng.randint(1, 40), status=status or rng.choice(_STATUSES),
                       latency=rng.randint(2, 2000), path=rng.choice(_PATHS), item=rng.randint(1, 99999))


class BigOutput(WorkspaceEnvironment):
    family = FAMILY
    tool_seconds = {"fetch_dump": (10.0, 60.0)}  # 100k+ characters pulled from a store (ours)
    system_prompt = SYSTEM_PROMPT
    generated = ("params", "names", "questions", "dumps")

    def __init__(self, params: Params, seed: int):
        super().__init__()
        self.params = params
        rng = random.Random(f"{FAMILY}:{seed}")
        self.names = [f"D{i + 1}" for i in range(params.dumps)]
        self.questions: list[Question] = []
        planted: dict[str, list[tuple[str, int]]] = {name: [] for name in self.names}
        for q in range(params.questions):
            dump = self.names[q % params.dumps]
            question = Question(dump, _request_id(rng), rng.choice(_STATUSES))
            self.questions.append(question)
            planted[dump].append((question.request, question.status))
        self.dumps = [self._dump(random.Random(f"{FAMILY}:{seed}:{name}"), name, planted[name]) for name in self.names]
        self.fetched = 0
        self.asked = 0
        self.answers: dict[int, str] = {}

    def _dump(self, rng: random.Random, name: str, planted: list[tuple[str, int]]) -> str:
        lines: list[str] = []
        size = 0
        while size < self.params.dump_chars:
            lines.append(_line(rng, _request_id(rng)))
            size += len(lines[-1]) + 1
        edge = max(1, len(lines) // 10)
        middles = rng.sample(range(int(len(lines) * 0.35), int(len(lines) * 0.65) + 1), len(planted))
        for (request, status), middle in zip(planted, middles):
            lines[middle] = _line(rng, request, status)
            for _ in range(self.params.distractors):
                spot = rng.choice([rng.randrange(0, edge), rng.randrange(len(lines) - edge, len(lines))])
                lines[spot] = _line(rng, _near_miss(request, rng), rng.choice([s for s in _STATUSES if s != status]))
        body = "\n".join(lines)
        return f"== dump {name} ({len(lines)} requests) ==\n{body}\n== end of dump {name} =="

    def initial_user_messages(self) -> list[str]:
        return [OPENING.format(dumps=self.params.dumps)]

    def _ready(self) -> bool:
        if self.fetched < len(self.dumps) or self.asked >= len(self.questions):
            return False
        return self.asked == 0 or self.asked in self.answers

    def user_messages_due(self, requests_done: int) -> list[str]:
        if not self._ready():
            return []
        self.asked += 1
        question = self.questions[self.asked - 1]
        return [QUESTION.format(number=self.asked, total=len(self.questions), dump=question.dump,
                                request=question.request)]

    def has_pending_user_messages(self) -> bool:
        return self._ready()

    def extra_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec("fetch_dump", "Fetch the next request dump from the queue, by its name (it is removed from the "
                                   "queue). The output is very large: one line per request.",
                     object_schema({"dump": {"type": "string", "description": "e.g. D1"}}, ["dump"]),
                     changes_state=True),
            ToolSpec("answer_question", "Answer one of the user's questions by its number.",
                     object_schema({"number": {"type": "integer"}, "value": {"type": "string"}}, ["number", "value"]),
                     changes_state=True),
        ]

    def run_extra(self, call: ToolCall) -> ToolResult:
        if call.name == "fetch_dump":
            name = call.args["dump"].strip()
            if name not in self.names:
                return tool_error(f"fetch_dump: no dump {name!r}; the dumps are D1 to D{len(self.names)}")
            if self.names.index(name) < self.fetched:
                return tool_error(f"fetch_dump: dump {name} was already fetched and has left the queue")
            if self.names.index(name) > self.fetched:
                return tool_error(f"fetch_dump: dump {name} is not next; fetch {self.names[self.fetched]} first")
            self.fetched += 1
            return ToolResult(self.dumps[self.fetched - 1])
        if call.name == "answer_question":
            number = call.args["number"]
            if not 1 <= number <= self.asked:
                return tool_error(f"answer_question: no question number {number} has been asked")
            if number in self.answers:
                return tool_error(f"answer_question: question {number} is already answered")
            self.answers[number] = call.args["value"].strip()
            if len(self.answers) == len(self.questions):
                return ToolResult(f"Answer {number} recorded. All questions are answered; call submit_answer to finish.")
            return ToolResult(f"Answer {number} recorded.")
        return tool_error(f"unknown tool {call.name!r}")

    def progress(self) -> int:
        """Dumps fetched, questions answered, then the final answer."""
        return self.fetched + len(self.answers) + int(self.submitted)

    def score(self) -> Score:
        right = sum(self.answers.get(i + 1) == str(q.status) for i, q in enumerate(self.questions))
        return Score(success=right == len(self.questions), score=right / len(self.questions),
                     detail={"right": right, "questions": len(self.questions),
                             "expected": [q.status for q in self.questions], "given": self.answers})


def build(params: Params, seed: int) -> BigOutput:
    return BigOutput(params, seed)
