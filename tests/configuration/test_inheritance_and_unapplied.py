"""A value configured for a class reaches its configurable subclasses unless they are
configured themselves, and a class declaring an ALF base (``alf_bases``) the arguments
declared for it; a command-line value that every call overrode is an error."""

import pytest

import alf
from alf.configuration.binding import check_command_line_applied


@alf.configurable
class Base:
    def __init__(self, rate=1.0, size=3):
        self.rate, self.size = rate, size


@alf.configurable
class Sub(Base):
    def __init__(self, rate=2.0, size=4):
        super().__init__(rate=rate, size=size)  # passes both explicitly, as PPO does


@alf.configurable
class SubSub(Sub):
    pass


def test_a_base_class_value_reaches_subclasses_unless_they_are_configured():
    alf.config("Base", rate=5.0)
    assert Sub().rate == 5.0 and SubSub().rate == 5.0 and Base().rate == 5.0
    assert Sub().size == 4  # not configured anywhere: the subclass's own default
    alf.reset_configs()
    alf.config("Base", rate=5.0)
    alf.config("Sub", rate=7.0)
    assert Sub().rate == 7.0 and SubSub().rate == 7.0  # the nearest configured class wins
    assert Base().rate == 5.0
    assert Sub(rate=9.0).rate == 9.0  # an explicit argument wins over both


def test_a_command_line_value_every_call_overrode_is_an_error():
    alf.config1("Sub.size", 8, mutable=False)  # as --conf_param sets it
    alf.config1("Base.size", 6)  # a conf value
    Sub(size=1)
    Base(size=2)
    with pytest.raises(ValueError, match=r"the command-line value Sub.size=8 was not applied"):
        check_command_line_applied()
    Sub()  # now it is used once
    assert check_command_line_applied() == ["Base.size"]  # unused conf values are listed
    text = alf.config_util.operative_config_str()  # and written in alf_config.py
    unused = text.split("# Configured but not used by any call")[1]
    assert "test_inheritance_and_unapplied.Base.size = 6" in unused


@alf.configurable(alf_bases={f"{__name__}.Base": ("rate",)})
class Sibling:  # ALF's Sibling would be a Base; here it is not
    def __init__(self, rate=3.0, size=5):
        self.rate, self.size = rate, size


def test_an_alf_base_passes_on_the_arguments_declared_for_it():
    alf.reset_configs()
    alf.config("Base", rate=5.0, size=6)
    assert (Sibling().rate, Sibling().size) == (5.0, 5)  # size is not declared
    alf.reset_configs()
    alf.config("Base", rate=5.0)
    alf.config("Sibling", rate=7.0)
    assert Sibling().rate == 7.0 and Sibling(rate=1.0).rate == 1.0
    alf.reset_configs()


def test_alf_bases_are_checked():
    with pytest.raises(ValueError, match="arguments of '.*Odd'"):

        @alf.configurable(alf_bases={f"{__name__}.Base": ("speed",)})
        class Odd:
            def __init__(self, rate=1.0):
                pass

    with pytest.raises(ValueError, match="must be a dict"):
        alf.configurable(alf_bases=["Base"])(lambda rate=1.0: rate)
