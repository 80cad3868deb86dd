"""``with_defaults``: new defaults, every argument passed on, configurable subclasses."""

import inspect

import pytest

import alf
from alf.utils.defaults import with_defaults


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
