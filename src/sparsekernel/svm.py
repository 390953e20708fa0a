"""Support vector machines on the SMO engine."""

from __future__ import annotations

from numbers import Integral, Real
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, OutlierMixin, RegressorMixin, is_regressor
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state, deprecated
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import _ovr_decision_function
from sklearn.utils._param_validation import Hidden, StrOptions
from sklearn.utils.validation import (
    _check_y,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from . import _dc, _fit
from ._engine import DualProblem, KernelSpec, SolverOptions
from ._memory import smo_budget
from ._warm import HeldOutScoring, restore_prefitted
from ._dask_rows import (check_range_task, checked_dask_matrix, dask_client, engine_rows, in_client, resident_rows,
                         solve_task)
from ._base import (
    CLASS_WEIGHT_CONSTRAINT,
    KERNEL_PARAM_CONSTRAINTS,
    KERNELS,
    MAX_ITER_CONSTRAINT,
    N_JOBS_CONSTRAINT,
    NON_NEGATIVE,
    POSITIVE,
    TIME_LIMIT_CONSTRAINT,
    CallbackSupportMixin,
    ConstrainedParamsMixin,
    Expansion,
    FitMonitor,
    KernelModelMixin,
    NumInterval,
    callable_gram,
    canonical_csr,
    class_labels,
    core_matrix,
    is_dask_array,
    ovo_pairs,
    per_sample_bounds,
    check_kernel_range,
    resolve_gamma,
    run_parallel,
    warn_if_stopped_early,
    with_callbacks,
)

SOLVERS = ("auto", "smo2", "smo1", "batched", "csmo", "dc")
SVR_SOLVERS = ("auto", "smo2", "smo1", "csmo", "dc")
ONE_CLASS_SOLVERS = ("auto", "smo2", "smo1", "batched", "csmo")
# the nu problems run plain pairs (the engine has no block selection or conjugate step for two equalities)
NU_SOLVERS = ("auto", "smo2", "smo1")
NUSVC_SOLVERS = NU_SOLVERS + ("batched",)  # the two-level route keeps the class sums too (its blocks span both)

# one-vs-one prediction through one (n_pairs, n_SV) coefficient matrix up to this many entries (128 MB)
_OVO_COEF_ENTRIES = 1 << 24

# The route 'auto' takes (benchmarks/bench_scaling.py, results/scaling.md): the two-level route on
# dense inputs of at least _BLOCK_MIN_FEATURES features and _BLOCK_MIN_ROWS rows, whose kernel rows it
# computes a block at a time with register-tiled products (a row at a time, each would stream all of
# X); the pair route elsewhere: on sparse or narrow inputs a kernel row is cheap (CSC passes,
# feature-major rows) and the pair route computes fewer of them.
_AUTO_ROUTE = "smo2"
#: 'auto' warm-started from solves of at least this many SMO steps per variable takes conjugate
#: directions ('csmo'), which need fewer steps where many are needed (a search's larger C). Measured
#: in PathSearchCV (benchmarks/results/path_defaults.md): csmo on every fit saved 7-13 % on a9a and
#: magic (3 and 6 steps per variable), lost 3-19 % on w8a and usps (0.5 and 0.02).
CONJUGATE_MIN_STEPS = 1.0
_BLOCK_MIN_FEATURES = 32
_BLOCK_MIN_ROWS = 2000
# SVC's 'auto' divides and conquers (solver='dc') dense rbf problems of at least this many rows on
# the pair route (benchmarks/bench_large.py, results/large.md: 0.78x the plain fit at 2e5 rows and
# 0.54x at 5e5, 0.48x at 1e6 on the 10-feature problem; slower at 1e5, and on the wide inputs of the batched
# route)
_DC_MIN_ROWS = 200_000


def _plus_minus(n):
    """The labels of eps-SVR's 2n variables (a+, a-): n times +1, then n times -1."""
    y = np.ones(2 * n)
    y[n:] = -1.0
    return y


def _nu_start(hi, total):
    """LIBSVM's initial point of the nu formulations: a_i = min(hi_i, what is left of ``total``),
    filled in order (solve_nu_svc, solve_nu_svr, solve_one_class)."""
    before = np.concatenate([[0.0], np.cumsum(hi)[:-1]])
    return np.clip(total - before, 0.0, hi)


def _ovo_votes(dec, n_classes):
    """Votes of the one-vs-one decision values (LIBSVM pair order, > 0 votes for the first class)."""
    votes = np.zeros((dec.shape[0], n_classes))
    for k, (a, b) in enumerate(ovo_pairs(n_classes)):
        votes[:, a] += dec[:, k] > 0
        votes[:, b] += dec[:, k] <= 0
    return votes


def _ovr_from_ovo(dec, n_classes):
    """One-vs-rest scores from one-vs-one decision values (positive meaning the pair's first class):
    votes plus a tie-breaking confidence in (-1/3, 1/3), by scikit-learn's own function (a zero
    decision value votes for the first class there, unlike the LIBSVM vote of ``_ovo_votes``)."""
    return _ovr_decision_function(dec < 0, -dec, n_classes)


def _pairwise_coupling(r, n_classes):
    """Class probabilities from pairwise ones (Wu, Lin & Weng 2004, method 2, as LIBSVM's
    multiclass_probability): r[:, k] = P(a | a or b, x) for the k-th pair (a, b); p minimises
    sum_{i != j} (r_ji p_i - r_ij p_j)^2 = p'Qp subject to sum(p) = 1, solved exactly here as the
    KKT system [[Q, 1], [1', 0]] [p; mu] = [0; 1] for every sample at once (LIBSVM iterates to a
    tolerance of 0.005 / n_classes)."""
    n = r.shape[0]
    R = np.zeros((n, n_classes, n_classes))  # R[:, i, j] = P(i | i or j)
    for k, (a, b) in enumerate(ovo_pairs(n_classes)):
        R[:, a, b] = r[:, k]
        R[:, b, a] = 1.0 - r[:, k]
    Q = -R.transpose(0, 2, 1) * R                      # Q_tj = -r_jt r_tj
    idx = np.arange(n_classes)
    Q[:, idx, idx] = (R.transpose(0, 2, 1) ** 2).sum(axis=2) - R[:, idx, idx] ** 2  # Q_tt = sum_{j != t} r_jt^2
    M = np.zeros((n, n_classes + 1, n_classes + 1))
    M[:, :n_classes, :n_classes] = Q
    M[:, :n_classes, n_classes] = 1.0
    M[:, n_classes, :n_classes] = 1.0
    rhs = np.zeros((n, n_classes + 1, 1))
    rhs[:, n_classes] = 1.0
    p = np.linalg.solve(M, rhs)[:, :n_classes, 0]
    return np.clip(p, 0.0, 1.0) / np.clip(p, 0.0, 1.0).sum(axis=1, keepdims=True)


# Platt scaling of SVC(probability=True): LIBSVM's 5-fold cross-validated decision values, its
# clipping of the pairwise probabilities
_PLATT_FOLDS = 5
_PLATT_MIN_PROB = 1e-7

_NONFINITE_MODEL = ("The dual coefficients or intercepts are not finite. The input data may contain large values and "
                    "need to be preprocessed.")


# the constraints of the parameters that some formulations have: C > 0 (inf: a hard margin); nu in
# (0, 1]; the warm starts and the divided solve's early stop of the formulations that take them
_C = {"C": [NumInterval(Real, 0.0, None, closed="right")]}
_NU = {"nu": [NumInterval(Real, 0.0, 1.0, closed="right")]}
_WARM = {"warm_start": ["boolean"], "early_stop_level": [None, NumInterval(Integral, 1, None, closed="left")]}


class _BaseSMO(ConstrainedParamsMixin, CallbackSupportMixin, KernelModelMixin, BaseEstimator):
    """What SVC and SVR share: parameter checks, the route, warm starts and the engine calls."""

    _solvers = SOLVERS

    # the parameters of every SMO estimator (scikit-learn's BaseLibSVM._parameter_constraints, with
    # the kernels of the engine, gamma > 0, degree below 2**31, n_jobs not 0, max_iter -1 or > 0);
    # each formulation adds its own (C, nu, epsilon, probability, ...) and names its solvers
    _parameter_constraints: dict = {
        "kernel": [StrOptions(set(KERNELS)), callable],
        **KERNEL_PARAM_CONSTRAINTS,
        "tol": [POSITIVE],
        "shrinking": ["boolean"],
        "cache_size": [POSITIVE],
        "verbose": ["verbose"],
        "max_iter": MAX_ITER_CONSTRAINT,
        "solver": [StrOptions(set(_solvers))],
        "n_jobs": N_JOBS_CONSTRAINT,
        "time_limit": TIME_LIMIT_CONSTRAINT,
    }

    # whether a fit may start from a previous solution (a search's or warm_start's): not for the nu
    # formulations, whose start fixes the sums of a that the solve keeps
    _warm_starts = True
    # whether 'auto' takes the divided route on large dense inputs (SVC: measured; _DC_MIN_ROWS)
    _auto_divides = False
    # the memory budget's bytes per sample (the engine's vectors over N variables, SVR's over 2N:
    # _memory.smo_budget) and its multiple of bytes(X)
    _budget_per_sample = 256
    _budget_x_copies = 2.0

    def _fit_budget(self, X, n_splits=None):
        """The stated memory budget of a fit on X (sparsekernel._memory.fit_budget)."""
        return smo_budget(self, X, self._budget_x_copies, self._budget_per_sample, n_splits)

    def _probability_on(self):
        return getattr(self, "probability", False) is True or getattr(self, "probability", False) is np.True_

    def _check_cross_params(self):
        """The rules over several parameters: the divided solve's (solver='dc') early stop, and X
        it needs."""
        early = getattr(self, "early_stop_level", None)
        if early is not None:
            if self.solver != "dc":
                raise ValueError(f"early_stop_level applies to solver='dc' only, got solver={self.solver!r}")
            if self._probability_on():
                raise ValueError("early_stop_level does not combine with probability=True (the clusters' models "
                                 "have no common decision values to calibrate)")
        if self.solver == "dc" and self._kernel_name() == "precomputed":
            raise ValueError("solver='dc' clusters the points in the kernel's feature space: it needs X, not a "
                             "precomputed or callable kernel")

    def _fit_warmth(self, X, y, sample_weight, search_rows):
        """The fit's FitWarmth (``_fit.fit_warmth``); without its warm starts for the formulations
        that take none (a search's sessions, shared kernel rows, deadline and threads still apply)."""
        warmth = _fit.fit_warmth(self, X, y, sample_weight, search_rows)
        return warmth if self._warm_starts else warmth.cold()

    def _solve_one(self, X, y, sample_weight, search_rows, problem, threads):
        """Solve the fit's one dual problem (SVR, NuSVR, OneClassSVM): its SolveResult."""
        warmth = self._fit_warmth(X, y, sample_weight, search_rows)
        threads = warmth.fit_threads(threads)
        monitor = self._monitor(1, threads, X, y, warmth)
        (r,) = self._solve_problems(X, [problem], threads, warmth, monitor)
        monitor.close()
        return r

    def _store_expansion(self, X, coef, rho, r, inputs):
        """The model f(x) = sum_i coef_i K(x_i, x) - rho of a one-problem fit, on its support vectors."""
        support = np.flatnonzero(coef != 0)
        self.support_ = support.astype(np.int32)
        self.n_support_ = np.array([len(support)], dtype=np.int32)
        self._dual_coef = coef[support][None, :]
        self._intercept = np.array([-rho])
        self._check_finite_model()
        self.dual_coef_ = self._public_coef(self._dual_coef)
        self.intercept_ = self._intercept
        self._set_support_vectors(X, support, inputs)
        self.n_iter_ = int(r.n_iter)
        self._store_diagnostics([r])
        self._keep_early_model(X, [r])

    def _monitor(self, n_problems, threads, X, y, warmth):
        """The fit's progress hook (time_limit, verbose, callbacks) over its binary problems (a
        PathSearchCV with a time_limit bounds its fits: ``warmth.deadline``)."""
        return FitMonitor(self, n_problems, tol=float(self.tol), X=X, y=y,
                          parallel=threads > 1 and n_problems >= threads, deadline=warmth.deadline)

    def _route(self, X=None):
        """The engine route of a fit on X ('auto' resolved as above)."""
        if self.solver != "auto":
            return self.solver
        if (self._auto_divides and X is not None and not sp.issparse(X) and X.ndim == 2
                and self._kernel_name() == "rbf" and X.shape[0] >= _DC_MIN_ROWS and self._plain_route(X) == "smo2"):
            return "dc"
        return self._plain_route(X)

    def _plain_route(self, X=None):
        """The route of the solves themselves ('dc' divides the problem, then solves on this one)."""
        if self.solver not in ("auto", "dc"):
            return self.solver
        if (X is not None and "batched" in self._solvers and not sp.issparse(X)
                and self._kernel_name() != "precomputed" and X.ndim == 2
                and X.shape[1] >= _BLOCK_MIN_FEATURES and X.shape[0] >= _BLOCK_MIN_ROWS):
            return "batched"
        return _AUTO_ROUTE

    def _decision_values(self, X, coef, intercept):
        """The expansion's decision values; a model stopped at a level of the divided solve
        (``early_stop_level``) predicts each point by the model of its cluster. A fit of a search
        scored on its fold's own rows reads the kernel values from the search's kept rows
        (``_warm.HeldOutScoring``)."""
        early = self.__dict__.get("_early")
        if early is not None:
            return early.decision(self, X, coef)
        held_out = self.__dict__.get("_held_out")
        if held_out is not None:
            X = self._validate_X(X, ensure_all_finite=False)
            out = held_out.decision(X, self.support_, coef.toarray() if sp.issparse(coef) else coef, intercept)
            if out is not None:
                return out
        return super()._decision_values(X, coef, intercept)

    def _expansion(self):
        """The fitted model as one kernel expansion (``_base.Expansion``): f = sum_i coef_i K(x_i, x) - rho
        (SVR, NuSVR, OneClassSVM; the classifiers' pairs in ``_BaseSVC``)."""
        return Expansion(*self._expansion_kernel(), self.support_vectors_, self._dual_coef, self._intercept)

    def _expansion_kernel(self):
        """(kernel, gamma, coef0, degree) of the expansion; a model stopped at a level of the divided
        solve has none (each point is predicted by its cluster's model)."""
        if self.__dict__.get("_early") is not None:
            raise ValueError(f"{type(self).__name__} fitted with early_stop_level has no single kernel expansion: it "
                             "predicts each point by its cluster's model")
        return self.kernel, self._gamma, self.coef0, self.degree

    def _keep_early_model(self, X, results):
        """After a fit stopped at a level (``early_stop_level``): the clusters' offsets, per problem,
        the cluster of every support vector, and the tree with its sample as the fit's X has it
        (the engine may have read X shifted by its columns' modes: prediction routes X itself)."""
        self._early = None
        if results and results[0].cluster_rho is not None:
            partition = results[0].partition  # (the same tree for all the fit's problems)
            level = int(self.early_stop_level)
            sv_cluster = partition.labels[level - 1][self.support_]
            partition.labels = []  # the training rows' clusters: prediction routes its own points
            partition.sample_X = X[partition.sample_rows]
            self._early = _dc.EarlyModel(partition, level, sv_cluster, -np.stack([r.cluster_rho for r in results], axis=1))

    def _kernel_name(self):
        """The kernel the engine runs: a callable kernel's Gram matrix is a precomputed kernel."""
        return "precomputed" if callable(self.kernel) else self.kernel

    def _kernel_spec(self):
        if self._kernel_name() == "precomputed":
            return KernelSpec("precomputed")
        return KernelSpec(self._kernel_name(), self._gamma, self.coef0, self.degree)

    def _validate_fit_input(self, X, y, y_numeric=False, *, targets=True):
        """X and y for fit, and the raw inputs of a callable kernel (X is then its Gram matrix).
        ``targets`` False: a fit without targets (OneClassSVM), X alone is validated (y is None)."""
        if sp.issparse(X) and self.kernel == "precomputed":
            raise TypeError("Sparse precomputed kernels are not supported.")
        inputs = None
        if callable(self.kernel):
            if targets:
                check_consistent_length(X, y)
            inputs, X = X, callable_gram(self.kernel, X, X)
            if targets:
                y = column_or_1d(y, warn=True)
                if y_numeric:
                    y = np.asarray(y, dtype=np.float64)
        elif not targets:
            X = validate_data(self, X, accept_sparse=self._accept_sparse(), dtype=[np.float64, np.float32], order="C")
        else:
            X, y = validate_data(self, X, y, accept_sparse=self._accept_sparse(), dtype=[np.float64, np.float32],
                                 order="C", y_numeric=y_numeric)
        self._check_precomputed(X, fit=True)
        if sp.issparse(X):
            X = canonical_csr(X)
        self._sparse_fit = sp.issparse(X)
        self._gamma = 0.0 if self._kernel_matrix_input() else resolve_gamma(self.gamma, X)
        if self._gamma == 0.0 and not self._kernel_matrix_input():  # 'scale' with X.var() = inf
            raise ValueError(f"{_NONFINITE_MODEL} (gamma='scale' = 1 / (n_features * X.var()) is 0: X.var() "
                             "overflows float64)")
        if not self._kernel_matrix_input():
            check_kernel_range(self.kernel, self._gamma, float(self.coef0), int(self.degree), X)
        self.shape_fit_ = X.shape if inputs is None else getattr(inputs, "shape", (X.shape[0],))
        return X, y, inputs

    def _public_coef(self, coef):
        """dual_coef_ as scikit-learn keeps it: scipy sparse after a fit on sparse X."""
        return sp.csr_matrix(coef) if self._sparse_fit else coef

    def _check_finite_model(self):
        if not (np.isfinite(self._dual_coef).all() and np.isfinite(self._intercept).all()):
            raise ValueError(_NONFINITE_MODEL)

    @property
    def coef_(self):
        """Weights of the primal problem, (n_problems, n_features): only for the linear kernel
        (read-only; scipy sparse when fitted on sparse X)."""
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        coef = self._primal_coef()
        if sp.issparse(coef):
            coef.data.flags.writeable = False
        else:
            coef.flags.writeable = False
        return coef

    def _solve_problems(self, X, problems, threads, warmth=None, monitor=None):
        """Solve the dual problems (DualProblems over rows of X) on the engine, warm-started where
        ``warmth`` (``_fit.FitWarmth``) has a previous solution on the same data. Returns
        SolveResults."""
        kernel = self._kernel_spec()
        if kernel.name != "precomputed":
            # a dense X of mostly zeros (or one value per column): CSR; once per fold in a Pipeline's search
            X = _fit.fit_storage(X, kernel.name, warmth, threads)
        options, workers = self._solver_options(X, [len(p.y) for p in problems], threads, warmth)
        self._held_out = None
        if warmth is not None and warmth.rows is not None and kernel.name != "precomputed":
            # a fit on rows of its search's training set: scored from the search's kernel rows
            self._held_out = HeldOutScoring(warmth.store, kernel, warmth.rows, threads)
        divide = self._divide(X, kernel, threads, workers) if self.solver_ == "dc" else None
        return _fit.solve_problems(X, kernel, problems, options, warmth=warmth, monitor=monitor, workers=workers,
                                      divide=divide)

    def _solver_options(self, X, sizes, threads, warmth=None):
        """The engine's SolverOptions for the fit's problems on X (as the engine stores it: only its
        type and shape are read) and how many problems are solved at once; sets ``solver_``.
        'auto' takes conjugate directions ('csmo') for a warm start from solves that needed at least
        CONJUGATE_MIN_STEPS steps per variable (a path's or a search's larger C)."""
        n_problems = len(sizes)
        workers = _fit.problem_workers(X, sizes, threads)
        self.solver_ = self._route(X)
        route = self._plain_route(X)
        if (self.solver == "auto" and route == _AUTO_ROUTE and "csmo" in self._solvers and warmth is not None
                and warmth.warm and warmth.steps_per_variable(n_problems) >= CONJUGATE_MIN_STEPS):
            self.solver_ = "csmo" if self.solver_ == route else self.solver_
            route = "csmo"
        each_threads, each_cache = _fit.threads_and_cache(threads, self.cache_size, workers)
        options = SolverOptions(tol=float(self.tol), max_iter=int(self.max_iter), shrinking=bool(self.shrinking),
                                second_order=route != "smo1", batched=route == "batched",
                                pair_start=self.solver == "auto",  # (read by the batched route only)
                                working_set_size=int(getattr(self, "working_set_size", 0) or 0),
                                conjugate=route == "csmo", cache_mb=each_cache, threads=each_threads)
        return options, workers

    def _divide(self, X, kernel, threads, workers, build=_dc.build_partition):
        """The fit's _dc.Divide: its rows' cluster tree (the same for all its problems; a fixed seed,
        so that fits repeat), the level to stop at and the threads for a level's clusters. ``build``
        makes the tree of X's rows (``sparsekernel.dask`` builds it from row blocks on workers)."""
        k = _dc.CHILDREN
        stop = getattr(self, "early_stop_level", None) or 0
        # an early model's tree has just its levels: its clusters are solved from scratch, which
        # needed fewer kernel values than climbing from smaller ones (1e5 rows, level 1: 1.1e9 against 1.7e9)
        levels = stop or _dc.n_levels_for(X.shape[0], k)
        partition = build(X, kernel, k, levels, np.random.RandomState(0), threads)
        return _dc.Divide(partition, stop_level=stop, workers=max(1, threads // workers))

    def _fit_dask(self, X, y, sample_weight):
        """A fit on a dask array X: solver='dc' (DC-SVM) solves its clusters where the row blocks
        live (a distributed Client must be running: the current one); the other solvers need X in
        memory.

        The model equals the in-memory ``solver='dc'`` fit on X.compute(): the same cluster tree (its
        sample, at most ``_dc._MAX_SAMPLE`` rows, clustered in the client with the same random state;
        every block routes its own rows on its worker), the same problems solved from the same
        starts, on the same rows in the same order: each cluster's problem of a level is one task
        on a worker that assembles the cluster's rows from the blocks, and the whole problem, last,
        is solved on one worker (``_dask_rows``). gamma='scale' is a blocked reduction, equal to the
        in-memory X.var() up to the order of its sums (a numeric gamma gives the in-memory model bit
        for bit). The client holds y, the sample weights and the row labels (O(n)), the sample of
        the clustering, the solutions and the support vectors; never X. ``dc_workers_`` names the
        workers that solved the levels' clusters. The fit starts cold (``warm_start`` applies to
        in-memory fits), ``time_limit`` bounds its solves, it reports no progress, and
        probability=True is refused."""
        name = type(self).__name__
        if self.solver != "dc":
            raise ValueError(f"{name}.fit got a dask array X: only solver='dc' (SVC, SVR) and NSSVC "
                             f"fit on dask arrays, got solver={self.solver!r} (or fit on X.compute())")
        t0 = time.perf_counter()
        threads = self._check_params()
        if getattr(self, "probability", False) is True or getattr(self, "probability", False) is np.True_:
            raise ValueError("probability=True (Platt scaling by an in-memory cross-validation) does not fit on a dask "
                             "array; calibrate the fitted model instead")
        X, (n, d) = checked_dask_matrix(X)
        if n == 0 or d == 0:
            raise ValueError(f"Found array with shape {(n, d)}; {name} needs at least one sample and one feature")
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: d})
        y = _check_y(in_client(y), y_numeric=is_regressor(self), estimator=self)
        check_consistent_length(np.empty((n, 0)), y)
        sample_weight = in_client(sample_weight)

        client = dask_client(None, f"{name}.fit")
        blocks, rows, nonzero = resident_rows(client, X)
        engine = rows
        try:
            # what _validate_fit_input keeps of X
            self.__dict__.pop("feature_names_in_", None)
            self.n_features_in_ = d
            self._sparse_fit = rows.sparse
            if self.gamma == "scale":  # (as _base.resolve_gamma, by a blocked two-pass reduction)
                var = blocks.variance()
                self._gamma = 1.0 / (d * var) if var != 0 else 1.0
            else:
                self._gamma = resolve_gamma(self.gamma, np.zeros((0, d)))
            if self._gamma == 0.0:
                raise ValueError(f"{_NONFINITE_MODEL} (gamma='scale' = 1 / (n_features * X.var()) is 0: X.var() "
                                 "overflows float64)")
            if self.kernel in ("linear", "poly"):
                client.gather([client.submit(check_range_task, xb, self.kernel, self._gamma, float(self.coef0),
                                             int(self.degree), pure=False) for xb in blocks.blocks])
            self.shape_fit_ = (n, d)

            problems, layout = self._problems(y, sample_weight, n)
            kernel = self._kernel_spec()
            engine = engine_rows(client, rows, kernel.name, nonzero)
            options, workers = self._solver_options(engine.like(), [len(p.y) for p in problems], threads)
            divide = self._divide(engine, kernel, threads, workers, build=engine.build_partition)
            cluster_options = divide.cluster_options(options)
            used = set()
            limit = None if self.time_limit is None else float(self.time_limit)

            def submit(idx, problem, opts, a0, start, time_limit):
                order = None
                if idx is not None and np.any(np.diff(idx) < 0):
                    order = np.argsort(np.argsort(idx, kind="stable"), kind="stable")
                    idx = np.sort(idx)
                return client.submit(solve_task, engine.pieces(idx), order, kernel, problem, opts, a0, start,
                                     time_limit, pure=False)

            def solve_one(problem, _token):
                def solve_clusters(tasks, time_limit):
                    futures = [submit(t.problem.idx, t.problem, cluster_options, t.a0, t.start, time_limit)
                               for t in tasks]
                    out = client.gather(futures)
                    used.update(address for _, address in out)
                    return [r for r, _ in out]

                def solve_whole(a0, time_limit, start=None):
                    (r, _), = client.gather([submit(problem.idx, problem, options, a0, start, time_limit)])
                    return r

                remaining = 0.0 if limit is None else max(limit - (time.perf_counter() - t0), 1e-3)
                return divide.solve(problem, solve_clusters=solve_clusters, solve_whole=solve_whole,
                                    time_limit=remaining)

            results = run_parallel(solve_one, problems, max(1, len(problems)))
            self._store_solutions(rows, layout, results)
        finally:
            futures = list(blocks.blocks) + ([] if engine is rows else list(engine.blocks))
            for f in futures:
                f.release()
        self.dc_workers_ = used
        self.fit_time_ = time.perf_counter() - t0
        self._warn_if_not_converged()
        return self

    def _store_diagnostics(self, results):
        self.n_kernel_evals_ = np.array([r.kernel_evals for r in results], dtype=np.int64)
        self.dual_objective_ = np.array([r.obj for r in results])
        self.kkt_gap_ = np.array([r.gap for r in results])
        self.converged_ = all(r.status == 0 for r in results)
        self.solver_stats_ = [r.stats() for r in results]
        self.fit_status_ = 0 if self.converged_ else 1

    def _warn_if_not_converged(self):
        warn_if_stopped_early(self, [s["status"] for s in self.solver_stats_],
                              "Solver terminated early (max_iter=%d).  Consider pre-processing your data with "
                              "StandardScaler or MinMaxScaler." % self.max_iter)  # scikit-learn's words

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_warm_store", None)  # a warm start is a property of this process's last fit
        state.pop("_held_out", None)  # its search's scoring: of this process, during the search
        return state


class _BaseSVC(ClassifierMixin, _BaseSMO):
    """What SVC and NuSVC share: the one-vs-one pairs (LIBSVM's order and layout), Platt scaling and
    prediction. A subclass names its formulation: the bounds C_i (``_bounds``), the dual problem of
    a pair (``_pair_problem``) and the model coefficients of its solution (``_pair_solution``)."""

    _parameter_constraints: dict = {
        **_BaseSMO._parameter_constraints,
        "probability": ["boolean", Hidden(StrOptions({"deprecated"}))],
        "class_weight": CLASS_WEIGHT_CONSTRAINT,
        "decision_function_shape": [StrOptions({"ovr", "ovo"})],
        "break_ties": ["boolean"],
        "random_state": ["random_state"],
    }

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        threads = super()._check_params()
        if self.probability != "deprecated":
            name = type(self).__name__
            warnings.warn("The `probability` parameter was deprecated in 1.9 and will be removed in version 1.11. "
                          f"Use `CalibratedClassifierCV({name}(), ensemble=False)` instead of `{name}(probability=True)` "
                          "(or sparsekernel.KernelLogisticRegression for probabilities from one fit)", FutureWarning)
        return threads

    def _class_weights(self, y_enc):
        """class_weight_ as scikit-learn keeps it: the weight of every class (ones for None)."""
        if self.class_weight is None:
            return np.ones(len(self.classes_))
        return compute_class_weight(self.class_weight, classes=self.classes_, y=self.classes_[y_enc])

    def _check_pairs(self, Ci, y_enc, pairs):
        """Refuse a formulation infeasible on some pair (nothing to check for C-SVC)."""

    # ------------------------------------------------------------------ fit
    @with_callbacks
    def fit(self, X, y, sample_weight=None, *, search_rows=None):
        """Fit the model on X (dense or CSR; a kernel matrix for 'precomputed') and labels y.

        ``search_rows`` is set by sparsekernel's searches only (``sparsekernel._warm.SearchRows``)."""
        if is_dask_array(X):
            return self._fit_dask(X, y, sample_weight)
        if restore_prefitted(self, X, y, sample_weight, search_rows):  # made on a cluster by a PathSearchCV
            return self
        t0 = time.perf_counter()
        threads = self._check_params()
        X, y, inputs = self._validate_fit_input(X, y)
        problems, layout = self._problems(y, sample_weight, X.shape[0])
        warmth = self._fit_warmth(X, y, sample_weight, search_rows)
        threads = warmth.fit_threads(threads)
        monitor = self._monitor(len(problems), threads, X, y, warmth)
        results = self._solve_problems(X, problems, threads, warmth, monitor)
        monitor.close()
        self._store_solutions(X, layout, results, inputs)
        if self.probability is True or self.probability is np.True_:
            self._probA, self._probB = self._fit_platt(X, problems, threads)
        self.fit_time_ = time.perf_counter() - t0
        self._warn_if_not_converged()
        return self

    def _problems(self, y, sample_weight, n):
        """The fit's dual problems, one per pair of classes (LIBSVM's order), and the layout the
        model is stored by: (problems, (y_enc, pairs)). Sets classes_ and class_weight_."""
        self.classes_, y_enc = class_labels(y)
        if len(self.classes_) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {len(self.classes_)} class")
        self.class_weight_ = self._class_weights(y_enc)
        Ci = self._bounds(y_enc, sample_weight, n)
        pairs = ovo_pairs(len(self.classes_))
        self._check_pairs(Ci, y_enc, pairs)  # (LIBSVM checks nu before it removes the samples of weight <= 0)
        if len(np.unique(y_enc[Ci > 0])) < 2:
            raise ValueError("Invalid input - all samples with positive weights belong to the same class (weights "
                             "are sample_weight times class_weight)")
        problems = []
        for a, b in pairs:
            idx = np.flatnonzero((y_enc == a) | (y_enc == b))
            problems.append(self._pair_problem(np.where(y_enc[idx] == a, 1.0, -1.0), np.ascontiguousarray(Ci[idx]),
                                               idx))
        return problems, (y_enc, pairs)

    def _store_solutions(self, X, layout, results, inputs=None):
        """The model from the pairs' solutions (no Platt scaling yet)."""
        y_enc, pairs = layout
        self._store_model(X, y_enc, pairs, results, inputs)
        self._check_finite_model()
        self._probA, self._probB = np.empty(0), np.empty(0)

    def _store_model(self, X, y_enc, pairs, results, inputs=None):
        """Keep only the support vectors, in LIBSVM's layout (grouped by class)."""
        n_classes = len(self.classes_)
        n = X.shape[0]
        coef_full = np.zeros((max(1, n_classes - 1), n))
        is_sv = np.zeros(n, dtype=bool)
        rho = np.empty(len(pairs))
        for k, ((a, b), r) in enumerate(zip(pairs, results)):
            idx, yp = r.idx, r.y
            coef, rho[k] = self._pair_solution(r)
            is_sv[idx[r.alpha > 0]] = True
            # coefficients of class-a SVs go to row b-1, those of class-b SVs to row a (LIBSVM)
            in_a = yp > 0
            coef_full[b - 1, idx[in_a]] = coef[in_a]
            coef_full[a, idx[~in_a]] = coef[~in_a]
        order = np.lexsort((np.arange(n), y_enc))
        support = order[is_sv[order]]
        self.support_ = support.astype(np.int32)
        self.n_support_ = np.bincount(y_enc[support], minlength=n_classes).astype(np.int32)
        self._dual_coef = coef_full[:, support]
        self._intercept = -rho
        self._set_support_vectors(X, support, inputs)
        sign = -1.0 if n_classes == 2 else 1.0  # scikit-learn's binary convention: decision > 0 means classes_[1]
        self.dual_coef_ = self._public_coef(sign * self._dual_coef)
        self.intercept_ = sign * self._intercept
        self.n_iter_ = np.array([r.n_iter for r in results], dtype=np.int64)
        self._store_diagnostics(results)
        self._keep_early_model(X, results)

    def _fit_platt(self, X, problems, threads):
        """Platt scaling of every pairwise problem, as LIBSVM's svm_binary_svc_probability: decision
        values of the pair's (positively weighted) samples from a 5-fold cross-validation, folds drawn
        from random_state, then the sigmoid P(a | f) = 1 / (1 + exp(A f + B)) fitted to them by
        scikit-learn's Platt code (calibration._sigmoid_calibration). Returns (A, B) per pair."""
        from sklearn.calibration import _sigmoid_calibration  # (heavy: 90 ms, imported when used)

        rng = check_random_state(self.random_state)
        tasks, sub = [], []
        dec = [np.zeros(len(pr.idx)) for pr in problems]
        live = [np.flatnonzero(pr.hi > 0) for pr in problems]
        for k, pr in enumerate(problems):
            perm = live[k][rng.permutation(len(live[k]))]
            for f in range(_PLATT_FOLDS):
                test = perm[f * len(perm) // _PLATT_FOLDS:(f + 1) * len(perm) // _PLATT_FOLDS]
                train = np.setdiff1d(live[k], test)
                y_train = pr.y[train]
                if np.all(y_train > 0) or np.all(y_train < 0):  # one class (or none) left: LIBSVM's +-1 / 0
                    dec[k][test] = np.sign(y_train.sum()) if len(train) else 0.0
                    continue
                tasks.append((k, test))
                sub.append(self._pair_problem(y_train, pr.hi[train], pr.idx[train]))
        for (k, test), r in zip(tasks, self._solve_problems(X, sub, threads)):
            dec[k][test] = self._problem_decision(X, r, problems[k].idx[test])
        AB = [_sigmoid_calibration(dec[k][live[k]], (pr.y[live[k]] > 0).astype(np.float64))
              for k, pr in enumerate(problems)]
        return np.array([a for a, _ in AB]), np.array([b for _, b in AB])

    def _problem_decision(self, X, r, rows):
        """sum_i y_i a_i K(x_i, x) - rho of one solved problem at the training points ``rows``."""
        sv = r.alpha > 0
        coef, rho = self._pair_solution(r)
        coef, sv_rows = coef[sv], r.idx[sv]
        if self._kernel_matrix_input():
            return X[np.ix_(rows, sv_rows)] @ coef - rho
        B = X[sv_rows]
        return self._evaluator().decision(X[rows], B, core_matrix(B), coef[None, :], np.array([-rho]))[:, 0]

    def _primal_coef(self):
        """w of every one-vs-one problem (scikit-learn's sign for two classes)."""
        W = self._ovo_coef()
        coef = safe_sparse_dot(sp.csr_matrix(W) if self._sparse_fit else W, self.support_vectors_)
        return -coef if len(self.classes_) == 2 else coef

    # ------------------------------------------------------------------ probabilities (deprecated API)
    def _check_proba(self):
        if self.probability == "deprecated" or not self.probability:
            raise AttributeError("predict_proba is not available when probability=False")
        return True

    @available_if(_check_proba)
    def predict_proba(self, X):
        """Class probabilities (columns in the order of ``classes_``) from the Platt sigmoids of the
        pairwise decision values, coupled for more than two classes. Only with probability=True.
        They come from a cross-validation, so their argmax can differ from ``predict``."""
        check_is_fitted(self)
        if self._probA.size == 0 or self._probB.size == 0:
            raise NotFittedError("predict_proba is not available when fitted with probability=False")
        dec = self._ovo_decision(X)
        r = np.clip(1.0 / (1.0 + np.exp(dec * self._probA + self._probB)), _PLATT_MIN_PROB, 1.0 - _PLATT_MIN_PROB)
        if len(self.classes_) == 2:
            return np.column_stack([r[:, 0], 1.0 - r[:, 0]])
        return _pairwise_coupling(r, len(self.classes_))

    @available_if(_check_proba)
    def predict_log_proba(self, X):
        """log(predict_proba(X))."""
        return np.log(self.predict_proba(X))

    @deprecated("Attribute `probA_` was deprecated in version 1.9 and will be removed in 1.11 as the "
                "`probability=True` option for SVC and NuSVC was deprecated and will be removed in 1.11.")
    @property
    def probA_(self):
        """A of Platt's sigmoid per pairwise problem (empty without probability=True)."""
        return self._probA

    @deprecated("Attribute `probB_` was deprecated in version 1.9 and will be removed in 1.11 as the "
                "`probability=True` option for SVC and NuSVC was deprecated and will be removed in 1.11.")
    @property
    def probB_(self):
        """B of Platt's sigmoid per pairwise problem (empty without probability=True)."""
        return self._probB

    # ------------------------------------------------------------------ prediction
    def _ovo_coef(self):
        """The one-vs-one decision values as one kernel expansion: row k holds the coefficients of pair
        (a, b) on the support vectors (LIBSVM's layout: class a's vectors weigh with row b - 1 of the
        dual coefficients, class b's with row a)."""
        starts = np.concatenate([[0], np.cumsum(self.n_support_)])
        pairs = ovo_pairs(len(self.classes_))
        W = np.zeros((len(pairs), starts[-1]))
        for k, (a, b) in enumerate(pairs):
            W[k, starts[a]:starts[a + 1]] = self._dual_coef[b - 1, starts[a]:starts[a + 1]]
            W[k, starts[b]:starts[b + 1]] = self._dual_coef[a, starts[b]:starts[b + 1]]
        return W

    def _expansion(self):
        """LIBSVM's pairs as one kernel expansion (row k: pair (a, b), positive meaning class a), with
        Platt's sigmoids when fitted with probability=True."""
        probA = self.__dict__.get("_probA", np.empty(0))
        platt = (probA, self._probB) if len(probA) else None
        return Expansion(*self._expansion_kernel(), self.support_vectors_, self._ovo_coef(), self._intercept, platt)

    def _ovo_decision(self, X):
        """LIBSVM's decision values of X (validated here), one column per pair (a, b), positive
        meaning class a."""
        n_classes = len(self.classes_)
        n_pairs = n_classes * (n_classes - 1) // 2
        if n_pairs * len(self.support_) <= _OVO_COEF_ENTRIES or self.__dict__.get("_early") is not None:
            return self._decision_values(X, self._ovo_coef(), self._intercept)
        # many classes: the pairs' coefficients as one matrix would be mostly zeros; pair by pair
        X = self._validate_X(X)
        starts = np.concatenate([[0], np.cumsum(self.n_support_)])
        dec = np.empty((X.shape[0], n_pairs))
        for sl, K in self._kernel_chunks(X):
            for k, (a, b) in enumerate(ovo_pairs(n_classes)):
                sa = slice(starts[a], starts[a + 1])
                sb = slice(starts[b], starts[b + 1])
                dec[sl, k] = (K[:, sa] @ self._dual_coef[b - 1, sa] + K[:, sb] @ self._dual_coef[a, sb]
                              + self._intercept[k])
        return dec

    def decision_function(self, X):
        """Decision values: shape (n,) for two classes (> 0 means classes_[1]); (n, n_classes) for
        'ovr'; (n, n_classes (n_classes-1) / 2) for 'ovo'."""
        check_is_fitted(self)
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
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")
        dec = self._ovo_decision(X)
        n_classes = len(self.classes_)
        if n_classes == 2:
            return self.classes_[(dec[:, 0] <= 0).astype(int)]
        if self.break_ties and self.decision_function_shape == "ovr":
            return self.classes_[np.argmax(_ovr_from_ovo(dec, n_classes), axis=1)]
        return self.classes_[np.argmax(_ovo_votes(dec, n_classes), axis=1)]  # ties: first class


class SVC(_BaseSVC):
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
    probability : bool, default=False
        Deprecated by scikit-learn 1.9 (removed in 1.11) and accepted here exactly as there, with
        the same FutureWarning whenever it is passed: True fits Platt's sigmoid to every pairwise
        problem on decision values from an internal 5-fold cross-validation (LIBSVM's method: five
        extra fits per pair, folds drawn from ``random_state``), and enables ``predict_proba`` /
        ``predict_log_proba`` (pairwise coupling of Wu, Lin & Weng for more than two classes). For
        probabilities from one fit use :class:`sparsekernel.KernelLogisticRegression`, or
        ``CalibratedClassifierCV(SVC(), ensemble=False)``.
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
    random_state : int, RandomState or None, default=None
        The folds of ``probability=True``'s cross-validation; the solver itself is deterministic.
    solver : {'auto', 'smo2', 'smo1', 'batched', 'csmo', 'dc'}, default='auto'
        'smo2': pair SMO with second-order working-set selection (Fan, Chen & Lin 2005);
        'smo1': pair SMO with the maximal violating pair; 'batched': two-level decomposition (blocks
        of ``working_set_size`` variables whose kernel rows are computed as one block, sub-problem
        solved by the same pair SMO); 'csmo': Conjugate SMO (Torres-Barran, Alaiz & Dorronsoro):
        the smo2 pair, moved along a direction conjugate to the previous one, which saves
        iterations (and kernel rows) at large C. 'auto' takes the route the benchmarks found
        fastest: 'batched' on dense inputs of at least 32 features and 2000 rows (kernel rows as
        register-tiled blocks; it starts with pair steps and takes blocks once the solve needs more
        than N/4 of them, so an easy problem is solved as 'smo2' would), 'dc' on dense rbf inputs of fewer features and at least 200,000
        rows, 'smo2' otherwise, and 'csmo' instead of 'smo2' for a warm start (``warm_start=True``,
        a path, a search) from solves that needed at least one SMO step per variable (a larger C);
        ``solver_`` says which. A dense X with at most
        15 % nonzeros is read by the engine as a CSR copy (so 'auto' runs 'smo2' on it): a kernel
        row then costs its nonzeros. With the rbf or laplacian kernel (translation invariant) so is
        X minus its columns' most frequent values when that is mostly zeros (sparse data after
        StandardScaler).
        Shrinking works with 'csmo': the conjugate direction restarts from the plain pair whenever
        the active set changes, so between two changes the iteration is the paper's Algorithm 2 on
        the active variables.
        'dc': divide and conquer (DC-SVM, Hsieh, Si & Dhillon 2014): the points are clustered by
        kernel k-means into a tree (4 children per cluster, lowest clusters of about 4000
        points), each cluster's problem is solved alone (in parallel threads), each level starts
        from its children's solutions and the whole problem from level 1's; the result is the
        same SVM to ``tol``. It pays on large problems with many support vectors and cheap kernel
        values (0.54x / 0.48x the 'smo2' fit at 5e5 / 1e6 rows x 10 features; benchmarks/bench_large.py), not
        on wide inputs or few support vectors: 'auto' takes it for dense rbf inputs of at least
        200,000 rows that would otherwise run 'smo2'.
    early_stop_level : int or None, default=None
        With solver='dc': stop at this level of the tree (1: its 4 top clusters, l: 4^l clusters)
        and predict each point by the model of the cluster it falls in (the paper's early
        prediction): a fraction of the exact fit's time, a model that is not the SVM's solution.
        ``intercept_`` is then the median of the clusters' offsets.
    working_set_size : int or None, default=None
        Block size q of the batched route (None: 256 per 4 threads, at most a quarter of the rows
        the cache holds).
    warm_start : bool, default=False
        Start the next fit on the same data from this fit's dual solution: kept as is when C grows,
        scaled by C_new / C_old when C shrinks (which keeps it feasible), with the gradient updated
        without kernel evaluations when the kernel is unchanged and recomputed when gamma (or
        another kernel parameter) changed. The solution reached is the same as a cold fit's. The
        kernel row cache (up to ``cache_size`` MB) is kept with the estimator between such fits,
        so a refit with the same kernel recomputes no row it already has. See also
        :func:`sparsekernel.svm_path` and :class:`sparsekernel.PathSearchCV`.
    n_jobs : int or None, default=None
        Threads (None: every thread the process may use, counted as scikit-learn does:
        OMP_NUM_THREADS, threadpoolctl limits, joblib's workers, CPU affinity and quotas; inside
        ``GridSearchCV(n_jobs=k)`` each worker's share). Kernel rows and blocks are computed in
        parallel; the pairwise problems of a multiclass fit run in parallel when there are enough
        of them.
    time_limit : float or None, default=None
        Seconds for the whole fit: the solver stops at the budget with a ConvergenceWarning and
        returns a usable model (the current iterate, its intercept from the KKT conditions,
        ``converged_ = False``). Ctrl-C instead raises KeyboardInterrupt (nothing is fitted).
        ``verbose=True`` prints the solver's progress (iteration, KKT gap against tol, active set
        size, time) about once a second; ``set_callbacks`` (scikit-learn >= 1.9) reports it to
        scikit-learn's callbacks, e.g. ``SVC().set_callbacks(ProgressBar()).fit(X, y)``.

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
        Per binary problem: iterations, blocks, cache hits/misses, peak cache bytes, threads, ...
    solver_ : str
        The engine route the fit took ('auto' resolved).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.model_selection import train_test_split
    >>> from sparsekernel import SVC
    >>> X, y = load_iris(return_X_y=True)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    >>> clf = SVC(C=10).fit(X_train, y_train)  # as sklearn.svm.SVC: one-vs-one, rbf, gamma='scale'
    >>> clf.predict(X_test[:5])
    array([2, 1, 0, 2, 0])
    >>> print(f"{clf.score(X_test, y_test):.2f}")
    0.97
    >>> clf.dual_coef_.shape == (2, len(clf.support_))  # LIBSVM's layout of the fitted model
    True
    """

    _auto_divides = True
    _parameter_constraints: dict = {
        **_BaseSVC._parameter_constraints,
        **_C,
        "working_set_size": [None, NumInterval(Integral, 4, None, closed="left")],
        **_WARM,
    }

    def __init__(self, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, shrinking=True,
                 probability="deprecated", tol=1e-3, cache_size=200, class_weight=None, verbose=False, max_iter=-1, decision_function_shape="ovr",
                 break_ties=False, random_state=None, solver="auto", working_set_size=None, warm_start=False,
                 n_jobs=None, time_limit=None, early_stop_level=None):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
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
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.time_limit = time_limit
        self.early_stop_level = early_stop_level

    def _bounds(self, y_enc, sample_weight, n):
        return per_sample_bounds(float(self.C), self.classes_, y_enc, self.class_weight, sample_weight, n)

    def _pair_problem(self, y, hi, idx):
        """min 1/2 a'Qa - e'a,  y'a = 0,  0 <= a <= C_i."""
        return DualProblem(y=y, p=np.full(len(y), -1.0), hi=hi, idx=idx)

    def _pair_solution(self, r):
        """(y_i a_i, rho) of a solved pair: decision sum_i y_i a_i K(x_i, x) - rho."""
        return r.y * r.alpha, r.rho


class NuSVC(_BaseSVC):
    """Nu-Support Vector Classification on sparsekernel's SMO engine.

    A drop-in for :class:`sklearn.svm.NuSVC`: nu bounds the fraction of margin errors from above and
    the fraction of support vectors from below (Schölkopf et al. 2000). Each one-vs-one pair solves
    (Chang & Lin 2001, LIBSVM's nu-SVC)

        min_a 1/2 a'Qa   s.t.  y'a = 0,  e'a = nu sum_i w_i,  0 <= a_i <= w_i,   Q_ij = y_i y_j K(x_i, x_j)

    (w_i the sample weights, ones by default) by SMO steps within the positive and within the
    negative class, from LIBSVM's start; the model is the solution scaled by 1 / r (r the multiplier
    of e'a), so that it has the margin of a C-SVC with C = 1 / r. Multiclass problems are split
    one-vs-one as in :class:`sparsekernel.SVC`.

    Parameters
    ----------
    nu : float, default=0.5
        Upper bound on the fraction of margin errors and lower bound on the fraction of support
        vectors, in (0, 1]. Infeasible (ValueError) when nu (n_a + n_b) / 2 > min(n_a, n_b) for some
        pair of classes of (weighted) sizes n_a, n_b.
    kernel, degree, gamma, coef0, shrinking, probability, tol, cache_size, verbose, max_iter,
    decision_function_shape, break_ties, random_state, n_jobs, time_limit :
        As :class:`sparsekernel.SVC`.
    class_weight : dict or 'balanced', default=None
        Kept as ``class_weight_`` and, as in scikit-learn (LIBSVM's nu-SVC has no per-class bound),
        without effect on the fit; weigh samples with ``sample_weight``.
    solver : {'auto', 'smo2', 'smo1', 'batched'}, default='auto'
        'smo2' (second-order working pairs within a class), 'smo1' (maximal violating pairs),
        'batched' (the two-level route, blocks of violators of both classes); 'auto' as SVC's.

    Attributes
    ----------
    classes_, class_weight_, support_, support_vectors_, n_support_, dual_coef_, intercept_, n_iter_,
    fit_status_, shape_fit_, n_features_in_ : as in :class:`sklearn.svm.NuSVC`.
    dual_objective_, kkt_gap_, n_kernel_evals_, converged_, fit_time_, solver_stats_, solver_ :
        As :class:`sparsekernel.SVC` (the objective 1/2 a'Qa of each pair before the scaling by 1 / r).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.model_selection import train_test_split
    >>> from sparsekernel import NuSVC
    >>> X, y = load_iris(return_X_y=True)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    >>> clf = NuSVC(nu=0.1).fit(X_train, y_train)
    >>> print(f"{clf.score(X_test, y_test):.2f}")
    0.97
    >>> clf.dual_coef_.shape == (2, len(clf.support_))
    True
    """

    _solvers = NUSVC_SOLVERS
    _warm_starts = False
    _parameter_constraints: dict = {**_BaseSVC._parameter_constraints, **_NU, "solver": [StrOptions(set(_solvers))]}

    def __init__(self, *, nu=0.5, kernel="rbf", degree=3, gamma="scale", coef0=0.0, shrinking=True,
                 probability="deprecated", tol=1e-3, cache_size=200, class_weight=None, verbose=False, max_iter=-1,
                 decision_function_shape="ovr", break_ties=False, random_state=None, solver="auto", n_jobs=None,
                 time_limit=None):
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.solver = solver
        self.n_jobs = n_jobs
        self.time_limit = time_limit

    def _bounds(self, y_enc, sample_weight, n):
        # the sample weights only: LIBSVM's solve_nu_svc ignores the per-class C (scikit-learn's class_weight)
        return per_sample_bounds(1.0, self.classes_, y_enc, None, sample_weight, n)

    def _check_pairs(self, Ci, y_enc, pairs):
        """LIBSVM's feasibility check (svm_check_parameter): nu (n_a + n_b) / 2 <= min(n_a, n_b) for
        the weighted class sizes of every pair."""
        size = np.bincount(y_enc, weights=Ci, minlength=len(self.classes_))
        for a, b in pairs:
            if self.nu * (size[a] + size[b]) / 2 > min(size[a], size[b]):
                raise ValueError("specified nu is infeasible")

    def _pair_problem(self, y, hi, idx):
        """min 1/2 a'Qa,  y'a = 0,  e'a = nu sum(hi),  0 <= a <= hi: a nu problem (the sums of a within
        the two classes stay nu sum(hi) / 2 each, as LIBSVM's start puts them)."""
        half = self.nu * hi.sum() / 2
        start = np.empty(len(y))
        for side in (y > 0, y < 0):
            start[side] = _nu_start(hi[side], half)
        return DualProblem(y=y, p=np.zeros(len(y)), hi=hi, idx=idx, start=start, nu=True)

    def _pair_solution(self, r):
        """(y_i a_i / r, rho / r): the solution scaled to the margin of C-SVC (Chang & Lin 2001, eq. 2.5)."""
        if not r.r > 0:  # r = 0: every gradient zero (e.g. identical points of both classes)
            raise ValueError(_NONFINITE_MODEL)
        return r.y * r.alpha / r.r, r.rho / r.r


class _BaseSVR(RegressorMixin, _BaseSMO):
    """What SVR and NuSVR share: the 2N-variable dual over (a+, a-) with y = (+1, -1), one kernel row
    per sample, and the model f(x) = sum_i (a+_i - a-_i) K(x_i, x) - rho. A subclass names its dual
    problem (``_svr_problem``)."""

    _solvers = SVR_SOLVERS
    _budget_per_sample = 512  # (2N variables)

    def _problems(self, y, sample_weight, n):
        """The fit's one dual problem over (a+, a-), and no layout: ([problem], None)."""
        z = np.asarray(y, dtype=np.float64)
        Ci = per_sample_bounds(float(self.C), np.array([0]), np.zeros(n, dtype=np.intp), None, sample_weight, n)
        return [self._svr_problem(z, Ci)], None

    def _store_solutions(self, X, layout, results, inputs=None):
        """The model f(x) = sum_i (a+_i - a-_i) K(x_i, x) - rho of the one solution."""
        (r,), n = results, X.shape[0]
        self._store_expansion(X, r.alpha[:n] - r.alpha[n:], r.rho, r, inputs)

    @with_callbacks
    def fit(self, X, y, sample_weight=None, *, search_rows=None):
        """Fit the model on X (dense or CSR; a kernel matrix for 'precomputed') and targets y.

        ``search_rows`` is set by sparsekernel's searches only (``sparsekernel._warm.SearchRows``)."""
        if is_dask_array(X):
            return self._fit_dask(X, y, sample_weight)
        if restore_prefitted(self, X, y, sample_weight, search_rows):  # made on a cluster by a PathSearchCV
            return self
        t0 = time.perf_counter()
        threads = self._check_params()
        X, y, inputs = self._validate_fit_input(X, y, y_numeric=True)
        (problem,), _ = self._problems(y, sample_weight, X.shape[0])
        r = self._solve_one(X, np.asarray(y, dtype=np.float64), sample_weight, search_rows, problem, threads)
        self._store_solutions(X, None, [r], inputs)
        self.fit_time_ = time.perf_counter() - t0
        self._warn_if_not_converged()
        return self

    def predict(self, X):
        """f(x) = sum_i (a+_i - a-_i) K(x_i, x) + b."""
        check_is_fitted(self)
        return self._decision_values(X, self._dual_coef, self.intercept_)[:, 0]

    def _primal_coef(self):
        return safe_sparse_dot(self.dual_coef_, self.support_vectors_)


class SVR(_BaseSVR):
    """Epsilon-Support Vector Regression on sparsekernel's SMO engine.

    A drop-in for :class:`sklearn.svm.SVR`. The dual (CSMO paper eqs. 1-2, Lin 2002) has two
    variables per sample, a+_i and a-_i, with y = (+1, -1):

        min 1/2 a'Qa + sum_i (eps - z_i) a+_i + (eps + z_i) a-_i   s.t.  sum_i a+_i - a-_i = 0,
        0 <= a+_i, a-_i <= C_i,   Q = [[K, -K], [-K, K]],

    and the model is f(x) = sum_i (a+_i - a-_i) K(x_i, x) + b. The 2N variables share one kernel row
    per sample (rows are cached once and gathered with their signs, as LIBSVM's SVR_Q).

    Parameters
    ----------
    kernel, degree, gamma, coef0, tol, C, shrinking, cache_size, verbose, max_iter, n_jobs, time_limit :
        As :class:`sparsekernel.SVC`.
    epsilon : float, default=0.1
        Width of the insensitive tube (>= 0).
    solver : {'auto', 'smo2', 'smo1', 'csmo', 'dc'}, default='auto'
        As :class:`sparsekernel.SVC` (no batched route for the 2N-variable problem).
    warm_start : bool, default=False
        As :class:`sparsekernel.SVC`; a change of epsilon keeps the kernel, so the warm start then
        needs no kernel evaluation at all.
    early_stop_level : int or None, default=None
        As :class:`sparsekernel.SVC` (solver='dc' only).

    Attributes
    ----------
    support_, support_vectors_, dual_coef_, intercept_, n_support_, n_iter_, shape_fit_,
    n_features_in_, fit_status_ : as in :class:`sklearn.svm.SVR`.
    dual_objective_, kkt_gap_, n_kernel_evals_, converged_, fit_time_, solver_stats_ :
        As :class:`sparsekernel.SVC` (arrays with one entry).

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sparsekernel import SVR
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = SVR(C=100, epsilon=5).fit(X[:300], y[:300])
    >>> print(f"R^2 on held-out rows: {reg.score(X[300:], y[300:]):.1f}")
    R^2 on held-out rows: 0.5
    >>> bool(reg.converged_), reg.dual_coef_.shape == (1, len(reg.support_))
    (True, True)
    """

    _parameter_constraints: dict = {
        **_BaseSMO._parameter_constraints,
        **_C,
        "epsilon": [NON_NEGATIVE],
        "solver": [StrOptions(set(SVR_SOLVERS))],
        **_WARM,
    }

    def __init__(self, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3, C=1.0, epsilon=0.1,
                 shrinking=True, cache_size=200, verbose=False, max_iter=-1, solver="auto", warm_start=False,
                 n_jobs=None, time_limit=None, early_stop_level=None):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.C = C
        self.epsilon = epsilon
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.solver = solver
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.time_limit = time_limit
        self.early_stop_level = early_stop_level

    def _svr_problem(self, z, Ci):
        """The eps-SVR dual: linear term (eps - z, eps + z), box [0, C_i], a = 0 to start."""
        n = len(z)
        eps = float(self.epsilon)
        return DualProblem(y=_plus_minus(n), p=np.concatenate((eps - z, eps + z)), hi=np.concatenate((Ci, Ci)),
                           kind="eps_svr")


class NuSVR(_BaseSVR):
    """Nu-Support Vector Regression on sparsekernel's SMO engine.

    A drop-in for :class:`sklearn.svm.NuSVR`: nu in (0, 1] replaces eps-SVR's epsilon, the width of
    the tube being found by the fit (Schölkopf et al. 2000). The dual (Chang & Lin 2002, LIBSVM's
    nu-SVR) has eps-SVR's 2N variables a+, a- with y = (+1, -1) and one more equality:

        min 1/2 a'Qa + sum_i -z_i a+_i + z_i a-_i   s.t.  sum_i a+_i - a-_i = 0,
        sum_i a+_i + a-_i = C nu sum_i w_i,   0 <= a+_i, a-_i <= C_i = C w_i,

    solved by SMO steps within the a+ and within the a- variables from LIBSVM's start; the model is
    f(x) = sum_i (a+_i - a-_i) K(x_i, x) + b (the tube's half width is -r, r the multiplier of the
    second equality).

    Parameters
    ----------
    nu : float, default=0.5
        Upper bound on the fraction of training errors and lower bound on the fraction of support
        vectors, in (0, 1].
    C : float, default=1.0
        Regularisation parameter (> 0).
    kernel, degree, gamma, coef0, shrinking, tol, cache_size, verbose, max_iter, n_jobs, time_limit :
        As :class:`sparsekernel.SVR`.
    solver : {'auto', 'smo2', 'smo1'}, default='auto'
        As :class:`sparsekernel.NuSVC`.

    Attributes
    ----------
    support_, support_vectors_, dual_coef_, intercept_, n_support_, n_iter_, shape_fit_,
    n_features_in_, fit_status_ : as in :class:`sklearn.svm.NuSVR`.
    dual_objective_, kkt_gap_, n_kernel_evals_, converged_, fit_time_, solver_stats_ :
        As :class:`sparsekernel.SVR`.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sparsekernel import NuSVR
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = NuSVR(C=100, nu=0.5).fit(X[:300], y[:300])
    >>> print(f"R^2 on held-out rows: {reg.score(X[300:], y[300:]):.1f}")
    R^2 on held-out rows: 0.5
    >>> bool(len(reg.support_) >= 0.5 * 300)  # nu bounds the fraction of support vectors from below
    True
    """

    _solvers = NU_SOLVERS
    _warm_starts = False
    _parameter_constraints: dict = {**_BaseSMO._parameter_constraints, **_NU, **_C,
                                    "solver": [StrOptions(set(_solvers))]}

    def __init__(self, *, nu=0.5, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, shrinking=True, tol=1e-3,
                 cache_size=200, verbose=False, max_iter=-1, solver="auto", n_jobs=None, time_limit=None):
        self.nu = nu
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.solver = solver
        self.n_jobs = n_jobs
        self.time_limit = time_limit

    def _svr_problem(self, z, Ci):
        """The nu-SVR dual: linear term (-z, z), box [0, C_i], LIBSVM's start a+_i = a-_i filled up to
        C nu sum(w) / 2 (solve_nu_svr)."""
        start = _nu_start(Ci, self.nu * Ci.sum() / 2)
        n = len(z)
        return DualProblem(y=_plus_minus(n), p=np.concatenate((-z, z)), hi=np.concatenate((Ci, Ci)), kind="eps_svr",
                           start=np.concatenate((start, start)), nu=True)


class OneClassSVM(OutlierMixin, _BaseSMO):
    """Unsupervised outlier detection (one-class SVM) on sparsekernel's SMO engine.

    A drop-in for :class:`sklearn.svm.OneClassSVM`. The dual (Schölkopf et al. 2001, LIBSVM's
    one-class SVM) is

        min_a 1/2 a'Ka   s.t.  e'a = nu sum_i w_i,  0 <= a_i <= w_i

    (w_i the sample weights, ones by default), solved by SMO pairs from LIBSVM's start (the first
    nu l variables at their bound); f(x) = sum_i a_i K(x_i, x) - rho is positive for inliers. nu
    bounds the fraction of training outliers from above and that of support vectors from below.

    Parameters
    ----------
    kernel, degree, gamma, coef0, tol, shrinking, cache_size, verbose, max_iter, n_jobs, time_limit :
        As :class:`sparsekernel.SVC`.
    nu : float, default=0.5
        Upper bound on the fraction of training errors and lower bound on the fraction of support
        vectors, in (0, 1].
    solver : {'auto', 'smo2', 'smo1', 'batched', 'csmo'}, default='auto'
        As :class:`sparsekernel.SVC`.

    Attributes
    ----------
    support_, support_vectors_, dual_coef_, intercept_, offset_, n_support_, n_iter_, shape_fit_,
    n_features_in_, fit_status_ : as in :class:`sklearn.svm.OneClassSVM` (``offset_ = rho``:
    ``decision_function = score_samples - offset_``).
    dual_objective_, kkt_gap_, n_kernel_evals_, converged_, fit_time_, solver_stats_, solver_ :
        As :class:`sparsekernel.SVC` (arrays with one entry).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekernel import OneClassSVM
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(200, 2))
    >>> clf = OneClassSVM(nu=0.1, gamma=0.5).fit(X)
    >>> clf.predict([[0.0, 0.0], [4.0, 4.0]])
    array([ 1, -1])
    >>> bool(np.mean(clf.predict(X) == -1) <= 0.1 + 0.01)  # at most about nu of the training set outside
    True
    """

    _solvers = ONE_CLASS_SOLVERS
    _warm_starts = False
    _parameter_constraints: dict = {**_BaseSMO._parameter_constraints, **_NU, "solver": [StrOptions(set(_solvers))]}

    def __init__(self, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3, nu=0.5, shrinking=True,
                 cache_size=200, verbose=False, max_iter=-1, solver="auto", n_jobs=None, time_limit=None):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.nu = nu
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.verbose = verbose
        self.max_iter = max_iter
        self.solver = solver
        self.n_jobs = n_jobs
        self.time_limit = time_limit

    @with_callbacks
    def fit(self, X, y=None, sample_weight=None, *, search_rows=None):
        """Fit the model on X (dense or CSR; a kernel matrix for 'precomputed'); y is ignored.

        ``search_rows`` is set by sparsekernel's searches only (``sparsekernel._warm.SearchRows``)."""
        if restore_prefitted(self, X, y, sample_weight, search_rows):  # made on a cluster by a PathSearchCV
            return self
        t0 = time.perf_counter()
        threads = self._check_params()
        X, _, inputs = self._validate_fit_input(X, None, targets=False)  # (no labels to check: 0.3 of 1.5 ms)
        n = X.shape[0]
        w = per_sample_bounds(1.0, np.array([0]), np.zeros(n, dtype=np.intp), None, sample_weight, n)
        problem = DualProblem(y=np.ones(n), p=np.zeros(n), hi=w, start=_nu_start(w, self.nu * w.sum()))
        r = self._solve_one(X, np.ones(n), sample_weight, search_rows, problem, threads)
        self._store_expansion(X, r.alpha, r.rho, r, inputs)
        self.offset_ = -self.intercept_
        self.fit_time_ = time.perf_counter() - t0
        self._warn_if_not_converged()
        return self

    def decision_function(self, X):
        """f(x) = sum_i a_i K(x_i, x) - rho: positive for inliers, negative for outliers."""
        check_is_fitted(self)
        return self._decision_values(X, self._dual_coef, self._intercept)[:, 0]

    def score_samples(self, X):
        """The unshifted score sum_i a_i K(x_i, x) = decision_function(X) + offset_."""
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 for inliers (f(x) > 0), -1 for outliers."""
        return np.where(self.decision_function(X) > 0, 1, -1).astype(np.intp)

    def _primal_coef(self):
        return safe_sparse_dot(self.dual_coef_, self.support_vectors_)
