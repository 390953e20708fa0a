"""Searches on a Dask cluster (a LocalCluster of two worker processes): PathSearchCV and svm_path
under ``joblib.parallel_config(backend="dask")`` run one task per fold x kernel-parameter group on
the workers, walked along C (or lam) with warm starts inside the task.

What must hold: every cross-validated fit the client scores is the fit a task made on a worker
(bit for bit the fit of the same walk made here, in one process), the tasks are as many as folds x
groups, and the search's results are those of the search without a cluster (same best candidate;
the same solutions to tol, since only the warm start from one kernel group to the next is lost)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from joblib import parallel_config  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.model_selection import KFold, ParameterGrid  # noqa: E402

from sparsekernel import SVC, SVR, SparseKernelLogisticRegression  # noqa: E402
from sparsekernel._warm import PathStore, SearchRows  # noqa: E402
from sparsekernel.model_selection import PathSearchCV, _walk_groups, _walked_param, svm_path  # noqa: E402


def _walk_here(estimator, X, y, train, group):
    """The fits of one task, made in this process: the walk of ``group`` on fold ``train``."""
    out = []
    rows = SearchRows(PathStore(), len(train))
    for params in group:
        out.append(clone(estimator).set_params(**params).fit(X[train], y[train], search_rows=rows))
    return out


CASES = {
    "svc-rbf": (SVC(kernel="rbf", tol=1e-4), {"C": [0.1, 1.0, 10.0], "gamma": [0.05, 0.5]},
                lambda: make_classification(n_samples=240, n_features=6, random_state=0)),
    "svc-3class-csr": (SVC(kernel="rbf", tol=1e-4), {"C": [0.5, 5.0], "gamma": [0.1, 1.0]},
                       lambda: (lambda X, y: (sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0)), y))(
                           *make_classification(n_samples=210, n_features=8, n_informative=5, n_classes=3,
                                                random_state=1))),
    "svr": (SVR(kernel="rbf", tol=1e-4), {"C": [0.3, 3.0], "epsilon": [0.05, 0.2]},
            lambda: make_regression(n_samples=200, n_features=5, noise=5.0, random_state=2)),
    "sklr-lam": (SparseKernelLogisticRegression(kernel="rbf", gamma=0.2, C=2.0, tol=1e-4), {"lam": [0.01, 0.1, 0.5]},
                 lambda: make_classification(n_samples=200, n_features=5, random_state=3)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_search_on_the_cluster_scores_the_fits_its_tasks_made(client, case, monkeypatch):
    import sparsekernel.klr
    import sparsekernel.svm
    from sparsekernel import _warm

    restored = []  # the client's fits that loaded a task's result instead of solving

    def counting(model, X, y, sample_weight=None, search_rows=None):
        hit = _warm.restore_prefitted(model, X, y, sample_weight, search_rows)
        restored.append(hit)
        return hit

    for module in (sparsekernel.svm, sparsekernel.klr):
        monkeypatch.setattr(module, "restore_prefitted", counting)
    estimator, grid, data = CASES[case]
    X, y = data()
    cv = KFold(3, shuffle=True, random_state=0)
    with parallel_config(backend="dask"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = PathSearchCV(estimator, grid, cv=cv, n_jobs=2).fit(X, y)
    groups = _walk_groups(list(ParameterGrid(grid)), _walked_param(estimator, grid))
    folds = [train for train, _ in cv.split(X, y)]
    assert search.cluster_tasks_ == len(groups) * len(folds)
    n_fits = len(ParameterGrid(grid)) * len(folds)
    assert restored[:n_fits] == [True] * n_fits  # every cross-validated fit came from a task
    assert restored[n_fits:] == [False]  # the refit of the best candidate runs here

    # every score is that of the fit of the same walk made here (bit for bit: the same code)
    for group in groups:
        for s, (train, test) in enumerate(cv.split(X, y)):
            for params, model in zip(group, _walk_here(estimator, X, y, train, group)):
                row = [all(search.cv_results_[f"param_{k}"][i] == v for k, v in params.items())
                       for i in range(len(search.cv_results_["params"]))].index(True)
                assert search.cv_results_[f"split{s}_test_score"][row] == model.score(X[test], y[test]), (params, s)

    # and the search's outcome is that of the search without a cluster
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = PathSearchCV(estimator, grid, cv=cv, n_jobs=2).fit(X, y)
    assert local.cluster_tasks_ == 0
    assert search.best_params_ == local.best_params_
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], local.cv_results_["mean_test_score"],
                               atol=0.02)
    np.testing.assert_array_equal(search.predict(X), local.predict(X))


def test_svm_path_on_the_cluster_walks_each_kernel_group_in_one_task(client):
    X, y = make_classification(n_samples=300, n_features=6, random_state=4)
    kw = dict(Cs=[0.1, 1.0, 10.0], gammas=[0.05, 0.2, 1.0], X_test=X[:100], y_test=y[:100])
    est = SVC(kernel="rbf", tol=1e-5)
    with parallel_config(backend="dask"):
        on_cluster = svm_path(est, X, y, **kw)
    here = svm_path(est, X, y, **kw)
    assert [e["params"] for e in on_cluster] == [e["params"] for e in here]
    for a, b in zip(on_cluster, here):
        # the same solution to tol (the first fit of each group starts cold on the cluster)
        np.testing.assert_allclose(a["dual_objective"], b["dual_objective"], rtol=1e-4)
        assert a["score"] == pytest.approx(b["score"], abs=0.02)
    # inside a group, fits after the first are warm-started on the cluster as here
    firsts = {0, 3, 6}
    assert all(e["warm_started"] for k, e in enumerate(on_cluster) if k not in firsts)


def test_search_on_the_cluster_refuses_what_it_cannot_match(client):
    X, y = make_classification(n_samples=60, n_features=4, random_state=5)
    with parallel_config(backend="dask"), pytest.raises(ValueError, match="numpy array or a scipy.sparse"):
        PathSearchCV(SVC(), {"C": [1.0]}, cv=3).fit(X.tolist(), y)


def test_one_class_search_on_the_cluster_scores_the_fits_its_tasks_made(client, monkeypatch):
    """OneClassSVM (no labels) searched on the cluster: its walks along nu run as tasks, every
    cross-validated fit the client scores is a task's, and the outcome is the search's without a
    cluster."""
    import sparsekernel.svm
    from sparsekernel import OneClassSVM, _warm

    restored = []

    def counting(model, X, y, sample_weight=None, search_rows=None):
        hit = _warm.restore_prefitted(model, X, y, sample_weight, search_rows)
        restored.append(hit)
        return hit

    monkeypatch.setattr(sparsekernel.svm, "restore_prefitted", counting)
    X, _ = make_classification(n_samples=240, n_features=5, random_state=6)
    grid = {"nu": [0.1, 0.3, 0.6], "gamma": [0.1, 1.0]}
    cv = KFold(3, shuffle=True, random_state=0)

    def scoring(estimator, X, y=None):  # the mean score of held-out points (higher: more typical)
        return float(np.mean(estimator.score_samples(X)))

    estimator = OneClassSVM(tol=1e-4)
    with parallel_config(backend="dask"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = PathSearchCV(estimator, grid, cv=cv, scoring=scoring, n_jobs=2).fit(X)
    groups = _walk_groups(list(ParameterGrid(grid)), _walked_param(estimator, grid))
    assert search.cluster_tasks_ == len(groups) * 3
    n_fits = len(ParameterGrid(grid)) * 3
    assert restored[:n_fits] == [True] * n_fits and restored[n_fits:] == [False]
    local = PathSearchCV(estimator, grid, cv=cv, scoring=scoring, n_jobs=2).fit(X)
    assert local.cluster_tasks_ == 0 and search.best_params_ == local.best_params_
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], local.cv_results_["mean_test_score"],
                               rtol=1e-3)
    np.testing.assert_array_equal(search.predict(X), local.predict(X))
