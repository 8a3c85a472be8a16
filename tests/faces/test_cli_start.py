"""The command line starts fast: help and listings load none of the heavy libraries.

litellm alone is ~2 s of imports here; datasets and pandas add more. They are imported by the commands that
need them (a run, a report), never by building the parser. Each case runs in a fresh interpreter, since this
test process has them loaded already.
"""
import json
import subprocess
import sys

import pytest

HEAVY = ("litellm", "datasets", "pandas", "matplotlib")
PROBE = """
import contextlib, io, json, sys
from harness.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "loaded": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


@pytest.mark.parametrize("argv", [
    ["--help"], ["run", "--help"], ["sweep", "--help"], ["traces", "--help"], ["report", "--help"],
    ["replay", "--help"], ["serve-mock", "--help"], ["tasks", "--help"], ["tasks", "list"],
    ["tasks", "show", "chained_lookup-smoke-0"], ["tasks", "show", "chained_lookup-smoke-0", "--suite", "smoke"],
    ["strategies"], ["--version"],
])
def test_help_and_task_listings_import_no_heavy_library(argv):
    """`--help`, every subcommand's `--help`, `strategies`, `tasks list` and `tasks show`
    import none of litellm, datasets, pandas, matplotlib (the tokenizer, litellm and the retryable error
    types are loaded at their first use)."""
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    assert result["loaded"] == [], f"{' '.join(argv)} imported {result['loaded']}"


def test_version_names_the_installed_distribution(capsys):
    """`ctxbench --version` prints the installed version, as results' config.json records it."""
    from importlib import metadata

    from harness.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"ctxbench {metadata.version('ctxbench')}"
