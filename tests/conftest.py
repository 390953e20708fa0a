"""pytest fixtures of the sparsekernel test suite (the data sets live in _helpers.py)."""

import warnings

import pytest

from _helpers import dataset


@pytest.fixture(scope="module")
def client():
    """A distributed Client on a LocalCluster of two worker processes, one thread each (as CI runs
    the Dask tests); one per test module that asks for it."""
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dashboard's port
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()

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
