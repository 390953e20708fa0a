"""epsilon-SVR (sparsekernel.SVR) on the 2N-variable dual.

1. against sklearn.svm.SVR (LIBSVM) on the same problems: the dual objective, recomputed here in
   float64 from both models' dual_coef_ / support_ (a+ = max(c, 0), a- = max(-c, 0)), the
   predictions and the intercept; rbf / linear / poly kernels, several C and epsilon, dense and CSR
   X (int32 and int64 indices), float32 X and a precomputed kernel;
2. sample_weight: integer weights are repeated rows, zero weights are dropped rows;
3. the KKT conditions of the 2N-variable dual, from a dense Q;
4. fitted attributes, score (R^2), pickling, input validation.
"""

from __future__ import annotations

import functools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_diabetes, make_regression
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import r2_score
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR as SkSVR

from _dual import (
    EPS32,
    check_feasible,
    dual_objective,
    float32_slack,
    kkt_gap,
    svr_dual_vector,
    svr_objective_from_coef,
    svr_p,
    svr_Q,
    svr_y,
)
from _helpers import model_kernel, sparsify, to_dense, with_int64_indices
from sparsekernel import SVR


@functools.lru_cache(maxsize=None)
def _problem(name):
    """(X, z, X_eval): targets standardised (so '1e-3 of the target scale' is 1e-3 absolute)."""
    if name == "friedman":
        X, z = make_regression(n_samples=160, n_features=6, n_informative=4, noise=8.0, random_state=0)
        X = StandardScaler().fit_transform(X)
    elif name == "diabetes":
        X, z = load_diabetes(return_X_y=True)
        X = StandardScaler().fit_transform(X)
    elif name == "sparse":
        X, z = make_regression(n_samples=150, n_features=20, n_informative=8, noise=5.0, random_state=1)
        X = sparsify(X, density=0.3, seed=1)
    else:
        raise KeyError(name)
    z = (z - z.mean()) / z.std()
    rng = np.random.default_rng(7)
    Xe = np.vstack([X[:80], X[:80] + 0.3 * X.std(axis=0) * rng.standard_normal((80, X.shape[1]))])
    for a in (X, z, Xe):
        a.setflags(write=False)
    return X, z, Xe


def _fit(X, z, sample_weight=None, **kw):
    kw.setdefault("n_jobs", 1)
    kw.setdefault("max_iter", 20_000_000)  # far above these problems' needs: a hang fails fast instead
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = SVR(**kw).fit(X, z, sample_weight=sample_weight)
    assert m.converged_ and m.fit_status_ == 0
    return m


def _objective(model, K, z, n):
    """2N-variable dual objective of a fitted SVR (either library) with the float64 kernel K."""
    a = svr_dual_vector(model.dual_coef_, model.support_, n)
    return dual_objective(svr_Q(K), svr_p(z, model.epsilon), a)


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def _assert_matches_sklearn(model, ref, Xfit, z, Xe, K, Xe_ref=None):
    n = len(z)
    obj, obj_ref = _objective(model, K, z, n), _objective(ref, K, z, n)
    assert obj_ref < 0  # a = 0 is feasible with objective 0 and is not optimal here
    assert obj == pytest.approx(obj_ref, rel=1e-3), (obj, obj_ref)
    # the solver's report of its objective, and the coefficient form of the same objective
    c = np.zeros(n)
    c[model.support_] = to_dense(model.dual_coef_)[0]
    slack = 2 * EPS32 * np.abs(c) @ np.abs(K) @ np.abs(c) + 1e-9
    assert abs(model.dual_objective_[0] - obj) <= 1e-6 * abs(obj) + slack
    assert svr_objective_from_coef(K, z, model.epsilon, c) == pytest.approx(obj, rel=1e-12, abs=1e-12)
    # predictions to 1e-3 of the target scale (z is standardised), intercept close
    np.testing.assert_allclose(model.predict(Xe), ref.predict(Xe if Xe_ref is None else Xe_ref), rtol=0, atol=1e-3)
    np.testing.assert_allclose(model.intercept_, ref.intercept_, rtol=0, atol=1e-3)
    # same support vectors up to a few borderline points
    assert len(np.setxor1d(model.support_, ref.support_)) <= max(2, 0.02 * len(ref.support_))


KERNEL_PARAMS = {
    "rbf": dict(kernel="rbf"),
    "linear": dict(kernel="linear"),
    "poly": dict(kernel="poly", degree=3, coef0=1.0, gamma=0.1),
}
CASES = [(name, kernel, C, eps) for name in ("friedman", "diabetes") for kernel in ("rbf", "linear", "poly")
         for C, eps in ((0.1, 0.1), (1.0, 0.3), (10.0 if (name, kernel) != ("diabetes", "poly") else 3.0, 0.05))]


@pytest.mark.parametrize("name,kernel,C,eps", CASES, ids=[f"{c[0]}-{c[1]}-C{c[2]:g}-eps{c[3]:g}" for c in CASES])
def test_matches_sklearn(name, kernel, C, eps):
    X, z, Xe = _problem(name)
    kw = dict(C=C, epsilon=eps, tol=1e-6, **KERNEL_PARAMS[kernel])
    ref = SkSVR(**kw).fit(X, z)
    K = model_kernel(ref)(X, X)
    for solver in ("smo2", "smo1", "csmo"):
        model = _fit(X, z, solver=solver, **kw)
        assert model._gamma == pytest.approx(ref._gamma, rel=1e-12)
        _assert_matches_sklearn(model, ref, X, z, Xe, K)


@pytest.mark.parametrize("fmt", ["csr-int32", "csr-int64", "float32", "dense-sparse-data"])
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_input_formats_match_sklearn(fmt, kernel):
    X, z, Xe = _problem("sparse")
    if fmt == "float32":
        X, z, Xe = _problem("friedman")
        Xin, Xe_in = X.astype(np.float32), Xe.astype(np.float32)
    elif fmt == "csr-int32":
        Xin, Xe_in = sp.csr_matrix(X), sp.csr_matrix(Xe)
        assert Xin.indices.dtype == np.int32
    elif fmt == "csr-int64":
        Xin, Xe_in = with_int64_indices(sp.csr_matrix(X)), with_int64_indices(sp.csr_matrix(Xe))
    else:
        Xin, Xe_in = X, Xe
    kw = dict(C=3.0, epsilon=0.1, tol=1e-6, **KERNEL_PARAMS[kernel])
    # (LIBSVM takes int32 indices only: the reference is fitted on the same matrix with int32 ones)
    def to32(A):
        if fmt != "csr-int64":
            return A
        return sp.csr_matrix((A.data, A.indices.astype(np.int32), A.indptr.astype(np.int32)), shape=A.shape)

    ref = SkSVR(**kw).fit(to32(Xin), z)
    model = _fit(Xin, z, **kw)
    K = model_kernel(ref)(_dense(Xin).astype(np.float64), _dense(Xin).astype(np.float64))
    _assert_matches_sklearn(model, ref, Xin, z, Xe_in, K, Xe_ref=to32(Xe_in))
    if sp.issparse(Xin):
        # and the same model as from the dense array
        dense = _fit(X, z, **kw)
        np.testing.assert_allclose(model.predict(Xe_in), dense.predict(Xe), rtol=0, atol=1e-6)
        assert sp.issparse(model.support_vectors_)


def test_precomputed_kernel():
    X, z, Xe = _problem("friedman")
    gamma = 0.1
    K, Ke = rbf_kernel(X, X, gamma=gamma), rbf_kernel(Xe, X, gamma=gamma)
    kw = dict(C=2.0, epsilon=0.1, tol=1e-6)
    model = _fit(K, z, kernel="precomputed", **kw)
    ref = SkSVR(kernel="precomputed", **kw).fit(K, z)
    _assert_matches_sklearn(model, ref, K, z, Ke, K)
    assert model.support_vectors_.shape == (0, 0)
    # the prediction is K(x, SV) c + b with the given kernel columns, exactly
    np.testing.assert_allclose(model.predict(Ke), Ke[:, model.support_] @ model.dual_coef_[0] + model.intercept_[0],
                               rtol=1e-12, atol=1e-12)
    # and the same model as the explicit rbf kernel
    explicit = _fit(X, z, kernel="rbf", gamma=gamma, **kw)
    np.testing.assert_allclose(model.predict(Ke), explicit.predict(Xe), rtol=0, atol=1e-4)
    with pytest.raises(ValueError):
        model.predict(Ke[:, :-1])


# ------------------------------------------------------------------ sample weights
@pytest.mark.parametrize("solver", ["smo2", "csmo"])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_integer_weights_equal_repeated_rows(kernel, solver):
    X, z, Xe = _problem("friedman")
    X, z = X[:100], z[:100]
    w = np.random.default_rng(3).integers(1, 4, size=len(z))
    # C small enough that several coefficients sit on their (different) bounds C w_i
    kw = dict(C=0.2 if kernel == "rbf" else 0.05, epsilon=0.1, tol=1e-8, solver=solver, **KERNEL_PARAMS[kernel])
    if kernel == "rbf":
        kw["gamma"] = 0.2  # 'scale' would see a different variance on the repeated rows
    weighted = _fit(X, z, sample_weight=w, **kw)
    repeated = _fit(np.repeat(X, w, axis=0), np.repeat(z, w), **kw)
    # the duals differ (a repeated row splits its coefficient) but the regression function does not
    np.testing.assert_allclose(weighted.predict(Xe), repeated.predict(Xe), rtol=0, atol=1e-5)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, rtol=0, atol=1e-5)
    # the optimal values are the same problem's
    assert weighted.dual_objective_[0] == pytest.approx(repeated.dual_objective_[0], rel=1e-6)
    # the weighted box: |c_i| <= C w_i, some coefficients sit on their own bound
    c = np.zeros(len(z))
    c[weighted.support_] = weighted.dual_coef_[0]
    assert np.all(np.abs(c) <= kw["C"] * w * (1 + 1e-12))
    on_bound = np.isclose(np.abs(c), kw["C"] * w, rtol=1e-9)
    assert len(np.unique(w[on_bound])) >= 2


def test_zero_weights_equal_dropped_rows():
    X, z, Xe = _problem("friedman")
    rng = np.random.default_rng(4)
    w = rng.uniform(0.5, 2.0, size=len(z))
    w[rng.random(len(z)) < 0.25] = 0.0
    keep = w > 0
    kw = dict(C=2.0, epsilon=0.1, tol=1e-8, gamma=0.2)
    weighted = _fit(X, z, sample_weight=w, **kw)
    dropped = _fit(X[keep], z[keep], sample_weight=w[keep], **kw)
    np.testing.assert_allclose(weighted.predict(Xe), dropped.predict(Xe), rtol=0, atol=1e-6)
    assert not np.any(np.isin(weighted.support_, np.flatnonzero(~keep)))
    np.testing.assert_array_equal(weighted.support_, np.flatnonzero(keep)[dropped.support_])
    assert weighted.dual_objective_[0] == pytest.approx(dropped.dual_objective_[0], rel=1e-7)


def test_sample_weight_matches_sklearn():
    X, z, Xe = _problem("friedman")
    w = np.random.default_rng(5).uniform(0.1, 3.0, size=len(z))
    kw = dict(C=1.5, epsilon=0.1, tol=1e-6)
    ref = SkSVR(**kw).fit(X, z, sample_weight=w)
    model = _fit(X, z, sample_weight=w, **kw)
    np.testing.assert_allclose(model.predict(Xe), ref.predict(Xe), rtol=0, atol=1e-3)
    n = len(z)
    K = model_kernel(ref)(X, X)
    assert _objective(model, K, z, n) == pytest.approx(_objective(ref, K, z, n), rel=1e-4)


# ------------------------------------------------------------------ KKT
@pytest.mark.parametrize("solver", ["smo2", "smo1", "csmo"])
@pytest.mark.parametrize("name,kernel,C,eps,tol", [("friedman", "rbf", 1.0, 0.1, 1e-3),
                                                   ("friedman", "poly", 1.0, 0.05, 1e-5),
                                                   ("diabetes", "rbf", 3.0, 0.2, 1e-4),
                                                   ("diabetes", "linear", 0.5, 0.0, 1e-4)])
def test_kkt(name, kernel, C, eps, tol, solver):
    X, z, _ = _problem(name)
    n = len(z)
    w = np.random.default_rng(6).uniform(0.5, 2.0, size=n)  # per-sample boxes C_i = C w_i
    m = _fit(X, z, sample_weight=w, C=C, epsilon=eps, tol=tol, solver=solver, **KERNEL_PARAMS[kernel])
    K = model_kernel(m)(X, X)
    Q, y, p, hi = svr_Q(K), svr_y(n), svr_p(z, eps), np.r_[C * w, C * w]
    a = svr_dual_vector(m.dual_coef_, m.support_, n)
    check_feasible(y, a, hi)
    assert np.all(a[:n] * a[n:] == 0)  # never both a+_i and a-_i
    slack = float32_slack(Q, a)
    gap = kkt_gap(Q, y, p, a, hi)
    assert gap <= tol + slack, (gap, tol, slack)
    assert m.kkt_gap_[0] <= tol
    # margin form: |f(x_i) - z_i| <= eps at a = 0, = eps when free, >= eps at the bound
    f = m.predict(X)
    r = f - z
    c = a[:n] - a[n:]
    e = tol + slack
    zero = c == 0
    free_p = (c > 0) & (c < C * w)  # a+ free: z - f = eps
    free_m = (c < 0) & (-c < C * w)
    at_p, at_m = c >= C * w, -c >= C * w
    assert np.all(np.abs(r[zero]) <= eps + e)
    np.testing.assert_allclose(-r[free_p], eps, atol=e)
    np.testing.assert_allclose(r[free_m], eps, atol=e)
    assert np.all(-r[at_p] >= eps - e) and np.all(r[at_m] >= eps - e)
    assert free_p.any() and free_m.any() and (at_p | at_m).any()


# ------------------------------------------------------------------ attributes, API
def test_fitted_attributes_and_score():
    X, z, Xe = _problem("friedman")
    m = _fit(X, z, C=2.0, epsilon=0.2)
    n_sv = len(m.support_)
    assert 0 < n_sv < len(z)
    assert m.support_.dtype == np.int32 and np.all(np.diff(m.support_) > 0)
    assert m.support_vectors_.shape == (n_sv, X.shape[1])
    np.testing.assert_array_equal(m.support_vectors_, X[m.support_])
    assert m.dual_coef_.shape == (1, n_sv) and np.all(m.dual_coef_ != 0)
    assert np.all(np.abs(m.dual_coef_) <= 2.0 * (1 + 1e-12))
    assert abs(m.dual_coef_.sum()) <= 1e-10 * np.abs(m.dual_coef_).sum()  # sum a+ - a- = 0
    assert m.intercept_.shape == (1,)
    np.testing.assert_array_equal(m.n_support_, [n_sv])
    assert isinstance(m.n_iter_, (int, np.integer)) and m.n_iter_ > 0
    assert m.fit_status_ == 0
    assert m.shape_fit_ == X.shape and m.n_features_in_ == X.shape[1]
    assert m.dual_objective_.shape == m.kkt_gap_.shape == (1,)
    # predict is sum_i c_i K(sv_i, x) + b, by hand with sklearn's kernel
    hand = model_kernel(m)(Xe, m.support_vectors_) @ m.dual_coef_[0] + m.intercept_[0]
    np.testing.assert_allclose(m.predict(Xe), hand, rtol=0, atol=1e-8)
    assert m.score(Xe, z[:80].tolist() + list(np.zeros(80))) == pytest.approx(
        r2_score(np.r_[z[:80], np.zeros(80)], m.predict(Xe)), rel=1e-12)
    assert m.score(X, z) == pytest.approx(r2_score(z, m.predict(X)), rel=1e-12)
    assert m.score(X, z) > 0.5


def test_pickle_round_trip():
    X, z, Xe = _problem("sparse")
    for Xin in (X, sp.csr_matrix(X)):
        m = _fit(Xin, z, C=2.0)
        m2 = pickle.loads(pickle.dumps(m))
        np.testing.assert_array_equal(m2.predict(Xe), m.predict(Xe))
        np.testing.assert_array_equal(to_dense(m2.dual_coef_), to_dense(m.dual_coef_))
        assert sp.issparse(m.dual_coef_) == sp.issparse(Xin)  # scipy sparse after a sparse fit, as scikit-learn
        assert m2.get_params() == m.get_params()
    K = rbf_kernel(X, X, gamma=0.1)
    m = _fit(K, z, kernel="precomputed")
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m2.predict(K), m.predict(K))


def test_not_fitted():
    X, z, _ = _problem("friedman")
    with pytest.raises(NotFittedError):
        SVR().predict(X)
    with pytest.raises(NotFittedError):
        SVR().score(X, z)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input(bad):
    X, z, _ = _problem("friedman")
    Xb = X.copy()
    Xb[2, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        SVR().fit(Xb, z)
    with pytest.raises(ValueError, match="NaN|infinity"):
        SVR().fit(sp.csr_matrix(Xb), z)
    zb = z.copy()
    zb[0] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        SVR().fit(X, zb)
    m = SVR(n_jobs=1).fit(X, z)
    with pytest.raises(ValueError, match="NaN|infinity"):
        m.predict(Xb)


@pytest.mark.parametrize("params,match", [
    (dict(epsilon=-0.1), "epsilon"), (dict(epsilon=np.nan), "epsilon"), (dict(epsilon="0.1"), "epsilon"),
    (dict(C=0.0), "C"), (dict(C=-1.0), "C"), (dict(C=np.nan), "C"),
    (dict(tol=0.0), "tol"), (dict(kernel="cosine"), "kernel"), (dict(gamma=-1.0), "gamma"),
    (dict(solver="batched"), "solver"), (dict(solver="nope"), "solver"), (dict(max_iter=0), "max_iter"),
    (dict(warm_start=1), "warm_start"), (dict(n_jobs=0), "n_jobs"), (dict(cache_size=0), "cache_size"),
])
def test_bad_parameters(params, match):
    X, z, _ = _problem("friedman")
    with pytest.raises(ValueError, match=match):
        SVR(**params).fit(X, z)


def test_bad_shapes_and_weights():
    X, z, _ = _problem("friedman")
    with pytest.raises(ValueError, match="inconsistent"):
        SVR().fit(X, z[:-1])
    with pytest.raises(ValueError):
        SVR().fit(X[:, 0], z)  # 1d X
    with pytest.raises(ValueError):
        SVR().fit(X, np.c_[z, z])  # 2d y
    with pytest.raises(ValueError, match="0 sample"):
        SVR().fit(np.empty((0, 3)), np.empty(0))
    m = SVR(n_jobs=1).fit(X, z)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :-1])
    with pytest.raises(ValueError, match="all samples have zero or negative weights"):  # scikit-learn's message
        SVR().fit(X, z, sample_weight=-np.ones(len(z)))
    with pytest.raises(ValueError, match="all samples have zero or negative weights"):
        SVR().fit(X, z, sample_weight=np.zeros(len(z)))
    with pytest.raises(ValueError):
        SVR().fit(X, z, sample_weight=np.ones(len(z) + 1))
    with pytest.raises(ValueError, match="square"):
        SVR(kernel="precomputed").fit(X, z)
    with pytest.raises(TypeError, match="Sparse precomputed kernels are not supported"):  # scikit-learn's message
        SVR(kernel="precomputed").fit(sp.csr_matrix(rbf_kernel(X)), z)


def test_epsilon_zero_and_large():
    """epsilon = 0 is valid (every point is an SV in general); epsilon above max |z - mean| gives
    the constant model f = b with no support vectors worth their name."""
    X, z, _ = _problem("friedman")
    m0 = _fit(X, z, epsilon=0.0, C=1.0, tol=1e-5)
    ref = SkSVR(epsilon=0.0, C=1.0, tol=1e-5).fit(X, z)
    np.testing.assert_allclose(m0.predict(X), ref.predict(X), atol=1e-3)
    big = _fit(X, z, epsilon=float(np.abs(z).max()) * 2 + 1)
    assert len(big.support_) == 0
    np.testing.assert_allclose(big.predict(X), big.intercept_[0])
    ref_big = SkSVR(epsilon=float(np.abs(z).max()) * 2 + 1).fit(X, z)
    assert len(ref_big.support_) == 0
    assert big.intercept_[0] == pytest.approx(ref_big.intercept_[0], abs=1e-9)
