"""Equivalences: different inputs / options that must give the same model.

Dense vs CSR (int32 and int64 indices), float32 vs float64, shrinking on/off, pair vs batched
routes, threads, integer sample weights vs repeated rows, class_weight, tiny kernel caches,
pickling; plus max_iter's ConvergenceWarning, the cache budget, the multiclass decision shapes
and break_ties.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC as SkSVC
from sklearn.utils.class_weight import compute_class_weight

from _helpers import dataset, dual_objectives, to_dense, model_kernel, sparsify, with_int64_indices
from sparsekernel import SVC

KERNELS = [
    dict(kernel="rbf"),
    dict(kernel="linear"),
    dict(kernel="poly", degree=3, coef0=1.0),
    dict(kernel="sigmoid", gamma=0.01),
    dict(kernel="laplacian", gamma=0.05),
]
KERNEL_IDS = [k["kernel"] for k in KERNELS]


def _objective(model, X):
    kf = model_kernel(model)
    return dual_objectives(model, kf(model.support_vectors_, model.support_vectors_))


def _assert_same_model(a, b, coef_atol=1e-6, dec_X=None, dec_Xb=None):
    np.testing.assert_array_equal(a.classes_, b.classes_)
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_array_equal(a.n_support_, b.n_support_)
    np.testing.assert_allclose(to_dense(a.dual_coef_), to_dense(b.dual_coef_), rtol=0, atol=coef_atol)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=coef_atol)
    if dec_X is not None:
        np.testing.assert_array_equal(a.predict(dec_X), b.predict(dec_Xb if dec_Xb is not None else dec_X))


# ---------------------------------------------------------------------------------------- sparse
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("solver", ["smo2", "batched"])
@pytest.mark.parametrize("params", KERNELS, ids=KERNEL_IDS)
@pytest.mark.parametrize("name", ["clf_hard", "digits_binary", "digits"])
def test_dense_vs_csr(name, params, solver, index_dtype):
    X, y = dataset(name)
    if name == "clf_hard":
        X = sparsify(X, density=0.3)  # a dense data set is not sparse: make it so
    A = sp.csr_matrix(X)
    if index_dtype == np.int64:
        A = with_int64_indices(A)
    assert A.nnz < 0.6 * X.size
    dense = SVC(solver=solver, **params).fit(X, y)
    csr = SVC(solver=solver, **params).fit(A, y)
    assert sp.issparse(csr.support_vectors_) and sp.issparse(csr.dual_coef_)  # as scikit-learn
    assert not sp.issparse(dense.dual_coef_)
    np.testing.assert_allclose(csr.support_vectors_.toarray(), dense.support_vectors_)
    np.testing.assert_allclose(csr._gamma, dense._gamma, rtol=1e-12)
    _assert_same_model(dense, csr, coef_atol=1e-6)
    # all four combinations of fitted model / prediction input agree
    Xt = X[::3]
    At = A[::3]
    if index_dtype == np.int64:
        At = with_int64_indices(At)
    d_ref = dense.decision_function(Xt)
    for model in (dense, csr):
        for inp in (Xt, At):
            np.testing.assert_allclose(model.decision_function(inp), d_ref, rtol=1e-9, atol=1e-6)
            np.testing.assert_array_equal(model.predict(inp), dense.predict(Xt))


def _rebuild_csr(A, reverse=False, explicit_zeros=0, split_first=False):
    """The same matrix as CSR A, stored differently: columns reversed inside each row, explicit
    zeros in otherwise empty columns, or the first stored value of each row split into two
    duplicate entries (scipy sums duplicates: toarray() is unchanged)."""
    rows, data, cols = [], [], []
    for i in range(A.shape[0]):
        s = slice(A.indptr[i], A.indptr[i + 1])
        c, d = list(A.indices[s]), list(A.data[s])
        if reverse:
            c, d = c[::-1], d[::-1]
        if explicit_zeros:
            free = [j for j in range(A.shape[1]) if j not in c][:explicit_zeros]
            c, d = c + free, d + [0.0] * len(free)
        if split_first and c:
            c, d = c + [c[0]], [d[0] / 2] + d[1:] + [d[0] / 2]
        cols += c
        data += d
        rows.append(len(c))
    indptr = np.concatenate([[0], np.cumsum(rows)])
    B = sp.csr_matrix((np.array(data), np.array(cols), indptr), shape=A.shape)
    np.testing.assert_array_equal(B.toarray(), A.toarray())
    return B


def test_csr_unsorted_indices_and_explicit_zeros():
    X, y = dataset("clf_hard")
    X = sparsify(X, density=0.3, seed=3)
    A = sp.csr_matrix(X)
    B = _rebuild_csr(A, reverse=True, explicit_zeros=2)
    assert not B.has_sorted_indices and B.nnz > A.nnz
    ref = SVC().fit(A, y)
    model = SVC().fit(B, y)
    _assert_same_model(ref, model, coef_atol=1e-12)
    np.testing.assert_allclose(model.decision_function(B), ref.decision_function(A), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ref.decision_function(B), ref.decision_function(A), rtol=0, atol=1e-12)
    # and the same solution as the dense input (the dense rbf rows use another formula, so the SMO
    # paths differ in the last bits: compare the objective and the predictions)
    _same_solution(SVC().fit(X, y), model, X, rtol=1e-6)


def test_csr_duplicate_entries_are_summed():
    """scipy's CSR allows duplicate (row, column) entries, meaning their sum (toarray(),
    sum_duplicates(), A @ B all agree). The model must be that of the summed matrix.
    NB: sklearn.svm.SVC gets this wrong too; sparsekernel could canonicalise in core_matrix."""
    X, y = dataset("clf_hard")
    X = sparsify(X, density=0.3, seed=3)
    A = sp.csr_matrix(X)
    B = _rebuild_csr(A, split_first=True)
    assert not B.has_canonical_format
    ref = SVC().fit(A, y)
    # prediction with a non-canonical CSR input
    np.testing.assert_allclose(ref.decision_function(B), ref.decision_function(A), rtol=0, atol=1e-12)
    # fit on a non-canonical CSR input
    model = SVC().fit(B, y)
    _same_solution(ref, model, X, rtol=1e-9)


# ---------------------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("params", KERNELS[:3], ids=KERNEL_IDS[:3])
@pytest.mark.parametrize("name", ["breast_cancer", "wine", "digits"])
def test_float32_vs_float64(name, params):
    X, y = dataset(name)
    X32 = X.astype(np.float32)
    m64 = SVC(**params).fit(X, y)
    m32 = SVC(**params).fit(X32, y)
    # float32 input is the float32-rounded data: same problem up to 1e-7 relative perturbations
    assert np.mean(m64.predict(X) == m32.predict(X32)) >= 0.995
    assert np.mean(m64.predict(X) == m32.predict(X)) >= 0.995
    o64, o32 = _objective(m64, X), _objective(m32, X32)
    np.testing.assert_allclose(o32, o64, rtol=1e-3)
    # the float32 values are used exactly: the same values in float64 give the same model (gamma
    # fixed here: gamma='scale' on float32 input is covered by test_kernels.py)
    Xr = X32.astype(np.float64)
    g = 1.0 / (X.shape[1] * Xr.var())
    mr = SVC(gamma=g, **params).fit(Xr, y)
    m32g = SVC(gamma=g, **params).fit(X32, y)
    _assert_same_model(mr, m32g, coef_atol=1e-12, dec_X=Xr, dec_Xb=X32)
    np.testing.assert_allclose(m32g.decision_function(X32), mr.decision_function(Xr), rtol=0, atol=1e-12)


def test_non_contiguous_and_list_input():
    X, y = dataset("wine")
    XF = np.asfortranarray(X)
    Xs = np.repeat(X, 2, axis=1)[:, ::2]  # a strided view
    ref = SVC().fit(X, y)
    for inp in (XF, Xs, X.tolist()):
        _assert_same_model(ref, SVC().fit(inp, y), coef_atol=0)
    # labels of any type, order preserved in classes_
    labels = np.array(["alpha", "beta", "gamma"])
    m = SVC().fit(X, labels[y])
    np.testing.assert_array_equal(m.classes_, labels)
    np.testing.assert_array_equal(m.predict(X), labels[ref.predict(X)])
    np.testing.assert_allclose(m.dual_coef_, ref.dual_coef_)


# ---------------------------------------------------------------------------------------- solver options
CASES = [("breast_cancer", dict(kernel="rbf"), 1.0), ("breast_cancer", dict(kernel="rbf"), 100.0),
         ("clf_hard", dict(kernel="linear"), 1.0), ("moons", dict(kernel="poly", coef0=1.0), 10.0),
         ("digits", dict(kernel="rbf"), 5.0), ("wine", dict(kernel="laplacian", gamma=0.05), 1.0)]
CASE_IDS = [f"{c[0]}-{c[1]['kernel']}-C{c[2]:g}" for c in CASES]


def _same_solution(a, b, X, rtol=1e-4):
    np.testing.assert_allclose(_objective(a, X), _objective(b, X), rtol=rtol)
    assert np.mean(a.predict(X) == b.predict(X)) >= 0.995


@pytest.mark.parametrize("solver", ["smo2", "smo1", "batched"])
@pytest.mark.parametrize("name,params,C", CASES, ids=CASE_IDS)
def test_shrinking_on_off(name, params, C, solver):
    X, y = dataset(name)
    on = SVC(C=C, shrinking=True, solver=solver, **params).fit(X, y)
    off = SVC(C=C, shrinking=False, solver=solver, **params).fit(X, y)
    _same_solution(on, off, X)
    assert np.all(on.kkt_gap_ <= on.tol) and np.all(off.kkt_gap_ <= off.tol)


@pytest.mark.parametrize("q", [None, 4, 16, 64])
@pytest.mark.parametrize("name,params,C", CASES, ids=CASE_IDS)
def test_pair_vs_batched(name, params, C, q):
    X, y = dataset(name)
    pair = SVC(C=C, solver="smo2", **params).fit(X, y)
    batched = SVC(C=C, solver="batched", working_set_size=q, **params).fit(X, y)
    _same_solution(pair, batched, X)
    stats = batched.solver_stats_[0]
    if q is not None:
        assert stats["q"] <= q
    if q == 4:  # tiny blocks: many outer iterations
        assert stats["n_outer_iter"] > 10


def test_auto_solver_is_a_route():
    X, y = dataset("breast_cancer")
    auto = SVC(solver="auto").fit(X, y)
    routes = [SVC(solver=s).fit(X, y) for s in ("smo2", "smo1", "batched")]
    assert any(np.array_equal(auto.dual_coef_, r.dual_coef_) and np.array_equal(auto.support_, r.support_)
               for r in routes)


@pytest.mark.parametrize("solver", ["smo2", "smo1", "batched"])
@pytest.mark.parametrize("name", ["breast_cancer", "digits", "clf_multi"])
def test_n_jobs_does_not_change_the_solution(name, solver):
    X, y = dataset(name)
    one = SVC(C=10.0, solver=solver, n_jobs=1).fit(X, y)
    two = SVC(C=10.0, solver=solver, n_jobs=2).fit(X, y)
    _assert_same_model(one, two, coef_atol=1e-10, dec_X=X)
    np.testing.assert_array_equal(one.n_iter_, two.n_iter_)
    np.testing.assert_allclose(one.decision_function(X), two.decision_function(X), rtol=0, atol=1e-10)
    # and refitting is deterministic
    again = SVC(C=10.0, solver=solver, n_jobs=2).fit(X, y)
    _assert_same_model(two, again, coef_atol=0)


def test_n_jobs_minus_one_and_none():
    X, y = dataset("wine")
    ref = SVC(n_jobs=1).fit(X, y)
    for n_jobs in (None, -1, -2, 3):
        _assert_same_model(ref, SVC(n_jobs=n_jobs).fit(X, y), coef_atol=1e-10, dec_X=X)


# ---------------------------------------------------------------------------------------- weights
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("name", ["moons", "wine"])
def test_integer_sample_weight_equals_repeated_rows(name, kernel):
    X, y = dataset(name)
    rng = np.random.default_rng(0)
    w = rng.integers(0, 4, size=len(y))  # 0 drops the row
    Xr, yr = np.repeat(X, w, axis=0), np.repeat(y, w)
    gamma = 1.0 / (X.shape[1] * X.var())  # 'scale' depends on the rows: fix it
    kw = dict(kernel=kernel, gamma=gamma, C=3.0, tol=1e-7)
    weighted = SVC(**kw).fit(X, y, sample_weight=w)
    repeated = SVC(**kw).fit(Xr, yr)
    # the duals differ (repeated rows split their alpha) but the primal solution is the same
    d_w, d_r = weighted.decision_function(X), repeated.decision_function(X)
    np.testing.assert_allclose(d_w, d_r, atol=1e-3)
    np.testing.assert_array_equal(weighted.predict(X), repeated.predict(X))
    # and so is the optimal value: the weighted dual objective equals the repeated one
    np.testing.assert_allclose(weighted.dual_objective_.sum(), repeated.dual_objective_.sum(), rtol=1e-4)


def test_sample_weight_ones_is_no_weight_and_scaling_is_C():
    X, y = dataset("breast_cancer")
    ref = SVC(C=2.0).fit(X, y)
    _assert_same_model(ref, SVC(C=2.0).fit(X, y, sample_weight=np.ones(len(y))), coef_atol=0)
    # C * sw = const: sample_weight 4 everywhere with C/4 is the same problem
    _assert_same_model(ref, SVC(C=0.5).fit(X, y, sample_weight=np.full(len(y), 4.0)), coef_atol=1e-12)


def test_zero_weight_samples_are_ignored():
    X, y = dataset("clf_hard")
    rng = np.random.default_rng(1)
    w = (rng.random(len(y)) > 0.3).astype(float)
    keep = w > 0
    gamma = 1.0 / (X.shape[1] * X.var())
    weighted = SVC(gamma=gamma, tol=1e-6).fit(X, y, sample_weight=w)
    subset = SVC(gamma=gamma, tol=1e-6).fit(X[keep], y[keep])
    np.testing.assert_array_equal(np.flatnonzero(keep)[subset.support_], weighted.support_)
    np.testing.assert_allclose(weighted.dual_coef_, subset.dual_coef_, atol=1e-6)
    np.testing.assert_allclose(weighted.decision_function(X), subset.decision_function(X), atol=1e-5)


@pytest.mark.parametrize("name", ["clf_imbalanced", "wine"])
def test_class_weight_balanced(name):
    X, y = dataset(name)
    classes = np.unique(y)
    cw = compute_class_weight("balanced", classes=classes, y=y)
    balanced = SVC(class_weight="balanced").fit(X, y)
    as_dict = SVC(class_weight=dict(zip(classes, cw))).fit(X, y)
    as_sw = SVC().fit(X, y, sample_weight=cw[np.searchsorted(classes, y)])
    _assert_same_model(balanced, as_dict, coef_atol=0)
    _assert_same_model(balanced, as_sw, coef_atol=1e-12)
    # the weights matter (the minority class gets a larger box) ...
    plain = SVC().fit(X, y)
    assert not np.allclose(plain.decision_function(X), balanced.decision_function(X), atol=1e-3)
    # ... exactly as in LIBSVM
    ref = SkSVC(class_weight="balanced").fit(X, y)
    kf = model_kernel(balanced)
    np.testing.assert_allclose(
        dual_objectives(balanced, kf(balanced.support_vectors_, balanced.support_vectors_)),
        dual_objectives(ref, kf(ref.support_vectors_, ref.support_vectors_)), rtol=1e-3)
    assert np.mean(balanced.predict(X) == ref.predict(X)) >= 0.995
    if name == "clf_imbalanced":  # balanced weights raise the recall of the minority class
        minority = classes[np.argmin(np.bincount(np.searchsorted(classes, y)))]
        rec = lambda m: np.mean(m.predict(X[y == minority]) == minority)  # noqa: E731
        assert rec(balanced) > rec(plain)


# ---------------------------------------------------------------------------------------- cache
@pytest.mark.parametrize("solver", ["smo2", "smo1", "batched"])
@pytest.mark.parametrize("cache_size", [0.001, 0.01, 0.05, 0.2, 0.5])
def test_tiny_cache_same_solution(cache_size, solver):
    X, y = dataset("breast_cancer")  # 569 rows: a float32 row is 2276 bytes
    n = len(y)
    ref = SVC(C=10.0, solver=solver).fit(X, y)
    model = SVC(C=10.0, solver=solver, cache_size=cache_size).fit(X, y)
    _same_solution(ref, model, X, rtol=1e-5)
    budget = cache_size * 2**20
    st = model.solver_stats_[0]
    assert st["cache_peak_bytes"] <= budget
    if budget < 2 * n * 4:  # below two rows: nothing is cached (the scratch path)
        assert st["cache_peak_bytes"] == 0
        assert st["cache_hits"] == 0
    else:
        assert st["cache_peak_bytes"] > 0


@pytest.fixture(scope="module")
def medium_problem():
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(n_samples=1500, n_features=15, n_informative=8, flip_y=0.05, random_state=7)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize("solver", ["smo2", "smo1", "batched"])
def test_cache_pressure_medium_problem(medium_problem, solver):
    """n = 1500 (a row is 6000 bytes): budgets from no row to the whole matrix, with shrinking and
    the block/prefetch paths evicting rows under each other; every budget gives the same optimum."""
    X, y = medium_problem
    ref = SVC(C=10.0, solver="smo2", cache_size=200, tol=1e-4).fit(X, y)
    for cache_size in (0.005, 0.02, 0.1, 0.6, 3.0):
        model = SVC(C=10.0, solver=solver, cache_size=cache_size, tol=1e-4).fit(X, y)
        _same_solution(ref, model, X, rtol=1e-6)
        assert model.solver_stats_[0]["cache_peak_bytes"] <= cache_size * 2**20
        assert model.kkt_gap_[0] <= 1e-4


def test_prefetch_knob_does_not_change_the_optimum(monkeypatch, medium_problem):
    """The pair route may compute extra rows per cache miss (an internal knob): same optimum."""
    from sparsekernel import svm

    if not hasattr(svm, "_PREFETCH"):
        pytest.skip("no prefetch knob in this build")
    X, y = medium_problem
    ref = SVC(C=10.0, solver="smo2", tol=1e-4, cache_size=0.6).fit(X, y)
    for prefetch in (0, 1, 2, 7, 64, 1000):
        monkeypatch.setattr(svm, "_PREFETCH", prefetch)
        model = SVC(C=10.0, solver="smo2", tol=1e-4, cache_size=0.6).fit(X, y)
        _same_solution(ref, model, X, rtol=1e-6)
        assert model.solver_stats_[0]["cache_peak_bytes"] <= 0.6 * 2**20


@pytest.mark.parametrize("solver", ["smo2", "batched"])
@pytest.mark.parametrize("cache_size", [0.01, 0.2, 1.0, 200])
def test_cache_budget_never_exceeded(cache_size, solver):
    X, y = dataset("digits")
    model = SVC(C=10.0, solver=solver, cache_size=cache_size).fit(X, y)
    for st in model.solver_stats_:
        assert 0 <= st["cache_peak_bytes"] <= cache_size * 2**20
        assert st["cache_hits"] >= 0 and st["cache_misses"] > 0
    assert len(model.solver_stats_) == 45
    assert np.all(model.n_kernel_evals_ > 0)


def test_cache_stats_consistent():
    X, y = dataset("breast_cancer")
    model = SVC(C=10.0, solver="smo2", cache_size=200).fit(X, y)
    st = model.solver_stats_[0]
    n = len(y)
    # the whole 569 x 569 float32 matrix fits: every row is computed at most once, in full
    assert st["cache_peak_bytes"] <= n * n * 4
    assert model.n_kernel_evals_[0] <= n * n + n
    assert st["n_iter"] == model.n_iter_[0]
    assert st["status"] == 0 and st["gap"] == model.kkt_gap_[0] and st["obj"] == model.dual_objective_[0]


# ---------------------------------------------------------------------------------------- max_iter
@pytest.mark.parametrize("solver", ["smo2", "smo1", "batched"])
def test_max_iter_warns_and_flags(solver):
    X, y = dataset("breast_cancer")
    with pytest.warns(ConvergenceWarning):
        model = SVC(C=100.0, max_iter=5, solver=solver).fit(X, y)
    assert model.converged_ is False
    assert model.fit_status_ == 1
    assert model.solver_stats_[0]["status"] == 1
    assert model.kkt_gap_[0] > model.tol
    if solver != "batched":  # the batched route stops after the block that crosses max_iter
        assert model.n_iter_[0] == 5
    # still a usable (feasible) model
    assert np.all(np.abs(model.dual_coef_) <= 100.0 + 1e-12)
    assert abs(model.dual_coef_.sum()) < 1e-9
    model.predict(X)
    # without the cap: no warning, converged
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        full = SVC(C=100.0, solver=solver).fit(X, y)
    assert full.converged_ is True and full.fit_status_ == 0


def test_max_iter_multiclass_any_pair_flags():
    X, y = dataset("iris")
    with pytest.warns(ConvergenceWarning):
        model = SVC(C=1000.0, max_iter=3).fit(X, y)
    assert model.converged_ is False


# ---------------------------------------------------------------------------------------- pickling
@pytest.mark.parametrize("sparse_input", [False, True])
@pytest.mark.parametrize("name,params", [("breast_cancer", dict(kernel="rbf")), ("wine", dict(kernel="poly")),
                                         ("digits", dict(kernel="linear"))])
def test_pickle_round_trip(name, params, sparse_input):
    X, y = dataset(name)
    Xf = sp.csr_matrix(X) if sparse_input else X
    model = SVC(**params).fit(Xf, y)
    dec = model.decision_function(Xf)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(Xf), model.predict(Xf))
    np.testing.assert_array_equal(clone.decision_function(Xf), dec)
    # the clone does not depend on the original's memory
    del model
    import gc

    gc.collect()
    np.testing.assert_array_equal(clone.decision_function(Xf), dec)
    # and refits
    clone.fit(Xf, y)
    np.testing.assert_allclose(clone.decision_function(Xf), dec)


def test_pickle_precomputed():
    X, y = dataset("iris")
    K = X @ X.T
    model = SVC(kernel="precomputed").fit(K, y)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.decision_function(K), model.decision_function(K))


# ---------------------------------------------------------------------------------------- multiclass
@pytest.mark.parametrize("name", ["iris", "wine", "digits", "clf_multi"])
def test_multiclass_shapes_and_predict_vs_sklearn(name):
    X, y = dataset(name)
    k = len(np.unique(y))
    for shape, width in (("ovo", k * (k - 1) // 2), ("ovr", k)):
        model = SVC(decision_function_shape=shape, tol=1e-5).fit(X, y)
        ref = SkSVC(decision_function_shape=shape, tol=1e-5).fit(X, y)
        d = model.decision_function(X)
        assert d.shape == (len(y), width) == ref.decision_function(X).shape
        pred = model.predict(X)
        assert np.mean(pred == ref.predict(X)) >= 0.995
        if shape == "ovr":
            # LIBSVM ovr: votes + a confidence in (-1/3, 1/3): its integer part is the vote count,
            # so its argmax is the vote winner wherever the vote has a unique winner
            votes = np.round(d)
            np.testing.assert_allclose(np.abs(d - votes), np.abs(d - votes).clip(max=1 / 3))
            np.testing.assert_array_equal(votes.sum(axis=1), k * (k - 1) // 2)
            top = np.sort(votes, axis=1)
            unique = top[:, -1] > top[:, -2]
            assert unique.mean() > 0.9
            np.testing.assert_array_equal(model.classes_[np.argmax(d, axis=1)][unique], pred[unique])
            np.testing.assert_allclose(d, ref.decision_function(X), atol=5e-3)
        else:
            np.testing.assert_allclose(d, ref.decision_function(X), atol=5e-3)


def test_predict_is_the_ovo_vote():
    X, y = dataset("digits")
    model = SVC(decision_function_shape="ovo").fit(X, y)
    d = model.decision_function(X)
    k = len(model.classes_)
    votes = np.zeros((len(y), k), dtype=int)
    col = 0
    for a in range(k):
        for b in range(a + 1, k):
            votes[:, a] += d[:, col] > 0
            votes[:, b] += d[:, col] <= 0
            col += 1
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(votes, axis=1)])


def test_break_ties():
    X, y = dataset("clf_multi")
    rng = np.random.default_rng(0)
    Xt = rng.standard_normal((600, X.shape[1])) * 2.0  # far points: many 3-way vote ties
    model = SVC(break_ties=True).fit(X, y)
    ref = SkSVC(break_ties=True).fit(X, y)
    plain = SVC(break_ties=False).fit(X, y)
    d = model.decision_function(Xt)
    np.testing.assert_array_equal(model.predict(Xt), model.classes_[np.argmax(d, axis=1)])
    assert np.mean(model.predict(Xt) == ref.predict(Xt)) >= 0.99
    # ties do occur here, so break_ties changes some predictions
    assert np.any(model.predict(Xt) != plain.predict(Xt))
    assert np.mean(plain.predict(Xt) == SkSVC().fit(X, y).predict(Xt)) >= 0.99
    # as scikit-learn: the combination fits, and predict refuses it
    ovo = SVC(break_ties=True, decision_function_shape="ovo").fit(X, y)
    with pytest.raises(ValueError, match="break_ties"):
        ovo.predict(Xt)


def test_binary_decision_shape_ignores_ovo():
    X, y = dataset("breast_cancer")
    for shape in ("ovo", "ovr"):
        d = SVC(decision_function_shape=shape).fit(X, y).decision_function(X)
        assert d.shape == (len(y),)
