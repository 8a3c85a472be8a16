"""`ctxbench show`: a run's timeline, a view as sent, a diff of two views, the run's end.

Runs are produced here: the default suite's first plant_early_ask_late task under compaction_ladder (its
`tiny` preset, so clears and windows happen) and agent_reset with a 20,000-token window (warnings, one reset).
Expected values are computed from the event logs with harness.conversation.view, independently of show's own code.
"""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.event_log_helpers import stored_bytes, stored_lines, write_stored
from harness.cli import main
from harness.conversation.blobs import BLOBS_DIR
from harness.conversation.events import event_log_name, read_events
from harness.conversation.view import ViewState

LADDER = "plant_early_ask_late-0--compaction_ladder--s0"
RESET = "plant_early_ask_late-0--agent_reset--s0"
ANSI = re.compile(r"\x1b\[")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("show") / "results"
    code = main(["run", "--suite", "default", "--family", "plant_early_ask_late", "--limit", "1",
                 "--strategies", "compaction_ladder,agent_reset", "--window", "20000", "--no-progress",
                 "--strategy-config", '{"compaction_ladder": {"preset": "tiny"}}', "--out", str(out)])
    assert code == 0
    return out


def show(capsys, *argv) -> tuple[int, str, str]:
    code = main(["show", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def events_of(results: Path, run_id: str) -> list[dict]:
    return read_events(results / "events" / event_log_name(run_id))


def main_requests(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "llm_call" and e.get("profile") == "main"]


def views_before(events: list[dict], numbers: set[int]) -> dict[int, tuple[list[int], dict]]:
    """The view (ids, messages as sent) folded from the log just before each numbered main request."""
    view, seen, found = ViewState(), 0, {}
    for event in events:
        if event["type"] == "llm_call" and event.get("profile") == "main":
            seen += 1
            if seen in numbers:
                found[seen] = (list(view.ids), {i: view.message(i) for i in view.ids}, view.hash(events[0]["tools_hash"]))
        view.apply(event)
    return found


def test_timeline_has_a_line_per_main_request_and_names_each_compaction_with_the_ids_it_changed(results, capsys):
    """One line per request, each strategy decision on its own line with the message ids it
    removed (window: `- #id`) or replaced (clear: `~ #id`)."""
    code, out, _ = show(capsys, results, "--run", LADDER, "--all", "--items", "10000")
    assert code == 0
    events = events_of(results, LADDER)
    rows = [line for line in out.splitlines() if re.match(r"^\s+\d+\s+\d+\s", line)]
    assert [int(line.split()[1]) for line in rows] == [e["id"] for e in main_requests(events)]
    compactions = [e for e in events if e["type"] == "compaction"]
    assert {e["step"] for e in compactions} >= {"clear", "window"}
    lines = out.splitlines()
    for event in compactions:
        at = next(i for i, line in enumerate(lines) if f"ev {event['id']}: compaction {event['step']} " in line)
        block = []
        for line in lines[at + 1:]:
            if not line.strip().startswith(("-", "~", "+")):
                break
            block.append(line.strip())
        sign = "-" if event["step"] == "window" else "~"
        assert sorted(int(re.match(r"[-~+] #(\d+)", line).group(1)) for line in block) == sorted(event["message_ids"])
        assert all(line.startswith(sign) for line in block), event["step"]


def test_timeline_folds_uneventful_streaks_and_keeps_lines_within_120_characters(results, capsys):
    """Ours (long runs): streaks of 8+ uneventful requests fold to one line; no line is wider
    than 120 characters; --from/--to keep only that range of requests."""
    _, folded, _ = show(capsys, results, "--run", LADDER)
    _, full, _ = show(capsys, results, "--run", LADDER, "--all")
    assert "uneventful requests" in folded and "uneventful requests" not in full
    assert len(folded.splitlines()) < len(full.splitlines())
    assert max(map(len, (folded + full).splitlines())) <= 120
    _, part, _ = show(capsys, results, "--run", LADDER, "--from", 3, "--to", 5)
    numbers = [int(line.split()[0]) for line in part.splitlines() if re.match(r"^\s+\d+\s+\d+\s", line)]
    assert numbers == [3, 4, 5]


def test_agent_reset_timeline_shows_the_warning_and_the_reset_with_what_it_forgot_and_inserted(results, capsys):
    """Warnings, injected messages and the reset each on a line; the reset's line lists the
    forgotten messages (`- #id`) and the inserted notice (`+ #notice_id`); R counts it on the next request."""
    _, out, _ = show(capsys, results, "--run", RESET, "--items", "10000")
    events = events_of(results, RESET)
    warning = next(e for e in events if e["type"] == "warning")
    reset = next(e for e in events if e["type"] == "condensation")
    assert f"ev {warning['id']}: warning {warning['level']:.0%}" in out
    assert f"ev {reset['id']}: condensation agent_reset" in out
    block = out.split(f"ev {reset['id']}: condensation agent_reset")[1].split("\n")[1:]
    block = [line.strip() for line in block if line.strip().startswith(("-", "+", "~"))]
    removed = {int(re.match(r"- #(\d+)", line).group(1)) for line in block if line.startswith("- #")}
    assert removed and removed <= set(reset["forgotten_ids"])
    assert any(line.startswith(f"+ #{reset['notice_id']} user (environment)") for line in block)


def test_request_prints_the_view_as_sent_and_checks_its_hash(results, capsys):
    """--request N is the view rebuilt from the log as replay rebuilds it (harness.conversation.view), its
    hash checked against the recorded one."""
    events = events_of(results, LADDER)
    requests = main_requests(events)
    after_window = next(i for i, e in enumerate(requests, 1)
                        if any(c["type"] == "compaction" and c["step"] == "window" and c["id"] < e["id"] for c in events))
    for number in (1, after_window, len(requests)):
        ids, messages, rebuilt_hash = views_before(events, {number})[number]
        assert rebuilt_hash == requests[number - 1]["view_hash"]
        _, out, _ = show(capsys, results, "--run", LADDER, "--request", number, "--json")
        assert json.loads(out) == [messages[i] for i in ids]
        _, text, _ = show(capsys, results, "--run", LADDER, "--request", number)
        assert f"view hash {requests[number - 1]['view_hash']}: rebuilt view matches the recorded one" in text
        assert [int(m) for m in re.findall(r"^\[\d+\] #(\d+) ", text, re.M)] == ids
        logged = {e["id"]: e["message"] for e in events if e["type"] == "message"}
        replaced = [i for i in ids if messages[i] != logged[i]]
        assert [int(m) for m in re.findall(r"^\[\d+\] #(\d+) .*\(replaced", text, re.M)] == replaced
    assert replaced_somewhere(events, requests, views_before(events, set(range(1, len(requests) + 1))))


def replaced_somewhere(events, requests, views) -> bool:
    """The run sent at least one cleared (replaced) tool result, so the replaced marks above were exercised."""
    logged = {e["id"]: e["message"] for e in events if e["type"] == "message"}
    return any(messages[i] != logged[i] for ids, messages, _ in views.values() for i in ids)


def test_request_says_when_the_rebuilt_view_does_not_match_its_recorded_hash(results, tmp_path, capsys):
    """A log whose message was edited
    after the run rebuilds another view; show names the mismatch."""
    path = tmp_path / f"{LADDER}.jsonl"  # written as before compression: every text in its line
    events = events_of(results, LADDER)
    system = next(e for e in events if e["type"] == "message" and e["message"]["role"] == "system")
    system["message"]["content"] += " (edited)"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    _, out, _ = show(capsys, path, "--request", 2)
    assert "view hash MISMATCH" in out
    _, timeline, _ = show(capsys, path)
    assert "VIEW HASH MISMATCH" in timeline


def test_diff_lists_exactly_the_removed_replaced_and_added_messages(results, capsys):
    """--diff N lists what changed between the views of requests N-1 and N, message by message."""
    events = events_of(results, LADDER)
    requests = main_requests(events)
    views = views_before(events, set(range(1, len(requests) + 1)))
    changed = 0
    for number in range(2, len(requests) + 1):
        (old_ids, old, _), (new_ids, new, _) = views[number - 1], views[number]
        expected = {("-", i) for i in old_ids if i not in new} | {("+", i) for i in new_ids if i not in old} | \
                   {("~", i) for i in new_ids if i in old and old[i] != new[i]}
        code, out, _ = show(capsys, results, "--run", LADDER, "--diff", number)
        assert code == 0
        listed = {(m.group(1), int(m.group(2))) for m in re.finditer(r"^([-~+]) #(\d+) ", out, re.M)}
        assert listed == expected, number
        changed += any(sign != "+" for sign, _ in expected)
    assert changed >= 2  # the clears and windows were among them


def test_end_shows_termination_score_and_the_checkers_expected_vs_given(results, capsys):
    """The run's end with termination, success, score and the checker's expected vs given
    (run_end's detail; harness.results.verdict, shared with report.md)."""
    end = events_of(results, LADDER)[-1]
    assert end["type"] == "run_end" and not end["success"]
    _, out, _ = show(capsys, results, "--run", LADDER)
    assert f"end: {end['termination']}  success no  score {end['score']:.2f}" in out
    expected, given = end["detail"]["expected"], end["detail"]["given"]
    wrong = [key for key in expected if str(expected[key]).lower() != str(given.get(key)).lower()]
    assert wrong
    for key in wrong:
        assert f"{key}: expected {json.dumps(expected[key])}, given {json.dumps(given.get(key))}" in out
    assert f"checker: {len(wrong)} differences" in out


def test_output_is_plain_without_a_terminal_and_coloured_on_one_unless_no_color(results, capsys, monkeypatch):
    """ANSI colour only when stdout is a terminal (and NO_COLOR unset: no-color.org); plain
    text otherwise; --color always/never override."""
    from harness.results.show import colouring

    _, out, _ = show(capsys, results, "--run", LADDER)
    assert not ANSI.search(out)
    _, forced, _ = show(capsys, results, "--run", LADDER, "--color", "always")
    assert ANSI.search(forced) and ANSI.sub("", forced).replace("[0m", "") != ""

    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert ANSI.search(colouring("auto", Terminal())("red", "x"))
    monkeypatch.setenv("NO_COLOR", "1")
    assert colouring("auto", Terminal())("red", "x") == "x"


def test_results_dir_without_run_lists_the_runs_and_points_at_the_first_failed(results, capsys):
    """Ours: a results directory of several runs and no --run lists every run with how it ended and suggests
    the first failed run (the one a user most likely came to look at)."""
    code, out, _ = show(capsys, results)
    assert code == 0
    assert f"✗ {LADDER}" in out and f"✓ {RESET}" in out
    assert out.strip().splitlines()[-1].startswith(f"e.g. ctxbench show {results} --run {LADDER}")


def test_bad_input_exits_2_naming_what_and_where(results, tmp_path, capsys):
    """An unknown run id exits 2 with close matches, N out of range names the range, a missing
    or garbage file names the file and line; no traceback."""
    code, _, err = show(capsys, results, "--run", LADDER.replace("ladder", "lader"))
    assert code == 2 and f"did you mean '{LADDER}'" in err
    total = len(main_requests(events_of(results, LADDER)))
    code, _, err = show(capsys, results, "--run", LADDER, "--request", total + 1)
    assert code == 2 and f"1..{total}" in err
    code, _, err = show(capsys, results, "--run", LADDER, "--diff", 1)
    assert code == 2 and f"2..{total}" in err
    code, _, err = show(capsys, results, "--run", LADDER, "--request", 0)
    assert code == 2 and "--request" in err
    code, _, err = show(capsys, results, "--request", 3)
    assert code == 2 and "--run" in err
    code, _, err = show(capsys, tmp_path / "nowhere")
    assert code == 2 and "nowhere" in err
    garbage = tmp_path / "events" / event_log_name("broken")
    shutil.copytree(results / "events" / BLOBS_DIR, garbage.parent / BLOBS_DIR)
    write_stored(garbage, stored_bytes(results / "events" / event_log_name(LADDER)) + b"{not json\n")
    lines = len(stored_lines(garbage))
    code, _, err = show(capsys, garbage)
    assert code == 2 and f"{garbage}:{lines}" in err and "Traceback" not in err
    code, _, err = show(capsys, tmp_path, "--run", "broken")
    assert code == 2 and f"{garbage}:{lines}" in err


def test_show_imports_no_heavy_library(results):
    """`show`, --request and --diff load none of litellm,
    pandas, datasets, matplotlib, inspect_ai (the view is rebuilt with harness.conversation.view; sizes are characters)."""
    probe = ("import contextlib, io, sys; from harness.cli import main\n"
             "for argv in (sys.argv[1:], sys.argv[1:] + ['--request', '3'], sys.argv[1:] + ['--diff', '3']):\n"
             "    with contextlib.redirect_stdout(io.StringIO()):\n"
             "        assert main(argv) == 0\n"
             "print([m for m in ('litellm', 'pandas', 'datasets', 'matplotlib', 'inspect_ai') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", probe, "show", str(results), "--run", LADDER],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_failed_request_shows_its_error_in_its_line(results, tmp_path, capsys):
    """Ours: a request the provider refused (a context-window error: ok false, no usage, no cost) is a
    FAILED line with its error, not a crash."""
    events = events_of(results, LADDER)
    request = main_requests(events)[2]
    for name in ("usage", "cost_usd", "cost_usd_uncached"):
        request.pop(name, None)
    request.update(ok=False, error_type="ContextWindowExceededError", error="prompt is too long: 9 tokens > 8 maximum")
    path = tmp_path / f"{LADDER}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    code, out, _ = show(capsys, path, "--all")
    assert code == 0
    line = next(line for line in out.splitlines() if re.match(rf"^\s+3\s+{request['id']}\s", line))
    assert "FAILED: prompt is too long" in line
