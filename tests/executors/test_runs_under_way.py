"""The collector's young threshold is raised only while runs are under way (harness.executors.base): put back after
the last run ends, a run that raised included, and kept while another thread's runs."""
import gc
import threading

import pytest

from harness.executors.base import RUN_YOUNG_THRESHOLD, runs_under_way


def test_the_threshold_is_raised_during_a_run_and_put_back_after_it_even_when_it_raises():
    before = gc.get_threshold()
    with runs_under_way:
        assert gc.get_threshold() == (max(RUN_YOUNG_THRESHOLD, before[0]), *before[1:])
    assert gc.get_threshold() == before
    with pytest.raises(ValueError):
        with runs_under_way:
            raise ValueError("a run's crash")
    assert gc.get_threshold() == before


def test_runs_in_threads_keep_it_raised_until_the_last_ends():
    before = gc.get_threshold()
    started, release = threading.Event(), threading.Event()

    def run() -> None:
        with runs_under_way:
            started.set()
            release.wait(10)

    other = threading.Thread(target=run)
    other.start()
    started.wait(10)
    with runs_under_way:
        pass
    assert gc.get_threshold()[0] == max(RUN_YOUNG_THRESHOLD, before[0])  # the other run is still under way
    release.set()
    other.join()
    assert gc.get_threshold() == before
