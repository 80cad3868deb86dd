"""``alf.configuration.transfer``: the configured values of one process, applied in another
(env workers). Round trips here in one process (export, forget everything, import); the
env workers' side is tested with real subprocesses in ``tests/environments``."""

import threading

import pytest
from absl import logging

import alf
from alf import config_util
from alf.configuration import registry, scopes, transfer
from tests.configuration.configurables import cfg_scale, cfg_zz_schedule


def _round_trip():
    exported = transfer.export_configs()
    alf.reset_configs()
    assert cfg_scale(1.0) == 2.0  # nothing configured any more
    transfer.import_configs(exported)
    return exported


def test_every_kind_of_configured_value_survives_the_round_trip():
    alf.config("cfg_scale", factor=3.0, offset=lambda: None)  # a lambda travels by value
    config_util.apply_gin_params(
        [
            "actor/cfg_scale.offset = 0.5",
            "start_macro = 4.0",
            "cfg_zz_schedule.start = %start_macro",
        ]
    )
    alf.config1("tests_transfer_unknown_target.arg", 7)  # pending: no such target yet
    exported = _round_trip()
    assert {kind for kind, *_ in exported} == {"config", "macro", "scoped"}
    assert alf.get_config_value("cfg_scale.factor") == 3.0
    assert alf.get_config_value("cfg_scale.offset")() is None
    assert cfg_zz_schedule() == (4.0, 0.0)  # the macro, resolved in this process
    slots = scopes.SCOPED[("actor", "tests.configuration.configurables.cfg_scale")]
    assert slots["offset"].value == 0.5
    assert [(p.name, p.value) for p in registry.PENDING] == [
        ("tests_transfer_unknown_target.arg", 7)
    ]


def test_an_immutable_value_stays_immutable():
    alf.config1("cfg_scale.factor", 5.0, mutable=False)
    _round_trip()
    alf.config1("cfg_scale.factor", 9.0, raise_if_used=False)  # ignored, as when exported
    assert cfg_scale(1.0) == 5.0


def test_a_value_that_cannot_be_pickled_is_left_out_with_a_warning(monkeypatch):
    warnings = []
    monkeypatch.setattr(logging, "warning", lambda msg, *args: warnings.append(msg % args))
    monkeypatch.setattr(transfer, "_WARNED", set())
    alf.config("cfg_zz_schedule", start=threading.Lock(), end=-1.0)
    exported = _round_trip()
    assert [name for _, name, *_ in exported] == [
        "tests.configuration.configurables.cfg_zz_schedule.end"
    ]
    assert cfg_zz_schedule() == (1.0, -1.0)
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "Configured value 'tests.configuration.configurables.cfg_zz_schedule.start' is not "
        "carried into env worker processes: it cannot be pickled"
    )


@pytest.mark.parametrize("kind", ["config", "scoped"])
def test_a_value_the_worker_cannot_unpickle_or_bind_is_left_out_with_a_warning(monkeypatch, kind):
    warnings = []
    monkeypatch.setattr(logging, "warning", lambda msg, *args: warnings.append(msg % args))
    monkeypatch.setattr(transfer, "_WARNED", set())
    if kind == "config":
        entry = ("config", "cfg_scale.factor", b"not a pickle", True)
        reason = "it cannot be unpickled in the worker"
    else:
        entry = ("scoped", ("actor", "no_such_module.Thing.arg"), transfer.export_value(1), True)
        reason = "it cannot be bound in the worker"
    transfer.import_configs(
        [entry, ("config", "cfg_scale.offset", transfer.export_value(1.0), True)]
    )
    assert cfg_scale(1.0) == 3.0  # the other value still applied
    assert len(warnings) == 1 and reason in warnings[0]
