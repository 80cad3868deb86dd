"""gin scopes: ``scope/Name.arg = value`` applies to calls made through ``@scope/Name``
only (and to the calls nested in them); ALF's ``*_network_cls`` argument names."""

import pytest

import alf
from alf import config_util
from alf.configuration import registry
from tests.configuration.configurables import cfg_scale


@alf.configurable
def cfg_pair(first=None, second=None):
    """Calls its two ctors: what an algorithm does with its network ctors."""
    return first(), second()


@alf.configurable
def cfg_outer(inner=None, factor=1.0):
    """Calls ``inner`` (nested configurable call) and returns ``(factor, inner())``."""
    return factor, inner()


def _gin(*lines):
    config_util.apply_gin_params(list(lines))


def test_scoped_binding_reaches_only_the_scoped_call():
    _gin(
        "actor/cfg_scale.factor = 10.0",
        "value/cfg_scale.offset = 0.5",
        "cfg_scale.offset = 100.0",
        "cfg_pair.first = @actor/cfg_scale",
        "cfg_pair.second = @value/cfg_scale",
    )
    first_fn = alf.get_config_value("cfg_pair.first")
    assert first_fn(1.0) == 10.0 * 1.0 + 100.0  # scoped factor, unscoped offset
    second_fn = alf.get_config_value("cfg_pair.second")
    assert second_fn(1.0) == 2.0 * 1.0 + 0.5  # default factor, scoped offset wins
    assert cfg_scale(1.0) == 2.0 + 100.0  # no scope: neither scoped value


def test_scoped_evaluated_reference_and_nested_calls():
    _gin(
        "inner/cfg_scale.factor = 3.0",
        "outer/cfg_scale.factor = 5.0",
        "outer/cfg_outer.factor = 7.0",
        "cfg_zz_schedule.start = @outer/cfg_outer()",
    )
    # the nested call inside an active scope sees that scope's values
    alf.config("cfg_outer", inner=lambda: cfg_scale(1.0))
    value = alf.get_config_value("cfg_zz_schedule.start")
    assert value == (7.0, 5.0)
    assert cfg_outer(inner=lambda: cfg_scale(1.0)) == (1.0, 2.0)


def test_nested_scopes_innermost_wins():
    _gin("a/cfg_scale.factor = 3.0", "a/b/cfg_scale.factor = 4.0", "b/cfg_scale.offset = 1.0")
    ref = registry.ConfigurableRef("cfg_scale", evaluate=False, scope="a/b")
    assert ref.resolve()(1.0) == 4.0 + 1.0
    ref_a = registry.ConfigurableRef("cfg_scale", evaluate=False, scope="a")
    assert ref_a.resolve()(1.0) == 3.0


def test_scoped_errors_name_the_binding(tmp_path):
    with pytest.raises(ValueError, match="Unknown configurable 'cfg_sacle'"):
        _gin("actor/cfg_sacle.factor = 1.0")
    with pytest.raises(ValueError, match="'.*cfg_scale' has no configurable argument 'fact'"):
        _gin("actor/cfg_scale.fact = 1.0")
    # a scoped macro is the macro of its whole name (gin's, ALF's icm_mountain_car.gin)
    (tmp_path / "m.gin").write_text("x/MACRO = 1.5\ncfg_scale.factor = %x/MACRO\n")
    alf.load_config(str(tmp_path / "m.gin"))
    assert alf.get_config_value("cfg_scale.factor") == 1.5


def test_unused_scoped_values_are_reported():
    _gin("actor/cfg_scale.factor = 10.0", "never/cfg_scale.offset = 1.0")
    ref = registry.ConfigurableRef("cfg_scale", evaluate=False, scope="actor")
    assert ref.resolve()(1.0) == 10.0
    unused = config_util.check_command_line_applied()
    assert "never/cfg_scale.offset" in unused and "actor/cfg_scale.factor" not in unused
    text = config_util.operative_config_str()
    assert "#   actor/tests.configuration.configurables.cfg_scale.factor = 10.0" in text
    assert "never/tests.configuration.configurables.cfg_scale.offset = 1.0  (not used)" in text


def test_alf_network_cls_names_address_the_ctor_arguments():
    alf.config("ActorCriticAlgorithm", actor_network_cls=dict, value_network_cls=list)
    _gin("SacAlgorithm.q_network_cls = @cfg_scale", "DdpgAlgorithm.critic_network_cls = @cfg_scale")
    assert alf.get_config_value("ActorCriticAlgorithm.actor_network_ctor") is dict
    assert alf.get_config_value("ActorCriticAlgorithm.value_network_ctor") is list
    assert alf.get_config_value("SacAlgorithm.q_network_ctor") is cfg_scale
    assert alf.get_config_value("DdpgAlgorithm.critic_network_ctor") is cfg_scale
    with pytest.raises(ValueError, match="has no configurable argument 'q_network_cls'"):
        alf.config("PPOAlgorithm", q_network_cls=dict)
