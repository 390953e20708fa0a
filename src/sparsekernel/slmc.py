"""Sparse large margin classifiers (SLMC) and sparse kernel Fisher discriminants with learned
expansion vectors (Wu, Schölkopf & Bakır, JMLR 2006), and the paper's reduced-set baselines.

Every model here is  f(x) = sum_j beta_j K(z_j, x) + b  over N_z expansion vectors (XVs) z_j chosen
by the user's budget: prediction costs N_z kernel evaluations per sample, whatever the training set.

    SLMC                  Z minimises the SVM's marginal function W(Z) (44), beta and b from the SVM
                          (37)-(39) on the whitened empirical kernel map of Z (45).
    SparseKFD             Z minimises the sparse KFD's W(Z) (57)-(62); beta and b then from (37)-(39).
    ReducedSetClassifier  'rs':  Z approximates a trained SVM's w (4), beta by (47), the SVM's b;
                          'mrs': the same Z, beta and b by (37)-(39) and (45) (section 4.1).
    ReducedSVM            'rsvm': random training points as Z, a linear SVM on psi_z(x) with C by
                          5-fold CV (Lee & Mangasarian; Lin & Lin); 'mrsvm': the same Z, beta and b
                          by (37)-(39) and (45) (section 4.2).

Multiclass problems are one-vs-rest, the binary problems in parallel threads. The machinery (W(Z),
gradients, L-BFGS) is in ``_expansion``; the kernel derivatives in ``_kernel_grad``.
"""

from __future__ import annotations

import copy
import math
import numbers
import time
import warnings
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import RealNotInt, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._budget import calibrate_expansion, parse_budget, prediction_cost
from ._memory import FIXED_BYTES, MB, Budget, expansion_working_bytes, require, x_bytes
from ._base import BUDGET_CONSTRAINT, KERNEL_PARAM_CONSTRAINTS, N_JOBS_CONSTRAINT, NON_NEGATIVE, POSITIVE, \
    STATUS_CONVERGED, STATUS_MAX_ITER, TIME_LIMIT_CONSTRAINT, CallbackSupportMixin, ConstrainedParamsMixin, \
    DaskDispatchMixin, Expansion, FitMonitor, KernelEvaluator, NumInterval, canonical_csr, core_matrix, n_threads, \
    one_thread, resolve_gamma, run_parallel, warn_if_stopped_early, with_callbacks
from ._expansion import WINDOW, ExpansionKernel, InnerSVM, KFDObjective, ReducedSetObjective, SLMCObjective, minimise
from ._kernel_grad import DIFFERENTIABLE_KERNELS
from ._fit import threads_and_cache
from .svm import SVC

__all__ = ["SLMC", "SparseKFD", "ReducedSetClassifier", "ReducedSVM"]

INITS = ("random", "kmeans")
KMEANS_MAX_ROWS = 20_000  # init='kmeans' clusters a random subsample of at most this many points

# n_expansion='auto' (SLMC, SparseKFD): N_z = min(AUTO_SV_SHARE N_SV, sqrt(N)) per binary problem.
# The paper's N_z is a tenth of the SVM's support vectors (its Tables 1-3), which keeps the test error
# of the sets it reports; an SLMC step costs O(N N_z^2) (the whitened map) plus the inner solve's
# O(N N_z) passes, so at 1e4-1e5 rows, where N_SV grows with N, sqrt(N) keeps a step O(N^2) and the
# model within the prediction cost of a few hundred kernel values (benchmarks/results/sparse.md:
# make_classification(20000), 15,000 points: 123 XVs, 2 % of the SVs, 0.2 point above SVC's accuracy).
AUTO_SV_SHARE = 0.1

# Below this many entries of Psi (N x N_z) a binary problem runs single-threaded: the inner SMO's
# rows and the kernel block are then too short for OpenMP's fork-join to pay. Measured (2 cores):
# breast_cancer 426 x 10: 0.05 s on one thread, 2.1 s on two while the other core was busy; USPS
# 7291 x 46: 1.7 s on one, 2.7-3.0 s on two (quiet machine); 20000 x 300: 71 s on one, 36 s on two.
_MIN_ENTRIES_PER_THREAD = 1 << 20


def _threads_for(n, n_z, threads):
    return threads if n * n_z >= _MIN_ENTRIES_PER_THREAD else 1


# ---------------------------------------------------------------------- expansion vectors at the start
def _dense(rows):
    return rows.toarray() if sp.issparse(rows) else np.array(rows, dtype=np.float64)


def _separate_duplicates(Z, X, rng):
    """Z with repeated rows moved apart by a small random step (1e-3 of each feature's spread), so
    that K^z is not singular from the start (SLMC section 5.6: duplicates made K^z ill conditioned)."""
    _, first = np.unique(Z, axis=0, return_index=True)
    dup = np.setdiff1d(np.arange(len(Z)), first)
    if len(dup):
        spread = np.sqrt(np.asarray(X.power(2).mean(axis=0) - np.square(X.mean(axis=0))).ravel()) if sp.issparse(X) \
            else X.std(axis=0)
        spread = np.where(spread > 0, spread, 1.0)
        Z = Z.copy()
        Z[dup] += 1e-3 * spread * rng.standard_normal((len(dup), Z.shape[1]))
    return Z


def distinct_sample(X, n_z, rng, candidates=None):
    """n_z distinct rows of X (among ``candidates`` when given), drawn at random: the paper's random
    initial XVs with duplicates removed (titanic has 14 distinct rows in 2201). Fewer distinct rows
    than n_z: all of them, plus copies moved apart by _separate_duplicates."""
    pool = np.arange(X.shape[0]) if candidates is None else np.asarray(candidates)
    order = pool[rng.permutation(len(pool))]
    # the draws in order, a prefix at a time (doubling) until it holds n_z distinct rows: the earliest
    # n_z distinct draws are the same as over all of them, without densifying all of X
    k = min(len(order), 2 * n_z + 16)
    while True:
        rows = _dense(X[order[:k]])
        _, first = np.unique(rows, axis=0, return_index=True)
        if len(first) >= n_z or k == len(order):
            break
        k = min(len(order), 2 * k)
    first = np.sort(first)[:n_z]                     # the earliest draws of distinct rows
    Z = rows[first]
    if len(Z) < n_z:
        Z = np.vstack([Z, rows[rng.choice(len(rows), n_z - len(Z))]])
    return _separate_duplicates(Z, X, rng)


def initial_expansion(X, n_z, init, rng):
    """The initial XVs: random distinct training points ('random', Table 1), k-means centres
    ('kmeans', Table 2, scikit-learn's KMeans) or the user's array."""
    if isinstance(init, str) and init == "random":
        return distinct_sample(X, n_z, rng)
    if isinstance(init, str) and init == "kmeans":
        from sklearn.cluster import KMeans  # (heavy: 150 ms, imported when used)

        # one OpenMP thread: KMeans' chunked sums depend on the thread count, and the model must not.
        # One k-means++ start (w8a, 15,000 points, 123 centres: 2.0 s against 5.4 s for three, and the
        # SLMC from it as accurate, 0.981 against 0.982)
        # At most KMEANS_MAX_ROWS points, drawn at random (1e5 x 10, 317 centres: 11.4 s on all the
        # points, 0.85 s on 20,000).
        seed = rng.randint(2**31 - 1)
        if X.shape[0] > KMEANS_MAX_ROWS:
            X = X[np.sort(rng.choice(X.shape[0], KMEANS_MAX_ROWS, replace=False))]
        with warnings.catch_warnings(), one_thread("openmp"):
            warnings.simplefilter("ignore", ConvergenceWarning)  # fewer distinct points than clusters: separated below
            km = KMeans(n_clusters=n_z, n_init=1, random_state=seed).fit(X)
        return _separate_duplicates(np.asarray(km.cluster_centers_, dtype=np.float64), X, rng)
    return np.array(init, dtype=np.float64)


# ---------------------------------------------------------------------- shared estimator machinery
# n_expansion: a number of expansion vectors, or a fraction of the reference SVM's support vectors
_N_EXPANSION = [NumInterval(Integral, 1, None, closed="left"), NumInterval(RealNotInt, 0.0, 1.0, closed="right")]
# the parameters of the classifiers that minimise over Z (SLMC, SparseKFD, ReducedSetClassifier)
_ITERATIONS = {"max_iter": [NumInterval(Integral, 0, None, closed="left")], "tol": [NON_NEGATIVE],
               "verbose": ["verbose"]}
# and those of the ones whose XVs are learned from a start (SLMC, SparseKFD)
_LEARNED = {**_ITERATIONS, "n_expansion": [StrOptions({"auto"}), *_N_EXPANSION], "budget": BUDGET_CONSTRAINT,
            "init": [StrOptions(set(INITS)), "array-like"], "time_limit": TIME_LIMIT_CONSTRAINT}


class _ExpansionClassifier(ConstrainedParamsMixin, CallbackSupportMixin, DaskDispatchMixin, ClassifierMixin,
                           BaseEstimator):
    """Validation, one-vs-rest problems in threads, the stored model and prediction, shared by every
    classifier of this module. A subclass implements ``_fit_binary``."""

    _init_default = "random"
    # the parameters every classifier here has (ConstrainedParamsMixin checks them at the start of
    # fit; no rule involves several); the kernels are those with a gradient (the XVs move along it)
    _parameter_constraints: dict = {
        "n_expansion": _N_EXPANSION,
        "C": [POSITIVE],
        "kernel": [StrOptions(set(DIFFERENTIABLE_KERNELS))],
        **KERNEL_PARAM_CONSTRAINTS,
        "inner_tol": [POSITIVE],
        "cache_size": [POSITIVE],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS_CONSTRAINT,
    }
    # the L-BFGS stopping rule's look-back in iterations (_expansion.minimise; None: scipy's ftol rule)
    _stop_window = None

    def _fit_budget(self, X, n_splits=None):
        """The stated memory budget of a fit on X (sparsekernel._memory.fit_budget): cache_size (its
        reference SVC's rows), the N_z x N expansion blocks, three copies of X, 512 bytes per sample."""
        n_z = int(self.n_expansion_.max()) if np.ndim(self.n_expansion_) else int(self.n_expansion_)
        return Budget(cache=float(getattr(self, "cache_size", 0.0)) * MB,
                      expansion=expansion_working_bytes(X.shape[0], n_z), X=3.0 * x_bytes(X),
                      per_sample=512 * X.shape[0], fixed=FIXED_BYTES)

    def _n_expansion(self, n_train, n_sv):
        """N_z for one binary problem: the integer, the fraction of the SVM's support vectors, or
        'auto' (min(floor(AUTO_SV_SHARE N_SV), ceil(sqrt(N))), at least 1: at most a tenth of the
        support vectors); then at most the budget's cap."""
        if isinstance(self.n_expansion, str):
            n_z = max(1, min(math.floor(AUTO_SV_SHARE * n_sv), math.ceil(math.sqrt(n_train))))
        elif isinstance(self.n_expansion, numbers.Integral):
            n_z = int(self.n_expansion)
        else:
            n_z = max(1, int(round(float(self.n_expansion) * n_sv)))
        if n_z > n_train:
            raise ValueError(f"n_expansion={self.n_expansion!r} asks for {n_z} expansion vectors but there are only "
                             f"{n_train} training samples")
        cap = self.__dict__.get("_budget_cap")
        return n_z if cap is None else min(n_z, cap)

    def _needs_reference_svc(self):
        return not isinstance(self.n_expansion, numbers.Integral)

    def _set_budget_cap(self, X, n_problems, threads):
        """The cap on N_z per problem from ``budget`` (None without one): the number itself, or the
        largest expansion whose measured prediction pass fits the latency (_budget)."""
        budget = parse_budget(getattr(self, "budget", None))
        if budget is None:
            self._budget_cap = None
        elif budget[0] == "size":
            self._budget_cap = budget[1]
        else:
            self._budget_cap = calibrate_expansion(lambda n_z: self._stand_in(X, n_z, n_problems), X, budget[1])

    def _stand_in(self, X, n_z, n_problems):
        """A copy of this estimator fitted, as far as predict needs, with n_z expansion vectors per
        problem (rows of X, coefficients 1 / n_z): what a model of that size costs to predict with."""
        model = copy.copy(self)
        Z = X[:n_z]
        Z = Z.toarray() if sp.issparse(Z) else np.array(Z, dtype=np.float64)
        model.expansion_vectors_ = np.vstack([Z] * n_problems)
        model.dual_coef_ = np.full((n_problems, n_problems * n_z), 1.0 / n_z)
        model.intercept_ = np.zeros(n_problems)
        return model

    def _reference_svc(self, X, y, threads):
        """The full SVM with the same C and kernel (the paper's N_SV, and the RS baselines' w)."""
        return SVC(C=float(self.C), kernel=self.kernel, gamma=self._gamma, coef0=self.coef0, degree=self.degree,
                   cache_size=self._cache_mb, n_jobs=threads).fit(X, y)

    def _kernel(self, threads):
        return ExpansionKernel(self.kernel, self._gamma, self.coef0, self.degree, threads)

    def _inner_svm(self, y, threads, token):
        """The SVM (37)-(39) with this estimator's C and inner tolerance."""
        return InnerSVM(y, np.full(len(y), float(self.C)), getattr(self, "inner_tol", 1e-3), threads, token,
                        cache_size=self._cache_mb)

    def _machinery(self, X, y, n_z, threads, token):
        """The kernel and the inner SVM of one binary problem, on as many threads as pay for its size."""
        require(expansion_working_bytes(X.shape[0], n_z), f"{type(self).__name__} with {n_z} expansion vectors on "
                f"{X.shape[0]} samples", "lower n_expansion")
        threads = _threads_for(X.shape[0], n_z, threads)
        return self._kernel(threads), self._inner_svm(y, threads, token)

    def _learned_start(self, X, y, rng, threads, token):
        """What a learned-XV fit (SLMC, SparseKFD) starts from: the reference SVC's N_SV (when N_z is
        a fraction), the initial XVs, the kernel and the inner SVM."""
        n_sv = None
        if self._needs_reference_svc() and isinstance(self.init, str):
            n_sv = int(self._reference_svc(X, y, threads).n_support_.sum())
        n_z = self._n_expansion(X.shape[0], n_sv) if isinstance(self.init, str) else None
        Z0 = self._initial_xvs(X, n_z, rng)
        return (n_sv, Z0, *self._machinery(X, y, len(Z0), threads, token))

    def _initial_xvs(self, X, n_z, rng):
        init = getattr(self, "init", self._init_default)
        if not isinstance(init, str):
            Z = np.asarray(init, dtype=np.float64)
            if Z.ndim != 2 or Z.shape[1] != X.shape[1] or not np.all(np.isfinite(Z)):
                raise ValueError(f"init as an array must be finite with shape (n_expansion, {X.shape[1]}), "
                                 f"got shape {Z.shape}")
            return Z
        return initial_expansion(X, n_z, init, rng)

    # ------------------------------------------------------------ fit
    @with_callbacks
    def fit(self, X, y):
        """Fit on X (dense or CSR) and labels y; one binary problem, or one per class (one-vs-rest)."""
        t0 = time.perf_counter()
        threads = self._check_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        if sp.issparse(X):
            X = canonical_csr(X)
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {len(self.classes_)} class")
        self._gamma = resolve_gamma(self.gamma, X)
        if len(self.classes_) == 2:
            targets = [np.where(y_enc == 1, 1.0, -1.0)]
        else:
            targets = [np.where(y_enc == k, 1.0, -1.0) for k in range(len(self.classes_))]
        seeds = check_random_state(getattr(self, "random_state", None)).randint(2**31 - 1, size=len(targets))
        self._set_budget_cap(X, len(targets), threads)
        # every problem in a pool of its own (each an outer L-BFGS over a reference SVC and an inner SVM:
        # always large enough to pay for it, unlike the engine's problems, see _fit.problem_workers)
        workers = min(threads, len(targets))
        inner, self._cache_mb = threads_and_cache(threads, getattr(self, "cache_size", 200), workers)

        monitor = FitMonitor(self, len(targets), tol=float(getattr(self, "tol", 0.0)), X=X, y=y,
                             parallel=workers > 1, metric="W", max_iter=int(getattr(self, "max_iter", 0)) or None)

        def fit_one(k, token):
            progress = monitor.problem_if_needed(k)
            return self._fit_binary(X, targets[k], np.random.RandomState(seeds[k]), inner, token, progress)

        # BLAS on one thread: its multi-threaded products (the gradients' n_z x N x d) sum in an order that
        # depends on the thread count, and the model must not; the kernel blocks use the threads
        with one_thread("blas"):
            results = run_parallel(fit_one, list(range(len(targets))), workers)
        monitor.close()
        self._store(results, X.shape[1])
        self.fit_time_ = time.perf_counter() - t0
        self.prediction_cost_ = prediction_cost(self, X)
        warn_if_stopped_early(self, [r.get("status", STATUS_CONVERGED if r.get("converged", True) else STATUS_MAX_ITER)
                                    for r in results], self._max_iter_message())
        return self

    def _max_iter_message(self):
        """The ConvergenceWarning of a fit some problem of which ran out of iterations: what did not hold."""
        name, max_iter, tol = type(self).__name__, getattr(self, "max_iter", None), getattr(self, "tol", None)
        rule = (f"W fell by less than tol={tol!r} of |W| over {self._stop_window} iterations"
                if self._stop_window else f"W fell by less than tol={tol!r} of max(|W|, 1) in one iteration")
        return (f"{name}: the L-BFGS over the expansion vectors ran {max_iter} iterations (max_iter) before {rule}; "
                f"the model holds the last iterate, converged_ is False. Increase max_iter, or tol to stop earlier.")

    def _fit_binary(self, X, y, rng, threads, token, progress=None):  # pragma: no cover - abstract
        """Fit one binary problem (y in {-1, +1}); return a dict: Z, beta, b and diagnostics."""
        raise NotImplementedError

    def _store(self, results, n_features):
        """Stack the problems' XVs; dual_coef_ is block-diagonal so one kernel block K(X, all XVs)
        serves every problem."""
        sizes = [len(r["Z"]) for r in results]
        starts = np.concatenate([[0], np.cumsum(sizes)])
        self.expansion_vectors_ = np.vstack([r["Z"] for r in results]).reshape(-1, n_features)
        self.dual_coef_ = np.zeros((len(results), starts[-1]))
        for k, r in enumerate(results):
            self.dual_coef_[k, starts[k]:starts[k + 1]] = r["beta"]
        self.intercept_ = np.array([r["b"] for r in results], dtype=np.float64)
        self.n_expansion_ = np.array(sizes, dtype=np.int64)
        ref = [r.get("n_sv") for r in results]
        self.n_support_reference_ = None if any(v is None for v in ref) else np.array(ref, dtype=np.int64)
        self.objective_history_ = [np.asarray(r.get("history", []), dtype=np.float64) for r in results]
        self.n_iter_ = np.array([r.get("n_iter", 0) for r in results], dtype=np.int64)
        self.converged_ = all(r.get("converged", True) for r in results)
        self.n_kernel_evals_ = int(sum(r.get("evals", 0) for r in results))
        self.jitter_ = np.array([r.get("jitter", 0.0) for r in results], dtype=np.float64)
        self.inner_iter_ = np.array([r.get("inner_iter", 0) for r in results], dtype=np.int64)

    def _expansion(self):
        """The fitted model as one kernel expansion (``_base.Expansion``) on its expansion vectors."""
        return Expansion(self.kernel, self._gamma, self.coef0, self.degree, self.expansion_vectors_, self.dual_coef_,
                         self.intercept_)

    # ------------------------------------------------------------ prediction
    def decision_function(self, X):
        """sum_j beta_j K(z_j, x) + b from the expansion vectors only: shape (n,) for two classes
        (> 0 means classes_[1]), (n, n_classes) one-vs-rest scores otherwise."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C", reset=False,
                          ensure_all_finite=False)  # checked by the decision pass
        ev = KernelEvaluator(self.kernel, self._gamma, float(self.coef0), int(self.degree), n_threads(self.n_jobs))
        out = ev.decision(X, self.expansion_vectors_, core_matrix(self.expansion_vectors_), self.dual_coef_,
                          self.intercept_)
        return out[:, 0] if len(self.classes_) == 2 else out

    def predict(self, X):
        """The sign for two classes, the largest one-vs-rest score otherwise."""
        dec = self.decision_function(X)
        if len(self.classes_) == 2:
            return self.classes_[(dec > 0).astype(int)]
        return self.classes_[np.argmax(dec, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = True
        return tags


def _learned_result(run, final, kernel, inner, n_sv):
    """One binary problem's fitted model and diagnostics from its L-BFGS run and final inner solve."""
    return {"Z": run.Z, "beta": final.beta, "b": final.b, "history": run.history, "n_iter": run.n_iter,
            "converged": run.converged, "status": run.status, "evals": kernel.evals, "jitter": final.jitter, "n_sv": n_sv,
            "inner_iter": inner.n_iter}


_N_EXPANSION_DOC = """
    n_expansion : int or float, default=0.1
        N_z, the number of expansion vectors per binary problem: an integer, or a float in (0, 1]:
        that fraction of the support vectors of an SVC fitted with the same C and kernel (the paper's
        N_z / N_SV; the SVC is fitted for it)."""

_AUTO_EXPANSION_DOC = """
    n_expansion : 'auto', int or float, default='auto'
        N_z, the number of expansion vectors per binary problem. 'auto': min(N_SV / 10, sqrt(N)),
        N_SV the support vectors of an SVC fitted with the same C and kernel on the N training
        points: the paper's tenth of the support vectors on small sets; at 1e4-1e5 points, where
        N_SV grows with N, sqrt(N) (122 at 15,000 points, 317 at 1e5), which keeps the fit's steps
        O(N^2) and the model at a few hundred kernel values per prediction (measured in
        benchmarks/results/sparse.md). An integer, or a float in (0, 1]: that fraction of N_SV.
    budget : None, int or str, default=None
        The model size the fit may not exceed: an int caps N_z (per binary problem); a latency
        such as '20us' (units us, ms, s) caps it at the largest expansion whose prediction, measured
        on this machine at the start of the fit with the fitted kernel and ``n_jobs``, costs at
        most that per sample (for k > 2 classes, all k problems' vectors together). The fitted
        model reports its measured cost in ``prediction_cost_``. Not used with an array ``init``."""

_COMMON_DOC = """
    C : float, default=1.0
        The SVM's C in (37)-(39).
    kernel : {'rbf', 'poly', 'sigmoid', 'laplacian', 'linear'}, default='rbf'
        Every kernel with a gradient in z ('precomputed' has none). The sigmoid kernel is not
        positive definite: K^z is then jittered (see ``jitter_``).
    gamma, coef0, degree : as :class:`sparsekernel.SVC` (gamma 'scale' or 'auto' or a float).
    n_jobs : int or None, default=None
        Threads; the one-vs-rest problems of a multiclass fit run in parallel.
"""

_FITTED_DOC = """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    expansion_vectors_ : ndarray of shape (sum of N_z over the problems, n_features)
        The XVs, problem after problem (one problem for two classes, one per class otherwise). They
        need not be training points.
    dual_coef_ : ndarray of shape (n_problems, sum of N_z)
        beta of each problem in its own block (zeros elsewhere): decision_function(X) =
        K(X, expansion_vectors_) @ dual_coef_.T + intercept_; positive values mean classes_[1] for
        two classes (scikit-learn's SVC sign convention).
    intercept_ : ndarray of shape (n_problems,)
    n_expansion_ : ndarray of shape (n_problems,)
        N_z of each problem.
    n_support_reference_ : ndarray of shape (n_problems,) or None
        Support vectors of the reference SVC, when N_z was given as a fraction (or the baseline
        needs the SVC).
    objective_history_ : list of ndarray
        Per problem, the outer objective at the start and after every L-BFGS iteration.
    n_iter_ : ndarray of shape (n_problems,)
        Outer (L-BFGS) iterations.
    inner_iter_ : ndarray of shape (n_problems,)
        Passes (epochs) of the inner SVM solves' coordinate descent over the training points, over
        all outer iterations (plus the pair SMO's steps where it finished a solve, see ``InnerSVM``).
    converged_ : bool
        False when some problem stopped on max_iter.
    n_kernel_evals_ : int
        Evaluations of the kernel K (K^zx and K^z blocks; the inner solves work on phi_z).
    jitter_ : ndarray of shape (n_problems,)
        The diagonal jitter added to K^z (B^z for SparseKFD) at the final Z (0 when none was needed).
    fit_time_ : float
    prediction_cost_ : float
        Seconds per sample of ``predict`` measured after the fit on up to 2,048 training rows (the
        median of five passes; this machine, ``n_jobs``).
"""


class SLMC(_ExpansionClassifier):
    __doc__ = """Sparse large margin classifier (Wu, Schölkopf & Bakır 2006): an SVM whose weight vector is
    restricted to the span of N_z learned expansion vectors.

    The expansion vectors Z minimise the marginal function W(Z) (44), the optimum of the SVM
    (37)-(39) with the kernel K_z(x, x') = psi_z(x)' (K^z)^-1 psi_z(x') (40). W(Z) is evaluated by
    solving that SVM as a linear SVM with bias on the whitened empirical kernel map phi_z = T psi_z
    (41-43; T = L^-1 for the Cholesky factor K^z = L L') by dual coordinate descent on the N x N_z
    features (a step costs O(N_z); the bias free, by multiplier rounds), warm-started
    from the previous outer step's dual; its gradient (46) in closed form; Z by scipy's L-BFGS.
    beta = (K^z)^-1 Psi Y alpha (45) and b come from the final inner solve.

    Parameters
    ----------""" + _AUTO_EXPANSION_DOC + _COMMON_DOC + """
    init : {'kmeans', 'random'} or ndarray of shape (N_z, n_features), default='kmeans'
        Initial XVs: k-means centres (the paper's Table 2; one k-means++ start), distinct training
        points drawn at random (Table 1), or given (the array then sets N_z; n_expansion is
        ignored). k-means by default: on w8a (15,000 points, 3 % positives, 123 XVs) random
        points start W at 885 and end at 0.972 test accuracy (what predicting the majority class
        gives), k-means centres start at 616 and end at 0.981 (SVC: 0.986).
    max_iter : int, default=500
        Most outer L-BFGS iterations (the paper reports 20-200). Reaching it before the stopping
        rule (``tol``) holds ends the fit with a ConvergenceWarning and ``converged_ = False``. 0
        keeps the initial XVs and only computes beta and b (the paper's MRSVM / MRS for random /
        RS initial XVs).
    tol : float, default=3e-3
        The stopping rule: the fit stops, converged, at the first iteration k at which W has fallen
        by less than tol relative to |W| over the last 10 iterations, W(k-10) - W(k) < tol |W(k)|
        (by default: the last 10 iterations improved W by less than 0.3 %). It also stops, converged,
        when the line search finds no decrease (W is only as accurate as the inner solve). tol=0
        turns the rule off: the fit then runs max_iter iterations. W falls in plateaus and drops
        (an XV crossing a region of the data), so one iteration's decrease says little; looking 10
        iterations back rides out the plateaus. The default stops on the paper's seven data sets
        after 5-310 iterations, no test error there more than 0.33 points (german's one test
        point) worse than with the former fixed 100 iterations (300 on USPS), several better
        (benchmarks/results/slmc.md); ``n_iter_`` and ``objective_history_`` report the run.
    inner_tol : float, default=1e-3
        KKT tolerance of the inner SVM solves (SVC's tol).
    cache_size : float, default=200
        MB of kernel-row cache of the SVC fitted for N_z (when n_expansion is a fraction) and of the
        inner solves' pair SMO where it takes over from coordinate descent (close to hard-margin).
    random_state : int, RandomState or None
    verbose : bool, default=False
        Print W after each outer iteration (at most once a second).
    time_limit : float or None, default=None
        Seconds for the whole fit: the outer L-BFGS stops at the budget with a ConvergenceWarning and
        the model holds its last iterate (``converged_ = False``). Progress (outer iteration, W) also
        goes to scikit-learn's callbacks (``set_callbacks``).
    """ + _FITTED_DOC + """
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import train_test_split
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekernel import SLMC
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    >>> model = make_pipeline(StandardScaler(), SLMC(5, random_state=0)).fit(X_train, y_train)
    >>> model[-1].expansion_vectors_.shape  # 5 learned vectors: 5 kernel values per prediction
    (5, 30)
    >>> print(f"{model.score(X_test, y_test):.2f}")
    0.96
    """

    _stop_window = WINDOW
    _parameter_constraints: dict = {**_ExpansionClassifier._parameter_constraints, **_LEARNED}

    def __init__(self, n_expansion="auto", *, budget=None, C=1.0, kernel="rbf", gamma="scale", coef0=0.0, degree=3,
                 init="kmeans", max_iter=500, tol=3e-3, inner_tol=1e-3, cache_size=200, random_state=None,
                 n_jobs=None, verbose=False, time_limit=None):
        self.n_expansion = n_expansion
        self.budget = budget
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.inner_tol = inner_tol
        self.cache_size = cache_size
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.time_limit = time_limit

    def _fit_binary(self, X, y, rng, threads, token, progress=None):
        n_sv, Z0, kernel, inner = self._learned_start(X, y, rng, threads, token)
        objective = SLMCObjective(X, y, kernel, inner)
        run = minimise(objective, Z0, self.max_iter, self.tol, progress, window=self._stop_window)
        final = objective.evaluate(run.Z)  # beta (45) and b at the returned Z
        return _learned_result(run, final, kernel, inner, n_sv)


class SparseKFD(_ExpansionClassifier):
    __doc__ = """Sparse kernel Fisher discriminant (Wu, Schölkopf & Bakır 2006, Appendix A): the KFD direction
    restricted to the span of N_z learned expansion vectors.

    Z maximises the Rayleigh quotient beta' A^z beta / beta' B^z beta over beta and Z, i.e. minimises
    W(Z) = -(largest eigenvalue of (B^z)^-1 A^z) (57)-(62), with A the between-class and B the
    within-class covariance in feature space and B^ = B + mu I. For two classes A^z is rank one and
    the eigenvector is (B^z)^-1 d in closed form; gradient (63); Z by scipy's L-BFGS. As the
    appendix's last paragraph says, the classifier's beta and b then come from the SVM (37)-(39) on
    the found Z with C.

    Parameters
    ----------""" + _AUTO_EXPANSION_DOC + _COMMON_DOC + """
    mu : float, default=1e-4
        Regulariser of the within-class covariance, B^ = B + mu I (the paper gives no value). B is
        the covariance (scatter / N), so mu is on the kernel's scale whatever N. The default is the
        value 5-fold cross-validation over {1e-4, 1e-3, 1e-2, 1e-1} chose most often on the paper's
        six Rätsch sets (16 of 33 splits; the most frequent choice on titanic, german and image;
        benchmarks/results/slmc.md).
    init : {'kmeans', 'random'} or ndarray, default='kmeans'
        As :class:`SLMC`; k-means by default as the paper's Table 3.
    max_iter : int, default=500
        As :class:`SLMC`.
    tol : float, default=5e-3
        The stopping rule of :class:`SLMC`: the fit stops, converged, at the first iteration at
        which W (here minus the Rayleigh quotient) has fallen by less than tol relative to |W| over
        the last 10 iterations; tol=0 turns the rule off. At a small mu the quotient keeps creeping
        up for hundreds of iterations (the XVs keep fitting the within-class scatter) while the
        test error stays put; the default stops on the paper's six Rätsch sets after 10-320
        iterations with their test errors within 0.3 points or one test point of the former
        fixed 100 iterations (benchmarks/results/slmc.md).
    inner_tol, cache_size, random_state, verbose, time_limit : as :class:`SLMC`.
    """ + _FITTED_DOC + """
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import train_test_split
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekernel import SparseKFD
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    >>> skfd = SparseKFD(5, mu=1e-2, random_state=0)
    >>> model = make_pipeline(StandardScaler(), skfd).fit(X_train, y_train)
    >>> skfd.expansion_vectors_.shape
    (5, 30)
    >>> print(f"{model.score(X_test, y_test):.2f}")
    0.97
    """

    _init_default = "kmeans"
    _stop_window = WINDOW
    _parameter_constraints: dict = {**_ExpansionClassifier._parameter_constraints, **_LEARNED, "mu": [POSITIVE]}

    def __init__(self, n_expansion="auto", *, budget=None, mu=1e-4, C=1.0, kernel="rbf", gamma="scale", coef0=0.0,
                 degree=3, init="kmeans", max_iter=500, tol=5e-3, inner_tol=1e-3, cache_size=200, random_state=None,
                 n_jobs=None, verbose=False, time_limit=None):
        self.n_expansion = n_expansion
        self.budget = budget
        self.mu = mu
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.inner_tol = inner_tol
        self.cache_size = cache_size
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.time_limit = time_limit

    def _fit_binary(self, X, y, rng, threads, token, progress=None):
        n_sv, Z0, kernel, inner = self._learned_start(X, y, rng, threads, token)
        run = minimise(KFDObjective(X, y, kernel, self.mu), Z0, self.max_iter, self.tol, progress,
                       window=self._stop_window)
        final = SLMCObjective(X, y, kernel, inner).evaluate(run.Z)  # beta and b by (37)-(39), (45)
        return _learned_result(run, final, kernel, inner, n_sv)


class ReducedSetClassifier(_ExpansionClassifier):
    __doc__ = """The reduced-set baselines of the SLMC paper: RS (Burges 1996) and its modification MRS.

    A full SVC is fitted with C and the kernel; its weight vector w = sum_i a_i phi(x_i) is then
    approximated by N_z vectors: Z minimises ||w - sum_j beta_j phi(z_j)||^2 (4) with beta at its
    optimum (K^z)^-1 Psi a (47), by L-BFGS on all of Z jointly (gradient: the SLMC gradient (46)
    with alpha fixed at the SVC's), from ``n_init`` random draws of distinct support vectors; the
    draw with the smallest (4) is kept (the paper likewise kept the best of three RS codes).

    method='rs' keeps beta (47) and the SVC's b; method='mrs' computes beta and b by the SVM
    (37)-(39) on the found Z (45), as SLMC does (section 4.1).

    Parameters
    ----------""" + _N_EXPANSION_DOC + _COMMON_DOC + """
    method : {'rs', 'mrs'}, default='rs'
    n_init : int, default=3
        Random starts of the minimisation of (4).
    max_iter : int, default=200
        L-BFGS iterations per start.
    tol : float, default=1e-6
        A start stops when (4) fell by less than tol relative to max(|(4)|, 1) in one iteration
        (scipy's ftol), or when the line search finds no decrease.
    inner_tol, cache_size, random_state, verbose : as :class:`SLMC`.
    """ + _FITTED_DOC

    _parameter_constraints: dict = {**_ExpansionClassifier._parameter_constraints, **_ITERATIONS,
                                    "method": [StrOptions({"rs", "mrs"})],
                                    "n_init": [NumInterval(Integral, 1, None, closed="left")]}

    def __init__(self, n_expansion=0.1, *, method="rs", C=1.0, kernel="rbf", gamma="scale", coef0=0.0, degree=3,
                 n_init=3, max_iter=200, tol=1e-6, inner_tol=1e-3, cache_size=200, random_state=None, n_jobs=None,
                 verbose=False):
        self.n_expansion = n_expansion
        self.method = method
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.inner_tol = inner_tol
        self.cache_size = cache_size
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _fit_binary(self, X, y, rng, threads, token, progress=None):
        svc = self._reference_svc(X, y, threads)
        sv, a = svc.support_, svc._dual_coef[0] * -1.0  # w = sum_i a_i phi(x_i); f = w'phi + intercept_
        n_z = self._n_expansion(X.shape[0], len(sv))
        kernel, inner = self._machinery(X, y, n_z, threads, token)
        objective = ReducedSetObjective(X[sv], a, kernel)
        best = None
        for _ in range(self.n_init):
            Z0 = distinct_sample(X, n_z, rng, candidates=sv) if n_z <= len(sv) else distinct_sample(X, n_z, rng)
            run = minimise(objective, Z0, self.max_iter, self.tol, progress if self.n_init == 1 else None)
            if best is None or run.history[-1] < best.history[-1]:
                best = run
        if self.method == "rs":
            final = objective.evaluate(best.Z)
            final.b = float(svc.intercept_[0])
        else:
            final = SLMCObjective(X, y, kernel, inner).evaluate(best.Z)
        return {"Z": best.Z, "beta": final.beta, "b": final.b, "history": best.history, "n_iter": best.n_iter,
                "converged": best.converged, "evals": kernel.evals, "jitter": final.jitter, "n_sv": len(sv),
                "inner_iter": inner.n_iter}


class ReducedSVM(_ExpansionClassifier):
    __doc__ = """The reduced SVM baselines of the SLMC paper: RSVM (Lee & Mangasarian 2001; Lin & Lin 2003)
    and its modification MRSVM.

    Z is N_z distinct training points drawn at random (the same draw as ``SLMC(init='random')``
    with the same random_state). method='rsvm' trains a linear SVM on the empirical kernel map
    psi_z(x) = (K(z_1, x), ..., K(z_Nz, x)) -- the SMO engine with the linear kernel, hinge loss and
    an unregularised bias (LIBSVM tools' RSVM regularises the bias and uses a squared hinge) -- with
    its own C chosen by 5-fold cross-validation over ``Cs`` (the paper's protocol); ``C_selected_``
    reports it. method='mrsvm' computes beta and b by the SVM (37)-(39) on the same Z (45) with C
    (section 4.2), i.e. SLMC with max_iter=0.

    Parameters
    ----------""" + _N_EXPANSION_DOC + _COMMON_DOC + """
    method : {'rsvm', 'mrsvm'}, default='rsvm'
    Cs : sequence of float or None, default=None
        The RSVM's grid of C for its 5-fold cross-validation (None: 10^-2 ... 10^3).
    cv : int, default=5
    inner_tol, cache_size, random_state : as :class:`SLMC`.
    """ + _FITTED_DOC

    def __init__(self, n_expansion=0.1, *, method="rsvm", C=1.0, kernel="rbf", gamma="scale", coef0=0.0, degree=3,
                 Cs=None, cv=5, inner_tol=1e-3, cache_size=200, random_state=None, n_jobs=None):
        self.n_expansion = n_expansion
        self.method = method
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.Cs = Cs
        self.cv = cv
        self.inner_tol = inner_tol
        self.cache_size = cache_size
        self.random_state = random_state
        self.n_jobs = n_jobs

    _parameter_constraints: dict = {**_ExpansionClassifier._parameter_constraints,
                                    "method": [StrOptions({"rsvm", "mrsvm"})], "Cs": [None, "array-like"],
                                    "cv": [NumInterval(Integral, 2, None, closed="left")]}

    def _check_params(self):
        threads = super()._check_params()
        self._Cs()  # (the entries of the array Cs)
        return threads

    def _Cs(self):
        """The RSVM's grid of C: Cs, or 10^-2 ... 10^3 for None; a non-empty 1-D array of finite values > 0."""
        if self.Cs is None:
            return np.logspace(-2, 3, 6)
        Cs = np.asarray(self.Cs, dtype=np.float64)
        if Cs.ndim != 1 or len(Cs) == 0 or not np.all(np.isfinite(Cs)) or np.any(Cs <= 0):
            raise ValueError(f"Cs must be a non-empty sequence of positive floats, got {self.Cs!r}")
        return Cs

    def _fit_binary(self, X, y, rng, threads, token, progress=None):
        n_sv = int(self._reference_svc(X, y, threads).n_support_.sum()) if self._needs_reference_svc() else None
        n_z = self._n_expansion(X.shape[0], n_sv)
        Z = distinct_sample(X, n_z, rng)
        kernel, inner = self._machinery(X, y, n_z, threads, token)
        if self.method == "mrsvm":
            final = SLMCObjective(X, y, kernel, inner).evaluate(Z)
            beta, b, C_sel = final.beta, final.b, float(self.C)
        else:
            Psi_T = np.ascontiguousarray(kernel(Z, core_matrix(X)).T)  # rows psi_z(x_i)
            Cs = self._Cs()
            n_splits = int(min(self.cv, np.bincount((y > 0).astype(int)).min()))
            linear = SVC(kernel="linear", tol=float(self.inner_tol), cache_size=float(self.cache_size), n_jobs=threads)
            if n_splits >= 2 and len(Cs) > 1:
                search = GridSearchCV(linear, {"C": list(Cs)}, cv=StratifiedKFold(n_splits)).fit(Psi_T, y)
                model, C_sel = search.best_estimator_, float(search.best_params_["C"])
            else:
                C_sel = float(Cs[0])
                model = linear.set_params(C=C_sel).fit(Psi_T, y)
            beta = model.dual_coef_[0] @ model.support_vectors_  # w of the linear SVM = beta
            b = float(model.intercept_[0])
        return {"Z": Z, "beta": beta, "b": b, "history": [], "n_iter": 0, "converged": True, "evals": kernel.evals,
                "jitter": 0.0, "n_sv": n_sv, "inner_iter": inner.n_iter, "C": C_sel}

    def _store(self, results, n_features):
        super()._store(results, n_features)
        self.C_selected_ = np.array([r["C"] for r in results])
