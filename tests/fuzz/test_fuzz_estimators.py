"""Property-based fuzzing of every public estimator (hypothesis).

Whatever a user passes, a fit either gives a model whose outputs are finite, of the right shapes and
consistent with each other, or raises ValueError / TypeError with a message; never a crash, a hang
or a warning storm. The cases run in-process, so a segfault or an abort fails the whole run (the
sanitizer build, scripts/sanitize.sh, runs them too).

Profiles: ``ci`` (the default, a few seconds per estimator) and ``long`` (SK_FUZZ_PROFILE=long,
10,000 cases per estimator, for the robustness report).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from _fuzz import BAD, MAX_WARNINGS, TIME_LIMIT, pick as _pick, record  # also loads the hypothesis profile
from sparsekernel import (NSSVC, SLMC, SVC, SVR, KernelLogisticRegression, NuSVC, NuSVR, OneClassSVM, PathSearchCV,
                          SparseKernelLogisticRegression, SparseKFD)


# hyper-parameter values: (valid, including extreme ones), (invalid)
C_VALUES = ([1.0, 0.3, 1e-12, 1e6], [0.0, -1.0, float("nan")])
GAMMA_VALUES = (["scale", "auto", 0.5, 1e-9, 1e3], [0.0, -1.0, float("nan")])
TOL_VALUES = ([1e-3, 1e-12, 10.0], [0.0, -1.0])
CACHE_VALUES = ([200, 0.001, 1], [0, -5])
ITER_VALUES = ([-1, 1, 5], [0])
NU_VALUES = ([0.5, 0.1, 1.0, 1e-9], [0.0, -0.1, 1.5, float("nan")])


@st.composite
def data(draw, regression=False):
    """(X, y): shapes from 0 samples up, dtypes of every kind, NaN / inf, duplicates, constant
    columns, sparse matrices with explicit zeros, unsorted or duplicate indices and int64 indices,
    non-contiguous and read-only arrays; labels of every kind."""
    n = draw(st.integers(0, 24))
    d = draw(st.integers(1, 5))
    values = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    X = np.array(draw(st.lists(values, min_size=n * d, max_size=n * d)), dtype=np.float64).reshape(n, d)
    if n and draw(st.booleans()):  # duplicate rows
        X[n // 2:] = X[: n - n // 2]
    if draw(st.booleans()):  # a constant column
        X[:, 0] = 1.0
    if n and draw(st.integers(0, 5)) == 0:  # a non-finite value somewhere
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    kind = draw(st.sampled_from(["f64", "f32", "f16", "int", "bool", "object", "fortran", "readonly", "strided",
                                 "csr", "csr-messy", "list"]))
    if kind == "f32":
        X = X.astype(np.float32)
    elif kind == "f16":
        X = X.astype(np.float16)
    elif kind == "int":
        X = np.clip(np.nan_to_num(X), -1e3, 1e3).astype(np.int64)
    elif kind == "bool":
        X = X > 0
    elif kind == "object":
        X = X.astype(object)
    elif kind == "fortran":
        X = np.asfortranarray(X)
    elif kind == "readonly":
        X.flags.writeable = False
    elif kind == "strided":
        X = np.repeat(X, 2, axis=1)[:, ::2]
    elif kind == "csr":
        X = sp.csr_matrix(X)
    elif kind == "csr-messy":
        X = _messy_csr(X, draw(st.booleans()))
    elif kind == "list":
        X = X.tolist()
    n_classes = draw(st.sampled_from([2, 2, 2, 3, 1]))
    if regression:
        y = np.array(draw(st.lists(values, min_size=n, max_size=n)))
    else:
        codes = np.array(draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n)), dtype=int)
        label_kind = draw(st.sampled_from(["int", "neg", "str", "float", "bool"]))
        y = {"int": codes, "neg": -codes - 3, "str": np.array(["a", "bb", "c"])[codes] if n else np.array([], str),
             "float": codes * 0.5 + 0.25, "bool": codes > 0}[label_kind]
    return X, y


def _messy_csr(X, int64_indices):
    """CSR of X with duplicate entries (scipy reads them as their sum), unsorted indices, an explicit
    zero in every row, and int64 index arrays when asked."""
    data, indices, indptr = [], [], [0]
    for row in np.asarray(X, dtype=np.float64):
        for j in np.flatnonzero(row)[::-1]:  # unsorted, each entry as two halves
            data += [row[j] / 2, row[j] / 2]
            indices += [j, j]
        data.append(0.0)
        indices.append(0)
        indptr.append(len(data))
    itype = np.int64 if int64_indices else np.int32
    M = sp.csr_matrix((np.array(data, dtype=np.float64), np.array(indices, dtype=itype),
                       np.array(indptr, dtype=itype)), shape=X.shape)
    if int64_indices:  # scipy's constructor may narrow them: set them afterwards
        M.indices, M.indptr = M.indices.astype(np.int64), M.indptr.astype(np.int64)
    return M


def _check_fitted(model, X, y, proba=True):
    """Outputs on the training inputs: finite, the right shapes, predict = argmax predict_proba."""
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    pred = model.predict(X)
    assert pred.shape == (n,)
    if hasattr(model, "decision_function"):
        dec = np.asarray(model.decision_function(X))
        assert dec.shape[0] == n and np.all(np.isfinite(dec))
    if hasattr(model, "classes_"):
        assert set(np.unique(pred)) <= set(model.classes_)
        if proba and hasattr(model, "predict_proba"):
            P = model.predict_proba(X)
            assert P.shape == (n, len(model.classes_)) and np.all(np.isfinite(P))
            np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-6)
            np.testing.assert_array_equal(model.classes_[np.argmax(P, axis=1)], pred)
    elif hasattr(model, "score_samples"):  # an outlier detector: +1 / -1, decision = score_samples - offset_
        assert set(np.unique(pred)) <= {-1, 1}
        scores = model.score_samples(X)
        assert scores.shape == (n,) and np.all(np.isfinite(scores))
        np.testing.assert_array_equal(pred, np.where(model.decision_function(X) > 0, 1, -1))
    else:
        assert np.all(np.isfinite(pred))


def _fit_or_clear_error(target, make, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = make().fit(X, y)
        except BAD as exc:
            assert str(exc), "an error without a message"
            record(target, "error")
            return None
        assert len(caught) <= MAX_WARNINGS, [str(w.message) for w in caught]
    record(target, "fit")
    return model


def _params(draw, extra=()):
    p = {"C": _pick(draw, C_VALUES), "gamma": _pick(draw, GAMMA_VALUES),
         "kernel": draw(st.sampled_from(["rbf", "linear", "poly", "sigmoid"]))}
    for name, values in extra:
        p[name] = _pick(draw, values)
    return p


SMO_EXTRA = (("tol", TOL_VALUES), ("cache_size", CACHE_VALUES), ("max_iter", ITER_VALUES))


# the SMO estimators: (class, their extra hyper-parameters, regression targets); C is drawn for
# the classes that have it
SMO_ESTIMATORS = {
    "svc": (SVC, SMO_EXTRA, False),
    "svr": (SVR, SMO_EXTRA + (("epsilon", ([0.1, 0.0, 1e6], [-1.0])),), True),
    "nusvc": (NuSVC, SMO_EXTRA + (("nu", NU_VALUES),), False),
    "nusvr": (NuSVR, SMO_EXTRA + (("nu", NU_VALUES),), True),
    "ocsvm": (OneClassSVM, SMO_EXTRA + (("nu", NU_VALUES),), False),  # the labels are drawn and ignored
    "klr": (KernelLogisticRegression, SMO_EXTRA[:2] + (("solver", (["auto", "smo", "nystrom"], ["newton"])),), False),
    "sklr": (SparseKernelLogisticRegression, SMO_EXTRA[:2] + (("lam", (["auto", 0.0, 0.5, 50.0], [-1.0, float("nan")])),),
             False),
}


@pytest.mark.parametrize("name", sorted(SMO_ESTIMATORS))
@given(draw=st.data())
def test_fuzz_smo_estimators(name, draw):
    cls, extra, regression = SMO_ESTIMATORS[name]
    X, y = draw.draw(data(regression=regression))
    p = _params(draw.draw, extra)
    if "C" not in cls().get_params():
        del p["C"]
    model = _fit_or_clear_error(name, lambda: cls(n_jobs=1, time_limit=TIME_LIMIT, **p), X, y)
    if model is not None:
        _check_fitted(model, X, y)


@given(data(), st.data())
def test_fuzz_nssvc(xy, draw):
    X, y = xy
    p = _params(draw.draw, (("s", (["auto", 1, 3, 10**9], [0, -2])),))
    p["C"] = _pick(draw.draw, ([0.25, 1e-9, 1e6], [0.0, -1.0, float("nan")]))
    model = _fit_or_clear_error("nssvc", lambda: NSSVC(n_jobs=1, max_iter=50, time_limit=TIME_LIMIT, **p), X, y)
    if model is not None:
        _check_fitted(model, X, y)


@pytest.mark.parametrize("cls", [SLMC, SparseKFD])
@given(xy=data(), draw=st.data())
def test_fuzz_expansion_models(cls, xy, draw):
    X, y = xy
    p = _params(draw.draw, (("n_expansion", ([0.1, 1, 2, 10**6], [0, -1, 1.5])),))
    model = _fit_or_clear_error(cls.__name__.lower(), lambda: cls(random_state=0, max_iter=5, time_limit=TIME_LIMIT,
                                                                  **p), X, y)
    if model is not None:
        _check_fitted(model, X, y)


@given(data(), st.data())
def test_fuzz_path_search(xy, draw):
    X, y = xy
    nu = draw.draw(st.booleans())  # an SVC walked along C, or a NuSVC along nu (cold fits)
    grid = {"gamma": draw.draw(st.sampled_from([[0.5], [0.1, 1.0]]))}
    if nu:
        grid["nu"] = draw.draw(st.sampled_from([[0.5], [0.2, 0.6], [0.5, 1.5]]))
    else:
        grid["C"] = draw.draw(st.sampled_from([[1.0], [0.5, 2.0], [1.0, -1.0]]))
    cv = draw.draw(st.sampled_from([2, 3]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GridSearchCV's own warnings about failing folds
        try:
            estimator = NuSVC(n_jobs=1) if nu else SVC(n_jobs=1)
            search = PathSearchCV(estimator, grid, cv=cv, error_score="raise").fit(X, y)
        except BAD as exc:
            assert str(exc)
            record("pathsearchcv", "error")
            return
    record("pathsearchcv", "fit")
    _check_fitted(search.best_estimator_, X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("cls", [SVC, KernelLogisticRegression])
def test_fuzz_regression_messy_csr_equals_dense(cls):
    """A fixed case the fuzzer's CSR builder relies on: duplicates and explicit zeros are read as the
    dense matrix they sum to."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = (X[:, 0] > 0).astype(int)

    M = _messy_csr(X, True)
    np.testing.assert_allclose(M.toarray(), X)
    a = cls(n_jobs=1).fit(M, y).decision_function(X)
    b = cls(n_jobs=1).fit(X, y).decision_function(X)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_fuzz_regression_unreachable_tol_ends():
    """Found by fuzzing: S-KLR with tol=1e-12 on unscaled integer data (linear kernel values ~1e6)
    ran forever with max_iter=-1, the gap stuck above what float32 rows resolve. "No limit" is now
    LIBSVM's cap (max(10^7, 100 N) steps): the fit ends with a ConvergenceWarning and a model."""
    from sklearn.exceptions import ConvergenceWarning

    X = np.array([[1, 0, 0], [1, -631, 0], [1, 961, 0], [1, 784, 629], [1, 0, -938], [1, 56, 503], [1, -309, 963],
                  [1, -722, 0], [1, 0, 424], [1, -915, 0], [1, 0, -61], [1, 0, -43], [1, 765, 0], [1, -245, 290],
                  [1, 0, 0], [1, -709, -617], [1, 35, -437]])
    y = np.array([1, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0])
    with pytest.warns(ConvergenceWarning, match="terminated early"):
        model = SparseKernelLogisticRegression(kernel="linear", lam=0.5, C=0.3, tol=1e-12, cache_size=1).fit(X, y)
    assert model.n_iter_[0] == 10_000_000
    _check_fitted(model, X, y)


def test_fuzz_regression_vanishing_gradient_keeps_finite_vectors():
    """Found by fuzzing: SparseKFD on a point 19 units from the rest with gamma=1 starts at vectors
    whose gradient is ~1e-171; its square underflows, L-BFGS-B's first step 1/|g| was infinite and
    the model came out with NaN expansion vectors. A vanishing gradient now ends the run at the
    start, and a run never returns a non-finite iterate or one worse than a point it evaluated."""
    X = np.array([[0.0], [0.0], [19.0], [0.0]])
    y = np.array([0, 0, 0, 1])
    for model in (SparseKFD(gamma=1.0, max_iter=5, n_expansion=2, random_state=0),
                  SLMC(gamma=1.0, max_iter=5, n_expansion=2, random_state=0)):
        model.fit(sp.csr_matrix(X), y)
        assert np.all(np.isfinite(model.expansion_vectors_))
        _check_fitted(model, X, y)



def test_fuzz_regression_int64_csr_reaches_kmeans():
    """Found by the memory benchmark on w8a as load_svmlight_file returns it: SparseKFD's k-means
    start passed CSR with int64 indices to scikit-learn's KMeans, which rejects them. Every fit now
    narrows the index arrays once (when they fit in int32)."""
    rng = np.random.default_rng(0)
    X = sp.random(60, 8, density=0.4, random_state=0, format="csr")
    X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    y = (rng.random(60) > 0.5).astype(int)
    for model in (SparseKFD(n_expansion=5, max_iter=3, random_state=0),
                  KernelLogisticRegression(solver="nystrom", basis="kmeans", n_components=8, random_state=0)):
        assert X.indices.dtype == np.int64
        model.fit(X, y)
        _check_fitted(model, X, y)


@pytest.mark.parametrize("cls", [SVC, SparseKernelLogisticRegression])
def test_fuzz_regression_constant_sparse_column_and_overflowing_kernel(cls):
    """Found by fuzzing: a constant CSR column got gamma='scale' = 4.5e15 (E[x^2] - E[x]^2 left a
    variance of rounding), the poly kernel's values (1e47) overflowed the float32 row cache and
    S-KLR returned NaN decision values. The variance is now computed in two passes (0: gamma = 1),
    and a kernel whose values can leave the float32 range is refused with a ValueError."""
    X = sp.csr_matrix(np.ones((7, 1)))
    y = np.array([0, 0, 0, 0, 0, 0, 1])
    model = cls(kernel="poly", lam=0.0, n_jobs=1) if cls is SparseKernelLogisticRegression else cls(kernel="poly")
    model.fit(X, y)
    assert model._gamma == 1.0
    _check_fitted(model, X, y)
    with pytest.raises(ValueError, match="exceed the float32 range"):
        cls(kernel="poly", gamma=1e15).fit(X, y)
    with pytest.raises(ValueError, match="exceed the float32 range"):
        cls(kernel="linear").fit(np.array([[1e20], [-1e20], [3.0]]), [0, 1, 1])


def test_fuzz_regression_nusvc_zero_r_is_a_value_error():
    """Two identical points of two classes: every gradient is 0, so r (the multiplier of e'a = nu l)
    is 0 and the scaling by 1 / r is undefined; scikit-learn reports a non-finite model."""
    with pytest.raises(ValueError, match="not finite"):
        NuSVC(gamma=0.5).fit(np.zeros((2, 1)), [0, 1])
