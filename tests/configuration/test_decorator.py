"""Tests for ``@alf.configurable`` (alf.configuration.decorator): configured values are
defaults, classes stay classes, whitelists and blacklists."""

import dataclasses
import inspect

import pytest

import alf
from tests.configuration.configurables import (
    CfgAgent,
    CfgDecoratedSubAgent,
    CfgPlainSubAgent,
    CfgPoint,
    cfg_black,
    cfg_scale,
    cfg_white,
    targets,
)


def test_configured_values_are_defaults_and_call_site_args_win():
    assert cfg_scale(3.0) == 6.0
    alf.reset_configs()
    alf.config("cfg_scale", factor=10.0, offset=1.0)
    assert cfg_scale(3.0) == 31.0
    assert cfg_scale(3.0, factor=0.5) == 2.5
    assert cfg_scale(3.0, 4.0) == 13.0  # positional beats configured
    assert cfg_scale.__name__ == "cfg_scale"
    assert cfg_scale.__doc__ == "Returns ``x * factor + offset``."
    assert list(inspect.signature(cfg_scale).parameters) == ["x", "factor", "offset"]


def test_configurable_class_stays_a_class():
    alf.config("CfgAgent", gamma=0.9)
    agent = CfgAgent(num_envs=4)
    assert isinstance(agent, CfgAgent)
    assert (agent.gamma, agent.num_envs) == (0.9, 4)
    assert CfgAgent(gamma=0.5).gamma == 0.5

    sub = CfgPlainSubAgent(depth=5)
    assert isinstance(sub, CfgAgent)
    assert (sub.depth, sub.gamma) == (5, 0.9)

    alf.config("CfgDecoratedSubAgent", num_envs=8)
    decorated = CfgDecoratedSubAgent()
    assert (decorated.gamma, decorated.num_envs) == (0.9, 8)
    assert CfgAgent().num_envs == 1


def test_named_tuple_class_is_configurable():
    alf.config("CfgPoint", y=7)
    point = CfgPoint(1)
    assert isinstance(point, CfgPoint) and tuple(point) == (1, 7)
    assert CfgPoint(1, 2) == (1, 2)


def test_dataclass_configurable_keeps_dataclass_behaviour():
    alf.config("CfgOptimizer", momentum=0.5)
    assert dataclasses.is_dataclass(targets.CfgOptimizer)
    assert targets.CfgOptimizer(lr=1.0) == targets.CfgOptimizer(1.0, 0.5)


def test_whitelist_and_blacklist():
    alf.config("cfg_white", lr=0.5)
    alf.config("cfg_black", lr=0.25)
    assert cfg_white() == (0.5, 1e-8)
    assert cfg_black() == (0.25, 1e-8)
    with pytest.raises(ValueError, match="Argument 'eps' of '.*cfg_white' is not configurable"):
        alf.config("cfg_white", eps=1.0)
    with pytest.raises(ValueError, match="Argument 'eps' of '.*cfg_black' is not configurable"):
        alf.config("cfg_black", eps=1.0)
    with pytest.raises(ValueError, match="whitelist or a blacklist, not both"):
        alf.configurable(whitelist=["a"], blacklist=["b"])(lambda a, b: 0)
