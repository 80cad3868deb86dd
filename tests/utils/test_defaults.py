"""``with_defaults`` and ``extends``: new defaults and arguments, every argument passed on,
configurable subclasses."""

import inspect

import pytest

import alf
from alf.utils.defaults import extends, with_defaults


def _scaled(x, scale=1.0, shift=0.0, *, power=1):
    return (x * scale + shift) ** power


def test_new_defaults_apply_only_to_what_the_caller_leaves_out():
    doubled = with_defaults(_scaled, scale=2.0, power=2)
    assert doubled(3.0) == 36.0  # (3 * 2) ** 2
    assert doubled(3.0, 1.0) == 9.0  # positional scale wins
    assert doubled(3.0, shift=1.0) == 49.0
    assert doubled(3.0, power=1) == 6.0
    params = inspect.signature(doubled).parameters
    assert [p.default for p in params.values()][1:] == [2.0, 0.0, 2]
    with pytest.raises(TypeError):
        doubled()  # x is still required


def test_unknown_or_variadic_names_are_rejected():
    with pytest.raises(TypeError, match="not arguments"):
        with_defaults(_scaled, scal=2.0)

    def variadic(*args, **kwargs):
        return args, kwargs

    with pytest.raises(TypeError, match="cannot take a default"):
        with_defaults(variadic, kwargs={})


@alf.configurable
class _Base:
    def __init__(self, a, b=1, c=2):
        self.values = (a, b, c)


@alf.configurable
class _Child(_Base):
    __init__ = with_defaults(_Base.__init__, c=30)


def test_configurable_subclass_has_its_own_defaults_and_configs():
    alf.reset_configs()
    try:
        assert _Child(0).values == (0, 1, 30)
        alf.reset_configs()
        alf.config("_Base", b=5, c=6)
        assert _Base(0).values == (0, 5, 6)
        # the parent's configured values reach the child, over the child's own defaults
        assert _Child(0).values == (0, 5, 6)
        alf.reset_configs()
        alf.config("_Child", b=7)
        assert _Child(0).values == (0, 7, 30)
        assert _Child(0, c=8).values == (0, 7, 8)
    finally:
        alf.reset_configs()


@alf.configurable
class _Extended(_Base):
    @extends(_Base.__init__, b=10)
    def __init__(self, *, d: int = 4, **parent_args):
        super().__init__(**parent_args)
        self.d = d


def test_extends_adds_arguments_after_the_parents_and_passes_them_on():
    alf.reset_configs()
    try:
        params = inspect.signature(_Extended.__init__).parameters
        assert list(params) == ["self", "a", "b", "c", "d"]
        assert [p.default for p in params.values()][2:] == [10, 2, 4]
        assert params["d"].annotation is int  # resolved, not the string 'int'
        x = _Extended(1, 2, d=5)  # positional as the parent's
        assert (x.values, x.d) == ((1, 2, 2), 5)
        assert _Extended(0).values == (0, 10, 2)
        with pytest.raises(TypeError):
            _Extended(0, 1, 2, 3)  # d is keyword-only
        alf.reset_configs()
        alf.config("_Extended", c=7, d=8)
        x = _Extended(0)
        assert (x.values, x.d) == ((0, 10, 7), 8)
    finally:
        alf.reset_configs()


def test_extends_refuses_repeats_and_positional_additions():
    with pytest.raises(TypeError, match=r"repeats parent arguments \['b'\]"):

        @extends(_Base.__init__)
        def init(self, *, b=3, **parent_args):
            pass

    with pytest.raises(TypeError, match="must be"):

        @extends(_Base.__init__)
        def init2(self, d, **parent_args):
            pass

    with pytest.raises(TypeError, match="not arguments"):
        extends(_Base.__init__, e=1)(lambda self, **parent_args: None)


def test_ppo_takes_actor_critic_arguments_and_its_own():
    from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
    from alf.algorithms.ppo_algorithm import PPOAlgorithm
    from alf.algorithms.ppo_loss import PPOLoss

    parent = inspect.signature(ActorCriticAlgorithm.__init__).parameters
    params = inspect.signature(PPOAlgorithm.__init__).parameters
    assert list(params) == [*parent, "target_kl"]
    assert params["loss_class"].default is PPOLoss
    assert params["name"].default == "PPOAlgorithm"
    assert params["epsilon_greedy"].annotation == parent_hint(
        ActorCriticAlgorithm, "epsilon_greedy"
    )


def parent_hint(cls, name):
    import typing

    return typing.get_type_hints(inspect.unwrap(cls.__init__), include_extras=True)[name]
