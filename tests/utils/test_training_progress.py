"""``Progress`` objects driving schedules (``alf.utils.training_progress``): a scheduler reads
its own ``Progress``, else the one the run put in use, else the default one that
``update_progress``/``get_progress`` wrap."""

from __future__ import annotations

import threading

import pytest

from alf.utils.schedulers import LinearScheduler, get_progress, update_progress
from alf.utils.training_progress import (
    Progress,
    current_progress,
    default_progress,
    progress_in_use,
)


@pytest.fixture(autouse=True)
def fresh_default():
    update_progress(0, 0, 0.0)
    yield
    update_progress(0, 0, 0.0)


def test_a_scheduler_reads_the_progress_it_was_given():
    progress = Progress()
    lr = LinearScheduler([(0.0, 1.0), (0.5, 0.2), (1.0, 0.0)], progress=progress)
    assert lr() == 1.0
    progress.update(3, 300, 0.25)
    assert lr() == pytest.approx(0.6)
    progress.update(9, 900, 0.75)
    assert lr() == pytest.approx(0.1)
    update_progress(0, 0, 1.0)  # the default progress is not its
    assert lr() == pytest.approx(0.1)
    steps = LinearScheduler([(0, 10.0), (1000, 20.0)], "env_steps", progress=progress)
    assert steps() == pytest.approx(19.0)


def test_percent_is_clipped_to_the_unit_interval():
    progress = Progress()
    progress.update(1, 2, 1.7)
    assert progress.get() == 1.0
    progress.update(1, 2, -0.3)
    assert progress.get("percent") == 0.0
    assert (progress.get("iterations"), progress.get("env_steps")) == (1, 2)


def test_a_scheduler_without_one_reads_the_progress_in_use():
    run_progress = Progress()
    lr = LinearScheduler([(0, 1.0), (10, 0.0)], "iterations")
    update_progress(5, 0, 0.0)  # the default one, outside any run
    assert lr() == pytest.approx(0.5)
    with progress_in_use(run_progress):
        assert current_progress() is run_progress
        assert lr() == 1.0
        run_progress.update(8, 0, 0.0)
        assert lr() == pytest.approx(0.2)
        assert get_progress("iterations") == 8
        update_progress(9, 0, 0.0)  # the wrappers act on the progress in use
        assert run_progress.iterations == 9
    assert current_progress() is default_progress()
    assert lr() == pytest.approx(0.5)


def test_the_progress_in_use_is_seen_by_other_threads():
    run_progress = Progress()
    run_progress.update(4, 0, 0.0)
    seen = []
    with progress_in_use(run_progress):
        thread = threading.Thread(target=lambda: seen.append(get_progress("iterations")))
        thread.start()
        thread.join()
    assert seen == [4]


def test_an_unknown_progress_type_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"Unknown progress_type 'steps'; expected one of"):
        LinearScheduler([(0, 1.0)], "steps")
    with pytest.raises(ValueError, match="'epochs'"):
        Progress().get("epochs")
