"""The engine's routes as 'auto' picks them, and the two-level route on the inputs it is picked for.

- 'auto' takes the two-level ('batched') route on dense inputs of >= 32 features and >= 2000 rows
  and the pair route ('smo2') elsewhere (sparse, narrow, small, precomputed, SVR); ``solver_`` says
  which.
- There it starts with pair steps and takes blocks only once the solve needs more than N/4 of
  them: an easy problem is the pair route's solve, step for step (usps: 986 steps, LIBSVM's).
- On such inputs the batched fit, with and without shrinking (shrinking exercises the block update
  of G_bar and the kernel rows extended beyond a shorter cached head), reaches the KKT conditions
  to tol, recomputed here in float64 from scikit-learn's kernel matrix, the same dual objective as
  LIBSVM and the same held-out predictions, and the same model bit for bit for 1, 2 and 3 threads.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.svm
from sklearn.datasets import make_classification, make_regression
from sklearn.metrics.pairwise import rbf_kernel

from _dual import EPS32, check_feasible, dual_objective, kkt_gap, svc_Q
from sparsekernel import SVC, SVR

X_WIDE, Y_WIDE = make_classification(n_samples=2600, n_features=40, n_informative=12, flip_y=0.08,
                                     random_state=3)
X_WIDE = (X_WIDE - X_WIDE.mean(0)) / X_WIDE.std(0)
X_TRAIN, Y_TRAIN, X_TEST = X_WIDE[:2200], Y_WIDE[:2200], X_WIDE[2200:]


def test_auto_takes_the_block_route_on_wide_dense_inputs():
    assert SVC().fit(X_TRAIN, Y_TRAIN).solver_ == "batched"


def test_auto_block_route_solves_an_easy_problem_by_pairs():
    """Few support vectors (well separated classes): the solve ends within the pair start, the same
    solve as smo2's; solver='batched' named explicitly takes blocks from the start."""
    X, y = make_classification(n_samples=2400, n_features=40, n_informative=10, class_sep=3.0, flip_y=0.0,
                               random_state=5)
    auto = SVC().fit(X, y)
    pairs = SVC(solver="smo2").fit(X, y)
    blocks = SVC(solver="batched").fit(X, y)
    assert auto.solver_ == "batched" and auto.n_iter_[0] < len(y) / 4
    assert auto.solver_stats_[0]["n_outer_iter"] == 0 and blocks.solver_stats_[0]["n_outer_iter"] > 0
    np.testing.assert_array_equal(auto.n_iter_, pairs.n_iter_)
    np.testing.assert_array_equal(auto.support_, pairs.support_)
    np.testing.assert_array_equal(auto.dual_coef_, pairs.dual_coef_)


@pytest.mark.parametrize("case", ["sparse", "narrow", "small", "precomputed", "explicit"])
def test_auto_takes_the_pair_route_elsewhere(case):
    X, y, params = X_TRAIN, Y_TRAIN, {}
    if case == "sparse":
        X = sp.csr_matrix(X)
    elif case == "narrow":
        X = X[:, :31]
    elif case == "small":
        X, y = X[:1999], y[:1999]
    elif case == "precomputed":
        X, y, params = rbf_kernel(X[:500], gamma=0.02), y[:500], dict(kernel="precomputed")
    elif case == "explicit":
        params = dict(solver="smo1")
    expected = "smo1" if case == "explicit" else "smo2"
    assert SVC(**params).fit(X, y).solver_ == expected


def test_svr_auto_is_the_pair_route():
    X, y = make_regression(n_samples=2100, n_features=40, random_state=0)
    assert SVR().fit(X, y / np.abs(y).max()).solver_ == "smo2"


def _full_dual(model, n):
    a = np.zeros(n)
    a[model.support_] = np.abs(model.dual_coef_[0])
    return a


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("C", [1.0, 30.0])
def test_block_route_reaches_the_kkt_conditions_and_libsvm(shrinking, C):
    tol = 1e-3
    model = SVC(C=C, tol=tol, shrinking=shrinking, cache_size=20).fit(X_TRAIN, Y_TRAIN)
    assert model.solver_ == "batched" and model.solver_stats_[0]["n_outer_iter"] > 0
    y = np.where(Y_TRAIN == model.classes_[1], 1.0, -1.0)
    K = rbf_kernel(X_TRAIN, gamma=model._gamma)
    Q = svc_Q(K, y)
    a = _full_dual(model, len(y))
    hi = np.full(len(y), C)
    check_feasible(y, a, hi)
    slack = 4 * EPS32 * float(np.max(np.abs(Q) @ np.abs(a))) + 1e-9
    assert kkt_gap(Q, y, -np.ones(len(y)), a, hi) <= tol + 2 * slack
    ref = sklearn.svm.SVC(C=C, tol=tol, gamma=model._gamma, cache_size=20).fit(X_TRAIN, Y_TRAIN)
    a_ref = _full_dual(ref, len(y))
    ours, theirs = dual_objective(Q, -np.ones(len(y)), a), dual_objective(Q, -np.ones(len(y)), a_ref)
    assert abs(ours - theirs) <= 2e-3 * abs(theirs)
    agree = np.mean(model.predict(X_TEST) == ref.predict(X_TEST))
    assert agree >= 0.995


def test_block_route_is_bit_identical_across_threads():
    fits = [SVC(C=10.0, n_jobs=j, cache_size=20).fit(X_TRAIN, Y_TRAIN) for j in (1, 2, 3)]
    for other in fits[1:]:
        assert other.solver_ == "batched"
        np.testing.assert_array_equal(other.support_, fits[0].support_)
        np.testing.assert_array_equal(other.dual_coef_, fits[0].dual_coef_)
        np.testing.assert_array_equal(other.intercept_, fits[0].intercept_)


def test_dense_input_of_mostly_zeros_runs_as_csr():
    """A dense X with at most 15 % nonzeros is read by the engine as CSR: the fit is the CSR fit's,
    bit for bit, and the model keeps the support vectors as given (dense)."""
    rng = np.random.default_rng(0)
    X = rng.random((2500, 60)) * (rng.random((2500, 60)) < 0.1)
    y = (X[:, :10].sum(1) > np.median(X[:, :10].sum(1))).astype(int)
    dense = SVC(C=3.0).fit(X, y)
    csr = SVC(C=3.0).fit(sp.csr_matrix(X), y)
    assert dense.solver_ == csr.solver_ == "smo2"
    assert not sp.issparse(dense.support_vectors_)
    np.testing.assert_array_equal(dense.support_, csr.support_)
    np.testing.assert_array_equal(dense.dual_coef_, csr.dual_coef_.toarray() if sp.issparse(csr.dual_coef_)
                                  else csr.dual_coef_)
    np.testing.assert_array_equal(dense.intercept_, csr.intercept_)
    np.testing.assert_allclose(dense.decision_function(X[:50]), csr.decision_function(sp.csr_matrix(X[:50])),
                               rtol=1e-10, atol=1e-12)


def _standardized_sparse_data():
    rng = np.random.default_rng(1)
    X = rng.random((2500, 60)) * (rng.random((2500, 60)) < 0.1)
    y = (X[:, :10].sum(1) > np.median(X[:, :10].sum(1))).astype(int)
    return (X - X.mean(0)) / X.std(0), y


def test_translation_invariant_kernels_read_standardized_sparse_data_as_csr():
    """After StandardScaler the zeros of sparse data sit at -mean/std, one value per column: rbf is
    translation invariant, so the engine reads X minus those values as CSR (the pair route). The
    solution is the dense one's: the KKT conditions hold to tol on the original data's kernel
    matrix, and the held-out predictions are LIBSVM's."""
    X, y = _standardized_sparse_data()
    tol = 1e-3
    model = SVC(C=3.0, tol=tol).fit(X[:2000], y[:2000])
    assert model.solver_ == "smo2"
    assert not sp.issparse(model.support_vectors_)
    np.testing.assert_array_equal(model.support_vectors_, X[:2000][model.support_])
    ypm = np.where(y[:2000] == model.classes_[1], 1.0, -1.0)
    Q = svc_Q(rbf_kernel(X[:2000], gamma=model._gamma), ypm)
    a = _full_dual(model, 2000)
    slack = 4 * EPS32 * float(np.max(np.abs(Q) @ np.abs(a))) + 1e-9
    assert kkt_gap(Q, ypm, -np.ones(2000), a, np.full(2000, 3.0)) <= tol + 2 * slack
    ref = sklearn.svm.SVC(C=3.0, tol=tol, gamma=model._gamma).fit(X[:2000], y[:2000])
    assert np.mean(model.predict(X[2000:]) == ref.predict(X[2000:])) >= 0.995


def test_other_kernels_are_not_shifted():
    X, y = _standardized_sparse_data()
    assert SVC(kernel="poly", degree=2, gamma=0.01).fit(X, y).solver_ == "batched"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_engine_storage_is_the_numpy_conversion(dtype):
    """The C++ conversion behind the CSR storage: the entries of X (or of X minus its columns' most
    frequent values, for rbf) that differ from zero / the shift, exactly as numpy computes them, the
    same on 1 and 3 threads (the C++ pass itself too: engine_storage gives an X this small one
    thread); a dense X of more than 15 % nonzeros (after the shift) stays dense."""
    from sparsekernel import _core
    from sparsekernel._base import _column_modes, engine_storage

    rng = np.random.RandomState(0)
    X = ((rng.rand(900, 37) < 0.1) * rng.randn(900, 37)).astype(dtype)
    for threads in (1, 3):
        stored = engine_storage(X, "rbf", threads)
        assert sp.isspmatrix_csr(stored) and stored.has_canonical_format
        np.testing.assert_array_equal(stored.toarray(), X.astype(np.float64))
    shifted = X * dtype(3) + np.arange(37, dtype=dtype)  # zeros moved to one value per column
    shift = _column_modes(shifted)
    expected = shifted.astype(np.float64) - shift
    one, three = engine_storage(shifted, "rbf", 1), engine_storage(shifted, "rbf", 3)
    np.testing.assert_array_equal(one.toarray(), expected)
    assert one.nnz == np.count_nonzero(expected) and (one != three).nnz == 0
    for Xt, sh in ((X, None), (shifted, shift.astype(np.float64))):  # 4 blocks of rows: 3 threads at work
        for a, b in zip(*(_core.dense_as_csr(Xt, sh, 1.0, t) for t in (1, 3))):
            np.testing.assert_array_equal(a, b)
    assert not sp.issparse(engine_storage(shifted, "poly", 2))  # shifts only for translation invariance
    dense = rng.randn(200, 10).astype(dtype)
    dense[:, :8] *= rng.rand(200, 8) < 0.2  # about 36 % nonzeros
    assert engine_storage(dense, "rbf", 2) is dense


@pytest.mark.parametrize("batched", [False, True])
def test_a_start_given_with_its_gradient_and_g_bar(batched):
    """The engine from a0 with G0 and G_bar0 (DC-SVM's assembled starts) against the same start
    whose gradient it computes itself: the same solution to tol; the result's ``grad_bar`` is the
    bounded variables' product y * K (a * y) over them, and its ``grad`` the full gradient."""
    from sparsekernel._engine import DualProblem, KernelSpec, SolverOptions, solve

    X, y01 = make_classification(n_samples=900, n_features=5, flip_y=0.1, random_state=3)
    y = np.where(y01 == 1, 1.0, -1.0)
    n, C = len(y), 1.0
    kernel = KernelSpec("rbf", gamma=0.3)
    problem = DualProblem(y=y, p=-np.ones(n), hi=np.full(n, C))
    options = SolverOptions(tol=1e-5, batched=batched, working_set_size=64 if batched else 0)
    half = solve(X, kernel, problem, SolverOptions(tol=1e-1))  # a feasible start with bounded and free a
    K = rbf_kernel(X, gamma=0.3)

    def gradients(a):
        bounded = (a > 0) & (a >= C)
        return y * (K @ (a * y)) - 1.0, y * (K[:, bounded] @ (a[bounded] * y[bounded])), bounded

    a0 = half.alpha
    g0, gbar0, bounded = gradients(a0)
    assert bounded.any()
    given = solve(X, kernel, problem, options, a0=a0, g0=g0, gbar0=gbar0)
    own = solve(X, kernel, problem, options, a0=a0)
    assert given.status == own.status == 0
    assert abs(given.obj - own.obj) <= 1e-7 * abs(own.obj)
    G, Gbar, _ = gradients(given.alpha)
    np.testing.assert_allclose(given.grad, G, atol=1e-4)
    np.testing.assert_allclose(given.grad_bar, Gbar, atol=1e-4)
    # G_bar0 is taken as given: the start-up computes no rows of the bounded variables
    assert given.kernel_evals < own.kernel_evals
