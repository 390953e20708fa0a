"""The compact-basis route of (sparse) kernel logistic regression.

KLR at large N cannot stay on pair SMO: its dual is dense (every a_i > 0), one Q a is N^2 kernel
values and pair SMO needs 5 to 10 steps per variable (DESIGN.md). The compact route restricts the
model to M basis points z_1..z_M (w = sum_j beta_j phi(z_j)),

    f(x) = sum_j beta_j K(z_j, x) + b,

and solves the (shifted, S-KLR Observation 1) KLR primal on that subspace

    min_{beta, b}  J = 1/2 beta' K_ZZ beta + sum_i C_i log(1 + exp(lam - y_i f(x_i)))          (P_M)

by Newton's method. The design matrix A = [K(X, Z), 1] (N x (M+1)) is computed once by the kernel
module; every Newton step solves H d = -g,

    g = R w + A' r,   r_i = -C_i y_i s_i,        s_i = sigma(lam - y_i f_i)
    H = R + A' D A,   D_i = C_i s_i (1 - s_i),   R = [[K_ZZ, 0], [0, 0]],

by conjugate gradients preconditioned with the Hessian of a row subsample (the FALKON line of
work: Rudi, Carratino & Rosasco 2017; for the logistic loss Marteau-Ferey, Bach & Rudi 2019), then
an Armijo line search along d. With Z = X (M = N) (P_M) is the KLR primal itself.

Basis points: a uniform sample of the training points, k-means centres, or a greedy import-vector
rule (Zhu & Hastie's IVM, batched: candidates ranked by the objective decrease of a one-coordinate
Newton step). ``refine_basis`` then moves the points by L-BFGS on J(Z) = min_{beta, b} J, whose
gradient in Z is the envelope one (the kernel derivatives of ``_kernel_grad``, as for SLMC's
learned expansion vectors).
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve, cholesky, LinAlgError, solve_triangular
from scipy.special import expit
from scipy.linalg.lapack import dpstrf
from scipy.optimize import minimize

from ._base import _row_sqnorms, block_pool, core_matrix
from ._kernel_grad import DIFFERENTIABLE_KERNELS, kernel_gradient

BASES = ("kmeans", "uniform", "ivm")

# row block of the products with A: small enough to stay in cache between A v and A'(D A v)
_BLOCK_BYTES = 1 << 21
# kernel values per row chunk while the block is filled (the float64 temporaries: 8 MB)
_FILL_CHUNK_ENTRIES = 1 << 20
# the Newton steps stop when the estimated suboptimality g'P^-1 g / 2 is below this x tol x J
_TOL_SCALE = 1e-3
_ARMIJO = 1e-4
# the largest change of a decision value in one Newton step, beyond lam (newton_compact)
_MAX_STEP_F = 10.0
# the preconditioner is rebuilt (at the current curvature D) when the last CG solve cost more than
# an update: a CG step's flops count this many times (newton_compact)
_CG_STEP_WEIGHT = 3.0
# basis points whose residual variance given the others is below this x max K(z, z) are dropped
_INDEPENDENCE = 1e-9
# n_components='auto': the basis starts at AUTO_START points and doubles while a doubling lowers J by
# more than AUTO_REL_DECREASE (relative), up to the cap (benchmarks/results/klr_compact.md)
AUTO_START = 256
AUTO_REL_DECREASE = 0.01


def _log1pexp(z):
    """log(1 + exp(z)), stable for every z."""
    return np.logaddexp(0.0, z)


# ---------------------------------------------------------------------------------- the design matrix
class DesignMatrix:
    """A = [K(X, Z), 1] of (P_M) over a kernel block K (N x m) held elsewhere: float64, or float32 when
    float64 would not fit the memory budget (the products that decide convergence still accumulate
    in float64 per row block). The column of ones is implicit (b is added, not stored), and ``cols``
    (the independent basis points) selects columns without copying K: a dropped point's coefficient
    is held at 0.

    The products take one vector or several as the columns of a matrix (``newton_columns``: the
    problems of several folds over the same block, each pass over K serving all of them)."""

    def __init__(self, K, cols=None, threads=1):
        N, m = K.shape
        self.K = K
        self.cols = None if cols is None or len(cols) == m else np.asarray(cols)
        M = m if self.cols is None else len(self.cols)
        self.shape = (N, M + 1)
        self.step = max(64, _BLOCK_BYTES // (K.itemsize * (m + 1)))
        self.threads = int(threads)

    def _map(self, fn, v):
        """fn over the row blocks, in block order; on ``threads`` threads (each product single-threaded
        BLAS, the GIL released inside it) when v, the vectors multiplied, has several columns: one
        vector's products are memory-bound, and threads made a single KLR fit 1.05-1.17x slower
        (5,000-15,000 rows), while five folds' were 1.1-1.15x faster. The reductions over blocks
        run in block order after, so the result does not depend on the thread count."""
        blocks = list(self._row_blocks())
        if self.threads <= 1 or len(blocks) < 2 or v.ndim < 2 or v.shape[1] < 2:
            return [fn(sl) for sl in blocks]
        return list(block_pool(self.threads).map(fn, blocks))

    def _beta(self, w, dtype=np.float64):
        """The coefficients of every column of K (0 for the dropped ones) from w = (beta, b)."""
        if self.cols is None:
            return np.ascontiguousarray(w[:-1], dtype=dtype)
        beta = np.zeros((self.K.shape[1],) + w.shape[1:], dtype=dtype)
        beta[self.cols] = w[:-1]
        return beta

    def _kept(self, v):
        return v if self.cols is None else v[self.cols]

    def _row_blocks(self):
        for start in range(0, self.K.shape[0], self.step):
            yield slice(start, min(self.K.shape[0], start + self.step))

    def matvec(self, w):
        """A w (N, or N x F for F columns), in float64 (float32 storage is widened block by block)."""
        beta, K = self._beta(w), self.K
        if K.dtype == np.float64 and (w.ndim < 2 or w.shape[1] < 2):  # (several: by blocks, see _map)
            return K @ beta + w[-1]
        out = np.empty((K.shape[0],) + w.shape[1:])

        def block(sl):
            out[sl] = K[sl].astype(np.float64, copy=False) @ beta

        self._map(block, w)
        return out + w[-1]

    def rmatvec(self, r):
        """A' r (M + 1, or (M + 1) x F), in float64."""
        K = self.K
        if K.dtype == np.float64 and (r.ndim < 2 or r.shape[1] < 2):
            g = K.T @ r
        else:
            g = np.zeros((K.shape[1],) + r.shape[1:])
            for part in self._map(lambda sl: K[sl].astype(np.float64, copy=False).T @ r[sl], r):
                g += part
        return np.concatenate([self._kept(g), r.sum(axis=0, keepdims=True)])

    def hessvec(self, v, D):
        """A' (D * (A v)) in one pass over K (each row block is read once, while in cache), in the
        storage precision: CG only needs an approximate Newton direction. v: M + 1 or (M + 1) x F,
        D: N or N x F."""
        K, dt = self.K, self.K.dtype
        beta, b, D = self._beta(v, dt), v[-1].astype(dt), D.astype(dt)
        out = np.zeros((K.shape[1],) + v.shape[1:], dtype=dt)
        total = np.zeros(v.shape[1:])

        def block(sl):
            Kb = K[sl]
            u = D[sl] * (Kb @ beta + b)
            return Kb.T @ u, u.sum(axis=0, dtype=np.float64)

        for part, tot in self._map(block, v):
            out += part
            total += tot
        return np.concatenate([self._kept(out.astype(np.float64)), total[None]])

    def rows(self, idx):
        R = np.asarray(self.K[idx], dtype=np.float64)
        return np.hstack([self._kept(R.T).T, np.ones((len(idx), 1))])


# ---------------------------------------------------------------------------------- Newton on (P_M)
class CompactProblem:
    """(P_M) at w = (beta, b): J, g and Hessian products; for one binary problem (y, C_i of length N)
    or for F of them over the same block at once (y, C_i as N x F, w as (M + 1) x F: the folds of a
    cross-validation, a fold's held-out rows at C_i = 0)."""

    def __init__(self, A, Kzz, y, Ci, lam):
        self.A, self.Kzz, self.y, self.Ci, self.lam = A, Kzz, y, Ci, float(lam)
        self.M = Kzz.shape[0]

    def columns(self, idx):
        """The problem of the columns idx (of the F problems)."""
        return CompactProblem(self.A, self.Kzz, self.y[:, idx], self.Ci[:, idx], self.lam)

    def regulariser(self, v):
        """R v = (K_ZZ beta, 0)."""
        out = np.zeros_like(v)
        out[:self.M] = self.Kzz @ v[:self.M]
        return out

    def loss_terms(self, f):
        """(sum_i C_i log(1 + exp(z_i)) per problem, s = sigma(z)) at z = lam - y f."""
        z = self.lam - self.y * f
        return (self.Ci * _log1pexp(z)).sum(axis=0), expit(z)

    def objective(self, w, f):
        loss, s = self.loss_terms(f)
        Rw = self.regulariser(w)
        return 0.5 * (w * Rw).sum(axis=0) + loss, s, Rw

    def gradient(self, Rw, s):
        return Rw + self.A.rmatvec(-self.Ci * self.y * s)

    def curvature(self, s):
        return self.Ci * s * (1.0 - s)

    def hessvec(self, v, D):
        return self.regulariser(v) + self.A.hessvec(v, D)


class SubsamplePreconditioner:
    """P = R + (N / n_s) A_S' D_S A_S + eps I on a fixed row subsample S: the Hessian with the loss
    part estimated from n_s rows (S = every row when N is small, then P = H and CG takes one step).
    For several problems at once, one P at their mean curvature serves them all."""

    def __init__(self, problem, rows, n_total):
        self.problem, self.rows, self.scale = problem, rows, n_total / len(rows)
        self.factor = None
        Kzz = problem.Kzz
        self.eps = 1e-10 * max(float(np.trace(Kzz)) / max(1, Kzz.shape[0]), 1e-300)

    def update(self, D):
        p = self.problem
        B = p.A.rows(self.rows)  # (gathered for each update: a kept preconditioner holds its factor only)
        B *= np.sqrt(D[self.rows] * self.scale)[:, None]
        P = B.T @ B  # (numpy runs B'B as one symmetric rank-k update)
        P[:p.M, :p.M] += p.Kzz
        eps = self.eps
        for _ in range(12):
            Pe = P.copy()
            Pe[np.diag_indices_from(Pe)] += eps
            try:
                self.factor = cho_factor(Pe, lower=True, check_finite=False, overwrite_a=True)
                return
            except LinAlgError:
                eps *= 100.0
        raise LinAlgError("the preconditioner is not positive definite")

    def solve(self, r):
        return cho_solve(self.factor, r, check_finite=False)


def pcg(hessvec, rhs, precond, rtol, maxiter):
    """Preconditioned conjugate gradients for H_j x_j = rhs_j, the F columns j at once (each its own
    step sizes, stopping at its own rtol_j): hessvec(V, idx) = the products of the columns idx.
    Returns (x, iterations per column)."""
    x = np.zeros_like(rhs)
    r = rhs.copy()
    z = precond(r)
    p = z.copy()
    rz = (r * z).sum(axis=0)
    target = rtol * np.sqrt(np.maximum(rz, 0.0))
    iters = np.full(rhs.shape[1], maxiter)
    live = np.arange(rhs.shape[1])
    for k in range(1, maxiter + 1):
        Hp = hessvec(p[:, live], live)
        pHp = (p[:, live] * Hp).sum(axis=0)
        ok = (pHp > 0) & np.isfinite(pHp)  # (curvature lost to rounding or overflow: x so far)
        iters[live[~ok]] = k - 1
        alpha = np.where(ok, rz[live] / np.where(ok, pHp, 1.0), 0.0)
        x[:, live] += alpha * p[:, live]
        r[:, live] -= alpha * Hp
        z_l = precond(r[:, live])
        rz_new = (r[:, live] * z_l).sum(axis=0)
        done = ok & (np.sqrt(np.maximum(rz_new, 0.0)) <= target[live])
        iters[live[done]] = k
        go = ok & ~done
        p[:, live[go]] = z_l[:, go] + (rz_new[go] / rz[live[go]]) * p[:, live[go]]
        rz[live[go]] = rz_new[go]
        live = live[go]
        if len(live) == 0:
            break
    return x, iters


def newton_compact(problem, w0, *, tol, max_iter, rng, n_subsample, progress=None, deadline=None,
                   precond=None):
    """Minimise (P_M) of one binary problem from w0: ``newton_columns`` with one column. Returns a
    dict: w, f (= A w), objective, n_iter (Newton steps), cg_iter, decrement (the last lambda^2),
    status (0 converged, 1 max_iter, 2 stopped by a callback, 3 time limit), precond (the
    preconditioner, for a warm start on the same rows)."""
    cols = CompactProblem(problem.A, problem.Kzz, problem.y[:, None], problem.Ci[:, None], problem.lam)
    report = None if progress is None else (lambda it, dec, N: progress(it, float(dec[0]), N))
    r = newton_columns(cols, np.asarray(w0, dtype=np.float64)[:, None], tol=tol, max_iter=max_iter, rng=rng,
                       n_subsample=n_subsample, progress=report, deadline=deadline, precond=precond)
    return {"w": r["w"][:, 0], "f": r["f"][:, 0], "objective": float(r["objective"][0]),
            "n_iter": int(r["n_iter"][0]), "cg_iter": int(r["cg_iter"][0]), "decrement": float(r["decrement"][0]),
            "status": int(r["status"][0]), "precond": r["precond"]}


def newton_columns(problem, W0, *, tol, max_iter, rng, n_subsample, progress=None, deadline=None, precond=None):
    """Minimise (P_M) for the F problems of ``problem`` (columns) from W0 ((M + 1) x F) by
    preconditioned Newton-CG with an Armijo line search, every problem its own steps, all of them
    sharing each pass over the block (Hessian products as one matrix product) and one
    preconditioner; a problem that has converged stops moving while the others go on.

    A problem stops after a step whose Newton decrement lambda^2 = -g'd (d the CG solution of
    H d = -g) says the suboptimality it removed, lambda^2 / 2, is below 1e-3 * tol * J (SMO's
    tol = 1e-3: J to about 1e-6 relative). Returns a dict of arrays over the problems: w
    ((M + 1) x F), f (= A w, N x F), objective, n_iter, cg_iter, decrement, status (as
    newton_compact's), and precond (given, it is used until a CG solve says it is stale)."""
    A = problem.A
    N, M1 = A.shape
    F = W0.shape[1]
    if precond is not None and precond.factor is not None and len(precond.factor[0]) == M1:
        P, rows = precond, precond.rows
        P.problem = problem
    else:
        rows = np.arange(N) if n_subsample >= N else np.sort(rng.choice(N, n_subsample, replace=False))
        P = SubsamplePreconditioner(problem, rows, N)
    W = np.array(W0, dtype=np.float64)
    Fv = A.matvec(W)
    J, S, RW = problem.objective(W, Fv)
    G = problem.gradient(RW, S)
    g0_norm = np.maximum(np.linalg.norm(G, axis=0), np.finfo(float).tiny)
    status = np.ones(F, dtype=np.int64)
    n_iter, cg_total = np.zeros(F, dtype=np.int64), np.zeros(F, dtype=np.int64)
    dec = np.full(F, np.inf)
    limit = max_iter if max_iter > 0 else 1000
    cg_last = np.inf if P.factor is None else 0.0
    # the preconditioner's update (n_s M^2 + M^3 / 3 flops, compute-bound) against a CG step (a
    # Hessian product, 4 N M flops reading the block twice: memory-bound, _CG_STEP_WEIGHT x slower
    # per flop; measured 6 ms against 100 ms for an update at N = 12,000, M = 1,024)
    update_cost = len(rows) * M1 * M1 + M1 ** 3 / 3.0
    cg_cost = _CG_STEP_WEIGHT * 4.0 * N * M1
    live = np.arange(F)  # the problems still moving
    step_f = _MAX_STEP_F + problem.lam
    while len(live):
        if deadline is not None and time.perf_counter() >= deadline:
            status[live] = 3
            break
        live = live[n_iter[live] < limit]
        if len(live) == 0:
            break
        sub = problem.columns(live)
        D = sub.curvature(S[:, live])
        if cg_last * cg_cost > update_cost:  # a preconditioner that still makes CG short is kept: its
            P.update(D.mean(axis=1))         # update can cost more than the CG steps it saves
        g = G[:, live]
        # the Newton direction H d = -g, to a relative accuracy that tightens as g falls
        eta = np.minimum(0.1, np.sqrt(np.linalg.norm(g, axis=0) / g0_norm[live]))
        with np.errstate(over="ignore", invalid="ignore"):  # a CG blown up by a flat loss: handled below
            d, k = pcg(lambda V, idx: sub.A.hessvec(V, D[:, idx]) + sub.regulariser(V), -g, P.solve, eta, 200)
        cg_total[live] += k
        cg_last = float(np.max(k))
        slope = (g * d).sum(axis=0)
        bad = ~(slope <= 0)  # not a descent direction (numerically, or overflow): the preconditioned
        if bad.any():         # gradient is
            d[:, bad] = -P.solve(g[:, bad])
            slope[bad] = (g[:, bad] * d[:, bad]).sum(axis=0)
        dec[live] = -slope
        if progress is not None and progress(int(n_iter[live].max()), dec[live], N):
            status[live] = 2
            break
        u = A.matvec(d)
        # a step moves no decision value by more than _MAX_STEP_F + lam: where the loss is flat (lam
        # large, every point far inside its shifted margin: s = 1, no curvature, S-KLR at C = 1000)
        # the Newton direction is huge (H nearly singular in b and in K_ZZ's small eigenvalues)
        big = np.max(np.abs(u), axis=0, initial=0.0)
        for j in np.flatnonzero(~(big <= step_f)):
            if not np.isfinite(big[j]) or not np.all(np.isfinite(d[:, j])):
                d[:, j] = -P.solve(g[:, j])
                u[:, j] = A.matvec(d[:, j])
                big[j] = float(np.max(np.abs(u[:, j]), initial=0.0))
            scale = min(1.0, step_f / big[j]) if big[j] > 0 else 1.0
            d[:, j] *= scale
            u[:, j] *= scale
            slope[j] = float(g[:, j] @ d[:, j])
        Rd = sub.regulariser(d)
        Wl, RWl = W[:, live], RW[:, live]
        wRd, dRd = (Wl * Rd).sum(axis=0), (d * Rd).sum(axis=0)
        quad0 = 0.5 * (Wl * RWl).sum(axis=0)
        t = np.ones(len(live))
        J_t = np.empty(len(live))
        S_t = np.empty((N, len(live)))
        search = np.arange(len(live))
        while len(search):
            loss_t, s_t = sub.columns(search).loss_terms(Fv[:, live[search]] + t[search] * u[:, search])
            J_t[search] = quad0[search] + t[search] * wRd[search] + 0.5 * t[search] ** 2 * dRd[search] + loss_t
            S_t[:, search] = s_t
            # (a NaN or inf J_t: shorter)
            accept = (J_t[search] <= J[live[search]] + _ARMIJO * t[search] * slope[search]) | (t[search] < 1e-10)
            search = search[~accept]
            t[search] *= 0.5
        n_iter[live] += 1
        flat = ~(J_t <= J[live])  # no decrease at machine precision: at the optimum
        status[live[flat]] = 0
        go = ~flat
        j = live[go]
        W[:, j] += t[go] * d[:, go]
        Fv[:, j] += t[go] * u[:, go]
        RW[:, j] += t[go] * Rd[:, go]
        J[j], S[:, j] = J_t[go], S_t[:, go]
        G[:, j] = problem.columns(j).gradient(RW[:, j], S[:, j])
        done = 0.5 * dec[j] <= _TOL_SCALE * tol * np.abs(J[j])
        status[j[done]] = 0
        live = j[~done]
    return {"w": W, "f": Fv, "objective": J, "n_iter": n_iter, "cg_iter": cg_total, "decrement": dec,
            "status": status, "precond": P}


def start_bias(y, Ci):
    """The weighted class log-odds log(sum_{y>0} C_i / sum_{y<0} C_i), per column of y and Ci (N x F)
    or for one problem: the optimum of b alone at beta = 0, lam = 0 (the Newton start)."""
    return np.log((Ci * (y > 0)).sum(axis=0) / (Ci * (y < 0)).sum(axis=0))


# ---------------------------------------------------------------------------------- basis points
def kmeans_basis(X, M, rng):
    """M k-means centres (k-means++ start, a few Lloyd steps on a subsample of at most 20 M points)."""
    from sklearn.cluster import KMeans  # (heavy: 150 ms, imported when used)

    N = X.shape[0]
    n_sub = min(N, 20 * M)
    Xs = X[np.sort(rng.choice(N, n_sub, replace=False))] if n_sub < N else X
    km = KMeans(n_clusters=M, n_init=1, max_iter=20, tol=1e-3, random_state=int(rng.randint(2**31 - 1)))
    km.fit(Xs)
    return np.ascontiguousarray(km.cluster_centers_, dtype=np.float64)


def ivm_scores(fit, idx, pool, Kc, states):
    """Zhu & Hastie's import-vector criterion, to first order: the decrease of J that one Newton step
    on a candidate's own coefficient (at beta_c = 0, the other coefficients fixed) would give,
    summed over the problems:

        decrease_c = (K_cZ beta + k_c' r)^2 / (2 (K(c, c) + k_c' D k_c)),   k_c = K(X, x_c)."""
    kcc = Kc[pool, np.arange(len(pool))]
    score = np.zeros(len(pool))
    for st, yk in zip(states, fit.problems):
        s = expit(fit.lam - yk * st["f"])
        r = -fit.Ci * yk * s
        D = fit.Ci * s * (1.0 - s)
        grad = Kc[idx].T @ st["w"][:-1] + r @ Kc
        curv = kcc + D @ (Kc * Kc)
        score += grad * grad / (2.0 * np.maximum(curv, np.finfo(float).tiny))
    return score


def grow_basis(fit, M, basis, auto):
    """Training points as basis, grown by doubling from a start (M / 8 for 'ivm', 256 when M is
    chosen automatically, else M at once): 'uniform' adds random points, 'ivm' imports the best of a
    random pool of twice the points to add by ``ivm_scores`` (a batched IVM). Every round is
    solved warm from the previous one (new coefficients 0). With ``auto`` the growth stops once a
    doubling lowers J by less than AUTO_REL_DECREASE (relative), or at M.
    Returns (idx, states)."""
    N = fit.X.shape[0]
    order = fit.rng.permutation(N)
    m = min(M, AUTO_START if auto else (max(16, M // 8) if basis == "ivm" else M))
    idx = order[:m]
    used = m  # order[:used] are in the basis or were offered as candidates
    K = fit.storage(M)  # the block of the largest basis; the rounds fill its columns
    Kzz = fit.fill(K, 0, idx=idx, capture=idx)
    w0, J_prev = None, None
    while True:
        states = fit.solve_all(K[:, :len(idx)], Kzz, w0)
        J = sum(st["objective"] for st in states)
        if fit.growth_done(len(idx), M, auto, J_prev, J):
            return idx, states
        J_prev = J
        add = min(M - len(idx), len(idx))
        if basis == "ivm":
            pool = order[used:used + 2 * add]
            Kc = fit.columns(pool)
            pick = np.argsort(-ivm_scores(fit, idx, pool, Kc, states), kind="stable")[:add]
            new = pool[pick]
            K[:, len(idx):len(idx) + len(new)] = Kc[:, pick]
            cross = Kc[np.concatenate([idx, new])][:, pick]
            del Kc
            rest = np.setdiff1d(pool, new, assume_unique=True)  # not imported: offered again later
            order[used:used + len(pool)] = np.concatenate([new, rest])
            used += len(new)
        else:
            new = order[used:used + add]
            cross = fit.fill(K, len(idx), idx=new, capture=np.concatenate([idx, new]))
            used += len(new)
        w0 = [np.concatenate([st["w"][:-1], np.zeros(len(new)), st["w"][-1:]]) for st in states]
        Kzz = _grown_gram(Kzz, cross)
        idx = np.concatenate([idx, new])


def _grown_gram(Kzz, cross):
    """K_ZZ of the basis Z + new from K_ZZ and cross = K([Z; new], new) (exact float64)."""
    m, a = Kzz.shape[0], cross.shape[1]
    G = np.empty((m + a, m + a))
    G[:m, :m] = Kzz
    G[:, m:] = cross
    G[m:, :m] = cross[:m].T
    return G


def independent_columns(Kzz, prefer=None):
    """Indices of basis points whose kernel columns are independent: a pivoted Cholesky of K_ZZ
    (LAPACK dpstrf) keeps the points whose residual variance, given the points kept before them,
    exceeds 1e-9 max_j K(z_j, z_j). A duplicate (or a point numerically in the span of the others)
    adds nothing to the model's span, and its direction has zero curvature in (P_M): CG would
    run away along it. ``prefer``: points known to be independent (the previous round's, which
    carry the warm start's coefficients), kept first; the others are tested against them."""
    M = Kzz.shape[0]
    scale = float(np.max(np.diag(Kzz))) if M else 0.0
    if not scale > 0:
        return np.arange(0)
    tol = _INDEPENDENCE * scale
    first = np.arange(0) if prefer is None else np.asarray(prefer)
    rest = np.setdiff1d(np.arange(M), first, assume_unique=True)
    S = Kzz[np.ix_(rest, rest)]
    if len(first):
        try:
            L = cholesky(Kzz[np.ix_(first, first)], lower=True, check_finite=False)
        except LinAlgError:
            return independent_columns(Kzz)
        B = solve_triangular(L, Kzz[np.ix_(first, rest)], lower=True, check_finite=False)
        S = S - B.T @ B  # the residual kernel of the other points given the preferred ones
    if len(rest) == 0:
        return np.sort(first)
    _, piv, rank, _ = dpstrf(np.ascontiguousarray(S), lower=1, tol=tol)
    return np.sort(np.concatenate([first, rest[piv[:rank] - 1]]))


class CompactFit:
    """The binary problems (P_M) of one estimator fit on one basis: the training rows X (dense or
    CSR; the kernel matrix for 'precomputed'), the labels of each problem (+-1), C_i and lam, the
    kernel, and the solver settings. The basis is shared by the problems (one-vs-rest)."""

    def __init__(self, X, problems, Ci, lam, evaluator, *, tol, max_iter, budget_mb, rng, monitor=None):
        self.X, self.problems, self.Ci, self.lam = X, problems, Ci, float(lam)
        self.ev, self.tol, self.max_iter, self.rng, self.monitor = evaluator, float(tol), int(max_iter), rng, monitor
        self.budget = float(budget_mb) * 2**20
        self.precomputed = evaluator.kernel == "precomputed"
        self.n_newton, self.n_cg = 0, 0
        self.last_cols = None  # the independent basis points of the last solve (independent_columns)

    # the kernel blocks
    def storage(self, M):
        """An empty N x M block for K(X, Z) in the storage precision, filled column block by column
        block as the basis grows (row-major: the row-block products read it 1.5x faster than a
        column-major block). Refused (ValueError) when it does not fit the memory budget."""
        return np.empty((self.X.shape[0], M), dtype=self.storage_dtype(M))

    def fill(self, out, j0, *, idx=None, Z=None, capture=None):
        """Write K(X, P) into out[:, j0:j0 + len(P)] row chunk by row chunk, for the points P = the
        training rows ``idx`` or the points ``Z``; returns the exact float64 rows ``capture`` of the
        block, K(X[capture], P) (or None). The float64 temporaries are one row chunk."""
        k = len(idx) if idx is not None else Z.shape[0]
        N = self.X.shape[0]
        step = max(1, _FILL_CHUNK_ENTRIES // max(1, k))
        P = None if self.precomputed else (self.X[idx] if idx is not None else Z)
        P_core = None if P is None else core_matrix(P)
        # dense rows: the evaluator's BLAS route (X P' and the transform); CSR: the C++ row kernels
        B = None if P is None or sp.issparse(self.X) else P
        B_sqnorms = _row_sqnorms(B) if B is not None and self.ev.kernel == "rbf" else None
        where = None
        if capture is not None:
            order = np.argsort(capture, kind="stable")
            where, kept = np.empty((len(capture), k)), np.asarray(capture)[order]
        for start in range(0, N, step):
            sl = slice(start, min(N, start + step))
            if self.precomputed:
                Kb = np.asarray(self.X[sl][:, idx], dtype=np.float64)
            else:
                Kb = self.ev(self.X[sl], P_core, B, B_sqnorms)
            out[sl, j0:j0 + k] = Kb
            if capture is not None:
                lo, hi = np.searchsorted(kept, [sl.start, sl.stop])
                where[order[lo:hi]] = Kb[kept[lo:hi] - sl.start]
        return where

    def columns(self, idx):
        """K(X, X[idx]) for training points idx."""
        if self.precomputed:
            return np.ascontiguousarray(self.X[:, idx], dtype=np.float64)
        return self.block(self.X[idx])

    def block(self, Z, rows=None):
        """K(X[rows], Z) for points Z (dense or CSR), computed in row chunks."""
        X = self.X if rows is None else self.X[rows]
        if sp.issparse(X):  # the C++ row kernels (threads) beat scipy's sparse products here
            return self.ev(X, core_matrix(Z))
        out = np.empty((X.shape[0], Z.shape[0]))
        for sl, Kb in self.ev.chunks(X, core_matrix(Z), Z.shape[0], Z):
            out[sl] = Kb
        return out

    def gram(self, Z):
        return self.ev(Z, core_matrix(Z), Z)

    def storage_dtype(self, M):
        """float32 for A = [K(X, Z), 1] unless tol < 1e-4 asks for float64 and it fits the memory budget:
        the products that decide convergence (A w, A' r) are widened to float64 block by block, so
        float32 storage only perturbs the kernel values (by 6e-8 relative, J by less than 1e-9 on
        a9a) and halves the memory and the traffic of the Hessian products. Refused (ValueError)
        when even float32 does not fit."""
        N = self.X.shape[0]
        need = N * (M + 1)
        if self.tol < 1e-4 and 8 * need <= self.budget:
            return np.float64
        if 4 * need <= self.budget:
            return np.float32
        raise ValueError(f"the compact solver's N x (M + 1) kernel block ({N} x {M + 1}) needs {4 * need / 2**20:.0f} "
                         f"MB in float32, over cache_size={self.budget / 2**20:.0f} MB; raise cache_size or lower "
                         "n_components")

    # the solves
    def growth_done(self, m, M, auto, J_prev, J):
        """Whether a basis of m points is final: M reached, (with ``auto``) the last doubling lowered
        J = sum of the problems' objectives by at most AUTO_REL_DECREASE, or no time left."""
        if m >= M:
            return True
        if auto and J_prev is not None and J_prev - J <= AUTO_REL_DECREASE * abs(J):
            return True
        return self.monitor is not None and self.monitor.out_of_time()

    def start(self, yk):
        """w0's b (beta = 0): see start_bias."""
        return float(start_bias(yk, self.Ci))

    def solve_all(self, K, Kzz, w_prev=None, tol=None, cols=None, precond=None):
        """Newton on (P_M) for every problem with the block K = K(X, Z) and K_ZZ; returns the list of
        newton_compact results (warm from w_prev when given; ``cols``: the independent basis points
        when known, ``precond``: each problem's preconditioner from a solve on the same rows)."""
        M_all = K.shape[1]
        Kzz = 0.5 * (Kzz + Kzz.T)
        if cols is None:
            prefer = self.last_cols if w_prev is not None and self.last_cols is not None else None
            cols = independent_columns(Kzz, prefer if prefer is None or prefer.max(initial=-1) < M_all else None)
        self.last_cols = cols
        if len(cols) < M_all:  # points in the span of the others (duplicates): beta = 0 for them
            Kzz = Kzz[np.ix_(cols, cols)]
        wcols = np.append(cols, M_all)  # (beta of the kept points, b)
        M = len(cols)
        self.storage_dtype(M_all)  # the refusal, for a block the caller computed (k-means, refinement)
        A = DesignMatrix(K, cols, threads=self.ev.n_jobs)
        n_sub = min(self.X.shape[0], max(2000, 2 * (M + 1)))
        out = []
        for k, yk in enumerate(self.problems):
            if w_prev is None:
                w0 = np.zeros(M + 1)
                w0[-1] = self.start(yk)
            else:
                w0 = w_prev[k][wcols]
            progress = None if self.monitor is None else self.monitor.problem_if_needed(k)
            deadline = None if self.monitor is None else self.monitor.deadline
            r = newton_compact(CompactProblem(A, Kzz, yk, self.Ci, self.lam), w0,
                               tol=self.tol if tol is None else tol, max_iter=self.max_iter, rng=self.rng,
                               n_subsample=n_sub, progress=progress, deadline=deadline,
                               precond=None if precond is None else precond[k])
            if progress is not None:
                progress.end(r["n_iter"], r["decrement"], len(yk), r["status"])
            if M < M_all:
                w = np.zeros(M_all + 1)
                w[wcols] = r["w"]
                r["w"] = w
            self.n_newton += r["n_iter"]
            self.n_cg += r["cg_iter"]
            out.append(r)
        return out


def refine_basis_points(fit, Z, states, steps):
    """L-BFGS on the basis points: J(Z) = sum over problems of min_{beta, b} J, with the envelope
    gradient (beta at its optimum, as for SLMC's learned expansion vectors, eq. 46)

        dJ/dz_u = beta_u sum_i r_i dK(z_u, x_i)/dz_u + beta_u sum_j beta_j dK(z_u, z_j)/dz_u.

    Every evaluation re-solves the problems warm. Returns (Z, states)."""
    ev = fit.ev
    if ev.kernel not in DIFFERENTIABLE_KERNELS:
        raise ValueError(f"refine_basis needs a kernel with a gradient ({DIFFERENTIABLE_KERNELS}), got {ev.kernel!r}")
    shape = Z.shape
    memo = {"states": states}

    def fun(z):
        Zc = z.reshape(shape)
        K = fit.block(Zc)
        Kzz = fit.gram(Zc)
        sts = fit.solve_all(K, Kzz, [st["w"] for st in memo["states"]])
        memo["states"] = sts
        J, G = 0.0, np.zeros(shape)
        for st, yk in zip(sts, fit.problems):
            beta = st["w"][:-1]
            r = -fit.Ci * yk * expit(fit.lam - yk * st["f"])
            J += st["objective"]
            G += kernel_gradient(ev.kernel, ev.gamma, ev.coef0, ev.degree, Zc, fit.X, K.T, np.outer(beta, r))
            G += kernel_gradient(ev.kernel, ev.gamma, ev.coef0, ev.degree, Zc, Zc, Kzz, np.outer(beta, beta))
        return J, G.ravel()

    res = minimize(fun, Z.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": int(steps), "maxcor": 10})
    Z = res.x.reshape(shape)
    return Z, fit.solve_all(fit.block(Z), fit.gram(Z), [st["w"] for st in memo["states"]])


def fit_compact(fit, M, basis, refine_steps, auto=False):
    """The compact route: basis points, then Newton on (P_M) per problem, then (optionally) the
    basis refined. ``auto``: M is an upper bound and the basis grows by doubling until J stops
    falling (``grow_basis``; for 'kmeans', a new clustering per size). Returns (Z, idx or None,
    states); idx are the training rows the basis points are (None once k-means or refinement moved
    them off the data)."""
    X = fit.X
    if basis == "kmeans" and fit.precomputed:
        raise ValueError("basis='kmeans' needs feature vectors; with kernel='precomputed' use basis='uniform' "
                         "or 'ivm'")
    fit.storage_dtype(min(M, AUTO_START) if auto else M)  # refuse before any work when the block cannot be held
    if basis == "kmeans" and M < X.shape[0]:
        idx, J_prev, m = None, None, (min(M, AUTO_START) if auto else M)
        while True:
            Z = kmeans_basis(X, m, fit.rng)
            K = None  # the previous size's block is freed before the next is filled
            K = fit.storage(m)
            fit.fill(K, 0, Z=Z)
            states = fit.solve_all(K, fit.gram(Z))
            J = sum(st["objective"] for st in states)
            if fit.growth_done(m, M, auto, J_prev, J):
                break
            J_prev, m = J, min(M, 2 * m)
    else:
        idx, states = grow_basis(fit, M, "uniform" if basis == "kmeans" else basis, auto)
        Z = None if fit.precomputed else X[idx]
    if refine_steps > 0:
        if fit.precomputed:
            raise ValueError("refine_basis needs feature vectors; it is not available with kernel='precomputed'")
        Zd = Z.toarray() if sp.issparse(Z) else np.array(Z, dtype=np.float64)
        Z, states = refine_basis_points(fit, Zd, states, refine_steps)
        idx = None
    return Z, idx, states
