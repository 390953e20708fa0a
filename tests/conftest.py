"""pytest fixtures of the sparsekernel test suite (the data sets live in _helpers.py)."""

import pytest

from _helpers import dataset

@pytest.fixture(scope="session")
def breast_cancer():
    return dataset("breast_cancer")


@pytest.fixture(scope="session")
def iris():
    return dataset("iris")


@pytest.fixture(scope="session")
def wine():
    return dataset("wine")


@pytest.fixture(scope="session")
def moons():
    return dataset("moons")
