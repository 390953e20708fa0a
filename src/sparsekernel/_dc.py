"""DC-SVM: one dual problem solved by divide and conquer (Hsieh, Si & Dhillon, ICML 2014).

The problem's points are split into a tree of clusters by kernel k-means (k children per cluster, L
levels): the clustering runs on a sample of the points and every point then descends the tree to
the nearest centre in the kernel's feature space (``Partition``). The dual problem restricted to
each cluster of the lowest level is solved alone (the clusters in parallel threads, one engine
thread each); each level above starts from its children's solutions put side by side, and the whole
problem last, from level 1's. Each restricted problem keeps y'a = 0, so every start is feasible,
and the final solve is the exact SVM to ``tol``: the clusters only decide where it starts. A
start's gradient is its children's final gradients plus the kernel products between the children
only (``StartGradient``): the final solve's start-up, n x nSV kernel values, is most of its cost. With
little interaction between clusters (the kernel's reach is short against the distances between
centres) the children's solutions are nearly the parent's, and the parent's solve, shrinking
first, ends in few steps.

``early_stop_level`` l stops after level l: the model is then the clusters' own models, a point
predicted by the model of the cluster it descends to (the paper's "early prediction").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from . import _core
from ._base import KernelEvaluator, core_matrix, run_parallel
from ._engine import SolveResult

# children of a cluster (the paper's k)
CHILDREN = 4
# the clustering: points sampled per leaf cluster, Lloyd iterations, points that stand for a centre
_SAMPLE_PER_LEAF = 32
_MAX_SAMPLE = 4096
_KMEANS_ITER = 30
_CENTRE_POINTS = 256
# the lowest level's clusters hold about this many points when the levels are chosen from n
LEAF_SIZE = 4000


def n_levels_for(n, k, leaf_size=None):
    """The levels of a tree whose lowest clusters hold about ``leaf_size`` (default LEAF_SIZE) of n
    points (at least 1)."""
    leaf_size = LEAF_SIZE if leaf_size is None else leaf_size
    levels = 1
    while n / k ** (levels + 1) >= leaf_size:
        levels += 1
    return levels


def _kernel_kmeans(K, k, rng, n_iter=_KMEANS_ITER):
    """Labels (0..k-1) of the points of the kernel matrix K by k-means in the feature space:
    ||phi_i - mu_c||^2 = K_ii - 2 mean_{j in c} K_ij + mean_{j,l in c} K_jl, k-means++ seeds."""
    m = K.shape[0]
    diag = np.diag(K).copy()
    seeds = [int(rng.randint(m))]
    d2 = np.maximum(diag - 2.0 * K[:, seeds[0]] + diag[seeds[0]], 0.0)
    for _ in range(1, k):
        total = d2.sum()
        c = int(rng.choice(m, p=d2 / total)) if total > 0 else int(rng.randint(m))
        seeds.append(c)
        d2 = np.minimum(d2, np.maximum(diag - 2.0 * K[:, c] + diag[c], 0.0))
    labels = np.argmin(diag[seeds][None, :] - 2.0 * K[:, seeds], axis=1)
    for _ in range(n_iter):
        onehot = np.zeros((m, k))
        onehot[np.arange(m), labels] = 1.0
        sizes = onehot.sum(axis=0)
        empty = sizes == 0
        sizes[empty] = 1.0
        mean_k = (K @ onehot) / sizes  # mean_{j in c} K_ij
        self_term = (onehot * mean_k).sum(axis=0) / sizes  # mean_{j,l in c} K_jl
        dist = self_term[None, :] - 2.0 * mean_k
        dist[:, empty] = np.inf
        new = np.argmin(dist, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
    return labels


@dataclass
class Partition:
    """The tree of clusters over the rows of X: ``labels[l - 1]`` is every row's cluster at level l
    (k^l ids, parent * k + child), ``centres[l - 1][c]`` the rows of ``sample_X`` that stand for
    cluster c's centre (empty for an empty cluster) and ``self_terms[l - 1][c]`` the centre's
    mean_{j,l} K_jl. ``route`` sends new points down the tree."""

    k: int
    sample_X: object = field(repr=False)
    centres: list = field(repr=False)
    self_terms: list = field(repr=False)
    labels: list = field(repr=False, default_factory=list)
    sample_rows: np.ndarray | None = field(repr=False, default=None)  # the rows of X sample_X holds

    @property
    def n_levels(self):
        return len(self.centres)

    def route(self, X, evaluator, level=None):
        """The clusters at ``level`` (default: the lowest) of the rows of X."""
        labels = np.zeros(X.shape[0], dtype=np.int64)
        for lev in range(1, (self.n_levels if level is None else level) + 1):
            labels = self.descend(X, evaluator, labels, lev)
        return labels

    def descend(self, X, evaluator, parent, level):
        """The clusters at ``level`` of rows of X whose clusters one level up are ``parent``: each
        row goes to the nearest centre among its parent's children."""
        B, k = self.sample_X, self.k
        out = np.empty(len(parent), dtype=np.int64)
        for p in np.unique(parent):
            rows = np.flatnonzero(parent == p)
            children = np.arange(p * k, (p + 1) * k)
            out[rows] = p * k + _nearest(X[rows], B, evaluator, [self.centres[level - 1][c] for c in children],
                                         self.self_terms[level - 1][children])
        return out


def _nearest(X, B, evaluator, members, self_terms):
    """Index (into ``members``) of the nearest centre of each row of X, centre c the mean of rows
    members[c] of B: argmax_c mean_{j in c} K(x, b_j) - mean_{j,l in c} K_jl / 2."""
    present = np.array([len(m) > 0 for m in members])
    used = np.unique(np.concatenate([np.asarray(m, dtype=np.int64) for m in members]))
    if len(used) == 0:
        return np.zeros(X.shape[0], dtype=np.int64)
    coef = np.zeros((len(members), len(used)))
    for c, m in enumerate(members):
        if len(m):
            coef[c, np.searchsorted(used, m)] = 1.0 / len(m)
    Bu = B[used]
    scores = evaluator.decision(X, Bu, core_matrix(Bu), coef, np.where(present, -0.5 * self_terms, 0.0))
    scores[:, ~present] = -np.inf
    return np.argmax(scores, axis=1)


def sample_size(n, k, n_levels):
    """The rows the clustering samples from n (enough per lowest cluster, at most _MAX_SAMPLE)."""
    return int(min(n, max(_SAMPLE_PER_LEAF * k ** n_levels, 4 * k), _MAX_SAMPLE))


def cluster_sample(S, kernel, k, n_levels, rng, threads=1):
    """The cluster tree (a Partition without labels) of the sampled rows S, for ``kernel``
    (KernelSpec): kernel k-means, level by level within each cluster's share of the sample."""
    m = S.shape[0]
    S_core = core_matrix(S)
    K = _core.kernel_matrix(S_core, S_core, kernel.code, kernel.gamma, kernel.coef0, kernel.degree, threads)
    sample_labels = np.zeros(m, dtype=np.int64)
    centres, self_terms = [], []
    for _ in range(n_levels):
        new = np.empty(m, dtype=np.int64)
        for p in np.unique(sample_labels):
            rows = np.flatnonzero(sample_labels == p)
            # too few sample points to split: all in the first child
            sub = _kernel_kmeans(K[np.ix_(rows, rows)], k, rng) if len(rows) >= 2 * k else 0
            new[rows] = p * k + sub
        n_clusters = (int(sample_labels.max()) + 1) * k
        level_centres, terms = [], np.zeros(n_clusters)
        for c in range(n_clusters):
            rows = np.flatnonzero(new == c)
            if len(rows) > _CENTRE_POINTS:
                rows = np.sort(rng.choice(rows, size=_CENTRE_POINTS, replace=False))
            level_centres.append(rows)
            if len(rows):
                terms[c] = K[np.ix_(rows, rows)].mean()
        centres.append(level_centres)
        self_terms.append(terms)
        sample_labels = new
    return Partition(k=k, sample_X=S, centres=centres, self_terms=self_terms)


def evaluator_for(kernel, threads=1):
    """The KernelEvaluator that routes points down a tree for ``kernel`` (KernelSpec)."""
    return KernelEvaluator(kernel.name, kernel.gamma, kernel.coef0, kernel.degree, threads)


def build_partition(X, kernel, k, n_levels, rng, threads=1):
    """A Partition of the rows of X (in memory) for ``kernel``: the tree of a sample of the rows
    (``cluster_sample``), then every row routed down it (the clusters of every level)."""
    n = X.shape[0]
    sample_rows = np.sort(rng.choice(n, size=sample_size(n, k, n_levels), replace=False))
    partition = cluster_sample(X[sample_rows], kernel, k, n_levels, rng, threads)
    partition.sample_rows = sample_rows
    evaluator = evaluator_for(kernel, threads)
    labels = np.zeros(n, dtype=np.int64)
    for lev in range(1, n_levels + 1):
        labels = partition.descend(X, evaluator, labels, lev)
        partition.labels.append(labels)
    return partition


@dataclass
class EarlyModel:
    """A model stopped at level ``level`` of the divided solve: a point's decision values are those
    of its cluster's model, intercept ``intercepts[c]`` (one per problem) and the support vectors
    of cluster c (``sv_cluster``: the cluster of each support vector)."""

    partition: Partition
    level: int
    sv_cluster: np.ndarray
    intercepts: np.ndarray

    def decision(self, model, X, coef):
        """``model``'s decision values of X (validated here), coef its (n_problems, n_SV) expansion."""
        X = model._validate_X(X)
        evaluator = model._evaluator()
        coef = coef.toarray() if sp.issparse(coef) else np.asarray(coef, dtype=np.float64)
        clusters = self.partition.route(X, evaluator, self.level)
        out = np.empty((X.shape[0], coef.shape[0]))
        for c in np.unique(clusters):
            rows = np.flatnonzero(clusters == c)
            sv = np.flatnonzero(self.sv_cluster == c)
            if len(sv) == 0:
                out[rows] = self.intercepts[c]
                continue
            B = model.support_vectors_[sv]
            out[rows] = evaluator.decision(X[rows], B, core_matrix(B), np.ascontiguousarray(coef[:, sv]),
                                           self.intercepts[c])
        return out


def restrict(problem, rows):
    """The dual problem on its points at positions ``rows`` alone, and its variables' positions in
    the whole problem (eps-SVR: a+ and a- of each point)."""
    n_points = len(problem.y) if problem.kind == "binary" else len(problem.y) // 2
    var = rows if problem.kind == "binary" else np.concatenate([rows, rows + n_points])
    take = (lambda v: None if v is None else np.ascontiguousarray(v[var]))
    idx = rows if problem.idx is None else problem.idx[rows]
    return replace(problem, y=take(problem.y), p=take(problem.p), hi=take(problem.hi), lo=take(problem.lo),
                   C=take(problem.C), start=take(problem.start), idx=idx), var


@dataclass
class LevelStats:
    level: int
    clusters: int
    seconds: float
    n_iter: int
    kernel_evals: int


@dataclass
class ClusterTask:
    """One cluster's problem at one level: its id, the positions of its variables in the whole
    problem, the restricted DualProblem, its start (None: the problem's own start) and, when
    known, what the gradient there is assembled from (a StartGradient: ``solve_from``)."""

    cluster: int
    var: np.ndarray
    problem: object
    a0: np.ndarray | None
    start: StartGradient | None = None


@dataclass
class StartGradient:
    """What the gradient of a level's start is assembled from: the children's final gradients
    (``grad``, and ``grad_bar`` for the variables at their upper bound) over the start's positions
    and the child cluster of each position (``child``). Within a child the gradient is the child's
    own, so only the products between the children are new, (k - 1) / k of the n x nSV kernel
    values of a start-up from scratch (``assemble``). ``error``: a bound on what float32 sums left
    in the children's gradients (their results' ``grad_error``)."""

    grad: np.ndarray
    grad_bar: np.ndarray
    child: np.ndarray
    error: float = 0.0

    def assemble(self, X, kernel, problem, a0, tol, threads):
        """(g0, gbar0, kernel values computed, error bound) at a0 for the problem over the rows of X
        (a ``_core.Matrix``, position t = row t): y_t sum over the other children's support vectors
        s of a_s y_s K(x_s, x_t), added to the child's G (and, for bounded s, to its G_bar). The
        products run in float32 where their error bound stays within the engine's share of tol (as
        its own start-up sums); the bound returned is the children's plus the largest of theirs."""
        y, hi = problem.y, problem.hi
        g0, gbar0 = self.grad.copy(), self.grad_bar.copy()
        max_error = _core.SINGLE_SUMS_TOL_SHARE * tol
        evals, error = 0, 0.0
        for _, pos in _clusters(self.child):
            others = np.ones(len(y), dtype=bool)
            others[pos] = False
            others = np.flatnonzero(others)
            for bounded in (True, False):
                src = others[(a0[others] > 0) & ((a0[others] >= hi[others]) == bounded)]
                if len(src) == 0:
                    continue
                s, e = _core.kernel_weighted_sum(X, kernel.code, kernel.gamma, kernel.coef0, kernel.degree,
                                                 src.astype(np.int32), a0[src] * y[src], pos.astype(np.int32),
                                                 max_error, max(1, int(threads)))
                s *= y[pos]
                error = max(error, e)
                evals += len(src) * len(pos)
                g0[pos] += s
                if bounded:
                    gbar0[pos] += s
        # a position's G gets one sum over the bounded and one over the free support vectors
        return g0, gbar0, evals, self.error + 2.0 * error


def solve_from(solve, X, kernel, problem, options, a0, start, **kwargs):
    """``solve`` (``_engine.solve``) of the problem over the rows X from a0, with the gradient there
    assembled from ``start`` (a StartGradient; None: the engine computes it); the assembly's kernel
    values are counted in the result's."""
    if start is None:
        return solve(X, kernel, problem, options, a0=a0, **kwargs)
    X = X if isinstance(X, _core.Matrix) else core_matrix(X)
    g0, gbar0, evals, error = start.assemble(X, kernel, problem, a0, options.tol, options.threads)
    r = solve(X, kernel, problem, options, a0=a0, g0=g0, gbar0=gbar0, g0_error=error, **kwargs)
    r.kernel_evals += evals
    return r


class _Gradients:
    """The final gradients of the solved clusters over the whole problem's positions, while they
    can make starts: C-SVC's problems (binary, linear term, lower bounds 0) solved with shrinking
    (G_bar kept) to the end."""

    def __init__(self, problem):
        self.problem = problem
        self.usable = problem.kind == "binary" and problem.term == "linear" and not problem.nu \
            and not np.any(problem.lo)
        self.grad, self.grad_bar = np.empty(len(problem.y)), np.empty(len(problem.y))
        self.error = 0.0  # the largest of the recorded results' grad_error

    def record(self, var, result):
        """A cluster's solution (None: a cluster of one class, left at a = 0, where G = p)."""
        if not self.usable:
            return
        if result is None:
            self.grad[var], self.grad_bar[var] = self.problem.p[var], 0.0
        elif result.grad_bar is None or result.status != 0:
            self.usable = False
        else:
            self.grad[var], self.grad_bar[var] = result.grad, result.grad_bar
            self.error = max(self.error, result.grad_error)

    def start(self, var, child):
        return StartGradient(self.grad[var], self.grad_bar[var], child, self.error) if self.usable else None


@dataclass
class Divide:
    """How a fit's problems are divided: the Partition of the fit's rows, the level the solve stops
    at (0: the whole problem, the exact SVM; l >= 1: the clusters' models at level l) and the
    threads that solve the clusters of a level (one engine thread each)."""

    partition: Partition
    stop_level: int = 0
    workers: int = 1

    def cluster_options(self, options):
        """The engine options of one cluster's solve: one thread, a share of the cache."""
        return replace(options, threads=1, cache_mb=options.cache_mb / max(1, self.workers))

    def solve(self, problem, *, solve_clusters, solve_whole, time_limit=0.0, on_level=None):
        """Solve ``problem`` (a DualProblem over the partitioned rows) from its lowest level up:
        ``solve_clusters(tasks, time_limit)`` solves a level's ClusterTasks (their SolveResults, in
        order), ``solve_whole(a0, time_limit)`` the whole problem from a0 -- in threads here
        (:func:`solve_in_memory`), in Dask tasks on the workers that hold the rows
        (``sparsekernel.dask``). The result is the whole problem's SolveResult with ``levels``
        (LevelStats) and, when stopped at a level, ``cluster_rho`` (each cluster's offset) instead
        of the final solve. ``on_level(stats)`` hears of each level solved (its LevelStats).
        Each start above the lowest level carries what its gradient is assembled from (ClusterTask's
        ``start``; ``solve_whole(a0, time_limit, start)``), or None."""
        t_end = time.perf_counter() + time_limit if time_limit > 0 else None
        remaining = (lambda: 0.0 if t_end is None else max(t_end - time.perf_counter(), 1e-3))
        labels = [lab if problem.idx is None else lab[problem.idx] for lab in self.partition.labels]
        a = (problem.lo if problem.start is None else problem.start).astype(np.float64, copy=True)
        levels, done = [], []
        grads = _Gradients(problem)
        lowest = self.partition.n_levels
        for level in range(lowest, max(self.stop_level, 1) - 1, -1):
            t0 = time.perf_counter()
            tasks, done = [], []
            for cid, rows in _clusters(labels[level - 1]):
                sub, var = restrict(problem, rows)
                if problem.kind == "binary" and (np.all(sub.y > 0) or np.all(sub.y < 0)):
                    done.append((cid, var, None))  # one class: a = lo is the solution (y'a = 0, a >= 0)
                elif level == lowest:
                    tasks.append(ClusterTask(cid, var, sub, None))
                else:
                    tasks.append(ClusterTask(cid, var, sub, a[var], grads.start(var, labels[level][rows])))
            results = solve_clusters(tasks, remaining())
            done += [(t.cluster, t.var, r) for t, r in zip(tasks, results)]
            for _, var, r in done:
                grads.record(var, r)
            for t, r in zip(tasks, results):
                a[t.var] = r.alpha
            levels.append(LevelStats(level, len(done), time.perf_counter() - t0, sum(r.n_iter for r in results),
                                     sum(r.kernel_evals for r in results)))
            if on_level is not None:
                on_level(levels[-1])
            if any(r.status != 0 for r in results):
                break  # interrupted or out of time: what is solved so far is the start of the last solve
        if self.stop_level >= 1:
            return self._early_result(problem, a, done, levels)
        t0 = time.perf_counter()
        r = solve_whole(a, remaining(), grads.start(np.arange(len(a)), labels[0]))
        levels.append(LevelStats(0, 1, time.perf_counter() - t0, r.n_iter, r.kernel_evals))
        r.n_iter = sum(s.n_iter for s in levels)
        r.kernel_evals = sum(s.kernel_evals for s in levels)
        r.levels = levels
        return r

    def _early_result(self, problem, a, done, levels):
        """The result of a solve stopped at a level: the clusters' solutions side by side, each
        cluster's offset rho (a cluster of one class: rho = -y, its decision the class)."""
        n_clusters = self.partition.k ** self.stop_level
        cluster_rho = np.zeros(n_clusters)
        solved = [r for _, _, r in done if r is not None]
        for cid, var, r in done:
            cluster_rho[cid] = r.rho if r is not None else -float(problem.y[var[0]])
        template = solved[0] if solved else None
        status = max((r.status for r in solved), default=0)
        return SolveResult(alpha=a, grad=np.full(len(a), np.nan), rho=float(np.median(cluster_rho)), r=0.0,
                           obj=float("nan"), gap=float("nan"), n_iter=sum(s.n_iter for s in levels),
                           n_outer_iter=0, q=0 if template is None else template.q, status=status,
                           conjugate_fallbacks=0, kernel_evals=sum(s.kernel_evals for s in levels),
                           cache_hits=0, cache_misses=0, cache_peak_bytes=0, levels=levels,
                           cluster_rho=cluster_rho, partition=self.partition, y=problem.y, lo=problem.lo,
                           hi=problem.hi, idx=problem.idx)


def _clusters(labels):
    """(cluster id, positions) of every cluster present in ``labels``, positions ascending."""
    ids, inverse = np.unique(labels, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(ids) + 1))
    return [(int(ids[c]), order[bounds[c]:bounds[c + 1]]) for c in range(len(ids))]


def solve_in_memory(divide, X, X_problem, kernel, problem, options, *, solve, cancel=None, time_limit=0.0,
                    progress=None, session=None):
    """Divide.solve on X in this process: a level's clusters in ``divide.workers`` threads (one
    engine thread each), the whole problem on ``X_problem`` (its rows of X) with the fit's options,
    session and progress (``progress.level`` hears of the lower levels); ``solve`` is ``_engine.solve``."""
    cluster_options = divide.cluster_options(options)

    def solve_clusters(tasks, limit):
        return run_parallel(lambda t, token: solve_from(solve, X[t.problem.idx], kernel, t.problem, cluster_options,
                                                        t.a0, t.start, cancel=token, time_limit=limit),
                            tasks, divide.workers)

    def solve_whole(a0, limit, start=None):
        return solve_from(solve, X_problem, kernel, problem, options, a0, start, session=session, cancel=cancel,
                          time_limit=limit, progress=progress)

    return divide.solve(problem, solve_clusters=solve_clusters, solve_whole=solve_whole, time_limit=time_limit,
                        on_level=getattr(progress, "level", None))
