"""Input and parameter validation: a clear ValueError (never a crash, never a silent garbage
model) for every invalid input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from _helpers import dataset
from sparsekernel import SVC


@pytest.fixture(scope="module")
def binary():
    X, y = dataset("breast_cancer")
    return X[:120].copy(), y[:120].copy()


@pytest.fixture(scope="module")
def fitted(binary):
    X, y = binary
    return SVC().fit(X, y)


# ---------------------------------------------------------------------------------------- X / y
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("sparse", [False, True])
def test_non_finite_X(binary, bad, sparse):
    X, y = binary
    X = X.copy()
    X[3, 2] = bad
    Xin = sp.csr_matrix(X) if sparse else X
    with pytest.raises(ValueError, match="NaN|infinity"):
        SVC().fit(Xin, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_X_at_predict(fitted, binary, bad):
    X = binary[0][:5].copy()
    X[0, 0] = bad
    for method in (fitted.predict, fitted.decision_function):
        with pytest.raises(ValueError, match="NaN|infinity"):
            method(X)


def test_one_class(binary):
    X, y = binary
    with pytest.raises(ValueError, match="class"):
        SVC().fit(X, np.zeros(len(y)))


def test_empty_X():
    with pytest.raises(ValueError, match="0 sample"):
        SVC().fit(np.empty((0, 3)), np.empty(0))
    with pytest.raises(ValueError, match="0 feature"):
        SVC().fit(np.empty((6, 0)), np.arange(6) % 2)


def test_empty_X_at_predict(fitted):
    with pytest.raises(ValueError, match="0 sample"):
        fitted.predict(np.empty((0, fitted.n_features_in_)))


def test_mismatched_lengths(binary):
    X, y = binary
    with pytest.raises(ValueError, match="inconsistent"):
        SVC().fit(X, y[:-1])
    with pytest.raises(ValueError, match="inconsistent"):
        SVC().fit(X[:-1], y)


def test_bad_y(binary):
    X, y = binary
    with pytest.raises(ValueError, match="Unknown label type"):
        SVC().fit(X, np.linspace(0, 1, len(y)))
    with pytest.raises(ValueError, match="NaN"):
        SVC().fit(X, np.r_[np.nan, y[1:]])
    with pytest.raises(ValueError, match="1-dimensional|1d|column"):
        SVC().fit(X, np.c_[y, y])


def test_bad_X_shapes(binary):
    X, y = binary
    with pytest.raises(ValueError, match="dim"):
        SVC().fit(X.reshape(len(y), -1, 2), y)
    with pytest.raises(ValueError, match="2D"):
        SVC().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="[Cc]omplex"):
        SVC().fit(X + 1j, y)


def test_predict_wrong_n_features(fitted, binary):
    X = binary[0]
    for Xt in (X[:, :-1], np.c_[X, X[:, :1]], sp.csr_matrix(X[:, :5])):
        with pytest.raises(ValueError, match="features"):
            fitted.predict(Xt)
        with pytest.raises(ValueError, match="features"):
            fitted.decision_function(Xt)


def test_not_fitted(binary):
    with pytest.raises(NotFittedError):
        SVC().predict(binary[0])


# ---------------------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("C", [0, 0.0, -1.0, np.nan, -np.inf, "1", None, True])
def test_bad_C(binary, C):
    with pytest.raises(ValueError, match="The 'C' parameter of SVC must be"):
        SVC(C=C).fit(*binary)


@pytest.mark.parametrize("tol", [-1e-3, 0.0, np.nan, "x"])
def test_bad_tol(binary, tol):
    with pytest.raises(ValueError, match="The 'tol' parameter of SVC must be"):
        SVC(tol=tol).fit(*binary)


@pytest.mark.parametrize("kernel", ["foo", "RBF", "", None, 3])
def test_unknown_kernel(binary, kernel):
    with pytest.raises(ValueError, match="The 'kernel' parameter of SVC must be"):
        SVC(kernel=kernel).fit(*binary)


@pytest.mark.parametrize("solver", ["foo", "smo3", None, ""])
def test_unknown_solver(binary, solver):
    with pytest.raises(ValueError, match="The 'solver' parameter of SVC must be"):
        SVC(solver=solver).fit(*binary)


@pytest.mark.parametrize("gamma", ["foo", -1, -1.0, 0.0, np.nan, np.inf, None, "Scale"])
def test_bad_gamma(binary, gamma):
    with pytest.raises(ValueError, match="The 'gamma' parameter of SVC must be"):
        SVC(gamma=gamma).fit(*binary)


@pytest.mark.parametrize("degree", [-1, 2.5, "3", None, True, 2**40])
def test_bad_degree(binary, degree):
    with pytest.raises(ValueError, match="The 'degree' parameter of SVC must be"):
        SVC(kernel="poly", degree=degree).fit(*binary)


@pytest.mark.parametrize("coef0", [np.nan, np.inf, "0"])
def test_bad_coef0(binary, coef0):
    with pytest.raises(ValueError, match="The 'coef0' parameter of SVC must be"):
        SVC(kernel="poly", coef0=coef0).fit(*binary)


@pytest.mark.parametrize("params", [
    dict(max_iter=0), dict(max_iter=-2), dict(max_iter=2.5), dict(working_set_size=3), dict(working_set_size=16.0),
    dict(decision_function_shape="foo"), dict(cache_size=0), dict(cache_size=-1.0), dict(n_jobs=0), dict(n_jobs=1.5),
    dict(class_weight="foo"), dict(shrinking="yes"), dict(warm_start=1), dict(break_ties=None), dict(verbose=-1),
    dict(random_state="seed"), dict(time_limit=0), dict(early_stop_level=0),
])
def test_bad_other_parameters(binary, params):
    (name,) = params
    with pytest.raises(ValueError, match=f"The '{name}' parameter of SVC must be .* Got .* instead"):
        SVC(**params).fit(*binary)


def test_parameters_checked_again_on_refit(binary):
    model = SVC().fit(*binary)
    model.set_params(C=-1.0)
    with pytest.raises(ValueError, match="The 'C' parameter of SVC must be"):
        model.fit(*binary)


# ---------------------------------------------------------------------------------------- precomputed
def test_precomputed_fit_not_square(binary):
    X, y = binary
    with pytest.raises(ValueError, match="square"):
        SVC(kernel="precomputed").fit(X @ X[:50].T, y)


def test_precomputed_predict_wrong_columns(binary):
    X, y = binary
    model = SVC(kernel="precomputed").fit(X @ X.T, y)
    for K in (X[:10] @ X[:50].T, X[:10] @ np.r_[X, X[:3]].T):
        with pytest.raises(ValueError, match=str(len(y))):
            model.predict(K)
        with pytest.raises(ValueError, match=str(len(y))):
            model.decision_function(K)
    # the right shape works
    assert model.predict(X[:10] @ X.T).shape == (10,)


def test_precomputed_sparse_rejected(binary):
    X, y = binary
    # scikit-learn's error and message
    with pytest.raises(TypeError, match="Sparse precomputed kernels are not supported"):
        SVC(kernel="precomputed").fit(sp.csr_matrix(X @ X.T), y)


def test_precomputed_non_finite(binary):
    X, y = binary
    K = X @ X.T
    K[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SVC(kernel="precomputed").fit(K, y)


# ---------------------------------------------------------------------------------------- weights
def test_negative_sample_weight_masks_the_sample(binary):
    """As LIBSVM and scikit-learn: a weight of zero or below removes its sample from the problem."""
    X, y = binary
    sw = np.ones(len(y))
    sw[4], sw[9] = -0.5, 0.0
    keep = sw > 0
    masked = SVC(kernel="linear", tol=1e-10).fit(X, y, sample_weight=sw)
    dropped = SVC(kernel="linear", tol=1e-10).fit(X[keep], y[keep])
    np.testing.assert_allclose(masked.decision_function(X), dropped.decision_function(X), rtol=0, atol=1e-8)
    assert 4 not in masked.support_ and 9 not in masked.support_
    with pytest.raises(ValueError, match="all samples have zero or negative weights"):
        SVC().fit(X, y, sample_weight=-np.ones(len(y)))


@pytest.mark.parametrize("sw,match", [
    (np.ones(10), "shape|length|inconsistent"),
    (np.r_[np.nan, np.ones(119)], "NaN"),
    (np.r_[np.inf, np.ones(119)], "infinity"),
    (np.zeros(120), "zero|non-zero|positive"),
])
def test_bad_sample_weight(binary, sw, match):
    X, y = binary
    with pytest.raises(ValueError, match=match):
        SVC().fit(X, y, sample_weight=sw)


def test_negative_class_weight(binary):
    """A negative class weight makes the boxes 0 <= a_i <= C_i < 0 empty. sklearn raises; a
    silently 'converged' model without support vectors is garbage."""
    X, y = binary
    with pytest.raises(ValueError, match="class_weight|negative|weight"):
        SVC(class_weight={0: -1.0, 1: 1.0}).fit(X, y)


def test_all_weight_in_one_class(binary):
    """Every sample of one class with weight 0: the problem has effectively one class (sklearn:
    'Invalid input - all samples with positive weights belong to the same class')."""
    X, y = binary
    sw = (y == 1).astype(float)
    with pytest.raises(ValueError, match="class|weight"):
        SVC().fit(X, y, sample_weight=sw)


def test_unknown_class_weight_label(binary):
    X, y = binary
    with pytest.raises(ValueError, match="class"):
        SVC(class_weight={5: 2.0}).fit(X, y)


# ---------------------------------------------------------------------------------------- odd but valid
def test_degenerate_but_valid_inputs_do_not_crash():
    # identical points with both labels: any a with y'a = 0 is optimal; must still fit & predict
    X = np.ones((20, 3))
    y = np.arange(20) % 2
    model = SVC().fit(X, y)
    assert model.predict(X).shape == (20,)
    assert np.isfinite(model.decision_function(X)).all()
    # zero variance: gamma='scale' falls back to 1.0 as in sklearn
    assert SVC().fit(np.zeros((6, 2)), np.arange(6) % 2)._gamma == 1.0
    # one sample per class
    model = SVC(kernel="linear").fit(np.array([[0.0, 0.0], [1.0, 1.0]]), [0, 1])
    np.testing.assert_array_equal(model.predict([[0.0, 0.0], [1.0, 1.0]]), [0, 1])
    # integer, boolean, CSC and COO inputs are converted
    Xi = np.array([[0, 1], [1, 0], [2, 2], [3, 1], [0, 3], [4, 0]])
    yi = [0, 0, 1, 1, 0, 1]
    ref = SVC().fit(Xi.astype(float), yi)
    for inp in (Xi, sp.csc_matrix(Xi), sp.coo_matrix(Xi)):
        coef = SVC().fit(inp, yi).dual_coef_
        np.testing.assert_allclose(coef.toarray() if sp.issparse(coef) else coef, ref.dual_coef_, atol=1e-12)
