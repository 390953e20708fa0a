"""NuSVC, NuSVR and OneClassSVM against scikit-learn's (LIBSVM's) and against their own theory.

Agreement with sklearn.svm on held-out predictions, support vector counts, decision values and the
dual objective (recovered from scikit-learn's dual coefficients: LIBSVM's nu-SVC stores y a / r, and
sum_i a_i = nu l per pair gives r back); Schölkopf's nu-property (margin errors <= nu <= support
vectors); the class-sum equalities in the engine's solutions; sample weights; precomputed, CSR and
float32 input; scikit-learn's errors; pickling.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import svm as sksvm
from sklearn.datasets import load_diabetes, make_friedman1, make_regression
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import KFold, train_test_split
from sklearn.preprocessing import StandardScaler

import sparsekernel._engine as engine
from _helpers import dataset, to_dense
from sparsekernel import NuSVC, NuSVR, OneClassSVM

TOL = 1e-3


def _split(name):
    X, y = dataset(name)
    return train_test_split(X, y, test_size=0.3, random_state=0)


def _regression(name):
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        X = StandardScaler().fit_transform(X)
    else:
        X, y = make_friedman1(n_samples=400, noise=0.5, random_state=0)
    return train_test_split(X, y, test_size=0.3, random_state=0)


def _close_counts(a, b):
    """Support vector counts within 1 % (at least one vector)."""
    a, b = np.asarray(a), np.asarray(b)
    assert np.all(np.abs(a - b) <= np.maximum(1, 0.01 * b)), (a, b)


def _spy_results(monkeypatch):
    """Every engine solve's (DualProblem, SolveResult) from now on."""
    seen = []
    real = engine.solve

    def spy(X, kernel, problem, options, **kw):
        r = real(X, kernel, problem, options, **kw)
        seen.append((problem, r))
        return r

    monkeypatch.setattr(engine, "solve", spy)
    return seen


# ---------------------------------------------------------------------------------- agreement
# (not moons at nu = 0.1: r ~ 2e-4 there, C = 1 / r ~ 5000, and two points that both meet tol = 1e-3 in
# the unscaled problem differ by several units in the scaled decision values; at tol = 1e-7 they agree)
@pytest.mark.parametrize("name", ["clf_easy", "clf_hard", "breast_cancer", "circles"])
@pytest.mark.parametrize("nu", [0.1, 0.5])
def test_nusvc_matches_sklearn(name, nu):
    X_tr, X_te, y_tr, y_te = _split(name)
    ours, ref = NuSVC(nu=nu).fit(X_tr, y_tr), sksvm.NuSVC(nu=nu).fit(X_tr, y_tr)
    assert np.mean(ours.predict(X_te) == ref.predict(X_te)) >= 0.999
    _close_counts(ours.n_support_, ref.n_support_)
    np.testing.assert_allclose(ours.decision_function(X_te), ref.decision_function(X_te), atol=20 * TOL)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=20 * TOL)
    # the dual objective 1/2 a'Qa (before the 1/r scaling): LIBSVM's a = |dual_coef| r, r = nu l / sum|dual_coef|
    c = to_dense(ref.dual_coef_)[0]
    a = np.abs(c) * nu * len(y_tr) / np.abs(c).sum()
    K = rbf_kernel(ref.support_vectors_, gamma=1.0 / (X_tr.shape[1] * X_tr.var()))
    ya = np.sign(c) * a
    np.testing.assert_allclose(ours.dual_objective_[0], 0.5 * ya @ K @ ya, rtol=1e-3, atol=TOL)


@pytest.mark.parametrize("name", ["iris", "wine", "clf_multi", "digits"])
def test_nusvc_multiclass_matches_sklearn(name):
    X_tr, X_te, y_tr, y_te = _split(name)
    ours, ref = NuSVC(nu=0.2).fit(X_tr, y_tr), sksvm.NuSVC(nu=0.2).fit(X_tr, y_tr)
    assert np.mean(ours.predict(X_te) == ref.predict(X_te)) >= 0.999
    _close_counts(ours.n_support_, ref.n_support_)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=20 * TOL)
    for shape in ("ovo", "ovr"):
        ours.set_params(decision_function_shape=shape)
        ref.set_params(decision_function_shape=shape)
        np.testing.assert_allclose(ours.decision_function(X_te), ref.decision_function(X_te), atol=20 * TOL)


@pytest.mark.parametrize("name", ["diabetes", "friedman"])
@pytest.mark.parametrize("nu", [0.1, 0.5])
def test_nusvr_matches_sklearn(name, nu):
    X_tr, X_te, y_tr, y_te = _regression(name)
    C = 10.0
    ours, ref = NuSVR(nu=nu, C=C).fit(X_tr, y_tr), sksvm.NuSVR(nu=nu, C=C).fit(X_tr, y_tr)
    scale = np.std(y_tr)
    np.testing.assert_allclose(ours.predict(X_te), ref.predict(X_te), atol=10 * TOL * max(1.0, C))
    assert np.mean(np.abs(ours.predict(X_te) - ref.predict(X_te)) <= 1e-2 * scale) >= 0.999
    _close_counts(ours.n_support_, ref.n_support_)
    b = to_dense(ref.dual_coef_)[0]
    K = rbf_kernel(ref.support_vectors_, gamma=1.0 / (X_tr.shape[1] * X_tr.var()))
    obj = 0.5 * b @ K @ b - y_tr[ref.support_] @ b
    np.testing.assert_allclose(ours.dual_objective_[0], obj, rtol=1e-4, atol=10 * TOL * C)


@pytest.mark.parametrize("name", ["clf_easy", "breast_cancer", "digits", "moons"])
@pytest.mark.parametrize("nu", [0.05, 0.3, 0.5])
def test_oneclass_matches_sklearn(name, nu):
    X_tr, X_te, _, _ = _split(name)
    ours, ref = OneClassSVM(nu=nu).fit(X_tr), sksvm.OneClassSVM(nu=nu).fit(X_tr)
    assert np.mean(ours.predict(X_te) == ref.predict(X_te)) >= 0.999
    _close_counts(ours.n_support_, ref.n_support_)
    np.testing.assert_allclose(ours.decision_function(X_te), ref.decision_function(X_te), atol=20 * TOL)
    np.testing.assert_allclose(ours.score_samples(X_te), ref.score_samples(X_te), atol=20 * TOL)
    np.testing.assert_allclose(ours.offset_, ref.offset_, atol=20 * TOL)
    a = to_dense(ref.dual_coef_)[0]
    K = rbf_kernel(ref.support_vectors_, gamma=1.0 / (X_tr.shape[1] * X_tr.var()))
    np.testing.assert_allclose(ours.dual_objective_[0], 0.5 * a @ K @ a, rtol=1e-3, atol=TOL)
    assert ours.predict(X_te).dtype == np.intp and set(np.unique(ours.predict(X_te))) <= {-1, 1}


# ---------------------------------------------------------------------------------- theory
@pytest.mark.parametrize("nu", [0.1, 0.3, 0.6])
def test_nusvc_nu_property(nu):
    X, y = dataset("clf_hard")
    clf = NuSVC(nu=nu, tol=1e-5).fit(X, y)
    yy = np.where(y == clf.classes_[1], 1.0, -1.0)
    margin_errors = np.mean(yy * clf.decision_function(X) < 1 - 1e-2)  # the margin is 1 after the 1/r scaling
    assert margin_errors <= nu + 1e-9 <= len(clf.support_) / len(y) + 1e-9


@pytest.mark.parametrize("nu", [0.05, 0.2, 0.5])
def test_oneclass_nu_property(nu):
    X, _ = dataset("breast_cancer")
    clf = OneClassSVM(nu=nu, tol=1e-5).fit(X)
    outliers = np.mean(clf.decision_function(X) < -TOL)  # (free vectors may sit at -tol: LIBSVM's too)
    assert outliers <= nu + 1e-9 <= len(clf.support_) / len(X) + 1e-9


def test_class_sums_hold(monkeypatch):
    X, y = dataset("clf_multi")
    seen = _spy_results(monkeypatch)
    nu = 0.3
    NuSVC(nu=nu).fit(X, y)
    assert len(seen) == 6
    for problem, r in seen:
        assert problem.nu and r.r > 0
        half = nu * len(problem.y) / 2
        np.testing.assert_allclose(r.alpha[problem.y > 0].sum(), half, rtol=1e-10)
        np.testing.assert_allclose(r.alpha[problem.y < 0].sum(), half, rtol=1e-10)
        assert np.all(r.alpha >= 0) and np.all(r.alpha <= 1 + 1e-12)
    seen.clear()
    Xr, _, yr, _ = _regression("diabetes")
    NuSVR(nu=nu, C=2.0).fit(Xr, yr)
    ((problem, r),) = seen
    n = len(yr)
    np.testing.assert_allclose(r.alpha[:n].sum(), 2.0 * nu * n / 2, rtol=1e-10)
    np.testing.assert_allclose(r.alpha[n:].sum(), 2.0 * nu * n / 2, rtol=1e-10)
    seen.clear()
    OneClassSVM(nu=nu).fit(X)
    ((problem, r),) = seen
    np.testing.assert_allclose(r.alpha.sum(), nu * len(X), rtol=1e-10)


# ---------------------------------------------------------------------------------- weights
def test_sample_weights_match_sklearn():
    X_tr, X_te, y_tr, _ = _split("clf_easy")
    sw = np.random.RandomState(0).uniform(0.2, 2.0, len(y_tr))
    sw[:5] = 0.0  # masked samples
    for ours, ref in [(NuSVC(nu=0.3), sksvm.NuSVC(nu=0.3)), (OneClassSVM(nu=0.3), sksvm.OneClassSVM(nu=0.3))]:
        ours.fit(X_tr, y_tr, sample_weight=sw)
        ref.fit(X_tr, y_tr, sample_weight=sw)
        _close_counts(ours.n_support_, ref.n_support_)
        np.testing.assert_allclose(ours.decision_function(X_te), ref.decision_function(X_te), atol=20 * TOL)
        assert not np.isin(np.arange(5), ours.support_).any()
    Xr, Xr_te, yr, _ = _regression("friedman")
    swr = np.random.RandomState(1).uniform(0.2, 2.0, len(yr))
    ours, ref = NuSVR(nu=0.3).fit(Xr, yr, sample_weight=swr), sksvm.NuSVR(nu=0.3).fit(Xr, yr, sample_weight=swr)
    _close_counts(ours.n_support_, ref.n_support_)
    np.testing.assert_allclose(ours.predict(Xr_te), ref.predict(Xr_te), atol=20 * TOL)


def test_class_weight_as_sklearn():
    """scikit-learn's NuSVC keeps class_weight_ and, as LIBSVM's nu-SVC, fits without it."""
    X, y = dataset("clf_imbalanced")
    cw = {0: 1.0, 1: 5.0}
    ours, ref = NuSVC(nu=0.2, class_weight=cw).fit(X, y), sksvm.NuSVC(nu=0.2, class_weight=cw).fit(X, y)
    np.testing.assert_array_equal(ours.class_weight_, ref.class_weight_)
    np.testing.assert_allclose(ours.decision_function(X), NuSVC(nu=0.2).fit(X, y).decision_function(X))
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=20 * TOL)
    bal = NuSVC(nu=0.2, class_weight="balanced").fit(X, y)
    np.testing.assert_allclose(bal.class_weight_, sksvm.NuSVC(nu=0.2, class_weight="balanced").fit(X, y).class_weight_)


# ---------------------------------------------------------------------------------- inputs
def test_precomputed_and_callable():
    X_tr, X_te, y_tr, _ = _split("clf_easy")
    g = 0.1
    K_tr, K_te = rbf_kernel(X_tr, gamma=g), rbf_kernel(X_te, X_tr, gamma=g)
    for cls in (NuSVC, OneClassSVM):
        base = cls(nu=0.3, gamma=g).fit(X_tr, y_tr)
        pre = cls(nu=0.3, kernel="precomputed").fit(K_tr, y_tr)
        fun = cls(nu=0.3, kernel=lambda A, B: rbf_kernel(A, B, gamma=g)).fit(X_tr, y_tr)
        np.testing.assert_allclose(pre.decision_function(K_te), base.decision_function(X_te), atol=1e-6)
        np.testing.assert_allclose(fun.decision_function(X_te), base.decision_function(X_te), atol=1e-6)
    Xr, Xr_te, yr, _ = _regression("diabetes")
    base = NuSVR(nu=0.3, gamma=g).fit(Xr, yr)
    pre = NuSVR(nu=0.3, kernel="precomputed").fit(rbf_kernel(Xr, gamma=g), yr)
    np.testing.assert_allclose(pre.predict(rbf_kernel(Xr_te, Xr, gamma=g)), base.predict(Xr_te), atol=1e-6)


@pytest.mark.parametrize("cls", [NuSVC, NuSVR, OneClassSVM])
def test_csr_and_float32(cls):
    X_tr, X_te, y_tr, _ = _split("clf_easy")
    dense = cls(kernel="linear").fit(X_tr, y_tr)
    csr = cls(kernel="linear").fit(sp.csr_matrix(X_tr), y_tr)
    f32 = cls(kernel="linear").fit(X_tr.astype(np.float32), y_tr)
    out = "predict" if cls is NuSVR else "decision_function"
    ref = getattr(dense, out)(X_te)
    assert sp.issparse(csr.support_vectors_) and sp.issparse(csr.dual_coef_)
    np.testing.assert_allclose(getattr(csr, out)(sp.csr_matrix(X_te)), ref, atol=20 * TOL)
    np.testing.assert_allclose(getattr(f32, out)(X_te.astype(np.float32)), ref, atol=20 * TOL)
    np.testing.assert_allclose(to_dense(csr.coef_), dense.coef_, atol=20 * TOL)


# ---------------------------------------------------------------------------------- errors
def test_infeasible_nu():
    X, y = dataset("clf_imbalanced")  # 85 % / 15 %: nu (n0 + n1) / 2 > n1 for nu > 0.3
    with pytest.raises(ValueError, match="specified nu is infeasible"):
        NuSVC(nu=0.5).fit(X, y)
    with pytest.raises(ValueError, match="specified nu is infeasible"):
        sksvm.NuSVC(nu=0.5).fit(X, y)  # (the same data, the same answer)
    NuSVC(nu=0.2).fit(X, y)


@pytest.mark.parametrize("cls", [NuSVC, NuSVR, OneClassSVM])
@pytest.mark.parametrize("nu", [0.0, -0.1, 1.5, "0.5"])
def test_bad_nu(cls, nu):
    X, y = dataset("clf_easy")
    with pytest.raises(ValueError, match="'nu' parameter"):
        cls(nu=nu).fit(X, y)


@pytest.mark.parametrize("cls", [NuSVC, NuSVR, OneClassSVM])
def test_nan_input(cls):
    X, y = dataset("clf_easy")
    X = X.copy()
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls().fit(X, y)
    model = cls().fit(np.nan_to_num(X), y)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(X)


def test_one_class_of_labels():
    X, y = dataset("clf_easy")
    with pytest.raises(ValueError, match="number of classes"):
        NuSVC().fit(X, np.zeros_like(y))


def test_no_c_on_nusvc_and_oneclass():
    assert "C" not in NuSVC().get_params() and "C" not in OneClassSVM().get_params()
    assert "epsilon" not in NuSVR().get_params()
    with pytest.raises(ValueError, match="solver"):
        NuSVC(solver="csmo").fit(*dataset("clf_easy"))


# ---------------------------------------------------------------------------------- pickling, probability
@pytest.mark.parametrize("cls", [NuSVC, NuSVR, OneClassSVM])
def test_pickle_round_trip(cls):
    X, y = dataset("clf_easy")
    model = cls(nu=0.3).fit(X, y)
    back = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    if cls is not NuSVR:
        np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))


def test_nusvc_probability_as_svc():
    X_tr, X_te, y_tr, _ = _split("iris")
    with pytest.warns(FutureWarning, match=r"CalibratedClassifierCV\(NuSVC\(\)"):
        clf = NuSVC(nu=0.3, probability=True, random_state=0).fit(X_tr, y_tr)
    with pytest.warns(FutureWarning):
        ref = sksvm.NuSVC(nu=0.3, probability=True, random_state=0).fit(X_tr, y_tr)
    P = clf.predict_proba(X_te)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert P.shape == (len(X_te), 3)
    # the folds are drawn differently from LIBSVM's: the probabilities agree roughly
    assert np.mean(np.argmax(P, axis=1) == np.argmax(ref.predict_proba(X_te), axis=1)) >= 0.9
    assert not hasattr(NuSVC(nu=0.3).fit(X_tr, y_tr), "predict_proba")


@pytest.mark.parametrize("solver", ["smo1", "smo2", "batched", "csmo"])
def test_oneclass_routes(solver):
    """The one-class dual is a plain engine problem (y = 1: y'a = e'a): every route solves it."""
    X, _ = dataset("digits")
    ours, ref = OneClassSVM(nu=0.3, solver=solver).fit(X), sksvm.OneClassSVM(nu=0.3).fit(X)
    assert ours.solver_ == solver
    _close_counts(ours.n_support_, ref.n_support_)
    np.testing.assert_allclose(to_dense(ours.dual_coef_).sum(), 0.3 * len(X), rtol=1e-12)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=2 * TOL)


@pytest.mark.parametrize("nu", [0.5, 0.7])
def test_nusvr_at_a_tight_tol_converges_as_libsvm(nu):
    """At tol 1e-7 / 1e-8 the nu-SVR solve once cycled until the 10^7-step cap (21 s): two pairs on the
    same two points (a+ and a- of points 10 and 89) undid each other while the incrementally updated
    gradient kept a violation its float32 rounding made. The engine's stall guard recomputes the
    gradient; the fit then converges in about LIBSVM's steps with its predictions."""
    X, y = make_regression(n_samples=240, n_features=6, noise=5.0, random_state=0)
    y = y / np.std(y)
    tr = next(iter(KFold(4, shuffle=True, random_state=0).split(X)))[0]
    for tol in (1e-7, 1e-8):
        ref = sksvm.NuSVR(C=4, nu=nu, gamma=0.2, tol=tol).fit(X[tr], y[tr])
        ours = NuSVR(C=4, nu=nu, gamma=0.2, tol=tol, n_jobs=1).fit(X[tr], y[tr])
        assert ours.converged_ and ours.kkt_gap_[0] < tol
        assert ours.n_iter_ < 2 * ref.n_iter_
        np.testing.assert_allclose(ours.predict(X), ref.predict(X), atol=1e-5)


@pytest.mark.parametrize("nu", [0.1, 0.4])
def test_nusvc_batched_route_keeps_the_class_sums(nu):
    """The two-level route on nu problems: blocks drawn from both classes (ranked by their violation
    within their class), the sub-problem solved with pairs within a class (which keeps the class sums
    of a): the same objective as the pair route's, LIBSVM's model."""
    X, y = make_friedman1(n_samples=700, n_features=40, random_state=3)
    y = (y > np.median(y)).astype(int)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=0)
    ref = sksvm.NuSVC(nu=nu, tol=1e-6).fit(X_tr, y_tr)
    pairs = NuSVC(nu=nu, tol=1e-6, solver="smo2").fit(X_tr, y_tr)
    block = NuSVC(nu=nu, tol=1e-6, solver="batched", n_jobs=2).fit(X_tr, y_tr)
    assert block.solver_ == "batched" and block.solver_stats_[0]["n_outer_iter"] >= 1
    r = block.solver_stats_[0]
    assert r["status"] == 0
    np.testing.assert_allclose(block.dual_objective_, pairs.dual_objective_, rtol=1e-5)
    np.testing.assert_allclose(block.decision_function(X_te), ref.decision_function(X_te), atol=1e-3)
    assert np.mean(block.predict(X_te) == ref.predict(X_te)) >= 0.999
