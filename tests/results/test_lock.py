"""One writer per results directory: an invocation holds an flock on DIR/.lock for
its whole life; a second one exits 2 at once naming the holder; a stale lock is taken over."""
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.core.errors import ConfigError
from harness.results.lock import LOCK_FILE, hold
from harness.results.layout import RUNS_FILE, read_runs

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ["run", "--suite", "smoke", "--strategies", "none", "--workers", "1", "--no-progress"]
HOLD_CHILD = ("import sys, time\nfrom harness.results.lock import hold\n"
              "with hold(sys.argv[1], 'run'):\n    print('held', flush=True)\n    time.sleep(float(sys.argv[2]))\n")


def start_holder(directory: Path, seconds: float = 60.0) -> subprocess.Popen:
    """A child process that holds `directory`'s lock until killed (or `seconds`)."""
    child = subprocess.Popen([sys.executable, "-c", HOLD_CHILD, str(directory), str(seconds)], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def lock_is_free(directory: Path) -> bool:
    with open(directory / LOCK_FILE, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def test_a_second_writer_exits_2_naming_the_holder_and_writes_nothing(tmp_path, capsys):
    """While another process holds DIR's lock, run --resume, run --out and report on DIR
    exit 2 at once, naming the holder's pid and start time, and leave every file as it was."""
    out = tmp_path / "r"
    assert main([*SMOKE, "--out", str(out)]) == 0
    capsys.readouterr()
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != LOCK_FILE}
    child = start_holder(out)
    try:
        holder = json.loads((out / LOCK_FILE).read_text())
        assert holder["pid"] == child.pid and holder["command"] == "run" and holder["started"]
        for argv in (["run", "--resume", str(out), "--no-progress"], [*SMOKE, "--out", str(out)], ["report", str(out)]):
            started = time.monotonic()
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert time.monotonic() - started < 30
            assert "in use by another ctxbench invocation" in err
            assert f"pid {child.pid}" in err and holder["started"] in err
        after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != LOCK_FILE}
        assert after == before
    finally:
        child.kill()
        child.wait()


def test_a_stale_lock_of_a_killed_holder_is_taken_over_with_a_message(tmp_path, capsys):
    """A holder killed with SIGKILL leaves its pid in .lock; the next invocation takes the
    lock over, says so on stderr naming the old pid, and runs."""
    out = tmp_path / "r"
    assert main([*SMOKE, "--out", str(out)]) == 0
    child = start_holder(out)
    child.kill()
    child.wait()
    assert json.loads((out / LOCK_FILE).read_text())["pid"] == child.pid  # left behind by the kill
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert f"taking over the lock of {out} left by pid {child.pid}" in err
    assert (out / LOCK_FILE).read_text() == ""  # released on exit
    assert lock_is_free(out)


def test_the_lock_is_released_after_a_config_error_or_a_crash(tmp_path, capsys):
    """Leaving the invocation by an error (exit 2, or an exception in Python) releases the
    lock, so the next invocation neither waits nor reports a stale holder."""
    out = tmp_path / "r"
    assert main([*SMOKE, "--out", str(out)]) == 0
    assert main([*SMOKE, "--out", str(out)]) == 2  # "already holds runs", raised with the lock held
    assert lock_is_free(out) and (out / LOCK_FILE).read_text() == ""
    with pytest.raises(RuntimeError):
        with hold(out, "run"):
            raise RuntimeError("crash")
    assert lock_is_free(out) and (out / LOCK_FILE).read_text() == ""
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert "taking over" not in capsys.readouterr().err


def test_a_second_writer_in_the_same_process_is_refused_too(tmp_path):
    """Ours: one writer per directory holds within a process as well (two threads of a
    notebook): a second hold is refused naming this process, and the first still holds the lock."""
    with hold(tmp_path, "sweep"):
        with pytest.raises(ConfigError, match=f"pid {os.getpid()}"):
            with hold(tmp_path, "run"):
                pass
        assert not lock_is_free(tmp_path)
    assert lock_is_free(tmp_path)


def test_a_missing_lock_directory_is_a_config_error(tmp_path):
    """Ours: a lock that cannot be made is exit 2 naming the directory, not a traceback."""
    with pytest.raises(ConfigError, match="cannot open its lock file"):
        with hold(tmp_path / "missing", "run"):
            pass


def test_two_resumes_on_one_directory_leave_each_cell_once(mock_server, tmp_path, capsys):
    """A reported failure: two `--resume` processes on one directory wrote 109 duplicate
    rows. Now the second exits 2 while the first runs, and the directory ends with each cell's row once."""
    server = mock_server()
    args = ["run", "--suite", "smoke", "--strategies", "none", "--seeds", "0,1", "--workers", "1", "--no-progress",
            "--model", "openai/mock-agent", "--api-base", server.url, "--price-model", "claude-sonnet-4-6",
            "--window", "200000"]
    out = tmp_path / "r"
    assert main([*args, "--out", str(out)]) == 0
    expected = sorted(row["run_id"] for row in read_runs(out))
    (out / RUNS_FILE).write_text("")  # every cell left to do
    server.latency_s = 0.02  # so that the first resume is still running when the second starts
    child = subprocess.Popen([sys.executable, "-m", "harness", "run", "--resume", str(out), "--no-progress"],
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and f'"pid": {child.pid}' not in (out / LOCK_FILE).read_text():
            time.sleep(0.01)
        capsys.readouterr()
        assert main(["run", "--resume", str(out), "--no-progress"]) == 2
        assert f"pid {child.pid}" in capsys.readouterr().err
    finally:
        assert child.wait(timeout=300) == 0, child.stderr.read()
    lines = (out / RUNS_FILE).read_text().splitlines()
    assert sorted(json.loads(line)["run_id"] for line in lines) == expected
