"""The seam between the estimators and the SMO engine.

LIBSVM's split: the formulations (SVC's one-vs-one pairs, eps-SVR's doubled variables, (S-)KLR's
entropic box, SLMC's inner SVM) describe their dual problems here as :class:`DualProblem` values and
the one solver below (``_core.solve``, solver.hpp's ``Solver::solve``) solves them:

    min_a 1/2 a'Qa + sum_i psi_i(a_i)   s.t.  y'a = 0,  lo <= a <= hi,   Q_ij = y_i y_j K(x_i, x_j)

with psi_i(a) = p_i a (``term='linear'``) or C_i G(a / C_i) + p_i a (``term='entropic'``, KLR).

This module is the only caller of ``_core.solve``, ``Session`` and ``SharedRows``; it knows no
search and no estimator. What a fit does around the solve (warm starts and kept sessions of a
search, divide and conquer, problems in parallel) is the fit driver's (``_fit``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from . import _core
from ._base import KERNELS, KernelSpec, core_matrix  # noqa: F401  (KernelSpec: the engine's kernel type)

# the kinds of dual problem: one variable per point, or eps-SVR's two (a+ and a-) per point
KINDS = {"binary": 0, "eps_svr": 1}
TERMS = {"linear": 0, "entropic": 1}


@dataclass(frozen=True)
class SolverOptions:
    """How to solve: the engine's options (solver.hpp's SolverOptions)."""

    tol: float = 1e-3
    max_iter: int = -1
    shrinking: bool = True
    second_order: bool = True
    batched: bool = False  # the two-level route
    pair_start: bool = False  # ... starting with pair steps, blocks only for a hard problem (solver.hpp)
    working_set_size: int = 0  # its q (0: chosen from N, the threads and the cache)
    conjugate: bool = False  # CSMO directions on the pair route
    cache_mb: float = 200.0
    threads: int = 1
    trace: bool = False  # record (objective, |da|^2, a) per step (tests, benchmarks)

    def core(self, time_limit=0.0):
        o = _core.SolveOptions()
        o.tol, o.max_iter, o.shrinking, o.second_order = float(self.tol), int(self.max_iter), bool(self.shrinking), \
            bool(self.second_order)
        o.batched, o.q, o.conjugate = bool(self.batched), int(self.working_set_size or 0), bool(self.conjugate)
        o.pair_start = bool(self.pair_start)
        o.cache_mb, o.nthreads, o.trace = float(self.cache_mb), max(1, int(self.threads)), bool(self.trace)
        o.time_limit = float(time_limit)
        return o


@dataclass
class DualProblem:
    """One dual problem over rows ``idx`` of the fit's X (None: all of them; eps-SVR's 2n variables
    are over all n rows): labels y (+-1), linear term p, box [lo, hi] (lo None: 0), C_i of the
    entropic term, and ``start``, the point to start from when no warm start applies (None: a = lo
    for the linear term). ``nu``: the sum of a within each label class stays that of ``start`` too
    (the nu formulations' second equality, e'a = const: LIBSVM's Solver_NU), and the result's ``r``
    is their second multiplier."""

    y: np.ndarray
    p: np.ndarray
    hi: np.ndarray
    lo: np.ndarray | None = None
    C: np.ndarray | None = None
    term: str = "linear"
    kind: str = "binary"
    idx: np.ndarray | None = None
    start: np.ndarray | None = None
    nu: bool = False

    def __post_init__(self):
        if self.lo is None:
            self.lo = np.zeros(len(self.y))

    @property
    def entropic(self):
        return self.term == "entropic"


@dataclass
class SolveResult:
    """What the engine returns for one problem: the solution, its gradient, the offset rho (the
    decision function is sum_i y_i a_i K(x_i, x) - rho), the dual objective and the solve's
    statistics; with the problem's y, box and rows for the formulation above."""

    alpha: np.ndarray
    grad: np.ndarray
    rho: float
    r: float  # nu problems: the multiplier of e'a (Solver_NU's r); 0 otherwise
    obj: float
    gap: float
    n_iter: int
    n_outer_iter: int
    q: int
    status: int
    conjugate_fallbacks: int
    kernel_evals: int
    cache_hits: int
    cache_misses: int
    cache_peak_bytes: int
    grad_error: float = 0.0  # a bound on what float32 kernel sums left in grad (solver.hpp)
    team_threads: int = 1  # the engine's team (1: too small a problem to pay for threads)
    serial_periods: int = 0  # times the team ran on one thread because its helpers kept it waiting
    # the solve's wall time and its team's loops (parallel.hpp TeamStats: loops, wall_us,
    # master_work_us, wait_us, helper_work_us, solo_us, work_by_capacity_us): benchmarks/bench_manycore.py
    team: dict | None = field(default=None, repr=False)
    trace: np.ndarray | None = None
    trace_width: int | None = None
    warm_started: bool = False
    n_threads: int = 1
    levels: list | None = None  # a divided solve's levels (_dc.LevelStats), lowest first, the whole problem last
    grad_bar: np.ndarray | None = field(default=None, repr=False)  # G_bar (with shrinking): a warm start's Gbar0
    cluster_rho: np.ndarray | None = field(default=None, repr=False)  # a solve stopped at a level: rho per cluster
    partition: object = field(default=None, repr=False)  # ... and the cluster tree (_dc.Partition) it was divided by
    y: np.ndarray | None = field(default=None, repr=False)
    lo: np.ndarray | None = field(default=None, repr=False)
    hi: np.ndarray | None = field(default=None, repr=False)
    idx: np.ndarray | None = field(default=None, repr=False)

    _ARRAYS = ("alpha", "grad", "grad_bar", "y", "lo", "hi", "idx", "cluster_rho", "partition")  # not in stats()

    def stats(self):
        """The solve's statistics as a dict (an entry of the estimators' ``solver_stats_``)."""
        out = {name: getattr(self, name) for name in (_STATS if self.trace is not None else _STATS_NO_TRACE)}
        if self.levels is None:
            del out["levels"]
        else:
            out["levels"] = [vars(s).copy() for s in self.levels]
        return out


# the fields of SolveResult.stats(), without and with the trace (dataclasses.fields costs 20 us a call)
_STATS = tuple(f.name for f in fields(SolveResult) if f.name not in SolveResult._ARRAYS)
_STATS_NO_TRACE = tuple(name for name in _STATS if not name.startswith("trace"))


def solve(X, kernel, problem, options, *, a0=None, g0=None, gbar0=None, g0_error=0.0, session=None, cancel=None,
          time_limit=0.0, progress=None):
    """Solve one DualProblem on X (a ``_core.Matrix`` over the problem's points, or an array) with
    the kernel (KernelSpec), from a0 (None: ``problem.start``, else the lower bounds) with its
    gradient g0 when known (and with it gbar0, the bounded variables' part of it, SolveResult's
    ``grad_bar``) and a bound on its error from float32 sums (``g0_error``, taken off tol);
    ``session`` supplies the Q-provider (row cache) when given."""
    if not isinstance(X, _core.Matrix):
        X = core_matrix(X)
    if a0 is None:
        a0 = problem.start
    core_options = options.core(time_limit)
    core_options.nu = bool(problem.nu)
    core_options.g0_error = float(g0_error)
    r = _core.solve(X=X, kernel=kernel.core, options=core_options, term=TERMS[problem.term],
                    problem=KINDS[problem.kind], y=problem.y, p=problem.p, C=problem.C, lo=problem.lo, hi=problem.hi,
                    a0=a0, g0=g0, gbar0=gbar0, session=session, cancel=cancel, progress=progress)
    if len(r["grad_bar"]) == 0:  # no shrinking: no G_bar kept
        r["grad_bar"] = None
    return SolveResult(**r, n_threads=options.threads, y=problem.y, lo=problem.lo, hi=problem.hi, idx=problem.idx)


def open_session(X, kernel, problem, *, cache_mb, threads, shared=None, global_index=None):
    """An engine session for the problem's labels: a Q-provider whose row cache outlives one solve
    (a path walks C on it). With ``shared`` (a search's SharedRows) its rows come from there,
    ``global_index`` mapping the problem's points to the shared set's rows."""
    if not isinstance(X, _core.Matrix):
        X = core_matrix(X)
    return _core.Session(X=X, kernel=kernel.core, y=problem.y, problem=KINDS[problem.kind], cache_mb=float(cache_mb),
                         nthreads=max(1, int(threads)), shared=shared,
                         global_index=None if global_index is None else np.ascontiguousarray(global_index,
                                                                                             dtype=np.int32))


def shared_rows(X, kernel, cache_mb):
    """A search's kernel rows over its whole training set X (one per kernel setting)."""
    return _core.SharedRows(core_matrix(X) if not isinstance(X, _core.Matrix) else X, kernel.core, float(cache_mb))


def problem_rows(X, problem, precomputed):
    """The rows of X a problem is over (for a precomputed kernel, its block of the kernel matrix)."""
    idx = problem.idx
    if precomputed:
        return X if idx is None or len(idx) == X.shape[0] else np.ascontiguousarray(X[np.ix_(idx, idx)])
    return X if idx is None or len(idx) == X.shape[0] else X[idx]
