"""Support vector machines on the SMO engine."""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core
from ._base import (
    KERNELS,
    TERM_LINEAR,
    KernelModelMixin,
    canonical_csr,
    check_kernel_params,
    check_positive,
    core_matrix,
    n_threads,
    per_sample_bounds,
    resolve_gamma,
    run_parallel,
)

SOLVERS = ("auto", "smo2", "smo1", "batched")

# The route 'auto' takes; decided by benchmarks/bench_svc.py (see benchmarks/results/svc.md).
_AUTO_ROUTE = "smo2"


def _pairs(n_classes):
    """The one-vs-one problems in LIBSVM's order: (a, b) for a < b."""
    return [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]


def _ovo_votes(dec, n_classes):
    """Votes of the one-vs-one decision values (LIBSVM pair order, > 0 votes for the first class)."""
    votes = np.zeros((dec.shape[0], n_classes))
    for k, (a, b) in enumerate(_pairs(n_classes)):
        votes[:, a] += dec[:, k] > 0
        votes[:, b] += dec[:, k] <= 0
    return votes


def _ovr_from_ovo(dec, n_classes):
    """One-vs-rest scores from one-vs-one decision values: votes plus a tie-breaking confidence
    squashed into (-1/3, 1/3)."""
    conf = np.zeros((dec.shape[0], n_classes))
    for k, (a, b) in enumerate(_pairs(n_classes)):
        conf[:, a] += dec[:, k]
        conf[:, b] -= dec[:, k]
    return _ovo_votes(dec, n_classes) + conf / (3 * (np.abs(conf) + 1))


class SVC(KernelModelMixin, ClassifierMixin, BaseEstimator):
    """C-Support Vector Classification on sparsekernel's SMO engine.

    A drop-in for :class:`sklearn.svm.SVC` (same parameters and fitted attributes where they make
    sense), solving the same dual problem

        min_a 1/2 a'Qa - sum_i a_i   s.t.  y'a = 0,  0 <= a_i <= C_i,   Q_ij = y_i y_j K(x_i, x_j)

    with ``C_i = C * class_weight[y_i] * sample_weight_i``. Multiclass problems are split one-vs-one
    as in LIBSVM.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter (> 0).
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'laplacian', 'precomputed'}, default='rbf'
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : {'scale', 'auto'} or float, default='scale'
        Kernel coefficient for 'rbf', 'poly', 'sigmoid' and 'laplacian': 'scale' is
        1 / (n_features * X.var()), 'auto' is 1 / n_features.
    coef0 : float, default=0.0
        Independent term of 'poly' and 'sigmoid'.
    shrinking : bool, default=True
        LIBSVM-style shrinking of the active set (with a final check on all variables).
    tol : float, default=1e-3
        Stop when the maximal KKT violation max_{I_up}(-y_i G_i) - min_{I_low}(-y_i G_i) is below tol
        (LIBSVM's meaning).
    cache_size : float, default=200
        Budget of the kernel-row cache in MB (float32 rows; never exceeded).
    class_weight : dict or 'balanced', default=None
    verbose : bool, default=False
    max_iter : int, default=-1
        Cap on SMO pair steps per binary problem (-1: none). Hitting it raises a ConvergenceWarning.
    decision_function_shape : {'ovr', 'ovo'}, default='ovr'
    break_ties : bool, default=False
        With 'ovr' and more than two classes, predict by the argmax of decision_function instead of
        the one-vs-one vote.
    random_state : None
        Accepted for compatibility; the solver is deterministic and does not use it.
    solver : {'auto', 'smo2', 'smo1', 'batched'}, default='auto'
        'smo2': pair SMO with second-order working-set selection (Fan, Chen & Lin 2005);
        'smo1': pair SMO with the maximal violating pair; 'batched': two-level decomposition (blocks
        of ``working_set_size`` variables whose kernel rows are computed as one block, sub-problem
        solved by the same pair SMO). 'auto' takes the route the benchmark found fastest.
    working_set_size : int or None, default=None
        Block size q of the batched route (None: chosen from N and the cache).
    n_jobs : int or None, default=None
        Threads (None: all cores). Kernel rows and blocks are computed in parallel; the pairwise
        problems of a multiclass fit run in parallel when there are enough of them.

    Attributes
    ----------
    classes_, support_, support_vectors_, n_support_, dual_coef_, intercept_, n_iter_,
    shape_fit_, n_features_in_ : as in :class:`sklearn.svm.SVC`.
    n_kernel_evals_ : ndarray of shape (n_problems,)
        Kernel entries computed by each binary solve.
    dual_objective_ : ndarray of shape (n_problems,)
        Final dual objective 1/2 a'Qa - sum a of each binary problem.
    kkt_gap_ : ndarray of shape (n_problems,)
        Final maximal KKT violation of each binary problem.
    converged_ : bool
        False when some binary problem stopped on max_iter.
    fit_time_ : float
        Wall-clock seconds spent in fit.
    solver_stats_ : list of dict
        Per binary problem: iterations, blocks, cache hits/misses, peak cache bytes, ...
    """

    def __init__(self, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, shrinking=True, tol=1e-3,
                 cache_size=200, class_weight=None, verbose=False, max_iter=-1, decision_function_shape="ovr",
                 break_ties=False, random_state=None, solver="auto", working_set_size=None, n_jobs=None):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.solver = solver
        self.working_set_size = working_set_size
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        check_positive("C", self.C)
        check_positive("tol", self.tol)
        check_positive("cache_size", self.cache_size)
        check_kernel_params(self.kernel, self.gamma, self.coef0, self.degree)
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        if self.decision_function_shape not in ("ovr", "ovo"):
            raise ValueError(f"decision_function_shape must be 'ovr' or 'ovo', got {self.decision_function_shape!r}")
        if not isinstance(self.max_iter, numbers.Integral) or isinstance(self.max_iter, bool) or (
                self.max_iter < 1 and self.max_iter != -1):
            raise ValueError(f"max_iter must be a positive integer or -1, got {self.max_iter!r}")
        q = self.working_set_size
        if q is not None and (not isinstance(q, numbers.Integral) or q < 4):
            raise ValueError(f"working_set_size must be an integer >= 4 or None, got {q!r}")
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")
        return n_threads(self.n_jobs)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None):
        """Fit the model on X (dense or CSR; a kernel matrix for 'precomputed') and labels y."""
        t0 = time.perf_counter()
        threads = self._check_params()
        X, y = validate_data(self, X, y, accept_sparse=self._accept_sparse(), dtype=[np.float64, np.float32],
                             order="C")
        self._check_precomputed(X, fit=True)
        if sp.issparse(X):
            X = canonical_csr(X)
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {len(self.classes_)} class")
        Ci = per_sample_bounds(float(self.C), self.classes_, y_enc, self.class_weight, sample_weight, X)
        if len(np.unique(y_enc[Ci > 0])) < 2:
            raise ValueError("Invalid input: the samples with positive weight (sample_weight times class_weight) "
                             "must belong to at least two classes")
        self._gamma = resolve_gamma(self.gamma, X) if self.kernel != "precomputed" else 0.0
        self.shape_fit_ = X.shape

        n_classes = len(self.classes_)
        pairs = _pairs(n_classes)
        # the pairwise problems run in parallel (one thread each) when there are enough of them
        workers = threads if len(pairs) >= threads else 1
        inner_threads = 1 if workers > 1 else threads
        route = _AUTO_ROUTE if self.solver == "auto" else self.solver

        def solve(pair, token):
            a, b = pair
            idx = np.flatnonzero((y_enc == a) | (y_enc == b))
            Xp = X[idx] if n_classes > 2 else X
            if self.kernel == "precomputed":
                Xp = np.ascontiguousarray(X[np.ix_(idx, idx)])
            yp = np.where(y_enc[idx] == a, 1.0, -1.0)
            hi = np.ascontiguousarray(Ci[idx])
            r = _core.solve(
                core_matrix(Xp), KERNELS[self.kernel], self._gamma, float(self.coef0), int(self.degree), TERM_LINEAR,
                yp, np.full(len(idx), -1.0), None, np.zeros(len(idx)), hi, None, float(self.tol), int(self.max_iter),
                bool(self.shrinking), route != "smo1", route == "batched",
                int(self.working_set_size or 0), float(self.cache_size), inner_threads, token)
            r["idx"] = idx
            r["y"] = yp
            return r

        results = run_parallel(solve, pairs, workers)
        self._store_model(X, y_enc, pairs, results)
        self.fit_time_ = time.perf_counter() - t0
        if not self.converged_:
            warnings.warn("Solver terminated early (max_iter=%d). Consider pre-processing your data with "
                          "StandardScaler or MinMaxScaler." % self.max_iter, ConvergenceWarning)
        return self

    def _store_model(self, X, y_enc, pairs, results):
        """Keep only the support vectors, in LIBSVM's layout (grouped by class)."""
        n_classes = len(self.classes_)
        n = X.shape[0]
        coef_full = np.zeros((max(1, n_classes - 1), n))
        is_sv = np.zeros(n, dtype=bool)
        rho = np.empty(len(pairs))
        for k, ((a, b), r) in enumerate(zip(pairs, results)):
            idx, alpha, yp = r["idx"], r["alpha"], r["y"]
            nz = alpha > 0
            is_sv[idx[nz]] = True
            # coefficients of class-a SVs go to row b-1, those of class-b SVs to row a (LIBSVM)
            in_a = yp > 0
            coef_full[b - 1, idx[in_a]] = (yp * alpha)[in_a]
            coef_full[a, idx[~in_a]] = (yp * alpha)[~in_a]
            rho[k] = r["rho"]
        order = np.lexsort((np.arange(n), y_enc))
        support = order[is_sv[order]]
        self.support_ = support.astype(np.int32)
        self.n_support_ = np.bincount(y_enc[support], minlength=n_classes).astype(np.int32)
        self._dual_coef = coef_full[:, support]
        self._intercept = -rho
        if self.kernel == "precomputed":
            self.support_vectors_ = np.empty((0, 0), dtype=np.float64)
        else:
            self.support_vectors_ = X[support]
        self._sv_core = None if self.kernel == "precomputed" else core_matrix(self.support_vectors_)
        if n_classes == 2:  # scikit-learn's sign convention: decision > 0 means classes_[1]
            self.dual_coef_ = -self._dual_coef
            self.intercept_ = -self._intercept
        else:
            self.dual_coef_ = self._dual_coef
            self.intercept_ = self._intercept
        self.n_iter_ = np.array([r["n_iter"] for r in results], dtype=np.int64)
        self.n_kernel_evals_ = np.array([r["kernel_evals"] for r in results], dtype=np.int64)
        self.dual_objective_ = np.array([r["obj"] for r in results])
        self.kkt_gap_ = np.array([r["gap"] for r in results])
        self.converged_ = all(r["status"] == 0 for r in results)
        self.solver_stats_ = [{k: v for k, v in r.items() if k not in ("alpha", "idx", "y")}
                              for r in results]
        self.fit_status_ = 0 if self.converged_ else 1

    # ------------------------------------------------------------------ prediction
    def _ovo_decision(self, X):
        """LIBSVM's decision values, one column per pair (a, b), positive meaning class a."""
        n_classes = len(self.classes_)
        starts = np.concatenate([[0], np.cumsum(self.n_support_)])
        pairs = _pairs(n_classes)
        dec = np.empty((X.shape[0], len(pairs)))
        for sl, K in self._kernel_chunks(X):
            for k, (a, b) in enumerate(pairs):
                sa = slice(starts[a], starts[a + 1])
                sb = slice(starts[b], starts[b + 1])
                dec[sl, k] = (K[:, sa] @ self._dual_coef[b - 1, sa] + K[:, sb] @ self._dual_coef[a, sb]
                              + self._intercept[k])
        return dec

    def decision_function(self, X):
        """Decision values: shape (n,) for two classes (> 0 means classes_[1]); (n, n_classes) for
        'ovr'; (n, n_classes (n_classes-1) / 2) for 'ovo'."""
        check_is_fitted(self)
        X = self._validate_X(X)
        dec = self._ovo_decision(X)
        if len(self.classes_) == 2:
            return -dec[:, 0]
        if self.decision_function_shape == "ovr":
            return _ovr_from_ovo(dec, len(self.classes_))
        return dec

    def predict(self, X):
        """Class labels: the sign for two classes, the one-vs-one vote otherwise (ties to the
        first class, as LIBSVM), or the ovr argmax with break_ties=True."""
        check_is_fitted(self)
        X = self._validate_X(X)
        dec = self._ovo_decision(X)
        n_classes = len(self.classes_)
        if n_classes == 2:
            return self.classes_[(dec[:, 0] <= 0).astype(int)]
        if self.break_ties and self.decision_function_shape == "ovr":
            return self.classes_[np.argmax(_ovr_from_ovo(dec, n_classes), axis=1)]
        return self.classes_[np.argmax(_ovo_votes(dec, n_classes), axis=1)]  # ties: first class
