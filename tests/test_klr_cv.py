"""KernelLogisticRegressionCV and SparseKernelLogisticRegressionCV (issue 35): the C they choose is
the one an independent cross-validation (scikit-learn's GridSearchCV over the plain estimators)
chooses, the sparse one's choice rule holds, and at their defaults in a pipeline their
probabilities beat SVC + Platt where the plain KLR at C = 1 does not."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsekernel import (KernelLogisticRegression, KernelLogisticRegressionCV, SparseKernelLogisticRegression,
                          SparseKernelLogisticRegressionCV)
from sparsekernel._base import resolve_gamma
from sparsekernel.klr_cv import DEFAULT_C_RANGE, c_grid


def _data(n=300, seed=0):
    X, y = make_classification(n_samples=n, n_features=8, n_informative=4, flip_y=0.1, random_state=seed)
    return StandardScaler().fit_transform(X), y


def test_c_grid():
    np.testing.assert_allclose(c_grid(3), [DEFAULT_C_RANGE[0], np.sqrt(np.prod(DEFAULT_C_RANGE)), DEFAULT_C_RANGE[1]])
    np.testing.assert_array_equal(c_grid([5, 0.5]), [5.0, 0.5])
    for bad in (0, -2, [], [1.0, -1.0], [np.nan], "many"):
        with pytest.raises(ValueError, match="Cs"):
            c_grid(bad)


def test_klr_cv_chooses_the_c_of_an_independent_cross_validation():
    """C_, scores_ and the refitted model are those of GridSearchCV over KernelLogisticRegression
    with gamma resolved on the whole training set (tight tol: the warm-started walk reaches the
    same fold models)."""
    X, y = _data()
    Cs = [0.1, 1.0, 10.0, 100.0]
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    model = KernelLogisticRegressionCV(Cs=Cs, cv=cv, tol=1e-8, patience=None).fit(X, y)
    gamma = resolve_gamma("scale", X)
    ref = GridSearchCV(KernelLogisticRegression(gamma=gamma, tol=1e-8), {"C": Cs}, cv=cv,
                       scoring="neg_log_loss").fit(X, y)
    assert model.C_ == ref.best_params_["C"]
    assert model.gamma_ == pytest.approx(gamma)
    np.testing.assert_array_equal(model.Cs_, Cs)
    assert model.scores_.shape == (4, len(Cs))
    expected = np.array([ref.cv_results_[f"split{k}_test_score"] for k in range(4)])
    np.testing.assert_allclose(model.scores_, expected, rtol=1e-6)
    np.testing.assert_allclose(model.predict_proba(X), ref.best_estimator_.predict_proba(X), atol=1e-6)
    np.testing.assert_array_equal(model.predict(X), ref.best_estimator_.predict(X))
    assert model.estimator_.C == model.C_


def test_klr_cv_walk_stops_past_the_best_c():
    """patience=k stops the walk up the grid k values of C after the best mean score so far: the
    values fitted are a prefix of the grid, their scores those of the full walk (NaN beyond), the last
    k below the best, and the choice the full walk's when the best lies inside the grid."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    Cs = np.logspace(-1, 4, 8)
    full = KernelLogisticRegressionCV(Cs=Cs, cv=cv, patience=None).fit(X, y)
    best = int(np.argmax(full.scores_.mean(axis=0)))
    assert 0 < best < len(Cs) - 2  # the data of this test: a best C inside the grid
    for patience in (1, 2):
        model = KernelLogisticRegressionCV(Cs=Cs, cv=cv, patience=patience).fit(X, y)
        fitted = len(model.cv_results_["params"])
        assert fitted == best + 1 + patience < len(Cs)
        np.testing.assert_array_equal([p["C"] for p in model.cv_results_["params"]], Cs[:fitted])
        np.testing.assert_allclose(model.scores_[:, :fitted], full.scores_[:, :fitted], rtol=1e-6)
        assert np.all(np.isnan(model.scores_[:, fitted:]))
        assert model.C_ == full.C_ and model.best_index_ == best
        np.testing.assert_allclose(model.predict_proba(X), full.predict_proba(X))
    # a grid given in any order is walked upward; with C's best at its top nothing is skipped
    model = KernelLogisticRegressionCV(Cs=Cs[best::-1], cv=cv).fit(X, y)
    assert len(model.cv_results_["params"]) == best + 1 and model.C_ == full.C_


def test_sparse_klr_cv_picks_the_smallest_near_best_model():
    """Among the candidates within size_tolerance of the best mean score, the one whose fold
    models keep the fewest points; size_tolerance=0 is the best score."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    Cs = [1.0, 30.0, 1000.0]
    for tol in (0.0, 0.02, 0.5):
        model = SparseKernelLogisticRegressionCV(Cs=Cs, cv=cv, size_tolerance=tol, max_kept=None, solver="smo").fit(X, y)
        score = model.cv_results_["mean_test_score"]
        kept = model.kept_.mean(axis=0)
        near = score >= score.max() - tol * abs(score.max())
        assert near[model.best_index_]
        assert kept[model.best_index_] == kept[near].min()
        if tol == 0.0:
            assert model.best_index_ == int(np.argmax(score))
        assert model.C_ == model.cv_results_["params"][model.best_index_]["C"]
        assert model.estimator_.lam_ == pytest.approx(model.lam_)
    # a loose tolerance buys a sparse model here (C = 1000 drops most points)
    assert kept[model.best_index_] < 0.5
    assert model.estimator_.n_expansion_ < 0.5 * len(y)


@pytest.mark.parametrize("max_kept", [0.3, 0.6, 150])
def test_sparse_klr_cv_keeps_within_its_budget(max_kept):
    """max_kept (a share or a number of points) on S-KLR's own route: the chosen candidate is the
    near-best smallest among those whose fold models keep at most the budget, and the refitted
    model keeps about as many."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    model = SparseKernelLogisticRegressionCV(Cs=[1.0, 30.0, 300.0, 3000.0], cv=cv, max_kept=max_kept,
                                             size_tolerance=0.0, solver="smo").fit(X, y)
    budget = max_kept if isinstance(max_kept, float) else max_kept / len(y)
    kept = np.asarray(model.cv_results_["mean_test_kept"])
    score = np.asarray(model.cv_results_["mean_test_score"])
    within = kept <= budget
    assert within.any()
    assert within[model.best_index_] and score[model.best_index_] == score[within].max()
    assert model.estimator_.n_expansion_ <= 1.2 * budget * len(y)


def test_sparse_klr_cv_warns_when_no_model_meets_the_budget():
    X, y = _data(200)
    with pytest.warns(UserWarning, match="max_kept"):
        model = SparseKernelLogisticRegressionCV(Cs=[0.1, 1.0], cv=3, max_kept=0.01, solver="smo").fit(X, y)
    kept = np.asarray(model.cv_results_["mean_test_kept"])
    assert kept[model.best_index_] == kept.min()


def test_sparse_klr_cv_on_the_shared_basis_keeps_max_kept():
    """On the compact route the model is an expansion over at most max_kept of the points."""
    X, y = _data(600)
    model = SparseKernelLogisticRegressionCV(Cs=[0.3, 3.0, 30.0], cv=3, solver="nystrom", max_kept=0.1,
                                             random_state=0).fit(X, y)
    assert model.estimator_.solver_ == "nystrom" and model.estimator_.n_expansion_ == 60
    assert model.lam_ == 0.0 and model.estimator_.lam_ == 0.0
    assert np.allclose(model.kept_, 60 / 600)
    default = SparseKernelLogisticRegressionCV(Cs=[0.3, 3.0, 30.0], cv=3, random_state=0).fit(X, y)
    assert default.estimator_.n_expansion_ == 180  # max_kept=0.3 at every size (600 rows)
    assert model.score(X, y) > 0.8


def test_sparse_klr_cv_with_a_lam_grid():
    X, y = _data(200)
    model = SparseKernelLogisticRegressionCV(Cs=[10.0, 100.0], lams=[0.0, 2.0], cv=3).fit(X, y)
    assert len(model.cv_results_["params"]) == 4
    assert model.lam_ in (0.0, 2.0)
    assert model.kept_.shape == (3, 4)


def test_refit_false_keeps_the_results_only():
    X, y = _data(200)
    model = KernelLogisticRegressionCV(Cs=[1.0, 10.0], cv=3, refit=False).fit(X, y)
    assert model.C_ in (1.0, 10.0) and not hasattr(model, "estimator_")
    assert not hasattr(model, "predict_proba")
    with pytest.raises(AttributeError, match="refit=False"):
        model.predict(X)


@pytest.mark.parametrize("params, match", [({"Cs": 0}, "Cs"), ({"Cs": [1.0, -1.0]}, "Cs"), ({"refit": "yes"}, "refit"),
                                           ({"tol": -1.0}, "tol"), ({"gamma": -1.0}, "gamma"),
                                           ({"patience": 0}, "patience"), ({"patience": 1.5}, "patience")])
def test_bad_parameters_raise(params, match):
    X, y = _data(60)
    with pytest.raises(ValueError, match=match):
        KernelLogisticRegressionCV(**params).fit(X, y)


@pytest.mark.parametrize("params, match", [({"size_tolerance": -0.1}, "size_tolerance"), ({"lams": "x"}, "lams"),
                                           ({"lams": [-1.0]}, "lams"), ({"max_kept": 0.0}, "max_kept"),
                                           ({"max_kept": 1.5}, "max_kept"), ({"max_kept": "all"}, "max_kept")])
def test_bad_sparse_parameters_raise(params, match):
    X, y = _data(60)
    with pytest.raises(ValueError, match=match):
        SparseKernelLogisticRegressionCV(**params).fit(X, y)


def test_one_class_and_nan_raise():
    X, y = _data(60)
    with pytest.raises(ValueError):
        KernelLogisticRegressionCV(Cs=2, cv=2).fit(X, np.zeros(len(y)))
    X[0, 0] = np.nan
    with pytest.raises(ValueError):
        KernelLogisticRegressionCV(Cs=2, cv=2).fit(X, y)


def test_defaults_beat_platt_on_digits():
    """The finding of issue 35: at the default C the plain KLR's probabilities lose to SVC + Platt
    on digits (held-out log-loss 0.40 against 0.09); with C chosen by cross-validation they win."""
    from sklearn.svm import SVC as SklearnSVC

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    platt = make_pipeline(StandardScaler(), SklearnSVC(probability=True, random_state=0)).fit(Xtr, ytr)
    cv_model = make_pipeline(StandardScaler(), KernelLogisticRegressionCV()).fit(Xtr, ytr)
    plain = make_pipeline(StandardScaler(), KernelLogisticRegression()).fit(Xtr, ytr)
    ll_platt = log_loss(yte, platt.predict_proba(Xte))
    assert log_loss(yte, plain.predict_proba(Xte)) > ll_platt  # the finding
    assert log_loss(yte, cv_model.predict_proba(Xte)) < ll_platt
    assert cv_model.score(Xte, yte) >= platt.score(Xte, yte) - 0.01


@parametrize_with_checks([KernelLogisticRegressionCV(Cs=2, cv=2), KernelLogisticRegressionCV(Cs=2, cv="alo"),
                          SparseKernelLogisticRegressionCV(Cs=[1.0, 100.0], cv=2)],
                         expected_failed_checks=lambda est: {
                             "check_sample_weight_equivalence_on_dense_data":
                                 "the folds of repeated rows differ from the folds of weighted rows (leaving "
                                 "one of two repeated rows out keeps the other)",
                             "check_sample_weight_equivalence_on_sparse_data":
                                 "the folds of repeated rows differ from the folds of weighted rows (leaving "
                                 "one of two repeated rows out keeps the other)"})
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def _compact_reference(Kxz, Kzz, y, C, lam=0.0):
    """(P_M) solved here in float64 by L-BFGS: min 1/2 beta'K_ZZ beta + C sum log(1 + exp(lam - y f)),
    f = K_XZ beta + b; returns (beta, b)."""
    from scipy.optimize import minimize
    from scipy.special import expit

    M = Kzz.shape[0]

    def fun(w):
        beta, b = w[:M], w[M]
        z = lam - y * (Kxz @ beta + b)
        r = -C * y * expit(z)
        Kb = Kzz @ beta
        return 0.5 * beta @ Kb + C * np.logaddexp(0.0, z).sum(), np.append(Kb + Kxz.T @ r, r.sum())

    w = minimize(fun, np.zeros(M + 1), jac=True, method="L-BFGS-B",
                 options={"maxiter": 20000, "gtol": 1e-10, "ftol": 1e-15}).x
    return w[:M], w[M]


def test_shared_basis_search_matches_an_independent_solve_per_fold():
    """On the compact route the search fits every fold and C on one basis (its points: the refitted
    model's support vectors); each fold's score is the held-out log-loss of the (P_M) optimum on that
    basis, solved here in float64 by L-BFGS, and the refitted model is the optimum on all rows."""
    from sklearn.metrics import log_loss
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = _data(400)
    Cs = [0.3, 3.0, 30.0]
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    model = KernelLogisticRegressionCV(Cs=Cs, cv=cv, patience=None, solver="nystrom", n_components=60, tol=1e-7,
                                       random_state=0).fit(X, y)
    est = model.estimator_
    assert est.solver_ == "nystrom" and est.n_expansion_ == 60
    Z = X[est.support_]
    gamma = model.gamma_
    yy = np.where(y == model.classes_[1], 1.0, -1.0)
    Kzz = rbf_kernel(Z, Z, gamma=gamma)
    for k, (train, test) in enumerate(cv.split(X, y)):
        for c, C in enumerate(Cs):
            beta, b = _compact_reference(rbf_kernel(X[train], Z, gamma=gamma), Kzz, yy[train], C)
            p = 1.0 / (1.0 + np.exp(-(rbf_kernel(X[test], Z, gamma=gamma) @ beta + b)))
            assert model.scores_[k, c] == pytest.approx(-log_loss(y[test], p), rel=1e-4)
    beta, b = _compact_reference(rbf_kernel(X, Z, gamma=gamma), Kzz, yy, model.C_)
    np.testing.assert_allclose(est.decision_function(X), rbf_kernel(X, Z, gamma=gamma) @ beta + b, atol=1e-3)
    assert model.C_ == Cs[int(np.argmax(model.scores_.mean(axis=0)))]


def test_shared_basis_search_multiclass_weights_and_stop():
    """One-vs-rest problems, sample weights (a zero weight drops a row from the fits) and the
    patience stop on the shared-basis route: the fitted values of C are a prefix of the grid and the
    model predicts every class."""
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X[:600])
    y = y[:600]
    w = np.ones(len(y))
    w[::7] = 0.0
    model = KernelLogisticRegressionCV(Cs=[0.1, 1.0, 10.0, 100.0, 1000.0], cv=3, solver="nystrom", n_components=150,
                                       random_state=0).fit(X, y, sample_weight=w)
    fitted = len(model.cv_results_["params"])
    assert 2 <= fitted <= 5
    np.testing.assert_array_equal([p["C"] for p in model.cv_results_["params"]], [0.1, 1.0, 10.0, 100.0, 1000.0][:fitted])
    assert model.estimator_.dual_coef_.shape == (10, 150)
    assert not np.isin(model.estimator_.support_, np.flatnonzero(w == 0)).any()
    assert model.score(X, y) > 0.9


def test_shared_basis_refit_doubles_the_basis_and_is_stationary():
    """At n_components='auto' the search runs on 512 points and the model is refitted on 1,024: the
    search's 512 and 512 more. The refitted model is a stationary point of (P_M) on its basis
    (the gradient, computed here in float64, a small fraction of the start's)."""
    from scipy.special import expit
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = make_classification(n_samples=4500, n_features=10, n_informative=5, flip_y=0.05, random_state=3)
    X = StandardScaler().fit_transform(X)
    model = KernelLogisticRegressionCV(Cs=[0.3, 3.0], cv=3, patience=None, random_state=0).fit(X, y)
    est = model.estimator_
    assert est.solver_ == "nystrom" and est.n_expansion_ == 1024
    Z = X[est.support_]
    Kxz, Kzz = rbf_kernel(X, Z, gamma=model.gamma_), rbf_kernel(Z, Z, gamma=model.gamma_)
    yy = np.where(y == model.classes_[1], 1.0, -1.0)
    beta, b = est.dual_coef_[0], est.intercept_[0]

    def gradient(beta, b):
        r = -model.C_ * yy * expit(-yy * (Kxz @ beta + b))
        return np.append(Kzz @ beta + Kxz.T @ r, r.sum())

    g0 = gradient(np.zeros_like(beta), np.log((yy > 0).sum() / (yy < 0).sum()))
    assert np.linalg.norm(gradient(beta, b)) <= 1e-3 * np.linalg.norm(g0)


def test_shared_basis_refit_falls_back_to_the_search_basis(monkeypatch):
    """A larger refit that runs out of its time (forced here: its solve reports the time limit)
    leaves the model on the search's basis, and SKLR-CV's recorded sizes say so."""
    from sparsekernel import _compact, klr_cv

    solve = _compact.newton_columns

    def out_of_time_on_the_larger_basis(problem, W0, **kwargs):
        r = solve(problem, W0, **kwargs)
        if W0.shape[0] - 1 > 512:
            r["status"][:] = 3
        return r

    monkeypatch.setattr(_compact, "newton_columns", out_of_time_on_the_larger_basis)
    monkeypatch.setattr(klr_cv, "newton_columns", out_of_time_on_the_larger_basis)
    X, y = _data(1300)
    model = KernelLogisticRegressionCV(Cs=[0.3, 3.0], cv=3, solver="nystrom", random_state=0).fit(X, y)
    assert model.estimator_.n_expansion_ == 512 and model.estimator_.converged_
    sparse = SparseKernelLogisticRegressionCV(Cs=[0.3, 3.0], cv=3, max_kept=1.0, random_state=0).fit(X, y)
    assert sparse.estimator_.n_expansion_ == 512
    np.testing.assert_allclose(sparse.kept_, 512 / 1300)


@pytest.mark.parametrize("tol", [1e-3, 1e-5])  # float32 and float64 kernel blocks
def test_shared_basis_search_does_not_depend_on_the_thread_count(tol):
    X, y = _data(900)
    fits = [KernelLogisticRegressionCV(Cs=[0.3, 3.0, 30.0], cv=3, solver="nystrom", n_components=80, tol=tol,
                                       random_state=0, n_jobs=n).fit(X, y) for n in (1, 2)]
    np.testing.assert_array_equal(fits[0].scores_, fits[1].scores_)
    np.testing.assert_array_equal(fits[0].predict_proba(X), fits[1].predict_proba(X))
