"""Tests for setting and reading config values (alf.configuration.binding and the name
lookup of alf.configuration.registry): suffix names, pending values, define_config."""

import pytest

import alf
from alf import config_util
from tests.configuration.configurables import cfg_ambig_a, cfg_ambig_b, cfg_deep, cfg_scale


def test_suffix_resolution():
    full_name = f"{cfg_scale.__module__}.cfg_scale"
    alf.config1(full_name + ".factor", 3.0)
    assert cfg_scale(1.0) == 3.0
    alf.reset_configs()
    alf.config("pkg_a.utils.cfg_ambig", x=5)
    alf.config1("pkg_b.utils.cfg_ambig.x", 6)
    assert (cfg_ambig_a(), cfg_ambig_b()) == (5, 6)
    assert full_name + ".factor" in alf.get_all_config_names()
    for number, name in enumerate(["cfg_deep", "tools.cfg_deep", "deep.pkg_c.tools.cfg_deep"]):
        alf.reset_configs()
        alf.config(name, x=number)
        assert cfg_deep() == number
    alf.reset_configs()
    alf.config("a.utils.cfg_ambig", x=7)  # not a dot-boundary suffix of pkg_a.utils.cfg_ambig
    assert cfg_ambig_a() == 1
    with pytest.raises(ValueError, match=r"Unknown configurable 'a\.utils\.cfg_ambig'"):
        config_util.validate_pending_configs()


@pytest.mark.parametrize("name", ["cfg_ambig", "utils.cfg_ambig"])
def test_ambiguous_suffix_lists_candidates(name):
    with pytest.raises(ValueError) as error:
        alf.config(name, x=1)
    message = str(error.value)
    assert f"'{name}' is ambiguous" in message
    assert "pkg_a.utils.cfg_ambig" in message and "pkg_b.utils.cfg_ambig" in message


def test_unknown_configurable_is_reported_with_suggestion():
    alf.config("cfg_scal", factor=2.0)  # maybe not imported yet: pending
    assert alf.get_inoperative_configs() == [("cfg_scal", {"factor": 2.0})]
    with pytest.raises(
        ValueError, match=r"Unknown configurable 'cfg_scal'.*Did you mean 'cfg_scale'"
    ):
        config_util.validate_pending_configs()
    with pytest.raises(ValueError, match="Unknown configurable 'cfg_scal'"):
        alf.get_operative_configs()


def test_unknown_argument_suggests_the_right_name():
    with pytest.raises(ValueError, match=r"has no configurable argument 'factr'.*'factor'"):
        alf.config("cfg_scale", factr=2.0)
    with pytest.raises(ValueError, match=r"Invalid config name 'cfg_scale\.'"):
        alf.config1("cfg_scale.", 2.0)


def test_config_after_use_raises():
    alf.config("cfg_scale", factor=3.0)
    assert cfg_scale(1.0) == 3.0
    with pytest.raises(ValueError, match=r"'.*cfg_scale\.factor' has already been used"):
        alf.config("cfg_scale", factor=4.0)
    # a default value that was used counts as used too
    with pytest.raises(ValueError, match="has already been used"):
        alf.config("cfg_scale", offset=1.0)
    alf.config("cfg_scale", factor=4.0, raise_if_used=False)
    assert cfg_scale(1.0) == 4.0


def test_args_passed_explicitly_are_not_used():
    cfg_scale(1.0, factor=2.0, offset=0.0)
    alf.config("cfg_scale", factor=5.0)  # never used, so still settable
    assert cfg_scale(1.0) == 5.0


def test_first_immutable_value_wins():
    alf.config("cfg_scale", factor=2.0)
    alf.config("cfg_scale", factor=3.0, mutable=False)
    alf.config("cfg_scale", factor=4.0)
    alf.config("cfg_scale", factor=5.0, mutable=False)
    assert cfg_scale(1.0) == 3.0


def test_pending_config_is_bound_at_registration():
    alf.config("late_pkg.cfg_late", a=4, mutable=False)
    alf.config("cfg_late", a=5, b=6)  # a is immutable: ignored
    alf.config("cfg_late", typo=1)

    @alf.configurable("late_pkg.cfg_late")
    def late(a=0, b=0):
        return a, b

    assert late() == (4, 6)
    with pytest.raises(
        ValueError, match=r"'late_pkg\.cfg_late' has no configurable argument 'typo'"
    ):
        config_util.validate_pending_configs()


def test_define_config_and_get_config_value():
    alf.config1("cfg_num_envs", 16)  # e.g. from --conf_param, before the definition
    alf.define_config("cfg_num_envs", 8)
    alf.define_config("cfg_unroll", 32)
    assert alf.get_config_value("cfg_num_envs") == 16
    assert alf.get_config_value("cfg_unroll") == 32
    assert alf.get_config_value("_CONFIG._USER.cfg_num_envs") == 16  # ALF's internal name
    with pytest.raises(ValueError, match="already been used"):
        alf.config1("cfg_unroll", 64)
    with pytest.raises(ValueError, match="already defined"):
        alf.define_config("cfg_unroll", 1)
    alf.config("cfg_scale", factor=3.0)
    assert alf.get_config_value("cfg_scale.factor") == 3.0
    assert alf.get_config_value("cfg_scale.offset") == 0.0
    with pytest.raises(ValueError, match="neither a configured nor a default value"):
        alf.get_config_value("cfg_scale.x")
    ops = dict(alf.get_operative_configs())
    assert ops[config_util.DEFINED_CONFIGS_KEY] == {"cfg_num_envs": 16, "cfg_unroll": 32}


def test_undefined_conf_variable_is_reported():
    alf.config1("factor", 2.0)
    with pytest.raises(
        ValueError, match=r"'factor' is neither defined with alf.define_config.*'cfg_scale.factor'"
    ):
        config_util.validate_pending_configs()


def test_reset_configs_clears_values_usage_and_pending():
    alf.config("cfg_scale", factor=3.0)
    alf.config("not_imported_yet", x=1)
    alf.define_config("cfg_var", 1)
    cfg_scale(1.0)
    alf.reset_configs()
    assert alf.get_inoperative_configs() == []
    assert alf.get_operative_configs() == []
    assert cfg_scale(1.0) == 2.0
    alf.define_config("cfg_var", 2)  # definitions are cleared too
    assert alf.get_config_value("cfg_var") == 2
    assert f"{cfg_scale.__module__}.cfg_scale.factor" in alf.get_all_config_names()
