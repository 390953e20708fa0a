"""KernelLogisticRegressionCV by approximate leave-one-out (cv='alo', and cv=None on small data):
the closed form of ``alo_decision`` is the Newton step of Rad and Maleki (2020) written in the primal
(checked with a linear kernel against the explicit Hessian in feature space), it lands close to the
exact leave-one-out refits, and the search built on it chooses C as those refits do."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, log_expit
from sklearn.datasets import load_iris, make_classification
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

from sparsekernel import KernelLogisticRegression, KernelLogisticRegressionCV, SparseKernelLogisticRegressionCV
from sparsekernel._base import resolve_gamma
from sparsekernel.klr_cv import ALO_MAX_WORK, alo_decision


def _data(n=80, d=5, seed=0, flip=0.1):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=3, n_redundant=0, flip_y=flip,
                               random_state=seed)
    return StandardScaler().fit_transform(X), y


def _primal_newton_loo(Phi, f, y, Ci):
    """The ALO step written in the primal, with the feature map Phi explicit: J = Phi~' W Phi~ + R
    (Phi~ = [Phi, 1], R = diag(1, ..., 1, 0): the bias unregularised), h_i = phi~_i' J^-1 phi~_i,
    f_-i = f_i + g_i h_i / (1 - w_i h_i) with g, w the loss' derivatives in f."""
    ys = 2.0 * y - 1.0
    p = expit(ys * f)
    g, w = -Ci * ys * (1 - p), Ci * p * (1 - p)
    P = np.column_stack([Phi, np.ones(len(f))])
    R = np.eye(P.shape[1])
    R[-1, -1] = 0.0
    J = P.T @ (w[:, None] * P) + R
    h = np.einsum("ij,ji->i", P, np.linalg.solve(J, P.T))
    return f + g * h / (1 - w * h)


@pytest.mark.parametrize("C", [0.5, 20.0])
def test_alo_closed_form_is_the_primal_newton_step(C):
    """With a linear kernel K = X X' the kernel-space formula (S (K^-1 + W)^-1 S = I - B^-1 and the
    free bias' rank-one term) equals the Newton step computed with the primal Hessian."""
    X, y = _data(60, 4)
    f = 1.7 * X[:, 0] - 0.4 * X[:, 1] + 0.3  # any decision values: both sides are the same formula
    Ci = C * np.linspace(0.5, 1.5, len(y))
    ys = 2.0 * y - 1.0
    np.testing.assert_allclose(alo_decision(X @ X.T, f, ys, Ci), _primal_newton_loo(X, f, y, Ci),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("C", [1.0, 30.0])
def test_alo_is_close_to_the_exact_leave_one_out(C):
    """At the fitted decision values, the approximate leave-one-out values are within a small share
    of the distance from the full fit's value to the exact leave-one-out refit's (rbf, with bias)."""
    X, y = _data(70)
    kw = dict(C=C, solver="smo", tol=1e-9, bound=1e-12)
    full = KernelLogisticRegression(**kw).fit(X, y)
    f = full.decision_function(X)
    exact = np.array([KernelLogisticRegression(**kw).fit(np.delete(X, i, 0), np.delete(y, i)).decision_function(X[i:i + 1])[0]
                      for i in range(len(y))])
    K = rbf_kernel(X, gamma=resolve_gamma("scale", X))
    alo = alo_decision(K, f, 2.0 * y - 1.0, np.full(len(y), C))
    moved = np.abs(exact - f)
    assert moved.max() > 1e-2  # leaving a point out does move its value
    # (one Newton step: at C = 30 the most influential points keep up to ~20 % of their move)
    assert np.abs(alo - exact).mean() <= 0.1 * moved.mean()
    assert np.abs(alo - exact).max() <= 0.3 * moved.max()


def _exact_loo_logloss(X, y, C):
    kw = dict(C=C, solver="smo", tol=1e-8, gamma=resolve_gamma("scale", X))
    ll = []
    for i in range(len(y)):
        m = KernelLogisticRegression(**kw).fit(np.delete(X, i, 0), np.delete(y, i))
        ll.append(-np.log(max(m.predict_proba(X[i:i + 1])[0, np.searchsorted(m.classes_, y[i])], 1e-15)))
    return float(np.mean(ll))


def test_alo_search_scores_follow_the_exact_leave_one_out():
    """cv='alo' scores every C within 5 % of the exact leave-one-out log-loss (refits on n - 1 points)
    and chooses the C the exact leave-one-out chooses; its model is the plain estimator at that C."""
    X, y = _data(60, seed=1)
    Cs = [0.1, 1.0, 10.0, 100.0]
    model = KernelLogisticRegressionCV(Cs=Cs, cv="alo", patience=None, tol=1e-6).fit(X, y)
    exact = np.array([_exact_loo_logloss(X, y, C) for C in Cs])
    np.testing.assert_allclose(-model.scores_[0], exact, rtol=0.05)
    assert model.n_splits_ == 1 and model.scores_.shape == (1, len(Cs))
    assert model.C_ == Cs[int(np.argmin(exact))]
    plain = KernelLogisticRegression(C=model.C_, solver="smo", tol=1e-6, gamma=model.gamma_).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X), plain.predict_proba(X), atol=1e-4)


def test_alo_multiclass_one_vs_rest():
    """Three classes: one ALO per one-vs-rest problem, combined as the estimator's probabilities; the
    scores follow the exact leave-one-out log-loss."""
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(0)
    keep = np.sort(rng.choice(len(y), 45, replace=False))
    X, y = X[keep], y[keep]
    Cs = [1.0, 30.0]
    model = KernelLogisticRegressionCV(Cs=Cs, cv="alo", patience=None, tol=1e-6).fit(X, y)
    np.testing.assert_allclose(-model.scores_[0], [_exact_loo_logloss(X, y, C) for C in Cs], rtol=0.05)


def test_default_cv_is_alo_on_small_binary_data_and_folds_otherwise():
    X, y = _data(150)
    assert KernelLogisticRegressionCV(Cs=3).fit(X, y).n_splits_ == 1  # the rule: N^3 <= ALO_MAX_WORK
    assert 150**3 <= ALO_MAX_WORK
    assert KernelLogisticRegressionCV(Cs=3, cv=3).fit(X, y).n_splits_ == 3
    assert KernelLogisticRegressionCV(Cs=3, scoring="accuracy").fit(X, y).n_splits_ == 5  # ALO scores log-loss only
    assert KernelLogisticRegressionCV(Cs=3, kernel="sigmoid").fit(X, y).n_splits_ == 5  # not PSD by construction


def test_alo_zero_weight_rows_are_scored_by_the_full_fit():
    """Rows of zero weight are not in the fit: their value needs no correction (w_i = 0), and the
    search equals the one on the other rows plus those rows' held-out log-loss."""
    X, y = _data(90)
    sw = np.ones(len(y))
    sw[::9] = 0.0
    model = KernelLogisticRegressionCV(Cs=[1.0, 10.0], cv="alo", patience=None, tol=1e-8).fit(X, y, sample_weight=sw)
    K = rbf_kernel(X, gamma=model.gamma_)
    f = model.decision_function(X)
    np.testing.assert_allclose(alo_decision(K, f, 2.0 * y - 1.0, 10.0 * sw)[sw == 0], f[sw == 0], rtol=0, atol=1e-12)
    assert np.all(np.isfinite(model.scores_))


def test_alo_refuses_what_it_cannot_do():
    X, y = _data(60)
    with pytest.raises(ValueError, match="log-loss only"):
        KernelLogisticRegressionCV(Cs=2, cv="alo", scoring="accuracy").fit(X, y)
    with pytest.raises(ValueError, match="The 'cv' parameter of SparseKernelLogisticRegressionCV must be"):
        SparseKernelLogisticRegressionCV(Cs=[1.0, 10.0], cv="alo", solver="smo").fit(X, y)
    with pytest.raises(ValueError, match="The 'cv' parameter of KernelLogisticRegressionCV must be"):
        KernelLogisticRegressionCV(Cs=2, cv="loo").fit(X, y)
    # a kernel matrix that is not positive semi-definite: B = I + S K S indefinite is said, and a
    # search on such a matrix ends with finite scores (a confidently wrong point: p -> 0 kept finite)
    with pytest.raises(np.linalg.LinAlgError, match="positive semi-definite"):
        alo_decision(-np.eye(60), np.zeros(60), 2.0 * y - 1.0, np.full(60, 100.0))
    for K in (-10.0 * np.eye(60), -0.01 * np.eye(60)):
        model = KernelLogisticRegressionCV(Cs=[100.0, 1000.0], cv="alo", kernel="precomputed").fit(K, y)
        assert np.all(np.isfinite(model.scores_))


def test_alo_extreme_c_and_float32():
    """C up to 1e6 (confident fits: w_i -> 0 for most points) stays finite; float32 input gives the
    float64 choice."""
    X, y = _data(80, flip=0.0)
    model = KernelLogisticRegressionCV(Cs=[1.0, 1e3, 1e6], cv="alo", patience=None).fit(X, y)
    assert np.all(np.isfinite(model.scores_))
    m32 = KernelLogisticRegressionCV(Cs=[0.1, 1.0, 10.0], cv="alo").fit(X.astype(np.float32), y)
    m64 = KernelLogisticRegressionCV(Cs=[0.1, 1.0, 10.0], cv="alo").fit(X, y)
    assert m32.C_ == m64.C_
    np.testing.assert_allclose(m32.scores_, m64.scores_, rtol=1e-3)


def test_alo_score_is_minus_the_mean_log_loss_of_the_alo_values():
    """scores_ is -mean log P(y_i | f_-i) of the ALO values (the search's bookkeeping, independently)."""
    X, y = _data(70)
    model = KernelLogisticRegressionCV(Cs=[3.0], cv="alo", tol=1e-8).fit(X, y)
    K = rbf_kernel(X, gamma=model.gamma_)
    ys = 2.0 * y - 1.0
    z = alo_decision(K, model.decision_function(X), ys, np.full(len(y), 3.0))
    assert model.scores_[0, 0] == pytest.approx(np.mean(log_expit(ys * z)), rel=1e-9)
