"""PathSearchCV's shared kernel rows (one store per kernel setting for every fold and C) and the
estimators it walks: every fit equals its cold fit, the rows are computed once, the budget holds,
concurrent folds agree with sequential ones."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.datasets import make_classification, make_regression
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_array

from _helpers import spy_engine_solves

from sparsekernel import SVC, SVR, KernelLogisticRegression, NuSVC, NuSVR, OneClassSVM, SparseKernelLogisticRegression
from sparsekernel._engine import DualProblem, KernelSpec, SolverOptions, open_session, shared_rows, solve
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


def _searched_with_shared_rows():
    """A PathSearchCV of 600 points with a 0.4 MB cache_size, checked against GridSearchCV's fits."""
    X, y = _classification(n=600)
    grid = {"C": [0.5, 5.0], "gamma": [0.05, 0.5]}
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    est = SVC(tol=1e-8, cache_size=0.4, n_jobs=1)
    ps = PathSearchCV(est, grid, cv=cv, scoring=_objective, refit=False).fit(X, y)
    gs = GridSearchCV(est, grid, cv=cv, scoring=_objective, refit=False).fit(X, y)
    _assert_objectives_equal(ps, gs, rtol=1e-6)
    return ps


def test_shared_rows_hold_the_gram_matrix_when_it_fits():
    """The memory policy: the shared rows are sized from the data (N^2 float32 values when they fit
    a quarter of the available memory), so each kernel value is computed once per kernel setting,
    whatever the estimator's cache_size."""
    ps = _searched_with_shared_rows()
    assert ps.shared_kernel_evals_ <= 2 * 600 * 600
    assert 0 < ps.shared_cache_peak_bytes_ <= 600 * 600 * 4 + 2**20


def test_shared_rows_stay_within_their_cap_and_results_hold(monkeypatch):
    """A cap far below the Gram matrix: the shared rows never hold more, rows are evicted and
    recomputed, and the fits are still those of the cold search."""
    import sparsekernel.model_selection as ms

    cap_mb = 0.4  # the Gram matrix is 600^2 float32 = 1.4 MB
    monkeypatch.setattr(ms, "shared_rows_mb", lambda n: cap_mb)
    ps = _searched_with_shared_rows()
    assert 0 < ps.shared_cache_peak_bytes_ <= cap_mb * 2**20
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
    kernel = KernelSpec("rbf", 0.1, 0.0, 3)
    n = len(sub)
    dual = DualProblem(y=yy, p=np.full(n, -1.0), hi=np.full(n, 2.0))
    rows = shared_rows(X, kernel, 10.0)
    session = open_session(X[sub], kernel, dual, cache_mb=1.0, threads=1, shared=rows, global_index=sub)
    options = SolverOptions(tol=1e-10, cache_mb=10.0)
    shared = solve(X[sub], kernel, dual, options, session=session)
    plain = solve(X[sub], kernel, dual, options)
    np.testing.assert_allclose(shared.obj, plain.obj, rtol=1e-9)
    np.testing.assert_allclose(shared.alpha, plain.alpha, atol=1e-6)
    assert rows.kernel_evals > 0 and rows.kernel_evals % 300 == 0  # whole rows of the full set
    with pytest.raises(ValueError, match="global"):
        open_session(X[sub], kernel, dual, cache_mb=1.0, threads=1, shared=rows, global_index=np.arange(n) + 250)
    with pytest.raises(ValueError, match="precomputed"):
        shared_rows(X, KernelSpec("precomputed"), 10.0)


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
    warm = spy_engine_solves(monkeypatch, "g0")
    X, y = _classification(n=200)
    grid = {"C": [1.0, 4.0], "lam": [0.0, 0.5, 1.0]}
    PathSearchCV(SparseKernelLogisticRegression(n_jobs=1), grid, cv=3, refit=False).fit(X, y)
    assert len(warm) == 3 * 6
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


# ------------------------------------------------------------------ a drop-in for GridSearchCV (issue 34)
def _last_step_objective(estimator, X, y):
    return _objective(estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator, X, y)


@pytest.mark.parametrize("est", [SVC(tol=1e-8), KernelLogisticRegression(tol=1e-8)])
def test_pipeline_search_walks_the_last_step(est, monkeypatch):
    """make_pipeline(StandardScaler(), est): the last step's fits walk C on each fold's transformed
    data (SVC: warm-started) and reach GridSearchCV's fits (same objectives to tol, same best)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    starts = spy_engine_solves(monkeypatch, "g0")
    X, y = _classification(n=240)
    X = X * np.array([1, 10, 100, 1, 1, 0.1, 1, 5])  # scales the StandardScaler removes
    pipe = make_pipeline(StandardScaler(), est)
    name = pipe.steps[-1][0]
    grid = {f"{name}__C": [0.5, 2.0, 8.0], f"{name}__gamma": [0.05, 0.2]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    ps = PathSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective).fit(X, y)
    n_path = len(starts)
    gs = GridSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective).fit(X, y)
    _assert_objectives_equal(ps, gs, rtol=1e-5)
    assert ps.best_params_ == gs.best_params_
    assert not any(starts[n_path:])  # GridSearchCV: every fit cold
    if isinstance(est, SVC):  # (KLR's box moves with C: its C walk starts each fit afresh)
        assert sum(starts[:n_path]) == 3 * 2 * 2  # per fold and gamma: the 2nd and 3rd C
    np.testing.assert_array_equal(ps.predict(X), gs.predict(X))
    # each fold's fits read one store of kernel rows over the fold's transformed X per gamma: no row
    # is computed twice for a fold and gamma (3 folds of 160 points, 2 gammas)
    assert 0 < ps.shared_kernel_evals_ <= 3 * 2 * 160 * 160


def test_pipeline_fold_rows_are_kept_for_the_folds_only(monkeypatch):
    """A Pipeline's search keeps at most one row store per fold (the oldest is freed first) and none
    when the fold stores are turned off; the fits agree either way."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sparsekernel import _warm

    X, y = _classification(n=240)
    pipe = make_pipeline(StandardScaler(), SVC(tol=1e-8))
    grid = {"svc__C": [0.5, 2.0], "svc__gamma": [0.05, 0.2]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    live = []
    original = _warm.PathStore.row_source

    def spy(self, kernel, rows=None, data_key=None, X=None):
        source = original(self, kernel, rows=rows, data_key=data_key, X=X)
        live.append(len(self._fold_shared))
        return source

    monkeypatch.setattr(_warm.PathStore, "row_source", spy)
    ps = PathSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective).fit(X, y)
    assert live and max(live) <= 3
    monkeypatch.setattr(_warm.PathStore, "share_fold_rows", lambda self, mb, n: None)
    off = PathSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective).fit(X, y)
    assert off.shared_kernel_evals_ == 0
    np.testing.assert_allclose(ps.cv_results_["mean_test_score"], off.cv_results_["mean_test_score"], rtol=1e-6)


class _CountingScaler(StandardScaler):
    """A StandardScaler that records every fit (on which rows' first value): how often a search
    fits a Pipeline's earlier step."""

    fits = []

    def fit(self, X, y=None, sample_weight=None):
        type(self).fits.append(float(np.asarray(X)[0, 0]))
        return super().fit(X, y, sample_weight=sample_weight)


def test_pipeline_earlier_steps_are_fitted_once_per_fold():
    """A Pipeline's earlier steps are fitted once per fold (FoldSteps), not once per candidate as
    GridSearchCV does, and the search's results are GridSearchCV's; the best estimator keeps the
    user's memory and the searched estimator is left as it was."""
    X, y = _classification(n=240)
    X = X * np.array([1, 10, 100, 1, 1, 0.1, 1, 5])
    pipe = make_pipeline(_CountingScaler(), SVC(tol=1e-8))
    grid = {"svc__C": [0.5, 2.0, 8.0], "svc__gamma": [0.05, 0.2]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    _CountingScaler.fits.clear()
    ps = PathSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective).fit(X, y)
    assert len(_CountingScaler.fits) == 3 + 1  # one per fold, then the refit
    _CountingScaler.fits.clear()
    gs = GridSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective).fit(X, y)
    assert len(_CountingScaler.fits) == 3 * 6 + 1
    _assert_objectives_equal(ps, gs, rtol=1e-6)
    assert ps.best_params_ == gs.best_params_
    np.testing.assert_array_equal(ps.predict(X), gs.predict(X))
    assert ps.best_estimator_.memory is None and pipe.memory is None and ps.estimator is pipe
    # the refit fitted its own scaler, on every row
    np.testing.assert_allclose(ps.best_estimator_[0].mean_, X.mean(axis=0))


class _ScaleInPlace(TransformerMixin, BaseEstimator):
    """Multiplies X by ``factor`` in place when X is writeable (scikit-learn's copy=False convention:
    a read-only input is copied first)."""

    def __init__(self, factor=1.0):
        self.factor = factor

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        X = check_array(X, copy=False, force_writeable=True)
        X *= self.factor
        return X


def test_pipeline_grid_over_an_earlier_step_fits_each_setting_once_per_fold():
    """A grid that also sets earlier steps' parameters: each setting's step is fitted once per
    fold; a later step that transforms in place, fitted once per setting of its own parameter on
    the same kept output of the step before it, does not corrupt that output; the results are
    GridSearchCV's."""
    from sklearn.decomposition import PCA
    from sklearn.pipeline import Pipeline

    X, y = _classification(n=240)
    pipe = Pipeline([("scale", _CountingScaler()), ("pca", PCA(n_components=6)), ("times", _ScaleInPlace()),
                     ("svc", SVC(tol=1e-8))])
    grid = {"scale__with_std": [True, False], "times__factor": [0.5, 2.0], "svc__C": [0.5, 4.0],
            "svc__gamma": [0.1]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    _CountingScaler.fits.clear()
    ps = PathSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective, refit=False).fit(X, y)
    assert len(_CountingScaler.fits) == 3 * 2
    gs = GridSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective, refit=False).fit(X, y)
    _assert_objectives_equal(ps, gs, rtol=1e-6)


def test_pipeline_grid_that_replaces_a_step_fits_every_candidate():
    """A grid that replaces an earlier step (here by 'passthrough') is not cached per fold: the
    search still equals GridSearchCV."""
    X, y = _classification(n=240)
    pipe = make_pipeline(StandardScaler(), SVC(tol=1e-8))
    grid = {"standardscaler": [StandardScaler(), "passthrough"], "svc__C": [0.5, 4.0]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    ps = PathSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective).fit(X, y)
    gs = GridSearchCV(pipe, grid, cv=cv, scoring=_last_step_objective).fit(X, y)
    _assert_objectives_equal(ps, gs, rtol=1e-6)


def test_fold_steps_memory_outside_a_search_fits_as_without_memory():
    """The search's Pipeline memory (FoldSteps) after the search, or pickled, fits every step."""
    import pickle

    from sparsekernel._warm import FoldSteps, PathStore

    X, y = _classification(n=120)
    store = PathStore()
    store.open = False
    pipe = make_pipeline(_CountingScaler(), SVC()).set_params(memory=FoldSteps(store))
    _CountingScaler.fits.clear()
    pipe.fit(X, y)
    pipe.fit(X, y)
    assert len(_CountingScaler.fits) == 2
    assert pickle.loads(pickle.dumps(pipe)).memory is None


def test_expansion_from_shared_rows_equals_the_kernel_expansion():
    """SharedRows.expansion (a search's held-out scoring) = coef @ K(x_rows, x_cols), from kept and
    from missing rows alike (float32 rows)."""
    from sklearn.metrics.pairwise import rbf_kernel

    from sparsekernel._base import core_matrix

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    rows = shared_rows(core_matrix(X), KernelSpec("rbf", 0.2), 100.0)
    sv = rng.choice(300, size=40, replace=False).astype(np.int32)
    cols = rng.choice(300, size=70, replace=False).astype(np.int32)
    coef = rng.normal(size=(3, 40))
    coef[1, ::2] = 0.0
    K = rbf_kernel(X[cols], X[sv], gamma=0.2)
    for _ in range(2):  # the rows computed, then kept
        np.testing.assert_allclose(rows.expansion(sv, cols, coef, 2), K @ coef.T, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="out of range"):
        rows.expansion(sv, np.array([300], dtype=np.int32), coef, 1)


@pytest.mark.parametrize("cv", [StratifiedKFold(4, shuffle=True, random_state=0), None])
def test_held_out_scoring_reads_the_shared_rows(cv, monkeypatch):
    """A bare search scores each fit on its held-out rows (and, with return_train_score, on its
    training rows) from the search's kept kernel rows; the scores are GridSearchCV's. Held-out rows
    that are not the rest of the training set (ShuffleSplit) are predicted as usual, as is a fitted
    model after the search or unpickled."""
    import pickle

    from sklearn.model_selection import ShuffleSplit

    from sparsekernel import _warm

    calls = []
    real = _warm.HeldOutScoring.decision

    def spy(self, *args):
        out = real(self, *args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(_warm.HeldOutScoring, "decision", spy)
    X, y = _classification(n=300)
    grid = {"C": [0.5, 4.0], "gamma": [0.05, 0.2]}
    splits = cv if cv is not None else ShuffleSplit(3, test_size=0.2, random_state=0)
    kw = dict(cv=splits, scoring=["accuracy", "roc_auc"], refit="accuracy", return_train_score=True)
    ps = PathSearchCV(SVC(tol=1e-8, n_jobs=1), grid, **kw).fit(X, y)
    n_splits = splits.get_n_splits()
    # per fit: test and train rows, each by predict (accuracy) and decision_function (roc_auc)
    if cv is not None:
        assert calls.count(True) == 4 * n_splits * 2 * 2 and False not in calls
    else:  # the train rows are the fit's own; the test rows are not the rest of the set
        assert calls.count(True) == 4 * n_splits * 2 and calls.count(False) == 4 * n_splits * 2
    gs = GridSearchCV(SVC(tol=1e-8, n_jobs=1), grid, **kw).fit(X, y)
    for key in ("mean_test_accuracy", "mean_test_roc_auc", "mean_train_accuracy", "mean_train_roc_auc"):
        np.testing.assert_allclose(ps.cv_results_[key], gs.cv_results_[key], atol=1e-6)
    calls.clear()
    model = ps.best_estimator_
    assert "_held_out" not in model.__dict__ or model._held_out is None
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict(X), gs.predict(X))


def test_failing_fits_give_error_score_and_a_warning():
    """A candidate whose fits raise gets error_score with a FitFailedWarning, as in GridSearchCV."""
    from sklearn.exceptions import FitFailedWarning

    X, y = _classification(n=150)
    grid = {"C": [1.0, -1.0], "gamma": [0.1]}
    with pytest.warns(FitFailedWarning):
        ps = PathSearchCV(SVC(), grid, cv=3, error_score=-7.0).fit(X, y)
    scores = dict(zip([p["C"] for p in ps.cv_results_["params"]], ps.cv_results_["mean_test_score"]))
    assert scores[-1.0] == -7.0 and scores[1.0] > 0.5
    with pytest.raises(ValueError, match="The 'C' parameter of SVC must be"):
        PathSearchCV(SVC(), grid, cv=3, error_score="raise").fit(X, y)


def test_a_plain_fit_beside_a_search_sees_nothing_of_it():
    """The search's state (its deadline, its shared rows, its warm starts) reaches its own fits only:
    a plain fit in another thread while a time-limited search runs converges, cold, to the same model
    as alone."""
    import threading

    X, y = make_classification(n_samples=2500, n_features=10, n_informative=6, flip_y=0.2, random_state=3)
    alone = SVC(C=30.0, gamma=0.2, n_jobs=1).fit(X, y)
    search = PathSearchCV(SVC(n_jobs=1), {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.05, 0.2, 1.0]}, cv=5,
                          time_limit=0.5)
    thread = threading.Thread(target=lambda: search.fit(X, y))
    thread.start()
    beside = []
    while thread.is_alive() or not beside:
        beside.append(SVC(C=30.0, gamma=0.2, n_jobs=1).fit(X, y))
    thread.join()
    for model in beside:
        assert model.converged_ and not any(s["warm_started"] for s in model.solver_stats_)
        assert model.dual_objective_[0] == pytest.approx(alone.dual_objective_[0], rel=1e-12)
        np.testing.assert_array_equal(model.support_, alone.support_)


def test_search_refit_is_a_plain_fit():
    """The refit on all the data receives the same fit parameters but is a cold, unbounded fit."""
    X, y = _classification(n=200)
    ps = PathSearchCV(SVC(tol=1e-6), {"C": [0.5, 2.0]}, cv=3).fit(X, y)
    plain = SVC(tol=1e-6, C=ps.best_params_["C"]).fit(X, y)
    assert not any(s["warm_started"] for s in ps.best_estimator_.solver_stats_)
    np.testing.assert_array_equal(ps.best_estimator_.n_iter_, plain.n_iter_)
    np.testing.assert_array_equal(ps.best_estimator_.dual_coef_, plain.dual_coef_)


@pytest.mark.parametrize("n_jobs", [None, 1, 2])
def test_thread_policy_never_oversubscribes(n_jobs, monkeypatch):
    """The search's fits use threads * jobs <= the available threads: with n_jobs=None small folds
    run in parallel, one thread each."""
    import sparsekernel.model_selection as ms

    monkeypatch.setattr(ms, "available_threads", lambda: 4)
    search = PathSearchCV(SVC(), {"C": [1.0]}, n_jobs=n_jobs)
    jobs, threads = search._thread_policy(1000)
    assert jobs * (threads or 4) <= 4
    if n_jobs is None:
        assert (jobs, threads) == (4, 1)
        assert search._thread_policy(10**6) == (1, None)  # one fit at a time, every thread
        assert search._thread_policy(500) == (1, None)  # fits too short for threads to pay


def test_klr_walks_C_cold_in_its_kept_session():
    """KLR's box moves with C, so the previous a is not feasible, and a start from the previous
    model's decision values needs more SMO steps than the cold start (measured: _warm.warm_point):
    each fit of the walk starts cold, in the fold's kept session, and reaches GridSearchCV's fit with
    exactly its steps."""
    X, y = _classification(n=240)
    scoring = {"obj": _objective, "warm": lambda e, X, y: float(all(s["warm_started"] for s in e.solver_stats_)),
               "steps": lambda e, X, y: float(np.sum(e.n_iter_))}
    grid = {"C": [0.5, 2.0, 8.0]}
    ps = PathSearchCV(KernelLogisticRegression(tol=1e-8), grid, cv=3, scoring=scoring, refit=False).fit(X, y)
    gs = GridSearchCV(KernelLogisticRegression(tol=1e-8), grid, cv=3, scoring=scoring, refit=False).fit(X, y)
    np.testing.assert_allclose(ps.cv_results_["mean_test_obj"], gs.cv_results_["mean_test_obj"], rtol=1e-7)
    np.testing.assert_array_equal(ps.cv_results_["mean_test_steps"], gs.cv_results_["mean_test_steps"])
    assert not any(ps.cv_results_["mean_test_warm"])
    assert not any(gs.cv_results_["mean_test_warm"])


# ------------------------------------------------------------------ the nu formulations (issue 36)
def _cold(estimator, X, y):
    """1 when every problem of the fit started cold."""
    return float(not any(s["warm_started"] for s in estimator.solver_stats_))


NU_CASES = {
    "nusvc": (lambda: NuSVC(tol=1e-8, n_jobs=1), {"nu": [0.2, 0.4, 0.6], "gamma": [0.05, 0.2]}, "clf", "accuracy"),
    "nusvc-3class": (lambda: NuSVC(tol=1e-8, n_jobs=1), {"nu": [0.1, 0.3], "gamma": [0.1]}, "clf3", "accuracy"),
    "nusvr": (lambda: NuSVR(tol=1e-7, n_jobs=1), {"nu": [0.2, 0.5], "C": [0.5, 4.0], "gamma": [0.05, 0.2]}, "reg",
              "r2"),
    # OneClassSVM has no score (GridSearchCV needs a scoring for it, as for scikit-learn's): its mean score_samples
    "ocsvm": (lambda: OneClassSVM(tol=1e-8, n_jobs=1), {"nu": [0.1, 0.3, 0.5], "gamma": [0.05, 0.2]}, "clf",
              lambda e, X, y: float(np.mean(e.score_samples(X)))),
    "pipeline-nusvc": (lambda: make_pipeline(StandardScaler(), NuSVC(tol=1e-8)),
                       {"nusvc__nu": [0.2, 0.5], "nusvc__gamma": [0.05, 0.2]}, "clf", "accuracy"),
}


def _nu_search(case, search_cls, extra=None):
    make, grid, kind, score = NU_CASES[case]
    X, y = _data(kind)
    cv = KFold(4, shuffle=True, random_state=0) if kind == "reg" else StratifiedKFold(4, shuffle=True, random_state=0)
    scoring = {"score": score, "obj": _last_step_objective, "cold": lambda e, X, y: _cold(_last(e), X, y),
               **(extra or {})}
    return search_cls(make(), grid, cv=cv, scoring=scoring, refit="score").fit(X, y)


def _last(estimator):
    return estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator


@pytest.mark.parametrize("case", sorted(NU_CASES))
def test_nu_search_equals_grid_search(case):
    """PathSearchCV(NuSVC() / NuSVR() / OneClassSVM(), grid over nu and gamma), bare or in a
    Pipeline: walked along nu, every fit cold (a previous nu's solution is infeasible for e'a = nu l),
    and GridSearchCV's results: the same scores and objectives to 1e-6, the same best candidate."""
    ps = _nu_search(case, PathSearchCV)
    gs = _nu_search(case, GridSearchCV)
    assert ps.cv_results_["params"] == gs.cv_results_["params"]
    for key in ("mean_test_score", "mean_test_obj"):
        np.testing.assert_allclose(ps.cv_results_[key], gs.cv_results_[key], rtol=1e-6, atol=1e-9, err_msg=key)
    assert np.all(ps.cv_results_["mean_test_cold"] == 1.0) and np.all(gs.cv_results_["mean_test_cold"] == 1.0)
    assert ps.best_params_ == gs.best_params_
    X, _ = _data(NU_CASES[case][2])
    np.testing.assert_array_equal(ps.predict(X), gs.predict(X))


def test_nu_grid_is_walked_along_nu():
    from sparsekernel.model_selection import _path_target, _walked_param

    for est in (NuSVC(), NuSVR(), OneClassSVM()):
        assert _path_target(est, {"nu": [0.1]}) == (est, "")
        assert _walked_param(est, {"nu": [0.1, 0.2], "C": [1.0, 2.0], "gamma": [0.1]}) == "nu"
        assert _walked_param(est, [{"nu": [0.1]}]) == "C"  # one nu: nothing to walk (C, if any, groups nothing)
    pipe = make_pipeline(StandardScaler(), NuSVC())
    assert _walked_param(pipe[-1], {"nusvc__nu": [0.1, 0.2]}, "nusvc__") == "nusvc__nu"
    assert _walked_param(SVC(), {"nu": [0.1, 0.2], "C": [1.0, 2.0]}) == "C"


def test_svm_path_refuses_the_nu_formulations_with_the_reason():
    from sparsekernel import svm_path

    X, y = _classification(n=60)
    for est in (NuSVC(), NuSVR(), OneClassSVM()):
        with pytest.raises(ValueError, match=f"got {type(est).__name__} .*no warm start.*PathSearchCV"):
            svm_path(est, X, y, Cs=[1.0])


def test_cold_fits_read_the_search_rows():
    """The nu formulations' fits start cold (``FitWarmth.cold``: no warm start) but read the
    search's shared kernel rows and sessions, and still equal GridSearchCV's."""
    for case in ("nusvc", "nusvr", "ocsvm", "pipeline-nusvc"):
        ps = _nu_search(case, PathSearchCV)
        gs = _nu_search(case, GridSearchCV)
        np.testing.assert_allclose(ps.cv_results_["mean_test_obj"], gs.cv_results_["mean_test_obj"], rtol=1e-6,
                                   err_msg=case)
        np.testing.assert_allclose(ps.cv_results_["mean_test_score"], gs.cv_results_["mean_test_score"], rtol=1e-6,
                                   atol=1e-9, err_msg=case)
        assert np.all(ps.cv_results_["mean_test_cold"] == 1.0), case
        assert ps.best_params_ == gs.best_params_, case
        assert ps.shared_kernel_evals_ > 0, case  # the fits read the search's rows
