"""Distributed prediction (sparsekernel.dask): every estimator's predict / decision_function /
predict_proba / score on a dask array, computed block by block on a two-process LocalCluster (as CI
runs it), equals the in-memory result; the model is one key of the graph; validation happens before
anything is computed; and the core library neither imports nor needs dask.

Row chunks are uneven (70, 130, 100) on purpose: none is a multiple of the fused prediction pass's
6-row micro-kernel or 72-row tile, so a prediction that depended on where a block starts would show.
"""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
import dask.array as da  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

import sparsekernel.dask as skd  # noqa: E402
from sparsekernel import (  # noqa: E402
    NSSVC,
    SLMC,
    SVC,
    SVR,
    KernelLogisticRegression,
    SparseKernelLogisticRegression,
    SparseKFD,
)

CHUNKS = (70, 130, 100)
METHODS = ("predict", "decision_function", "predict_proba", "predict_log_proba")

# n_jobs=1: the workers are two single-threaded processes (on a busy machine), and the in-memory
# reference runs on as many threads as each block does
ESTIMATORS = {
    "SVC": lambda: SVC(n_jobs=1),
    "SVC-ovo": lambda: SVC(decision_function_shape="ovo", n_jobs=1),
    "SVC-proba": lambda: SVC(probability=True, random_state=0, n_jobs=1),
    "KLR": lambda: KernelLogisticRegression(n_jobs=1),
    "SKLR": lambda: SparseKernelLogisticRegression(C=100.0, n_jobs=1),
    "NSSVC": lambda: NSSVC(n_jobs=1),
    "NSSVC-linear": lambda: NSSVC(kernel="linear", n_jobs=1),
    "SLMC": lambda: SLMC(n_expansion=5, max_iter=10, random_state=0, n_jobs=1),
    "SparseKFD": lambda: SparseKFD(n_expansion=5, max_iter=10, random_state=0, n_jobs=1),
}


def _classification(n_classes):
    X, y = make_classification(300, 6, n_informative=4, n_redundant=0, n_classes=n_classes, random_state=n_classes)
    return X, y


def _fit(name, X, y):
    with warnings.catch_warnings():  # SVC(probability=True) is deprecated; SLMC stops at max_iter=10
        warnings.simplefilter("ignore")
        return ESTIMATORS[name]().fit(X, y)


def _dense_dask(X):
    return da.from_array(X, chunks=(CHUNKS, X.shape[1]))


def _csr_dask(X):
    return _dense_dask(X).map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, X.shape[1])))


def _check_methods(client, model, X_mem, X_dask, rtol=0.0):
    """Every prediction method of ``model`` on X_dask: a dask array with the in-memory result's
    shape and dtype before compute, and that result after (exactly, or the float outputs to rtol),
    through the estimator's method and through sparsekernel.dask's function alike."""
    checked = []
    for method in METHODS:
        if not hasattr(model, method):
            continue
        expected = getattr(model, method)(X_mem)
        for out in (getattr(model, method)(X_dask), getattr(skd, method)(model, X_dask)):
            assert isinstance(out, da.Array), method
            assert out.shape == expected.shape and out.dtype == expected.dtype, method
            assert out.chunks[0] == CHUNKS, method
            got = client.compute(out, sync=True)
            if rtol and method != "predict":
                np.testing.assert_allclose(got, expected, rtol=rtol, atol=0, err_msg=method)
            else:
                np.testing.assert_array_equal(got, expected, err_msg=method)
        checked.append(method)
    return checked


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_classifiers_match_in_memory(client, name, n_classes):
    X, y = _classification(n_classes)
    model = _fit(name, X, y)
    checked = _check_methods(client, model, X, _dense_dask(X))
    assert {"predict", "decision_function"} <= set(checked)
    if name in ("SVC-proba", "KLR", "SKLR"):
        assert "predict_proba" in checked
    # an integer count of correct labels over n: exactly the in-memory accuracy
    assert model.score(_dense_dask(X), y) == model.score(X, y)
    assert skd.score(model, _dense_dask(X), da.from_array(y, chunks=100)) == model.score(X, y)


def test_svc_ovo_four_classes_shape(client):
    """decision_function's width comes from the estimator: 6 pairs for 4 classes with 'ovo'."""
    X, y = make_classification(300, 6, n_informative=4, n_redundant=0, n_classes=4, random_state=4)
    model = _fit("SVC-ovo", X, y)
    out = model.decision_function(_dense_dask(X))
    assert out.shape == (300, 6)
    np.testing.assert_array_equal(client.compute(out, sync=True), model.decision_function(X))


def test_string_labels_and_sample_weight(client):
    X, y = _classification(3)
    labels = np.array(["ant", "bee", "cat"])[y]
    model = _fit("KLR", X, labels)
    out = model.predict(_dense_dask(X))
    assert out.dtype == model.classes_.dtype
    np.testing.assert_array_equal(client.compute(out, sync=True), model.predict(X))
    w = np.random.RandomState(0).uniform(0.5, 2.0, len(y))
    # weighted sums over blocks add the same terms in another order than numpy's pairwise sum
    assert model.score(_dense_dask(X), labels, w) == pytest.approx(model.score(X, labels, w), rel=1e-12, abs=0)


def test_svr_matches_in_memory(client):
    X, y = make_regression(300, 5, noise=5.0, random_state=0)
    model = SVR(C=10.0, n_jobs=1).fit(X, y)
    assert _check_methods(client, model, X, _dense_dask(X)) == ["predict"]
    with pytest.raises(AttributeError):
        skd.decision_function(model, _dense_dask(X))
    # R^2 from per-block sums of squares: the same sums as r2_score's, added in another order (block
    # partials, then their total) than numpy's pairwise summation, so equal to the last few bits
    assert model.score(_dense_dask(X), y) == pytest.approx(model.score(X, y), rel=1e-12, abs=0)
    assert skd.score(model, _dense_dask(X), da.from_array(y, chunks=50)) == pytest.approx(model.score(X, y),
                                                                                         rel=1e-12, abs=0)


# Sparse X with a kernel expansion: K(X, SV) comes from the C++ rows and the decision values from
# numpy's K @ dual_coef.T, where OpenBLAS's gemv/gemm kernels take the rows in groups of 4 and the
# 1-3 rows left over by another kernel that sums in another order: the last rows of a 70- or
# 130-row block differ from the same rows inside the 300-row matrix by an ulp or two (1e-14 here).
# That is the in-memory estimator's own behaviour, not dask's: decision_function(X[:70]) differs
# from decision_function(X)[:70] in exactly those rows too (and not at 72 rows). Dense X goes
# through the fused C++ pass, which sums each row alike wherever it sits, and is compared exactly;
# so are NSSVC's linear decision values on CSR (scipy's sparse product, row by row). (NSSVC's
# linear X @ coef_.T on dense X is a BLAS gemv with the same row tails once X has a few dozen
# features; at the 6 features here its rows sum alike.)
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name,rtol", [("SVC", 1e-12), ("KLR", 1e-12), ("NSSVC-linear", 0.0)])
def test_csr_chunks(client, name, rtol, n_classes):
    X, y = _classification(n_classes)
    X[np.abs(X) < 0.8] = 0.0  # about half the entries zero
    Xs = sp.csr_matrix(X)
    model = _fit(name, Xs, y)
    X_dask = _csr_dask(X)
    assert sp.issparse(X_dask._meta)
    _check_methods(client, model, Xs, X_dask, rtol=rtol)
    assert model.score(X_dask, y) == model.score(Xs, y)


def test_column_chunks_are_joined(client):
    X, y = _classification(3)
    model = _fit("SVC", X, y)
    dense = da.from_array(X, chunks=(CHUNKS, (2, 4)))
    out = model.decision_function(dense)
    assert out.numblocks == (3, 1)
    np.testing.assert_array_equal(client.compute(out, sync=True), model.decision_function(X))
    out = model.decision_function(dense.map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, 6))))
    assert out.numblocks == (3, 1)
    # (rtol: the sparse route's BLAS row tails, see test_csr_chunks)
    np.testing.assert_allclose(client.compute(out, sync=True), model.decision_function(sp.csr_matrix(X)), rtol=1e-12)


class _ModelCounter(pickle.Pickler):
    """Pickles a graph value and counts the references to one object in it: how many times a
    scheduler that ships tasks one by one would serialise that object for this task."""

    def __init__(self, target):
        super().__init__(io.BytesIO())
        self.target, self.count = target, 0

    def persistent_id(self, obj):
        if obj is self.target:
            self.count += 1
            return "target"
        return None


def _copies_in_graph(collection, model):
    total = 0
    for value in dict(collection.__dask_graph__()).values():
        counter = _ModelCounter(model)
        counter.dump(value)
        total += counter.count
    return total


def _predict_block(block, model):
    return model.predict(block)


def test_model_is_one_key_of_the_graph():
    X, y = _classification(3)
    model = _fit("KLR", X, y)
    X_dask = _dense_dask(X)
    for out in (model.predict(X_dask), skd.decision_function(model, X_dask), model.predict_proba(X_dask)):
        assert out.numblocks[0] == len(CHUNKS)
        assert _copies_in_graph(out, model) == 1
    # the counter does see a per-block copy: the model passed as a plain argument is in every task
    embedded = X_dask.map_blocks(_predict_block, model, drop_axis=1, meta=np.empty(0, dtype=int))
    assert _copies_in_graph(embedded, model) == len(CHUNKS)
    # the same unchanged model gives the same key, so a second prediction reuses the shipped model
    assert set(dict(model.predict(X_dask).__dask_graph__())) == set(dict(model.predict(X_dask).__dask_graph__()))


def _never_computed():
    raise AssertionError("validation computed a block")


def test_validation_before_compute():
    X, y = _classification(2)
    untouchable = da.from_delayed(dask.delayed(_never_computed)(), shape=(10, 5), dtype=np.float64)
    with pytest.raises(NotFittedError):
        SVC().predict(untouchable)
    with pytest.raises(NotFittedError):
        skd.predict(SLMC(), untouchable)
    model = _fit("KLR", X, y)
    for method in ("predict", "decision_function", "predict_proba"):
        with pytest.raises(ValueError, match="X has 5 features, but KernelLogisticRegression is expecting 6"):
            getattr(model, method)(untouchable)
    with pytest.raises(ValueError, match="X has 5 features"):
        model.score(untouchable, np.zeros(10))
    with pytest.raises(ValueError, match="2-D"):
        skd.predict(model, da.zeros(10, chunks=5))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        model.score(_dense_dask(X), y[:100])
    # probability=False: no predict_proba, for dask input as for any other
    assert not hasattr(_fit("SVC", X, y), "predict_proba")


def test_core_library_without_dask():
    """With dask unimportable, sparsekernel imports, fits and predicts, and sparsekernel.dask says
    which extra it needs; with dask installed, importing sparsekernel still does not import it."""
    code = """
import sys
import sparsekernel
assert "dask" not in sys.modules
sys.modules["dask"] = None  # as if not installed
from sklearn.datasets import make_classification
X, y = make_classification(60, 4, random_state=0)
assert sparsekernel.SVC().fit(X, y).score(X, y) > 0.5
try:
    import sparsekernel.dask
except ImportError as exc:
    assert "sparsekernel[dask]" in str(exc), exc
else:
    raise AssertionError("sparsekernel.dask imported without dask")
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
