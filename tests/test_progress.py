"""The one progress hook (FitMonitor in _base): scikit-learn's callbacks (set_callbacks), time_limit
and verbose, for every estimator built on it. The callbacks see the fit, one sub-task per binary
problem and leaf tasks that carry the engine's reports (iteration, KKT gap or ||F|| or W, active
set); a time limit returns a usable model with converged_ False; a callback can stop a fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from sparsekernel import NSSVC, SLMC, SVC, SVR, KernelLogisticRegression, SparseKernelLogisticRegression, SparseKFD
from sparsekernel._base import PROGRESS_TICKS

callback = pytest.importorskip("sklearn.callback")


class Recorder:
    """A FitCallback that records (task name, metadata) of every finished task."""

    def __init__(self, stop_after=None):
        self.ends, self.stop_after = [], stop_after

    def setup(self, estimator, context):
        self.setups = getattr(self, "setups", 0) + 1

    def teardown(self, estimator, context):
        self.teardowns = getattr(self, "teardowns", 0) + 1

    def on_fit_task_begin(self, estimator, context, *, metadata=None):
        pass

    def on_fit_task_end(self, estimator, context, *, metadata=None):
        self.ends.append((context.task_name, dict(metadata or {})))
        leaves = sum(1 for name, _ in self.ends if name == "iterations")
        return self.stop_after is not None and leaves >= self.stop_after

    def problems(self):
        return [m for name, m in self.ends if name.startswith("problem")]

    def leaves(self, k):
        return [m for name, m in self.ends if name == "iterations" and m.get("problem") == k]


def _data(n=1500, classes=2, seed=0):
    return make_classification(n_samples=n, n_features=12, n_informative=6, n_classes=classes, flip_y=0.1,
                               random_state=seed)


@pytest.mark.parametrize("classes", [2, 4])
def test_svc_reports_every_problem_with_monotone_iterations_and_a_gap_that_reaches_tol(classes):
    X, y = _data(classes=classes)
    rec = Recorder()
    model = SVC(C=50.0, tol=1e-3).set_callbacks(rec).fit(X, y)
    n_problems = classes * (classes - 1) // 2
    assert rec.setups == rec.teardowns == 1
    assert rec.ends[-1][0] == "fit"
    finals = rec.problems()
    assert sorted(m["problem"] for m in finals) == list(range(n_problems))
    for m in finals:
        assert m["status"] == 0 and m["kkt_gap"] <= m["tol"] == 1e-3
        assert m["iteration"] == model.n_iter_[m["problem"]]
        leaves = rec.leaves(m["problem"])
        assert len(leaves) == PROGRESS_TICKS
        its = [r["iteration"] for r in leaves]
        assert its == sorted(its) and its[-1] == m["iteration"]


def test_every_estimator_reports_its_metric():
    X, y = _data(n=400)
    for model, metric in ((SVR(C=10.0), "kkt_gap"), (KernelLogisticRegression(), "kkt_gap"),
                          (SparseKernelLogisticRegression(), "kkt_gap"), (NSSVC(), "norm_F"),
                          (SLMC(8, max_iter=15, random_state=0), "W"), (SparseKFD(8, max_iter=15, random_state=0), "W")):
        rec = Recorder()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.set_callbacks(rec).fit(X, y)
        finals = rec.problems()
        assert len(finals) == 1 and metric in finals[0], type(model).__name__
        assert len(rec.leaves(0)) == PROGRESS_TICKS


def _slow_svc(time_limit):
    return SVC(C=1e4, tol=1e-9, time_limit=time_limit)


def test_time_limit_returns_a_usable_model():
    X, y = _data(n=4000)
    with pytest.warns(ConvergenceWarning, match="time_limit"):
        model = _slow_svc(0.2).fit(X, y)
    assert model.converged_ is False and model.solver_stats_[0]["status"] == 3
    assert 0 < model.n_iter_[0] and len(model.support_) > 0
    assert np.all(np.isfinite(model.decision_function(X)))
    assert np.mean(model.predict(X) == y) > 0.6  # (after >= 1000 steps, whatever the machine's load)


# (NSSVC with eta = 1 cycles between working sets and never converges: the budget must end it)
@pytest.mark.parametrize("make,min_accuracy", [
    (lambda: KernelLogisticRegression(C=1e3, tol=1e-10, time_limit=0.05), 0.6),
    (lambda: NSSVC(eta=1.0, adaptive=False, max_iter=10**6, time_limit=0.05, random_state=0), 0.0),
    (lambda: SLMC(20, max_iter=10**4, tol=1e-15, time_limit=0.2, random_state=0), 0.6)],
    ids=["klr", "nssvc", "slmc"])
def test_time_limit_of_the_other_estimators(make, min_accuracy):
    X, y = _data(n=3000)
    with pytest.warns(ConvergenceWarning, match="time_limit"):
        model = make().fit(X, y)
    assert model.converged_ is False
    assert np.all(np.isfinite(model.decision_function(X)))
    assert np.mean(model.predict(X) == y) >= min_accuracy


def test_a_callback_can_stop_the_solver():
    X, y = _data(n=3000)
    rec = Recorder(stop_after=3)
    with pytest.warns(ConvergenceWarning, match="callback stopped"):
        model = _slow_svc(None).set_callbacks(rec).fit(X, y)
    assert model.converged_ is False and model.solver_stats_[0]["status"] == 2
    assert np.all(np.isfinite(model.decision_function(X)))


def test_an_error_in_a_callback_propagates_from_fit():
    class Boom(Recorder):
        def on_fit_task_end(self, estimator, context, *, metadata=None):
            if context.task_name == "iterations":
                raise RuntimeError("boom")

    X, y = _data(n=3000)
    with pytest.raises(RuntimeError, match="boom"):
        _slow_svc(None).set_callbacks(Boom()).fit(X, y)
    SVC().fit(X[:200], y[:200])  # the library still works


def test_verbose_prints_the_progress(capsys):
    X, y = _data(n=600, classes=3)
    SVC(verbose=True).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    finals = [ln for ln in out if "converged" in ln]
    assert len(finals) == 3 and all("kkt_gap" in ln and "tol 0.001" in ln for ln in finals)


@pytest.mark.parametrize("bad", [0, -1.0, np.nan, "1"])
def test_bad_time_limit(bad):
    X, y = _data(n=100)
    for model in (SVC(time_limit=bad), KernelLogisticRegression(time_limit=bad), NSSVC(time_limit=bad),
                  SLMC(5, time_limit=bad)):
        with pytest.raises(ValueError, match="time_limit"):
            model.fit(X, y)


def test_no_callbacks_no_calls():
    """Nobody listening: the engine gets no progress callable (the fit is exactly the plain one)."""
    X, y = _data(n=800)
    a = SVC(C=10.0).fit(X, y)
    b = SVC(C=10.0).set_callbacks(Recorder()).fit(X, y)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert a.n_iter_[0] == b.n_iter_[0]


def test_path_search_reports_every_candidate_and_split():
    from sparsekernel import PathSearchCV

    X, y = _data(n=300)
    rec = Recorder()
    search = PathSearchCV(SVC(), {"C": [0.5, 5.0], "gamma": [0.05, 0.2]}, cv=3).set_callbacks(rec)
    search.fit(X, y)
    names = [name for name, _ in rec.ends]
    assert names.count("candidate-split-evaluation") == 4 * 3
    assert names[-1] == "fit"
    assert search.best_params_["C"] in (0.5, 5.0)


def test_path_search_time_limit_bounds_the_cross_validation():
    from sparsekernel import PathSearchCV

    X, y = _data(n=3000)
    grid = {"C": [1e3, 1e4], "tol": [1e-9]}  # fits that run until max_iter
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = PathSearchCV(SVC(max_iter=20000), grid, cv=2, time_limit=1e-6).fit(X, y)
    assert any("time_limit" in str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning))
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    # the refit of the best candidate is not bounded: it runs to max_iter
    assert search.best_estimator_.solver_stats_[0]["status"] == 1
    assert search.best_estimator_.n_iter_[0] == 20000


def test_klr_cv_on_the_shared_basis_reports_a_task_per_c_and_stops_at_its_time_limit():
    """KernelLogisticRegressionCV on the shared basis: one task per value of C walked and one for
    the refit, each with the Newton reports; time_limit ends the walk and the refit with a
    ConvergenceWarning and a model that predicts."""
    from sparsekernel import KernelLogisticRegressionCV

    X, y = _data(n=1200)
    rec = Recorder()
    model = KernelLogisticRegressionCV(Cs=[0.1, 1.0, 10.0], cv=3, patience=None, solver="nystrom", n_components=100,
                                       random_state=0).set_callbacks(rec)
    model.fit(X, y)
    assert len(rec.problems()) == 3 + 1  # three values of C, the refit
    assert all(rec.leaves(k) for k in range(4))
    assert [name for name, _ in rec.ends][-1] == "fit"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quick = KernelLogisticRegressionCV(Cs=[0.1, 1.0, 10.0], cv=3, solver="nystrom", n_components=100,
                                           time_limit=1e-6).fit(X, y)
    assert any("time_limit" in str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning))
    assert len(quick.cv_results_["params"]) == 1 and quick.predict_proba(X).shape == (len(y), 2)


def test_klr_cv_on_the_exact_route_passes_callbacks_and_time_limit_to_its_search():
    from sparsekernel import KernelLogisticRegressionCV

    X, y = _data(n=300)
    rec = Recorder()
    KernelLogisticRegressionCV(Cs=[0.1, 1.0], cv=3, patience=None).set_callbacks(rec).fit(X, y)
    assert [name for name, _ in rec.ends] == ["search", "fit"]  # (its own tasks: the search's go to
    bar = callback.ProgressBar()                                  #  auto-propagated callbacks)
    KernelLogisticRegressionCV(Cs=[0.1, 1.0], cv=3, patience=None).set_callbacks(bar).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        KernelLogisticRegressionCV(Cs=[1e3, 1e4], cv=2, tol=1e-9, time_limit=1e-6).fit(X, y)
    assert any("time_limit" in str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning))
