"""alf.summary: recording switch and per-iteration averaging of scalars."""

import torch

import alf.summary


class _Writer:
    def __init__(self):
        self.scalars = []

    def add_scalar(self, name, value, step):
        self.scalars.append((name, value, step))


def _with_writer():
    alf.summary.set_global_counter(0)
    writer = _Writer()
    alf.summary.set_default_writer(writer)
    return writer


def teardown_function():
    alf.summary.set_default_writer(None)
    alf.summary.set_global_counter(0)


def test_scalar_written_only_when_recording():
    writer = _with_writer()
    alf.summary.scalar("a", 1.0)
    with alf.summary.record_if(True):
        alf.summary.scalar("a", torch.tensor([1.0, 3.0]))
    assert writer.scalars == [("a", 2.0, 0)]


def test_average_scalars_writes_one_mean_per_name_and_step():
    writer = _with_writer()
    alf.summary.set_global_counter(7)
    with alf.summary.record_if(True), alf.summary.average_scalars():
        for value in (1.0, 2.0, 6.0):
            alf.summary.scalar("loss", torch.tensor(value))
        alf.summary.scalar("lr", 0.5)
        alf.summary.scalar("lr", 1.5)
        alf.summary.scalar("other_step", 4.0, step=3)
        assert writer.scalars == []  # nothing written inside the block
    assert sorted(writer.scalars) == [("loss", 3.0, 7), ("lr", 1.0, 7), ("other_step", 4.0, 3)]


def test_average_scalars_discards_on_error_and_restores_direct_writes():
    writer = _with_writer()
    try:
        with alf.summary.record_if(True), alf.summary.average_scalars():
            alf.summary.scalar("x", 1.0)
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert writer.scalars == []
    with alf.summary.record_if(True):
        alf.summary.scalar("y", 2.0)
    assert writer.scalars == [("y", 2.0, 0)]
