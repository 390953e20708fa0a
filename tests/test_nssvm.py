"""NSSVC: the Newton method for the sparsity-constrained SVM of Zhou ("Sparse SVM for sufficient data
reduction", NSSVM), checked against the mathematics of the paper, recomputed here in dense float64.

Notation (paper, sections 1.4-3): y_i = +-1 (+1 = classes_[1]), K the kernel matrix,
Q'Q = (y y') o K, E(a) = diag(1/C if a_i >= 0 else 1/c) (12), H(a) = Q'Q + E(a) (14),
g(z) = H(a) a - 1 + y b (21), T = s indices of the largest |a - eta g| (41) (ties to the smaller
index), F(z; T) = [g_T; a_{T complement}; <a_T, y_T>] (36).

1. at the returned point the stationary equations (36) hold to tol, ||a||_0 <= s, y'a = 0 and b is
   eq. (23) (linear and rbf, adaptive or not, precomputed kernel; each one-vs-rest problem);
2. with s = m the point is the unique global minimiser of the convex dual (6): compared with the
   primal (4) solved independently (L-BFGS, then Newton on its fixed piecewise pattern), through
   w = Q a (72), b, a_i = l_cC'(u_i) (76) and the dual objective;
3. Theorem 3.1: from a perturbation of an eta-stationary point with eta < eta* (65), one Newton step
   lands on it exactly;
4. dense / CSR (int32, int64 indices) / float32 X give the same model;
5. against a dense reference implementation of Algorithm 1 (bordered system (52), full step (62),
   top-s (41)) started from the solver's own balanced T0: iteration count, residual history, a, b;
6. one-vs-rest multiclass (iris, wine);
7. input validation;
8. determinism and the top-s tie-break of the C++ scan (_core.nssvm_scan), thread-count invariance;
9. best_accuracy_intercept against a brute-force threshold search;
10. refit_intercept on Example 4.1 data (make_nssvm_gaussians);
11. the initial working set T0 is balanced between the classes (DESIGN.md: the paper's T0 rule
    picks one class only), Algorithm 2's growth rule of s, the s(beta) rule;
12. an int (or float) s is a hard cap on each problem's support vectors (binary, one-vs-rest,
    dense, CSR, in memory and on Dask), Algorithm 2's growth running up to it; s='auto' keeps the
    paper's rule;
13. the errors and warnings a user sees carry no equation numbers.

No file outside the repository is read.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.datasets import make_classification, make_moons
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from _helpers import dataset, sparsify, with_int64_indices
from sparsekernel import NSSVC, _core
from sparsekernel._base import KERNELS, core_matrix
from sparsekernel.datasets import make_nssvm_gaussians
from sparsekernel.nssvm import (
    NewtonSolver,
    _KernelQ,
    _LinearQ,
    best_accuracy_intercept,
    sparsity_level,
)

C_DEF = 0.25
c_DEF = 0.01 * C_DEF


# ------------------------------------------------------------------------------------ helpers
def _fit(X, y, **kw):
    kw.setdefault("random_state", 0)
    kw.setdefault("refit_intercept", False)  # the paper's iterate and its b (23), unless a test asks
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = NSSVC(**kw).fit(X, y)
    assert model.converged_
    return model


def _pm(y, positive):
    """+-1 labels (float64), +1 for `positive`."""
    return np.where(np.asarray(y) == positive, 1.0, -1.0)


def _alpha(model, y_pm, k=0):
    """The dense alpha of problem k from dual_coef_ (= alpha_i y_i) and support_."""
    a = np.zeros(len(y_pm))
    a[model.support_] = model.dual_coef_[k] * y_pm[model.support_]
    return a


def _gram(X, kernel, gamma=None):
    """K in float64 by scikit-learn (exact to rounding)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    return X @ X.T if kernel == "linear" else rbf_kernel(X, X, gamma=gamma)


def _solver_gram(X, kernel, gamma=None):
    """K as the solver sees it: the C++ kernel module's rbf uses an exp accurate to ~2e-10 relative
    (simd.hpp), so tests that compare iterates to ~1e-10 (one-step convergence, the reference
    Algorithm 1) use the solver's own matrix; the mathematical tests use _gram."""
    if kernel == "linear":
        return _gram(X, kernel)
    A = core_matrix(np.asarray(X, dtype=np.float64))
    return np.asarray(_core.kernel_matrix(A, A, KERNELS["rbf"], float(gamma), 0.0, 3, 1))


def _E(a, C, c):
    return np.where(a >= 0, 1.0 / C, 1.0 / c)


def _g(Qm, y, a, b, C, c):
    """g(z) = (Q'Q + E(a)) a - 1 + y b (21)."""
    return Qm @ a + _E(a, C, c) * a - 1.0 + y * b


def _top_s(score, s):
    """The s largest scores, ties to the smaller index (a strict order), sorted by index."""
    order = np.lexsort((np.arange(len(score)), -score))
    return np.sort(order[:s])


def _F(Qm, y, a, b, T, C, c):
    """F(z; T) of (36)."""
    g = _g(Qm, y, a, b, C, c)
    off = np.ones(len(y), dtype=bool)
    off[T] = False
    return np.concatenate([g[T], a[off], [a[T] @ y[T]]])


def _check_stationary(Qm, y, a, b, s, eta, tol, C, c):
    """(36) at (a, b) with T chosen by (41), plus ||a||_0 <= s, y'a = 0 and b = (23)."""
    g = _g(Qm, y, a, b, C, c)
    T = _top_s(np.abs(a - eta * g), s)
    normF = np.linalg.norm(_F(Qm, y, a, b, T, C, c))
    assert normF <= tol, f"||F(z; T)|| = {normF:.3e} > tol = {tol:.3e}"
    S = np.flatnonzero(a)
    assert 0 < len(S) <= s
    assert abs(a @ y) <= 1e-10 * np.abs(a).sum()
    # (23): b = <y_S, 1 - H_S(a) a_S> / |S|. In general b - (23) = mean(y_S g_S); the returned point
    # is a Newton step's, which solves g_T = 0 on a T containing S exactly (the sign pattern of a
    # has settled), so b is (23) to rounding (1e-8: the solver's rbf kernel is exact to ~2e-10),
    # far below tol
    H_S = Qm[np.ix_(S, S)] + np.diag(_E(a[S], C, c))
    b23 = y[S] @ (1.0 - H_S @ a[S]) / len(S)
    assert abs(b - b23) <= 1e-8 * (1.0 + abs(b))
    return normF, T


def _dual_objective(Qm, a, C, c):
    """D(a) of (6): 1/2 a'Q'Qa + sum h_cC(a_i) - sum a_i."""
    return 0.5 * a @ Qm @ a + 0.5 * np.sum(_E(a, C, c) * a * a) - a.sum()


@pytest.fixture(scope="module")
def clf():
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_redundant=1, flip_y=0.05,
                               random_state=0)
    return StandardScaler().fit_transform(X), y


# ------------------------------------------------------------------ 1. stationary equations (36)
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("params", [dict(adaptive=True), dict(adaptive=False, s=40), dict(adaptive=False, s=0.5)],
                         ids=["adaptive", "s40", "s-half"])
def test_stationary_equations_at_solution(clf, kernel, params):
    X, y = clf
    m = len(y)
    model = _fit(X, y, kernel=kernel, gamma=0.2, **params)
    y_pm = _pm(y, model.classes_[1])
    a = _alpha(model, y_pm)
    Qm = np.outer(y_pm, y_pm) * _gram(X, kernel, 0.2)
    tol = 1e-6 * max(math.sqrt(m), math.sqrt(X.shape[1]))
    s = int(model.s_[0])
    normF, _ = _check_stationary(Qm, y_pm, a, model.intercept_[0], s, 1.0 / m, tol, C_DEF, c_DEF)
    assert model.norm_F_[0] <= tol
    assert abs(normF - model.norm_F_[0]) <= 1e-8  # the solver's rbf kernel is exact to ~2e-10 only
    assert len(model.support_) <= s
    if not params["adaptive"]:
        assert s == (40 if params.get("s") == 40 else m // 2)
    # ACC (68) reported for the returned point = training accuracy of predict (sgn(0) = -1)
    assert model.training_accuracy_[0] == pytest.approx(np.mean(model.predict(X) == y), abs=0.5 / m)
    assert model.history_[0][-1, 0] == model.norm_F_[0]
    assert model.history_[0][-1, 1] == model.training_accuracy_[0]
    if kernel == "linear":  # w = Q a (72)
        np.testing.assert_allclose(model.coef_[0], X.T @ (a * y_pm), rtol=1e-12, atol=1e-12)


def test_stationary_equations_precomputed_equals_rbf(clf):
    X, y = clf
    K = rbf_kernel(X, X, gamma=0.2)
    rbf = _fit(X, y, kernel="rbf", gamma=0.2, s=30, adaptive=False)
    pre = _fit(K, y, kernel="precomputed", s=30, adaptive=False)
    np.testing.assert_array_equal(pre.support_, rbf.support_)
    np.testing.assert_allclose(pre.dual_coef_, rbf.dual_coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(pre.intercept_, rbf.intercept_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(pre.decision_function(K[:50]), rbf.decision_function(X[:50]), atol=1e-9)
    y_pm = _pm(y, pre.classes_[1])
    tol = 1e-6 * math.sqrt(len(y))
    _check_stationary(np.outer(y_pm, y_pm) * K, y_pm, _alpha(pre, y_pm), pre.intercept_[0], 30, 1.0 / len(y), tol,
                      C_DEF, c_DEF)


# ----------------------------------------------------- 2. s = m: the global minimiser of (6)
def _primal_reference(Z, y, C, c):
    """min_{w,b} 1/2||w||^2 + sum l_cC(1 - y_i(<w, z_i> + b)) (4): L-BFGS, then Newton steps on the
    fixed piecewise pattern of u (the objective is piecewise quadratic) until the gradient vanishes."""
    m, n = Z.shape

    def fun(p):
        w, b = p[:-1], p[-1]
        u = 1.0 - y * (Z @ w + b)
        lp = np.where(u >= 0, C * u, c * u)  # l_cC'(u)
        return 0.5 * w @ w + 0.5 * lp @ u, np.append(w - Z.T @ (lp * y), -(lp @ y))

    p = minimize(fun, np.zeros(n + 1), jac=True, method="L-BFGS-B",
                 options=dict(maxiter=5000, gtol=1e-8, ftol=1e-13)).x
    Zb = np.column_stack([Z, np.ones(m)]) * y[:, None]  # u = 1 - Zb p
    for _ in range(30):
        u = 1.0 - Zb @ p
        Hm = Zb.T @ (np.where(u >= 0, C, c)[:, None] * Zb)
        Hm[:n, :n] += np.eye(n)
        grad = fun(p)[1]
        if np.abs(grad).max() < 1e-12:
            break
        p = p - np.linalg.solve(Hm, grad)
    assert np.abs(fun(p)[1]).max() < 1e-10, "the reference primal solver did not converge"
    w, b = p[:-1], p[-1]
    u = 1.0 - y * (Z @ w + b)
    return w, b, np.where(u >= 0, C * u, c * u)  # alpha_i = l_cC'(u_i) (76)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("cC", [(C_DEF, None), (1.0, 0.5)], ids=["default-c", "c-half-C"])
def test_full_sparsity_is_the_global_minimiser(kernel, cC):
    C, c = cC
    c_eff = 0.01 * C if c is None else c
    X, y = make_classification(n_samples=160, n_features=5, n_informative=3, flip_y=0.1, random_state=1)
    X = StandardScaler().fit_transform(X)
    model = _fit(X, y, kernel=kernel, gamma=0.3, s=1.0, adaptive=False, C=C, c=c, tol=1e-10)
    y_pm = _pm(y, model.classes_[1])
    a = _alpha(model, y_pm)
    # rbf: against the exact kernel (to the ~2e-10 accuracy of the solver's exp) and against the
    # solver's own kernel matrix (where Algorithm 1 must be exact to rounding)
    grams = [(_gram(X, kernel, 0.3), 1e-9)]
    if kernel == "rbf":
        grams = [(_gram(X, kernel, 0.3), 5e-9), (_solver_gram(X, kernel, 0.3), 1e-12)]
    for K, rel in grams:
        if kernel == "linear":
            Z = X
        else:  # a feature map of K: Z Z' = K
            lam, V = np.linalg.eigh(K)
            Z = V * np.sqrt(np.clip(lam, 0.0, None))
        w_ref, b_ref, a_ref = _primal_reference(Z, y_pm, C, c_eff)
        np.testing.assert_allclose(a, a_ref, rtol=0, atol=rel * np.abs(a_ref).max())
        assert model.intercept_[0] == pytest.approx(b_ref, abs=rel)
        if kernel == "linear":
            np.testing.assert_allclose(model.coef_[0], w_ref, rtol=0, atol=rel * np.abs(w_ref).max())
        Qm = np.outer(y_pm, y_pm) * K
        D, D_ref = _dual_objective(Qm, a, C, c_eff), _dual_objective(Qm, a_ref, C, c_eff)
        assert D <= D_ref + 1e-10 * abs(D_ref)
        # strong duality: D(a*) = -(primal optimum)
        u = 1.0 - y_pm * (Z @ w_ref + b_ref)
        P = 0.5 * w_ref @ w_ref + 0.5 * np.sum(np.where(u >= 0, C, c_eff) * u * u)
        assert D == pytest.approx(-P, rel=1e-9)


# ------------------------------------------------------------------- 3. Theorem 3.1: one step
@pytest.mark.parametrize("kind", ["linear", "rbf"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_step_convergence_near_a_stationary_point(kind, seed):
    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, flip_y=0.05, random_state=2)
    yi = np.where(y == 1, 1, -1).astype(np.int8)
    y_pm = yi.astype(np.float64)
    m, s, C, c, gamma = len(y), 30, C_DEF, c_DEF, 0.3
    eta = 1.0 / m
    Q = _LinearQ(X, yi, 1) if kind == "linear" else _KernelQ.of(X, yi, "rbf", gamma, 0.0, 3, 1)
    sv = NewtonSolver(Q, yi, s=s, C=C, c=c, eta=eta, tol=1e-12, max_iter=100, adaptive=False,
                      rng=np.random.RandomState(seed)).solve()
    assert sv.converged
    a_star, b_star, T_star = sv.alpha.copy(), sv.b, sv.T.copy()
    Qm = np.outer(y_pm, y_pm) * _solver_gram(X, kind, gamma)
    g_star = _g(Qm, y_pm, a_star, b_star, C, c)
    assert np.linalg.norm(_F(Qm, y_pm, a_star, b_star, T_star, C, c)) < 1e-11
    # eta < eta* of (65) (the theorem's hypothesis)
    if np.count_nonzero(a_star) == s:
        eta_star = np.sort(np.abs(a_star))[::-1][s - 1] / np.abs(g_star).max()
        assert eta < eta_star

    rng = np.random.default_rng(seed)
    a0 = a_star.copy()
    a0[T_star] *= 1.0 + 0.05 * rng.uniform(-1.0, 1.0, s)  # signs kept
    b0 = b_star + 0.01 * rng.standard_normal()
    sv.alpha, sv.b = a0, b0  # the solver keeps alpha on its support S (the setter sets S and a_S)
    np.testing.assert_array_equal(sv.S, np.flatnonzero(a0))
    sv.scan()  # T_k = top-s of |a - eta g| (41) at the perturbed point, g_T there
    np.testing.assert_array_equal(sv.T, T_star)
    np.testing.assert_allclose(sv.g_T, _g(Qm, y_pm, a0, b0, C, c)[T_star], rtol=1e-10, atol=1e-12)
    assert sv.residual() > 1e-4  # really away from z*
    sv.newton_step()  # ONE step of (52)/(62)
    scale = np.abs(a_star).max()
    np.testing.assert_allclose(sv.alpha, a_star, rtol=0, atol=1e-9 * scale)
    assert sv.b == pytest.approx(b_star, abs=1e-9)
    sv.scan()
    assert sv.residual() < 1e-10
    np.testing.assert_array_equal(sv.T, T_star)


# --------------------------------------------------------------- 4. dense / CSR / float32
@pytest.fixture(scope="module")
def sparse_problem():
    X, y = make_classification(n_samples=500, n_features=30, n_informative=8, flip_y=0.05, random_state=3)
    return sparsify(X, density=0.3, seed=0), y


@pytest.mark.parametrize("params", [dict(), dict(s=20, adaptive=False), dict(s=100, adaptive=False)],
                         ids=["auto", "s20-cholesky", "s100-woodbury"])
def test_dense_csr_float32_same_model(sparse_problem, params):
    X, y = sparse_problem
    ref = _fit(X, y, **params)
    scale = np.abs(ref.coef_).max()
    for Xv in (sp.csr_matrix(X), with_int64_indices(X)):
        m = _fit(Xv, y, **params)
        np.testing.assert_array_equal(m.support_, ref.support_)
        np.testing.assert_array_equal(m.n_iter_, ref.n_iter_)
        np.testing.assert_allclose(m.coef_, ref.coef_, rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(m.dual_coef_, ref.dual_coef_, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(m.intercept_, ref.intercept_, rtol=0, atol=1e-10)
        np.testing.assert_allclose(m.decision_function(Xv), ref.decision_function(X), atol=1e-9)
    X32 = X.astype(np.float32)
    ref32 = _fit(X32.astype(np.float64), y, **params)  # the same data in float64
    for Xv in (X32, sp.csr_matrix(X32)):
        m = _fit(Xv, y, **params)
        np.testing.assert_array_equal(m.support_, ref.support_)
        np.testing.assert_allclose(m.coef_, ref32.coef_, rtol=0, atol=1e-12 * scale)  # float64 arithmetic
        np.testing.assert_allclose(m.coef_, ref.coef_, rtol=0, atol=1e-6 * scale)
        np.testing.assert_allclose(m.intercept_, ref.intercept_, rtol=0, atol=1e-6)
        assert m.coef_.dtype == np.float64


# ------------------------------------------------- 5. a dense reference implementation of Algorithm 1
def _reference_algorithm1(Qm, y, s, C, c, eta, tol, max_iter, T0, b0):
    """Algorithm 1 on the dense Q'Q: (52) as the bordered (s+1) system solved by np.linalg.solve
    (its complement rows give d = -a there), the full step (62), T by (41)."""
    m = len(y)
    a, b, T = np.zeros(m), b0, np.asarray(T0)
    history, Ts = [], [T]
    for k in range(max_iter + 1):
        g = _g(Qm, y, a, b, C, c)
        if k > 0:
            T = _top_s(np.abs(a - eta * g), s)
            Ts.append(T)
        f = Qm @ a * y  # f_i = sum_j a_j y_j K_ij
        acc = np.mean(np.where(f + b > 0, 1.0, -1.0) == y)
        history.append((np.linalg.norm(_F(Qm, y, a, b, T, C, c)), acc))
        if history[-1][0] < tol:
            break
        A = np.zeros((s + 1, s + 1))
        A[:s, :s] = Qm[np.ix_(T, T)] + np.diag(_E(a[T], C, c))
        A[:s, s] = A[s, :s] = y[T]
        d = np.linalg.solve(A, -np.append(g[T], a[T] @ y[T]))
        a_new = np.zeros(m)
        a_new[T] = a[T] + d[:s]
        a, b = a_new, b + d[s]
    return a, b, k, np.array(history), Ts


@pytest.mark.parametrize("kernel,s,eta", [("rbf", 30, 0.1), ("rbf", 15, 0.1), ("linear", 30, 0.05)])
def test_matches_dense_reference_algorithm1(kernel, s, eta):
    X, y = make_moons(n_samples=150, noise=0.25, random_state=4)
    m, gamma = len(y), 1.0
    model = _fit(X, y, kernel=kernel, gamma=gamma, s=s, eta=eta, adaptive=False, random_state=0, tol=1e-9,
                 n_jobs=1)
    y_pm = _pm(y, model.classes_[1])
    # the solver's T0: the first draw of RandomState(0), as in NSSVC(random_state=0).fit
    init = NewtonSolver(None, y_pm.astype(np.int8), s=s, C=C_DEF, c=c_DEF, eta=eta, tol=1e-9, max_iter=100,
                        adaptive=False, rng=np.random.RandomState(0))
    init.initial_point()
    Qm = np.outer(y_pm, y_pm) * _solver_gram(X, kernel, gamma)
    a, b, n_iter, hist, Ts = _reference_algorithm1(Qm, y_pm, s, C_DEF, c_DEF, eta, 1e-9, 100, init.T, init.b)
    assert any(not np.array_equal(Ts[0], T) for T in Ts[1:]), "T never moved: the comparison would be trivial"
    assert model.n_iter_[0] == n_iter >= 2
    np.testing.assert_allclose(model.history_[0][:, 0], hist[:, 0], rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(model.history_[0][:, 1], hist[:, 1])
    np.testing.assert_array_equal(model.history_[0][:, 2], s)
    np.testing.assert_allclose(_alpha(model, y_pm), a, rtol=0, atol=1e-10 * np.abs(a).max())
    assert model.intercept_[0] == pytest.approx(b, abs=1e-10)


# ----------------------------------------------------------------------- 6. multiclass
# (wine, linear: 124 training rows for 13 features, the paper's iterate and b (refit_intercept=False):
# 48-53 of the 54 test samples across random_state, 0.889 at 0)
@pytest.mark.parametrize("name,kernel,min_acc", [("iris", "rbf", 0.85), ("wine", "linear", 0.85)])
def test_multiclass_one_vs_rest(name, kernel, min_acc):
    X, y = dataset(name)
    y = np.array(["c%d" % v for v in y])  # string labels: classes_ order is np.unique's
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    model = _fit(Xtr, ytr, kernel=kernel)
    k, m, n = 3, len(ytr), X.shape[1]
    np.testing.assert_array_equal(model.classes_, np.unique(y))
    assert model.dual_coef_.shape == (k, len(model.support_))
    assert model.intercept_.shape == model.n_iter_.shape == model.s_.shape == (k,)
    assert len(model.history_) == k
    dec = model.decision_function(Xte)
    assert dec.shape == (len(yte), k)
    np.testing.assert_array_equal(model.predict(Xte), model.classes_[np.argmax(dec, axis=1)])
    assert np.mean(model.predict(Xte) == yte) > min_acc
    if kernel == "linear":
        assert model.coef_.shape == (k, n)
        np.testing.assert_allclose(dec, Xte @ model.coef_.T + model.intercept_, atol=1e-10)
    else:
        assert not hasattr(model, "coef_")
        Kte = rbf_kernel(Xte, model.support_vectors_, gamma=model._gamma)
        np.testing.assert_allclose(dec, Kte @ model.dual_coef_.T + model.intercept_, atol=1e-8)  # exp to ~2e-10
    K = _gram(Xtr, kernel, model._gamma)
    tol = 1e-6 * max(math.sqrt(m), math.sqrt(n))
    dec_tr = model.decision_function(Xtr)
    for j, cls in enumerate(model.classes_):  # problem j: classes_[j] against the rest
        y_pm = _pm(ytr, cls)
        a = _alpha(model, y_pm, j)
        _check_stationary(np.outer(y_pm, y_pm) * K, y_pm, a, model.intercept_[j], int(model.s_[j]), 1.0 / m, tol,
                          C_DEF, c_DEF)
        assert model.training_accuracy_[j] == pytest.approx(np.mean(np.where(dec_tr[:, j] > 0, 1, -1) == y_pm),
                                                            abs=0.5 / m)


# ------------------------------------------------------------------------ 7. input validation
def _small():
    rng = np.random.default_rng(0)
    return rng.standard_normal((40, 3)), np.repeat([0, 1], 20)


def _named(name):  # scikit-learn's message for a parameter that satisfies none of its constraints
    return f"The '{name}' parameter of NSSVC must be"


@pytest.mark.parametrize("params,match", [
    (dict(s=0), _named("s")), (dict(s=-3), _named("s")), (dict(s=0.0), _named("s") + r".* a float in the range"),
    (dict(s=1.5), _named("s")), (dict(s=-0.5), _named("s")), (dict(s="half"), _named("s")),
    (dict(s=True), _named("s")),
    (dict(c=C_DEF), "smaller than C"), (dict(c=1.0), "smaller than C"), (dict(c=0.0), _named("c")),
    (dict(eta=0.0), _named("eta")), (dict(eta=-1.0), _named("eta")), (dict(C=0.0), _named("C")),
    (dict(C=-1.0), _named("C")), (dict(C=np.inf), _named("C")), (dict(tol=0.0), _named("tol")),
    (dict(tol=-1e-3), _named("tol")), (dict(max_iter=0), _named("max_iter")), (dict(max_iter=2.5), _named("max_iter")),
    (dict(kernel="foo"), _named("kernel")), (dict(kernel="rbf", gamma=-1.0), _named("gamma")),
    (dict(beta=0.0), _named("beta")), (dict(adaptive="yes"), _named("adaptive")), (dict(t0="first"), _named("t0")),
])
def test_invalid_parameters(params, match):
    X, y = _small()
    with pytest.raises(ValueError, match=match):
        NSSVC(**params).fit(X, y)


def test_invalid_data():
    X, y = _small()
    for bad in (np.nan, np.inf, -np.inf):
        Xb = X.copy()
        Xb[3, 1] = bad
        with pytest.raises(ValueError, match="NaN|infinity"):
            NSSVC().fit(Xb, y)
        with pytest.raises(ValueError, match="NaN|infinity"):
            NSSVC().fit(sp.csr_matrix(Xb), y)
    with pytest.raises(ValueError, match="2D"):
        NSSVC().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        NSSVC().fit(X, y[:-1])
    with pytest.raises(ValueError, match="one"):
        NSSVC().fit(X, np.zeros(40))
    with pytest.raises(ValueError, match="NaN"):
        NSSVC().fit(X, np.r_[np.nan, y[1:]])
    with pytest.raises(ValueError, match="continuous"):
        NSSVC().fit(X, np.linspace(0, 1, 40))
    with pytest.raises(NotFittedError):
        NSSVC().predict(X)
    with pytest.raises(NotFittedError):
        NSSVC().decision_function(X)
    model = NSSVC().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="features"):
        model.decision_function(np.hstack([X, X]))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.predict(Xn)
    # s above m is clipped to m, not an error
    assert NSSVC(s=1000, adaptive=False).fit(X, y).s_[0] == 40


# ---------------------------------------------------------- 8. determinism, top-s tie-break
def test_same_random_state_same_model(clf):
    X, y = clf
    for kw in (dict(), dict(kernel="rbf"), dict(kernel="rbf", s=20, adaptive=False, eta=0.05)):
        a = _fit(X, y, random_state=7, **kw)
        b = _fit(X, y, random_state=np.random.RandomState(7), **kw)
        np.testing.assert_array_equal(a.support_, b.support_)
        np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
        np.testing.assert_array_equal(a.intercept_, b.intercept_)
        np.testing.assert_array_equal(a.history_[0], b.history_[0])
        np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    # the threads of the O(m) pass do not change the model
    one = _fit(X, y, n_jobs=1)
    two = _fit(X, y, n_jobs=2)
    np.testing.assert_array_equal(one.support_, two.support_)
    np.testing.assert_array_equal(one.dual_coef_, two.dual_coef_)


def _scan_given(f, y, alpha, b, eta, inv_C, inv_c, k, nthreads):
    """_core.nssvm_scan with given margins f (kind 2) at the dense alpha (passed on its support)."""
    S = np.flatnonzero(alpha).astype(np.int64)
    return _core.nssvm_scan(2, np.ascontiguousarray(f, dtype=np.float64), None, None, np.zeros(0),
                            np.ascontiguousarray(y, dtype=np.int8), S, np.ascontiguousarray(alpha[S], dtype=np.float64),
                            b, eta, inv_C, inv_c, k, nthreads)


def _scan_reference(f, y, alpha, b, eta, inv_C, inv_c):
    """g (21), the scores of (41) and ACC's count of (68), in the C++ pass's order of operations."""
    y = y.astype(np.float64)
    g = y * (f + b) - 1.0 + alpha * np.where(alpha >= 0, inv_C, inv_c)
    correct = np.count_nonzero(np.where(f + b > 0, 1.0, -1.0) == y)
    return g, np.abs(alpha - eta * g), correct


def test_scan_tie_break_smaller_index():
    y = np.array([1, -1, 1, -1, 1, -1, 1, -1], dtype=np.int8)
    f = np.array([0.0, 0.0, 2.0, -2.0, 0.0, 0.0, 3.0, -3.0])
    alpha = np.zeros(8)
    # g = y f - 1 = [-1, -1, 1, 1, -1, -1, 2, 2]: scores 1 (x6) and 2 (x2)
    for k, T in [(1, [6]), (2, [6, 7]), (3, [0, 6, 7]), (5, [0, 1, 2, 6, 7]), (8, list(range(8)))]:
        r = _scan_given(f, y, alpha, 0.0, 1.0, 4.0, 400.0, k, 1)
        np.testing.assert_array_equal(r["T"], T)
        np.testing.assert_array_equal(r["g"], (y * f - 1.0)[T])
        np.testing.assert_array_equal(r["score"], np.abs(y * f - 1.0)[T])
        assert r["correct"] == 6  # sgn(0) = -1: samples 1, 2, 3, 5, 6, 7
    # E(alpha) of (12): 1/C for alpha >= 0 (including 0), 1/c for alpha < 0; exact dyadic values
    alpha = np.array([0.5, -0.25, 0.0, 0.125, -0.5, 0.25, 0.0, 0.0])
    r = _scan_given(f, y, alpha, 0.5, 0.25, 4.0, 8.0, 8, 1)
    g_ref, score_ref, correct = _scan_reference(f, y, alpha, 0.5, 0.25, 4.0, 8.0)
    np.testing.assert_array_equal(r["g"], g_ref)
    np.testing.assert_array_equal(r["score"], score_ref)
    assert r["correct"] == correct
    for k in range(1, 10):  # k > m gives all m
        r = _scan_given(f, y, alpha, 0.5, 0.25, 4.0, 8.0, k, 1)
        np.testing.assert_array_equal(r["T"], _top_s(score_ref, k))
    # alpha is passed on its support, which must be sorted and unique
    S = np.array([3, 0, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="support"):
        _core.nssvm_scan(2, f, None, None, np.zeros(0), y, S, alpha[S], 0.5, 0.25, 4.0, 8.0, 3, 1)


def test_scan_k_zero_does_not_crash():
    code = ("import numpy as np; from sparsekernel import _core; "
            "r = _core.nssvm_scan(2, np.array([0.5, -1.0]), None, None, np.zeros(0), np.array([1, -1], np.int8), "
            "np.zeros(0, np.int64), np.zeros(0), 0.0, 1.0, 4.0, 400.0, 0, 1); "
            "assert len(r['T']) == 0 and r['correct'] == 2")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.returncode


def test_scan_thread_count_invariant_with_ties():
    rng = np.random.default_rng(0)
    m = 200_000
    y = np.where(rng.random(m) < 0.5, 1, -1).astype(np.int8)
    f = rng.integers(-6, 7, m) * 0.25  # few distinct values: heavy ties across the chunks
    alpha = np.zeros(m)
    nz = rng.choice(m, 500, replace=False)
    alpha[nz] = rng.integers(-8, 9, 500) * 0.125
    args = (f, y, alpha, 0.25, 0.5, 4.0, 16.0)
    g_ref, score_ref, correct = _scan_reference(*args)
    for k in (1, 777, 5000, m):
        T_ref = _top_s(score_ref, k)
        results = [_scan_given(*args, k, t) for t in (1, 2, 3)]
        for r in results:
            np.testing.assert_array_equal(r["T"], T_ref)
            np.testing.assert_array_equal(r["g"], g_ref[T_ref])
            assert r["correct"] == correct


# -------------------------------------------------------------- 9. best_accuracy_intercept
def _accuracy(f, y, b):
    return np.count_nonzero(np.where(f + b > 0, 1, -1) == y)


def _brute_force_best(f, y):
    """max over all thresholds of #{sgn(f + b) = y}: b above all, below all, between distinct f."""
    t = np.unique(f)
    cands = np.concatenate([[-t[0] + 1.0, -t[-1] - 1.0], -0.5 * (t[1:] + t[:-1])])
    return max(_accuracy(f, y, b) for b in cands)


def test_best_accuracy_intercept_matches_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(300):
        m = int(rng.integers(1, 80))
        f = rng.standard_normal(m) * rng.choice([1e-3, 1.0, 1e3])
        y = np.where(rng.random(m) < rng.random(), 1, -1).astype(np.int8)
        b = best_accuracy_intercept(f, y, 0.0, np.random.RandomState(0))
        assert _accuracy(f, y, b) == _brute_force_best(f, y), trial
    # window < m: only the samples nearest the boundary move; never worse than the input
    for trial in range(20):
        m = 3000
        f = rng.standard_normal(m)
        y = np.where(f + 0.5 * rng.standard_normal(m) > 0.3, 1, -1).astype(np.int8)
        b0 = rng.uniform(-0.5, 0.5)
        b = best_accuracy_intercept(f, y, b0, np.random.RandomState(trial), window=300)
        assert _accuracy(f, y, b) >= _accuracy(f, y, b0)
        assert abs(b - b0) <= np.quantile(np.abs(f + b0), 0.3)  # moved within the window


def test_best_accuracy_intercept_tied_margins():
    f = np.full(5, 0.1)
    y = np.array([1, 1, 1, -1, -1], dtype=np.int8)
    b = best_accuracy_intercept(f, y, 0.0, np.random.RandomState(0))
    assert _accuracy(f, y, b) >= _accuracy(f, y, 0.0)  # 3; the returned b = -0.1 gives 2


def test_best_accuracy_intercept_all_negative_rounding():
    f = np.array([0.1, -0.5])
    y = np.array([-1, -1], dtype=np.int8)
    b = best_accuracy_intercept(f, y, 0.7, np.random.RandomState(0))
    assert _accuracy(f, y, b) == _brute_force_best(f, y) == 2  # returns b with accuracy 1


def test_refit_intercept_not_worse_with_duplicate_rows():
    X = np.array([[0.0], [1.0], [1.0], [1.0]])
    y = np.array([0, 1, 1, 0])
    plain = _fit(X, y, s=4, adaptive=False)
    refit = _fit(X, y, s=4, adaptive=False, refit_intercept=True)
    assert refit.score(X, y) >= plain.score(X, y)


# ------------------------------------------------------ 10. refit_intercept on Example 4.1
def test_refit_intercept_example_41():
    X, y = make_nssvm_gaussians(20_000, random_state=0)
    plain = _fit(X, y)
    refit = _fit(X, y, refit_intercept=True)
    # the Newton iterations are the same; only the returned point differs
    np.testing.assert_array_equal(refit.history_[0], plain.history_[0])
    assert plain.intercept_newton_[0] == plain.intercept_[0]
    acc_refit = refit.training_accuracy_[0]
    assert acc_refit >= plain.training_accuracy_[0]
    assert acc_refit >= refit.history_[0][:, 1].max()  # the best iterate, then a better b
    assert acc_refit == pytest.approx(refit.score(X, y), abs=1e-12)
    assert plain.training_accuracy_[0] == pytest.approx(plain.score(X, y), abs=1e-12)
    assert acc_refit > 0.95  # Bayes accuracy of Example 4.1 (with DESIGN.md's variance): 96.93 %
    # the returned point is the iterate of best ACC (here not the last one), with its b refitted
    h = refit.history_[0]
    k_best = int(np.argmax(h[:, 1]))
    assert k_best < len(h) - 1 and h[k_best, 1] > h[-1, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        at_best = NSSVC(max_iter=k_best, random_state=0, refit_intercept=False).fit(X, y)  # stops at iterate k_best
    np.testing.assert_array_equal(at_best.support_, refit.support_)
    np.testing.assert_array_equal(at_best.dual_coef_, refit.dual_coef_)
    assert at_best.training_accuracy_[0] == h[k_best, 1]
    # intercept_newton_: the Newton b of the returned iterate, before its refit
    assert refit.intercept_newton_[0] == at_best.intercept_[0] != refit.intercept_[0]
    # the refit intercept is the best one for the returned w (brute force over all thresholds)
    f = X @ refit.coef_[0]
    y_pm = _pm(y, refit.classes_[1]).astype(np.int8)
    assert _accuracy(f, y_pm, refit.intercept_[0]) == _brute_force_best(f, y_pm)


# -------------------------------------------- 11. T0 balanced (DESIGN.md misprint), s rules
@pytest.mark.parametrize("n_pos,m,s", [(30, 1000, 100), (30, 1000, 40), (30, 1000, 41), (3, 1000, 10),
                                       (500, 10_000, 100), (5_000, 10_000, 200), (9_990, 10_000, 50), (1, 2, 2)])
@pytest.mark.parametrize("t0", ["balanced", "stratified"])
def test_initial_working_set_is_balanced(n_pos, m, s, t0):
    rng = np.random.default_rng(n_pos + s)
    y = -np.ones(m, dtype=np.int8)
    y[rng.choice(m, n_pos, replace=False)] = 1
    sv = NewtonSolver(None, y, s=s, C=C_DEF, c=c_DEF, eta=1.0 / m, tol=1e-6, max_iter=10, adaptive=False,
                      rng=np.random.RandomState(0), t0=t0)
    sv.initial_point()
    T = sv.T
    assert len(T) == s and len(np.unique(T)) == s and np.all(np.diff(T) > 0)
    n_neg = m - n_pos
    pos = np.count_nonzero(y[T] > 0)
    if t0 == "balanced":  # half from each class (all of a class with fewer than s/2 members)
        assert pos >= min(n_pos, s // 2) and s - pos >= min(n_neg, s // 2)
    else:  # in proportion to the class sizes, at least one of each
        share = min(s - 1, max(1, round(s * n_pos / m)))
        assert pos == min(n_pos, max(s - n_neg, share))
        assert pos >= 1 and s - pos >= 1
    if m >= 10 * s:  # drawn at random: another seed gives another T0
        other = NewtonSolver(None, y, s=s, C=C_DEF, c=c_DEF, eta=1.0 / m, tol=1e-6, max_iter=10, adaptive=False,
                             rng=np.random.RandomState(1), t0=t0)
        other.initial_point()
        assert not np.array_equal(other.T, T)
    b0 = 1.0 if n_pos >= n_neg else -1.0  # sgn(<y, 1>), sgn(0) = 1
    assert sv.b == b0
    np.testing.assert_array_equal(sv.alpha, 0.0)
    np.testing.assert_array_equal(sv.g_T, -1.0 + y[T] * b0)  # g(z0) (21) at a = 0
    assert sv.acc == max(n_pos, n_neg) / m
    # the paper's literal rule, T0 = top-s of |a0 - eta g(z0)|, takes one class only (the misprint)
    g0 = -1.0 + y * b0
    T_paper = _top_s(np.abs(-g0 / m), s)
    if s <= min(n_pos, n_neg):
        assert len(np.unique(y[T_paper])) == 1
        assert len(np.unique(y[T])) == 2


def test_imbalanced_fit_uses_both_classes():
    X, y = make_classification(n_samples=1000, n_features=4, n_informative=3, n_redundant=0, weights=[0.97],
                               flip_y=0, class_sep=2.0, random_state=5)
    model = _fit(X, y, s=20, adaptive=False)
    sv_labels = y[model.support_]
    assert len(np.unique(sv_labels)) == 2
    assert model.training_accuracy_[0] > np.mean(y == 0)  # beats the majority vote


def test_adaptive_sparsity_rule_and_stopping():
    X, y = make_nssvm_gaussians(5000, random_state=1)
    m, n = X.shape
    model = _fit(X, y, beta=0.05, refit_intercept=False, adaptive=True)
    h = model.history_[0]
    tol = 1e-6 * math.sqrt(m)
    assert h[0, 2] == sparsity_level(0.05, m, n) == math.ceil(0.05 * n * math.log2(m / n) ** 2)
    # Algorithm 2: s_{k+1} = ceil(sigma s_k) when k is a multiple of 10 or (66) holds
    for k in range(len(h) - 1):
        grow = k % 10 == 0 or h[k, 0] < tol
        assert h[k + 1, 2] == (min(m, math.ceil(1.1 * h[k, 2])) if grow else h[k, 2])
    # stops at the first iterate where (66) and the one-sided (67) both hold
    ok = [h[k, 0] < tol and h[k, 1] - max([0.0] + list(h[:k, 1])) < 1e-4 for k in range(len(h))]
    assert ok[-1] and not any(ok[:-1])
    assert model.s_[0] == h[-1, 2] and model.n_iter_[0] == len(h) - 1
    assert len(model.support_) <= h[-2, 2]  # the last Newton step ran with the previous s


def test_sparsity_level_rule():
    assert sparsity_level(1.0, 20_000, 2) == math.ceil(2 * math.log2(10_000) ** 2)
    assert sparsity_level(0.2, 10**6, 10) == math.ceil(0.2 * 10 * math.log2(10**5) ** 2)
    assert sparsity_level(1.0, 100, 80) == 80  # log2(m/n) taken >= 1
    assert sparsity_level(1.0, 10, 50) == 10  # clipped to m
    assert sparsity_level(1e-6, 1000, 2) == 2


# ---------------------------------------------------------------------------- row blocks
@pytest.mark.parametrize("case", ["dense", "csr", "float32", "3class", "refit"])
def test_row_blocks_give_the_same_fit_bit_for_bit(monkeypatch, case):
    """The linear pass over X split into uneven row blocks (each scanned alone, the top-s merged by
    _core.nssvm_merge_top) selects the same T and gives the same iterates as X in one block: the
    property a distributed fit (sparsekernel.dask) relies on. Also counts the trips to the data:
    one pass per Newton iteration plus the rows of the initial working set (plus the probe and the
    window of the intercept refit)."""
    import sparsekernel.nssvm as nssvm_module
    from sparsekernel._blocks import InMemoryBlocks

    if case == "3class":
        X, y = make_classification(n_samples=3000, n_features=8, n_informative=5, n_classes=3, random_state=0)
    else:
        X, y = make_nssvm_gaussians(5000, random_state=1)
    if case == "csr":
        X = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    if case == "float32":
        X = X.astype(np.float32)
    params = dict(random_state=0, refit_intercept=case == "refit")
    whole = NSSVC(**params).fit(X, y)

    made = []

    class Recorded(InMemoryBlocks):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            made.append(self)

    monkeypatch.setattr(nssvm_module, "InMemoryBlocks", Recorded)
    monkeypatch.setattr(nssvm_module, "_BLOCK_ROWS", 977)
    split = NSSVC(**params).fit(X, y)
    assert len(made) == 1 and len(made[0].bounds) > 3
    for name in ("dual_coef_", "intercept_", "support_", "n_iter_", "s_"):
        np.testing.assert_array_equal(getattr(split, name), getattr(whole, name), err_msg=name)
    for a, b in zip(split.history_, whole.history_):
        np.testing.assert_array_equal(a, b)
    if any(len(lv) > 1 for lv in split.levels_):  # levels of s (adaptive='accuracy'): a pass per iteration at least
        assert made[0].round_trips >= int(np.sum(split.n_iter_))
        return
    expected = int(np.sum(split.n_iter_)) + len(split.n_iter_)
    if case == "refit":  # the probe rows and the window, and the rows of the best iterate's support
        assert expected + 2 <= made[0].round_trips <= expected + 3  # when it is not the last one
    else:
        assert made[0].round_trips == expected


def test_merge_top_is_the_scan_rule():
    """_core.nssvm_merge_top: the k best by score, ties to the smaller index, returned in index order."""
    from sparsekernel import _core

    idx = np.array([7, 3, 11, 5, 2], dtype=np.int64)
    score = np.array([1.0, 2.0, 2.0, 0.5, 1.0])
    g = np.arange(5, dtype=np.float64)
    r = _core.nssvm_merge_top(idx, score, g, 3)
    np.testing.assert_array_equal(r["T"], [2, 3, 11])  # 3 and 11 (score 2), then 2 before 7 (score 1)
    np.testing.assert_array_equal(r["g"], [4.0, 1.0, 2.0])
    assert len(_core.nssvm_merge_top(idx, score, g, 10)["T"]) == 5
    with pytest.raises(ValueError):
        _core.nssvm_merge_top(idx, score[:3], g, 2)


def test_misaligned_input_is_read_as_aligned():
    """Found by UBSan on Dask workers: a block unpickled from a byte buffer can hold doubles at an
    address that is not a multiple of 8; the C++ passes read it only after an aligned copy, and the
    fit equals the one on the aligned array."""
    X, y = make_nssvm_gaussians(3000, random_state=3)
    raw = np.zeros(X.nbytes + 1, dtype=np.uint8)
    raw[1:] = np.frombuffer(X.tobytes(), dtype=np.uint8)
    Xm = np.frombuffer(raw.data, dtype=np.float64, offset=1).reshape(X.shape)
    assert not Xm.flags.aligned
    for kernel in ("linear", "rbf"):
        a = NSSVC(kernel=kernel, random_state=0).fit(Xm, y)
        b = NSSVC(kernel=kernel, random_state=0).fit(X, y)
        np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


# ------------------------------------------------------------------ 12. an int s is a hard cap
def _support_per_problem(model):
    return np.count_nonzero(model.dual_coef_, axis=1)


def _check_cap(model, k):
    """s_, n_support_, every iterate's s and each problem's nonzero alphas are at most k."""
    assert np.all(model.s_ <= k), model.s_
    assert np.all(model.n_support_ <= k), model.n_support_
    np.testing.assert_array_equal(model.n_support_, _support_per_problem(model))
    assert np.all(model.n_support_ <= model.s_)
    for h in model.history_:
        assert h[:, 2].max() <= k
    n_problems = len(model.dual_coef_)
    assert len(model.support_) <= n_problems * k


def _raw_breast_cancer():
    """breast_cancer as distributed (unstandardised): Algorithm 2's loop needs hundreds of iterations
    there, so an uncapped s grows every tenth one, to (nearly) all the samples."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("k", [1, 5, 20, 50])
def test_int_s_caps_the_support_vectors_binary(k, kernel, sparse):
    """NSSVC(s=k) keeps at most k support vectors (issue 35: s=20 kept 419 of 426 samples), on the
    raw and on the standardised breast_cancer."""
    Xtr, Xte, ytr, yte = _raw_breast_cancer()
    scaler = StandardScaler().fit(Xtr)
    for X, Xt in ((Xtr, Xte), (scaler.transform(Xtr), scaler.transform(Xte))):
        if sparse:
            X, Xt = sp.csr_matrix(X), sp.csr_matrix(Xt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # raw data at small k: max_iter may end it
            model = NSSVC(s=k, kernel=kernel, random_state=0).fit(X, ytr)
        _check_cap(model, k)
        assert len(model.support_) <= k
        assert model.n_support_.shape == (1,)
    if k >= 20:  # the standardised fit at the cap still classifies (all-majority: 0.63)
        assert model.score(Xt, yte) >= 0.85


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("k", [3, 10, 25])
def test_int_s_caps_every_one_vs_rest_problem(k, kernel, sparse):
    """More classes: each one-vs-rest problem keeps at most k support vectors (digits: s=50 kept 871
    in one problem before the cap)."""
    X, y = dataset("digits")
    X = sp.csr_matrix(X) if sparse else X
    model = NSSVC(s=k, kernel=kernel, random_state=0).fit(X, y)
    assert model.s_.shape == model.n_support_.shape == (10,)
    _check_cap(model, k)
    assert len(model.support_) <= 10 * k
    if k >= 10:
        assert model.score(X, y) >= 0.6  # ten classes: chance is 0.1


def test_fraction_s_is_a_cap_too():
    Xtr, _, ytr, _ = _raw_breast_cancer()
    Xtr = StandardScaler().fit_transform(Xtr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # s = 22 cycles there (test_capped_fit_that_cycles_...)
        model = NSSVC(s=0.05, random_state=0).fit(Xtr, ytr)
    _check_cap(model, math.ceil(0.05 * len(Xtr)))


def test_adaptive_growth_runs_up_to_the_cap():
    """Algorithm 2's growth of an int s: from the level 'auto' starts at (or from s when that is
    smaller), by sigma = 1.1 at the paper's steps, clipped to s."""
    X, y = make_nssvm_gaussians(5000, random_state=1)
    m, n = X.shape
    s0 = sparsity_level(0.05, m, n)  # 13
    cap = s0 + 3
    model = _fit(X, y, beta=0.05, s=cap, adaptive=True)
    h = model.history_[0]
    tol = 1e-6 * math.sqrt(m)
    assert h[0, 2] == s0
    for k in range(len(h) - 1):
        grow = k % 10 == 0 or h[k, 0] < tol
        assert h[k + 1, 2] == (min(cap, math.ceil(1.1 * h[k, 2])) if grow else h[k, 2])
    assert h[:, 2].max() == cap == model.s_[0]  # it reached the cap and stayed there
    # below the rule's start, the growth starts at the cap (and has nowhere to go)
    small = _fit(X, y, beta=0.05, s=5, adaptive=True)
    assert np.all(small.history_[0][:, 2] == 5) and small.n_support_[0] <= 5
    # the cap does not change a fit that never reaches it
    auto = _fit(X, y, beta=0.05, adaptive=True)
    roomy = _fit(X, y, beta=0.05, s=int(auto.s_[0]), adaptive=True)
    np.testing.assert_array_equal(roomy.dual_coef_, auto.dual_coef_)
    np.testing.assert_array_equal(roomy.history_[0], auto.history_[0])


@pytest.mark.parametrize("scaled, s, adaptive", [(False, 30, False), (False, 20, True), (True, 20, True),
                                                  (True, 30, False)])
def test_capped_fit_that_cycles_stops_with_its_best_iterate(scaled, s, adaptive):
    """At a level that cannot grow, the top-s working set can swap between index sets for ever
    (breast_cancer: raw s=30 ran its 1000 iterations and ended at test accuracy 0.27). The loop
    stops at the third visit of a state, warns, and keeps the iterate of best training accuracy."""
    import re

    Xtr, Xte, ytr, yte = _raw_breast_cancer()
    if scaled:
        scaler = StandardScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    with pytest.warns(ConvergenceWarning, match="cycle") as rec:
        model = NSSVC(s=s, adaptive=adaptive, random_state=0, refit_intercept=False).fit(Xtr, ytr)
    assert not re.search(_EQUATION, str(rec[0].message))
    assert not model.converged_ and model.n_iter_[0] < 200
    h = model.history_[0]
    assert model.training_accuracy_[0] == h[1:, 1].max()  # the best iterate after a Newton step
    assert model.training_accuracy_[0] == pytest.approx(model.score(Xtr, ytr), abs=0.5 / len(ytr))
    _check_cap(model, s)
    assert model.score(Xte, yte) >= 0.85


def test_auto_is_the_default_and_keeps_the_paper_rule():
    """s='auto' is the default. With Algorithm 2 (adaptive=True) its growth has no cap but m
    (unstandardised breast_cancer: all of the samples, as the docstring says); by levels
    (adaptive='accuracy', the default) at most half of them. Both are sparse when m >> n
    (Example 4.1, n = 2)."""
    assert NSSVC().s == "auto" and NSSVC().adaptive == "accuracy"
    Xtr, _, ytr, _ = _raw_breast_cancer()
    model = NSSVC(random_state=0, adaptive=True).fit(Xtr, ytr)
    assert model.s_[0] > 0.9 * len(Xtr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # (raw features: levels cycle, said)
        model = NSSVC(random_state=0).fit(Xtr, ytr)
    # raw features: the levels cycle (no solution at them), so the doubling goes on to all m samples
    assert model.converged_ or model.s_[0] == len(Xtr)
    scaled = NSSVC(random_state=0).fit(StandardScaler().fit_transform(Xtr), ytr)
    assert scaled.s_[0] <= math.ceil(0.5 * len(Xtr)) and scaled.n_support_[0] <= scaled.s_[0]
    X, y = make_nssvm_gaussians(10_000, random_state=0)
    for adaptive in (True, "accuracy"):
        model = NSSVC(random_state=0, adaptive=adaptive).fit(X, y)
        assert model.n_support_[0] < 0.05 * len(X)


def test_accuracy_levels_double_while_training_accuracy_gains():
    """adaptive='accuracy': Algorithm 2 (the fit adaptive=True gives, iterate for iterate), then
    Algorithm 1 at 2x, 4x, ... its level while each doubling raises the training accuracy by
    ACC_GAIN; the model is that of the last level that paid."""
    from sparsekernel.nssvm import ACC_GAIN

    X, y = make_classification(n_samples=4000, n_features=20, n_informative=10, flip_y=0.05, random_state=3)
    X = StandardScaler().fit_transform(X)
    model = NSSVC(random_state=0).fit(X, y)
    paper = NSSVC(random_state=0, adaptive=True).fit(X, y)
    levels = model.levels_[0]
    assert len(levels) >= 2 and levels[0, 0] == paper.s_[0] and levels[0, 1] == paper.training_accuracy_[0]
    np.testing.assert_array_equal(levels[1:, 0], np.minimum(levels[0, 0] * 2 ** np.arange(1, len(levels)), 2000))
    gains = np.diff(levels[:, 1])
    chosen = int(np.flatnonzero(levels[:, 0] == model.s_[0])[0])
    assert np.all(gains[:chosen] >= ACC_GAIN)  # every doubling up to it paid
    if chosen + 1 < len(levels):
        assert gains[chosen] < ACC_GAIN and chosen + 2 == len(levels)  # the next one did not: the last solved
    assert model.training_accuracy_[0] == levels[chosen, 1]
    assert model.n_iter_[0] > paper.n_iter_[0]
    assert model.s_[0] <= 2000  # ACCURACY_MAX_SHARE of the samples


@pytest.mark.parametrize("s", [np.int64(7), 7])
def test_s_accepts_numpy_integers(s):
    X, y = _small()
    model = NSSVC(s=s, random_state=0).fit(X, y)
    _check_cap(model, 7)


# ------------------------------------------------- 13. user-facing messages carry no equation numbers
_EQUATION = r"\(\d+\)"


def test_messages_have_no_equation_numbers():
    """The errors and warnings a user sees say what went wrong in words, not as "(66)/(67)"."""
    import re

    X, y = _small()
    with pytest.raises(ValueError) as err:
        NSSVC(C=0.1, c=0.2).fit(X, y)
    assert "smaller than C" in str(err.value) and not re.search(_EQUATION, str(err.value))
    Xh, yh = make_classification(n_samples=300, n_features=6, flip_y=0.3, random_state=0)
    with pytest.warns(ConvergenceWarning) as rec:
        NSSVC(max_iter=1, random_state=0).fit(Xh, yh)
    text = " ".join(str(w.message) for w in rec)
    assert "max_iter=1" in text and not re.search(_EQUATION, text)
    for bad in (dict(s=0), dict(s=1.5), dict(s="half"), dict(max_iter=0), dict(t0="first")):
        with pytest.raises(ValueError) as err:
            NSSVC(**bad).fit(X, y)
        assert not re.search(_EQUATION, str(err.value)), str(err.value)


def test_nssvm_source_messages_have_no_equation_numbers():
    """Every string literal of a raise, a warning or a memory check in nssvm.py (the comments and
    docstrings may cite the paper's equations)."""
    import ast
    import re

    import sparsekernel.nssvm as mod

    tree = ast.parse(open(mod.__file__).read())
    calls = {"warn", "warn_if_stopped_early", "require"}
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Raise)
             or (isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) in calls)]
    assert len(nodes) >= 8  # (the checks of single parameters are _parameter_constraints: no message of ours)
    found = [c.value for n in nodes for c in ast.walk(n) if isinstance(c, ast.Constant) and isinstance(c.value, str)
             and re.search(_EQUATION, c.value)]
    assert not found, found


def test_dask_fit_respects_the_cap(client):
    """The distributed fit (sparsekernel.dask) goes through the same growth: capped, and equal to the
    in-memory fit."""
    da = pytest.importorskip("dask.array")
    for n_classes, kernel in ((2, "linear"), (3, "linear"), (2, "rbf")):
        X, y = make_classification(n_samples=4000, n_features=8, n_informative=5, n_classes=n_classes,
                                   flip_y=0.1, random_state=0)
        Xd, yd = da.from_array(X, chunks=(1500, 8)), da.from_array(y, chunks=(1500,))
        k = 15
        distributed_fit = NSSVC(s=k, kernel=kernel, random_state=0).fit(Xd, yd)
        _check_cap(distributed_fit, k)
        memory = NSSVC(s=k, kernel=kernel, random_state=0).fit(X, y)
        np.testing.assert_array_equal(distributed_fit.support_, memory.support_)
        np.testing.assert_allclose(distributed_fit.dual_coef_, memory.dual_coef_, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(distributed_fit.s_, memory.s_)


# ------------------------------------------------------------------ the model size as a budget (issue 50)
def _moons(n=300):
    X, y = make_moons(n, noise=0.25, random_state=0)
    return StandardScaler().fit_transform(X), y


def test_budget_as_a_number_caps_the_support_like_an_int_s():
    """budget=k bounds every problem's support vectors and level by k, and gives the fit an int s=k
    gives (the same iterates); a budget above what 'auto' keeps changes nothing."""
    X, y = _moons()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a small cap may cycle (said, and kept)
        for kernel in ("linear", "rbf"):
            free = NSSVC(kernel=kernel, random_state=0).fit(X, y)
            k = max(2, int(free.n_support_[0]) // 2)
            capped = NSSVC(kernel=kernel, budget=k, random_state=0).fit(X, y)
            as_s = NSSVC(kernel=kernel, s=k, random_state=0).fit(X, y)
            assert capped.n_support_.max() <= k and capped.s_.max() <= k
            np.testing.assert_array_equal(capped.support_, as_s.support_)
            np.testing.assert_allclose(capped.dual_coef_, as_s.dual_coef_, rtol=0, atol=0)
            roomy = NSSVC(kernel=kernel, budget=len(y), random_state=0).fit(X, y)
            np.testing.assert_array_equal(roomy.support_, free.support_)
            assert capped.prediction_cost_ > 0


def test_latency_budget_solves_the_measured_cost_line(monkeypatch):
    """A latency budget: predict's cost measured at two sizes on stand-in models (training rows, the
    fitted kernel, every problem), fitted as a + b n_s and solved; with the timing replaced by a known
    line the cap is exact. The stand-ins predict like a fitted model."""
    import sparsekernel._budget as B
    import sparsekernel.nssvm

    X, y = _moons()
    seen = []

    def fake_cost(model, rows):
        n_s = model.dual_coef_.shape[1] // model.dual_coef_.shape[0]
        assert model.support_vectors_.shape == (model.dual_coef_.shape[1], X.shape[1])
        assert model.predict(rows[:5]).shape == (5,)
        seen.append(n_s)
        return 1e-6 + 2e-8 * n_s                      # 1 us + 20 ns per support vector

    monkeypatch.setattr(B, "prediction_cost", fake_cost)
    monkeypatch.setattr(sparsekernel.nssvm, "prediction_cost", lambda model, rows: 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = NSSVC(kernel="rbf", budget="1.5us", random_state=0).fit(X, y)
        assert seen[:2] == [16, min(256, len(X))]
        assert model.n_support_.max() <= 25 and model.s_.max() <= 25   # (1.5 - 1) us / 20 ns
        tiny = NSSVC(kernel="rbf", budget="0.5us", random_state=0).fit(X, y)  # below a 1-vector model's cost
        assert tiny.s_.max() == 1 and tiny.n_support_.max() <= 1


@pytest.mark.parametrize("budget", [0, -3, True, "fast", "20", "-1us", "0us", 2.5, [5]])
def test_bad_budget_is_a_value_error(budget):
    X, y = _moons(60)
    with pytest.raises(ValueError, match="budget"):
        NSSVC(budget=budget).fit(X, y)
