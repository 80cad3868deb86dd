"""Every test of the configuration starts and ends with no configured value."""

import pytest

import alf


@pytest.fixture(autouse=True)
def _clean_configs():
    alf.reset_configs()
    yield
    alf.reset_configs()
