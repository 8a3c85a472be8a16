"""Real-browser plumbing for the Inspect viewer test: a free loopback port, `inspect view` as a
bounded, always-killed subprocess, and headless Debian Chromium driven by selenium offline.

Why a module of its own: the test file states what the viewer must show; how to start a server
and a browser without downloading anything (Selenium Manager is never asked: the driver path is
explicit and SE_OFFLINE is set) is plumbing that a second browser test would reuse.
"""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
READY_TIMEOUT_S = 60.0


def missing_browser_pieces() -> list[str]:
    """What this machine lacks to run the browser test (empty when it can run), for a skip reason."""
    missing = [f"{path} (apt-get install -y chromium chromium-driver)"
               for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    for module, hint in (("selenium", "pip install selenium or -e '.[browser]'"),
                         ("inspect_ai", "pip install -e '.[inspect]'")):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"{module} ({hint})")
    return missing


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def inspect_view(log_dir: Path, log_file: Path) -> Iterator[str]:
    """Run `inspect view --log-dir LOG_DIR` on a free loopback port until the block ends; yield its URL.

    Readiness is an HTTP 200 on the root within READY_TIMEOUT_S; the server is killed however the
    block ends, and its output (in `log_file`) is in the error when it never comes up.
    """
    port = free_port()
    # `python -m inspect_ai`, not the `inspect` script: the same installation as the test's, wherever
    # pip put its scripts.
    command = [sys.executable, "-m", "inspect_ai", "view", "--log-dir", str(log_dir), "--host", "127.0.0.1", "--port", str(port)]
    with open(log_file, "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_until_serving(url, server, log_file)
            yield url
        finally:
            server.kill()
            server.wait(timeout=10)


def _wait_until_serving(url: str, server: subprocess.Popen, log_file: Path) -> None:
    """Poll `url` until it answers 200; fail with the server's output if it exits or times out."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"inspect view exited ({server.returncode}): {log_file.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"inspect view not serving {url} after {READY_TIMEOUT_S:.0f}s: "
                       f"{log_file.read_text()[-2000:]}")


@contextlib.contextmanager
def headless_chromium(width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A selenium WebDriver on Debian's headless Chromium; quit however the block ends.

    --no-sandbox because CI and this machine run as root; SE_OFFLINE and the explicit driver path
    keep Selenium Manager from downloading a browser or driver.
    """
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # --lang: the viewer formats numbers in the browser's locale (19,500 in en-US).
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--lang=en-US", f"--window-size={width},{height}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for_text(driver, texts: list[str], timeout_s: float = 30.0) -> str:
    """Wait until the page's visible text holds every one of `texts`, ignoring case; return that text.

    Case is ignored because the page's text is as rendered: CSS upper-cases the viewer's event
    titles ("Compaction: x" reads "COMPACTION: X"). On timeout the AssertionError names what is
    missing and shows the start of the page's text, so a failing run says what the viewer showed.
    """
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + timeout_s
    body = ""
    while time.monotonic() < deadline:
        body = driver.find_element(By.TAG_NAME, "body").text
        if all(text.casefold() in body.casefold() for text in texts):
            return body
        time.sleep(0.25)
    missing = [text for text in texts if text.casefold() not in body.casefold()]
    raise AssertionError(f"the viewer never showed {missing} within {timeout_s:.0f}s; it showed: {body[:1500]!r}")


def click_link(driver, text: str, timeout_s: float = 30.0) -> None:
    """Click the first link whose text is exactly `text` once it is on the page, as a user would."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    locator = (By.XPATH, f"//a[normalize-space()='{text}']")
    WebDriverWait(driver, timeout_s).until(expected_conditions.element_to_be_clickable(locator)).click()
