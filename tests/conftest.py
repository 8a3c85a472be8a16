import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# tests/plugins holds strategies loaded by import path, as a user's own would be.
sys.path.insert(0, str(Path(__file__).parent / "plugins"))

import pytest  # noqa: E402

from harness import api  # noqa: E402
from harness.results.report import runs_frame  # noqa: E402


MAX_TEST_WORKERS = 4  # more workers than this wait on each other's subprocesses and servers more than they gain


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject's addopts): a worker per core, at most MAX_TEST_WORKERS; none when benchmarks are
    selected, as pytest-benchmark measures nothing in an xdist worker and timings need the machine to themselves."""
    if "benchmark" in (config.option.markexpr or "").replace("not benchmark", ""):
        return 0
    return min(os.cpu_count() or 1, MAX_TEST_WORKERS)


@pytest.fixture
def run_suite(tmp_path):
    """Run a suite in-process and return its runs as a DataFrame indexed by run order."""
    counter = {"n": 0}

    def _run(suite="smoke", strategies="none", window=None, cache="anthropic", knobs=None, seeds=(0,),
             max_requests=None, strategy_configs=None, profiles_extra=None, workers=1, task_ids=()):
        counter["n"] += 1
        out = tmp_path / f"run{counter['n']}"
        profiles = api.mock_profiles(window=window, cache=cache, knobs=knobs, extra=profiles_extra)
        api.run(suite, strategies=strategies, strategy_configs=strategy_configs, seeds=seeds, profiles=profiles,
                max_requests=max_requests, out=out, workers=workers, task_ids=task_ids)
        frame = runs_frame(out)
        frame.attrs["out"] = out
        return frame

    return _run


@pytest.fixture
def mock_server(monkeypatch):
    """Start `serve-mock` on a free loopback port; yields a factory taking MockConfig fields."""
    from harness.models.mock.provider import MockConfig
    from harness.models.serve_mock.server import MockServer

    monkeypatch.setenv("OPENAI_API_KEY", "unused-by-serve-mock")
    servers = []

    def _start(latency_s=0.0, **config):
        server = MockServer(0, MockConfig(**config), latency_s=latency_s)
        server.start()
        servers.append(server)
        return server

    yield _start
    for server in servers:
        server.shutdown()
        server.server_close()


# Headers of Anthropic's API a request carries, as a golden keeps them (the rest are the HTTP client's own).
ANTHROPIC_WIRE_HEADERS = ("anthropic-beta", "anthropic-version", "x-ctxbench-session", "x-ctxbench-request",
                          "x-ctxbench-seed")


def matches_golden(golden: Path, sent: list[dict], names: tuple[str, ...]) -> dict:
    """The requests `recording_server` captured, by name (path, body, Anthropic's headers), compared with the golden
    file, which CTXBENCH_UPDATE_GOLDENS=1 rewrites after a deliberate change; returns them."""
    captured = {name: {"path": request["path"], "body": request["body"],
                       "headers": {key: request["headers"][key] for key in sorted(request["headers"])
                                   if key.lower() in ANTHROPIC_WIRE_HEADERS}}
                for name, request in zip(names, sent)}
    if os.environ.get("CTXBENCH_UPDATE_GOLDENS"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(json.dumps(captured, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert captured == json.loads(golden.read_text(encoding="utf-8"))
    return captured


def write_suite_file(directory, suite="default", family=None, task_ids=None):
    """A task file holding the rows of a built-in suite that match a family and/or task ids."""
    import json

    from tasks.suites import load_tasks

    rows = [t.as_dict() for t in load_tasks(suite)
            if (family is None or t.family == family) and (task_ids is None or t.task_id in task_ids)]
    path = Path(directory) / f"{suite}-{family or 'all'}-{len(rows)}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.fixture(scope="session")
def smoke_sweep(tmp_path_factory):
    """A small sweep on smoke's chained_lookup tasks (test-only masking strategy, keep 0 and 3, plus `none`)."""
    from harness.sweep import make_grid

    base = tmp_path_factory.mktemp("sweep")
    grid = make_grid("masking:KeepLastToolResults", {"keep": [0, 3]}, label="mask")
    return api.sweep(grid, write_suite_file(base, "smoke", family="chained_lookup"), also=["none"], seeds=(0, 1),
                     profiles=api.mock_profiles(), out=base / "smoke")


@pytest.fixture
def suite_file(tmp_path):
    def _write(suite="default", family=None, task_ids=None):
        return write_suite_file(tmp_path, suite, family, task_ids)

    return _write


@pytest.fixture
def no_model_calls(monkeypatch):
    """The mock's provider and litellm both refuse: bad input must fail before any request."""
    import litellm

    from harness.models.mock.provider import MockProvider

    def refuse(*args, **kwargs):
        raise AssertionError("a model was called despite bad input")
    monkeypatch.setattr(litellm, "completion", refuse)
    monkeypatch.setattr(MockProvider, "serve", refuse)


@pytest.fixture
def recording_server():
    """A loopback HTTP server that records each request it is sent (path, headers, JSON body) and answers with the
    given reply: what leaves the process, captured at the HTTP boundary."""
    servers = []

    def _start(reply: dict) -> tuple[str, list[dict]]:
        bodies: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                bodies.append({"path": self.path, "headers": dict(self.headers),
                               "body": json.loads(self.rfile.read(length))})
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}", bodies

    yield _start
    for server in servers:
        server.shutdown()
        server.server_close()
