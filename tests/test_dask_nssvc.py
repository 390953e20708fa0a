"""NSSVC on dask arrays (sparsekernel.dask): the fit over row blocks resident on the workers of a
LocalCluster with two worker processes (linear, or a kernel whose columns of the working set each
block keeps) equals the in-memory fit exactly (every iterate, so the same alpha, b, T, history),
with one round trip per Newton iteration plus one."""

import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from sklearn.datasets import make_classification  # noqa: E402

from sparsekernel import NSSVC  # noqa: E402
from sparsekernel.datasets import make_nssvm_gaussians  # noqa: E402


def _same_fit(a, b):
    names = ["classes_", "dual_coef_", "intercept_", "support_", "n_iter_", "s_", "training_accuracy_"]
    names += ["coef_"] if a.kernel == "linear" else ["support_vectors_", "_gamma"]
    for name in names:
        va, vb = getattr(a, name), getattr(b, name)
        if sp.issparse(va):
            va, vb = va.toarray(), vb.toarray()
        np.testing.assert_array_equal(va, vb, err_msg=name)
    for ha, hb in zip(a.history_, b.history_):
        np.testing.assert_array_equal(ha, hb)


def _dask(X, y, sizes):
    chunks = (tuple(sizes),)
    if sp.issparse(X):
        Xd = da.from_array(X.toarray(), chunks=chunks + (X.shape[1],)).map_blocks(sp.csr_matrix,
                                                                                 meta=sp.csr_matrix((0, 0)))
    else:
        Xd = da.from_array(X, chunks=chunks + (X.shape[1],))
    return Xd, da.from_array(y, chunks=chunks)


CASES = {
    # NSSVM Example 4.1 at 10^5 rows, uneven chunks
    "gauss-1e5": lambda: (*make_nssvm_gaussians(100_000, random_state=0), (30_000, 17_000, 53_000), {}),
    "gauss-float32": lambda: (make_nssvm_gaussians(60_000, random_state=1)[0].astype(np.float32),
                              make_nssvm_gaussians(60_000, random_state=1)[1], (25_000, 35_000), {}),
    "csr": lambda: _csr_case(),
    "3class-ovr": lambda: (*make_classification(n_samples=20_000, n_features=10, n_informative=6, n_classes=3,
                                                random_state=0), (7_000, 6_000, 7_000), {}),
    "refit-intercept": lambda: (*make_nssvm_gaussians(50_000, random_state=2), (20_000, 30_000),
                                {"refit_intercept": True}),
    # the kernel fit: each block keeps its kernel columns of the working set
    "rbf-1e5": lambda: (*make_nssvm_gaussians(100_000, random_state=5), (40_000, 23_000, 37_000),
                        {"kernel": "rbf", "gamma": 1.0, "s": 100}),
    "rbf-float32-refit": lambda: (make_nssvm_gaussians(30_000, random_state=6)[0].astype(np.float32),
                                  make_nssvm_gaussians(30_000, random_state=6)[1], (10_000, 20_000),
                                  {"kernel": "rbf", "gamma": 0.5, "s": 80, "refit_intercept": True}),
    "laplacian-csr-3class": lambda: (*_csr_case(6_000, 3)[:2], (2_000, 1_500, 2_500),
                                     {"kernel": "laplacian", "gamma": 0.05, "s": 60}),
    "poly-ovr": lambda: (*make_classification(n_samples=8_000, n_features=6, n_informative=4, n_classes=3,
                                              random_state=7), (3_000, 5_000),
                         {"kernel": "poly", "gamma": 0.2, "degree": 2, "coef0": 1.0, "s": 50}),
}


def _csr_case(m=20_000, n_classes=2):
    X, y = make_classification(n_samples=m, n_features=40, n_informative=12, n_classes=n_classes, random_state=3)
    X = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    return X, y, (5_000, 9_000, 6_000), {}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dask_fit_equals_in_memory_fit(client, case):
    X, y, sizes, params = CASES[case]()
    memory = NSSVC(random_state=0, **params).fit(X, y)
    Xd, yd = _dask(X, y, sizes)
    distributed_fit = NSSVC(random_state=0, **params).fit(Xd, yd)
    _same_fit(distributed_fit, memory)
    n_problems = len(memory.n_iter_)
    trips = int(np.sum(memory.n_iter_)) + n_problems
    if any(len(lv) > 1 for lv in memory.levels_):  # levels of s (adaptive='accuracy'): a pass per iteration at least
        assert distributed_fit.round_trips_ >= trips - n_problems
    elif memory.refit_intercept:  # the probe and the window, and perhaps an older iterate's rows
        assert trips + 2 * n_problems <= distributed_fit.round_trips_ <= trips + 3 * n_problems
    else:
        assert distributed_fit.round_trips_ == trips
    # and the model predicts as the in-memory one
    np.testing.assert_array_equal(distributed_fit.predict(X[:500]), memory.predict(X[:500]))
    assert distributed_fit.n_kernel_columns_ == memory.n_kernel_columns_
    if params.get("kernel"):
        assert memory.n_kernel_columns_ > 0


def test_dask_fit_refuses_what_it_cannot_do(client):
    X, y = make_nssvm_gaussians(2_000, random_state=0)
    Xd, yd = _dask(X, y, (1_000, 1_000))
    with pytest.raises(ValueError, match="precomputed"):
        NSSVC(kernel="precomputed").fit(Xd, yd)
    with pytest.raises(ValueError, match="different numbers of samples"):
        NSSVC().fit(Xd, y[:-1])
    with pytest.raises(ValueError, match="greater than one"):
        NSSVC().fit(Xd, np.ones(len(y)))
    Xbad = X.copy()
    Xbad[1500, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        NSSVC().fit(da.from_array(Xbad, chunks=((1_000, 1_000), 2)), yd)


def test_dask_fit_without_a_client_is_a_clear_error():
    """In a fresh interpreter with no distributed Client: a ValueError that says what is missing."""
    script = (
        "import dask.array as da\n"
        "from sparsekernel import NSSVC\n"
        "from sparsekernel.datasets import make_nssvm_gaussians\n"
        "X, y = make_nssvm_gaussians(1000, random_state=0)\n"
        "try:\n"
        "    NSSVC().fit(da.from_array(X, chunks=(500, 2)), y)\n"
        "except ValueError as exc:\n"
        "    print('ValueError:', exc)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "ValueError: NSSVC.fit on a dask array needs a distributed Client" in out.stdout, out.stderr[-2000:]


def test_a_worker_lost_mid_fit_is_recovered(client):
    """A worker killed during the fit: its blocks are futures of the dask array's graph, so the
    scheduler recomputes them on the restarted worker and the pass is retried; the fit ends with
    the in-memory model (or, were the blocks unrecoverable, with an error: never a wrong model)."""
    X, y = make_nssvm_gaussians(200_000, random_state=4)
    params = dict(eta=1.0, adaptive=False, s=200, max_iter=60, random_state=0)  # cycles: every pass runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = NSSVC(**params).fit(X, y)
    Xd, yd = _dask(X, y, (50_000,) * 4)
    result = {}

    def fit():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result["model"] = NSSVC(**params).fit(Xd, yd)
        except Exception as exc:  # noqa: BLE001 - any clear error is acceptable, recorded for the assertion
            result["error"] = exc

    worker = threading.Thread(target=fit)
    worker.start()
    time.sleep(1.0)
    victim = sorted(client.scheduler_info()["workers"])[0]
    assert worker.is_alive(), "the fit ended before the worker was killed"
    try:  # a hard crash, no goodbye (the nanny starts a new worker)
        client.run(lambda: __import__("os")._exit(1), workers=[victim], nanny=False)
    except distributed.comm.core.CommClosedError:
        pass  # the run's reply never comes: the worker is gone
    worker.join(timeout=300)
    assert not worker.is_alive(), "the fit hung after a worker was lost"
    print("worker lost mid-fit:", "recovered" if "model" in result else f"error: {result['error']!r}")
    if "model" in result:
        _same_fit(result["model"], memory)
    else:
        assert str(result["error"]), result
    client.wait_for_workers(2, timeout=60)


def test_data_generated_on_the_workers_fits_as_in_memory(client):
    """sparsekernel.dask.nssvm_gaussians: chunk k is block k of the in-memory generator with the same
    block size, generated on a worker; the fit equals the in-memory fit."""
    from sparsekernel.dask import nssvm_gaussians
    from sparsekernel.datasets import make_nssvm_gaussians as in_memory

    Xd, yd = nssvm_gaussians(120_000, random_state=5, chunk_rows=25_000)
    X, y = in_memory(120_000, random_state=5, block_size=25_000, dtype=np.float32)
    np.testing.assert_array_equal(Xd[30_000:30_010].compute(), X[30_000:30_010])
    _same_fit(NSSVC(random_state=0).fit(Xd, yd), NSSVC(random_state=0).fit(X, y.astype(np.int8)))
