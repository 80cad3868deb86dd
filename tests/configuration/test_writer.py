"""Tests for the configuration reports (alf.configuration.writer): operative and inoperative
configs, operative_config_str round trips, repr_wrapper."""

import functools
import os

import pytest

import alf
from alf import config_util
from tests.configuration.configurables import (
    CONF_DIR,
    CfgAgent,
    CfgNormal,
    Opaque,
    cfg_scale,
    targets,
)


def test_operative_and_inoperative_configs():
    alf.config("cfg_scale", factor=3.0)
    alf.config("CfgAgent", gamma=0.5)
    cfg_scale(1.0, offset=1.0)
    scale_name = f"{cfg_scale.__module__}.cfg_scale"
    agent_name = f"{CfgAgent.__module__}.CfgAgent"
    assert alf.get_operative_configs() == [(scale_name, {"factor": 3.0})]
    assert alf.get_inoperative_configs() == [(agent_name, {"gamma": 0.5})]
    CfgAgent(num_envs=2)
    assert alf.get_operative_configs(include_defaults=True) == [
        (agent_name, {"gamma": 0.5}),
        (scale_name, {"factor": 3.0}),
    ]
    cfg_scale(2.0)
    assert dict(alf.get_operative_configs(include_defaults=True))[scale_name] == {
        "factor": 3.0,
        "offset": 0.0,
    }


def test_operative_config_str_round_trips():
    alf.load_config(os.path.join(CONF_DIR, "exp.gin"))
    alf.config("cfg_scale", factor=float("inf"), offset=-0.0)
    alf.define_config("cfg_steps", 7)
    alf.config("CfgAgent", gamma=CfgNormal(0.0, scale=[1.0, (2,)]))
    before = targets.cfg_train()
    cfg_scale(1.0)
    alf.get_config_value("cfg_steps")
    CfgAgent()
    operative = _operative_values()
    text = config_util.operative_config_str()
    assert text.startswith("# Operative configuration")
    assert "import alf\nimport conf_targets\n" in text
    assert "optimizer=conf_targets.CfgOptimizer()" in text
    assert "net_ctor=conf_targets.CfgToyNet" in text
    assert "factor=float('inf')" in text
    assert "# Default values used" in text

    alf.reset_configs()
    exec(compile(text, "<operative>", "exec"), {})
    assert targets.cfg_train() == before
    assert cfg_scale(1.0) == float("inf")
    assert alf.get_config_value("cfg_steps") == 7
    assert repr(CfgAgent().gamma) == "CfgNormal(0.0, scale=[1.0, (2,)])"
    assert _operative_values() == operative


def _operative_values():
    """``{'Name.arg': repr(value)}`` of the operative configs, references resolved."""
    names = [
        f"{name}.{arg}" if name != config_util.DEFINED_CONFIGS_KEY else arg
        for name, args in alf.get_operative_configs()
        for arg in args
    ]
    return {name: repr(alf.get_config_value(name)) for name in names}


def test_operative_config_str_configures_called_references_first(tmp_path):
    (tmp_path / "chain.gin").write_text(
        "CfgAgent.gamma = @cfg_zz_schedule()\ncfg_zz_schedule.start = 5.0\n"
    )
    alf.load_config(str(tmp_path / "chain.gin"))
    assert CfgAgent().gamma == (5.0, 0.0)
    text = config_util.operative_config_str()
    assert text.index(".cfg_zz_schedule', start=5.0)") < text.index(".CfgAgent',")
    alf.reset_configs()
    exec(compile(text, "<operative>", "exec"), {})
    assert CfgAgent().gamma == (5.0, 0.0)


def test_operative_config_str_comments_values_without_source_form():
    def local_fn():
        return 0

    alf.config("cfg_make_pair", b=Opaque(), c=local_fn)
    alf.config("CfgAgent", gamma=0.5, num_envs=Opaque())
    targets.cfg_make_pair(1)
    CfgAgent()
    text = config_util.operative_config_str()
    assert "# num_envs=<Opaque object>  (not renderable as Python source)" in text
    assert f"alf.config('{CfgAgent.__module__}.CfgAgent', gamma=0.5)" in text
    assert "# b=<Opaque object>" in text and "# c=<function " in text
    assert "alf.config('conf_targets.cfg_make_pair'" not in text
    alf.reset_configs()
    exec(compile(text, "<operative>", "exec"), {})
    assert alf.get_inoperative_configs() == [(f"{CfgAgent.__module__}.CfgAgent", {"gamma": 0.5})]


def test_operative_config_str_renders_torch_functions_by_their_exported_name():
    """``torch.relu_``'s qualname (``_VariableFunctionsClass.relu_``) does not import; its
    exported name does, so a ctor holding it (``partial(Net, activation=torch.relu_)``)
    is written out instead of dropped."""
    torch = pytest.importorskip("torch")
    alf.config("CfgAgent", gamma=functools.partial(max, key=torch.relu_))
    CfgAgent()
    text = config_util.operative_config_str()
    assert "gamma=functools.partial(max, key=torch.relu_)" in text
    alf.reset_configs()
    exec(compile(text, "<operative>", "exec"), {})
    assert CfgAgent().gamma.keywords["key"] is torch.relu_


def test_operative_config_str_renders_numpy_scalars_as_numbers():
    np = pytest.importorskip("numpy")
    alf.config("cfg_scale", factor=np.float32(0.5), offset=np.int64(3))
    assert cfg_scale(2.0) == 4.0
    text = config_util.operative_config_str()
    assert "cfg_scale', factor=0.5, offset=3)" in text


def test_repr_wrapper():
    normal = CfgNormal(1.0, scale=2.0)
    assert repr(normal) == "CfgNormal(1.0, scale=2.0)"
    assert (normal.loc, normal.scale) == (1.0, 2.0)
