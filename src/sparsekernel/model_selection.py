"""Warm-started regularisation paths and the grid search built on them.

A grid search over (C, kernel parameters) fits the same training set many times with problems that
differ little from one C to the next. ``svm_path`` walks such a grid so that every fit starts from
its neighbour's solution (``sparsekernel._warm``): along C with the kernel row cache kept, and from
one kernel parameter to the next with the gradient recomputed. ``PathSearchCV`` is
:class:`sklearn.model_selection.GridSearchCV` with its candidates walked in that order on every
fold.
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import numpy as np
import scipy.sparse as sp
from joblib import delayed, effective_n_jobs, Parallel, parallel_config
from sklearn.base import clone, is_classifier
from sklearn.metrics import check_scoring, log_loss
from sklearn.model_selection import check_cv, ParameterGrid
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils.validation import _check_method_params, _num_samples, check_array, indexable
from joblib.parallel import get_active_backend
from sklearn.pipeline import Pipeline
from sklearn.utils._metadata_requests import _routing_enabled
from sklearn.utils.metaestimators import _safe_split

from . import _core
from ._base import available_threads, canonical_csr, check_positive, engine_storage, one_thread
from ._memory import fold_rows_mb, shared_rows_mb
from ._warm import FoldSteps, PathStore, SearchRows, prefit_key
from .klr import SparseKernelLogisticRegression, _BaseKLR, lam_path_fits
from .metrics import expected_calibration_error
from .svm import SVC, SVR, OneClassSVM, _BaseSVC, _BaseSVR

#: PathSearchCV(n_jobs=None) runs its folds in parallel, one thread each, from PARALLEL_FOLDS_MIN_ROWS
#: to PARALLEL_FOLDS_MAX_ROWS training points; one fit at a time with every thread otherwise (below,
#: the fits are so short that their Python work, under the GIL, dominates: 569 rows, 2 threads
#: 0.50 s against 0.42 s; 500 synthetic rows 0.37 against 0.33 s, 1,000 rows 0.52 against 0.58 s).
PARALLEL_FOLDS_MIN_ROWS = 1_000
PARALLEL_FOLDS_MAX_ROWS = 50_000


def _walk_groups(candidates, param="C"):
    """Candidates grouped by everything but ``param`` (the kernel-parameter groups), each group
    walked along ``param`` in a serpentine (ascending, then descending, ...), so consecutive fits
    are grid neighbours."""
    groups = {}
    for cand in candidates:
        rest = _candidate_key({k: v for k, v in cand.items() if k != param})
        groups.setdefault(rest, []).append(cand)
    return [sorted(groups[key], key=lambda c: c.get(param, 0.0), reverse=bool(g % 2))
            for g, key in enumerate(sorted(groups))]


def _walk_order(candidates, param="C"):
    """The candidates in walk order: the groups of ``_walk_groups`` one after the other."""
    return [cand for group in _walk_groups(candidates, param) for cand in group]


def _on_dask():
    """True when the caller runs joblib on a Dask cluster (``joblib.parallel_config(backend='dask')``)."""
    return type(get_active_backend()[0]).__name__ == "DaskDistributedBackend"


def _walk_fold(estimator, X, y, train, group, fit_params, seconds):
    """One task of a search on a cluster: the fits of one group of candidates on one fold, each
    warm-started from the previous one. Returns [(prefit_key, fitted state)] in walk order."""
    X_train, y_train = _safe_split(estimator, X, y, train)
    fit_params = _check_method_params(X, params=fit_params, indices=train)
    out = []
    store = PathStore(None if seconds is None else time.perf_counter() + seconds)
    rows = SearchRows(store, len(train))
    for params in group:
        model = clone(estimator).set_params(**params)
        model.fit(X_train, y_train, **fit_params, search_rows=rows)
        out.append((prefit_key(model, X_train, y_train, fit_params.get("sample_weight")), model.__getstate__()))
    store.clear()
    return out


def _walk_path_group(estimator, X, y, group, sample_weight, X_test, y_test, scoring, return_models):
    """One group of an ``svm_path`` (its fits at fixed kernel parameters, walked along C)."""
    scorer = check_scoring(estimator, scoring=scoring) if X_test is not None else None
    path = []
    store = PathStore()
    rows = SearchRows(store, _num_samples(X))
    for params in group:
        model = clone(estimator).set_params(**params)
        t0 = time.perf_counter()
        model.fit(X, y, sample_weight=sample_weight, search_rows=rows)
        entry = {"params": params, "fit_time": time.perf_counter() - t0,
                 "n_iter": int(np.sum(model.n_iter_)), "dual_objective": model.dual_objective_.copy(),
                 "n_support": int(len(model.support_)),
                 "warm_started": all(s["warm_started"] for s in model.solver_stats_)}
        if scorer is not None:
            entry["score"] = scorer(model, X_test, y_test)
        if return_models:
            entry["estimator"] = model
        path.append(entry)
    store.clear()
    return path


def _candidate_key(cand):
    return tuple(sorted((k, repr(v)) for k, v in cand.items()))


def _check_estimator(estimator):
    if not isinstance(estimator, (SVC, SVR)):
        name = type(estimator).__name__
        why = ""
        if not getattr(estimator, "_warm_starts", True):  # NuSVC, NuSVR, OneClassSVM
            why = (f" ({name} takes no warm start: its start fixes the sums of the dual variables that the solve "
                   "keeps, so another nu's solution is infeasible; search nu with PathSearchCV, which fits it cold "
                   "and shares the kernel rows)")
        raise ValueError(f"warm-started paths need a sparsekernel SVC or SVR, got {name}{why}")


def _path_target(estimator, param_grid):
    """(the sparsekernel estimator a search walks, the prefix of its parameters in the grid): the
    estimator itself ("") or a Pipeline's last step ("name__"); (None, None) when the search cannot
    help and fits cold as GridSearchCV (another estimator, or a grid that replaces the last step)."""
    kinds = (_BaseSVC, _BaseSVR, OneClassSVM, _BaseKLR)
    if isinstance(estimator, kinds):
        return estimator, ""
    if isinstance(estimator, Pipeline) and estimator.steps and isinstance(estimator.steps[-1][1], kinds):
        name = estimator.steps[-1][0]
        grids = param_grid if isinstance(param_grid, list) else [param_grid]
        if any(key in (name, "steps") for g in grids for key in g):
            return None, None
        return estimator.steps[-1][1], name + "__"
    return None, None


def _walked_param(estimator, param_grid, prefix=""):
    """The grid axis walked with warm starts: C, or for S-KLR lam when the grid has several (at
    fixed C the box stays, so lam's warm start is exact and needs no kernel evaluation); for the nu
    formulations (NuSVC, NuSVR, OneClassSVM), which start every fit cold, nu when the grid has
    several: the fits of one group share the kernel parameters, so they read the same sessions."""
    grids = param_grid if isinstance(param_grid, list) else [param_grid]

    def several(name):
        return any(len(np.atleast_1d(g.get(prefix + name, []))) > 1 for g in grids)

    if isinstance(estimator, _BaseKLR) and several("lam"):
        return prefix + "lam"
    if not getattr(estimator, "_warm_starts", True) and several("nu"):
        return prefix + "nu"
    return prefix + "C"


def svm_path(estimator, X, y, *, Cs, gammas=None, epsilons=None, sample_weight=None, X_test=None, y_test=None,
             scoring=None, return_models=True):
    """Fit ``estimator`` (a sparsekernel SVC or SVR) on every (gamma, epsilon, C) of a grid, each fit
    warm-started from the previous one.

    The grid is walked gamma by gamma (and epsilon by epsilon for SVR) and, inside, along C in a
    serpentine order; fits with the same kernel parameters share one kernel row cache of
    ``estimator.cache_size`` MB. Every fit reaches the same solution as a cold fit to the
    estimator's ``tol``.

    On a cluster (``with joblib.parallel_config(backend="dask")``), every group of fits with the
    same kernel parameters is one task, walked along C with warm starts inside it (the first fit of
    a group starts cold instead of from the previous group's solution: the same solutions to
    ``tol``). The path comes back in the same order.

    Parameters
    ----------
    estimator : SVC or SVR
        Template; it is cloned, never modified.
    X, y : training data.
    Cs : sequence of float
    gammas : sequence of float or None
        None keeps the estimator's gamma.
    epsilons : sequence of float or None
        SVR only; None keeps the estimator's epsilon.
    sample_weight : array-like or None
    X_test, y_test : optional held-out data scored with ``scoring`` (the estimator's ``score`` when
        None).
    return_models : bool, default=True
        Keep the fitted models in the result (they hold their support vectors).

    Returns
    -------
    path : list of dict, in the order walked
        ``params`` (the grid point), ``fit_time``, ``n_iter``, ``dual_objective``, ``n_support``,
        ``warm_started``, and ``estimator`` (when return_models) and ``score`` (with X_test).
    """
    _check_estimator(estimator)
    Cs = [float(c) for c in np.atleast_1d(Cs)]
    if not Cs:
        raise ValueError("Cs must not be empty")
    grid = {"C": Cs}
    if gammas is not None:
        grid["gamma"] = [float(g) for g in np.atleast_1d(gammas)]
    if epsilons is not None:
        if "epsilon" not in estimator.get_params():
            raise ValueError("epsilons is only meaningful for SVR")
        grid["epsilon"] = [float(e) for e in np.atleast_1d(epsilons)]
    if X_test is not None:
        check_scoring(estimator, scoring=scoring)  # a bad scoring fails here, not inside a task
    args = (sample_weight, X_test, y_test, scoring, return_models)
    if _on_dask():
        groups = _walk_groups(list(ParameterGrid(grid)))
        parts = Parallel(n_jobs=-1)(delayed(_walk_path_group)(estimator, X, y, g, *args) for g in groups)
        return [entry for part in parts for entry in part]
    return _walk_path_group(estimator, X, y, _walk_order(list(ParameterGrid(grid))), *args)


def sklr_path(X, y, *, lams, C=1.0, estimator=None, sample_weight=None, X_test=None, y_test=None, n_bins=15,
              return_models=False):
    """Sparse KLR along lam at fixed C, every fit warm-started from the previous one: the accuracy /
    sparsity / calibration frontier of S-KLR (the paper's Fig. 7).

    lam is walked in ascending order. At fixed C the box [bound, C_i - bound] does not change, so
    each solve starts from the previous lam's dual solution with its gradient shifted (no kernel
    evaluation) and reads the kernel rows through the same engine session (row cache); every fit
    reaches the solution of a cold fit to the estimator's ``tol``. The fits take the exact SMO route
    whatever the estimator's ``solver``. S-KLR's Proposition 1 bounds where a larger lam can still
    buy sparsity (``klr_lambda_bound``); the kept fraction need not fall strictly along the path.

    Parameters
    ----------
    X, y : training data (dense or CSR; a kernel matrix for kernel='precomputed').
    lams : sequence of float
        The lam values (>= 0); walked in ascending order.
    C : float, default=1.0
        Weight of the logistic loss, fixed along the path (overrides the estimator's C).
    estimator : SparseKernelLogisticRegression or None
        Template for every other parameter (kernel, gamma, tol, bound, class_weight, ...); cloned,
        never modified. None: SparseKernelLogisticRegression().
    sample_weight : array-like of shape (n_samples,) or None
    X_test, y_test : optional held-out data for accuracy, log-loss and ECE.
    n_bins : int, default=15
        Bins of the expected calibration error (``sparsekernel.metrics.expected_calibration_error``).
    return_models : bool, default=False
        Keep the fitted models in the result.

    Returns
    -------
    path : list of dict, lam ascending
        ``lam``, ``kept`` (fraction of the training points in the model), ``n_expansion``,
        ``n_iter`` (SMO steps, summed over the binary problems), ``dual_objective`` (per problem),
        ``objective`` (its sum), ``temperature`` (of ``predict_proba``), ``fit_time``,
        ``warm_started``; with test data ``accuracy``, ``log_loss`` and ``ece``; ``estimator`` when
        ``return_models``.
    """
    if estimator is None:
        estimator = SparseKernelLogisticRegression()
    if not isinstance(estimator, SparseKernelLogisticRegression):
        raise ValueError(f"sklr_path needs a SparseKernelLogisticRegression, got {type(estimator).__name__}")
    lams = np.atleast_1d(np.asarray(lams, dtype=np.float64))
    if lams.size == 0:
        raise ValueError("lams must not be empty")
    if not np.all(np.isfinite(lams)) or np.any(lams < 0):
        raise ValueError(f"every lam must be a finite number >= 0, got {lams.tolist()}")
    check_positive("C", C)
    if (X_test is None) != (y_test is None):
        raise ValueError("give both X_test and y_test, or neither")
    template = clone(estimator).set_params(C=float(C))
    path = []
    for model, warm in lam_path_fits(template, X, y, sorted(lams.tolist()), sample_weight=sample_weight):
        obj = np.atleast_1d(model.dual_objective_).copy()
        entry = {"lam": model.lam_, "kept": model.kept_fraction_, "n_expansion": int(model.n_expansion_),
                 "n_iter": int(np.sum(model.n_iter_)), "dual_objective": obj, "objective": float(obj.sum()),
                 "temperature": model.temperature_, "fit_time": model.fit_time_, "warm_started": warm}
        if X_test is not None:
            P = model.predict_proba(X_test)
            entry["accuracy"] = float(np.mean(model.classes_[np.argmax(P, axis=1)] == np.asarray(y_test)))
            entry["log_loss"] = float(log_loss(y_test, P, labels=model.classes_))
            entry["ece"] = expected_calibration_error(y_test, P, classes=model.classes_, n_bins=n_bins)
        if return_models:
            entry["estimator"] = model
        path.append(entry)
    return path


class PathSearchCV(BaseSearchCV):
    """Exhaustive search over a parameter grid with cross-validation that reuses its work: a drop-in
    for :class:`sklearn.model_selection.GridSearchCV`.

    Any estimator can be searched. With a sparsekernel SVC, SVR, NuSVC, NuSVR, OneClassSVM,
    KernelLogisticRegression or SparseKernelLogisticRegression, bare or as the last step of a Pipeline (e.g.
    ``make_pipeline(StandardScaler(), SVC())`` with a grid over ``svc__C``, ``svc__gamma``), the
    search walks the grid: on every fold the candidates are grouped by their other parameters and
    each group is walked along C (along lam for S-KLR with several lam) in a serpentine order, every
    fit starting from the same fold's previous solution (``sparsekernel._warm.warm_point``: exact for
    a shrinking C and for S-KLR's lam at fixed C; KLR along C starts cold, which measured fewer SMO
    steps) in the previous fit's engine session (its row cache). NuSVC, NuSVR and OneClassSVM are
    walked along nu (when the grid has several) and every fit starts cold (from LIBSVM's start: a
    previous nu's solution is infeasible for the sum constraint e'a = nu l), reading the kernel rows
    through the same sessions and shared rows. With any other estimator, or a
    grid that replaces the Pipeline's last step, the fits are GridSearchCV's, cold. Either way the interface and the results (``cv_results_``,
    ``best_params_``, ``best_estimator_``, ``error_score`` and FitFailedWarning, multimetric scoring,
    ``return_train_score``, callbacks) are GridSearchCV's; ``cv_results_`` lists the candidates in
    ParameterGrid order, so ties between best candidates are broken the same way, and every fit
    reaches the solution of GridSearchCV's cold fit to the estimator's ``tol``.

    The search hands its state to its own fits only, as the fit parameter ``search_rows``
    (``sparsekernel._warm.SearchRows``, which scikit-learn's search slices per fold like any fit
    parameter): a fit elsewhere in the process, in another thread, sees nothing of it. With
    scikit-learn's metadata routing enabled (``sklearn.set_config(enable_metadata_routing=True)``)
    the fits are GridSearchCV's.

    Shared kernel rows (a bare estimator): K(x_i, x_j) depends on neither the fold nor C, so the
    search keeps, per kernel setting (gamma, ...), one store of kernel rows over its whole training
    set; every fold's solver reads the rows of its points through an index map, so a row computed
    for one fold or one C serves every other fit of that kernel setting (``shared_kernel_evals_``
    counts what the search computed); each fit is scored on its held-out rows from the same rows
    (``sparsekernel._warm.HeldOutScoring``). A Pipeline's last step sees each fold's transformed data
    (after a per-fold scaler the folds' kernels differ): there each fold keeps its own store of
    kernel rows over its transformed X, per kernel setting, which all the fold's fits read; its
    earlier steps are fitted once per fold and setting of their parameters (the Pipeline's
    ``memory`` is the search's per-fold store, ``sparsekernel._warm.FoldSteps``, for the
    cross-validated fits; the refit and ``best_estimator_`` keep the user's). Fits of
    the KLR estimators that take the compact route (``solver='nystrom'``, or 'auto' beyond 8,000
    points) are cold.

    Memory: every fold keeps the engine sessions of its problems within the estimator's own
    ``cache_size`` (what one of GridSearchCV's fits holds); the shared rows hold all N^2 float32
    kernel values of the training set when they fit a quarter of the memory available at the start
    of the search, else that quarter (a Pipeline: each of the k folds' stores all of the fold's
    float32 kernel values, when the k fit that quarter, else a k-th of it). The refit of the best candidate runs after both are freed, as a
    plain fit.

    Threads: with ``n_jobs=None`` the search decides: from PARALLEL_FOLDS_MIN_ROWS (1,000) to
    PARALLEL_FOLDS_MAX_ROWS (50,000) training points it runs as many fits at once as the process has
    threads, each on one thread (an SMO step's O(N) passes do not split well across threads, whole
    fits do; BLAS runs on one thread meanwhile); otherwise one fit at a time with all threads. With ``n_jobs`` given, that many fits at once share the threads. Never both at once.
    The fits run in threads (the solves release the GIL), so the warm starts and shared rows stay in
    one process.

    Parameters
    ----------
    estimator, param_grid, scoring, refit, cv, verbose, pre_dispatch, error_score, return_train_score :
        As :class:`sklearn.model_selection.GridSearchCV`.
    n_jobs : int or None, default=None
        Fits at once (threads); None: the search's choice above.

    time_limit : float or None, default=None
        Seconds for the cross-validated fits of the whole search (a walked search only): every fit
        stops at the deadline (as with SVC's own ``time_limit``: its current iterate,
        ``converged_ = False``, one ConvergenceWarning), so the search always ends; the refit of the
        best candidate is not bounded.

    On a cluster: inside ``with joblib.parallel_config(backend="dask"):`` (a ``distributed``
    Client running), the cross-validated fits of a bare sparsekernel estimator run on the cluster's
    workers as one task per fold x group of candidates with the same kernel parameters, walked along
    C (or lam) with warm starts inside the task; the client then scores them on the test folds in
    threads and refits the best candidate, as without a cluster (``cluster_tasks_`` counts the
    tasks). The kernel rows shared between folds and the warm start from one kernel group to the
    next stay within a task's process: every fit still reaches the solution of a cold fit to
    ``tol``. X must be a numpy array or a scipy.sparse matrix, and ``cv`` must give the same splits
    when called twice. Other estimators and Pipelines are fitted as GridSearchCV fits them there.

    ``set_callbacks`` (scikit-learn >= 1.9) works as for GridSearchCV: one sub-task per candidate
    and split; an auto-propagated callback such as ``ProgressBar`` also shows each fit's binary
    problems.

    Attributes
    ----------
    Those of GridSearchCV, and after a walked search:

    shared_kernel_evals_ : int
        Kernel values computed by the shared row stores of the cross-validated fits.
    shared_cache_peak_bytes_ : int
        The most memory one shared row store held.
    cluster_tasks_ : int
        Tasks the cross-validated fits ran as on a Dask cluster (0 without one).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekernel import SVC
    >>> from sparsekernel.model_selection import PathSearchCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> search = PathSearchCV(make_pipeline(StandardScaler(), SVC()),
    ...                       {"svc__C": [0.1, 1, 10], "svc__gamma": ["scale", 0.01]}).fit(X, y)
    >>> sorted(search.best_params_)
    ['svc__C', 'svc__gamma']
    """

    _parameter_constraints = dict(BaseSearchCV._parameter_constraints)
    _parameter_constraints["param_grid"] = [dict, list]

    def __init__(self, estimator, param_grid, *, scoring=None, n_jobs=None, refit=True, cv=None, verbose=0,
                 pre_dispatch="2*n_jobs", error_score=np.nan, return_train_score=False, time_limit=None):
        super().__init__(estimator=estimator, scoring=scoring, n_jobs=n_jobs, refit=refit, cv=cv, verbose=verbose,
                         pre_dispatch=pre_dispatch, error_score=error_score, return_train_score=return_train_score)
        self.param_grid = param_grid
        self.time_limit = time_limit

    def _run_search(self, evaluate_candidates, callback_ctx=None):
        target, prefix = self._target
        param = _walked_param(target, self.param_grid, prefix) if target is not None else None
        candidates = list(ParameterGrid(self.param_grid))
        if param is not None:
            candidates = _walk_order(candidates, param)
        # fits at once, each on one thread: BLAS too (scoring's products), or its threads spin beside them
        with one_thread("blas") if self._store is not None and self._store.fit_threads == 1 else nullcontext():
            if callback_ctx is None:  # (scikit-learn < 1.9 has no callbacks)
                self._evaluate_walk(evaluate_candidates, candidates)
            elif not self._staged:  # scikit-learn's callbacks, as GridSearchCV: one sub-task per candidate and split
                search_ctx = callback_ctx.subcontext(task_name="search", max_subtasks=len(candidates) * self.n_splits_,
                                                     sequential_subtasks=False).call_on_fit_task_begin(estimator=self)
                self._evaluate_walk(lambda cands: evaluate_candidates(cands, callback_ctx=search_ctx), candidates)
                search_ctx.call_on_fit_task_end(estimator=self)
            else:  # a search in stages: one sub-task per stage, in it one per candidate and split
                search_ctx = callback_ctx.subcontext(task_name="search", max_subtasks=len(candidates),
                                                     sequential_subtasks=True).call_on_fit_task_begin(estimator=self)

                def evaluate_stage(cands):
                    stage = search_ctx.subcontext(task_name="stage", max_subtasks=len(cands) * self.n_splits_,
                                                  sequential_subtasks=False).call_on_fit_task_begin(estimator=self)
                    results = evaluate_candidates(cands, callback_ctx=stage)
                    stage.call_on_fit_task_end(estimator=self)
                    return results

                self._evaluate_walk(evaluate_stage, candidates)
                search_ctx.call_on_fit_task_end(estimator=self)
        if self._store is not None:
            # the refit that follows is a plain fit (not bounded, no folds' caches)
            self.shared_kernel_evals_, self.shared_cache_peak_bytes_ = self._store.finish_folds()

    _staged = False  # True: _evaluate_walk calls evaluate more than once

    def _evaluate_walk(self, evaluate, candidates):
        """Evaluate the candidates, given in walk order, with ``evaluate`` (BaseSearchCV's
        evaluate_candidates: each call fits its candidates on every fold and returns the results so
        far). All at once here; a search that stops early evaluates them in stages (``_staged``)."""
        evaluate(candidates)

    def _format_results(self, candidate_params, n_splits, out, more_results=None):
        # evaluated in walk order, reported in ParameterGrid order (GridSearchCV's), so that
        # cv_results_ and the choice among tied best candidates are GridSearchCV's
        position = {_candidate_key(c): k for k, c in enumerate(ParameterGrid(self.param_grid))}
        order = sorted(range(len(candidate_params)), key=lambda c: position.get(_candidate_key(candidate_params[c]), c))
        candidate_params = [candidate_params[c] for c in order]
        out = [out[c * n_splits + s] for c in order for s in range(n_splits)]
        if more_results:
            more_results = {k: [v[c] for c in order] for k, v in more_results.items()}
        return super()._format_results(candidate_params, n_splits, out, more_results)

    def _share_rows(self, store, X, target):
        """One kernel row store per kernel setting for all the folds, over the search's X as the
        estimator reads it (a bare estimator only: a Pipeline's last step sees transformed data)."""
        if callable(target.kernel) or target.kernel == "precomputed":
            return
        try:
            Xv = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32], order="C")
        except (TypeError, ValueError):  # left to the fits to report
            return
        if sp.issparse(Xv):
            Xv = canonical_csr(Xv)
        # read as a fit reads its X (a dense X of mostly zeros, or of one value per column, as CSR)
        store.share_rows(engine_storage(Xv, target.kernel, available_threads()), shared_rows_mb(Xv.shape[0]), points=Xv)

    def _cv_splits(self, X, y, params):
        """The number of folds the search's cv makes of (X, y) (0: unknown here; the search reports
        what is wrong with its cv)."""
        try:
            cv = check_cv(self.cv, y, classifier=is_classifier(self.estimator))
            return int(cv.get_n_splits(X, y, params.get("groups")))
        except (TypeError, ValueError):
            return 0

    def _thread_policy(self, n_samples):
        """(search jobs, threads per fit). n_jobs=None lets the search choose: folds in parallel with
        one thread each from PARALLEL_FOLDS_MIN_ROWS to PARALLEL_FOLDS_MAX_ROWS training points (an
        SMO step's O(N) passes do not split well across threads, whole fits do), one fit at a time
        with every thread otherwise.
        A given n_jobs runs that many fits at once, sharing the threads. Never both at once."""
        threads = available_threads()
        if self.n_jobs is None:
            jobs = threads if PARALLEL_FOLDS_MIN_ROWS <= n_samples <= PARALLEL_FOLDS_MAX_ROWS else 1
        else:
            jobs = max(1, min(effective_n_jobs(self.n_jobs), threads) if self.n_jobs < 0 else int(self.n_jobs))
        return jobs, (max(1, threads // jobs) if jobs > 1 else None)

    def _fit_on_cluster(self, X, y, params):
        """The cross-validated fits as tasks on the Dask cluster of the active joblib backend, one
        per fold x kernel-parameter group: {prefit_key: fitted state} for the scoring phase."""
        if not (isinstance(X, np.ndarray) or sp.issparse(X)):
            raise ValueError("PathSearchCV on a Dask cluster needs X as a numpy array or a scipy.sparse matrix (the "
                             f"fits made on the workers are matched to the folds by their data), got {type(X).__name__}")
        X_i, y_i = indexable(X, y)
        cv = check_cv(self.cv, y_i, classifier=is_classifier(self.estimator))
        folds = [train for train, _ in cv.split(X_i, y_i, params.get("groups"))]
        fit_params = {k: v for k, v in params.items() if k != "groups"}
        groups = _walk_groups(list(ParameterGrid(self.param_grid)), _walked_param(self.estimator, self.param_grid))
        seconds = None if self.time_limit is None else float(self.time_limit)
        tasks = [delayed(_walk_fold)(self.estimator, X, y, train, group, fit_params, seconds)
                 for group in groups for train in folds]
        self.cluster_tasks_ = len(tasks)
        return dict(entry for part in Parallel(n_jobs=-1)(tasks) for entry in part)

    def fit(self, X, y=None, **params):
        """Run the search; see :meth:`sklearn.model_selection.GridSearchCV.fit`."""
        if self.time_limit is not None:
            check_positive("time_limit", self.time_limit)
        target, prefix = _path_target(self.estimator, self.param_grid)
        if _routing_enabled() or (prefix and _on_dask()):
            # routed fit parameters must be requested; a cluster's tasks take bare estimators: GridSearchCV's fits
            target, prefix = None, None
        self._target = (target, prefix)
        self._store = None
        for name in ("cluster_tasks_", "shared_kernel_evals_", "shared_cache_peak_bytes_"):
            self.__dict__.pop(name, None)
        if target is None:  # GridSearchCV's fits, and its fitted attributes only
            return super().fit(X, y, **params)
        self.cluster_tasks_ = 0
        self.shared_kernel_evals_, self.shared_cache_peak_bytes_ = 0, 0
        store = PathStore(None if self.time_limit is None else time.perf_counter() + float(self.time_limit))
        n_splits = 0
        if _on_dask():  # the fits on the cluster's workers; scored (and the refit made) here
            store.prefitted = self._fit_on_cluster(X, y, params)
        elif not prefix:
            self._share_rows(store, X, target)
        else:
            n_splits = self._cv_splits(X, y, params)
            if n_splits and not callable(target.kernel) and target.kernel != "precomputed":
                # a Pipeline's last step sees each fold's transformed X: kernel rows shared by the fold's fits
                store.share_fold_rows(fold_rows_mb(_num_samples(X), n_splits), n_splits)
        jobs, store.fit_threads = self._thread_policy(_num_samples(X))
        rows = SearchRows(store, _num_samples(X), raw=not prefix)
        params = {**params, prefix + "search_rows": rows}
        estimator = self.estimator
        first = self._fold_steps_first(store, n_splits) if prefix else None
        if first is not None:  # the Pipeline's earlier steps fitted once per fold (FoldSteps)
            params[first + "__search_rows"] = rows
            self.estimator = clone(estimator).set_params(memory=FoldSteps(store))
        self._store = store
        try:
            with parallel_config(backend="threading", n_jobs=jobs if self.n_jobs is None else None):
                super().fit(X, y, **params)
        except KeyboardInterrupt:
            # Ctrl-C reaches this thread only: the fits running in the search's threads are stopped
            # too (at their next poll) and waited for, not left running into the interpreter's exit
            _core.stop_all_solves(10.0)
            raise
        finally:
            store.clear()
            store.open = False
            self._store = None
            self.estimator = estimator
        if first is not None and hasattr(self, "best_estimator_"):
            self.best_estimator_.set_params(memory=clone(estimator.memory, safe=False))
        return self

    def _fold_steps_first(self, store, n_splits):
        """The name of the first fitted earlier step of the searched Pipeline, when its earlier steps
        can be fitted once per fold and kept in ``store`` (:class:`sparsekernel._warm.FoldSteps`): the
        grid sets parameters of the steps, never a step itself nor the Pipeline's own; None otherwise."""
        steps = self.estimator.steps
        grids = self.param_grid if isinstance(self.param_grid, list) else [self.param_grid]
        names = {name for name, _ in steps} | {"steps", "memory", "verbose", "transform_input"}
        if not n_splits or any(key in names for g in grids for key in g):
            return None
        fitted = [name for name, step in steps[:-1] if step is not None and not isinstance(step, str)]
        if not fitted:
            return None
        # every fold's output of every step for every setting of the earlier steps' parameters in the grid
        last = steps[-1][0] + "__"
        settings = sum(int(np.prod([len(v) for k, v in g.items() if not k.startswith(last)])) for g in grids)
        store.keep_fold_steps(n_splits * len(fitted) * max(1, settings))
        return fitted[0]
