"""The fused prediction pass (sparsekernel._core.expansion_decision, used by every estimator's
decision_function for dense X): intercept + K(X, B) @ coef.T against a dense numpy reference built
from sklearn.metrics.pairwise, at every shape the C++ tiling splits on (rows around the 6-row
micro-kernel and the 72-row tile, points around the 8-point panel and the 128-point panel group,
feature counts of any residue), the finiteness check it performs on X, and the estimators' use of it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel, sigmoid_kernel

from sparsekernel import SLMC, SVC, SVR, KernelLogisticRegression, _core
from sparsekernel._base import KERNELS

REFERENCE = {
    "linear": lambda A, B, g, c, d: linear_kernel(A, B),
    "poly": lambda A, B, g, c, d: polynomial_kernel(A, B, degree=d, gamma=g, coef0=c),
    "rbf": lambda A, B, g, c, d: rbf_kernel(A, B, gamma=g),
    "sigmoid": lambda A, B, g, c, d: sigmoid_kernel(A, B, gamma=g, coef0=c),
}


def _reference(kernel, X, B, coef, intercept, gamma, coef0, degree):
    return REFERENCE[kernel](X, B, gamma, coef0, degree) @ coef.T + intercept


def _fused(kernel, X, B, coef, intercept, gamma, coef0, degree, nthreads=2):
    return _core.expansion_decision(X, B, coef, intercept, KERNELS[kernel], gamma, coef0, degree, nthreads)


@pytest.mark.parametrize("kernel,gamma,coef0,degree", [
    ("linear", 0.0, 0.0, 0), ("poly", 0.05, 1.0, 3), ("poly", 0.1, -0.5, 2), ("rbf", 0.03, 0.0, 0),
    ("rbf", 3.0, 0.0, 0), ("sigmoid", 0.01, 0.3, 0)])
@pytest.mark.parametrize("n,m,d", [(1, 1, 1), (5, 7, 3), (6, 8, 4), (71, 9, 17), (72, 16, 256), (145, 133, 5),
                                   (300, 0, 6), (13, 257, 31)])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_fused_decision_matches_dense_reference(kernel, gamma, coef0, degree, n, m, d, nthreads):
    rng = np.random.default_rng(n * 1000 + m * 10 + d)
    X = rng.standard_normal((n, d))
    B = rng.standard_normal((m, d)) * 0.8
    if m > 2 and n > 2:
        B[1] = X[2]  # distance exactly 0
    coef = rng.standard_normal((3, m))
    intercept = rng.standard_normal(3)
    got = _fused(kernel, X, B, coef, intercept, gamma, coef0, degree, nthreads)
    assert got.shape == (n, 3)
    if m == 0:
        np.testing.assert_array_equal(got, np.tile(intercept, (n, 1)))
        return
    want = _reference(kernel, X, B, coef, intercept, gamma, coef0, degree)
    # rounding: the distances from norms and dot products (as scikit-learn and LIBSVM) lose
    # ~gamma (||x||^2 + ||b||^2) eps next to coincident points
    scale = np.abs(coef).sum() * (1.0 + gamma * 2.0 * d) * (1.0 + np.abs(REFERENCE[kernel](X, B, gamma, coef0, degree)).max())
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14 * scale)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1e200])
@pytest.mark.parametrize("row", [0, 71, 72, 199])
def test_fused_decision_reports_nonfinite_rows(bad, row):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 10))
    B = rng.standard_normal((12, 10))
    X[row, 3] = bad
    assert _fused("rbf", X, B, np.ones((1, 12)), np.zeros(1), 0.1, 0.0, 3) is None
    X[row, 3] = 1.0
    assert _fused("rbf", X, B, np.ones((1, 12)), np.zeros(1), 0.1, 0.0, 3) is not None


def test_fused_decision_rejects_kernels_without_a_product_form_and_bad_shapes():
    X, B = np.ones((3, 2)), np.ones((4, 2))
    with pytest.raises(ValueError, match="dot products"):
        _fused("laplacian", X, B, np.ones((1, 4)), np.zeros(1), 1.0, 0.0, 3)
    with pytest.raises(ValueError, match="shapes"):
        _fused("rbf", X, np.ones((4, 3)), np.ones((1, 4)), np.zeros(1), 1.0, 0.0, 3)
    with pytest.raises(ValueError, match="shapes"):
        _fused("rbf", X, B, np.ones((1, 5)), np.zeros(1), 1.0, 0.0, 3)


def _fitted_models():
    X, y = make_classification(n_samples=240, n_features=9, n_informative=5, n_classes=3, random_state=0)
    yr = X @ np.linspace(-1, 1, 9)
    yb = (y == 1).astype(int)
    return X, [
        SVC(kernel="rbf", gamma=0.2).fit(X, y),          # one-vs-one: the (n_pairs, n_SV) coefficient matrix
        SVC(kernel="poly", degree=2, gamma=0.1).fit(X, yb),
        SVR(kernel="sigmoid", gamma=0.01, coef0=0.1).fit(X, yr),
        KernelLogisticRegression(kernel="rbf", gamma=0.1).fit(X, y),
        SLMC(12, gamma=0.1, random_state=0, max_iter=5).fit(X, y),
    ]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_estimators_fused_prediction_equals_the_sparse_path():
    """Dense X goes through the fused pass, CSR X through the kernel blocks: the same values."""
    X, models = _fitted_models()
    Xs = sp.csr_matrix(X)
    for model in models:
        f = model.decision_function if hasattr(model, "decision_function") else model.predict
        np.testing.assert_allclose(f(X), f(Xs), rtol=1e-10, atol=1e-10, err_msg=type(model).__name__)
        np.testing.assert_allclose(f(X.astype(np.float32)), f(X.astype(np.float32).astype(np.float64)), rtol=0,
                                   atol=0, err_msg=type(model).__name__)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("bad,match", [(np.nan, "NaN"), (np.inf, "infinity"), (1e200, "too large")])
def test_estimators_reject_nonfinite_X_in_prediction(bad, match):
    X, models = _fitted_models()
    X = X.copy()
    X[17, 2] = bad
    for model in models:
        f = model.decision_function if hasattr(model, "decision_function") else model.predict
        with pytest.raises(ValueError, match=match):
            f(X)


def _misaligned(X):
    """X's values at an address that is not a multiple of 8 (as np.frombuffer at an offset, or an
    array unpickled from a byte buffer, can give)."""
    raw = np.zeros(X.nbytes + 1, dtype=np.uint8)
    raw[1:] = np.frombuffer(np.ascontiguousarray(X).tobytes(), dtype=np.uint8)
    Xm = np.frombuffer(raw.data, dtype=X.dtype, offset=1).reshape(X.shape)
    assert not Xm.flags.aligned
    return Xm


def test_misaligned_X_is_predicted_from_an_aligned_copy():
    """Found by UBSan (scripts/sanitize.sh): the fused pass read misaligned doubles of X. Arrays reach
    the core through _base.core_array, which copies them when they are not aligned; the decision
    values equal those of the aligned array (under the sanitizer, a misaligned read aborts)."""
    X, y = make_classification(300, 12, random_state=0)
    for est in (SVC(kernel="rbf"), KernelLogisticRegression(kernel="poly", degree=2)):
        est.fit(X, y)
        np.testing.assert_array_equal(est.decision_function(_misaligned(X)), est.decision_function(X))
