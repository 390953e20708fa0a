"""The compact-basis route of KLR / S-KLR (solver='nystrom', src/sparsekernel/_compact.py):
agreement with the exact SMO route at M = N, the Newton stationarity condition, gradients against
finite differences, float32 against float64 storage, the basis rules and input checks."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.datasets import load_iris, make_classification
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsekernel import KernelLogisticRegression, SparseKernelLogisticRegression
from sparsekernel._base import KernelEvaluator
from sparsekernel._compact import CompactFit, CompactProblem, DesignMatrix, fit_compact, ivm_scores


def _data(n=240, d=5, seed=0, classes=2):
    X, y = make_classification(n, d, n_informative=min(d, 4), n_redundant=0, n_classes=classes,
                               random_state=seed)
    return X, y


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("lam", [0.0, 1.5])
def test_full_basis_equals_exact_klr(classes, lam):
    """M = N with the training set as basis: (P_M) is the KLR primal, so the compact fit must reach
    the SMO route's objective (1e-6 relative) and probabilities (1e-4)."""
    X, y = _data(classes=classes)
    kw = dict(C=3.0, gamma=0.3, random_state=0)
    Est = SparseKernelLogisticRegression if lam else KernelLogisticRegression
    extra = {"lam": lam} if lam else {}
    exact = Est(solver="smo", tol=1e-7, **kw, **extra).fit(X, y)
    compact = Est(solver="nystrom", n_components=len(y), basis="uniform", tol=1e-8, **kw, **extra).fit(X, y)
    assert compact.solver_ == "nystrom" and exact.solver_ == "smo"
    assert compact.n_expansion_ == len(y)
    np.testing.assert_allclose(compact.objective_, exact.objective_, rtol=1e-6)
    np.testing.assert_allclose(compact.predict_proba(X), exact.predict_proba(X), atol=1e-4)
    np.testing.assert_array_equal(compact.predict(X), exact.predict(X))


def test_newton_solution_is_stationary():
    """At the returned (beta, b) the primal gradient g = [K_ZZ beta + K_XZ' r, sum r] (computed here
    from dense matrices) is zero to the solver's tolerance: g'H^-1 g / 2 <= 1e-3 tol J."""
    X, y = _data(n=300)
    C, gamma, tol = 2.0, 0.4, 1e-4
    m = KernelLogisticRegression(C=C, gamma=gamma, solver="nystrom", n_components=60, tol=tol,
                                 random_state=1).fit(X, y)
    Z = m.support_vectors_
    np.testing.assert_array_equal(Z, X[m.support_])
    Kxz, Kzz = rbf_kernel(X, Z, gamma=gamma), rbf_kernel(Z, Z, gamma=gamma)
    beta, b = m.dual_coef_[0], m.intercept_[0]
    yy = np.where(y == m.classes_[1], 1.0, -1.0)
    f = Kxz @ beta + b
    s = expit(-yy * f)
    r = -C * yy * s
    g = np.concatenate([Kzz @ beta + Kxz.T @ r, [r.sum()]])
    A = np.column_stack([Kxz, np.ones(len(y))])
    R = np.zeros((61, 61))
    R[:60, :60] = Kzz
    H = R + A.T @ (A * (C * s * (1 - s))[:, None])
    J = 0.5 * beta @ Kzz @ beta + C * np.logaddexp(0, -yy * f).sum()
    np.testing.assert_allclose(J, m.objective_, rtol=1e-7)  # float32 block at tol 1e-4
    dec = g @ np.linalg.lstsq(H, g, rcond=None)[0]
    assert 0.5 * dec <= 1e-3 * tol * J
    # and far from the optimum (beta = 0) the same measure is large: the check can fail
    g0 = np.concatenate([Kxz.T @ (-C * yy * expit(-yy * b)), [(-C * yy * expit(-yy * b)).sum()]])
    assert 0.5 * g0 @ np.linalg.lstsq(H, g0, rcond=None)[0] > 1e3 * 1e-3 * tol * J


def test_gradient_and_hessian_against_finite_differences():
    rng = np.random.default_rng(0)
    X, y = _data(n=80)
    yy = np.where(y == 1, 1.0, -1.0)
    Z = X[:12]
    K, Kzz = rbf_kernel(X, Z, gamma=0.5), rbf_kernel(Z, Z, gamma=0.5)
    Ci = rng.uniform(0.5, 2.0, len(y))
    prob = CompactProblem(DesignMatrix(K), Kzz, yy, Ci, lam=0.7)
    w = rng.normal(size=13) * 0.3
    J, s, Rw = prob.objective(w, prob.A.matvec(w))
    g = prob.gradient(Rw, s)
    h = 1e-6
    fd = np.array([(prob.objective(w + h * e, prob.A.matvec(w + h * e))[0]
                    - prob.objective(w - h * e, prob.A.matvec(w - h * e))[0]) / (2 * h) for e in np.eye(13)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    v = rng.normal(size=13)
    _, s_p, Rw_p = prob.objective(w + h * v, prob.A.matvec(w + h * v))
    _, s_m, Rw_m = prob.objective(w - h * v, prob.A.matvec(w - h * v))
    fd_hv = (prob.gradient(Rw_p, s_p) - prob.gradient(Rw_m, s_m)) / (2 * h)
    np.testing.assert_allclose(prob.hessvec(v, prob.curvature(s)), fd_hv, rtol=1e-5, atol=1e-6)


def test_design_matrix_products_equal_the_explicit_matrix():
    """A = [K[:, cols], 1] as the products see it, without the column of ones or the selection
    being stored: float64 exactly, float32 storage (a strided view of a wider block, as the growing
    basis holds it) to its precision, with rows split over several row blocks."""
    rng = np.random.default_rng(1)
    K = rng.random((700, 9))
    cols = np.array([0, 2, 3, 7])
    A = np.hstack([K[:, cols], np.ones((700, 1))])
    w, r, D = rng.normal(size=5), rng.normal(size=700), rng.random(700)
    wide = np.zeros((700, 12), dtype=np.float32)
    wide[:, :9] = K
    for design, tol in ((DesignMatrix(K, cols), 1e-12), (DesignMatrix(wide[:, :9], cols), 1e-5)):
        design.step = 64  # several row blocks
        assert design.shape == (700, 5)
        np.testing.assert_allclose(design.matvec(w), A @ w, rtol=tol, atol=tol)
        np.testing.assert_allclose(design.rmatvec(r), r @ A, rtol=tol, atol=tol)
        np.testing.assert_allclose(design.hessvec(w, D), A.T @ (D * (A @ w)), rtol=tol, atol=tol)
        np.testing.assert_allclose(design.rows(np.array([3, 650])), A[[3, 650]], rtol=tol, atol=tol)


def test_fill_writes_the_block_in_place_and_captures_exact_rows():
    """CompactFit.fill: K(X, X[idx]) written into a float32 block's columns row chunk by row chunk,
    and the exact float64 rows asked for (in the order asked)."""
    X, y = _data(n=300)
    fit = CompactFit(X, [np.where(y == 1, 1.0, -1.0)], np.ones(300), 0.0, KernelEvaluator("rbf", 0.3, 0.0, 3, 1),
                     tol=1e-3, max_iter=10, budget_mb=1, rng=np.random.RandomState(0))
    out = np.zeros((300, 20), dtype=np.float32)
    idx, capture = np.array([5, 17, 250]), np.array([250, 0, 17, 299])
    got = fit.fill(out, 4, idx=idx, capture=capture)
    ref = rbf_kernel(X, X[idx], gamma=0.3)
    np.testing.assert_allclose(out[:, 4:7], ref, rtol=1e-6)
    assert not out[:, :4].any() and not out[:, 7:].any()
    np.testing.assert_allclose(got, ref[capture], rtol=1e-12)


def test_float32_storage_agrees_with_float64():
    X, y = _data(n=400)
    kw = dict(C=5.0, gamma=0.2, solver="nystrom", n_components=80, random_state=3)
    m32 = KernelLogisticRegression(tol=1e-3, **kw).fit(X, y)     # tol >= 1e-4: float32 block
    m64 = KernelLogisticRegression(tol=1e-5, **kw).fit(X, y)     # float64
    np.testing.assert_array_equal(m32.support_, m64.support_)
    np.testing.assert_allclose(m32.objective_, m64.objective_, rtol=1e-6)
    np.testing.assert_allclose(m32.predict_proba(X), m64.predict_proba(X), atol=1e-4)


def test_storage_dtype_rule():
    X, y = _data(n=100)
    yy = np.where(y == 1, 1.0, -1.0)
    ev = KernelEvaluator("rbf", 0.5, 0.0, 3, 1)
    fit = CompactFit(X, [yy], np.ones(100), 0.0, ev, tol=1e-3, max_iter=0, budget_mb=1, rng=np.random.RandomState(0))
    assert fit.storage_dtype(50) == np.float32
    fit.tol = 1e-6
    assert fit.storage_dtype(50) == np.float64
    with pytest.raises(ValueError, match="cache_size"):
        fit.storage_dtype(10**5)


@pytest.mark.parametrize("basis", ["uniform", "kmeans", "ivm"])
def test_bases_fit_and_predict(basis):
    X, y = load_iris(return_X_y=True)
    m = KernelLogisticRegression(C=10.0, solver="nystrom", n_components=20, basis=basis, random_state=0).fit(X, y)
    assert m.n_expansion_ == 20 and m.dual_coef_.shape == (3, 20)
    P = m.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(m.predict(X), m.classes_[P.argmax(axis=1)])
    assert m.score(X, y) > 0.9
    if basis == "kmeans":
        assert len(m.support_) == 0 and m.support_vectors_.shape == (20, 4)
    else:
        np.testing.assert_array_equal(m.support_vectors_, X[m.support_])
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m2.predict_proba(X), P)


def test_ivm_scores_are_one_coordinate_newton_decreases():
    """The import score of a candidate equals the decrease of J from one Newton step on its own
    coefficient (J is quadratic-plus-logistic: the step's true decrease matches to second order)."""
    X, y = _data(n=150)
    yy = np.where(y == 1, 1.0, -1.0)
    ev = KernelEvaluator("rbf", 0.5, 0.0, 3, 1)
    Ci = np.full(150, 2.0)
    fit = CompactFit(X, [yy], Ci, 0.0, ev, tol=1e-8, max_iter=0, budget_mb=100, rng=np.random.RandomState(0))
    idx = np.arange(10)
    K = fit.columns(idx)
    (st,) = fit.solve_all(K, K[idx])
    pool = np.arange(10, 20)
    Kc = fit.columns(pool)
    score = ivm_scores(fit, idx, pool, Kc, [st])
    for c in range(len(pool)):
        cols = np.concatenate([idx, pool[c:c + 1]])
        Kx = np.column_stack([K, Kc[:, c]])
        prob = CompactProblem(DesignMatrix(Kx), Kx[cols], yy, Ci, 0.0)
        w0 = np.concatenate([st["w"][:-1], [0.0], st["w"][-1:]])
        J0, s, Rw = prob.objective(w0, prob.A.matvec(w0))
        g = prob.gradient(Rw, s)[10]
        e = np.zeros(12)
        e[10] = 1.0
        curv = prob.hessvec(e, prob.curvature(s))[10]
        np.testing.assert_allclose(score[c], g * g / (2 * curv), rtol=1e-8)
        J1 = prob.objective(w0 - g / curv * e, prob.A.matvec(w0 - g / curv * e))[0]
        assert J0 - J1 == pytest.approx(score[c], rel=0.2, abs=1e-9)


def test_ivm_beats_uniform_at_equal_size():
    X, y = _data(n=600, d=8, seed=4)
    kw = dict(C=10.0, gamma=0.3, solver="nystrom", n_components=40, random_state=0)
    uni = KernelLogisticRegression(basis="uniform", **kw).fit(X, y)
    ivm = KernelLogisticRegression(basis="ivm", **kw).fit(X, y)
    assert ivm.objective_ < uni.objective_


def test_refined_basis_lowers_objective_and_envelope_gradient():
    X, y = _data(n=200)
    kw = dict(C=2.0, gamma=0.3, solver="nystrom", n_components=8, basis="kmeans", random_state=0)
    base = KernelLogisticRegression(**kw).fit(X, y)
    refined = KernelLogisticRegression(refine_basis=15, **kw).fit(X, y)
    assert refined.objective_ < base.objective_ - 1e-3 * abs(base.objective_)
    assert len(refined.support_) == 0
    # the envelope gradient against finite differences of J(Z) = min_beta J
    yy = np.where(y == 1, 1.0, -1.0)
    ev = KernelEvaluator("rbf", 0.3, 0.0, 3, 1)
    fit = CompactFit(X, [yy], np.full(200, 2.0), 0.0, ev, tol=1e-10, max_iter=0, budget_mb=100,
                     rng=np.random.RandomState(0))
    from sparsekernel._compact import kernel_gradient

    Z = base.support_vectors_.copy()

    def J_of(Zc):
        return fit.solve_all(fit.block(Zc), fit.gram(Zc))[0]

    st = J_of(Z)
    beta = st["w"][:-1]
    r = -2.0 * yy * expit(-yy * st["f"])
    G = kernel_gradient("rbf", 0.3, 0.0, 3, Z, X, fit.block(Z).T, np.outer(beta, r)) + \
        kernel_gradient("rbf", 0.3, 0.0, 3, Z, Z, fit.gram(Z), np.outer(beta, beta))
    h = 1e-5
    for u, v in [(0, 0), (3, 2), (7, 4)]:
        Zp, Zm = Z.copy(), Z.copy()
        Zp[u, v] += h
        Zm[u, v] -= h
        fd = (J_of(Zp)["objective"] - J_of(Zm)["objective"]) / (2 * h)
        assert G[u, v] == pytest.approx(fd, rel=1e-4, abs=1e-6)


def test_auto_components_grows_until_the_objective_settles():
    X, y = _data(n=1200, d=10, seed=2)
    kw = dict(C=10.0, gamma=0.5, solver="nystrom", random_state=0)
    m = KernelLogisticRegression(**kw).fit(X, y)
    assert m.n_expansion_ > 256  # a hard problem: the first doubling still pays
    small = KernelLogisticRegression(n_components=256, **kw).fit(X, y)
    assert m.objective_ < 0.99 * small.objective_
    # an easy one (a smooth boundary, wide kernel): the first doubling gains < 1 %, growth stops at 512
    easy = KernelLogisticRegression(C=1.0, gamma=0.01, solver="nystrom", random_state=0).fit(X, y)
    assert easy.n_expansion_ == 512


def test_sparse_input_and_precomputed():
    X, y = _data(n=200)
    kw = dict(C=1.0, gamma=0.5, solver="nystrom", n_components=30, random_state=0)
    dense = KernelLogisticRegression(**kw).fit(X, y)
    csr = KernelLogisticRegression(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(csr.objective_, dense.objective_, rtol=1e-8)
    np.testing.assert_allclose(csr.predict_proba(sp.csr_matrix(X)), dense.predict_proba(X), atol=1e-7)
    K = rbf_kernel(X, gamma=0.5)
    pre = KernelLogisticRegression(kernel="precomputed", **{k: v for k, v in kw.items() if k != "gamma"}).fit(K, y)
    np.testing.assert_allclose(pre.objective_, dense.objective_, rtol=1e-6)
    np.testing.assert_allclose(pre.predict_proba(K), dense.predict_proba(X), atol=1e-5)
    with pytest.raises(ValueError, match="kmeans"):
        KernelLogisticRegression(kernel="precomputed", solver="nystrom", basis="kmeans").fit(K, y)


def test_auto_solver_routes_by_size(monkeypatch):
    import sparsekernel.klr as klr

    X, y = _data(n=300)
    assert KernelLogisticRegression().fit(X, y).solver_ == "smo"
    monkeypatch.setattr(klr, "AUTO_SMO_MAX", 100)
    assert KernelLogisticRegression(n_components=50).fit(X, y).solver_ == "nystrom"


@pytest.mark.parametrize("params, match", [
    ({"solver": "newton"}, "solver"), ({"n_components": 0}, "n_components"), ({"n_components": 2.5}, "n_components"),
    ({"basis": "random"}, "basis"), ({"refine_basis": -1}, "refine_basis"),
    ({"solver": "nystrom", "refine_basis": 2, "kernel": "laplacian", "basis": "kmeans", "n_components": 5}, None),
    ({"solver": "nystrom", "n_components": 150, "cache_size": 0.01}, "cache_size"),
])
def test_bad_parameters(params, match):
    X, y = _data(n=150)
    est = KernelLogisticRegression(**params)
    if match is None:  # laplacian has a gradient: refinement runs
        est.fit(X, y)
        return
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


def test_time_limit_and_max_iter_stop_the_newton_loop():
    from sklearn.exceptions import ConvergenceWarning

    X, y = _data(n=400)
    with pytest.warns(ConvergenceWarning):
        m = KernelLogisticRegression(C=100.0, solver="nystrom", n_components=100, max_iter=1).fit(X, y)
    assert not m.converged_ and np.all(np.isfinite(m.predict_proba(X)))


_RANDOM_BASIS = "the basis is a random sample of the rows (or k-means centres): repeating a row changes it"


@parametrize_with_checks([KernelLogisticRegression(solver="nystrom", n_components=20),
                          SparseKernelLogisticRegression(solver="nystrom", n_components=20, basis="kmeans")],
                         expected_failed_checks=lambda est: {
                             "check_sample_weight_equivalence_on_dense_data": _RANDOM_BASIS,
                             "check_sample_weight_equivalence_on_sparse_data": _RANDOM_BASIS})
def test_compact_route_sklearn_compatible(estimator, check):
    check(estimator)


def test_exact_route_starts_from_the_compact_fit_when_rows_cannot_stay_cached():
    """solver='smo' with a cache below N^2 float32 entries starts from dual_start(f) of a compact
    fit: the same optimum (objective to 1e-6) in fewer SMO steps than the class-constant start."""
    X, y = _data(n=1500, d=8)
    small = KernelLogisticRegression(solver="smo", cache_size=5, tol=1e-4, random_state=0).fit(X, y)
    big = KernelLogisticRegression(solver="smo", cache_size=100, tol=1e-4).fit(X, y)
    np.testing.assert_allclose(small.objective_, big.objective_, rtol=1e-6)
    assert small.n_iter_[0] < 0.7 * big.n_iter_[0]


def test_dual_start_is_feasible_and_exact_at_the_optimum():
    from sparsekernel.klr import dual_start

    rng = np.random.default_rng(0)
    y = np.where(rng.random(200) < 0.3, 1.0, -1.0)
    Ci = rng.uniform(0.5, 2.0, 200)
    lo, hi = np.full(200, 1e-5), Ci - 1e-5
    a = dual_start(rng.normal(size=200) * 3, y, Ci, 0.5, lo, hi)
    assert np.all(a >= lo) and np.all(a <= hi)
    assert abs(y @ a) < 1e-10 * Ci.sum()
    # at the exact KLR optimum, f gives back the optimal a
    X, yl = _data(n=200)
    m = KernelLogisticRegression(solver="smo", tol=1e-8, C=2.0).fit(X, yl)
    yy = np.where(yl == m.classes_[1], 1.0, -1.0)
    a_opt = np.zeros(200)
    a_opt[m.support_] = m.dual_coef_[0] * yy[m.support_]
    a0 = dual_start(m.decision_function(X), yy, np.full(200, 2.0), 0.0, np.full(200, m.bound_[0]),
                    np.full(200, 2.0 - m.bound_[0]))
    np.testing.assert_allclose(a0[m.support_], a_opt[m.support_], rtol=1e-4, atol=1e-6)


def test_compact_route_inside_a_pipeline_reports_each_problem_once():
    """In a Pipeline (scikit-learn >= 1.9 hands the step a callback context with one sub-task per
    binary problem) the compact route, which solves each problem again at every basis size, fitted
    with a ValueError ("maximum number of children"); it now reports one task per problem and fits
    the model of the bare estimator."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(n_samples=1500, n_features=8, n_informative=5, random_state=0)
    pipe = make_pipeline(StandardScaler(), KernelLogisticRegression(solver="nystrom", random_state=0)).fit(X, y)
    bare = KernelLogisticRegression(solver="nystrom", random_state=0).fit(StandardScaler().fit_transform(X), y)
    assert pipe[-1].n_expansion_ == bare.n_expansion_ > 256  # the basis grew: several solves of the problem
    np.testing.assert_allclose(pipe.predict_proba(X), bare.predict_proba(StandardScaler().fit_transform(X)),
                               rtol=1e-10, atol=1e-12)
