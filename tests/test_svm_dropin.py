"""The sklearn.svm drop-in behaviours of SVC / SVR, checked on their mathematics (scikit-learn's own
SVM test suite runs in test_sklearn_svm_suite.py): Platt probabilities and their pairwise coupling
against an independent implementation of LIBSVM's iteration, callable kernels against the built-in
ones, coef_ against the decision function, C = inf as a hard margin, and large inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris, make_blobs, make_classification
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC as SkSVC

from sparsekernel import SVC, SVR
from sparsekernel._base import ovo_pairs as _pairs
from sparsekernel.svm import _pairwise_coupling

pytestmark = pytest.mark.filterwarnings("ignore:The `probability` parameter:FutureWarning",
                                        "ignore:Attribute `prob:FutureWarning")


def _libsvm_coupling(r, k, max_iter=1000, eps=1e-12):
    """LIBSVM's multiclass_probability (Wu, Lin & Weng method 2, its fixed-point iteration), written
    from the paper for one sample: R[i, j] = P(i | i or j)."""
    R = np.zeros((k, k))
    for t, (a, b) in enumerate(_pairs(k)):
        R[a, b], R[b, a] = r[t], 1.0 - r[t]
    Q = np.zeros((k, k))
    for t in range(k):
        Q[t, t] = sum(R[j, t] ** 2 for j in range(k) if j != t)
        for j in range(k):
            if j != t:
                Q[t, j] = -R[j, t] * R[t, j]
    p = np.full(k, 1.0 / k)
    for _ in range(max_iter):
        Qp = Q @ p
        pQp = p @ Qp
        if np.max(np.abs(Qp - pQp)) < eps:
            break
        for t in range(k):
            diff = (-Qp[t] + pQp) / Q[t, t]
            p[t] += diff
            pQp = (pQp + diff * (diff * Q[t, t] + 2 * Qp[t])) / (1 + diff) ** 2
            Qp = (Qp + diff * Q[t]) / (1 + diff)
            p /= 1 + diff
    return p, Q


@pytest.mark.parametrize("k", [3, 4, 7])
def test_pairwise_coupling_solves_wu_lin_weng_method_2(k):
    rng = np.random.default_rng(k)
    r = rng.uniform(0.02, 0.98, size=(25, k * (k - 1) // 2))
    P = _pairwise_coupling(r, k)
    assert P.shape == (25, k)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    for i in range(len(r)):
        p_ref, Q = _libsvm_coupling(r[i], k)
        np.testing.assert_allclose(P[i], p_ref, atol=1e-8)
        # optimality of min p'Qp s.t. sum p = 1: Qp is a multiple of the ones vector
        Qp = Q @ P[i]
        np.testing.assert_allclose(Qp, Qp.mean(), atol=1e-10)


def test_binary_probabilities_are_the_platt_sigmoid_of_the_decision_function():
    X, y = make_classification(n_samples=300, n_features=6, random_state=0)
    model = SVC(probability=True, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        A, B = model.probA_[0], model.probB_[0]
    f = model.decision_function(X)  # > 0 means classes_[1]; LIBSVM's pair value is -f
    p0 = np.clip(1.0 / (1.0 + np.exp(-A * f + B)), 1e-7, 1 - 1e-7)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba[:, 0], p0, rtol=1e-12)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert A < 0  # a larger decision value for the pair's first class makes it likelier
    np.testing.assert_allclose(model.predict_log_proba(X), np.log(proba))


@pytest.mark.parametrize("data", ["binary", "iris", "blobs5"])
def test_probabilities_close_to_libsvm(data):
    """Same method as LIBSVM (5-fold CV decision values, Platt, coupling); only the folds differ."""
    if data == "binary":
        X, y = make_classification(n_samples=400, n_features=8, flip_y=0.05, random_state=1)
    elif data == "iris":
        X, y = load_iris(return_X_y=True)
    else:
        X, y = make_blobs(n_samples=500, centers=5, cluster_std=2.5, random_state=0)
    ours = SVC(probability=True, random_state=0).fit(X, y).predict_proba(X)
    ref = SkSVC(probability=True, random_state=0).fit(X, y).predict_proba(X)
    assert np.mean(np.abs(ours - ref)) < 0.02
    assert np.max(np.abs(ours - ref)) < 0.2


def test_probabilities_deterministic_under_random_state_and_same_for_sparse_input():
    X, y = make_blobs(n_samples=240, centers=3, cluster_std=3.0, random_state=2)
    a = SVC(probability=True, random_state=3).fit(X, y).predict_proba(X)
    a2 = SVC(probability=True, random_state=3).fit(X, y).predict_proba(X)
    b = SVC(probability=True, random_state=3).fit(sp.csr_matrix(X), y).predict_proba(X)
    c = SVC(probability=True, random_state=4).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, a2)
    # the same folds; dense and CSR kernel rows round differently (see test_sklearn_svm_suite.py)
    np.testing.assert_allclose(a, b, atol=1e-3)
    assert not np.allclose(a, c, atol=1e-3)  # other folds


def test_probability_api_follows_scikit_learn():
    X, y = make_classification(n_samples=120, random_state=0)
    assert not hasattr(SVC(), "predict_proba")
    assert hasattr(SVC(probability=True), "predict_proba")
    with pytest.warns(FutureWarning, match="probability.+parameter.+deprecated"):
        model = SVC(probability=False).fit(X, y)
    model.probability = True
    with pytest.raises(NotFittedError, match="fitted with probability=False"):
        model.predict_proba(X)
    with pytest.warns(FutureWarning, match="Attribute `probA_` was deprecated"):
        assert model.probA_.size == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all without the parameter
        SVC().fit(X, y)


def test_callable_kernel_equals_builtin_and_precomputed():
    X, y = make_classification(n_samples=150, n_features=5, random_state=0)
    Xt = X[::4] + 0.1
    gamma = 0.3
    builtin = SVC(kernel="rbf", gamma=gamma).fit(X, y)
    func = SVC(kernel=lambda A, B: rbf_kernel(A, B, gamma=gamma)).fit(X, y)
    pre = SVC(kernel="precomputed").fit(rbf_kernel(X, X, gamma=gamma), y)
    np.testing.assert_array_equal(func.support_, pre.support_)
    np.testing.assert_allclose(func.dual_coef_, pre.dual_coef_, atol=1e-12)
    np.testing.assert_allclose(func.decision_function(Xt), builtin.decision_function(Xt), atol=1e-5)
    reg = SVR(kernel=lambda A, B: A @ B.T).fit(X, X[:, 0])
    np.testing.assert_allclose(reg.predict(Xt), SVR(kernel="linear").fit(X, X[:, 0]).predict(Xt), atol=1e-5)


def test_callable_kernel_with_a_wrong_shape_is_a_clear_error():
    X, y = make_classification(n_samples=30, random_state=0)
    with pytest.raises(ValueError, match="shape"):
        SVC(kernel=lambda A, B: np.ones((2, 2))).fit(X, y)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_coef_is_the_primal_weight_of_every_pair(fmt):
    X, y = load_iris(return_X_y=True)
    Xin = sp.csr_matrix(X) if fmt == "csr" else X
    for yy, shape in ((y, "ovo"), (y == 1, "ovr")):
        model = SVC(kernel="linear", C=0.5, decision_function_shape=shape).fit(Xin, yy)
        coef = model.coef_
        assert sp.issparse(coef) == (fmt == "csr")
        dense = coef.toarray() if sp.issparse(coef) else coef
        dec = X @ dense.T + model.intercept_
        np.testing.assert_allclose(dec.ravel() if dense.shape[0] == 1 else dec,
                                   model.decision_function(X), rtol=1e-9, atol=1e-9)
        with pytest.raises(AttributeError):
            model.coef_ = dense
    with pytest.raises(AttributeError, match="linear kernel"):
        _ = SVC().fit(X, y).coef_


def test_infinite_C_is_a_hard_margin():
    X, y = make_blobs(n_samples=80, centers=2, cluster_std=0.8, random_state=4)  # separable
    hard = SVC(kernel="linear", C=np.inf, tol=1e-6).fit(X, y)
    big = SVC(kernel="linear", C=1e10, tol=1e-6).fit(X, y)
    margin = np.where(y == hard.classes_[1], 1.0, -1.0) * hard.decision_function(X)
    assert margin.min() >= 1.0 - 1e-4
    np.testing.assert_allclose(hard.decision_function(X), big.decision_function(X), rtol=1e-6, atol=1e-6)


def test_values_too_large_for_the_kernel_are_a_clear_error():
    X = np.finfo(np.float64).max * np.random.default_rng(0).uniform(size=(10, 2))
    y = np.arange(10) % 2
    for model in (SVC(), SVR()):
        with pytest.raises(ValueError, match="not finite"):
            model.fit(X, y)
