"""Kernel logistic regression with C chosen by cross-validation, as scikit-learn's
LogisticRegressionCV: ``KernelLogisticRegressionCV`` and ``SparseKernelLogisticRegressionCV``.

On small data KernelLogisticRegressionCV scores each C by approximate leave-one-out instead of
folds (``_ApproxLOOPath``: one fit per C, no refit). Otherwise, on the exact SMO route both walk
the grid of C (and lam) with :class:`sparsekernel.model_selection.PathSearchCV`: on every fold the fits follow C warm-started,
and the folds read one store of kernel rows over the training set (the kernel, gamma='scale'
included, is resolved once on the whole training set, so every fold and the final model use the
same one). On the compact route (KLR beyond 4,000 points; S-KLR at its defaults) one basis and
one kernel block serve every fold and C (``_SharedBasisPath``). The sparse estimator picks, within
its size budget ``max_kept``, among the candidates whose cross-validated score is within
``size_tolerance`` of the best, the one that keeps the fewest points.
"""

from __future__ import annotations

import copy
import numbers
from numbers import Integral
import time
import warnings

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import check_cv, ParameterGrid
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data
from scipy.linalg import lapack
from scipy.stats import rankdata
from sklearn.metrics import check_scoring, get_scorer, get_scorer_names
from sklearn.utils._param_validation import RealNotInt, StrOptions

from ._base import (N_JOBS_CONSTRAINT, NON_NEGATIVE, TIME_LIMIT_CONSTRAINT, CallbackSupportMixin, FitMonitor,
                    NumInterval, callable_gram, check_positive, class_labels, n_threads, one_thread, per_sample_bounds,
                    resolve_gamma, validate_constrained_params, with_callbacks)
from ._compact import CompactProblem, DesignMatrix, _grown_gram, independent_columns, newton_columns, start_bias
from ._warm import PathStore, SearchRows
from .klr import KernelLogisticRegression, SparseKernelLogisticRegression, _log_proba, auto_lam
from .model_selection import PathSearchCV, _candidate_key

#: Cs=n (an int): n values of C log-spaced over [DEFAULT_C_RANGE[0], DEFAULT_C_RANGE[1]]. After
#: StandardScaler with gamma='scale' the best C of the 12 S-KLR sets, digits, magic, a9a and w8a lies
#: in 0.1 .. 10^3 (benchmarks/results/defaults.md).
DEFAULT_C_RANGE = (1e-1, 1e3)


def c_grid(Cs):
    """The C values of ``Cs``: an int n gives n values log-spaced over DEFAULT_C_RANGE; a sequence is
    taken as given (every value a finite number > 0)."""
    if isinstance(Cs, numbers.Integral) and not isinstance(Cs, bool):
        if Cs < 1:
            raise ValueError(f"Cs must be a positive integer or a list of values of C, got {Cs!r}")
        lo, hi = np.log10(DEFAULT_C_RANGE)
        return np.logspace(lo, hi, int(Cs)) if Cs > 1 else np.array([10 ** ((lo + hi) / 2)])
    try:
        values = np.asarray(Cs, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"Cs must be a positive integer or a list of values of C, got {Cs!r}") from None
    if values.size == 0:
        raise ValueError("Cs must hold at least one value of C")
    for c in values:
        check_positive("each value of Cs", float(c))
    return values


def lam_values(lams):
    """The values of lam of a list ``lams`` (every value a finite number >= 0)."""
    values = [float(v) for v in np.ravel(np.asarray(lams, dtype=float))]
    if not values:
        raise ValueError("lams must hold at least one value of lam")
    for lam in values:
        check_positive("each value of lams", lam, allow_zero=True)
    return values


class _NegLogLoss:
    """scoring='neg_log_loss' without scikit-learn's per-call validation of the targets (a few ms
    per fold and candidate, a third of a small search): -mean log P(y | x) with the probabilities
    clipped to [eps, 1 - eps], as sklearn.metrics.log_loss. Labels the fold's model has not seen
    are left to scikit-learn's scorer."""

    def __call__(self, estimator, X, y):
        classes = estimator.classes_
        y = np.asarray(y)
        at = np.searchsorted(classes, y)
        if np.any(at >= len(classes)) or np.any(classes[np.minimum(at, len(classes) - 1)] != y):
            return get_scorer("neg_log_loss")(estimator, X, y)
        proba = estimator.predict_proba(X)
        eps = np.finfo(proba.dtype).eps
        p = np.clip(proba[np.arange(len(y)), at], eps, 1 - eps)
        return -float(np.mean(-np.log(p)))


class _ScoreAndSize:
    """The search's scoring of S-KLR candidates: the score, and the share of its training points the
    fitted model keeps (its size)."""

    def __init__(self, scorer):
        self.scorer = scorer

    def __call__(self, estimator, X, y):
        return {"score": self.scorer(estimator, X, y), "kept": float(estimator.kept_fraction_)}


class _StoppedPathSearchCV(PathSearchCV):
    """PathSearchCV along an ascending grid of C that stops once ``stop_after`` values of C have
    followed the best mean cross-validated score so far (every fold fitted at a C before the
    decision). ``stop_after`` is set by KernelLogisticRegressionCV (its ``patience``)."""

    _staged = True
    stop_after = 1

    def _evaluate_walk(self, evaluate, candidates):
        # one group, C ascending (_walk_groups). The lower half of the grid (its fits the cheapest)
        # as one stage, then one C per stage: a stage's k folds on t threads leave threads idle at
        # its end (5 folds on 2 threads: 3 rounds of fits for 2.5 of work)
        first = max(self.stop_after + 1, (len(candidates) + 1) // 2)
        stages = [candidates[:first]] + [[cand] for cand in candidates[first:]]
        for stage in stages:
            results = evaluate(stage)  # all the results so far, in grid order
            scores = [float(results["mean_test_score"][results["params"].index(c)])
                      for c in candidates[:candidates.index(stage[-1]) + 1]]
            # (a NaN score, error_score=nan, counts as no improvement)
            best = int(np.nanargmax(scores)) if not np.all(np.isnan(scores)) else 0
            if len(scores) - 1 - best >= self.stop_after:
                return


class _BaseKLRCV(CallbackSupportMixin, ClassifierMixin, BaseEstimator):
    """Shared machinery: the search along the grid, the choice and the delegation to ``estimator_``."""

    _model = None  # the estimator searched

    # the parameters of the model searched that the CV estimator passes on as they are
    _MODEL_PARAMS = ("kernel", "degree", "gamma", "coef0", "bound", "tol", "shrinking", "cache_size",
                     "class_weight", "max_iter", "solver", "n_components", "basis", "random_state")
    # the search's own parameters, and the model's as the model checks them
    _parameter_constraints: dict = {
        "Cs": [NumInterval(Integral, 1, None, closed="left"), "array-like"],
        "cv": ["cv_object"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "refit": ["boolean"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
        "time_limit": TIME_LIMIT_CONSTRAINT,
        **{name: KernelLogisticRegression._parameter_constraints[name] for name in _MODEL_PARAMS},
    }

    def _patience(self):
        """How many values of C past the best the walk fits before it stops (None: every C)."""
        return None

    def _check_cv_params(self):
        """Every parameter against its constraints, the rules over several parameters, then the
        grid of C (its values checked)."""
        validate_constrained_params(self)
        self._check_cross_params()
        return c_grid(self.Cs)

    def _check_cross_params(self):
        """The rules over several parameters: approximate leave-one-out scores the log-loss only."""
        if isinstance(self.cv, str) and self.scoring != "neg_log_loss":
            raise ValueError(f"cv='alo' scores by the log-loss only; got scoring={self.scoring!r} "
                             "(give cv=None or a number of folds for another score)")

    def _grid(self, Cs):
        return {"C": list(Cs)}

    def _scoring(self):
        return _NegLogLoss() if self.scoring == "neg_log_loss" else self.scoring

    def _choose(self, results):
        """The index of the chosen candidate in the search's cv_results_."""
        return int(np.argmin(results["rank_test_score"]))

    def _fit_budget(self, X, n_splits=None):
        """The stated memory budget of a fit on X (sparsekernel._memory.fit_budget): that of a search
        of its model over its folds (the refit of the chosen C is not counted, as for PathSearchCV)."""
        model = self._model(**{name: getattr(self, name) for name in self._MODEL_PARAMS})
        folds = getattr(self, "n_splits_", None) if n_splits is None else n_splits
        return model._fit_budget(X, n_splits=folds if folds and folds > 1 else None)

    @with_callbacks
    def fit(self, X, y, sample_weight=None):
        """Cross-validate the grid of C on (X, y), then (``refit=True``) fit the chosen candidate on
        all of X.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None
            Weights of the fits (each fold's fits get their rows' weights); the scores are unweighted.

        Returns
        -------
        self
        """
        Cs = self._check_cv_params()
        patience = self._patience()
        params = {name: getattr(self, name) for name in self._MODEL_PARAMS}
        model = self._model(**params)
        model._check_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32])
        check_classification_targets(y)
        if isinstance(self.gamma, str) and self.kernel != "precomputed" and not callable(self.kernel):
            # once for every fold and the final model: the folds then share their kernel rows
            model.set_params(gamma=resolve_gamma(self.gamma, X))
        shared = self._shares_a_basis(model, X, sample_weight)
        alo = self._uses_alo(model, X, y, sample_weight, shared)
        # progress (verbose, scikit-learn's callbacks) and time_limit: on the shared basis one task
        # per value of C and one for the refit, by approximate leave-one-out one per value of C; the
        # general search reports as PathSearchCV does
        monitor = FitMonitor(self, len(Cs) + 1 if shared else (len(Cs) if alo else 1), tol=float(self.tol), X=X,
                             y=y, metric="decrement")
        try:
            if alo:
                search = _ApproxLOOPath(self, model, Cs, patience, monitor).fit(X, y, sample_weight)
            elif shared:
                # (on one basis every candidate keeps the same points: S-KLR-CV's walk stops as KLR-CV's)
                walk = patience if patience is not None or self._model is KernelLogisticRegression else 1
                search = _SharedBasisPath(self, model, Cs, walk, monitor).fit(X, y, sample_weight)
            else:
                stopped = patience is not None and len(Cs) > patience + 1
                search = (_StoppedPathSearchCV if stopped else PathSearchCV)(
                    model, self._grid(Cs), scoring=self._scoring(), cv=self.cv, n_jobs=self.n_jobs,
                    refit=self._choose if self.refit else False, error_score="raise", verbose=self.verbose,
                    time_limit=self.time_limit)
                if stopped:
                    search.stop_after = patience
                fit_params = {} if sample_weight is None else {"sample_weight": sample_weight}
                if monitor.ctx is not None:  # the search's task tree goes under a leaf of this fit's
                    task = monitor.ctx.subcontext(task_name="search")
                    task.call_on_fit_task_begin(estimator=self)
                    with task.propagate_callback_context(search):  # (auto-propagated callbacks: ProgressBar)
                        search.fit(X, y, **fit_params)
                    task.call_on_fit_task_end(estimator=self)
                else:
                    search.fit(X, y, **fit_params)
        finally:
            monitor.close()
        results = search.cv_results_
        best = self._choose(results)
        self.cv_results_ = results
        self.best_index_ = best
        self.Cs_ = np.asarray(Cs, dtype=float)
        self.C_ = float(results["params"][best]["C"])
        self.n_splits_ = search.n_splits_
        self.scores_ = self._scores_by_c(results, "score", Cs)
        self.gamma_ = model.gamma if not isinstance(model.gamma, str) else None
        self.classes_ = unique_labels(y)
        if self.refit:
            self.estimator_ = search.best_estimator_
            self.n_iter_ = self.estimator_.n_iter_
        return self

    def _uses_alo(self, model, X, y, sample_weight, shared):
        """Whether C is chosen by approximate leave-one-out (_ApproxLOOPath): cv='alo', or cv=None
        for KernelLogisticRegressionCV scored by the log-loss where the estimator takes the exact
        route and the factorisations cost at most ALO_MAX_WORK (a kernel positive semi-definite by
        construction)."""
        if isinstance(self.cv, str):  # 'alo' (KernelLogisticRegressionCV's constraints; scoring: _check_cross_params)
            return True
        if self.cv is not None or self._model is not KernelLogisticRegression or self.scoring != "neg_log_loss":
            return False
        if shared or callable(self.kernel) or self.kernel not in ALO_KERNELS:
            return False
        n = X.shape[0] if sample_weight is None else int(np.count_nonzero(np.asarray(sample_weight) > 0))
        n_prob = 1 if len(np.unique(y)) <= 2 else len(np.unique(y))
        return n_prob * float(n) ** 3 <= ALO_MAX_WORK

    def _shares_a_basis(self, model, X, sample_weight):
        """Whether the search runs on the compact route with one basis for every fold and C
        (_SharedBasisPath): where the estimator itself would take the compact route on the
        training set, for a kernel given by name, without a lam grid."""
        if callable(self.kernel) or self.kernel == "precomputed" or model.refine_basis:
            return False
        if not isinstance(getattr(self, "lams", "auto"), str):
            return False
        if self._model is SparseKernelLogisticRegression:  # its size is the basis at every size
            return model.solver != "smo"
        n = X.shape[0] if sample_weight is None else int(np.count_nonzero(np.asarray(sample_weight) > 0))
        return model._route(n) == "nystrom"

    def _refit_basis_size(self, model, n, M):
        """The basis of the refit after a shared-basis search on a basis of M points: 2 M (at most
        REFIT_COMPONENTS) at n_components='auto', else M, within n and what cache_size holds."""
        M_cap, auto = model._n_components(n)
        return max(M, min(2 * M, REFIT_COMPONENTS, M_cap)) if auto else M

    def _shared_basis_size(self, model, n):
        """The basis of the shared-basis search for n weighted training rows: n_components when given,
        else CV_COMPONENTS (both within n and what cache_size holds)."""
        M, auto = model._n_components(n)
        return min(M, CV_COMPONENTS) if auto else M

    def _scores_by_c(self, results, metric, Cs):
        """The per-fold test scores of ``metric`` as (n_splits, n_candidates), the candidates in grid
        order (that of cv_results_ when every candidate was fitted); NaN for the candidates a stopped
        walk did not reach."""
        grid = [_candidate_key(c) for c in ParameterGrid(self._grid(Cs))]
        at = {key: k for k, key in enumerate(grid)}
        scores = np.full((self.n_splits_, len(grid)), np.nan)
        for c, params in enumerate(results["params"]):
            scores[:, at[_candidate_key(params)]] = [results[f"split{k}_test_{metric}"][c] for k in range(self.n_splits_)]
        return scores

    def _refitted(self):
        check_is_fitted(self, "cv_results_")
        if not self.refit:
            raise AttributeError(f"{type(self).__name__} was fitted with refit=False: it holds the cross-validation "
                                 "results only (C_, scores_), no model to predict with")
        return True

    def _expansion(self):
        """The expansion of the model chosen, refitted on all the data (none with refit=False)."""
        if not self.refit or not hasattr(self, "estimator_"):
            raise ValueError(f"{type(self).__name__} fitted with refit=False holds no model (the cross-validation "
                             "results only)")
        return self.estimator_._expansion()

    @available_if(lambda self: not hasattr(self, "cv_results_") or self.refit)
    def decision_function(self, X):
        """The chosen model's decision values (see the estimator searched).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray
        """
        self._refitted()
        return self.estimator_.decision_function(X)

    @available_if(lambda self: not hasattr(self, "cv_results_") or self.refit)
    def predict_proba(self, X):
        """Class probabilities of the chosen model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        self._refitted()
        return self.estimator_.predict_proba(X)

    @available_if(lambda self: not hasattr(self, "cv_results_") or self.refit)
    def predict_log_proba(self, X):
        """Log of the class probabilities of the chosen model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        self._refitted()
        return self.estimator_.predict_log_proba(X)

    def predict(self, X):
        """Class labels of the chosen model (the argmax of ``predict_proba``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        self._refitted()
        return self.estimator_.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = True
        return tags


_CV_PARAMS_DOC = """
    Parameters
    ----------
    Cs : int or array-like of float, default=6
        The values of C: an int n gives n values log-spaced from 0.1 to 1000 (``DEFAULT_C_RANGE``);
        a list is used as given.
    cv : int, cross-validation generator, iterable or 'alo', default=None
        As scikit-learn's, and 'alo': approximate leave-one-out (KernelLogisticRegressionCV, scored by
        the log-loss): one fit per value of C on all the data, each scored by the log-loss of its
        leave-one-out decision values estimated from one Newton step (Rad and Maleki 2020;
        :func:`sparsekernel.klr_cv.alo_decision`), O(N^3) per value of C and binary problem. None:
        for KernelLogisticRegressionCV 'alo' where that is cheap (the exact route, the log-loss, a
        kernel positive semi-definite by construction, and problems x N^3 <= ``ALO_MAX_WORK``,
        about 800 rows for two classes: 2.5-3.6x faster than 5 folds there), else 5-fold
        stratified; for SparseKernelLogisticRegressionCV 5-fold stratified.
    scoring : str or callable, default='neg_log_loss'
        The cross-validated score that chooses C (scikit-learn's scorer names).
    refit : bool, default=True
        Fit the chosen candidate on the whole training set (``estimator_``). With False the
        estimator holds the cross-validation results only and cannot predict.
    n_jobs : int or None, default=None
        Fits at once (threads); None lets the search decide (:class:`PathSearchCV`).
    verbose : int, default=0
        The search's verbosity.
    time_limit : float or None, default=None
        Seconds for the whole fit, search and refit: the search stops at the budget and keeps the
        candidates it scored, the refit returns its current iterate, with a ConvergenceWarning
        (as :class:`PathSearchCV`'s and the estimators' ``time_limit``). Progress goes to
        scikit-learn's callbacks (``set_callbacks``): on the shared-basis route one task per value
        of C and one for the refit.
    kernel, degree, gamma, coef0, bound, tol, shrinking, cache_size, class_weight, max_iter, solver, n_components, basis, random_state :
        As :class:`KernelLogisticRegression`. gamma='scale' (or 'auto') is resolved once on the whole
        training set and used by every fold and by the final model (``gamma_``).
"""

_CV_ATTRS_DOC = """
    Attributes
    ----------
    C_ : float
        The chosen C.
    Cs_ : ndarray
        The grid of C.
    scores_ : ndarray of shape (n_splits, n_candidates)
        The test score of every fold and candidate (candidates in ``cv_results_`` order); by
        approximate leave-one-out one row, its score.
    cv_results_ : dict
        The search's results (as GridSearchCV's).
    best_index_ : int
        The chosen candidate in ``cv_results_``.
    estimator_ : estimator
        The chosen candidate fitted on the whole training set (``refit=True``).
    n_iter_ : ndarray
        The iterations of ``estimator_``'s fit (``refit=True``).
    gamma_ : float or None
        The kernel's gamma as resolved (None for a callable or precomputed kernel).
    classes_ : ndarray
    n_splits_ : int
    n_features_in_ : int
"""


class KernelLogisticRegressionCV(_BaseKLRCV):
    __doc__ = """Kernel logistic regression with C chosen by cross-validation (default: the log-loss).

    The convention of scikit-learn's :class:`~sklearn.linear_model.LogisticRegressionCV`: ``Cs``,
    ``cv``, ``scoring``, ``refit``; ``C_``, ``Cs_``, ``scores_``. The grid is walked by
    :class:`sparsekernel.model_selection.PathSearchCV` (every fold's fits follow C warm-started on
    kernel rows shared by the folds), then the chosen C is fitted on all the data. Its
    ``predict_proba`` is the probability model a user wants by default: at the default C = 1 the
    plain estimator under-fits (digits: log-loss 0.40 against 0.09 for SVC(probability=True)); the
    cross-validated C gives 0.07.

    The walk goes up the grid of C, every fold fitted at one C before the next, and stops once the
    mean score has not improved for ``patience`` values of C: the fits at large C, the slowest (an SMO
    fit at C = 1000 takes 7x the steps of one at C = 1 on magic), are made only where the score is
    still improving. ``patience=None`` fits every C, as LogisticRegressionCV.
    """ + _CV_PARAMS_DOC.replace("""    refit : bool,""", """    patience : int or None, default=1
        Stop the walk up the grid of C after this many consecutive values whose mean cross-validated
        score is not better than the best so far; None fits every value (``scores_`` holds NaN for
        the values not fitted, and ``cv_results_`` lists the fitted ones).
    refit : bool,""", 1) + _CV_ATTRS_DOC + """
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekernel import KernelLogisticRegressionCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), KernelLogisticRegressionCV(Cs=4)).fit(X, y)
    >>> model[-1].C_ in model[-1].Cs_
    True
    >>> model.predict_proba(X[:2]).shape
    (2, 2)
    """

    _model = KernelLogisticRegression

    _parameter_constraints: dict = {
        **_BaseKLRCV._parameter_constraints,
        "cv": ["cv_object", StrOptions({"alo"})],  # approximate leave-one-out (_ApproxLOOPath)
        "patience": [None, NumInterval(Integral, 1, None, closed="left")],
    }

    def _patience(self):
        return None if self.patience is None else int(self.patience)

    def __init__(self, Cs=6, *, cv=None, scoring="neg_log_loss", patience=1, refit=True, n_jobs=None, verbose=0,
                 time_limit=None, kernel="rbf", degree=3, gamma="scale", coef0=0.0, bound="auto", tol=1e-3,
                 shrinking=True, cache_size=1000, class_weight=None, max_iter=-1, solver="auto", n_components="auto",
                 basis="uniform", random_state=None):
        self.Cs = Cs
        self.time_limit = time_limit
        self.cv = cv
        self.patience = patience
        self.scoring = scoring
        self.refit = refit
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.bound = bound
        self.tol = tol
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.solver = solver
        self.n_components = n_components
        self.basis = basis
        self.random_state = random_state


class SparseKernelLogisticRegressionCV(_BaseKLRCV):
    __doc__ = """Sparse kernel logistic regression with C (and lam) chosen by cross-validation, and the
    smallest model among the near-best.

    **Model size.** ``max_kept`` is the budget: the chosen model keeps at most that share (or
    number) of the training points, 30 % by default. Two ways to a small model:

    - by default (solver 'auto' or 'nystrom', lams='auto'): an expansion over a basis of at most
      ``max_kept`` of the training points (and at most ``n_components`` when given, 512 at
      'auto'), one basis shared by every fold and C as in :class:`KernelLogisticRegressionCV`'s
      compact route. The lam shift adds no sparsity to a fixed basis, so lam = 0 there; every
      candidate keeps the same points, so the walk up C stops as KLR-CV's (``patience`` 1).
      benchmarks/results/proba.md: the log-loss of KLR-CV's at 3-10 % of the points on the sets
      of 13,000-15,000 rows.
    - S-KLR's own sparsity (solver='smo', or a list of ``lams``): points leave the model as lam
      grows with C (see :func:`sparsekernel.klr.auto_lam`). The grid of C (lam='auto' at each C, or
      the grid ``lams``) is cross-validated on the exact route, recording each candidate's size
      (the share of the training points its fold models keep). Among the candidates within the
      budget whose mean score is within ``size_tolerance`` of their best (relative: score >= best
      - size_tolerance |best|), the one that keeps the fewest points (ties: the better score);
      with no candidate within the budget, the smallest one, with a warning.

    The paper chose C by cross-validation too.
    """ + _CV_PARAMS_DOC.replace("""    kernel, degree,""", """    lams : 'auto' or array-like of float, default='auto'
        The values of lam: 'auto' = lam='auto' at each C (see :class:`SparseKernelLogisticRegression`);
        a list makes the grid C x lams (walked along lam at each C).
    max_kept : float, int or None, default=0.3
        The size budget: the largest share (a float in (0, 1]) or number (an int) of the training
        points the chosen model may keep; None: no budget.
    size_tolerance : float, default=0.05
        How much worse (relative) than the best mean cross-validated score a smaller model may be:
        5 % by default (on breast_cancer and spambase held out, S-KLR at lam='auto' keeps 49 % and
        37 % of the points at 5 % and 10 % above KLR's best log-loss). 0 picks the best score.
    kernel, degree,""", 1).replace("""    Cs : int or array-like of float, default=6
        The values of C: an int n gives n values log-spaced from 0.1 to 1000 (``DEFAULT_C_RANGE``);""",
                                     """    Cs : int or array-like of float, default=6
        The values of C: an int n gives n values log-spaced from 0.1 to 1000 (``DEFAULT_C_RANGE``;
        S-KLR at C = 10^4 took minutes per fold on magic's 8,000 points);""", 1) + _CV_ATTRS_DOC.replace("""    gamma_ : float or None""",
                                                                              """    lam_ : float
        The chosen candidate's lam ('auto' resolved at C_).
    kept_ : ndarray of shape (n_splits, n_candidates)
        The share of their training points the fold models keep.
    gamma_ : float or None""", 1) + """
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekernel import SparseKernelLogisticRegressionCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), SparseKernelLogisticRegressionCV(Cs=4)).fit(X, y)
    >>> model[-1].estimator_.n_expansion_ < len(X)
    True
    """

    _model = SparseKernelLogisticRegression
    _parameter_constraints: dict = {
        **_BaseKLRCV._parameter_constraints,
        "lams": [StrOptions({"auto"}), "array-like"],
        # a share of the training points, or a number of them
        "max_kept": [None, NumInterval(RealNotInt, 0.0, 1.0, closed="right"), NumInterval(Integral, 1, None,
                                                                                            closed="left")],
        "size_tolerance": [NON_NEGATIVE],
    }

    def __init__(self, Cs=6, *, lams="auto", max_kept=0.3, size_tolerance=0.05, cv=None, scoring="neg_log_loss",
                 refit=True, n_jobs=None, verbose=0, time_limit=None, kernel="rbf", degree=3, gamma="scale",
                 coef0=0.0, bound="auto", tol=1e-3, shrinking=True, cache_size=1000, class_weight=None, max_iter=-1,
                 solver="auto", n_components="auto", basis="uniform", random_state=None):
        self.Cs = Cs
        self.time_limit = time_limit
        self.lams = lams
        self.max_kept = max_kept
        self.size_tolerance = size_tolerance
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.bound = bound
        self.tol = tol
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.solver = solver
        self.n_components = n_components
        self.basis = basis
        self.random_state = random_state

    def _check_cv_params(self):
        Cs = super()._check_cv_params()
        if not isinstance(self.lams, str):
            lam_values(self.lams)
        return Cs

    def _grid(self, Cs):
        lams = ["auto"] if isinstance(self.lams, str) else lam_values(self.lams)
        return {"C": list(Cs), "lam": lams}

    def _scoring(self):
        scorer = _NegLogLoss() if self.scoring == "neg_log_loss" else check_scoring(self._model(), scoring=self.scoring)
        return _ScoreAndSize(scorer)

    def _kept_budget(self, n):
        """max_kept as a share of n training points (1 for None)."""
        m = self.max_kept
        if m is None:
            return 1.0
        return min(1.0, float(m) / n) if isinstance(m, numbers.Integral) else float(m)

    def _refit_basis_size(self, model, n, M):
        """The basis of the refit after a shared-basis search on a basis of M points: 2 M (at most
        REFIT_COMPONENTS) at n_components='auto', else M, within n and what cache_size holds."""
        M_cap, auto = model._n_components(n)
        return max(M, min(2 * M, REFIT_COMPONENTS, M_cap)) if auto else M

    def _shared_basis_size(self, model, n):
        # the budget is the basis: at most max_kept of the points
        return max(1, min(super()._shared_basis_size(model, n), int(self._kept_budget(n) * n)))

    def _refit_basis_size(self, model, n, M):
        return max(M, min(super()._refit_basis_size(model, n, M), int(self._kept_budget(n) * n)))

    def _choose(self, results):
        score = np.asarray(results["mean_test_score"], dtype=float)
        kept = np.asarray(results["mean_test_kept"], dtype=float)
        within = np.flatnonzero(kept <= self._budget * (1 + 1e-12))
        if len(within) == 0:  # no candidate meets max_kept: the smallest model
            return int(np.lexsort((-score, kept))[0])
        best = np.nanmax(score[within])
        near = within[score[within] >= best - float(self.size_tolerance) * abs(best)]
        # the smallest model among the near-best within the budget; ties: the better score
        return int(near[np.lexsort((-score[near], kept[near]))[0]])

    def fit(self, X, y, sample_weight=None):
        n = _num_samples(X) if sample_weight is None else int(np.count_nonzero(np.asarray(sample_weight) > 0))
        self._check_cv_params()
        self._budget = self._kept_budget(max(1, n))
        super().fit(X, y, sample_weight)
        kept = float(self.cv_results_["mean_test_kept"][self.best_index_])
        if kept > self._budget * (1 + 1e-12):
            warnings.warn(f"no candidate model keeps at most max_kept={self.max_kept!r} of the training points; "
                          f"the smallest one keeps {kept:.1%} (give larger Cs, or lower n_components)", UserWarning)
        self.kept_ = self._scores_by_c(self.cv_results_, "kept", self.Cs_)
        lam = self.cv_results_["params"][self.best_index_]["lam"]
        if self.refit:  # the lam of the model chosen (0 on the shared-basis route)
            self.lam_ = float(self.estimator_.lam_)
        else:
            self.lam_ = auto_lam(self.C_, self.bound) if isinstance(lam, str) else float(lam)
        return self

    fit.__doc__ = _BaseKLRCV.fit.__doc__


#: The basis of the shared-basis search (_SharedBasisPath) at n_components='auto': this many uniform
#: training points (fewer when the training set or the memory budget is smaller).
CV_COMPONENTS = 512
#: The refit after a shared-basis search at n_components='auto': twice the search's basis, at most
#: this many points (benchmarks/results/proba.md: at 15,000 rows a 1,024-point model has 0.3-6 %
#: lower held-out log-loss than a 512-point one, in one more solve; the choice of C is made on 512).
REFIT_COMPONENTS = 1024
#: The fold solves of the shared-basis search stop at this times the estimator's tol (the refit at
#: tol): J to about 1e-5 relative moves a fold's held-out log-loss by less than the spread between
#: folds (benchmarks/results/proba.md).
FOLD_TOL_SCALE = 10.0


class _PathResults:
    """What the two path searches of this module (_SharedBasisPath, _ApproxLOOPath) share: their
    arguments, the walk's stop rule, a candidate's params, the mean of its scores, and cv_results_
    in a search's layout."""

    def __init__(self, owner, model, Cs, patience, monitor):
        self.owner, self.model, self.Cs, self.patience, self.monitor = owner, model, list(Cs), patience, monitor
        self._best, self._since_best = -np.inf, 0

    def _stops(self, score):
        """Whether the walk up C stops after a candidate of this (mean) score: ``patience`` values
        of C since the best one (the searches' rule, _StoppedPathSearchCV's)."""
        if score > self._best:
            self._best, self._since_best = score, 0
        else:
            self._since_best += 1
        return self.patience is not None and len(self.Cs) > self.patience + 1 and self._since_best >= self.patience

    def _params(self, C):
        return {"C": C, "lam": "auto"} if "lam" in self.owner._grid([1.0]) else {"C": C}

    @staticmethod
    def _mean(scores):
        vals = [s["score"] if isinstance(s, dict) else s for s in scores]
        return float(np.mean(vals))

    def _results(self, params, rows_scores):
        """cv_results_ as a search's: params, per-split and mean test values, the rank by score."""
        results = {"params": params}
        metrics = list(rows_scores[0][0]) if isinstance(rows_scores[0][0], dict) else None
        names = metrics or ["score"]
        for name in names:
            table = np.array([[s[name] if metrics else s for s in row] for row in rows_scores])  # (C, fold)
            for k in range(table.shape[1]):
                results[f"split{k}_test_{name}"] = table[:, k]
            results[f"mean_test_{name}"] = table.mean(axis=1)
            results[f"std_test_{name}"] = table.std(axis=1)
        results["rank_test_score"] = rankdata(-results["mean_test_score"], method="min").astype(np.int32)
        results["param_C"] = np.array([p["C"] for p in params])
        return results


class _SharedBasisPath(_PathResults):
    """The cross-validation of a KLR-CV on the compact route (the estimator's own route at this size)
    with one basis for every fold and every C.

    The basis Z is a uniform sample of the training points (no labels used), and the kernel block
    K(X, Z) (N x M, the N training rows) with K_ZZ is computed once. A fold's problem (P_M) at any C
    is the problem on all N rows with C_i = 0 on its held-out rows: the folds and the values of C
    differ only in C_i, so nothing is recomputed, and the folds (and one-vs-rest problems) of one C
    are solved together by ``newton_columns``, every pass over the block serving all of them (a
    Hessian product for all folds is one matrix product). Along C (ascending) each problem starts
    from its solution at the previous C, with the previous preconditioner. The decision values of
    the held-out rows come with the solve (A w on all rows), so the default log-loss needs no
    kernel evaluation. The walk stops as the searches do (``patience``). The refit on all rows
    uses the same block, warm from the mean of the folds' solutions at the chosen C.

    Exposes what the CV estimators read of a search: ``cv_results_``, ``n_splits_``,
    ``best_estimator_`` (with refit)."""

    def fit(self, X, y, sample_weight=None):
        t_start = time.perf_counter()
        owner, model = self.owner, self.model
        cv = check_cv(owner.cv, y, classifier=True)
        splits = list(cv.split(X, y))
        self.n_splits_ = n_folds = len(splits)
        scoring = owner._scoring()
        if isinstance(scoring, str):
            scoring = check_scoring(model, scoring=scoring)
        base = clone(model).set_params(C=1.0)
        base._check_params()
        threads = n_threads(owner.n_jobs)  # the kernel block's
        Xv, _, keep, Xk, Cbase, problems = base._prepare(X, y, sample_weight)
        N, n_prob = len(keep), len(problems)
        # the basis and the block, once
        fit_all = base._compact_problems(Xk, problems, Cbase, 0.0, threads, tol=float(model.tol), max_iter=0)
        M_all = owner._shared_basis_size(base, N)
        rng = check_random_state(model.random_state)
        idx = np.sort(rng.choice(N, M_all, replace=False)) if M_all < N else np.arange(N)
        K = fit_all.storage(M_all)
        Kzz = fit_all.fill(K, 0, idx=idx, capture=idx)
        Kzz = Kzz_all = 0.5 * (Kzz + Kzz.T)
        cols = independent_columns(Kzz)  # points in the span of the others (duplicates): beta = 0
        wcols = np.append(cols, M_all)
        A = DesignMatrix(K, cols, threads=threads)
        Kzz = Kzz[np.ix_(cols, cols)]
        n_sub = min(N, max(2000, 2 * (len(cols) + 1)))
        tol, max_iter = float(model.tol), (model.max_iter if model.max_iter > 0 else 0)
        # columns: (fold k, problem p) -> k * n_prob + p; a fold's training rows by a 0/1 mask
        at = np.full(X.shape[0], -1)
        at[keep] = np.arange(N)
        train_mask = np.zeros((N, n_folds))
        tests = []
        for k, (train, test) in enumerate(splits):
            tr = at[train]
            train_mask[tr[tr >= 0], k] = 1.0
            tests.append(test)
        Y = np.column_stack([problems[p] for _ in range(n_folds) for p in range(n_prob)])
        mask = np.repeat(train_mask, n_prob, axis=1)
        direct = isinstance(getattr(scoring, "scorer", scoring), _NegLogLoss) and N == X.shape[0]

        def start(Y, Cm):
            W = np.zeros((len(cols) + 1, Y.shape[1]))
            W[-1] = start_bias(Y, Cm)
            return W

        monitor = self.monitor

        def solve(C, Y, Cm, W0, P, stage, tol=tol, A=A, Kzz=Kzz, deadline=monitor.deadline):
            progress = monitor.problem_if_needed(stage)
            report = None if progress is None else (lambda it, dec, n: progress(it, float(np.max(dec)), n))
            with one_thread("blas"):
                r = newton_columns(CompactProblem(A, Kzz, Y, C * Cm, 0.0), start(Y, Cm) if W0 is None else W0,
                                   tol=tol, max_iter=max_iter, rng=rng, n_subsample=n_sub, precond=P,
                                   progress=report, deadline=deadline)
            if progress is not None:
                progress.end(int(r["n_iter"].max()), float(np.max(r["decrement"])), N, int(r["status"].max()))
            return r

        def states(r, columns, M=M_all, wcols=wcols):
            out = []
            for j in columns:
                w = np.zeros(M + 1)
                w[wcols] = r["w"][:, j]
                out.append({"w": w, "f": r["f"][:, j], "objective": float(r["objective"][j]),
                            "n_iter": int(r["n_iter"][j]), "cg_iter": int(r["cg_iter"][j]),
                            "decrement": float(r["decrement"][j]), "status": int(r["status"][j])})
            return out

        def fitted(C, sts, rows, on_keep=False, idx=idx):
            est = clone(model).set_params(C=C, **({"lam": 0.0} if hasattr(model, "lam") else {}))
            for name in ("classes_", "_gamma", "shape_fit_", "n_features_in_"):
                setattr(est, name, getattr(base, name))
            est._store_compact(Xv, keep, None if on_keep else Xk[idx],
                               idx if on_keep else None, sts, len(rows), sum(st["cg_iter"] for st in sts), 0.0)
            if hasattr(est, "lam"):  # S-KLR at lam = 0 (its size is the basis): KLR's probabilities
                est.lam_, est.temperature_ = 0.0, (1.0 if n_prob == 1 else np.ones(n_prob))
            return est

        # the refit's basis: larger only where the search's points are (nearly) all independent (a
        # basis whose points repeat -- skin: 182 of 512 -- already spans what the data has)
        M_fit = owner._refit_basis_size(base, N, M_all) if len(cols) >= 0.9 * M_all else M_all
        sized = isinstance(scoring, _ScoreAndSize)

        def fold_score(r, k, C):
            test = tests[k]
            if direct:  # the log-loss of the held-out rows from their decision values, as _NegLogLoss
                z = r["f"][at[test], k * n_prob:(k + 1) * n_prob]
                proba = np.column_stack([expit(-z[:, 0]), expit(z[:, 0])]) if n_prob == 1 else np.exp(_log_proba(z))
                enc = np.searchsorted(base.classes_, y[test])
                eps = np.finfo(proba.dtype).eps
                score = -float(np.mean(-np.log(np.clip(proba[np.arange(len(test)), enc], eps, 1 - eps))))
            else:
                rows = np.flatnonzero(train_mask[:, k])
                est = fitted(C, states(r, range(k * n_prob, (k + 1) * n_prob)), rows)
                score = scoring.scorer(est, Xv[test], y[test]) if sized else scoring(est, Xv[test], y[test])
            # (the size: the share of the points the refitted model keeps)
            return {"score": score, "kept": M_fit / X.shape[0]} if sized else score

        order = np.argsort(np.asarray(self.Cs, dtype=float), kind="stable")
        W, P = None, None
        rows_scores, params, fold_W = [], [], []
        for C in (self.Cs[i] for i in order):  # the grid's own values (its candidates' keys)
            r = solve(float(C), Y, Cbase[:, None] * mask, W, P, len(params), tol=FOLD_TOL_SCALE * tol)
            W, P = r["w"], r["precond"]
            fold_W.append(W)
            rows_scores.append([fold_score(r, k, float(C)) for k in range(n_folds)])
            params.append(self._params(C))
            if self._stops(self._mean(rows_scores[-1])):
                break
            if monitor.out_of_time() or (r["status"] == 2).any():  # time_limit, or a callback asked to stop
                break
        self.cv_results_ = self._results(params, rows_scores)
        if owner.refit:
            b = owner._choose(self.cv_results_)
            C = float(params[b]["C"])
            W0 = np.zeros((M_all + 1, n_prob))  # the folds' mean solution, over every basis point
            W0[wcols] = fold_W[b].reshape(len(cols) + 1, n_folds, n_prob).mean(axis=1)
            Y1, C1 = np.column_stack(problems), np.repeat(Cbase[:, None], n_prob, axis=1)
            search = (A, Kzz, idx, cols, wcols, W0[wcols])  # the search's basis: the refit's fallback
            # the model is refitted on a basis twice the search's (its first half that basis), where
            # n_components is 'auto' and the budget allows: the C chosen on the cheaper basis, the
            # model a richer one (REFIT_COMPONENTS)
            if M_fit > M_all:
                extra = np.sort(rng.choice(np.setdiff1d(np.arange(N), idx), M_fit - M_all, replace=False))
                idx = np.concatenate([idx, extra])
                K = np.concatenate([K, fit_all.storage(M_fit - M_all)], axis=1)
                cross = fit_all.fill(K, M_all, idx=extra, capture=idx)
                Kzz_all = _grown_gram(Kzz_all, cross)
                cols = independent_columns(Kzz_all, cols)
                W0 = np.concatenate([W0[:M_all], np.zeros((M_fit - M_all, n_prob)), W0[-1:]])
            wcols = np.append(cols, M_fit)
            # the larger basis gets as long as the search took; where it needs more (skin at C = 1000:
            # 7,000 CG steps on a basis with 3/4 of its points dependent) the model keeps the search's
            spent = time.perf_counter() - t_start
            ends = [t for t in (monitor.deadline, time.perf_counter() + spent if M_fit > M_all else None) if t]
            r = solve(C, Y1, C1, W0[wcols], None, len(self.Cs), A=DesignMatrix(K, cols, threads=threads),
                      Kzz=Kzz_all[np.ix_(cols, cols)], deadline=min(ends) if ends else None)
            if M_fit > M_all and (r["status"] == 3).any() and not monitor.out_of_time():
                A, Kzz, idx, cols, wcols, W0s = search
                if sized:  # the sizes recorded were the larger basis': the model keeps the search's
                    for key in [k for k in self.cv_results_ if k.endswith("_test_kept") and "rank" not in k]:
                        self.cv_results_[key] = self.cv_results_[key] * (M_all / M_fit)
                M_fit = M_all
                r = solve(C, Y1, C1, W0s, None, len(self.Cs), A=A, Kzz=Kzz)
            self.best_estimator_ = fitted(C, states(r, range(n_prob), M=M_fit, wcols=wcols), np.arange(N),
                                          on_keep=True, idx=idx)
        return self


# ------------------------------------------------------------ approximate leave-one-out (cv='alo')
#: cv=None: KernelLogisticRegressionCV scores C by approximate leave-one-out (_ApproxLOOPath) where
#: the exact route is the estimator's own and the factorisations it needs, one of N x N per binary
#: problem and value of C, cost at most this many N^3 (measured, KLR-CV at its defaults: 2.5-3.6x
#: faster than 5 folds at 145-537 rows, even at 960 (banknote: 0.34 against 0.37 s, the
#: factorisations 30-40 ms per C), 2.5x slower on digits' 10 problems of 1,257 rows)
ALO_MAX_WORK = 800.0**3
#: the kernels whose Gram matrix is positive semi-definite by construction (the default rule's)
ALO_KERNELS = ("rbf", "linear", "poly", "laplacian")


def alo_decision(K, f, yk, Ci):
    """Approximate leave-one-out decision values of one binary KLR problem (Rad and Maleki, "A
    scalable estimate of the out-of-sample prediction error via approximate leave-one-out", JRSS-B
    2020): the leave-one-out solution as one Newton step from the full one, removing point i.

    With the loss l_i(f) = C_i log(1 + exp(-y_i f)) at the fitted decision values f, its derivatives
    g_i and w_i = C_i p_i (1 - p_i) (p_i = P(y_i | x_i)), and the Hessian of the primal in function
    space, the Newton step and Sherman-Morrison give

        f_{-i} = f_i + g_i h_i / (1 - w_i h_i),  h = diag((K^-1 + W)^-1) (+ the free bias' term).

    With S = W^(1/2) and B = I + S K S (eigenvalues >= 1): S (K^-1 + W)^-1 S = I - B^-1, and the
    free bias (a flat prior) adds (B^-1 s)_i^2 / (s' B^-1 s) to w_i h_i. As g_i / w_i = -y_i / p_i,

        f_{-i} = f_i - (y_i / p_i) v_i / (1 - v_i),  v_i = w_i h_i,

    which needs diag(B^-1) and B^-1 s only: one Cholesky factor and its inverse (2/3 N^3), no
    division by a small w_i (a confidently fitted point moves by ~ its w_i). Raises
    numpy.linalg.LinAlgError when B is not positive definite (K not positive semi-definite)."""
    # (p = 0, a point fitted wrong beyond float64's range: kept positive, its value is left as it is)
    p = np.maximum(expit(yk * f), np.finfo(np.float64).tiny)
    s = np.sqrt(Ci * p * (1.0 - p))
    B = K * s[:, None]
    B *= s[None, :]
    B[np.diag_indices_from(B)] += 1.0
    L, info = lapack.dpotrf(B, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError("the kernel matrix is not positive semi-definite")
    Linv, info = lapack.dtrtri(L, lower=1, overwrite_c=1)
    if info != 0:
        raise np.linalg.LinAlgError("the kernel matrix is not positive semi-definite")
    Binv_diag = np.einsum("ij,ij->j", Linv, Linv)  # B^-1 = L^-T L^-1
    Binv_s = Linv.T @ (Linv @ s)
    c = float(s @ Binv_s)
    v = 1.0 - Binv_diag + (Binv_s * Binv_s / c if c > 0 else 0.0)
    v = np.clip(v, 0.0, 1.0 - 1e-12)
    return f - (yk / p) * v / (1.0 - v)


def _training_gram(est, X):
    """K(X, X) of a fitted estimator's kernel on its (validated) training rows, float64."""
    if est.kernel == "precomputed":
        return np.array(X, dtype=np.float64)
    if callable(est.kernel):
        return callable_gram(est.kernel, X, X)
    return np.vstack([Kc for _, Kc in est._evaluator().chunks(X, None, X.shape[0], X)])


class _ApproxLOOPath(_PathResults):
    """KLR-CV's search by approximate leave-one-out (cv='alo', and cv=None where it is cheap): the
    grid of C walked upwards on the whole training set, each fit on the exact SMO route started from
    the previous C's solution (one engine session over the walk, as a fold's in PathSearchCV), and
    scored by the log-loss of its approximate leave-one-out decision values (``alo_decision``). One
    fit per value of C instead of one per fold and value, no refit (the chosen C's fit is the model),
    and a leave-one-out rather than a 5-fold estimate (monk2: the C of the lowest held-out log-loss,
    where 5 folds of 240 rows chose one a step lower). The walk stops as the searches do
    (``patience``).

    Exposes what the CV estimators read of a search: ``cv_results_`` (one split: the approximate
    leave-one-out score), ``n_splits_`` (1), ``best_estimator_`` (with refit)."""

    def fit(self, X, y, sample_weight=None):
        owner, monitor = self.owner, self.monitor
        n = _num_samples(X)
        base = clone(self.model).set_params(solver="smo")
        store = PathStore()
        rows = SearchRows(store, n)
        K, fits, params, rows_scores = None, [], [], []
        classes, y_enc = class_labels(y)
        targets = [1] if len(classes) == 2 else range(len(classes))  # the binary problems, as the fits'
        try:
            for stage, C in enumerate(sorted(self.Cs, key=float)):  # the grid's own values (its keys)
                progress = monitor.problem_if_needed(stage)
                est = copy.copy(base)  # (an unfitted estimator: its parameters; clone costs 1.4 ms)
                est.C = float(C)
                if monitor.deadline is not None:  # (the first C is fitted whatever is left: a model)
                    left = monitor.deadline - time.perf_counter()
                    if left <= 0 and fits:
                        break
                    est.set_params(time_limit=max(left, 1e-3))
                est.fit(X, y, sample_weight, search_rows=rows)
                if K is None:
                    K = _training_gram(est, X)
                Ci = per_sample_bounds(float(C), classes, y_enc, est.class_weight, sample_weight, n)
                coef = np.zeros((n, len(est.intercept_)))  # the expansion over every training row
                coef[est.support_] = est.dual_coef_.T
                z = K @ coef + est.intercept_
                with one_thread("blas"):  # (erratic on 2 threads beside the engine's: 40-140 ms at 960 rows)
                    for j, k in enumerate(targets):
                        try:
                            z[:, j] = alo_decision(K, z[:, j], np.where(y_enc == k, 1.0, -1.0), Ci)
                        except np.linalg.LinAlgError:
                            raise ValueError("cv='alo' needs a positive semi-definite kernel matrix; this kernel's "
                                             "is not (give cv=None or a number of folds)") from None
                log_p = _log_proba(z[:, 0] if len(classes) == 2 else z)[np.arange(n), y_enc]
                eps = np.finfo(np.float64).eps
                score = -float(np.mean(-np.log(np.clip(np.exp(log_p), eps, 1 - eps))))  # as _NegLogLoss
                fits.append(est)
                params.append(self._params(C))
                rows_scores.append([score])
                if progress is not None:
                    progress.end(int(np.max(est.n_iter_)), -score, n, 0 if est.converged_ else 3)
                if self._stops(score):
                    break
                if monitor.out_of_time():
                    break
        finally:
            store.clear()
        self.n_splits_ = 1
        self.cv_results_ = self._results(params, rows_scores)
        if owner.refit:
            self.best_estimator_ = fits[owner._choose(self.cv_results_)]
        return self

