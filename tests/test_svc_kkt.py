"""KKT conditions of the returned dual solution, checked independently of the solver.

For a binary problem with labels y_i in {-1, +1} (+1 = classes_[1], sklearn's convention for
dual_coef_), the fitted model gives alpha_i = y_i dual_coef_ >= 0 on the support vectors and 0
elsewhere. With a float64 kernel matrix K from sklearn.metrics.pairwise we recompute

    G = Q alpha - 1,   Q_ij = y_i y_j K_ij,   F = -y G,
    I_up  = {y=+1, a<C_i} u {y=-1, a>0},   I_low = {y=+1, a>0} u {y=-1, a<C_i}

and require  max_{I_up} F - min_{I_low} F <= tol  (the solver's stopping rule), plus
feasibility (y'a = 0, 0 <= a_i <= C_i with C_i = C * class_weight[y_i] * sample_weight_i) and the
equivalent margin form of KKT on the decision function f (recomputed by hand):
y_i f(x_i) >= 1 - tol for a_i = 0, = 1 +- tol for free a_i, <= 1 + tol for a_i = C_i.

The solver keeps its kernel rows in float32, so the recomputed gradient differs from the solver's
by up to ~2^-24 * max_i sum_j a_j |K_ij|: that (and 1e-6) is the only slack allowed on top of tol.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.class_weight import compute_class_weight

from _helpers import dataset, model_kernel, pair_coefs
from sparsekernel import SVC

ROUTES = ["smo2", "smo1", "batched"]


def _alpha_full(model, y_pm, n):
    """alpha over all n training points (binary), checking the sign convention of dual_coef_."""
    c = model.dual_coef_[0]
    sv = model.support_
    # dual_coef_ = y_i alpha_i with y = +1 for classes_[1]: its sign must be the label's
    assert np.all(c * y_pm[sv] > 0), "dual_coef_ sign does not match the labels of the SVs"
    alpha = np.zeros(n)
    alpha[sv] = c * y_pm[sv]
    return alpha


def _check_kkt(K, y_pm, alpha, Ci, tol, reported_gap=None):
    """Recompute the KKT gap of (alpha) for Q = yy'K and assert it is within tol (+ fp slack)."""
    assert np.all(alpha >= 0)
    assert np.all(alpha <= Ci * (1 + 1e-12) + 1e-15), np.max(alpha - Ci)
    # equality constraint
    scale = max(1.0, np.abs(alpha).sum())
    assert abs(y_pm @ alpha) <= 1e-10 * scale
    G = y_pm * (K @ (y_pm * alpha)) - 1.0
    F = -y_pm * G
    at_lo = alpha <= 0
    at_hi = alpha >= Ci
    up = np.where(y_pm > 0, ~at_hi, ~at_lo)
    low = np.where(y_pm > 0, ~at_lo, ~at_hi)
    m = F[up].max()
    M = F[low].min()
    slack = 4 * 2.0**-24 * np.max(np.abs(K) @ alpha) + 1e-6
    assert m - M <= tol * 1.01 + slack, (m - M, tol, slack)
    if reported_gap is not None:
        assert reported_gap <= tol
        assert abs(reported_gap - (m - M)) <= 2 * slack + 1e-9, (reported_gap, m - M)
    return slack


def _check_margins(dec, y_pm, alpha, Ci, tol, slack):
    """KKT in margin form: y f >= 1 - tol at a = 0, |y f - 1| <= tol when free, y f <= 1 + tol at C."""
    yf = y_pm * dec
    eps = tol * 1.01 + slack
    zero = alpha == 0
    at_c = alpha >= Ci
    free = ~zero & ~at_c
    assert np.all(yf[zero] >= 1 - eps), np.min(yf[zero])
    if np.any(free):
        assert np.max(np.abs(yf[free] - 1)) <= eps, np.max(np.abs(yf[free] - 1))
    if np.any(at_c):
        assert np.all(yf[at_c] <= 1 + eps), np.max(yf[at_c])


def _dec_atol(coefs):
    """The kernel's exp is evaluated to ~2e-10 relative (simd.hpp): decision values carry an
    absolute error of about that times sum |c_i|."""
    return 1e-9 * max(1.0, np.abs(coefs).sum())


def _hand_decision(model, X):
    """sum_i dual_coef_i K(sv_i, x) + intercept_ (binary), with sklearn's kernel functions."""
    Kx = model_kernel(model)(X, model.support_vectors_)
    return Kx @ model.dual_coef_[0] + model.intercept_[0]


BINARY_CASES = [
    # (data set, kernel params, C, tol)
    ("breast_cancer", dict(kernel="rbf"), 0.1, 1e-3),
    ("breast_cancer", dict(kernel="rbf"), 1.0, 1e-3),
    ("breast_cancer", dict(kernel="rbf"), 100.0, 1e-3),
    ("breast_cancer", dict(kernel="rbf"), 10.0, 1e-5),
    ("moons", dict(kernel="rbf", gamma=2.0), 10.0, 1e-3),
    ("circles", dict(kernel="poly", degree=2, coef0=1.0), 1.0, 1e-4),
    ("clf_hard", dict(kernel="linear"), 1.0, 1e-3),
    ("clf_hard", dict(kernel="rbf", gamma=0.05), 3.0, 1e-4),
    ("digits_binary", dict(kernel="poly", degree=3, coef0=1.0), 0.5, 1e-3),
    ("clf_easy", dict(kernel="sigmoid", gamma=0.01), 1.0, 1e-3),
    ("clf_easy", dict(kernel="laplacian", gamma=0.1), 5.0, 1e-3),
    # dense and wide: kernel rows from the float32 working copy, against a float64 K
    ("clf_wide", dict(kernel="rbf"), 10.0, 1e-4),
    ("clf_wide", dict(kernel="laplacian", gamma=0.01), 5.0, 1e-3),
    ("clf_wide", dict(kernel="linear"), 0.1, 1e-3),
    ("clf_wide", dict(kernel="poly", degree=2, coef0=1.0, gamma=0.02), 1.0, 1e-3),
    ("clf_wide", dict(kernel="sigmoid", gamma=0.002), 1.0, 1e-3),
]


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("solver", ROUTES)
@pytest.mark.parametrize("name,params,C,tol", BINARY_CASES,
                         ids=[f"{c[0]}-{c[1]['kernel']}-C{c[2]:g}-tol{c[3]:g}" for c in BINARY_CASES])
def test_binary_kkt(name, params, C, tol, solver, shrinking):
    X, y = dataset(name)
    model = SVC(C=C, tol=tol, solver=solver, shrinking=shrinking, **params).fit(X, y)
    assert model.converged_
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    alpha = _alpha_full(model, y_pm, len(y))
    Ci = np.full(len(y), C)
    K = model_kernel(model)(X, X)
    slack = _check_kkt(K, y_pm, alpha, Ci, tol, reported_gap=model.kkt_gap_[0])
    # the decision function is sum_i c_i K(x_i, x) + b, recomputed by hand
    dec = model.decision_function(X)
    np.testing.assert_allclose(dec, _hand_decision(model, X), rtol=0, atol=_dec_atol(model.dual_coef_))
    _check_margins(dec, y_pm, alpha, Ci, tol, slack)
    # support vectors: exactly the non-zero alphas, stored as the rows of X
    np.testing.assert_array_equal(model.support_vectors_, X[model.support_])
    assert np.all(np.diff(model.support_[y[model.support_] == model.classes_[0]]) > 0)


@pytest.mark.parametrize("solver", ROUTES)
@pytest.mark.parametrize("class_weight", [None, "balanced", {0: 0.3, 1: 4.0}])
def test_kkt_with_per_sample_bounds(solver, class_weight):
    """C_i = C * class_weight[y_i] * sample_weight_i: the box of every variable is its own."""
    X, y = dataset("clf_imbalanced")
    rng = np.random.default_rng(0)
    sw = rng.uniform(0.2, 3.0, size=len(y))
    sw[rng.random(len(y)) < 0.1] = 0.0  # some samples do not count at all
    C, tol = 2.0, 1e-4
    model = SVC(C=C, tol=tol, solver=solver, class_weight=class_weight).fit(X, y, sample_weight=sw)
    cw = compute_class_weight(class_weight, classes=model.classes_, y=y)
    Ci = C * cw[np.searchsorted(model.classes_, y)] * sw
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    alpha = _alpha_full(model, y_pm, len(y))
    assert not np.any(np.isin(model.support_, np.flatnonzero(sw == 0))), "zero-weight sample is an SV"
    # several variables sit at their (distinct) upper bounds
    at_bound = np.isclose(alpha, Ci) & (Ci > 0)
    assert at_bound.sum() >= 5
    assert len(np.unique(np.round(Ci[at_bound], 12))) >= 3
    K = model_kernel(model)(X, X)
    keep = Ci > 0  # a zero box is a fixed variable: it takes no part in the KKT conditions
    slack = _check_kkt(K[np.ix_(keep, keep)], y_pm[keep], alpha[keep], Ci[keep], tol,
                       reported_gap=model.kkt_gap_[0])
    dec = model.decision_function(X)
    np.testing.assert_allclose(dec, _hand_decision(model, X), rtol=0, atol=_dec_atol(model.dual_coef_))
    _check_margins(dec[keep], y_pm[keep], alpha[keep], Ci[keep], tol, slack)


@pytest.mark.parametrize("solver", ROUTES)
@pytest.mark.parametrize("name", ["iris", "wine", "clf_multi"])
def test_multiclass_pair_problems_kkt(name, solver):
    """Every one-vs-one problem (LIBSVM layout of dual_coef_) satisfies its own KKT conditions,
    and the 'ovo' decision function is the pair sums recomputed by hand."""
    X, y = dataset(name)
    C, tol = 3.0, 1e-4
    model = SVC(C=C, tol=tol, solver=solver, decision_function_shape="ovo").fit(X, y)
    k = len(model.classes_)
    K_all = model_kernel(model)(X, X)
    K_sv = model_kernel(model)(X, model.support_vectors_)
    dec = model.decision_function(X)
    assert dec.shape == (len(y), k * (k - 1) // 2)
    col = 0
    for a in range(k):
        for b in range(a + 1, k):
            pos, c = pair_coefs(model.dual_coef_, model.n_support_, a, b)
            sv = model.support_[pos]
            # LIBSVM's pair problem: +1 = class a
            idx = np.flatnonzero((y == model.classes_[a]) | (y == model.classes_[b]))
            y_pm = np.where(y[idx] == model.classes_[a], 1.0, -1.0)
            alpha_full = np.zeros(len(y))
            alpha_full[sv] = c * np.where(y[sv] == model.classes_[a], 1.0, -1.0)
            assert np.all(alpha_full >= 0), "dual_coef_ sign does not match the pair labels"
            alpha = alpha_full[idx]
            slack = _check_kkt(K_all[np.ix_(idx, idx)], y_pm, alpha, np.full(len(idx), C), tol,
                               reported_gap=model.kkt_gap_[col])
            hand = K_sv[:, pos] @ c + model.intercept_[col]
            np.testing.assert_allclose(dec[:, col], hand, rtol=0, atol=_dec_atol(c))
            _check_margins(dec[idx, col], y_pm, alpha, np.full(len(idx), C), tol, slack)
            col += 1


def test_precomputed_kkt_and_decision():
    X, y = dataset("moons")
    from sklearn.metrics.pairwise import rbf_kernel

    K = rbf_kernel(X, X, gamma=1.5)
    C, tol = 5.0, 1e-4
    model = SVC(kernel="precomputed", C=C, tol=tol).fit(K, y)
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    alpha = _alpha_full(model, y_pm, len(y))
    slack = _check_kkt(K, y_pm, alpha, np.full(len(y), C), tol, reported_gap=model.kkt_gap_[0])
    rng = np.random.default_rng(1)
    Xt = rng.uniform(X.min(0), X.max(0), size=(50, 2))
    Kt = rbf_kernel(Xt, X, gamma=1.5)
    hand = Kt[:, model.support_] @ model.dual_coef_[0] + model.intercept_[0]
    np.testing.assert_allclose(model.decision_function(Kt), hand, rtol=1e-12, atol=1e-12)
    _check_margins(model.decision_function(K), y_pm, alpha, np.full(len(y), C), tol, slack)
    # the same solution as the explicit rbf kernel (the kernels differ in the last bits, so the
    # SMO paths differ: compare the objective and the decision function, not the coefficients)
    ref = SVC(kernel="rbf", gamma=1.5, C=C, tol=tol).fit(X, y)
    np.testing.assert_allclose(ref.dual_objective_, model.dual_objective_, rtol=1e-6)
    np.testing.assert_allclose(ref.decision_function(Xt), model.decision_function(Kt), atol=5e-3)
    np.testing.assert_array_equal(ref.predict(X), model.predict(K))
