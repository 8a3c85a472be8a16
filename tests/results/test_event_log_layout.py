"""The event logs' layout on disk: gzip'd JSON Lines with large contents stored once per results directory by
content hash (harness.conversation.events, harness.conversation.blobs), and every reader reading the layout written
before compression (a stored directory, tests/fixtures/results/old-layout) as it read it then."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.conversation.blobs import BLOB_MIN_CHARS, BLOB_REF, BLOBS_DIR
from harness.conversation.events import (EventLog, event_log_name, event_logs, find_event_log,
                                         first_event, read_events)
from harness.conversation.replay import replay_file
from harness.core.errors import ReplayMismatch
from harness.results.layout import RUNS_FILE, read_runs
from tests.event_log_helpers import stored_lines

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "fixtures" / "results" / "old-layout"
BIG = "x" * BLOB_MIN_CHARS


@pytest.fixture(scope="module")
def two_strategies(tmp_path_factory) -> Path:
    """The smoke tasks whose tool outputs are large, under two strategies: the same texts in both runs' logs."""
    out = tmp_path_factory.mktemp("layout") / "r"
    assert main(["run", "--suite", "smoke", "--task-ids", "big_output-smoke-0,repo_maintenance-smoke-0",
                 "--strategies", "none,observation_masking", "--out", str(out), "--no-progress"]) == 0
    return out


def references(path: Path) -> list[dict]:
    """The references to stored texts a log's lines hold, in order."""
    found = []
    for line in stored_lines(path):
        event = json.loads(line)
        for holder in (event, event.get("message") or {}):
            if isinstance(holder.get("content"), dict):
                found.append(holder["content"])
    return found


def test_logs_are_gzip_json_lines_and_each_large_text_is_stored_once_per_process(two_strategies):
    """Ours: a log is `<run_id>.jsonl.gz`, one gzip member `gzip -d` reads; a content of BLOB_MIN_CHARS or more
    is a reference {"$blob": sha256, "pack", "at", "size"} to a gzip member in a pack of events/blobs/, written
    once by the process that ran both strategies (one worker here) however many runs show it."""
    logs = event_logs(two_strategies / "events")
    assert [path.name for path in logs] == sorted(event_log_name(row["run_id"]) for row in read_runs(two_strategies))
    assert all(path.read_bytes()[:2] == b"\x1f\x8b" for path in logs)
    referred = [reference for path in logs for reference in references(path)]
    digests = {reference[BLOB_REF] for reference in referred}
    assert referred and len(digests) < len(referred)  # the two strategies' runs share their tool outputs
    packs = {path.name: path.read_bytes() for path in (two_strategies / "events" / BLOBS_DIR).iterdir()}
    assert {reference["pack"] for reference in referred} == set(packs)
    stored = {(reference["pack"], reference["at"]) for reference in referred}
    assert len(stored) == len(digests)  # each text once
    for reference in referred:
        member = packs[reference["pack"]][reference["at"]: reference["at"] + reference["size"]]
        text = gzip.decompress(member)
        assert hashlib.sha256(text).hexdigest() == reference[BLOB_REF] and len(text.decode()) >= BLOB_MIN_CHARS
    whole = b"".join(gzip.decompress(data) for data in packs.values())  # `gzip -d` of a pack: its texts, in a row
    assert sum(len(gzip.decompress(packs[p][a: a + n])) for p, a, n in
               {(r["pack"], r["at"], r["size"]) for r in referred}) == len(whole)


def test_a_compressed_log_reads_back_as_it_was_appended(tmp_path):
    """Every event, every large content (a message's, an offloaded output's) put back; a short text and a text
    UTF-8 cannot hold (a lone surrogate) stay in their line."""
    log = EventLog(tmp_path / "events" / event_log_name("r"))
    log.append("message", message={"role": "tool", "content": BIG, "tool_call_id": "c1"})
    log.append("tool_output_offloaded", content=BIG + "y", tool_call_id="c1")
    log.append("message", message={"role": "user", "content": "short"})
    log.append("message", message={"role": "tool", "content": "\ud800" + BIG})
    log.append("message", message={"role": "tool", "content": [{"type": "text", "text": BIG}]})
    log.close()
    assert read_events(tmp_path / "events" / event_log_name("r")) == json.loads(json.dumps(log.events))
    assert len(references(tmp_path / "events" / event_log_name("r"))) == 2
    assert first_event(tmp_path / "events" / event_log_name("r"))["message"]["content"] == BIG


def test_a_torn_compressed_log_names_its_file_and_line(two_strategies, tmp_path):
    """A log cut short (a kill while it was written, a partial copy) is an error naming the line where it breaks,
    not a traceback; `show` and `replay` exit 2 with it."""
    copy = tmp_path / "copy"
    shutil.copytree(two_strategies, copy)
    log = event_logs(copy / "events")[0]
    log.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
    with pytest.raises(ReplayMismatch, match=rf"{log}:\d+: the compressed log breaks off here"):
        read_events(log)
    assert main(["replay", str(log)]) == 2
    log.write_bytes(b"not gzip at all\n")
    with pytest.raises(ReplayMismatch, match=rf"{log}:1: the compressed log breaks off here"):
        read_events(log)


def test_a_missing_or_altered_pack_names_the_log_and_line(two_strategies, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(two_strategies, copy)
    log = next(path for path in event_logs(copy / "events") if references(path))
    reference = references(log)[0]
    pack = copy / "events" / BLOBS_DIR / reference["pack"]
    data = bytearray(pack.read_bytes())
    data[reference["at"] + 10] ^= 0xFF  # a byte of the compressed text flipped
    pack.write_bytes(bytes(data))
    with pytest.raises(ReplayMismatch, match=rf"{log}:\d+: its stored content cannot be read: blob .* damaged"):
        read_events(log)
    pack.unlink()
    with pytest.raises(ReplayMismatch, match=rf"{log}:\d+: its content is stored in .*{BLOBS_DIR}, which does not"):
        read_events(log)
    assert main(["show", str(log)]) == 2
    assert "Traceback" not in capsys.readouterr().err


# ----- the layout written before compression

@pytest.fixture
def old(tmp_path) -> Path:
    copy = tmp_path / "old-layout"
    shutil.copytree(OLD, copy)
    return copy


def test_the_stored_directory_is_of_the_old_layout():
    assert sorted(path.suffix for path in (OLD / "events").iterdir()) == [".jsonl"] * 4
    assert not (OLD / "events" / BLOBS_DIR).exists()


def test_old_results_replay_and_show(old, capsys):
    assert main(["replay", str(old)]) == 0
    assert capsys.readouterr().out.count("ok ") == 4
    for row in read_runs(old):
        assert find_event_log(old / "events", row["run_id"]).name == f"{row['run_id']}.jsonl"
        assert replay_file(find_event_log(old / "events", row["run_id"])).ok
    assert main(["show", str(old), "--run", "big_output-smoke-0--none--s0", "--all"]) == 0
    assert "big_output-smoke-0--none--s0" in capsys.readouterr().out


def test_old_results_report_with_their_logs_linked(old):
    assert main(["report", str(old)]) == 0
    report = (old / "report.md").read_text(encoding="utf-8")
    assert "(events/big_output-smoke-0--none--s0.jsonl)" in report or "Every run succeeded." in report
    assert (old / "summary.csv").exists() and sorted(p.name for p in (old / "plots").iterdir())


def test_old_results_export_to_inspect(old, tmp_path):
    pytest.importorskip("inspect_ai", reason="the Inspect AI export needs the `inspect` extra")
    assert main(["export", str(old), "--format", "inspect", "--out", str(tmp_path / "logs")]) == 0
    assert list((tmp_path / "logs").iterdir())


def test_old_logs_replay_as_traces(old, tmp_path):
    """`ctxbench traces` reads ctxbench's own logs of both layouts."""
    assert main(["traces", str(old / "events"), "--strategies", "none", "--out", str(tmp_path / "t"),
                 "--no-progress"]) == 0
    assert len(read_runs(tmp_path / "t")) == 4


def test_resuming_an_old_directory_writes_new_logs_beside_the_old(old):
    """A rerun cell of an old directory (its row gone) is written in the new layout; both layouts then read."""
    rows = (old / RUNS_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    dropped = json.loads(rows[-1])["run_id"]
    (old / RUNS_FILE).write_text("".join(rows[:-1]), encoding="utf-8")
    (old / "events" / f"{dropped}.jsonl").unlink()
    assert main(["run", "--resume", str(old), "--no-progress"]) == 0
    assert find_event_log(old / "events", dropped).name == event_log_name(dropped)
    assert main(["replay", str(old)]) == 0 and len(read_runs(old)) == 4


# ----- crash safety

def kill_when(child: subprocess.Popen, out: Path, rows: int) -> None:
    """SIGKILL the child and its workers (its process group) once runs.jsonl has `rows` rows (0: once a first log
    is being written)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        written = (out / RUNS_FILE).read_bytes().count(b"\n") if (out / RUNS_FILE).exists() else 0
        if written >= rows and event_logs(out / "events"):
            break
        time.sleep(0.005)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    while time.monotonic() < deadline:  # the workers too are gone (they hold the directory's lock until then)
        try:
            os.killpg(child.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)


@pytest.mark.slow
@pytest.mark.parametrize("rows_before_kill", [0, 3, 8])
def test_sigkill_at_any_moment_loses_no_finished_run(tmp_path, rows_before_kill):
    """Ours: SIGKILL a run at moments spread over it (logs and blobs being written by two workers); every row in
    runs.jsonl has a whole log whose blobs are all there (it replays), and resume finishes the rest."""
    out = tmp_path / "r"
    args = ["run", "--suite", "smoke", "--strategies", "none,observation_masking", "--workers", "2",
            "--no-progress", "--out", str(out)]
    child = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    kill_when(child, out, rows_before_kill)
    finished = read_runs(out)
    assert len(finished) < 14
    for row in finished:
        assert replay_file(find_event_log(out / "events", row["run_id"])).ok
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert len(read_runs(out)) == 14
    assert main(["replay", str(out)]) == 0


@pytest.mark.parametrize("reference", [{"$blob": "a" * 64, "pack": "../../x.gz", "at": 0, "size": 9},
                                       {"$blob": "a" * 64, "pack": "p.gz", "at": -1, "size": 9},
                                       {"$blob": "a" * 64, "pack": "p.gz", "at": True, "size": 9},
                                       {"$blob": "a" * 64}])
def test_a_malformed_reference_is_refused_naming_the_line(tmp_path, reference):
    """A hand-edited or hostile log: a reference outside events/blobs/, at a negative offset or missing its place
    is an error naming the line, and nothing is read outside the blob directory."""
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": 0, "type": "message", "message": {"role": "tool", "content": reference}}) + "\n")
    with pytest.raises(ReplayMismatch, match=rf"{path}:1: its stored content cannot be read: a malformed reference"):
        read_events(path)


def test_old_results_export_to_parquet_with_their_requests(old, tmp_path):
    pytest.importorskip("pyarrow", reason="the Parquet export needs the `parquet` extra")
    import pandas as pd

    assert main(["export", str(old), "--format", "parquet", "--requests", "--out", str(tmp_path / "pq")]) == 0
    runs = pd.read_parquet(tmp_path / "pq" / "runs.parquet")
    requests = pd.read_parquet(tmp_path / "pq" / "requests.parquet")
    assert len(runs) == 4 and set(requests["run_id"]) == set(runs["run_id"])
    assert (requests.groupby("run_id").size() == runs.set_index("run_id")["requests"]
            + runs.set_index("run_id")["summarizer_requests"]).all()


def test_a_directory_made_again_or_named_from_another_directory_gets_its_texts(tmp_path, monkeypatch):
    """A process remembers which texts it stored per directory: a results directory deleted and made again under
    the same path (a notebook's rerun), or the same relative name from another working directory, must not be
    taken for one that holds them (every log reads back whole)."""
    def write(events_dir: Path) -> Path:
        log = EventLog(events_dir / event_log_name("r"))
        log.append("message", message={"role": "tool", "content": BIG})
        log.close()
        return events_dir / event_log_name("r")

    monkeypatch.chdir(tmp_path)
    write(Path("results/x/events"))
    shutil.rmtree(tmp_path / "results")
    assert read_events(write(Path("results/x/events")))[0]["message"]["content"] == BIG
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert read_events(write(Path("results/x/events")))[0]["message"]["content"] == BIG
