"""Kernel logistic regression (Keerthi, Duan, Shevade & Poo 2005) and sparse kernel logistic
regression (S-KLR, Consolo, Manno & Amaldi) on the SMO engine's entropic term.

Both solve the dual (S-KLR (22), Keerthi (3.5) at lam = 0)

    min_a f(a) = 1/2 a'Qa + sum_i C_i G(a_i / C_i) - lam sum_i a_i
    s.t.  y'a = 0,   bound <= a_i <= C_i - bound,          G(d) = d log d + (1 - d) log(1 - d),

which is the dual of the *shifted* logistic primal (S-KLR Observation 1, rho = lam)

    min_{w, b} 1/2 ||w||^2 + sum_i C_i log(1 + exp(lam - y_i (w.phi(x_i) - b))).

The model is f(x) = sum_i a_i y_i K(x_i, x) - b and P(y | x) = 1 / (1 + exp(-y f(x) / T)) (S-KLR eq. 3
with T = 1 for KLR and S-KLR at lam = 0; at lam > 0 S-KLR's temperature T, see its docstring).
Only expansion vectors with a_i above the lower bound are kept (S-KLR section 5.1).
"""
from __future__ import annotations

from numbers import Integral
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log1p, log_expit, logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions, validate_parameter_constraints
from sklearn.utils.validation import _num_samples, check_is_fitted, check_X_y, column_or_1d, validate_data
from scipy.optimize import brentq

from . import _engine, _fit
from ._memory import compact_working_bytes, smo_budget
from ._compact import BASES, CompactFit, fit_compact
from ._engine import DualProblem, KernelSpec, SolverOptions
from ._warm import PathStore, SearchRows, restore_prefitted
from ._base import (
    CLASS_WEIGHT_CONSTRAINT,
    KERNEL_PARAM_CONSTRAINTS,
    KERNELS,
    MAX_ITER_CONSTRAINT,
    N_JOBS_CONSTRAINT,
    NON_NEGATIVE,
    POSITIVE,
    TIME_LIMIT_CONSTRAINT,
    one_thread,
    CallbackSupportMixin,
    ConstrainedParamsMixin,
    Expansion,
    FitMonitor,
    KernelEvaluator,
    KernelModelMixin,
    NumInterval,
    canonical_csr,
    class_labels,
    check_positive,
    core_matrix,
    n_threads,
    per_sample_bounds,
    check_kernel_range,
    resolve_gamma,
    warn_if_stopped_early,
    with_callbacks,
)

WSS = ("second", "first")
SOLVERS = ("auto", "smo", "nystrom")
# solver='auto': the exact SMO route up to this many (weighted) training points, the compact one beyond
AUTO_SMO_MAX = 4000

# the exact route at large N starts from a compact fit on this many basis points (_compact_start)
POLISH_COMPONENTS = 512
# n_components='auto': the largest basis the doubling may reach
AUTO_MAX_COMPONENTS = 1024

# bound='auto': the paper's absolute 1e-5 unless C is tiny
_AUTO_BOUND_ABS, _AUTO_BOUND_REL = 1e-5, 1e-3


# ---------------------------------------------------------------------- the box and the start
def box_bound(bound, Ci, y):
    """The box parameter gamma_b of [gamma_b, C_i - gamma_b] and whether it was shrunk.

    'auto' is min(1e-5, 1e-3 min_i C_i). The box admits y'a = 0 only if
    max(sum_+ lo, sum_- lo) <= min(sum_+ hi, sum_- hi), i.e. gamma_b <= S_c / (m_max + m_c) for both
    classes c (S_c = sum of C_i over c, m_c its size). 'auto' then shrinks the bound to half that
    largest feasible value (at the largest value itself the feasible set is a single point) and
    reports it; an explicit bound raises a ValueError.
    """
    pos, neg = y > 0, y < 0
    m = np.array([np.count_nonzero(pos), np.count_nonzero(neg)], dtype=np.float64)
    S = np.array([Ci[pos].sum(), Ci[neg].sum()])
    largest = float(np.min(S / (m.max() + m)))
    if isinstance(bound, str):
        b = min(_AUTO_BOUND_ABS, _AUTO_BOUND_REL * float(Ci.min()))
        if b < largest:
            return b, False
        return 0.5 * largest, True
    b = float(bound)
    if b >= 0.5 * float(Ci.min()):
        raise ValueError(f"bound={b!r} must be below C_i / 2 for every sample (smallest C_i = {Ci.min():.6g}); "
                         "lower the bound or raise C (or the sample/class weights)")
    if b >= largest:
        raise ValueError(
            f"bound={b!r} makes the box [bound, C_i - bound] incompatible with y'a = 0: the larger class "
            f"({int(m.max())} samples) needs sum of lower bounds {b * m.max():.6g} but the other class can hold "
            f"at most {float(np.min(S - b * m)):.6g}; use bound < {largest:.6g}, bound='auto', a larger C or "
            "class_weight='balanced'")
    return b, False


def initial_point(Ci, y, lo, hi):
    """A feasible start with y'a = 0 and lo <= a <= hi exactly (DESIGN.md: projecting Keerthi's
    C/m_+, C/m_- into the box would break the equality).

    Each class c gets a_i = lo_i + theta_c (hi_i - lo_i) with sum_c a = v for both classes; v is
    Keerthi's kappa = C (section 6; the mean C_i with per-sample C_i) moved into the interval
    [max_c sum_c lo, min_c sum_c hi] that every feasible v must lie in. With a uniform C this is the
    class-constant a_i = kappa / m_c.
    """
    a = np.empty_like(Ci)
    classes = [(mask, lo[mask], hi[mask]) for mask in (y > 0, y < 0)]  # (each class's bounds, taken once)
    (_, lo_p, hi_p), (_, lo_n, hi_n) = classes
    # (scalars clipped as np.clip does: the upper bound last)
    v = float(min(max(Ci.mean(), max(lo_p.sum(), lo_n.sum())), min(hi_p.sum(), hi_n.sum())))
    for mask, lo_c, hi_c in classes:
        room = hi_c - lo_c
        width = room.sum()
        theta = (v - lo_c.sum()) / width if width > 0 else 0.0
        a[mask] = lo_c + min(max(theta, 0.0), 1.0) * room
    return a


def dual_start(f, y, Ci, lam, lo, hi):
    """The dual point of a primal model f: at the optimum a_i = C_i sigma(lam - y_i f_i) (the
    stationarity condition of S-KLR (22) / Keerthi (3.5)), clipped into the box, and y'a = 0
    restored by moving the class with the excess toward its lower bounds (a_i -= t (a_i - lo_i), one
    t for the class), which keeps every a_i in [lo_i, hi_i]."""
    a = np.clip(Ci * expit(lam - y * f), lo, hi)
    excess = float(y @ a)
    cls = y > 0 if excess > 0 else y < 0
    room = float((a[cls] - lo[cls]).sum())
    if room > 0:
        a[cls] -= min(1.0, abs(excess) / room) * (a[cls] - lo[cls])
    return a


def klr_problem(y, Ci, lam, bound, f0=None):
    """The binary (S-)KLR dual as a DualProblem: psi_i(a) = C_i G(a / C_i) - lam a over the box
    [bound, C_i - bound]. Its start (when no warm start applies) is the point ``dual_start`` makes
    of ``f0``, decision values of a near-optimal model (the compact route's), else the
    class-constant point."""
    lo = np.full(len(y), float(bound))
    hi = Ci - bound
    start = initial_point(Ci, y, lo, hi) if f0 is None else dual_start(f0, y, Ci, lam, lo, hi)
    return DualProblem(y=y, p=np.full(len(y), -float(lam)), hi=hi, lo=lo, C=Ci, term="entropic", start=start)


def _entropy_derivative(a, Ci):
    return np.log(a / (Ci - a))


def measured_rho(r, y, Ci, lam):
    """(rho, b) of S-KLR eq. (20) by least squares over the variables strictly inside the box.

    With s_i = sum_j a_j y_j K_ij, eq. (20) reads rho + y_i b = g'^-1(a_i/C) + y_i s_i where
    g'^-1(a/C) = log(a / (C - a)); y_i s_i = (Qa)_i comes from the engine's final gradient
    G = Qa + log(a/(C - a)) - lam. Observation 1 says the result is rho = lam.
    """
    a, G = r.alpha, r.grad
    free = (a > r.lo) & (a < r.hi)
    if not (np.any(free & (y > 0)) and np.any(free & (y < 0))):
        return np.nan, np.nan  # free variables of one class only: (20) cannot separate rho from b
    h = _entropy_derivative(a[free], Ci[free])
    Qa = G[free] - h + lam
    rhs = h + Qa
    A = np.column_stack([np.ones(free.sum()), y[free]])
    (rho, b), *_ = np.linalg.lstsq(A, rhs, rcond=None)
    return float(rho), float(b)


def primal_objective(r, y, Ci, lam):
    """The shifted primal P = 1/2 a'Qa + sum_i C_i log(1 + exp(lam - y_i f_i)) at (w(a), b),
    f_i = s_i - b, all from the final gradient."""
    a, G = r.alpha, r.grad
    Qa = G - _entropy_derivative(a, Ci) + lam
    margin = Qa - y * r.rho  # y_i f_i
    z = lam - margin
    loss = np.where(z > 0, z + log1p(np.exp(-np.abs(z))), log1p(np.exp(-np.abs(z))))
    return 0.5 * float(a @ Qa) + float(Ci @ loss)


def duality_gap(r, y, Ci, lam, P=None):
    """Relative gap (P + f) / P between the shifted primal at (w(a), b) and the dual f(a) (>= 0); P,
    the primal_objective, when known."""
    P = primal_objective(r, y, Ci, lam) if P is None else P
    return max(0.0, (P + r.obj) / max(P, np.finfo(float).tiny))


# ---------------------------------------------------------------------- lam='auto'
def auto_lam(C, bound="auto"):
    """lam='auto' of SparseKernelLogisticRegression: clip(L, C / 10, C / 4), L = log((C - b) / b).

    At the optimum a_i = C sigma(lam - y_i f_i), so a point leaves the model (a_i at the lower bound
    b) only when its margin y_i f_i exceeds lam + L: lam is on the scale of the log-odds, not of C.
    For lam >> 1 the shifted loss is C lam max(0, 1 - y g) with f = lam g, i.e. an SVM in g with
    C' = C / lam whose points beyond the margin, y g >= 1 + L / lam, drop out. Sparsity so needs lam
    of the order of L (at lam = L the points with y g >= 2 drop out), and accuracy a C' that is not
    small: lam = L clipped to C' in [4, 10]. For C >= 10 L (C >~ 200 with b = 1e-5) that is the
    paper's lambda-choice C / 10 (Appendix C, C' = 10); for C < 4 L (C <~ 60) no lam is both sparse
    and accurate (benchmarks/results/klr_sklr_default.md) and C / 4 stays close to KLR.

    Parameters
    ----------
    C : float
        The loss weight (> 0).
    bound : 'auto' or float, default='auto'
        The box parameter b ('auto': min(1e-5, 1e-3 C), as the estimator's).

    Returns
    -------
    float
    """
    C = float(C)
    b = min(_AUTO_BOUND_ABS, _AUTO_BOUND_REL * C) if isinstance(bound, str) else float(bound)
    L = float(np.log(max(C - b, b) / b))
    return float(np.clip(L, C / 10.0, C / 4.0))


# ---------------------------------------------------------------------- probabilities at lam > 0
# the temperature is fitted on the decision values of at most this many training points (a fixed
# subsample beyond it: one parameter needs no more, and it bounds the cost to a few thousand rows)
_TEMPERATURE_SAMPLE = 4000
_MAX_TEMPERATURE = 1e6


def fit_temperature(margins, weights=None):
    """The temperature T >= 1 of P(y | x) = 1 / (1 + exp(-y f(x) / T)) that maximises the weighted
    training likelihood sum_i w_i log sigma(m_i / T), m_i = y_i f(x_i).

    With s = 1 / T the loss L(s) = sum_i w_i log(1 + exp(-s m_i)) is convex, L'(s) = -sum_i w_i m_i
    sigma(-s m_i); the minimiser over [1 / _MAX_TEMPERATURE, 1] is the root of L' (brentq) or an end
    point. T < 1 is never returned: training margins are optimistic (at lam = 0, where sigma(f) is
    KLR's own model, the fitted T is below 1 wherever we measured it), and what T corrects is the
    lam shift's inflation of f (S-KLR section 3.1: ||w|| grows with lam).
    """
    m = np.asarray(margins, dtype=np.float64)
    w = np.ones_like(m) if weights is None else np.asarray(weights, dtype=np.float64)
    keep = w > 0
    m, w = m[keep], w[keep]
    if len(m) == 0:
        return 1.0

    def slope(s):
        return -float(np.sum(w * m * expit(-s * m)))

    if slope(1.0) <= 0.0:
        return 1.0
    s_min = 1.0 / _MAX_TEMPERATURE
    if slope(s_min) >= 0.0:
        return _MAX_TEMPERATURE
    return 1.0 / brentq(slope, s_min, 1.0, xtol=1e-12, rtol=1e-10)


def _log_proba(z):
    """log P from the log-odds z: (n,) for two classes (log-sigmoid of -z and z), (n, k) one-vs-rest
    (each column's log-sigmoid, normalised by logsumexp)."""
    if z.ndim == 1:
        return np.column_stack([log_expit(-z), log_expit(z)])
    L = log_expit(z)
    return L - logsumexp(L, axis=1, keepdims=True) if L.size else L


# ---------------------------------------------------------------------- estimators
class _BaseKLR(ConstrainedParamsMixin, CallbackSupportMixin, KernelModelMixin, ClassifierMixin, BaseEstimator):
    """Shared machinery of KernelLogisticRegression and SparseKernelLogisticRegression."""

    # (no rule over several parameters: ConstrainedParamsMixin's _check_params)
    _parameter_constraints: dict = {
        "C": [POSITIVE],
        "kernel": [StrOptions(set(KERNELS))],
        **KERNEL_PARAM_CONSTRAINTS,
        "wss": [StrOptions(set(WSS))],
        "bound": [StrOptions({"auto"}), POSITIVE],
        "tol": [POSITIVE],
        "shrinking": ["boolean"],
        "cache_size": [POSITIVE],
        "class_weight": CLASS_WEIGHT_CONSTRAINT,
        "max_iter": MAX_ITER_CONSTRAINT,
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
        "time_limit": TIME_LIMIT_CONSTRAINT,
        "solver": [StrOptions(set(SOLVERS))],
        "n_components": [StrOptions({"auto"}), NumInterval(Integral, 1, None, closed="left")],
        "basis": [StrOptions(set(BASES))],
        "refine_basis": [NumInterval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def _fit_budget(self, X, n_splits=None):
        """The stated memory budget of a fit on X (sparsekernel._memory.fit_budget): the SMO route's,
        and the compact route's working set (the fitted basis; on the exact route its start's,
        POLISH_COMPONENTS points, freed before SMO)."""
        if n_splits is not None:
            return smo_budget(self, X, 2.0, 320, n_splits)
        M = int(self.n_expansion_) if getattr(self, "solver_", None) == "nystrom" else POLISH_COMPONENTS
        return smo_budget(self, X, 2.0, 320, compact=compact_working_bytes(X.shape[0], M))

    def _lam(self):  # the S-KLR coefficient lam of the resolved estimator
        return 0.0

    def _route(self, n_samples):
        """'smo' or 'nystrom' for a training set of n_samples points (solver='auto': the exact SMO up to
        AUTO_SMO_MAX points, where it is fast, the compact basis beyond. benchmarks/results/proba.md,
        C = 1: at 3,200-3,500 points the exact route is as fast or faster (spambase, waveform); at
        5,000 the compact one is 1.3-1.6x faster on coil2000, magic and twonorm and within 5 % on
        a9a, w8a, ring and usps; at 13,000-15,000 it is 1.2-3.5x faster with its basis at 512-1,024
        points.)"""
        if self.solver != "auto":
            return self.solver
        return "smo" if n_samples <= AUTO_SMO_MAX or self.kernel == "precomputed" else "nystrom"

    def _n_components(self, n_samples):
        """(M, auto): the basis size of the compact route, or with n_components='auto' its cap (the
        basis grows from 256 points by doubling until the objective stops falling, up to
        AUTO_MAX_COMPONENTS and what float32 blocks of cache_size MB hold)."""
        if isinstance(self.n_components, str):
            fits = int(float(self.cache_size) * 2**20 // (4 * n_samples)) - 1
            return max(1, min(n_samples, AUTO_MAX_COMPONENTS, fits)), True
        return min(n_samples, int(self.n_components)), False

    @with_callbacks
    def fit(self, X, y, sample_weight=None, *, search_rows=None):
        """Fit on X (dense or CSR; a kernel matrix for 'precomputed') and labels y.

        Two classes give one problem; more give one-vs-rest problems (one per class).
        ``search_rows`` is set by sparsekernel's searches only (``sparsekernel._warm.SearchRows``)."""
        if restore_prefitted(self, X, y, sample_weight, search_rows):  # made on a cluster by a PathSearchCV
            return self
        t0 = time.perf_counter()
        threads = self._check_params()
        lam = self._lam()
        X, y, keep, Xk, Ck, problems = self._prepare(X, y, sample_weight)
        if self._route(len(keep)) == "nystrom":
            self._fit_compact(X, Xk, keep, problems, Ck, lam, threads, y)
            self.fit_time_ = time.perf_counter() - t0
            return self
        results = self._solve_exact(X, y, sample_weight, keep, Xk, problems, Ck, lam, threads, search_rows)
        self._store_model(X, keep, problems, Ck, lam, results)
        self.fit_time_ = time.perf_counter() - t0
        if self.verbose:
            for k, r in enumerate(results):
                print(f"[sparsekernel] problem {k}: {r.n_iter} iterations, gap {r.gap:.3g}, "
                      f"kept {int(np.sum(r.alpha > r.lo))} of {len(r.alpha)}, status {r.status}")
        warn_if_stopped_early(self, [r.status for r in results],
                              f"Solver terminated early (max_iter={self.max_iter}): the KKT gap is above tol. "
                              "Raise max_iter or tol.")
        return self

    def _solve_exact(self, X, y, sample_weight, keep, Xk, problems, Ck, lam, threads, search_rows=None):
        """The binary duals on the SMO engine. Inside a path (a PathSearchCV, ``sklr_path``: the
        fit's ``search_rows``) a problem on the same data with the same box starts from the previous
        solution (``_warm.warm_point``: a walk along lam at fixed C), in the previous solve's engine
        session, and a fold of a PathSearchCV reads its kernel rows from the search's shared rows.
        Otherwise, when the kernel rows cannot all stay cached, it starts from a compact fit."""
        warmth = _fit.fit_warmth(None, X, y, sample_weight, search_rows).restricted(keep)
        threads = warmth.fit_threads(threads)
        bounds = self._box_bounds(problems, Ck)
        kernel = (KernelSpec("precomputed") if self.kernel == "precomputed"
                  else KernelSpec(self.kernel, self._gamma, self.coef0, self.degree))
        workers = _fit.problem_workers(Xk, [len(yk) for yk in problems], threads)
        each_threads, each_cache = _fit.threads_and_cache(threads, self.cache_size, workers)
        options = SolverOptions(tol=float(self.tol), max_iter=int(self.max_iter), shrinking=bool(self.shrinking),
                                second_order=self.wss == "second", cache_mb=each_cache, threads=each_threads)
        starts = None if warmth.has_states(len(problems)) else self._compact_start(Xk, problems, Ck, lam, threads)
        duals = [klr_problem(yk, Ck, lam, b, None if starts is None else starts[k])
                 for k, (yk, b) in enumerate(zip(problems, bounds))]
        monitor = FitMonitor(self, len(problems), tol=float(self.tol), X=X, y=y, parallel=workers > 1,
                             deadline=warmth.deadline)
        results = _fit.solve_problems(Xk, kernel, duals, options, warmth=warmth, monitor=monitor, workers=workers)
        monitor.close()
        return results

    def _prepare(self, X, y, sample_weight):
        """Validated X (canonical CSR if sparse), y, and the binary problems of a fit: the indices
        ``keep`` of the samples with positive weight, their rows Xk (the kernel block for
        'precomputed'), their C_i and one +-1 label vector per problem (one for two classes, +1 =
        classes_[1]; one per class otherwise, class k against the rest). Sets classes_, _gamma and
        shape_fit_."""
        X, y = validate_data(self, X, y, accept_sparse=self._accept_sparse(), dtype=[np.float64, np.float32],
                             order="C")
        self._check_precomputed(X, fit=True)
        if sp.issparse(X):
            X = canonical_csr(X)
        self.classes_, y_enc = class_labels(y)
        n_classes = len(self.classes_)
        if n_classes < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {n_classes} class")
        Ci = per_sample_bounds(float(self.C), self.classes_, y_enc, self.class_weight, sample_weight, X.shape[0])
        # samples of zero weight carry no loss: a_i = 0, left out of the solve
        keep = np.flatnonzero(Ci > 0)
        if len(np.unique(y_enc[keep])) < 2:
            raise ValueError("Invalid input: the samples with positive weight (sample_weight times class_weight) "
                             "must belong to at least two classes")
        self._gamma = resolve_gamma(self.gamma, X) if self.kernel != "precomputed" else 0.0
        if self.kernel != "precomputed":
            check_kernel_range(self.kernel, self._gamma, float(self.coef0), int(self.degree), X)
        self.shape_fit_ = X.shape
        Xk = X[keep] if len(keep) < X.shape[0] else X
        if self.kernel == "precomputed":
            Xk = np.ascontiguousarray(X[np.ix_(keep, keep)])
        Ck = np.ascontiguousarray(Ci[keep])
        # one problem for two classes (+1 = classes_[1]), else class k against the rest
        targets = [1] if n_classes == 2 else list(range(n_classes))
        problems = []
        for k in targets:
            yk = np.where(y_enc[keep] == k, 1.0, -1.0)
            if np.all(yk > 0) or np.all(yk < 0):
                raise ValueError(f"class {self.classes_[k]!r} has no sample of positive weight")
            problems.append(yk)
        return X, y, keep, Xk, Ck, problems

    def _box_bounds(self, problems, Ck):
        """The box parameter of each problem (``box_bound``), with the warning when 'auto' shrank it."""
        bounds = []
        for yk in problems:
            b, shrunk = box_bound(self.bound, Ck, yk)
            if shrunk:
                warnings.warn("bound='auto': the box [min(1e-5, 1e-3 min C_i), C_i - ...] admits no a with "
                              "y'a = 0 (one class has too few samples or too small C_i for the other's lower "
                              f"bounds); using bound={b:.3g}, half the largest feasible value", UserWarning)
            bounds.append(b)
        return bounds

    def _compact_start(self, Xk, problems, Ck, lam, threads):
        """The exact route's start when its kernel rows cannot all stay cached (N^2 float32 entries
        over cache_size): the decision values of a compact fit on POLISH_COMPONENTS uniform basis
        points (fewer if its float32 block would not fit cache_size), from which ``dual_start`` gives
        a near-optimal a (on a9a 3.1x fewer SMO steps and 1.7x fewer kernel values than the
        class-constant start, benchmarks/results/klr_compact.md);
        None otherwise (with every row cached the kernel pass dominates and the start does not pay)."""
        n = Xk.shape[0]
        if self.kernel == "precomputed" or 4.0 * n * n <= float(self.cache_size) * 2**20 or n <= POLISH_COMPONENTS:
            return None
        M = min(POLISH_COMPONENTS, int(float(self.cache_size) * 2**20 // (4 * n)) - 1)
        if M < 64:  # the float32 block of a useful basis does not fit cache_size: start as usual
            return None
        fit = self._compact_problems(Xk, problems, Ck, lam, threads, tol=max(float(self.tol), 1e-4), max_iter=0)
        with one_thread("blas"):  # see _fit_compact
            _, _, states = fit_compact(fit, M, "uniform", 0)
        return [st["f"] for st in states]

    def _compact_problems(self, Xk, problems, Ck, lam, threads, *, tol, max_iter, monitor=None):
        """The binary problems on the compact route (_compact.CompactFit) with this estimator's
        kernel, memory budget and random state."""
        ev = KernelEvaluator(self.kernel, self._gamma, float(self.coef0), int(self.degree), threads)
        return CompactFit(Xk, problems, Ck, lam, ev, tol=tol, max_iter=max_iter, budget_mb=self.cache_size,
                          rng=check_random_state(self.random_state), monitor=monitor)

    def _fit_compact(self, X, Xk, keep, problems, Ck, lam, threads, y):
        """The compact-basis route (_compact.py): f(x) = sum_j beta_j K(z_j, x) + b over M basis points,
        Newton on the (shifted) primal restricted to them."""
        M, auto = self._n_components(len(keep))
        monitor = FitMonitor(self, len(problems), tol=float(self.tol), X=X, y=y, metric="decrement")
        fit = self._compact_problems(Xk, problems, Ck, lam, threads, tol=self.tol,
                                     max_iter=self.max_iter if self.max_iter > 0 else 0, monitor=monitor)
        # BLAS on one thread: its threaded products over N sum in an order that depends on the thread
        # count, and the model must not (measured: no slower on 2 cores, the row-block products are
        # memory-bound); the kernel blocks use the threads
        with one_thread("blas"):
            Z, idx, states = fit_compact(fit, M, self.basis, int(self.refine_basis), auto=auto)
        monitor.close()
        self._store_compact(X, keep, Z, idx, states, len(keep), fit.n_cg, lam)

    def _store_compact(self, X, keep, Z, idx, states, n_train, n_cg, lam):
        """The fitted attributes of the compact route: the basis (training rows keep[idx] of X, or the
        points Z), the problems' Newton states (newton_compact) on n_train weighted rows."""
        if idx is not None:
            self.support_ = keep[idx].astype(np.int32)
            self._set_support_vectors(X, self.support_)
        else:  # k-means centres or refined points: not training samples
            self.support_ = np.empty(0, dtype=np.int32)
            self.support_vectors_ = Z
        self.dual_coef_ = np.vstack([st["w"][:-1] for st in states])
        self.intercept_ = np.array([st["w"][-1] for st in states])
        self.n_expansion_ = self.dual_coef_.shape[1]
        self.kept_fraction_ = self.n_expansion_ / X.shape[0]
        self.sparsity_ = 1.0 - self.kept_fraction_
        self.objective_ = np.array([st["objective"] for st in states])
        self.n_iter_ = np.array([st["n_iter"] for st in states], dtype=np.int64)
        self.n_cg_iter_ = n_cg
        self.n_kernel_evals_ = np.full(len(states), n_train * self.n_expansion_, dtype=np.int64)
        self.converged_ = all(st["status"] == 0 for st in states)
        self.solver_ = "nystrom"
        self.rho_ = lam if len(states) == 1 else np.full(len(states), lam)  # Observation 1, exact here
        self.solver_stats_ = [{"n_iter": st["n_iter"], "cg_iter": st["cg_iter"], "decrement": st["decrement"],
                               "objective": st["objective"], "status": st["status"]} for st in states]
        if len(states) == 1:
            self.objective_ = float(self.objective_[0])
        warn_if_stopped_early(self, [st["status"] for st in states],
                              f"Newton stopped at max_iter={self.max_iter} before the objective reached tol. "
                              "Raise max_iter or tol.")

    def _store_model(self, X, keep, problems, Ck, lam, results):
        n_prob = len(results)
        n_keep = len(keep)
        coef = np.zeros((n_prob, n_keep))
        kept = np.zeros(n_keep, dtype=bool)
        for k, (r, yk) in enumerate(zip(results, problems)):
            above = r.alpha > r.lo  # at the lower bound counts as zero (S-KLR section 5.1)
            coef[k, above] = (r.alpha * yk)[above]
            kept |= above
        support_local = np.flatnonzero(kept)
        self.support_ = keep[support_local].astype(np.int32)
        self.dual_coef_ = coef[:, support_local]
        self.intercept_ = np.array([-r.rho for r in results])
        self._set_support_vectors(X, self.support_)
        self.n_expansion_ = len(self.support_)
        self.kept_fraction_ = self.n_expansion_ / X.shape[0]
        self.sparsity_ = 1.0 - self.kept_fraction_
        self.bound_ = np.array([float(r.lo[0]) for r in results])
        rb = [measured_rho(r, yk, Ck, lam) for r, yk in zip(results, problems)]
        self.rho_ = np.array([v[0] for v in rb])
        primal = [primal_objective(r, yk, Ck, lam) for r, yk in zip(results, problems)]  # (once: the gap's too)
        self.duality_gap_ = np.array([duality_gap(r, yk, Ck, lam, P) for r, yk, P in zip(results, problems, primal)])
        self.dual_objective_ = np.array([r.obj for r in results])
        self.objective_ = np.array(primal)
        self.solver_ = "smo"
        self.kkt_gap_ = np.array([r.gap for r in results])
        self.n_iter_ = np.array([r.n_iter for r in results], dtype=np.int64)
        self.n_kernel_evals_ = np.array([r.kernel_evals for r in results], dtype=np.int64)
        self.converged_ = all(r.status == 0 for r in results)
        self.solver_stats_ = [r.stats() for r in results]
        if n_prob == 1:  # the scalar forms for a binary problem
            self.rho_ = float(self.rho_[0])
            self.duality_gap_ = float(self.duality_gap_[0])
            self.objective_ = float(self.objective_[0])

    def _expansion(self):
        """The fitted model as one kernel expansion (``_base.Expansion``) of its decision values."""
        return Expansion(self.kernel, self._gamma, self.coef0, self.degree, self.support_vectors_, self.dual_coef_,
                         self.intercept_)

    # ------------------------------------------------------------------ prediction
    def decision_function(self, X):
        """f(x) = sum_i a_i y_i K(x_i, x) - b: shape (n,) for two classes (> 0 means classes_[1]),
        (n, n_classes) one-vs-rest scores otherwise."""
        check_is_fitted(self)
        dec = self._decision_values(X, self.dual_coef_, self.intercept_)
        return dec[:, 0] if len(self.classes_) == 2 else dec

    def _log_odds(self, X):
        """f(x) / T: the decision values on the scale of the log-odds, T = ``temperature_`` (1 for KLR,
        for S-KLR at lam = 0 and for models saved before the attribute existed)."""
        return self.decision_function(X) / getattr(self, "temperature_", 1.0)

    def predict_log_proba(self, X):
        """log P(y | x), computed in log space (log-sigmoid; one-vs-rest scores normalised by
        logsumexp), so that no probability underflows to log 0."""
        return _log_proba(self._log_odds(X))

    def predict_proba(self, X):
        """P(y | x) = 1 / (1 + exp(-y f(x) / T)) with T = ``temperature_`` (S-KLR eq. 3 when T = 1:
        KernelLogisticRegression, and SparseKernelLogisticRegression at lam = 0; see the latter for
        T at lam > 0); one-vs-rest probabilities (each class's own T) are normalised to sum to 1."""
        z = self._log_odds(X)
        if len(self.classes_) == 2:
            return np.column_stack([expit(-z), expit(z)])
        return np.exp(_log_proba(z))

    def predict(self, X):
        """The argmax of predict_proba (so the two always agree)."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


_PARAMS_DOC = """
    Parameters
    ----------
    C : float, default=1.0
        Weight of the logistic loss (> 0); C_i = C * class_weight[y_i] * sample_weight_i.
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'laplacian', 'precomputed'}, default='rbf'
    degree : int, default=3
    gamma : {'scale', 'auto'} or float, default='scale'
        As in :class:`sklearn.svm.SVC`.
    coef0 : float, default=0.0
    wss : {'second', 'first'}, default='second'
        Working-set rule: 'second' is S-KLR eqs. (33)-(35) (the curvature of the entropy enters the
        selection), 'first' the maximal violating pair (Keerthi et al.).
    bound : 'auto' or float, default='auto'
        The box [bound, C_i - bound] of S-KLR (22c). 'auto' = min(1e-5, 1e-3 min C_i), shrunk with a
        warning when the box cannot satisfy y'a = 0; an explicit infeasible bound raises ValueError.
    tol : float, default=1e-3
        Stop when max_{I_up}(-y_i grad_i) - min_{I_low}(-y_i grad_i) < tol (S-KLR eq. 27; SVC's
        meaning; Keerthi's tau is tol / 2).
    shrinking : bool, default=True
        Variables at a bound whose KKT condition holds leave the active set; all are re-checked at
        the end (the solution does not change).
    cache_size : float, default=1000
        Memory budget in MB: on the compact route for its N x (M + 1) kernel block (float32 unless
        tol < 1e-4; a basis that does not fit is refused with a ValueError before any work). On
        the SMO route the kernel-row cache (float32 rows; never exceeded). Larger than SVC's 200 MB because the
        KLR solution is dense: every row is revisited several times (5 to 10 times per row on magic
        and a9a), so a cache that holds all N^2 * 4 bytes makes the solve several times cheaper
        (benchmarks/results/klr.md); when it does hold them, the rows computed for the start-up are
        kept.
    class_weight : dict or 'balanced', default=None
    max_iter : int, default=-1
        Cap on SMO pair steps (Newton steps on the compact route) per binary problem (-1: none;
        the compact route then stops after 1000); hitting it warns (ConvergenceWarning) and sets
        ``converged_ = False``.
    n_jobs : int or None, default=None
        Threads (None: every thread the process may use, counted as scikit-learn does:
        OMP_NUM_THREADS, threadpoolctl limits, joblib's workers, CPU affinity and quotas).
    verbose : bool, default=False
        Print the solver's progress (iteration, KKT gap against tol, active set, time) about once a
        second, and a summary per problem.
    time_limit : float or None, default=None
        Seconds for the whole fit: the solver stops at the budget with a ConvergenceWarning and
        returns its current iterate as a usable model (``converged_ = False``); see
        :class:`sparsekernel.SVC`. Progress also goes to scikit-learn's callbacks (``set_callbacks``).
    solver : {'auto', 'smo', 'nystrom'}, default='auto'
        'smo': the exact dual by SMO (every training point is a candidate expansion vector).
        'nystrom': the compact-basis route: f(x) = sum_j beta_j K(z_j, x) + b over ``n_components``
        basis points, the (shifted) primal restricted to them solved by preconditioned Newton-CG on
        the N x M kernel block (with M = N and the training set as basis this is the exact KLR).
        'auto': 'smo' up to 4,000 training points, 'nystrom' beyond (where the exact dual, dense
        in a, costs several N^2 kernel values; benchmarks/results/proba.md).
    n_components : int or 'auto', default='auto'
        Basis size M of the compact route. 'auto' starts at 256 points and doubles while a doubling
        lowers the objective by more than 1 %, up to 1,024 and to what ``cache_size`` holds.
    basis : {'uniform', 'kmeans', 'ivm'}, default='uniform'
        Basis points of the compact route: a uniform sample of the training points, k-means
        centres, or a batched import-vector rule (Zhu & Hastie's IVM: points imported by the
        objective decrease of a one-coordinate Newton step). On a9a, w8a, magic and skin k-means
        gives the log-loss of a uniform sample at a higher cost; IVM is better at equal M on w8a.
    refine_basis : int, default=0
        L-BFGS iterations that move the basis points to lower the objective (learned expansion
        vectors for the logistic loss, as SLMC learns them for the hinge loss); 0 keeps them.
    random_state : int, RandomState instance or None, default=None
        Seeds the basis choice and the preconditioner's row sample of the compact route.
"""

_ATTRS_DOC = """
    Attributes
    ----------
    classes_ : ndarray
    support_ : ndarray of int32
        Indices of the expansion vectors (a_i above the lower bound in some binary problem; on the
        compact route the basis points, empty when they are k-means centres or refined points).
    support_vectors_ : ndarray or sparse matrix
        The expansion vectors (the basis points z_j on the compact route).
    dual_coef_ : ndarray of shape (n_problems, n_expansion)
        a_i y_i of each binary problem (one problem for two classes, one per class otherwise);
        beta_j on the compact route.
    intercept_ : ndarray of shape (n_problems,)
        -b, so that f(x) = K(x, SV) @ dual_coef_.T + intercept_.
    n_expansion_ : int
        Number of expansion vectors kept.
    kept_fraction_ : float
        n_expansion_ / n_samples: the share of the training points the model keeps.
    sparsity_ : float
        1 - kept_fraction_: the share of the training points the model dropped (0: none).
    solver_ : str
        The route that fitted the model ('smo' or 'nystrom').
    objective_ : float or ndarray
        The (shifted) primal 1/2 ||w||^2 + sum_i C_i log(1 + exp(lam - y_i f(x_i))) at the returned
        model, on both routes (comparable between them).
    rho_ : float or ndarray
        rho of S-KLR eq. (20), measured by least squares on the free variables (Observation 1: = lam);
        NaN when the free variables all belong to one class (then (20) cannot separate rho from b).
        On the compact route lam itself (the primal is solved with rho = lam).
    duality_gap_ : float or ndarray
        Relative gap between the shifted primal and the dual at the returned point (>= 0; SMO route).
    bound_ : ndarray
        The box parameter used by each problem (SMO route).
    n_iter_, n_kernel_evals_ : ndarray of shape (n_problems,)
        SMO pair steps, or Newton steps on the compact route; kernel values computed.
    dual_objective_, kkt_gap_ : ndarray of shape (n_problems,)
        SMO route only.
    n_cg_iter_ : int
        Conjugate-gradient steps of all Newton steps (compact route only).
    converged_ : bool
    fit_time_ : float
    solver_stats_ : list of dict
"""


class KernelLogisticRegression(_BaseKLR):
    __doc__ = """Kernel logistic regression by SMO (Keerthi, Duan, Shevade & Poo 2005).

    Minimises 1/2 ||w||^2 + sum_i C_i log(1 + exp(-y_i f(x_i))) through its dual, solved by the SMO
    engine with the entropic term; ``predict_proba`` comes from the same fit as ``predict`` (no
    inner cross-validation) and agrees with it.
    """ + _PARAMS_DOC + _ATTRS_DOC + """
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import train_test_split
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekernel import KernelLogisticRegression
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    >>> model = make_pipeline(StandardScaler(), KernelLogisticRegression()).fit(X_train, y_train)
    >>> proba = model.predict_proba(X_test)  # from the same fit: no inner cross-validation
    >>> bool((proba.argmax(axis=1) == model.predict(X_test)).all())
    True
    >>> print(f"{model.score(X_test, y_test):.2f}")
    0.96
    """

    def __init__(self, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, wss="second", bound="auto",
                 tol=1e-3, shrinking=True, cache_size=1000, class_weight=None, max_iter=-1, n_jobs=None,
                 verbose=False, time_limit=None, solver="auto", n_components="auto", basis="uniform",
                 refine_basis=0, random_state=None):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.wss = wss
        self.bound = bound
        self.tol = tol
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.time_limit = time_limit
        self.solver = solver
        self.n_components = n_components
        self.basis = basis
        self.refine_basis = refine_basis
        self.random_state = random_state


class SparseKernelLogisticRegression(_BaseKLR):
    __doc__ = """Sparse kernel logistic regression (S-KLR, Consolo, Manno & Amaldi).

    The dual of KLR with an extra -lam sum_i a_i (S-KLR (22)), i.e. the logistic loss shifted by
    rho = lam: min 1/2 ||w||^2 + sum_i C_i log(1 + exp(lam - y_i f(x_i))). A point leaves the model
    (a_i at the lower bound) once its margin y_i f(x_i) exceeds lam + log(C_i / bound): lam is on the
    log-odds scale, and sparsity needs a C well above log(C / bound) (see ``auto_lam``).

    Probabilities. The shifted loss inflates f (S-KLR section 3.1: ||w|| grows with lam while the
    boundary stays), so sigma(f) is over-confident at lam > 0 (magic at C = 10: test log-loss 0.324
    at lam = 0, 0.618 at lam = C / 2, 1.09 at lam = C). ``predict_proba`` reports sigma(f / T) with one
    temperature T >= 1 per binary problem, fitted by maximum likelihood on the training decision
    values (weighted by C_i; ``temperature_``); T = 1 exactly at lam = 0, where the model is KLR's.
    The shifted loss's own inverse link, log-odds = log sigma(lam + f) - log sigma(lam - f) (the
    population minimiser of the shifted loss: a proper composite loss), was measured against it and
    is worse wherever the fit is not separable (it is exact only for the unregularised population
    minimiser, and the regularised f at large lam is SVM-like, f ~ lam g): e.g. magic at C = 10,
    lam = 10: test log-loss 0.436 against 0.342 with T (0.335 with T at lam = C / 2); at lam='auto'
    and the CV-chosen C the shifted link was worse than T on 11 of the 12 S-KLR sets (equal on the
    12th, where lam = 0.0025)
    (benchmarks/results/klr_sklr_default.md). The temperature keeps the sign of f, so ``predict``
    (the argmax of ``predict_proba``) is unchanged for two classes. Where the training points are
    all fitted with large margins (a separable, over-fitted model) the likelihood asks for no
    deflation and T = 1, as sigma(f) is then over-confident at lam = 0 too.
    """ + _PARAMS_DOC.replace("    C : float", """    lam : float or 'auto', default='auto'
        The sparsity coefficient (>= 0). 'auto' = ``auto_lam(C, bound)`` = clip(log((C - b) / b),
        C / 10, C / 4): the paper's lambda-choice C / 10 (Appendix C) for C >~ 200, log((C - b) / b)
        (about 16 with b = 1e-5) for C between about 60 and 200, C / 4 below, where no lam is both
        sparse and accurate (with the defaults C = 1, gamma='scale' the model keeps every point;
        raise C for a sparse model). ``sklr_path`` walks lam with warm starts;
        ``klr_lambda_bound`` gives the Proposition 1 value above which the minority class stops
        being sparse.
    C : float""", 1) + _ATTRS_DOC.replace("""    bound_ : ndarray""", """    lam_ : float
        The lam the fit used ('auto' resolved).
    temperature_ : float or ndarray of shape (n_problems,)
        T of ``predict_proba`` = sigma(f / T) (1 at lam = 0).
    bound_ : ndarray""", 1) + """
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import train_test_split
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekernel import SparseKernelLogisticRegression
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    >>> sklr = SparseKernelLogisticRegression(C=1000)  # sparsity needs a large C; lam='auto'
    >>> model = make_pipeline(StandardScaler(), sklr).fit(X_train, y_train)
    >>> sklr.n_expansion_ < len(X_train) / 3  # it keeps fewer than a third of the points
    True
    >>> print(f"{model.score(X_test, y_test):.2f}")
    0.99
    >>> model.predict_proba(X_test).shape
    (143, 2)
    """

    _parameter_constraints: dict = {**_BaseKLR._parameter_constraints, "lam": [StrOptions({"auto"}), NON_NEGATIVE]}

    def __init__(self, C=1.0, lam="auto", kernel="rbf", degree=3, gamma="scale", coef0=0.0, wss="second",
                 bound="auto", tol=1e-3, shrinking=True, cache_size=1000, class_weight=None, max_iter=-1,
                 n_jobs=None, verbose=False, time_limit=None, solver="auto", n_components="auto", basis="uniform",
                 refine_basis=0, random_state=None):
        self.C = C
        self.lam = lam
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.wss = wss
        self.bound = bound
        self.tol = tol
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.time_limit = time_limit
        self.solver = solver
        self.n_components = n_components
        self.basis = basis
        self.refine_basis = refine_basis
        self.random_state = random_state

    def _lam(self):
        """lam of the fit ('auto' resolved; the parameters checked by _check_params)."""
        if isinstance(self.lam, str):
            return auto_lam(float(self.C), self.bound)
        return float(self.lam)

    def fit(self, X, y, sample_weight=None, *, search_rows=None):
        """Fit on X (dense or CSR; a kernel matrix for 'precomputed') and labels y, then the
        temperature of ``predict_proba`` on the training decision values.

        Two classes give one problem; more give one-vs-rest problems (one per class).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None
        search_rows : set by sparsekernel's searches only (``sparsekernel._warm.SearchRows``)

        Returns
        -------
        self
        """
        super().fit(X, y, sample_weight, search_rows=search_rows)
        t0 = time.perf_counter()
        self.lam_ = self._lam()
        self.temperature_ = self._fit_temperature(X, y, sample_weight)
        self.fit_time_ += time.perf_counter() - t0
        return self

    def _fit_temperature(self, X, y, sample_weight):
        """T per binary problem (see fit_temperature): 1 at lam = 0, else fitted on the decision values
        of (a fixed subsample of at most _TEMPERATURE_SAMPLE) training points weighted by C_i."""
        n_prob = 1 if len(self.classes_) == 2 else len(self.classes_)
        if self.lam_ == 0.0:
            return 1.0 if n_prob == 1 else np.ones(n_prob)
        X = self._validate_X(X)
        y_enc = np.searchsorted(self.classes_, column_or_1d(y))
        Ci = per_sample_bounds(float(self.C), self.classes_, y_enc, self.class_weight, sample_weight, X.shape[0])
        rows = np.arange(X.shape[0])
        if len(rows) > _TEMPERATURE_SAMPLE:
            rows = np.sort(np.random.RandomState(0).choice(len(rows), _TEMPERATURE_SAMPLE, replace=False))
        dec = self.decision_function(X[rows] if len(rows) < X.shape[0] else X)
        dec = dec.reshape(len(rows), -1)
        targets = [1] if n_prob == 1 else range(n_prob)
        T = np.array([fit_temperature(np.where(y_enc[rows] == k, 1.0, -1.0) * dec[:, j], Ci[rows])
                      for j, k in enumerate(targets)])
        return float(T[0]) if n_prob == 1 else T


def klr_lambda_bound(X, y, C=1.0, kernel="rbf", gamma="scale", coef0=0.0, degree=3, bound="auto", tol=1e-5,
                     n_jobs=None):
    """The S-KLR Proposition 1 value (eq. 21 / 36) for binary data:

        lam_max = max_{i in I_-} sum_j (C_bar - a_j(0)) y_j K_ji,      C_bar = C - bound,

    where I_- is the minority class (labelled -1 here), a(0) the KLR (lam = 0) solution. The paper
    states that for every lam >= lam_max every a_i of the minority class is >= C_bar (the minority
    class is not sparse), a bound for the lam grid. We find it holds on imbalanced data but not on
    near-balanced data (on a 50/49 Synth-like set the minority class saturates only at 2-10x this
    value; the proof in the paper's Appendix A drops the intercept b): treat it as a guide.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), two classes
    C, kernel, gamma, coef0, degree, bound, tol, n_jobs :
        As :class:`KernelLogisticRegression` (tol of the lam = 0 solve).

    Returns
    -------
    float
        lam_max.
    """
    X, y = check_X_y(X, y, accept_sparse=False if kernel == "precomputed" else "csr", dtype=np.float64,
                     order="C")
    validate_parameter_constraints(
        KernelLogisticRegression._parameter_constraints,
        dict(C=C, kernel=kernel, gamma=gamma, coef0=coef0, degree=degree, bound=bound, tol=tol, n_jobs=n_jobs),
        caller_name="klr_lambda_bound")
    classes, y_enc = np.unique(y, return_inverse=True)
    if len(classes) != 2:
        raise ValueError(f"klr_lambda_bound needs two classes, got {len(classes)}")
    if sp.issparse(X):
        X = canonical_csr(X)
    counts = np.bincount(y_enc)
    minority = int(np.argmin(counts))
    ypm = np.where(y_enc == minority, -1.0, 1.0)
    Ci = np.full(len(y), float(C))
    b, _ = box_bound(bound, Ci, ypm)
    g = resolve_gamma(gamma, X) if kernel != "precomputed" else 0.0
    threads = n_threads(n_jobs)
    Xc = core_matrix(X)
    spec = KernelSpec("precomputed") if kernel == "precomputed" else KernelSpec(kernel, g, coef0, degree)
    r = _engine.solve(Xc, spec, klr_problem(ypm, Ci, 0.0, b), SolverOptions(tol=tol, cache_mb=200.0, threads=threads))
    w = (float(C) - b - r.alpha) * ypm
    rows = np.flatnonzero(ypm < 0)
    if kernel == "precomputed":
        Kr = X[rows]
    else:
        Kr = KernelEvaluator(kernel, g, float(coef0), int(degree), threads)(X[rows], Xc)
    return float(np.max(Kr @ w))


def lam_path_fits(estimator, X, y, lams, sample_weight=None):
    """Fit ``estimator`` (a SparseKernelLogisticRegression, cloned) at every lam of ``lams`` in the
    given order, each solve warm-started from the previous lam's: yields (model, warm_started).

    At fixed C the box [bound, C_i - bound] does not depend on lam, so the previous solution a is a
    feasible start and its gradient needs no kernel evaluation, G0 = G + lam_prev - lam
    (``_warm.warm_point``); each binary problem keeps one engine session (its kernel row cache) over
    the whole walk (``_warm.PathStore``). The fits take the exact SMO route whatever ``solver`` says:
    the path is the one of the S-KLR dual. Each model is what ``fit`` gives at that lam (same
    attributes, temperature included); its ``solver_stats_`` say ``warm_started``.
    """
    store = PathStore()
    rows = SearchRows(store, _num_samples(X))
    try:
        for lam in lams:
            check_positive("lam", lam, allow_zero=True)
            model = clone(estimator).set_params(lam=float(lam), solver="smo").fit(X, y, sample_weight,
                                                                               search_rows=rows)
            yield model, all(st["warm_started"] for st in model.solver_stats_)
    finally:
        store.clear()
