"""No object of the C++ core outlives what holds it (issue 48).

The full test run used to end with nanobind's report "leaked 12 instances ... sparsekernel._core.Matrix"
at interpreter exit. hypothesis (the fuzz tests) appends its timing hook to ``gc.callbacks``, which the
interpreter clears only after the modules are torn down; the hook's globals lead to pytest's assertion
rewriter, its config, the session and every collected item, and with them to the estimators built in
``parametrize`` lists and fitted by the tests. A fitted model kept its C++ view of the support vectors
(``_sv_core``), a warm-start estimator its engine sessions, and a ``KernelSpec`` (even a module
constant) its cached ``KernelParams``: all of them were still alive when
nanobind counted. Now a KernelSpec keeps no core object, and the objects that keep one between calls
(a model's view, an estimator's own warm-start sessions) drop it at interpreter exit.

Here: fitting, predicting and deleting in a loop leaves no core object and no memory behind, and a
child process that keeps fitted models past the teardown (as hypothesis does) exits without a report.
"""

import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import warnings
from collections import Counter

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_iris, make_classification

from sparsekernel import SVC, KernelLogisticRegression, PathSearchCV, _base, _core
from sparsekernel._engine import KernelSpec

_CORE_TYPES = tuple(t for t in vars(_core).values() if isinstance(t, type))


def _live_core_objects():
    """The core objects that some Python object refers to, by type. nanobind instances are not
    tracked by the gc: they are found as the referents of objects that are, or inside the tuples the
    gc stopped tracking (a tuple of untracked items, e.g. (array, core object), is untracked)."""
    gc.collect()
    found = {}

    def look(obj, depth=0):
        if isinstance(obj, _CORE_TYPES):
            found[id(obj)] = type(obj).__name__
        elif type(obj) is tuple and depth < 8 and not gc.is_tracked(obj):
            for item in obj:
                look(item, depth + 1)

    for holder in gc.get_objects():
        for obj in gc.get_referents(holder):
            look(obj)
    return Counter(found.values())


def _rss_bytes():
    """Resident memory (Linux; None elsewhere) once the freed heap pages are handed back to the
    system (glibc's malloc_trim: without it RSS swings by ~9 MB from one round to the next with the
    threads' malloc arenas)."""
    if not os.path.exists("/proc/self/statm"):
        return None
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _one_round(X, y, Xs):
    """Fit and predict the estimators that kept core objects, then drop them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = [SVC(kernel="laplacian", gamma=0.05).fit(X, y),           # view of the support vectors
                  SVC(C=10.0).fit(Xs, y),                                    # CSR: its view too
                  SVC(warm_start=True).fit(X, y).set_params(C=2.0).fit(X, y),  # engine sessions
                  KernelLogisticRegression(kernel="laplacian", gamma=0.05).fit(X, y),
                  PathSearchCV(SVC(), {"C": [0.5, 5.0]}, cv=2).fit(X, y)]
    for m in models:
        m.decision_function(Xs if m is models[1] else X)
    del models


def test_fit_predict_delete_leaves_no_core_object_and_no_memory():
    X, y = make_classification(400, 40, n_informative=10, random_state=0)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    for _ in range(3):  # warm-up: caches of numpy, scipy, scikit-learn and the allocator's pools
        _one_round(X, y, Xs)
    before, rss_before = _live_core_objects(), _rss_bytes()
    for _ in range(10):
        _one_round(X, y, Xs)
    after, rss_after = _live_core_objects(), _rss_bytes()
    assert after == before, f"core objects alive before the rounds: {dict(before)}, after them: {dict(after)}"
    if rss_before is not None:
        # flat to 0.1 MB here; a search's store kept from every round (its shared rows and sessions,
        # the rows its fits computed) adds 0.6 MB a round
        assert rss_after - rss_before < 3 * 2**20, (rss_before, rss_after)


def test_objects_keeping_core_objects_release_them():
    """A model keeps the view its prediction made (not pickled), a warm_start estimator its engine
    sessions; each is registered to drop them at interpreter exit, and works on without them."""
    X, y = load_iris(return_X_y=True)
    model = SVC(kernel="laplacian").fit(X, y)
    assert "_sv_core" not in vars(model)  # made by the first prediction that reads it, not by the fit
    expected = model.decision_function(X)
    assert model in _base._CORE_KEEPERS and "_sv_core" not in model.__getstate__()
    warm = SVC(warm_start=True).fit(X, y)
    store = warm._warm_store
    assert store in _base._CORE_KEEPERS and store._sessions
    for obj in (model, store):
        obj._release_core()
    assert "_sv_core" not in vars(model) and not store._sessions
    np.testing.assert_array_equal(model.decision_function(X), expected)
    refit = warm.set_params(C=2.0).fit(X, y)  # warm-started from the kept states, sessions opened again
    assert all(s["warm_started"] for s in refit.solver_stats_) and store._sessions
    # a KernelSpec (the key of states and sessions, and module constants) keeps no core object
    spec = KernelSpec("linear", 1.0, 0.0, 1)
    assert isinstance(spec.core, _core.KernelParams)
    assert not [v for v in vars(spec).values() if isinstance(v, _CORE_TYPES)]


_CHILD = textwrap.dedent("""
    import gc, warnings
    import scipy.sparse as sp
    from sklearn.datasets import load_iris, make_classification
    from sparsekernel import (SLMC, SVC, KernelLogisticRegression, PathSearchCV, SparseKernelLogisticRegression,
                              svm_path)

    warnings.simplefilter("ignore")
    X, y = load_iris(return_X_y=True)
    Xs = sp.csr_matrix(X)
    Xb, yb = make_classification(150, 8, random_state=0)
    fits = [(SVC(), X, y), (SVC(kernel="laplacian"), Xs, y), (SVC(warm_start=True), Xb, yb),
            (KernelLogisticRegression(C=10.0, tol=1e-8, max_iter=10), X, y),
            (KernelLogisticRegression(solver="nystrom", n_components=20, random_state=0), X, y),
            (SparseKernelLogisticRegression(lam=0.5), Xb, yb),
            (SLMC(n_expansion=4, max_iter=3, random_state=0), Xb, yb),
            (PathSearchCV(SVC(), {"C": [0.1, 1.0], "gamma": [0.1, 1.0]}, cv=2), Xb, yb)]
    kept = [model.fit(X_, y_) for model, X_, y_ in fits]
    for model, X_, _ in fits:
        model.decision_function(X_)
    kept.append(svm_path(SVC(), Xb, yb, Cs=[0.1, 1.0]))

    def timing_hook(phase, info, kept=kept):  # as hypothesis's: gc.callbacks outlives every module
        pass

    gc.callbacks.append(timing_hook)
    print("fitted", len(kept))
""")


def test_models_that_outlive_the_interpreter_teardown_leak_nothing():
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "fitted 9" in out.stdout
    assert "leaked" not in out.stderr, out.stderr[-3000:]
