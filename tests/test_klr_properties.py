"""KernelLogisticRegression and SparseKernelLogisticRegression as scikit-learn classifiers:
probabilities, shapes, one-vs-rest, pickling, pipelines and search, sample / class weights,
equivalent inputs (dense, CSR with int32 / int64 indices, float32, precomputed kernel), extreme C
and degenerate data, parameter and input validation, and scikit-learn's estimator checks.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from _helpers import dataset, sparsify, with_int64_indices
from sparsekernel import KernelLogisticRegression, SparseKernelLogisticRegression, klr_lambda_bound

ESTIMATORS = [KernelLogisticRegression, SparseKernelLogisticRegression]
EST_IDS = ["klr", "sklr"]
TIGHT = dict(tol=1e-8, bound=1e-9)  # solved to (almost) the unboxed optimum


def _data(name, n=None):
    X, y = dataset(name)
    if name == "digits":
        X, y = X[:300], y[:300]
    elif n is not None:
        X, y = X[:n], y[:n]
    return X, y


@pytest.fixture(scope="module")
def binary():
    X, y = dataset("breast_cancer")
    return X[:150].copy(), y[:150].copy()


# ---------------------------------------------------------------------------------------- probabilities
@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("name", ["moons", "iris", "wine", "digits"])
def test_probabilities_and_shapes(est_cls, name):
    X, y = _data(name, n=200)
    m = est_cls(C=2.0).fit(X, y)
    classes = np.unique(y)
    k = len(classes)
    np.testing.assert_array_equal(m.classes_, classes)
    P = m.predict_proba(X)
    assert P.shape == (len(y), k)
    assert np.all(np.isfinite(P)) and np.all(P > 0) and np.all(P < 1)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(m.predict(X), classes[np.argmax(P, axis=1)])
    np.testing.assert_allclose(m.predict_log_proba(X), np.log(P), rtol=1e-12, atol=0)
    dec = m.decision_function(X)
    n_prob = 1 if k == 2 else k
    if k == 2:
        assert dec.shape == (len(y),)
        np.testing.assert_allclose(P[:, 1], expit(dec), rtol=0, atol=1e-14)
        np.testing.assert_array_equal(m.predict(X), classes[(dec > 0).astype(int)])
        assert isinstance(m.rho_, float) and isinstance(m.duality_gap_, float)
    else:
        assert dec.shape == (len(y), k)
        E = expit(dec)
        np.testing.assert_allclose(P, E / E.sum(axis=1, keepdims=True), rtol=1e-12)
        assert m.rho_.shape == (k,) and m.duality_gap_.shape == (k,)
    for attr in ("intercept_", "bound_", "n_iter_", "n_kernel_evals_", "dual_objective_", "kkt_gap_"):
        assert getattr(m, attr).shape == (n_prob,), attr
    assert m.dual_coef_.shape == (n_prob, m.n_expansion_)
    assert m.support_.shape == (m.n_expansion_,) and m.support_.dtype == np.int32
    np.testing.assert_array_equal(m.support_vectors_, X[m.support_])
    assert 0 < m.kept_fraction_ <= 1 and m.kept_fraction_ == m.n_expansion_ / len(y)
    assert m.sparsity_ == pytest.approx(1 - m.kept_fraction_)
    assert m.converged_ and np.all(m.kkt_gap_ <= m.tol)
    assert np.all(m.n_iter_ > 0) and np.all(m.n_kernel_evals_ > 0) and m.fit_time_ > 0
    assert len(m.solver_stats_) == n_prob
    assert m.score(X, y) > 0.8
    # decision_function = K(X, SV) dual_coef_' + intercept_
    Kx = rbf_kernel(X, m.support_vectors_, gamma=m._gamma)
    ref = Kx @ m.dual_coef_.T + m.intercept_
    np.testing.assert_allclose(dec.reshape(ref.shape), ref, rtol=0, atol=1e-8 * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
def test_one_vs_rest_is_binary_problems(est_cls):
    """Column k of the multiclass decision_function is the binary fit of class k against the rest."""
    X, y = _data("iris")
    m = est_cls(C=3.0, gamma=0.5, tol=1e-6).fit(X, y)
    dec = m.decision_function(X)
    for k, c in enumerate(m.classes_):
        b = est_cls(C=3.0, gamma=0.5, tol=1e-6).fit(X, y == c)
        np.testing.assert_allclose(dec[:, k], b.decision_function(X), rtol=0, atol=1e-8)
        assert m.dual_objective_[k] == pytest.approx(b.dual_objective_[0], rel=1e-12)


def test_multiclass_threads_same_model():
    X, y = _data("wine")
    a = SparseKernelLogisticRegression(C=5.0, n_jobs=1).fit(X, y)
    b = SparseKernelLogisticRegression(C=5.0, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


# ---------------------------------------------------------------------------------------- pickling, meta
@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("form", ["dense", "csr", "precomputed"])
def test_pickle_round_trip(est_cls, form):
    X, y = _data("wine")
    if form == "precomputed":
        Xf = rbf_kernel(X, gamma=0.05)
        m = est_cls(kernel="precomputed").fit(Xf, y)
    else:
        Xf = sp.csr_matrix(sparsify(X)) if form == "csr" else X
        m = est_cls().fit(Xf, y)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.predict(Xf), m2.predict(Xf))
    np.testing.assert_array_equal(m.predict_proba(Xf), m2.predict_proba(Xf))
    np.testing.assert_array_equal(m.decision_function(Xf), m2.decision_function(Xf))


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
def test_pipeline_and_grid_search(est_cls):
    X, y = dataset("breast_cancer")
    X, y = X[:200], y[:200]
    rng = np.random.default_rng(0)
    Xraw = X * rng.uniform(1, 100, X.shape[1]) + rng.uniform(-50, 50, X.shape[1])  # unscaled features
    pipe = make_pipeline(StandardScaler(), est_cls())
    pipe.fit(Xraw, y)
    assert pipe.score(Xraw, y) > 0.9
    P = pipe.predict_proba(Xraw)
    np.testing.assert_array_equal(pipe.predict(Xraw), pipe.classes_[np.argmax(P, axis=1)])
    gs = GridSearchCV(make_pipeline(StandardScaler(), est_cls()), {f"{est_cls.__name__.lower()}__C": [0.1, 1.0, 10.0]},
                      cv=3, scoring="neg_log_loss", n_jobs=1)
    gs.fit(Xraw, y)
    assert gs.best_params_[f"{est_cls.__name__.lower()}__C"] in (0.1, 1.0, 10.0)
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
    assert gs.predict_proba(Xraw).shape == (200, 2)


# ---------------------------------------------------------------------------------------- weights
@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("name", ["moons", "iris"])
def test_integer_sample_weight_equals_repeated_rows(est_cls, name):
    X, y = _data(name, n=150)
    sw = np.random.default_rng(1).integers(1, 4, len(y))
    a = est_cls(C=2.0, gamma=0.7, **TIGHT).fit(X, y, sample_weight=sw)
    b = est_cls(C=2.0, gamma=0.7, **TIGHT).fit(np.repeat(X, sw, axis=0), np.repeat(y, sw))
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-5)
    np.testing.assert_allclose(a.dual_objective_, b.dual_objective_, rtol=1e-6)


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
def test_zero_sample_weight_equals_dropping_rows(est_cls):
    X, y = _data("moons", n=150)
    sw = np.ones(len(y))
    sw[::4] = 0.0
    a = est_cls(C=2.0, gamma=0.7, **TIGHT).fit(X, y, sample_weight=sw)
    b = est_cls(C=2.0, gamma=0.7, **TIGHT).fit(X[sw > 0], y[sw > 0])
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-7)
    assert not np.any(sw[a.support_] == 0)  # no zero-weight sample in the model
    np.testing.assert_array_equal(np.flatnonzero(sw > 0)[b.support_], a.support_)


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
def test_sample_weight_scaling_is_C(est_cls):
    X, y = _data("moons", n=150)
    a = est_cls(C=6.0, lam=0.6, **TIGHT) if est_cls is SparseKernelLogisticRegression else est_cls(C=6.0, **TIGHT)
    b = clone(a).set_params(C=2.0)
    a.fit(X, y)
    b.fit(X, y, sample_weight=np.full(len(y), 3.0))
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-7)


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
def test_class_weight(est_cls):
    X, y = _data("clf_imbalanced", n=300)
    minority = np.argmin(np.bincount(y))
    base = est_cls(C=1.0, tol=1e-6).fit(X, y)
    # up-weighting a class raises its probabilities
    up = est_cls(C=1.0, tol=1e-6, class_weight={minority: 5.0, 1 - minority: 1.0}).fit(X, y)
    assert up.predict_proba(X)[:, minority].mean() > base.predict_proba(X)[:, minority].mean()
    assert np.mean(up.predict(X)[y == minority] == minority) >= np.mean(base.predict(X)[y == minority] == minority)
    down = est_cls(C=1.0, tol=1e-6, class_weight={minority: 0.2, 1 - minority: 1.0}).fit(X, y)
    assert down.predict_proba(X)[:, minority].mean() < base.predict_proba(X)[:, minority].mean()
    # 'balanced' recovers more of the minority class
    bal = est_cls(C=1.0, tol=1e-6, class_weight="balanced").fit(X, y)
    rec = lambda m: np.mean(m.predict(X)[y == minority] == minority)  # noqa: E731
    assert rec(bal) > rec(base)
    # class_weight is a per-class sample_weight
    cw = {0: 0.7, 1: 2.5}
    a = est_cls(C=1.0, class_weight=cw, **TIGHT).fit(X, y)
    b = est_cls(C=1.0, **TIGHT).fit(X, y, sample_weight=np.where(y == 1, 2.5, 0.7))
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------- equivalent inputs
@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_dense_csr_float32_same_model(est_cls, kernel):
    X, y = dataset("clf_hard")
    X, y = sparsify(X[:250], density=0.3), y[:250]
    ref = est_cls(kernel=kernel, tol=1e-6).fit(X, y)
    A = sp.csr_matrix(X)
    for Xs in (A, with_int64_indices(A)):
        m = est_cls(kernel=kernel, tol=1e-6).fit(Xs, y)
        assert sp.issparse(m.support_vectors_)
        np.testing.assert_array_equal(m.support_, ref.support_)
        np.testing.assert_allclose(m.dual_coef_, ref.dual_coef_, rtol=0, atol=1e-6)
        np.testing.assert_allclose(m.intercept_, ref.intercept_, rtol=0, atol=1e-6)
        np.testing.assert_allclose(m.predict_proba(Xs), ref.predict_proba(X), rtol=0, atol=1e-6)
        np.testing.assert_allclose(m.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-6)
    # float32 input is the float64 model of the float32-rounded data
    X32 = X.astype(np.float32)
    m32 = est_cls(kernel=kernel, tol=1e-6).fit(X32, y)
    m64 = est_cls(kernel=kernel, tol=1e-6).fit(X32.astype(np.float64), y)
    np.testing.assert_array_equal(m32.support_, m64.support_)
    np.testing.assert_allclose(m32.dual_coef_, m64.dual_coef_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(m32.predict_proba(X32), m64.predict_proba(X32), rtol=0, atol=1e-9)
    # and close to the float64 model of the original data
    np.testing.assert_allclose(m32.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-4)


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("name", ["moons", "wine"])
def test_precomputed_equals_rbf(est_cls, name):
    X, y = _data(name, n=200)
    Xtr, Xte = X[::2], X[1::2]
    ytr = y[::2]
    m = est_cls(gamma=0.3, **TIGHT).fit(Xtr, ytr)
    p = est_cls(kernel="precomputed", **TIGHT).fit(rbf_kernel(Xtr, gamma=0.3), ytr)
    np.testing.assert_array_equal(p.support_, m.support_)
    assert p.support_vectors_.size == 0
    np.testing.assert_allclose(p.dual_objective_, m.dual_objective_, rtol=1e-7)
    np.testing.assert_allclose(p.predict_proba(rbf_kernel(Xte, Xtr, gamma=0.3)), m.predict_proba(Xte),
                               rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------------------- extreme / degenerate
@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("C", [1e-4, 1e-2, 1.0, 1e2, 1e4])
def test_extreme_C(est_cls, C):
    X, y = _data("moons", n=60)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = est_cls(C=C, max_iter=10**6).fit(X, y)
    assert m.converged_
    for attr in ("dual_coef_", "intercept_", "dual_objective_", "kkt_gap_", "bound_"):
        assert np.all(np.isfinite(getattr(m, attr))), attr
    assert np.isfinite(m.duality_gap_) and m.duality_gap_ >= 0
    assert np.all(m.bound_ <= 1e-3 * C)
    P = m.predict_proba(X)
    assert np.all(np.isfinite(P)) and np.all((P >= 0) & (P <= 1))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(np.isfinite(m.decision_function(X)))


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
def test_duplicates_and_constant_features(est_cls):
    X, y = _data("moons", n=80)
    Xd = np.vstack([X, X[:20], X[:20]])
    yd = np.concatenate([y, y[:20], y[:20]])
    Xd = np.column_stack([Xd, np.full(len(yd), 3.0)])  # a constant feature
    m = est_cls().fit(Xd, yd)
    assert m.converged_ and np.all(np.isfinite(m.dual_coef_))
    P = m.predict_proba(Xd)
    assert np.all(np.isfinite(P)) and np.all((P > 0) & (P < 1))
    # identical rows get identical outputs
    np.testing.assert_allclose(P[80:100], P[:20], rtol=0, atol=1e-12)
    # all-constant X: every point is the same, the model is the class prior of the fit
    Xc = np.ones((40, 3))
    yc = np.repeat([0, 1], [25, 15])
    mc = est_cls(tol=1e-8).fit(Xc, yc)
    Pc = mc.predict_proba(Xc)
    assert np.all(np.isfinite(Pc))
    np.testing.assert_allclose(Pc, Pc[:1].repeat(40, axis=0), rtol=0, atol=1e-12)
    assert Pc[0, 0] > 0.5


# ---------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("sparse", [False, True])
def test_non_finite_X(binary, est_cls, bad, sparse):
    X, y = binary
    X = X.copy()
    X[3, 2] = bad
    Xin = sp.csr_matrix(X) if sparse else X
    with pytest.raises(ValueError, match="NaN|infinity"):
        est_cls().fit(Xin, y)
    m = est_cls().fit(binary[0], y)
    for method in (m.predict, m.predict_proba, m.decision_function):
        with pytest.raises(ValueError, match="NaN|infinity"):
            method(Xin[:5])


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
def test_one_class(binary, est_cls):
    X, y = binary
    with pytest.raises(ValueError, match="class"):
        est_cls().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="class"):  # the other class has zero weight
        est_cls().fit(X, y, sample_weight=(y == 1).astype(float))


COMMON_BAD = [
    (dict(C=0.0), "C"), (dict(C=-1.0), "C"), (dict(C=np.nan), "C"), (dict(C="1"), "C"),
    (dict(tol=0.0), "tol"), (dict(tol=-1e-3), "tol"),
    (dict(wss="x"), "wss"), (dict(wss="third"), "wss"),
    (dict(bound=0.0), "bound"), (dict(bound=-1e-5), "bound"), (dict(bound="x"), "bound"),
    (dict(bound=np.nan), "bound"), (dict(bound=True), "bound"),
    (dict(bound=0.5), "bound"), (dict(bound=0.7), "bound"), (dict(C=1e-3, bound=6e-4), "bound"),
    (dict(max_iter=0), "max_iter"), (dict(max_iter=-2), "max_iter"), (dict(max_iter=2.5), "max_iter"),
    (dict(kernel="foo"), "kernel"), (dict(gamma=-1.0), "gamma"), (dict(cache_size=0), "cache_size"),
    (dict(n_jobs=0), "n_jobs"),
]


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("params,match", COMMON_BAD,
                         ids=[",".join(f"{k}={v!r}" for k, v in p.items()) for p, _ in COMMON_BAD])
def test_bad_parameters(binary, est_cls, params, match):
    X, y = binary
    with pytest.raises(ValueError, match=match):
        est_cls(**params).fit(X, y)


@pytest.mark.parametrize("lam", [-1.0, -1e-12, np.nan, np.inf, "foo", "Auto", None, True])
def test_bad_lam(binary, lam):
    X, y = binary
    with pytest.raises(ValueError, match="lam"):
        SparseKernelLogisticRegression(lam=lam).fit(X, y)


def test_lam_auto_is_auto_lam(binary):
    from sparsekernel.klr import auto_lam

    X, y = binary
    a = SparseKernelLogisticRegression(C=3.0, tol=1e-6).fit(X, y)
    b = SparseKernelLogisticRegression(C=3.0, lam=auto_lam(3.0), tol=1e-6).fit(X, y)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert a.lam_ == auto_lam(3.0) == pytest.approx(0.75)  # C / 4 at this C
    assert a.rho_ == pytest.approx(0.75, abs=1e-3)


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
def test_predict_wrong_n_features(binary, est_cls):
    X, y = binary
    m = est_cls().fit(X, y)
    for method in (m.predict, m.predict_proba, m.predict_log_proba, m.decision_function):
        with pytest.raises(ValueError, match="features"):
            method(X[:, :5])
    mp = est_cls(kernel="precomputed").fit(rbf_kernel(X, gamma=0.01), y)
    with pytest.raises(ValueError, match="features|precomputed"):
        mp.predict(rbf_kernel(X[:5], X[:-1], gamma=0.01))
    with pytest.raises(ValueError, match="square"):
        est_cls(kernel="precomputed").fit(rbf_kernel(X, X[:-1], gamma=0.01), y)


@pytest.mark.parametrize("est_cls", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("method", ["predict", "predict_proba", "predict_log_proba", "decision_function"])
def test_not_fitted(binary, est_cls, method):
    with pytest.raises(NotFittedError):
        getattr(est_cls(), method)(binary[0])


def test_lambda_bound_validation(binary):
    X, y = binary
    with pytest.raises(ValueError, match="two classes"):
        klr_lambda_bound(*_data("iris"))
    with pytest.raises(ValueError, match="C"):
        klr_lambda_bound(X, y, C=0.0)
    with pytest.raises(ValueError, match="kernel"):
        klr_lambda_bound(X, y, kernel="foo")
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN|infinity"):
        klr_lambda_bound(Xn, y)
    assert np.isfinite(klr_lambda_bound(X, y))


# ---------------------------------------------------------------------------------------- sklearn checks
# Only the expected failures that scikit-learn itself declares for its comparable estimators
# (sklearn/utils/_test_common/instance_generator.py, PER_ESTIMATOR_XFAIL_CHECKS for SVC and
# LogisticRegression): at the default tol=1e-3 the weighted and the repeated-rows problems are
# solved to slightly different points, beyond the check's rtol=1e-7. The equivalence itself is
# tested above at a tight tolerance (test_integer_sample_weight_equals_repeated_rows).
_SHARED_WITH_SKLEARN = {
    "check_sample_weight_equivalence_on_dense_data": (
        "as sklearn.svm.SVC / LogisticRegression: sample_weight is not equivalent to removing/repeating "
        "samples to rtol=1e-7 at the default tol=1e-3"),
    "check_sample_weight_equivalence_on_sparse_data": (
        "as sklearn.svm.SVC / LogisticRegression: sample_weight is not equivalent to removing/repeating "
        "samples to rtol=1e-7 at the default tol=1e-3"),
}


def _expected_failed_checks(estimator):
    expected = dict(_SHARED_WITH_SKLEARN)
    if estimator.kernel == "precomputed":
        # the check feeds a non-square (80, 4) X to fit, which a precomputed kernel must reject;
        # sklearn.svm.SVC(kernel='precomputed', probability=True) fails it the same way
        expected["check_decision_proba_consistency"] = "fits a non-square matrix as a precomputed kernel"
    return expected


@parametrize_with_checks([KernelLogisticRegression(), SparseKernelLogisticRegression(),
                          KernelLogisticRegression(kernel="precomputed"),
                          SparseKernelLogisticRegression(kernel="precomputed")],
                         expected_failed_checks=_expected_failed_checks)
def test_klr_sklearn_compatible(estimator, check):
    check(estimator)
