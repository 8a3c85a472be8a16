"""Every command in README.md and docs/*.md stays runnable.

Commands are the `ctxbench ...` and `python -m harness...` lines of shell-fenced blocks (```bash, sh,
shell, console). Each is parsed by the real parser (an unknown flag or value fails), every file it
names must exist in the repository, be a file the same page defines (a fenced block headed
`# NAME` or with `title="NAME"`) or be written by an earlier command of its block (`--out`), and the
cheap ones (help, strategies, tasks, mock runs of the smoke suite or a page's own task file, trace
replays, report/replay of a directory the block wrote) are run in a scratch copy of the repository.
A synopsis with placeholders belongs in a ```text block. The own-strategy example of
docs/extending.md runs by import path.
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
EXTENDING = ROOT / "docs" / "extending.md"
SHELL = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^```(\S*)(.*)$")
# Options whose value is a file unless it is inline JSON.
FILE_OPTIONS = {"--tasks", "--strategy-config", "--config", "--profiles", "--clock", "--retry", "--mock-knobs",
                "--summarizer-knobs", "--mock-faults", "--faults"}
DIR_OPTIONS = {"--resume"}  # a directory that must be there (written before, or in the repository)
POSITIONAL_PATHS = {"traces", "replay", "report", "sweep", "show", "export"}  # subcommands whose positional arguments are paths
OUTPUT_COMMANDS = {"run", "sweep", "traces"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    title: str | None  # title="NAME" of the fence
    lines: tuple[str, ...]

    @property
    def defines(self) -> str | None:
        """The file this block is the content of: its title, else a first-line `# NAME` comment naming a file."""
        if self.title:
            return self.title
        head = re.match(r"#\s*([\w./-]+\.\w+)\b", self.lines[0]) if self.lines else None
        return head.group(1) if head else None


@dataclass(frozen=True)
class Command:
    block: Block
    line: int
    tool: str  # "ctxbench" or "harness.bench"
    argv: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.block.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a markdown page."""
    found, current = [], None
    for number, text in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(text.strip())
        if current is None and fence:
            title = re.search(r'title="([^"]+)"', fence.group(2))
            current = (number, fence.group(1).lower(), title.group(1) if title else None, [])
        elif current is not None and text.strip() == "```":
            found.append(Block(page, current[0], current[1], current[2], tuple(current[3])))
            current = None
        elif current is not None:
            current[3].append(text)
    return found


def logical_lines(block: Block) -> list[tuple[int, str]]:
    """Lines of a shell block with backslash continuations joined, each with its first line number."""
    joined, start, parts = [], None, []
    for offset, text in enumerate(block.lines, 1):
        start = start or block.line + offset
        if text.rstrip().endswith("\\"):
            parts.append(text.rstrip()[:-1])
            continue
        joined.append((start, " ".join([*parts, text])))
        start, parts = None, []
    return joined


def split_commands(text: str) -> list[list[str]]:
    """Words of each simple command of a shell line (`&&`, `;`, `|`, `&` separate; `#` starts a comment)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, words = [], []
    for token in lexer:
        if token in {"&&", "||", ";", "|", "&"}:
            commands.append(words)
            words = []
        else:
            words.append(token)
    return [words for words in [*commands, words] if words]


def as_command(block: Block, line: int, words: list[str]) -> Command | None:
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value prefixes
        words = words[1:]
    if words[:1] == ["ctxbench"]:
        return Command(block, line, "ctxbench", tuple(words[1:]))
    if len(words) >= 3 and re.fullmatch(r"(\S*/)?python3?", words[0]) and words[1] == "-m":
        if words[2] == "harness":
            return Command(block, line, "ctxbench", tuple(words[3:]))
        if words[2] == "harness.bench":
            return Command(block, line, "harness.bench", tuple(words[3:]))
    return None


def commands(block: Block) -> list[Command]:
    return [command for line, text in logical_lines(block) for words in split_commands(text)
            if (command := as_command(block, line, words)) is not None]


ALL_BLOCKS = [block for page in PAGES for block in blocks(page)]
SHELL_BLOCKS = [block for block in ALL_BLOCKS if block.lang in SHELL]
ALL_COMMANDS = [command for block in SHELL_BLOCKS for command in commands(block)]


def page_files(page: Path) -> dict[str, str]:
    """Files a page defines, by name: the contents of its titled or `# NAME`-headed blocks."""
    files = {}
    for block in ALL_BLOCKS:
        if block.page == page and block.lang not in SHELL and block.defines:
            body = block.lines[1:] if not block.title else block.lines
            files[block.defines] = "\n".join(body) + "\n"
    return files


class Parsed(Exception):
    """Raised in place of running a command once the real parser accepted it."""

    def __init__(self, namespace: argparse.Namespace):
        super().__init__("parsed")
        self.namespace = namespace


def parse(command: Command, monkeypatch) -> argparse.Namespace | None:
    """The namespace the command's real parser gives (None for --help/--version); fails on a parse error."""
    real = argparse.ArgumentParser.parse_args

    def parse_only(self, args=None, namespace=None):
        raise Parsed(real(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)
    entry = main if command.tool == "ctxbench" else __import__("harness.bench", fromlist=["main"]).main
    try:
        entry(list(command.argv))
    except Parsed as parsed:
        return parsed.namespace
    except SystemExit as exc:
        assert exc.code == 0, f"{command.where}: `{command.tool} {shlex.join(command.argv)}` does not parse"
        return None
    finally:
        monkeypatch.setattr(argparse.ArgumentParser, "parse_args", real)
    pytest.fail(f"{command.where}: the parser returned without a namespace")


def option_values(argv: tuple[str, ...], names: set[str]) -> list[str]:
    values = []
    for i, arg in enumerate(argv):
        name, _, inline = arg.partition("=")
        if name in names:
            values.append(inline if inline else (argv[i + 1] if i + 1 < len(argv) else ""))
    return values


def named_paths(command: Command, namespace: argparse.Namespace | None) -> list[str]:
    """Files and directories the command reads (not those it writes)."""
    if namespace is None or command.tool != "ctxbench":
        return []
    paths = [value for value in option_values(command.argv, FILE_OPTIONS) if not value.lstrip().startswith("{")]
    paths += option_values(command.argv, DIR_OPTIONS)
    if namespace.command in POSITIONAL_PATHS:
        for attribute in ("paths", "events", "results_dir", "grid_file", "target"):
            value = getattr(namespace, attribute, None)
            paths += value if isinstance(value, list) else [value] if value else []
    return paths


def written(command: Command) -> list[str]:
    return option_values(command.argv, {"--out"})


@pytest.mark.parametrize("command", [pytest.param(c, id=c.where) for c in ALL_COMMANDS])
def test_every_documented_command_parses_and_names_existing_files(command, monkeypatch):
    """Each command of README.md and docs/ parses with the real CLI, and each file it reads
    exists in the repository, is defined on its page, or is written by an earlier command of its block."""
    namespace = parse(command, monkeypatch)
    earlier = [c for c in commands(command.block) if c.line < command.line]
    made = {path for c in earlier for path in written(c)} | set(page_files(command.block.page))
    for path in named_paths(command, namespace):
        assert path in made or (ROOT / path).exists(), (
            f"{command.where}: `ctxbench {shlex.join(command.argv)}` reads {path}, which is neither in the "
            "repository, defined on the page, nor written by an earlier command of its block")


def test_commands_are_found_and_no_command_hides_outside_a_shell_block():
    """The extraction finds the README's commands, and a `ctxbench` line in an untyped
    fence (neither shell nor ```text) fails: it would escape this test."""
    readme = [c for c in ALL_COMMANDS if c.block.page.name == "README.md"]
    assert any(c.argv[:1] == ("run",) for c in readme) and len(ALL_COMMANDS) >= 20
    untyped = [f"{b.page.relative_to(ROOT)}:{b.line}" for b in ALL_BLOCKS
               if b.lang == "" and any(line.lstrip().startswith("ctxbench ") for line in b.lines)]
    assert not untyped, f"fences holding ctxbench commands without a language (mark them bash or text): {untyped}"


def cheap(command: Command, namespace: argparse.Namespace | None, made: set[str], files: dict[str, str]) -> bool:
    """Whether running the command costs seconds and no network: help, listings, the mock on small inputs."""
    if namespace is None:
        return command.tool == "ctxbench"  # --help, --version
    if command.tool != "ctxbench":
        return False
    if namespace.command in {"strategies", "tasks"}:
        return True
    if namespace.command in {"report", "replay", "show"}:  # cheap on what the block wrote
        targets = {"report": [getattr(namespace, "results_dir", None)], "show": [getattr(namespace, "target", None)],
                   "replay": getattr(namespace, "events", [])}[namespace.command]
        return all(target in made for target in targets)
    if namespace.command == "export":  # the `inspect` extra's command: run where the extra is installed
        return namespace.results_dir in made and importlib.util.find_spec("inspect_ai") is not None
    if namespace.command == "traces":
        return True
    if namespace.command in {"run", "sweep"}:
        mock = namespace.model.startswith("mock/") and not namespace.api_base and not getattr(namespace, "resume", None)
        small = namespace.tasks in files if namespace.tasks else (namespace.suite == "smoke" or bool(namespace.task_ids))
        return mock and small
    return False


def runnable_blocks() -> list:
    return [pytest.param(block, id=f"{block.page.relative_to(ROOT)}:{block.line}") for block in SHELL_BLOCKS
            if commands(block)]


def scratch_repository(tmp_path: Path, files: dict[str, str]) -> Path:
    """A directory that looks like the repository (its entries linked) with the page's files and no results."""
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name != "results":
            (tmp_path / entry.name).symlink_to(entry)
    for name, text in files.items():
        target = tmp_path / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("block", runnable_blocks())
def test_cheap_documented_commands_run(block, tmp_path, monkeypatch, capsys):
    """The cheap commands of each block (help, strategies, tasks, mock runs of small inputs,
    trace replays, and report/replay of what the block wrote) run in order and exit 0."""
    files = page_files(block.page)
    monkeypatch.chdir(scratch_repository(tmp_path, files))
    monkeypatch.syspath_prepend(str(tmp_path))
    made: set[str] = set()
    ran = 0
    for number, command in enumerate(commands(block)):
        namespace = parse(command, monkeypatch)
        if not cheap(command, namespace, made, files):
            continue
        argv = list(command.argv)
        if namespace is not None and namespace.command in OUTPUT_COMMANDS:
            if not written(command):
                argv += ["--out", f"results/command-{number}"]
            argv += ["--no-progress"]
            if namespace.command != "traces" and "--workers" not in argv:
                argv += ["--workers", "1"]  # in process: no worker start-up on a shared machine
        try:
            code = main(argv)
        except SystemExit as exc:  # --help
            code = exc.code
        out, err = capsys.readouterr()
        assert code == 0, f"{command.where}: `ctxbench {shlex.join(argv)}` exited {code}: {err[-2000:]}"
        made.update(written(command))
        ran += 1
    if not ran:
        pytest.skip("no cheap command in this block (parsed only)")


def test_readme_strategy_example_runs_by_import_path(tmp_path, monkeypatch):
    """The own-strategy example of docs/extending.md runs by import path."""
    text = EXTENDING.read_text()
    code = re.search(r"```python\n(# mystrategies\.py\n.*?)```", text, re.S).group(1)
    (tmp_path / "mystrategies.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("mystrategies", None)
    out = tmp_path / "out"
    assert main(["run", "--suite", "smoke", "--strategies", "mystrategies:KeepLastToolResults", "--strategy-config",
                 '{"mystrategies:KeepLastToolResults": {"keep_last": 2}}', "--out", str(out), "--workers", "1",
                 "--no-progress"]) == 0
    runs = pd.read_json(out / "runs.jsonl", lines=True)
    assert (runs["compactions"] > 0).all()
