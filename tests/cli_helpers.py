"""What the tests of bad input share: the CLI's exit code, and a file the OS refuses to open."""
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
