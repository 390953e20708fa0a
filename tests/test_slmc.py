"""SLMC, sparse KFD and the reduced-set baselines (sparsekernel.slmc, _expansion, _kernel_grad),
checked against the mathematics of Wu, Schölkopf & Bakır, "A direct method for building sparse
kernel learning algorithms" (JMLR 2006), recomputed here in dense float64.

Notation (paper, sections 3.2-3.3, 4.1-4.2, Appendix A): y_i = +-1 (+1 = classes_[1]),
psi_z(x) = (K(z_1, x), ..., K(z_Nz, x)) (31), Psi = K^zx (N_z x N), K^z = K(Z, Z),
K_hat_z(x, x') = psi_z(x)' (K^z)^-1 psi_z(x') (40), phi_z = T psi_z with T K^z T' = I (41-43),
W(Z) = optimum of the SVM (28)-(30) / (37)-(39) (44), beta = (K^z)^-1 Psi Y alpha (45).

1. the gradients (46) (SLMC), (63) (sparse KFD) and of the reduced-set objective (4) against
   central finite differences, for every differentiable kernel, and (46) against its dense
   derivation (section 3.3); a CSR training set gives the dense W and gradient; with the linear
   kernel and N_z = d, W does not depend on Z at all (F_z is the whole input space);
2. Example 1: with Z = the support vectors of an SVC, W(Z) is the SVC's dual optimum and Z is a
   stationary point of W;
3. T K^z T' = I and <phi_z(x_i), phi_z(x_j)> = K_hat_z(x_i, x_j) (43, 40); the jittered Cholesky
   factor of a singular K^z;
4. W decreases over the outer iterations, stays above the full SVM's optimum, and the stored model
   is f(x) = sum_j beta_j K(z_j, x) + b (binary and one-vs-rest);
5. the inner solve against the primal (28)-(30) solved independently (SLSQP);
6. sparse KFD: lam and beta against the generalised eigenproblem (60)-(61) solved densely;
7. estimator behaviour: pickle, Pipeline, GridSearchCV, CSR = dense, float32;
8. input validation;
9. the RS / MRS / RSVM / MRSVM baselines (sections 4.1-4.2);
10. the stopping rule of the L-BFGS over Z: the defaults converge (no ConvergenceWarning) on
    breast_cancer, digits and synthetic sets; the stop is the first iteration at which W fell by less
    than tol |W| over the last WINDOW iterations; tol only truncates the path; tol=0 runs max_iter.

Ctrl-C during an SLMC fit is tested in test_interrupt.py, the scikit-learn API checks in
test_estimator_checks.py.

No file outside the repository is read.
"""

from __future__ import annotations

import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.linalg as la
import scipy.sparse as sp
import sklearn.svm
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer, load_digits, make_classification, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from _helpers import sklearn_kernel
import sparsekernel.slmc
from sparsekernel import SVC
from sparsekernel._expansion import (
    _JITTERS,
    WINDOW,
    ExpansionKernel,
    InnerSVM,
    KFDObjective,
    ReducedSetObjective,
    SLMCObjective,
    cholesky_jittered,
    jitter_scale,
    whitened_map,
)
from sparsekernel.slmc import SLMC, ReducedSetClassifier, ReducedSVM, SparseKFD

# kernel -> (gamma, coef0, degree) for the small problems (d = 3, standardised data)
KERNEL_PARAMS = {
    "rbf": (0.5, 0.0, 3),
    "poly": (0.3, 1.0, 3),
    "laplacian": (0.5, 0.0, 3),
    "sigmoid": (0.1, 0.0, 3),  # indefinite: K^z is jittered
    "linear": (1.0, 0.0, 1),
}


# ------------------------------------------------------------------------------------ helpers
def _toy(n=100, d=3, seed=0):
    """A binary problem with a curved boundary and some label noise; y in {-1, +1}."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] + 0.7 * X[:, 1] ** 2 - 0.5 + 0.4 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _kernel(name, threads=1):
    return ExpansionKernel(name, *KERNEL_PARAMS[name], threads)


def _inner(y, C=1.0, tol=1e-10):
    return InnerSVM(y, np.full(len(y), float(C)), tol)


def _fd_gradient(objective, Z, h=1e-5):
    """Central finite differences of objective.evaluate(Z).W."""
    G = np.zeros_like(Z)
    for idx in np.ndindex(Z.shape):
        Zp, Zm = Z.copy(), Z.copy()
        Zp[idx] += h
        Zm[idx] -= h
        G[idx] = (objective.evaluate(Zp).W - objective.evaluate(Zm).W) / (2.0 * h)
    return G


def _rel_err(G, G_ref):
    return np.abs(G - G_ref).max() / np.abs(G_ref).max()


def _khat(Kfun, Z, A, B):
    """K_hat_z(a, b) = psi_z(a)' (K^z)^-1 psi_z(b) (40) with a dense inverse."""
    return Kfun(A, Z) @ np.linalg.inv(Kfun(Z, Z)) @ Kfun(Z, B)


def _quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


# ------------------------------------------------------------------ 1. gradients vs finite differences
def _objective(kind, kernel, X, y, rng):
    if kind == "slmc":
        return SLMCObjective(X, y, kernel, _inner(y))
    if kind == "kfd":
        return KFDObjective(X, y, kernel, 1e-3)
    # reduced set: w = sum_i a_i phi(x_i) over 30 training points with arbitrary coefficients
    return ReducedSetObjective(X[:30], rng.standard_normal(30), kernel)


@pytest.mark.parametrize("kernel", ["rbf", "poly", "laplacian", "sigmoid", "linear"])
@pytest.mark.parametrize("kind", ["slmc", "kfd", "rs"])
def test_gradient_matches_finite_differences(kind, kernel):
    X, y = _toy()
    rng = np.random.default_rng(1)
    n_z = 2 if kernel == "linear" else 5  # linear: N_z < d, or W would not depend on Z (next test)
    Z = rng.standard_normal((n_z, X.shape[1]))
    if kernel == "laplacian":  # away from the kinks z_uv = x_iv of |z - x|_1
        assert np.abs(Z[:, None, :] - X[None, :, :]).min() > 1e-4  # >> h
    objective = _objective(kind, _kernel(kernel), X, y, rng)
    ev = objective.evaluate(Z)
    G_fd = _fd_gradient(objective, Z)
    assert np.abs(G_fd).max() > 1e-6  # a non-trivial gradient
    assert ev.grad.shape == Z.shape
    assert _rel_err(ev.grad, G_fd) <= 1e-5, (kind, kernel, _rel_err(ev.grad, G_fd))
    if kernel == "sigmoid" and kind != "kfd":  # the indefinite K^z is jittered, consistently in W and grad
        assert ev.jitter > 0


@pytest.mark.parametrize("kernel", ["rbf", "poly", "laplacian", "sigmoid", "linear"])
@pytest.mark.parametrize("kind", ["slmc", "kfd", "rs"])
def test_csr_training_set_same_objective_and_gradient(kind, kernel, monkeypatch):
    """The CSR code paths of the kernel gradient (and the laplacian's chunked sign tensor) give the
    dense W and gradient."""
    import sparsekernel._kernel_grad as kg

    X, y = _toy(seed=13)
    X[np.random.default_rng(0).random(X.shape) > 0.5] = 0.0
    Z = np.random.default_rng(14).standard_normal((2 if kernel == "linear" else 5, 3))
    dense = _objective(kind, _kernel(kernel), X, y, np.random.default_rng(15)).evaluate(Z)
    monkeypatch.setattr(kg, "_LAPLACIAN_CHUNK", 7 * Z.size)  # 7 rows of X at a time
    csr = _objective(kind, _kernel(kernel), sp.csr_matrix(X), y, np.random.default_rng(15)).evaluate(Z)
    assert csr.W == pytest.approx(dense.W, rel=1e-9)
    np.testing.assert_allclose(csr.grad, dense.grad, rtol=1e-7, atol=1e-9 * np.abs(dense.grad).max())
    np.testing.assert_allclose(csr.beta, dense.beta, rtol=1e-7, atol=1e-9 * np.abs(dense.beta).max())


def test_slmc_gradient_equals_formula_46_dense():
    """(46) written out with dK_hat/dz_uv (section 3.3, dense inverse) on one coordinate per XV."""
    X, y = _toy(n=60, seed=3)
    gamma = KERNEL_PARAMS["rbf"][0]
    Kf = sklearn_kernel("rbf", gamma)
    Z = np.random.default_rng(2).standard_normal((4, 3))
    ev = SLMCObjective(X, y, _kernel("rbf"), _inner(y)).evaluate(Z)
    a = y * ev.alpha
    Kzi = np.linalg.inv(Kf(Z, Z))
    Psi = Kf(Z, X)
    for u in range(len(Z)):
        v = u % 3
        # d psi_z(x)/dz_uv: only row u moves, by -2 gamma K(z_u, x) (z_uv - x_v)
        dPsi = np.zeros_like(Psi)
        dPsi[u] = -2.0 * gamma * Psi[u] * (Z[u, v] - X[:, v])
        dKz = np.zeros((len(Z), len(Z)))
        dKz[u] = -2.0 * gamma * Kf(Z, Z)[u] * (Z[u, v] - Z[:, v])
        dKz[:, u] += dKz[u]
        dKzi = -Kzi @ dKz @ Kzi
        dKhat = dPsi.T @ Kzi @ Psi + Psi.T @ Kzi @ dPsi + Psi.T @ dKzi @ Psi
        g46 = -0.5 * a @ dKhat @ a
        assert ev.grad[u, v] == pytest.approx(g46, rel=1e-7, abs=1e-10)


@pytest.mark.parametrize("kind", ["slmc", "kfd", "rs"])
def test_linear_kernel_full_span_makes_W_constant(kind):
    """Linear kernel, N_z = d XVs in general position: span{z_j} = R^d, so F_z is the whole input space,
    W(Z) is the same for every Z and its gradient vanishes; for SLMC W is the linear SVM's optimum."""
    X, y = _toy()
    rng = np.random.default_rng(4)
    objective = _objective(kind, _kernel("linear"), X, y, rng)
    evs = [objective.evaluate(rng.standard_normal((3, 3))) for _ in range(3)]
    scale = abs(evs[0].W)
    for ev in evs:
        assert ev.W == pytest.approx(evs[0].W, rel=1e-7)
        assert np.abs(ev.grad).max() <= 1e-6 * max(scale, 1.0)
    if kind == "slmc":
        svc = SVC(kernel="linear", C=1.0, tol=1e-10).fit(X, y)
        assert evs[0].W == pytest.approx(-svc.dual_objective_[0], rel=1e-7)


# ------------------------------------------------------------------ 2. Example 1: Z = the SVs
@pytest.mark.parametrize("seed,C,gamma", [(0, 1.0, 1.0), (1, 10.0, 2.0)])
def test_example1_support_vectors_are_optimal(seed, C, gamma):
    X, y01 = make_moons(n_samples=120, noise=0.3, random_state=seed)
    y = np.where(y01 == 1, 1.0, -1.0)
    svc = SVC(C=C, gamma=gamma, tol=1e-8).fit(X, y)
    Z = np.array(svc.support_vectors_)
    K_sv = rbf_kernel(Z, Z, gamma=gamma)
    c = svc.dual_coef_[0]
    dual_opt = np.abs(c).sum() - 0.5 * c @ K_sv @ c
    assert dual_opt == pytest.approx(-svc.dual_objective_[0], rel=1e-7)

    objective = SLMCObjective(X, y, ExpansionKernel("rbf", gamma, 0.0, 3, 1), _inner(y, C=C))
    ev = objective.evaluate(Z)
    assert ev.W == pytest.approx(dual_opt, rel=1e-6)
    # f = beta' psi_z + b is the SVC's own decision function: beta = its dual_coef_ (w is unique)
    np.testing.assert_allclose(rbf_kernel(X, Z, gamma=gamma) @ ev.beta + ev.b, svc.decision_function(X),
                               atol=1e-4 * np.abs(svc.decision_function(X)).max())
    # a stationary point (the global minimum: W(Z) >= the SVM's optimum for every Z) ...
    rng = np.random.default_rng(seed)
    ev_moved = objective.evaluate(Z + 0.05 * rng.standard_normal(Z.shape))
    assert ev_moved.W >= dual_opt * (1 - 1e-9)
    assert np.linalg.norm(ev.grad) <= 1e-4 * np.linalg.norm(ev_moved.grad)


# ------------------------------------------------------------------ 3. whitened empirical kernel map
@pytest.mark.parametrize("kernel", ["rbf", "poly", "laplacian"])
def test_whitened_map_orthonormalises(kernel):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 4))
    Z = rng.standard_normal((7, 4))
    Kf = sklearn_kernel(kernel, *KERNEL_PARAMS[kernel])
    Kz, Psi = Kf(Z, Z), Kf(Z, X)
    scale = jitter_scale(Kz)
    assert scale == pytest.approx(np.mean(np.diag(Kz)))
    L, eps = cholesky_jittered(Kz, scale)
    assert eps == 0.0
    np.testing.assert_allclose(L, np.tril(L))
    T = np.linalg.inv(L)
    np.testing.assert_allclose(T @ Kz @ T.T, np.eye(len(Z)), atol=1e-8)          # T K^z T' = I
    np.testing.assert_allclose(T.T @ T, np.linalg.inv(Kz), rtol=1e-7, atol=1e-8)   # (43)
    Phi = whitened_map(L, Psi)
    assert Phi.shape == (len(X), len(Z)) and Phi.flags.c_contiguous
    np.testing.assert_allclose(Phi, (T @ Psi).T, rtol=1e-9, atol=1e-12)           # (41)
    Khat = Psi.T @ np.linalg.inv(Kz) @ Psi                                         # (40)
    np.testing.assert_allclose(Phi @ Phi.T, Khat, rtol=1e-7, atol=1e-9 * np.abs(Khat).max())
    # F_z contains phi(z_j): K_hat_z(z_i, x) = K(z_i, x)
    np.testing.assert_allclose(_khat(Kf, Z, Z, X), Psi, atol=1e-8)


def test_cholesky_jitter_on_singular_kernel_matrix():
    rng = np.random.default_rng(6)
    Z = rng.standard_normal((5, 3))
    Z = np.vstack([Z, Z[:2]])  # duplicate XVs: K^z is singular
    Kz = rbf_kernel(Z, Z, gamma=0.5)
    with pytest.raises(la.LinAlgError):
        la.cholesky(Kz + 0.0 * np.eye(len(Z)), lower=True)
    scale = jitter_scale(Kz)
    L, eps = cholesky_jittered(Kz, scale)
    assert eps > 0 and any(eps == pytest.approx(j * scale, rel=1e-12) for j in _JITTERS)
    np.testing.assert_allclose(L @ L.T, Kz + eps * np.eye(len(Z)), atol=1e-12)
    # a non-positive scale falls back to 1
    assert jitter_scale(np.zeros((3, 3))) == 1.0


# ------------------------------------------------------------------ 4. the fitted model
@pytest.fixture(scope="module")
def moons_binary():
    X, y = make_moons(n_samples=200, noise=0.25, random_state=0)
    return StandardScaler().fit_transform(X), y


def test_slmc_history_and_decision_function_binary(moons_binary):
    X, y = moons_binary
    C, gamma = 1.0, 1.0
    model = _quiet_fit(SLMC(n_expansion=4, C=C, gamma=gamma, max_iter=30, inner_tol=1e-6, random_state=0), X, y)
    assert model.n_expansion_.tolist() == [4] and model.expansion_vectors_.shape == (4, 2)
    assert model.dual_coef_.shape == (1, 4) and model.intercept_.shape == (1,)
    h = model.objective_history_[0]
    assert len(h) == model.n_iter_[0] + 1 >= 3
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))   # W never increases
    assert h[-1] < 0.95 * h[0]                             # and the XVs moved somewhere much better
    # W(Z) >= the full SVM's optimum (the SLMC problem is the SVM's with one more constraint (23))
    svc = SVC(C=C, gamma=gamma, tol=1e-8).fit(X, y)
    assert h[-1] >= -svc.dual_objective_[0] * (1 - 1e-6)
    # the stored model: f(x) = sum_j beta_j K(z_j, x) + b, and it is (45) at the final Z
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    ev = SLMCObjective(X, y_pm, ExpansionKernel("rbf", gamma, 0.0, 3, 1), _inner(y_pm, C)).evaluate(
        model.expansion_vectors_)
    assert ev.W == pytest.approx(h[-1], rel=1e-4)
    np.testing.assert_allclose(model.dual_coef_[0], ev.beta, rtol=1e-3, atol=1e-3 * np.abs(ev.beta).max())
    f = rbf_kernel(X, model.expansion_vectors_, gamma=gamma) @ model.dual_coef_[0] + model.intercept_[0]
    dec = model.decision_function(X)
    assert dec.shape == (len(X),)
    np.testing.assert_allclose(dec, f, rtol=1e-8, atol=1e-8)
    np.testing.assert_array_equal(model.predict(X), model.classes_[(f > 0).astype(int)])
    assert model.score(X, y) > 0.85


def test_slmc_multiclass_one_vs_rest(iris):
    X, y = iris
    X = StandardScaler().fit_transform(X)
    model = _quiet_fit(SLMC(n_expansion=3, gamma=0.5, max_iter=15, random_state=0), X, y)
    k = len(model.classes_)
    assert k == 3
    assert model.n_expansion_.tolist() == [3, 3, 3] and model.expansion_vectors_.shape == (9, 4)
    # block-diagonal dual_coef_
    mask = np.kron(np.eye(k), np.ones((1, 3))).astype(bool)
    assert model.dual_coef_.shape == (3, 9)
    assert np.all(model.dual_coef_[~mask] == 0) and np.all(model.dual_coef_[mask] != 0)
    for h in model.objective_history_:
        assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1])) and h[-1] < h[0]
    f = rbf_kernel(X, model.expansion_vectors_, gamma=0.5) @ model.dual_coef_.T + model.intercept_
    dec = model.decision_function(X)
    assert dec.shape == (len(X), k)
    np.testing.assert_allclose(dec, f, rtol=1e-8, atol=1e-8)
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(f, axis=1)])
    assert model.score(X, y) > 0.9


def test_fraction_n_expansion_uses_reference_svc(moons_binary):
    X, y = moons_binary
    model = _quiet_fit(SLMC(n_expansion=0.1, gamma=1.0, max_iter=3, random_state=0), X, y)
    n_sv = SVC(gamma=1.0).fit(X, y).n_support_.sum()
    assert model.n_support_reference_.tolist() == [n_sv]
    assert model.n_expansion_[0] == max(1, round(0.1 * n_sv))


# ------------------------------------------------------------------ 5. the inner solve vs the primal (28)-(30)
def _primal_reference(Kz, Psi, y, C):
    """min 1/2 beta'K^z beta + C sum xi  s.t.  y_i (beta'psi_i + b) >= 1 - xi_i, xi >= 0 (28)-(30), by SLSQP."""
    n_z, n = Psi.shape

    def fun(v):
        beta, xi = v[:n_z], v[n_z + 1:]
        return 0.5 * beta @ Kz @ beta + C * xi.sum(), np.concatenate([Kz @ beta, [0.0], np.full(n, C)])

    J = np.hstack([y[:, None] * Psi.T, y[:, None], np.eye(n)])
    cons = {"type": "ineq", "fun": lambda v: J @ v - 1.0, "jac": lambda v: J}
    v0 = np.concatenate([np.zeros(n_z + 1), np.full(n, 1.0)])  # feasible: xi = 1
    res = minimize(fun, v0, jac=True, method="SLSQP", constraints=[cons],
                   bounds=[(None, None)] * (n_z + 1) + [(0.0, None)] * n, options={"ftol": 1e-10, "maxiter": 1000})
    assert res.success, res.message
    return res.fun, res.x[:n_z], res.x[n_z]


@pytest.mark.parametrize("kernel,C", [("rbf", 1.0), ("rbf", 10.0), ("poly", 1.0)])
def test_inner_solve_matches_primal_qp(kernel, C):
    X, y = _toy(n=80, seed=7)
    Z = np.random.default_rng(8).standard_normal((5, 3))
    Kf = sklearn_kernel(kernel, *KERNEL_PARAMS[kernel])
    Kz, Psi = Kf(Z, Z), Kf(Z, X)
    W_ref, beta_ref, b_ref = _primal_reference(Kz, Psi, y, C)
    ev = SLMCObjective(X, y, _kernel(kernel), _inner(y, C=C)).evaluate(Z)
    # the dual (37)-(39): feasible, and its value (44) with the dense K_hat_z
    alpha = ev.alpha
    assert np.all(alpha >= 0) and np.all(alpha <= C) and abs(alpha @ y) <= 1e-10 * C * len(y)
    a = y * alpha
    Khat = Psi.T @ np.linalg.inv(Kz) @ Psi
    assert ev.W == pytest.approx(alpha.sum() - 0.5 * a @ Khat @ a, rel=1e-8)
    assert ev.W == pytest.approx(W_ref, rel=1e-5)                      # strong duality
    np.testing.assert_allclose(ev.beta, np.linalg.solve(Kz, Psi @ a), rtol=1e-6, atol=1e-8)  # (45)
    f, f_ref = Psi.T @ ev.beta + ev.b, Psi.T @ beta_ref + b_ref
    np.testing.assert_allclose(f, f_ref, atol=1e-4 * max(1.0, np.abs(f_ref).max()))
    # optimality certificate without any reference solver: the primal value (28) of (beta, b) with
    # the smallest feasible slacks equals the dual value (37) of alpha, so both are optimal
    primal = 0.5 * ev.beta @ Kz @ ev.beta + C * np.maximum(0.0, 1.0 - y * f).sum()
    assert primal == pytest.approx(ev.W, rel=1e-7)


@pytest.mark.parametrize("C", [0.1, 1.0, 1e3])
@pytest.mark.parametrize("n,d", [(300, 3), (600, 40)])
def test_coordinate_descent_inner_solve_is_the_svm_with_a_free_bias(n, d, C):
    """The inner solver (dual coordinate descent, multiplier rounds for b) against LIBSVM's linear SVC
    to tight tolerances: the same dual optimum, the same bias, y'a = 0 and the KKT conditions at b;
    low-rank features (d = 3: many free variables) and C up to 1e3. A warm start from its own
    solution stays at the optimum; one from another problem's reaches it too."""
    rng = np.random.default_rng(n + d)
    Phi = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.sign(Phi @ rng.standard_normal(d) + 0.3 + 0.4 * rng.standard_normal(n))
    tol = 1e-8
    inner = InnerSVM(y, np.full(n, C), tol)
    alpha, b = inner.solve(Phi)
    # coordinate descent alone up to C = 1; close to hard-margin the pair SMO finishes
    assert (inner.last["status"] == 0 and inner.engine_solves == 0) or C > 1
    ref = sklearn.svm.SVC(kernel="linear", C=C, tol=1e-10).fit(Phi, y)
    a_ref = np.zeros(n)
    a_ref[ref.support_] = np.abs(ref.dual_coef_[0])

    def dual(a):
        w = Phi.T @ (y * a)
        return a.sum() - 0.5 * w @ w

    assert dual(alpha) == pytest.approx(dual(a_ref), rel=1e-8)
    assert b == pytest.approx(float(ref.intercept_[0]), abs=1e-5 * max(1.0, C))
    assert np.all(alpha >= 0) and np.all(alpha <= C) and abs(alpha @ y) <= 1e-7 * max(1.0, C)
    G = y * (Phi @ (Phi.T @ (y * alpha)) + b) - 1.0           # KKT at b: G >= 0 at 0, <= 0 at C, = 0 between
    lo, hi = alpha <= 0, alpha >= C
    # (the pair SMO reads float32 rows of Q: its gradient is exact to their rounding)
    slack = 2 * tol + (4 * 2.0**-24 * float(np.max(np.abs(Phi @ Phi.T) @ alpha)) if inner.engine_solves else 0.0)
    assert G[lo].min(initial=0) >= -slack and G[hi].max(initial=0) <= slack
    assert np.abs(G[~lo & ~hi]).max(initial=0) <= slack
    again, b_again = inner.solve(Phi)                           # warm from its own solution: moves within tol
    assert dual(again) == pytest.approx(dual(alpha), rel=1e-8) and b_again == pytest.approx(b, abs=1e-5 * max(1.0, C))
    other = rng.standard_normal((n, d)) / np.sqrt(d)
    inner.solve(other)
    back, b_back = inner.solve(Phi)                             # warm from another problem's solution
    assert dual(back) == pytest.approx(dual(a_ref), rel=1e-8 if C <= 1 else 1e-6) and b_back == pytest.approx(b, abs=1e-5 * max(1.0, C))


# ------------------------------------------------------------------ 6. sparse KFD vs the eigenproblem
@pytest.mark.parametrize("mu", [1e-3, 1e-1])
def test_kfd_matches_generalised_eigenproblem(mu):
    X, y = _toy(n=90, seed=9)
    Z = np.random.default_rng(10).standard_normal((6, 3))
    gamma = KERNEL_PARAMS["rbf"][0]
    Psi = rbf_kernel(Z, X, gamma=gamma)
    Kz = rbf_kernel(Z, Z, gamma=gamma)
    pos = y > 0
    m_pos, m_neg = Psi[:, pos].mean(axis=1), Psi[:, ~pos].mean(axis=1)
    d = m_pos - m_neg
    A = np.outer(d, d)                                  # between-class
    Cp, Cn = Psi[:, pos] - m_pos[:, None], Psi[:, ~pos] - m_neg[:, None]
    B = (Cp @ Cp.T + Cn @ Cn.T) / len(y) + mu * Kz      # within-class covariance + mu K^z
    lams, V = la.eigh(A, B)                             # (60), normalised v'Bv = 1 (61)
    lam_ref, v_ref = lams[-1], V[:, -1]
    assert lams[-2] <= 1e-8 * lam_ref                   # A^z has rank one

    ev = KFDObjective(X, y, _kernel("rbf"), mu).evaluate(Z)
    assert ev.lam == pytest.approx(lam_ref, rel=1e-8)
    assert ev.W == -ev.lam                              # (62)
    beta = ev.beta
    assert beta @ B @ beta == pytest.approx(1.0, rel=1e-8)
    sign = np.sign(beta @ v_ref)
    np.testing.assert_allclose(sign * beta, v_ref, rtol=1e-6, atol=1e-8 * np.abs(v_ref).max())
    np.testing.assert_allclose(A @ beta, ev.lam * B @ beta, atol=1e-8 * np.abs(A @ beta).max())
    assert beta @ A @ beta == pytest.approx(ev.lam, rel=1e-8)
    # the Rayleigh quotient (49) of any other direction is smaller
    for v in np.random.default_rng(11).standard_normal((20, len(Z))):
        assert (v @ A @ v) / (v @ B @ v) <= ev.lam * (1 + 1e-12)


def test_sparse_kfd_fit(moons_binary):
    X, y = moons_binary
    model = _quiet_fit(SparseKFD(n_expansion=4, gamma=1.0, max_iter=20, random_state=0), X, y)
    h = model.objective_history_[0]
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1])) and h[-1] < h[0] < 0
    # beta and b: the SVM (37)-(39) on the found Z (the appendix's last paragraph)
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    ev = SLMCObjective(X, y_pm, ExpansionKernel("rbf", 1.0, 0.0, 3, 1), _inner(y_pm)).evaluate(
        model.expansion_vectors_)
    f = rbf_kernel(X, model.expansion_vectors_, gamma=1.0) @ ev.beta + ev.b
    np.testing.assert_allclose(model.decision_function(X), f, atol=2e-3 * np.abs(f).max())
    # the KFD objective at the stored Z is the last of the history
    kfd = KFDObjective(X, y_pm, ExpansionKernel("rbf", 1.0, 0.0, 3, 1), model.mu).evaluate(model.expansion_vectors_)
    assert kfd.W == pytest.approx(h[-1], rel=1e-9)
    assert model.score(X, y) > 0.85


# ------------------------------------------------------------------ 7. estimator behaviour
def test_pickle_round_trip(moons_binary):
    X, y = moons_binary
    model = _quiet_fit(SLMC(n_expansion=5, gamma=1.0, max_iter=5, random_state=0), X, y)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))


def test_pipeline_and_grid_search():
    X, y = make_classification(n_samples=120, n_features=4, n_informative=3, n_redundant=0, random_state=0)
    X = X * np.array([1.0, 100.0, 0.01, 5.0])  # unscaled
    pipe = Pipeline([("scale", StandardScaler()),
                     ("slmc", SLMC(n_expansion=4, max_iter=5, random_state=0))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search = GridSearchCV(pipe, {"slmc__C": [0.1, 10.0]}, cv=3).fit(X, y)
    assert search.best_params_["slmc__C"] in (0.1, 10.0)
    best = search.best_estimator_
    assert best.named_steps["slmc"].C == search.best_params_["slmc__C"]
    Xs = best.named_steps["scale"].transform(X)
    np.testing.assert_array_equal(best.decision_function(X), best.named_steps["slmc"].decision_function(Xs))
    assert search.best_score_ > 0.7


@pytest.mark.parametrize("Est,kw", [(SLMC, {}), (SparseKFD, {"init": "random"}), (ReducedSVM, {"method": "mrsvm"})])
def test_csr_and_float32_same_model(Est, kw):
    X, y = make_classification(n_samples=150, n_features=6, n_informative=4, random_state=1)
    X[np.random.default_rng(0).random(X.shape) > 0.4] = 0.0
    params = dict(n_expansion=5, gamma=0.2, random_state=3, **kw)
    if Est is not ReducedSVM:
        params.update(max_iter=10, inner_tol=1e-8)
    dense = _quiet_fit(Est(**params), X, y)
    csr = _quiet_fit(Est(**params), sp.csr_matrix(X), y)
    scale = np.abs(dense.decision_function(X)).max()
    np.testing.assert_allclose(csr.expansion_vectors_, dense.expansion_vectors_, atol=1e-6)
    np.testing.assert_allclose(csr.decision_function(sp.csr_matrix(X)), dense.decision_function(X),
                               atol=1e-5 * scale)
    np.testing.assert_allclose(csr.decision_function(X), csr.decision_function(sp.csr_matrix(X)), atol=1e-10 * scale)
    # float32: accepted, and the model of the same values in float64
    X32 = X.astype(np.float32)
    m32 = _quiet_fit(Est(**params), X32, y)
    m64 = _quiet_fit(Est(**params), X32.astype(np.float64), y)
    np.testing.assert_array_equal(m32.expansion_vectors_, m64.expansion_vectors_)
    np.testing.assert_array_equal(m32.decision_function(X32), m64.decision_function(X32.astype(np.float64)))


def test_same_random_state_same_model(moons_binary):
    X, y = moons_binary
    a = _quiet_fit(SLMC(n_expansion=4, gamma=1.0, max_iter=5, random_state=7), X, y)
    b = _quiet_fit(SLMC(n_expansion=4, gamma=1.0, max_iter=5, random_state=7), X, y)
    np.testing.assert_array_equal(a.expansion_vectors_, b.expansion_vectors_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_max_iter_reached_warns(moons_binary):
    X, y = moons_binary
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        model = SLMC(n_expansion=4, gamma=1.0, max_iter=1, tol=1e-12, random_state=0).fit(X, y)
    assert not model.converged_ and model.n_iter_[0] == 1


def test_init_array_and_kmeans(moons_binary):
    X, y = moons_binary
    Z0 = X[:6] + 0.01
    model = SLMC(init=Z0, max_iter=0, gamma=1.0).fit(X, y)  # the array sets N_z; n_expansion ignored
    np.testing.assert_array_equal(model.expansion_vectors_, Z0)
    assert model.n_expansion_.tolist() == [6] and model.n_iter_[0] == 0 and len(model.objective_history_[0]) == 1
    km = SLMC(n_expansion=5, init="kmeans", max_iter=0, gamma=1.0, random_state=0).fit(X, y)
    # k-means centres: each is the mean of the training points nearest to it
    Zk = km.expansion_vectors_
    nearest = np.argmin(((X[:, None, :] - Zk[None]) ** 2).sum(-1), axis=1)
    for j in range(len(Zk)):
        np.testing.assert_allclose(Zk[j], X[nearest == j].mean(axis=0), atol=1e-6)


def test_duplicate_rows_random_init_distinct():
    """Fewer distinct rows than N_z: the random XVs are separated, K^z stays factorisable."""
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), 10, axis=0)
    y = np.repeat([0, 1, 1, 0], 10)
    model = SLMC(n_expansion=6, gamma=1.0, max_iter=0, random_state=0).fit(X, y)
    Z = model.expansion_vectors_
    assert len(np.unique(np.round(Z, 12), axis=0)) == 6
    assert np.all(np.isfinite(model.dual_coef_))


# ------------------------------------------------------------------ 8. input validation
@pytest.mark.parametrize("Est,params,match", [
    (SLMC, {"n_expansion": 0}, "The 'n_expansion' parameter of SLMC must be"),
    (SLMC, {"n_expansion": -1}, "The 'n_expansion' parameter of SLMC must be"),
    (SLMC, {"n_expansion": 0.0}, "The 'n_expansion' parameter of SLMC must be"),
    (SLMC, {"n_expansion": 1.5}, "The 'n_expansion' parameter of SLMC must be"),
    (SLMC, {"n_expansion": -0.2}, "The 'n_expansion' parameter of SLMC must be"),
    (SLMC, {"n_expansion": float("nan")}, "The 'n_expansion' parameter of SLMC must be"),
    (SLMC, {"n_expansion": True}, "The 'n_expansion' parameter of SLMC must be"),
    (SLMC, {"n_expansion": "5"}, "The 'n_expansion' parameter of SLMC must be"),
    (SLMC, {"n_expansion": 61}, "only 60 training samples"),
    (SLMC, {"kernel": "precomputed"}, "The 'kernel' parameter of SLMC must be"),
    (SLMC, {"kernel": "cosine"}, "The 'kernel' parameter of SLMC must be"),
    (SLMC, {"C": 0.0}, "The 'C' parameter of SLMC must be"),
    (SLMC, {"C": -1.0}, "The 'C' parameter of SLMC must be"),
    (SLMC, {"C": float("inf")}, "The 'C' parameter of SLMC must be"),
    (SLMC, {"tol": -1e-3}, "The 'tol' parameter of SLMC must be"),
    (SLMC, {"tol": float("nan")}, "The 'tol' parameter of SLMC must be"),
    (SLMC, {"tol": "1e-3"}, "The 'tol' parameter of SLMC must be"),
    (SparseKFD, {"tol": -1.0}, "The 'tol' parameter of SparseKFD must be"),
    (ReducedSetClassifier, {"tol": -1.0}, "The 'tol' parameter of ReducedSetClassifier must be"),
    (SLMC, {"max_iter": True}, "The 'max_iter' parameter of SLMC must be"),
    (SLMC, {"inner_tol": -1e-3}, "The 'inner_tol' parameter of SLMC must be"),
    (SLMC, {"max_iter": -1}, "The 'max_iter' parameter of SLMC must be"),
    (SLMC, {"max_iter": 2.5}, "The 'max_iter' parameter of SLMC must be"),
    (SLMC, {"gamma": -1.0}, "The 'gamma' parameter of SLMC must be"),
    (SLMC, {"init": "pca"}, "The 'init' parameter of SLMC must be"),
    (SLMC, {"init": np.zeros((3, 5))}, "init as an array"),
    (SLMC, {"init": np.zeros(4)}, "init as an array"),
    (SLMC, {"init": np.full((3, 4), np.nan)}, "init as an array"),
    (SparseKFD, {"mu": 0.0}, "The 'mu' parameter of SparseKFD must be"),
    (SparseKFD, {"mu": -1.0}, "The 'mu' parameter of SparseKFD must be"),
    (SparseKFD, {"n_expansion": 0}, "The 'n_expansion' parameter of SparseKFD must be"),
    (ReducedSetClassifier, {"method": "rsvm"}, "The 'method' parameter of ReducedSetClassifier must be"),
    (ReducedSetClassifier, {"n_init": 0}, "The 'n_init' parameter of ReducedSetClassifier must be"),
    (ReducedSetClassifier, {"n_init": 1.5}, "The 'n_init' parameter of ReducedSetClassifier must be"),
    (ReducedSVM, {"method": "rs"}, "The 'method' parameter of ReducedSVM must be"),
    (ReducedSVM, {"Cs": []}, "Cs must be a non-empty sequence of positive floats"),
    (ReducedSVM, {"Cs": [1.0, -1.0]}, "Cs must be a non-empty sequence of positive floats"),
    (ReducedSVM, {"Cs": [[1.0]]}, "Cs must be a non-empty sequence of positive floats"),
    (ReducedSVM, {"Cs": "1.0"}, "The 'Cs' parameter of ReducedSVM must be"),
    (ReducedSVM, {"cv": 1}, "The 'cv' parameter of ReducedSVM must be"),
    (ReducedSVM, {"cv": 2.0}, "The 'cv' parameter of ReducedSVM must be"),
])
def test_invalid_parameters(Est, params, match):
    X, y = _toy(n=60, d=4, seed=12)
    params = {"n_expansion": 3, **params}
    with pytest.raises(ValueError, match=match):
        Est(**params).fit(X, y)


@pytest.mark.parametrize("Est", [SLMC, SparseKFD, ReducedSetClassifier, ReducedSVM])
def test_invalid_data(Est):
    X, y = _toy(n=60, d=4, seed=12)
    with pytest.raises(ValueError, match="class"):
        Est(n_expansion=3).fit(X, np.ones(len(y)))
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb[3, 1] = bad
        with pytest.raises(ValueError, match="NaN|infinity"):
            Est(n_expansion=3).fit(Xb, y)
    model = _quiet_fit(Est(n_expansion=3, **({} if Est is ReducedSVM else {"max_iter": 1})), X, y)
    with pytest.raises(ValueError, match="features"):
        model.decision_function(X[:, :3])
    Xb = X.copy()
    Xb[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.predict(Xb)


# ------------------------------------------------------------------ 9. the baselines (sections 4.1-4.2)
@pytest.fixture(scope="module")
def rs_models(moons_binary):
    X, y = moons_binary
    kw = dict(n_expansion=5, C=1.0, gamma=1.0, n_init=2, max_iter=50, random_state=0)
    rs = _quiet_fit(ReducedSetClassifier(method="rs", **kw), X, y)
    mrs = _quiet_fit(ReducedSetClassifier(method="mrs", **kw), X, y)
    return rs, mrs


def test_reduced_set_objective_4(moons_binary, rs_models):
    X, y = moons_binary
    rs, mrs = rs_models
    svc = SVC(C=1.0, gamma=1.0).fit(X, y)  # the reference SVC, fitted as the estimator does
    a, S = svc.dual_coef_[0], np.asarray(svc.support_vectors_)
    Z, beta = rs.expansion_vectors_, rs.dual_coef_[0]
    assert rs.n_support_reference_.tolist() == [len(S)]
    # beta (47) = (K^z)^-1 K^zx Y alpha: the best beta for this Z
    Kz, Kzs = rbf_kernel(Z, Z, gamma=1.0), rbf_kernel(Z, S, gamma=1.0)
    np.testing.assert_allclose(beta, np.linalg.solve(Kz, Kzs @ a), rtol=1e-6, atol=1e-8)
    # (4): ||w - sum_j beta_j phi(z_j)||^2 densely
    dist2 = a @ rbf_kernel(S, S, gamma=1.0) @ a - 2.0 * a @ Kzs.T @ beta + beta @ Kz @ beta
    h = rs.objective_history_[0]
    assert h[-1] == pytest.approx(dist2, rel=1e-6, abs=1e-10)
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1])) and h[-1] < h[0]
    assert 0 <= h[-1] < a @ rbf_kernel(S, S, gamma=1.0) @ a   # better than beta = 0
    # 'rs' keeps the SVC's bias; 'mrs' the same XVs (same draws) with beta, b by (37)-(39)
    assert rs.intercept_[0] == svc.intercept_[0]
    np.testing.assert_array_equal(mrs.expansion_vectors_, Z)
    f = rbf_kernel(X, Z, gamma=1.0) @ beta + rs.intercept_[0]
    np.testing.assert_allclose(rs.decision_function(X), f, rtol=1e-8, atol=1e-8)


def test_mrs_equals_slmc_without_iterations(moons_binary, rs_models):
    X, y = moons_binary
    _, mrs = rs_models
    slmc = SLMC(init=mrs.expansion_vectors_, max_iter=0, C=1.0, gamma=1.0).fit(X, y)
    np.testing.assert_array_equal(slmc.expansion_vectors_, mrs.expansion_vectors_)
    np.testing.assert_allclose(mrs.dual_coef_, slmc.dual_coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(mrs.intercept_, slmc.intercept_, rtol=1e-6, atol=1e-8)


def test_reduced_svm_baselines(moons_binary):
    X, y = moons_binary
    kw = dict(n_expansion=6, C=1.0, gamma=1.0, random_state=5)
    Cs = [0.1, 1.0, 100.0]
    rsvm = ReducedSVM(method="rsvm", Cs=Cs, cv=3, inner_tol=1e-8, **kw).fit(X, y)
    mrsvm = ReducedSVM(method="mrsvm", **kw).fit(X, y)
    slmc0 = SLMC(init="random", max_iter=0, **kw).fit(X, y)
    Z = slmc0.expansion_vectors_
    # the same random XVs, distinct training points
    np.testing.assert_array_equal(rsvm.expansion_vectors_, Z)
    np.testing.assert_array_equal(mrsvm.expansion_vectors_, Z)
    assert all(np.any(np.all(X == z, axis=1)) for z in Z) and len(np.unique(Z, axis=0)) == len(Z)
    # MRSVM = SLMC with max_iter = 0
    np.testing.assert_allclose(mrsvm.dual_coef_, slmc0.dual_coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(mrsvm.intercept_, slmc0.intercept_, rtol=1e-6, atol=1e-8)
    assert mrsvm.C_selected_.tolist() == [1.0]
    # RSVM: a linear SVM on the empirical kernel map psi_z(x), with C from the grid
    assert rsvm.C_selected_[0] in Cs
    Psi_T = rbf_kernel(X, Z, gamma=1.0)
    lin = SVC(kernel="linear", C=float(rsvm.C_selected_[0]), tol=1e-10).fit(Psi_T, y)
    np.testing.assert_allclose(rsvm.decision_function(X), lin.decision_function(Psi_T),
                               atol=1e-4 * np.abs(lin.decision_function(Psi_T)).max())
    # its beta is the linear SVM's w, not (45): the two classifiers differ
    assert np.abs(rsvm.dual_coef_ - mrsvm.dual_coef_).max() > 1e-3


def test_reduced_set_keeps_the_best_start(moons_binary, rs_models):
    """n_init starts draw the same XVs in the same order whatever n_init: the fit with two starts keeps
    the better of the first two (here the second: the model differs from the one-start fit)."""
    X, y = moons_binary
    rs, _ = rs_models
    one = _quiet_fit(ReducedSetClassifier(method="rs", n_expansion=5, C=1.0, gamma=1.0, n_init=1, max_iter=50,
                                          random_state=0), X, y)
    assert rs.objective_history_[0][-1] < one.objective_history_[0][-1]
    assert not np.array_equal(rs.expansion_vectors_, one.expansion_vectors_)


# ------------------------------------------------------------------ 10. the stopping rule of the L-BFGS over Z
def _synthetic(n_classes):
    if n_classes == 2:
        return make_classification(n_samples=300, n_features=8, n_informative=5, random_state=0)
    return make_classification(n_samples=500, n_features=10, n_informative=6, n_classes=3, random_state=1)


_DEFAULT_SETS = {"breast_cancer": lambda: load_breast_cancer(return_X_y=True),
                 "digits": lambda: load_digits(return_X_y=True),
                 "synthetic-2": lambda: _synthetic(2), "synthetic-3": lambda: _synthetic(3)}


@pytest.mark.parametrize("Est", [SLMC, SparseKFD])
@pytest.mark.parametrize("data", sorted(_DEFAULT_SETS))
def test_defaults_converge_without_warning(data, Est):
    """At its defaults inside make_pipeline(StandardScaler(), ...) every problem stops by the rule,
    before max_iter: no ConvergenceWarning. (With max_iter=100 and scipy's one-iteration rule
    before, every one of these fits ran out of iterations.)"""
    X, y = _DEFAULT_SETS[data]()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        pipe = make_pipeline(StandardScaler(), Est(random_state=0)).fit(X, y)
    model = pipe[-1]
    assert model.converged_
    assert np.all(model.n_iter_ < model.max_iter), model.n_iter_
    for h, n in zip(model.objective_history_, model.n_iter_):
        assert len(h) == n + 1 and h[-1] < h[0]
    assert pipe.score(X, y) >= 0.9


@pytest.mark.parametrize("Est", [SLMC, SparseKFD])
def test_stop_is_the_first_iteration_the_rule_holds(Est):
    """The stop k is the first iteration with W(k - WINDOW) - W(k) < tol |W(k)|, as the docstrings
    say; the docstrings give the window's length."""
    X, y = _synthetic(2)
    X = StandardScaler().fit_transform(X)
    model = Est(random_state=0, n_jobs=1).fit(X, y)
    h, n, tol = model.objective_history_[0], int(model.n_iter_[0]), model.tol
    holds = [h[k - WINDOW] - h[k] < tol * abs(h[k]) for k in range(WINDOW, n + 1)]
    assert holds[-1] and not any(holds[:-1])
    assert model.converged_ and n > WINDOW
    assert f"over the last {WINDOW} iterations" in " ".join(Est.__doc__.split())


@pytest.mark.parametrize("Est", [SLMC, SparseKFD])
def test_tol_only_truncates_the_path(Est):
    """tol decides where the L-BFGS path ends, not the path: a run with the rule off (tol=0) for more
    iterations passes through the same W values, and stopped at the same iteration gives the same
    model (then as not converged). Going on for another WINDOW iterations lowers W by less than
    tol |W|: in L-BFGS's linear-convergence regime the decreases of successive windows shrink. W
    never rises over the accepted iterates beyond the inner solve's accuracy."""
    X, y = _synthetic(2)
    X = StandardScaler().fit_transform(X)
    model = Est(random_state=0, n_jobs=1).fit(X, y)
    h, n, tol = model.objective_history_[0], int(model.n_iter_[0]), model.tol
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        longer = Est(random_state=0, n_jobs=1, tol=0, max_iter=n + WINDOW).fit(X, y)
        same = Est(random_state=0, n_jobs=1, tol=0.0, max_iter=n).fit(X, y)
    h_long = longer.objective_history_[0]
    assert len(h_long) == n + WINDOW + 1
    np.testing.assert_array_equal(h_long[:n + 1], h)
    np.testing.assert_array_equal(same.expansion_vectors_, model.expansion_vectors_)
    np.testing.assert_array_equal(same.dual_coef_, model.dual_coef_)
    assert not same.converged_ and model.converged_
    assert 0 <= h[-1] - h_long[-1] < tol * abs(h[-1])
    assert np.all(np.diff(h_long) <= 1e-6 * np.abs(h_long[1:]))


@pytest.mark.parametrize("Est", [SLMC, SparseKFD])
def test_tol_zero_runs_to_max_iter_and_warns(Est, moons_binary):
    X, y = moons_binary
    with pytest.warns(ConvergenceWarning, match="max_iter") as record:
        model = Est(n_expansion=4, gamma=1.0, tol=0, max_iter=25, random_state=0).fit(X, y)
    assert model.n_iter_.tolist() == [25] and len(model.objective_history_[0]) == 26 and not model.converged_
    message = str(record[0].message)
    assert f"over {WINDOW} iterations" in message and "tol=0" in message
    assert not re.search(r"\(\d+\)", message)  # words, no equation numbers


def test_smaller_tol_runs_longer_to_a_lower_W(moons_binary):
    """Along one path, a smaller tol can only stop later, at a W no higher."""
    X, y = moons_binary
    runs = [SLMC(n_expansion=4, gamma=1.0, tol=tol, random_state=0, n_jobs=1).fit(X, y) for tol in (3e-2, 3e-3, 3e-4)]
    n = [int(m.n_iter_[0]) for m in runs]
    W = [m.objective_history_[0][-1] for m in runs]
    assert n[0] <= n[1] <= n[2] and n[0] < n[2]
    assert W[0] >= W[1] >= W[2]
    longest = runs[2].objective_history_[0]
    for m in runs[:2]:  # the shorter histories are prefixes of the longest
        np.testing.assert_array_equal(m.objective_history_[0], longest[:len(m.objective_history_[0])])


# ------------------------------------------------------------------ 11. the size at the defaults and the budget
def test_auto_expansion_is_a_tenth_of_the_svs_at_most_sqrt_n():
    """n_expansion='auto': min(floor(N_SV / 10), ceil(sqrt(N))) per problem (at most a tenth of the
    support vectors), N_SV of the reference SVC (n_support_reference_); each bound binds on one of
    two sets."""
    from sparsekernel.slmc import AUTO_SV_SHARE

    easy_X, easy_y = make_classification(n_samples=400, n_features=5, class_sep=2.5, flip_y=0.0, random_state=0)
    hard_X, hard_y = make_classification(n_samples=900, n_features=5, class_sep=0.3, flip_y=0.2, random_state=0)
    seen = set()
    for X, y in ((easy_X, easy_y), (hard_X, hard_y)):
        X = StandardScaler().fit_transform(X)
        for Est in (SLMC, SparseKFD):
            m = Est(max_iter=2, random_state=0).fit(X, y)
            n_sv = int(m.n_support_reference_[0])
            by_sv, by_n = int(np.floor(AUTO_SV_SHARE * n_sv)), int(np.ceil(np.sqrt(len(y))))
            assert m.n_expansion_.tolist() == [max(1, min(by_sv, by_n))]
            assert m.n_expansion_[0] <= max(1, AUTO_SV_SHARE * n_sv)
            seen.add(by_sv < by_n)
    assert seen == {True, False}


def test_budget_as_a_number_caps_the_expansion(moons_binary, iris):
    X, y = moons_binary
    assert SLMC(budget=3, max_iter=2, random_state=0).fit(X, y).n_expansion_.tolist() == [3]
    assert SparseKFD(20, budget=5, max_iter=2, random_state=0).fit(X, y).n_expansion_.tolist() == [5]
    assert SLMC(4, budget=50, max_iter=2, random_state=0).fit(X, y).n_expansion_.tolist() == [4]
    Xi, yi = iris
    model = SLMC(5, budget=2, max_iter=2, random_state=0).fit(StandardScaler().fit_transform(Xi), yi)
    assert model.n_expansion_.tolist() == [2, 2, 2] and model.prediction_cost_ > 0


def test_latency_budget_solves_the_measured_cost_line(moons_binary, monkeypatch):
    """A latency budget: predict's cost is measured at two sizes (stand-in models of training rows,
    the estimator's own predict), fitted as a + b n_z, and solved for the budget. With the timing
    replaced by a known line the cap is exact; the stand-ins have the fitted model's shape."""
    import sparsekernel._budget as B

    X, y = moons_binary
    sizes = []

    def fake_cost(model, rows):
        n_z = model.dual_coef_.shape[1] // model.dual_coef_.shape[0]
        assert model.expansion_vectors_.shape == (n_z * model.dual_coef_.shape[0], X.shape[1])
        assert model.predict(rows[:5]).shape == (5,)   # a model predict works with
        sizes.append(n_z)
        return 1e-6 + 2e-8 * n_z                       # 1 us + 20 ns per vector

    monkeypatch.setattr(B, "prediction_cost", fake_cost)
    monkeypatch.setattr(sparsekernel.slmc, "prediction_cost", lambda model, rows: 0.0)
    model = SLMC(30, budget="1.5us", max_iter=2, random_state=0).fit(X, y)
    assert sizes[:2] == [16, min(256, len(X))]
    assert model.n_expansion_.tolist() == [25]         # (1.5 - 1) us / 20 ns
    assert SLMC(30, budget="0.5us", max_iter=2, random_state=0).fit(X, y).n_expansion_.tolist() == [1]
    assert SLMC(30, budget="1ms", max_iter=2, random_state=0).fit(X, y).n_expansion_.tolist() == [30]


@pytest.mark.parametrize("budget", [0, -3, True, "fast", "20", "-1us", "0us", 2.5, [5]])
def test_bad_budget_is_a_value_error(budget, moons_binary):
    X, y = moons_binary
    with pytest.raises(ValueError, match="budget"):
        SLMC(budget=budget).fit(X, y)
