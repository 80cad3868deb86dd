"""Tests for alf.config_util: configurables, conf files (.py and .gin) and reports."""

import collections
import dataclasses
import functools
import importlib.util
import inspect
import os
import sys

import pytest

import alf
from alf import config_util
from alf.utils.common import parse_conf_file

CONF_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "confs")


def _load_conf_targets():
    """Load tests/confs/conf_targets.py as the module ``conf_targets`` (once)."""
    if "conf_targets" not in sys.modules:
        path = os.path.join(CONF_DIR, "conf_targets.py")
        spec = importlib.util.spec_from_file_location("conf_targets", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["conf_targets"] = module
        spec.loader.exec_module(module)
    return sys.modules["conf_targets"]


targets = _load_conf_targets()


@alf.configurable
def cfg_scale(x, factor=2.0, offset=0.0):
    """Returns ``x * factor + offset``."""
    return x * factor + offset


@alf.configurable
def cfg_zz_schedule(start=1.0, end=0.0):
    return start, end


@alf.configurable
class CfgAgent:
    """An agent with configurable knobs."""

    def __init__(self, gamma=0.99, num_envs=1):
        self.gamma = gamma
        self.num_envs = num_envs


class CfgPlainSubAgent(CfgAgent):
    """Not decorated: its ``super().__init__`` uses CfgAgent's configuration."""

    def __init__(self, depth=3, **kwargs):
        super().__init__(**kwargs)
        self.depth = depth


@alf.configurable
class CfgDecoratedSubAgent(CfgAgent):
    """Decorated without its own ``__init__``: configured separately from CfgAgent."""


@alf.configurable("pkg_a.utils.cfg_ambig")
def cfg_ambig_a(x=1):
    return x


@alf.configurable("pkg_b.utils.cfg_ambig")
def cfg_ambig_b(x=1):
    return x


@alf.configurable("deep.pkg_c.tools.cfg_deep")
def cfg_deep(x=-1):
    return x


@alf.configurable(whitelist=["lr"])
def cfg_white(lr=0.1, eps=1e-8):
    return lr, eps


@alf.configurable(blacklist=["eps"])
def cfg_black(lr=0.1, eps=1e-8):
    return lr, eps


@alf.configurable
class CfgPoint(collections.namedtuple("CfgPointBase", ["x", "y"])):
    """A named tuple: its ``__new__`` is configured."""


@alf.repr_wrapper
class CfgNormal:
    def __init__(self, loc, scale=1.0):
        self.loc = loc
        self.scale = scale


class Opaque:
    """Has no Python source form."""

    def __repr__(self):
        return "<Opaque\nobject>"


@pytest.fixture(autouse=True)
def _clean_configs():
    alf.reset_configs()
    yield
    alf.reset_configs()


# --------------------------------------------------------------------------- decorator


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


# --------------------------------------------------------------------------- conf files


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
        "scope.gin": ("train/cfg_scale.factor = 1\n", "gin scopes are not supported"),
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
    (tmp_path / "macro.gin").write_text("cfg_scale.factor = %NO_MACRO\n")
    alf.load_config(str(tmp_path / "macro.gin"))
    with pytest.raises(ValueError, match="Unknown gin macro '%NO_MACRO'"):
        cfg_scale(1.0)
    with pytest.raises(ValueError, match=r"Conf file '/no/such/conf.py' does not exist"):
        alf.load_config("/no/such/conf.py")
    with pytest.raises(ValueError, match=r"must end with '\.py' or '\.gin'"):
        (tmp_path / "conf.txt").write_text("")
        alf.load_config(str(tmp_path / "conf.txt"))


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


# --------------------------------------------------------------------------- reports


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
    assert text.index(".cfg_zz_schedule', start=5.0)") < text.index(".CfgAgent', gamma=")
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


# --------------------------------------------------------------------------- command line


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


def test_dataclass_configurable_keeps_dataclass_behaviour():
    alf.config("CfgOptimizer", momentum=0.5)
    assert dataclasses.is_dataclass(targets.CfgOptimizer)
    assert targets.CfgOptimizer(lr=1.0) == targets.CfgOptimizer(1.0, 0.5)
