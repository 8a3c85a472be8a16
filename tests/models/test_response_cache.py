"""Response cache: rerunning a finished run against the HTTP mock makes zero requests."""
import sqlite3

from harness.cli import main
from harness.models.llm import LLMClient, LLMProfile
from harness.models.response_cache import CACHE_FILE
from harness.results.layout import read_runs

CLOCK_FIELDS = {"wall_s", "cpu_s", "response_cache_hits"}


def run_args(server, out, cache):
    return ["run", "--suite", "smoke", "--strategies", "none", "--seeds", "0,1", "--workers", "1", "--no-progress",
            "--out", str(out), "--model", "openai/mock-agent", "--api-base", server.url,
            "--price-model", "claude-sonnet-4-6", "--window", "200000", "--cache", str(cache)]


def test_rerun_of_a_finished_run_makes_zero_requests(mock_server, tmp_path):
    server = mock_server()
    assert main(run_args(server, tmp_path / "first", tmp_path / "cache")) == 0
    first = read_runs(tmp_path / "first")
    sent = server.requests
    assert sent == sum(r["requests"] for r in first) > 0
    assert main(run_args(server, tmp_path / "again", tmp_path / "cache")) == 0
    assert server.requests == sent  # the server counted nothing new
    again = read_runs(tmp_path / "again")
    strip = lambda rows: {r["run_id"]: {k: v for k, v in r.items() if k not in CLOCK_FIELDS} for r in rows}  # noqa: E731
    assert strip(again) == strip(first)
    assert sum(r["response_cache_hits"] for r in again) == sent
    with sqlite3.connect(tmp_path / "cache" / CACHE_FILE) as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == sent


def test_repeat_index_gives_each_identical_request_its_own_entry(mock_server, tmp_path):
    """Two identical requests in one run are two entries; a rerun replays both in order."""
    server = mock_server()
    profile = LLMProfile(model="openai/mock-agent", api_base=server.url, response_cache=str(tmp_path / "c"))
    messages = [{"role": "user", "content": "hello"}]
    client = LLMClient(profile, session="run-1", seed=0)
    first = [client.complete(messages, None) for _ in range(2)]
    assert server.requests == 2 and not any(r.from_cache for r in first)
    rerun = LLMClient(profile, session="run-1", seed=0)
    replayed = [rerun.complete(messages, None) for _ in range(3)]
    assert server.requests == 3  # only the third repeat was new
    assert [r.from_cache for r in replayed] == [True, True, False]
    other_seed = LLMClient(profile, session="run-1", seed=1)
    other_seed.complete(messages, None)
    assert server.requests == 4  # parameters are part of the key


def test_a_forked_worker_opens_its_own_connection(tmp_path):
    """SQLite connections must not cross a fork (mock workers fork): the child gets a new one."""
    import multiprocessing

    from harness.models import response_cache

    parent = response_cache.open_cache(str(tmp_path))
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        child_has_parents = pool.apply(_child_reuses, (str(tmp_path), id(parent)))
    assert child_has_parents is False
    assert response_cache.open_cache(str(tmp_path)) is parent


def _child_reuses(directory, parent_id):
    from harness.models import response_cache

    return id(response_cache.open_cache(directory)) == parent_id
