"""Tests for conf files and command-line values (alf.configuration.loader): .py and .gin
confs, import_config, --conf_param and --gin_param."""

import os

import pytest

import alf
from alf import config_util
from alf.utils.common import parse_conf_file
from tests.configuration.configurables import CONF_DIR, cfg_scale, targets


def _bound_values():
    names = [
        "CfgToyNet.hidden_size",
        "CfgToyNet.activation",
        "CfgToyNet.optimizer",
        "CfgOptimizer.lr",
        "CfgOptimizer.momentum",
        "cfg_make_pair.b",
        "cfg_make_pair.c",
        "cfg_train.net_ctor",
        "cfg_train.num_iterations",
    ]
    return {name: alf.get_config_value(name) for name in names}


def _expected_bound_values():
    return {
        "CfgToyNet.hidden_size": 16,
        "CfgToyNet.activation": "relu",
        "CfgToyNet.optimizer": targets.CfgOptimizer(lr=0.01, momentum=0.9),
        "CfgOptimizer.lr": 0.01,
        "CfgOptimizer.momentum": 0.9,
        "cfg_make_pair.b": 20,
        "cfg_make_pair.c": [0.01, 2],
        "cfg_train.net_ctor": targets.CfgToyNet,
        "cfg_train.num_iterations": 5,
    }


@pytest.mark.parametrize("conf", ["exp_conf.py", "exp.gin"])
def test_py_and_gin_confs_bind_the_same_values(conf, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # includes/imports must resolve relative to the conf file
    alf.load_config(os.path.join(CONF_DIR, conf))
    result = targets.cfg_train()
    assert result == {
        "net_type": "CfgToyNet",
        "hidden_size": 16,
        "activation": "relu",
        "optimizer": targets.CfgOptimizer(lr=0.01, momentum=0.9),
        "num_iterations": 5,
        "pair": (1, 20, [0.01, 2]),
    }
    alf.reset_configs()
    alf.load_config(os.path.join(CONF_DIR, conf))
    assert _bound_values() == _expected_bound_values()
    base = "base_conf.py" if conf.endswith(".py") else "base.gin"
    assert config_util.get_loaded_conf_files() == [
        os.path.join(os.path.realpath(CONF_DIR), name) for name in (conf, base)
    ]


def test_gin_evaluated_reference_builds_a_new_object_per_use():
    alf.load_config(os.path.join(CONF_DIR, "exp.gin"))
    first, second = targets.CfgToyNet(), targets.CfgToyNet()
    assert first.optimizer == second.optimizer == targets.CfgOptimizer(0.01, 0.9)
    assert first.optimizer is not second.optimizer
    assert dict(alf.get_operative_configs())["conf_targets.CfgToyNet"]["optimizer"].evaluate


def test_import_config_runs_each_file_once(tmp_path):
    # a second run of inner_conf.py would fail: 'cfg_inner' is already defined
    (tmp_path / "inner_conf.py").write_text("import alf\nalf.define_config('cfg_inner', 1)\n")
    (tmp_path / "outer_conf.py").write_text(
        "import alf\nalf.import_config('inner_conf.py')\nalf.import_config('inner_conf.py')\n"
    )
    alf.load_config(str(tmp_path / "outer_conf.py"))
    assert config_util.get_loaded_conf_files() == [
        str(tmp_path.resolve() / "outer_conf.py"),
        str(tmp_path.resolve() / "inner_conf.py"),
    ]
    assert alf.get_config_value("cfg_inner") == 1


def test_import_config_searches_alf_config_path(tmp_path, monkeypatch):
    library = tmp_path / "library"
    library.mkdir()
    (library / "shared.gin").write_text("cfg_scale.offset = 0.5\n")
    (tmp_path / "main_conf.py").write_text("import alf\nalf.import_config('shared.gin')\n")
    with pytest.raises(ValueError, match="Cannot find conf file 'shared.gin'"):
        alf.load_config(str(tmp_path / "main_conf.py"))
    monkeypatch.setenv("ALF_CONFIG_PATH", f"/nonexistent{os.pathsep}{library}")
    alf.load_config(str(tmp_path / "main_conf.py"))
    assert cfg_scale(1.0) == 2.5


def test_gin_errors_name_the_culprit(tmp_path):
    cases = {
        "syntax.gin": ("cfg_scale.factor = = 1\n", r"Cannot parse gin config .*syntax.gin"),
        "arg.gin": ("\ncfg_scale.fact = 1\n", r"arg.gin, line 2: .*Did you mean 'factor'"),
        "import.gin": ("import no_such_module_xyz\n", "Cannot import 'no_such_module_xyz'"),
    }
    for name, (text, pattern) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=pattern):
            alf.load_config(str(tmp_path / name))
    (tmp_path / "ref.gin").write_text("cfg_scale.factor = @cfg_scal\n")
    alf.load_config(str(tmp_path / "ref.gin"))
    with pytest.raises(ValueError, match=r"gin reference '@cfg_scal'.*Did you mean 'cfg_scale'"):
        config_util.validate_pending_configs()
    alf.reset_configs()
    (tmp_path / "scoped.gin").write_text("train/M = 3.0\ncfg_scale.factor = %train/M\n")
    alf.load_config(str(tmp_path / "scoped.gin"))
    assert cfg_scale(1.0) == 3.0  # a scoped macro is the macro of its whole name, as in gin
    alf.reset_configs()
    (tmp_path / "macro.gin").write_text("cfg_scale.factor = %NO_MACRO\n")
    alf.load_config(str(tmp_path / "macro.gin"))
    with pytest.raises(ValueError, match="Unknown gin macro '%NO_MACRO'"):
        cfg_scale(1.0)
    with pytest.raises(ValueError, match=r"Conf file '/no/such/conf.py' does not exist"):
        alf.load_config("/no/such/conf.py")
    with pytest.raises(ValueError, match=r"must end with '\.py' or '\.gin'"):
        (tmp_path / "conf.txt").write_text("")
        alf.load_config(str(tmp_path / "conf.txt"))


@pytest.mark.parametrize(
    "conf_param, expected",
    [
        ("cfg_scale.factor=3", ("cfg_scale.factor", 3)),
        (" a.b.c = [1, (2, 'x')] ", ("a.b.c", [1, (2, "x")])),
        ("Env.name='CartPole-v1'", ("Env.name", "CartPole-v1")),
        ("num_envs=-1e-3", ("num_envs", -1e-3)),
        ("X.flag=None", ("X.flag", None)),
        ("X.expr='a=b'", ("X.expr", "a=b")),
    ],
)
def test_parse_conf_param(conf_param, expected):
    assert config_util.parse_conf_param(conf_param) == expected


@pytest.mark.parametrize(
    "conf_param, pattern",
    [
        ("cfg_scale.factor", "has no '='"),
        (".factor=1", "invalid name '.factor'"),
        ("cfg scale.factor=1", "invalid name 'cfg scale.factor'"),
        ("cfg_scale.=1", r"invalid name 'cfg_scale\.'"),
        ("Env.name=CartPole-v1", "not a Python literal: 'CartPole-v1'"),
        ("cfg_scale.factor=", "not a Python literal: ''"),
    ],
)
def test_parse_conf_param_errors_name_the_string(conf_param, pattern):
    with pytest.raises(ValueError, match=pattern) as error:
        config_util.parse_conf_param(conf_param)
    assert repr(conf_param) in str(error.value)


def test_conf_params_and_gin_params_override_the_conf_file():
    conf = os.path.join(CONF_DIR, "exp_conf.py")
    parse_conf_file(
        conf,
        conf_params=["CfgToyNet.hidden_size=64", "cfg_train.num_iterations=9"],
        gin_params=["cfg_make_pair.b = 7", "CfgToyNet.optimizer = @CfgOptimizer()"],
    )
    result = targets.cfg_train()
    assert (result["hidden_size"], result["num_iterations"], result["pair"]) == (
        64,
        9,
        (1, 7, [0.01, 2]),
    )
    assert result["optimizer"] == targets.CfgOptimizer(0.01, 0.9)


def test_conf_param_overrides_a_gin_macro():
    parse_conf_file(os.path.join(CONF_DIR, "exp.gin"), conf_params=["LEARNING_RATE=0.5"])
    assert alf.get_config_value("LEARNING_RATE") == 0.5
    assert alf.get_config_value("CfgOptimizer.lr") == 0.5
    assert targets.cfg_make_pair(1) == (1, 20, [0.5, 2])


def test_parse_conf_file_reports_unknown_conf_param():
    with pytest.raises(ValueError, match=r"Unknown configurable 'CfgToyNt'.*'CfgToyNet'"):
        parse_conf_file(
            os.path.join(CONF_DIR, "base_conf.py"), conf_params=["CfgToyNt.hidden_size=1"]
        )
