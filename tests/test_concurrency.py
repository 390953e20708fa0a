"""Thread safety and determinism.

- Fits and predictions of different estimators running at once in a ThreadPoolExecutor give the
  models and outputs of sequential runs, bit for bit.
- The same random_state gives bit-identical models across runs and across thread counts (n_jobs 1,
  2, 3): the engine's parallel passes split work but never the order of a sum, and the numpy / BLAS
  parts that would (threaded BLAS products over N, KMeans' chunked sums) run on one thread.
- The GIL is released during the solves: a Python thread keeps running while a fit is in C++.
"""

import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.datasets import make_classification

from sparsekernel import (NSSVC, SLMC, SVC, SVR, KernelLogisticRegression, SparseKernelLogisticRegression,
                          SparseKFD)

X, Y = make_classification(n_samples=900, n_features=10, n_informative=6, n_classes=3, flip_y=0.05,
                           random_state=0)
Y2 = (Y > 0).astype(int)
X_TEST = X[::7] + 0.01

# (name, factory(n_jobs), labels): every estimator, both KLR routes, one multiclass case per family
CASES = [
    ("svc", lambda j: SVC(C=10.0, n_jobs=j), Y),
    ("svc-csmo", lambda j: SVC(C=10.0, solver="csmo", n_jobs=j), Y2),
    ("svr", lambda j: SVR(C=10.0, n_jobs=j), None),
    ("klr-smo", lambda j: KernelLogisticRegression(C=10.0, solver="smo", n_jobs=j), Y),
    ("klr-nystrom", lambda j: KernelLogisticRegression(C=10.0, solver="nystrom", n_components=128, random_state=0,
                                                       n_jobs=j), Y),
    ("sklr", lambda j: SparseKernelLogisticRegression(C=10.0, n_jobs=j), Y2),
    ("sklr-nystrom", lambda j: SparseKernelLogisticRegression(C=10.0, solver="nystrom", n_components=128,
                                                              random_state=0, n_jobs=j), Y2),
    ("nssvc-rbf", lambda j: NSSVC(kernel="rbf", random_state=0, n_jobs=j), Y),
    ("nssvc-linear", lambda j: NSSVC(random_state=0, n_jobs=j), Y2),
    ("slmc", lambda j: SLMC(n_expansion=8, max_iter=15, random_state=0, n_jobs=j), Y),
    ("skfd-kmeans", lambda j: SparseKFD(n_expansion=8, max_iter=15, random_state=0, n_jobs=j), Y2),
]
IDS = [c[0] for c in CASES]


def _fit(factory, labels, n_jobs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter stops of the small SLMC runs
        return factory(n_jobs).fit(X, X[:, 0] if labels is None else labels)


def _fingerprint(model):
    """Every fitted array of the model (and its outputs on new points), as bytes."""
    parts = []
    for name in sorted(vars(model)):
        if name.endswith("_") and not name.startswith("_") and "time" not in name:
            value = getattr(model, name)
            if hasattr(value, "toarray"):
                value = value.toarray()
            if isinstance(value, np.ndarray) and value.dtype != object:
                parts.append((name, value.tobytes()))
    out = model.decision_function(X_TEST) if hasattr(model, "decision_function") else model.predict(X_TEST)
    parts.append(("output", np.asarray(out).tobytes()))
    return parts


def _assert_identical(a, b):
    assert [n for n, _ in a] == [n for n, _ in b]
    different = [n for (n, x), (_, y) in zip(a, b) if x != y]
    assert not different, f"not bit-identical: {different}"


@pytest.mark.parametrize("name,factory,labels", CASES, ids=IDS)
def test_same_model_across_thread_counts_and_runs(name, factory, labels):
    reference = _fingerprint(_fit(factory, labels, 1))
    for n_jobs in (2, 3, 1):
        _assert_identical(_fingerprint(_fit(factory, labels, n_jobs)), reference)


def test_concurrent_fits_and_predictions_equal_sequential():
    """Every estimator fitted at once from four Python threads (each fit itself on two threads),
    then all predicting at once: the same models and outputs as one after another in a Python
    thread. (In a thread other than the main one OpenBLAS ignores threadpoolctl's limit, so the fits
    that run BLAS on one thread for determinism, see the README, run it there at the thread's own
    setting: both sides of this comparison run in such threads.)"""
    with ThreadPoolExecutor(max_workers=1) as one:
        sequential = list(one.map(lambda case: _fingerprint(_fit(case[1], case[2], 2)), CASES))
    with ThreadPoolExecutor(max_workers=4) as pool:
        models = list(pool.map(lambda case: _fit(case[1], case[2], 2), CASES))
        concurrent = list(pool.map(_fingerprint, models))
    for name, a, b in zip(IDS, concurrent, sequential):
        try:
            _assert_identical(a, b)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None


# fits that spend about a second in C++ on this data
GIL_CASES = [
    ("svc", lambda: SVC(C=100.0, tol=1e-6, n_jobs=1)),
    ("klr-smo", lambda: KernelLogisticRegression(C=100.0, tol=1e-6, solver="smo", n_jobs=1)),
    ("nssvc-rbf", lambda: NSSVC(kernel="rbf", s=1500, eta=1.0, adaptive=False, max_iter=5, random_state=0, n_jobs=1)),
]


def _longest_stall(work):
    """Run work() in this thread while another Python thread keeps noting the time; return (the
    longest interval in which that thread could not run, work's seconds). With the GIL held for
    the whole of work the stall is all of it; released, it is a few scheduler or switch intervals
    (the machine's other load only adds its own time slices)."""
    done = threading.Event()
    stamps = []

    def note():
        while not done.is_set():
            stamps.append(time.perf_counter())

    noter = threading.Thread(target=note)
    noter.start()
    while not stamps:
        time.sleep(0.001)
    t0 = time.perf_counter()
    try:
        work()
    finally:
        t1 = time.perf_counter()
        done.set()
        noter.join()
    inside = [t0] + [t for t in stamps if t0 < t < t1] + [t1]
    return float(np.max(np.diff(inside))), t1 - t0


@pytest.mark.parametrize("name,factory", GIL_CASES, ids=[c[0] for c in GIL_CASES])
def test_gil_is_released_during_the_solve(name, factory):
    """A Python thread keeps running while the fit runs: it is never stopped for more than a fifth
    of the fit (with the GIL held through the solve it would be stopped for nearly all of it; see
    the next test)."""
    Xb, yb = make_classification(n_samples=3000, n_features=20, n_informative=10, flip_y=0.2, random_state=1)
    model = factory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stall, elapsed = _longest_stall(lambda: model.fit(Xb, yb))
    assert elapsed >= 0.2, f"the fit took {elapsed:.2f} s: too short to tell"
    assert stall < 0.2 * elapsed, f"a Python thread was stopped for {stall:.3f} s of the fit's {elapsed:.3f} s"


def test_gil_measure_detects_a_held_gil():
    """The measure above can fail: a C loop that keeps the GIL (sum over a range) stops the other
    thread for nearly all of it."""
    stall, elapsed = _longest_stall(lambda: sum(range(30_000_000)))
    assert elapsed >= 0.2
    assert stall > 0.5 * elapsed, (stall, elapsed)


def test_concurrent_fits_leave_the_thread_settings_as_they_were():
    """Fits that run BLAS / OpenMP on one thread for determinism, several at once from Python
    threads, leave the process-wide settings as they found them (threadpool_limits contexts left in
    another order than entered would leave BLAS on one thread for the rest of the process)."""
    from threadpoolctl import threadpool_info

    def settings():
        return sorted((i["user_api"], i["internal_api"], i["num_threads"]) for i in threadpool_info())

    before = settings()
    slow = [c for c in CASES if c[0] in ("slmc", "skfd-kmeans", "klr-nystrom", "nssvc-linear")]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda case: _fit(case[1], case[2], 2), slow * 3))
    assert settings() == before
