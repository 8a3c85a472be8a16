"""chained_lookup: follow a chain of fictional ledger records across files, then aggregate.

Each record names its successor's code; the answer is the sum of the weights of every
record on the chain, so a fact from the first hop is still needed at the end (retention
across the whole horizon). Codes are random and records carry no words shared with the
task statement, so search cannot shortcut the walk; near-miss distractor codes punish
sloppy matching. Success is the submitted number equalling the true sum.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from harness.core.config import require
from tasks.base import Knobs, Score, ToolCall, ToolResult, ToolSpec, tool_error
from tasks.memfs import normalize_path
from tasks.workspace import WorkspaceEnvironment, object_schema

FAMILY = "chained_lookup"

_WORDS = (
    "amber basalt cedar delta ember fjord garnet harbor iris juniper kestrel lagoon meadow nectar onyx "
    "pewter quartz russet sierra tundra umber velvet willow xenon yarrow zephyr alder birch copper dune"
).split()
_FILLER = (
    "inventory checked stamped filed reviewed pending archived sealed crate shelf column margin ink folio "
    "bound ledger clerk tally quarter season ferry warehouse cart harbour dock manifest carton twine"
).split()
_NAMES = "Avery Brook Casey Dana Ellis Finley Gray Harper Indigo Jules Kai Lane Morgan Noel Oakley Parker".split()


MAX_LINES = 500_000  # archive lines in all, (hops + distractors) x (1 + filler_lines): ~2 s, ~200 MB with the index


@dataclass
class Params(Knobs):
    """Scale knobs."""

    BOUNDS = {"hops": (1, 2_000), "files": (1, 1_000), "distractors": (1, 20_000), "filler_lines": (0, 200)}

    hops: int = 4  # records on the chain (the horizon)
    files: int = 4  # archive files the records are spread over
    distractors: int = 12  # records not on the chain, some with near-miss codes (the last one ends the chain)
    filler_lines: int = 2  # prose lines after each record (file size)

    def __post_init__(self) -> None:
        super().__post_init__()
        lines = (self.hops + self.distractors) * (1 + self.filler_lines)
        require(lines <= MAX_LINES, f"(hops + distractors) x (1 + filler_lines) archive lines must be at most "
                                    f"{MAX_LINES}, got {lines}")


SYSTEM_PROMPT = (
    "You are a meticulous research agent working in a sandboxed workspace. You can only learn about "
    "the workspace through your tools. Work step by step, one tool call at a time, and finish by "
    "calling submit_answer exactly once. You may keep notes in files under notes/ with write_file."
)

TASK_TEMPLATE = (
    "The files under archive/ hold ledger records, one per line, in the form "
    "`record <CODE> | weight <N> | successor <CODE> | custodian <NAME>`.\n"
    "Start at record {start} and follow the successor chain through {hops} records in total "
    "(the start record is the first). Then call submit_answer with the sum of the weights of "
    "those {hops} records, as a plain integer.\n"
    "Codes must match exactly: records with similar-looking codes are different records. "
    "Use search to find the files and lines where a code appears, and read_file to read a file."
)

SEARCH = ToolSpec("search", "Find every line containing the exact text. Returns file paths and line numbers only, "
                            "not the lines.", object_schema({"text": {"type": "string"}}, ["text"]))

RECORD_FORMAT = "record {code} | weight {weight} | successor {successor} | custodian {custodian}"


def _new_code(rng: random.Random, used: set[str]) -> str:
    while True:
        code = f"{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}-{rng.randint(1000, 9999)}"
        if code not in used:
            used.add(code)
            return code


def _near_miss(code: str, rng: random.Random, used: set[str]) -> str | None:
    digits = list(code[3:])
    i, j = rng.sample(range(4), 2)
    digits[i], digits[j] = digits[j], digits[i]
    candidate = code[:3] + "".join(digits)
    if candidate in used:
        return None
    used.add(candidate)
    return candidate


class ChainedLookup(WorkspaceEnvironment):
    family = FAMILY
    tool_seconds = {"search": (1.0, 5.0)}  # a grep over every file (ours)
    system_prompt = SYSTEM_PROMPT
    generated = ("params", "start", "expected", "hop_files")

    def __init__(self, params: Params, seed: int):
        self.params = params
        rng = random.Random(f"{FAMILY}:{seed}")
        used: set[str] = set()
        chain = [_new_code(rng, used) for _ in range(params.hops)]
        extra = [_new_code(rng, used) for _ in range(params.distractors)]
        # Near-miss twins of chain codes replace some plain distractors.
        for position in range(min(len(chain), len(extra) // 2)):
            twin = _near_miss(chain[position], rng, used)
            if twin is not None:
                used.discard(extra[position])
                extra[position] = twin
        records: list[tuple[str, int, str]] = []
        for position, code in enumerate(chain):
            successor = chain[position + 1] if position + 1 < len(chain) else extra[-1]
            records.append((code, rng.randint(10, 99), successor))
        for code in extra:
            records.append((code, rng.randint(10, 99), rng.choice(extra)))
        self.start = chain[0]
        self.expected = sum(weight for _, weight, _ in records[: params.hops])
        names = rng.sample(_WORDS, min(params.files, len(_WORDS)))
        paths = [f"archive/{names[i % len(names)]}-{i + 1:02d}.txt" for i in range(params.files)]
        contents: dict[str, list[str]] = {path: [] for path in paths}
        rng.shuffle(records)
        hops = set(chain)
        hop_files: dict[str, list[str]] = {}
        for code, weight, successor in records:
            path = rng.choice(paths)
            lines = contents[path]
            if code in hops:
                hop_files.setdefault(path, []).append(code)
            lines.append(RECORD_FORMAT.format(code=code, weight=weight, successor=successor,
                                              custodian=rng.choice(_NAMES)))
            for _ in range(params.filler_lines):
                lines.append("note: " + " ".join(rng.choice(_FILLER) for _ in range(rng.randint(8, 14))))
        super().__init__({path: "\n".join(lines) + "\n" for path, lines in contents.items()}, indexed=True)
        self.hop_files = {path: tuple(codes) for path, codes in hop_files.items()}  # the chain's records by file
        self.hops_read: set[str] = set()  # chain records the agent has read

    def initial_user_messages(self) -> list[str]:
        return [TASK_TEMPLATE.format(start=self.start, hops=self.params.hops)]

    def extra_specs(self) -> list[ToolSpec]:
        return [SEARCH]

    def run_extra(self, call: ToolCall) -> ToolResult:
        text = (call.args or {})["text"]
        if not text.strip():
            return tool_error("search: text must not be empty")
        hits = self.fs.search(text)
        if not hits:
            return ToolResult(f"No matches for {text!r}.")
        return ToolResult(f"{len(hits)} match(es) for {text!r}:\n" + "\n".join(f"{p}:{n}" for p, n in hits))

    def run_tool(self, call: ToolCall) -> ToolResult:
        result = super().run_tool(call)
        if call.name == "read_file" and not result.is_error:
            self.hops_read.update(self.hop_files.get(normalize_path(call.args["path"]), ()))
        return result

    def progress(self) -> int:
        """Hops resolved (chain records read), then the final answer."""
        return len(self.hops_read) + int(self.submitted)

    def score(self) -> Score:
        match = re.search(r"-?\d+", str(self.answer)) if self.submitted else None
        given = int(match.group()) if match else None
        success = given == self.expected
        return Score(success=success, score=1.0 if success else 0.0,
                     detail={"expected": self.expected, "given": given})


def build(params: Params, seed: int) -> ChainedLookup:
    return ChainedLookup(params, seed)
