"""What the tests of bad input share: the CLI's exit code, a file the OS refuses to open, and the event log
a report reads."""
import os
from pathlib import Path

from harness.cli import main


def exit_code(argv: list[str]) -> int:
    """main()'s exit code, argparse's own errors (SystemExit) included."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


def deny_open(monkeypatch, path: Path) -> None:
    """Make opening `path` fail with PermissionError (tests may run as root, who reads any file)."""
    real_open = os.open

    def denied(name, *args, **kwargs):
        if str(name) == str(path):
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, *args, **kwargs)
    monkeypatch.setattr(os, "open", denied)


def drawn_log(results_dir: Path) -> Path:
    """The event log of a run the report's context plot draws: the only logs `ctxbench report` reads (of a
    directory without trace replays)."""
    from harness.conversation.events import find_event_log
    from harness.results.frames import runs_frame
    from harness.results.plots import sawtooth_run

    runs = runs_frame(results_dir)
    task_id, seed = sawtooth_run(runs)
    drawn = runs[(runs["task_id"] == task_id) & (runs["seed"] == seed)]["run_id"].iloc[0]
    return find_event_log(results_dir / "events", drawn)
