"""PathSearchCV's shared kernel rows (one store per kernel setting for every fold and C) and the
estimators it walks: every fit equals its cold fit, the rows are computed once, the budget holds,
concurrent folds agree with sequential ones."""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, StratifiedKFold

from sparsekernel import SVC, SVR, KernelLogisticRegression, SparseKernelLogisticRegression, _core
from sparsekernel._base import KERNELS, core_matrix
from sparsekernel.model_selection import PathSearchCV


def _objective(estimator, X, y):
    """A scorer returning the fit's own objective: compares fits, not predictions."""
    if hasattr(estimator, "objective_"):
        return float(np.sum(estimator.objective_))
    return float(np.sum(estimator.dual_objective_))


def _evals(estimator, X, y):
    return float(np.sum(estimator.n_kernel_evals_))


def _classification(n=300, seed=0):
    X, y = make_classification(n_samples=n, n_features=8, n_informative=5, flip_y=0.1, random_state=seed)
    return X, y


def _assert_objectives_equal(a, b, rtol):
    oa, ob = np.asarray(a.cv_results_["mean_test_score"]), np.asarray(b.cv_results_["mean_test_score"])
    assert a.cv_results_["params"] == b.cv_results_["params"]
    np.testing.assert_allclose(oa, ob, rtol=rtol)


CASES = {
    "svc": (SVC(tol=1e-8, n_jobs=1), {"C": [0.3, 1.0, 3.0, 10.0], "gamma": [0.02, 0.1]}, "clf"),
    "svc-3class": (SVC(tol=1e-8, n_jobs=1), {"C": [0.5, 4.0], "gamma": [0.05]}, "clf3"),
    "svr": (SVR(tol=1e-8, n_jobs=1), {"C": [0.3, 3.0], "gamma": [0.02, 0.1], "epsilon": [0.1, 1.0]}, "reg"),
    "klr": (KernelLogisticRegression(tol=1e-8, n_jobs=1), {"C": [0.5, 2.0, 8.0], "gamma": [0.05, 0.2]}, "clf"),
    "sklr": (SparseKernelLogisticRegression(tol=1e-8, n_jobs=1),
             {"C": [1.0, 4.0], "lam": [0.0, 0.5, 1.5], "gamma": [0.1]}, "clf"),
}


def _data(kind):
    if kind == "reg":
        X, y = make_regression(n_samples=240, n_features=6, noise=5.0, random_state=0)
        return X, y / np.std(y)
    if kind == "clf3":
        X, y = make_classification(n_samples=300, n_features=8, n_informative=5, n_classes=3, random_state=1)
        return X, y
    return _classification()


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_fit_equals_its_cold_fit(case):
    """Each (fold, candidate) of PathSearchCV reaches the objective of GridSearchCV's cold fit of the
    same candidate, for every estimator the path walks (warm starts, shared rows and all)."""
    est, grid, kind = CASES[case]
    X, y = _data(kind)
    cv = KFold(4, shuffle=True, random_state=0) if kind == "reg" else StratifiedKFold(4, shuffle=True, random_state=0)
    ps = PathSearchCV(est, grid, cv=cv, scoring=_objective, refit=False).fit(X, y)
    gs = GridSearchCV(est, grid, cv=cv, scoring=_objective, refit=False).fit(X, y)
    _assert_objectives_equal(ps, gs, rtol=1e-6)
    for split in range(4):
        np.testing.assert_allclose(ps.cv_results_[f"split{split}_test_score"],
                                   gs.cv_results_[f"split{split}_test_score"], rtol=1e-6)
    assert ps.shared_kernel_evals_ > 0  # the folds did read the search's rows


def test_rows_are_computed_once_per_kernel_setting():
    """With a budget that holds every row, a search computes at most N^2 kernel values per gamma
    (each row of the whole training set once), far fewer than the cold fits together."""
    X, y = _classification(n=400)
    grid = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.03, 0.3]}
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    scoring = {"obj": _objective, "evals": _evals}
    ps = PathSearchCV(SVC(cache_size=100, n_jobs=1), grid, cv=cv, scoring=scoring, refit=False).fit(X, y)
    gs = GridSearchCV(SVC(cache_size=100, n_jobs=1), grid, cv=cv, scoring=scoring, refit=False).fit(X, y)
    n = X.shape[0]
    assert 0 < ps.shared_kernel_evals_ <= 2 * n * n
    cold_total = np.sum(gs.cv_results_["mean_test_evals"]) * 5
    assert ps.shared_kernel_evals_ < cold_total / 5
    # and the fits themselves computed nothing beyond the shared rows (their n_kernel_evals_
    # count the shared rows they made; the diagonal comes from the store too)
    assert np.sum(ps.cv_results_["mean_test_evals"]) * 5 == pytest.approx(ps.shared_kernel_evals_)


def test_shared_rows_stay_within_budget_and_results_hold():
    """A budget far below the Gram matrix: the shared rows never hold more than their share, rows
    are evicted and recomputed, and the fits are still those of the cold search."""
    X, y = _classification(n=600)
    grid = {"C": [0.5, 5.0], "gamma": [0.05, 0.5]}
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    cache_mb = 0.4  # the Gram matrix is 600^2 float32 = 1.4 MB
    est = SVC(tol=1e-8, cache_size=cache_mb, n_jobs=1)
    ps = PathSearchCV(est, grid, cv=cv, scoring=_objective, refit=False).fit(X, y)
    gs = GridSearchCV(est, grid, cv=cv, scoring=_objective, refit=False).fit(X, y)
    _assert_objectives_equal(ps, gs, rtol=1e-6)
    from sparsekernel._warm import SHARED_FRACTION

    budget = SHARED_FRACTION * cache_mb * 2**20
    assert 0 < ps.shared_cache_peak_bytes_ <= budget
    # rows were recomputed after eviction: more than one Gram matrix per gamma
    assert ps.shared_kernel_evals_ > 2 * 600 * 600


@pytest.mark.parametrize("cache_mb", [0.3, 100])
def test_concurrent_folds_equal_sequential(cache_mb):
    """Folds fitted in two threads read and evict the same shared rows at once: the same fits."""
    X, y = _classification(n=500, seed=3)
    grid = {"C": [0.2, 2.0, 20.0], "gamma": [0.05, 0.2]}
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    est = SVC(tol=1e-8, cache_size=cache_mb, n_jobs=1)
    seq = PathSearchCV(est, grid, cv=cv, scoring=_objective, refit=False).fit(X, y)
    par = PathSearchCV(est, grid, cv=cv, scoring=_objective, refit=False, n_jobs=2).fit(X, y)
    _assert_objectives_equal(seq, par, rtol=1e-6)


def test_engine_session_on_shared_rows_equals_a_plain_solve():
    """The Q-provider that gathers from shared rows through an index map solves the same problem as
    the one computing its own rows (engine level, a subset of points in shuffled order)."""
    rng = np.random.default_rng(0)
    X, y = _classification(n=300)
    sub = rng.permutation(300)[:200]
    yy = np.where(y[sub] > 0, 1.0, -1.0)
    args = (KERNELS["rbf"], 0.1, 0.0, 3)
    rows = _core.SharedRows(core_matrix(X), *args, 10.0)
    session = _core.Session(core_matrix(X[sub]), *args, yy, 0, 1.0, 1, rows, sub.astype(np.int32))
    common = dict(tol=1e-10, max_iter=-1, shrinking=True, second_order=True, batched=False, q=0, cache_mb=10.0,
                  nthreads=1)
    n = len(sub)

    def solve(session):
        return _core.solve(core_matrix(X[sub]), *args, 0, yy, np.full(n, -1.0), None, np.zeros(n), np.full(n, 2.0),
                           None, session=session, **common)

    shared, plain = solve(session), solve(None)
    np.testing.assert_allclose(shared["obj"], plain["obj"], rtol=1e-9)
    np.testing.assert_allclose(shared["alpha"], plain["alpha"], atol=1e-6)
    assert rows.kernel_evals > 0 and rows.kernel_evals % 300 == 0  # whole rows of the full set
    with pytest.raises(ValueError, match="global"):
        _core.Session(core_matrix(X[sub]), *args, yy, 0, 1.0, 1, rows, np.arange(n, dtype=np.int32) + 250)
    with pytest.raises(ValueError, match="precomputed"):
        _core.SharedRows(core_matrix(X), KERNELS["precomputed"], 0.0, 0.0, 3, 10.0)


def test_groups_and_unregistered_data_still_search_correctly():
    """Folds from a group splitter are recognised too (the splits are the search's own), and a
    precomputed kernel (no shared rows) gives GridSearchCV's results."""
    X, y = _classification(n=240)
    groups = np.arange(240) % 6
    grid = {"C": [0.5, 5.0], "gamma": [0.1]}
    est = SVC(tol=1e-8, n_jobs=1)
    ps = PathSearchCV(est, grid, cv=GroupKFold(3), scoring=_objective, refit=False).fit(X, y, groups=groups)
    gs = GridSearchCV(est, grid, cv=GroupKFold(3), scoring=_objective, refit=False).fit(X, y, groups=groups)
    _assert_objectives_equal(ps, gs, rtol=1e-6)
    assert ps.shared_kernel_evals_ > 0
    K = X @ X.T
    pk = PathSearchCV(SVC(kernel="precomputed", tol=1e-8, n_jobs=1), {"C": [0.01, 0.1]}, cv=3, scoring=_objective,
                      refit=False).fit(K, y)
    gk = GridSearchCV(SVC(kernel="precomputed", tol=1e-8, n_jobs=1), {"C": [0.01, 0.1]}, cv=3, scoring=_objective,
                      refit=False).fit(K, y)
    _assert_objectives_equal(pk, gk, rtol=1e-6)
    assert pk.shared_kernel_evals_ == 0


def test_sklr_search_walks_lam_with_warm_starts(monkeypatch):
    """An S-KLR grid with several lam is walked along lam at fixed C: every fit but the first of a
    (fold, C) starts from the previous solution with its gradient (no kernel pass)."""
    import sparsekernel.klr as klr_module

    calls = []
    real = klr_module._core.solve

    def spy(*args, **kwargs):
        calls.append((args[11] is not None, kwargs.get("g0") is not None))
        return real(*args, **kwargs)

    monkeypatch.setattr(klr_module._core, "solve", spy)
    X, y = _classification(n=200)
    grid = {"C": [1.0, 4.0], "lam": [0.0, 0.5, 1.0]}
    PathSearchCV(SparseKernelLogisticRegression(n_jobs=1), grid, cv=3, refit=False).fit(X, y)
    warm = [g for _, g in calls]
    assert len(calls) == 3 * 6
    assert sum(warm) == 3 * 2 * 2  # per fold and C: the 2nd and 3rd lam


def test_warm_start_2C_takes_fewer_iterations():
    """C -> 2C on noisy, overlapping classes: most multipliers sit at C and move to 2C, which the
    ray rule (a0 = s a, s = the best point of the feasible ray) reproduces exactly, so the warm
    solve needs well under the cold number of steps."""
    X, y = make_classification(n_samples=800, n_features=10, n_informative=3, flip_y=0.3, class_sep=0.5,
                               random_state=0)
    cold = SVC(C=2.0, gamma=0.05, n_jobs=1).fit(X, y)
    warm = SVC(C=1.0, gamma=0.05, n_jobs=1, warm_start=True).fit(X, y)
    warm.set_params(C=2.0).fit(X, y)
    assert warm.solver_stats_[0]["warm_started"]
    assert np.sum(warm.n_iter_) < 0.6 * np.sum(cold.n_iter_)
    assert warm.dual_objective_[0] == pytest.approx(cold.dual_objective_[0], rel=1e-4)
