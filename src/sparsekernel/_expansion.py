"""The direct sparse method of Wu, Schölkopf & Bakır ("A direct method for building sparse kernel
learning algorithms", JMLR 2006): marginal functions W(Z) over the expansion vectors Z and their
gradients, minimised by L-BFGS.

    SLMC (section 3)      W(Z) = optimum of the SVM (37)-(39) with the kernel K_z of (40), solved as
                          a linear SVM on the whitened empirical kernel map phi_z = T psi_z (41-43)
                          by dual coordinate descent; gradient (46) as if alpha did not move.
    sparse KFD (App. A)   W(Z) = -largest eigenvalue of (B^z)^-1 A^z (57)-(62); gradient (63).
    reduced set (eq. 4)   ||w - sum_j beta_j phi(z_j)||^2 with beta eliminated (eq. 47): the RS
                          baseline's objective, the same algebra as SLMC with alpha fixed.

Every gradient has the shape  dW/dz_u = sum_i Wx[u, i] dK(z_u, x_i)/dz_u + sum_j Wz[u, j] dK(z_u, z_j)/dz_u
(_kernel_grad.kernel_gradient). Notation: Psi = K^{zx} (n_z x N, row u = K(z_u, .)), K^z = K(Z, Z).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as la
from scipy.optimize import minimize

from . import _core
from ._base import (KERNELS, STATUS_CONVERGED, STATUS_MAX_ITER, STATUS_STOPPED, STATUS_TIME_LIMIT, block_pool,
                    core_matrix)
from ._engine import DualProblem, KernelSpec, SolverOptions, solve
from ._kernel_grad import kernel_gradient

_LINEAR = KernelSpec("linear", 1.0, 0.0, 1)

# jitter tried on the diagonal of a kernel matrix whose Cholesky fails: eps * mean(diag) for these eps
_JITTERS = (0.0,) + tuple(10.0**k for k in range(-12, 1))


class ExpansionKernel:
    """K(Z, X), K(Z, Z) and their derivatives in Z for one kernel; counts kernel evaluations."""

    def __init__(self, kernel, gamma, coef0, degree, nthreads):
        self.kernel, self.gamma, self.coef0, self.degree = kernel, float(gamma), float(coef0), int(degree)
        self.code = KERNELS[kernel]
        self.nthreads = nthreads
        self.evals = 0

    def __call__(self, Z, B_core):
        """K(Z, B) as a dense (n_z, n_B) array; B given as a core matrix."""
        K = _core.kernel_matrix(core_matrix(Z), B_core, self.code, self.gamma, self.coef0, self.degree,
                                self.nthreads)
        self.evals += K.size
        return K

    def gradient(self, Z, B, K_ZB, W):
        """sum_j W[u, j] dK(z_u, b_j)/dz_u (shape of Z)."""
        return kernel_gradient(self.kernel, self.gamma, self.coef0, self.degree, Z, B, K_ZB, W)


def jitter_scale(K):
    """The unit of the jitter: the mean diagonal of a kernel matrix (1 when that is not positive)."""
    scale = float(np.mean(np.abs(np.diag(K)))) if K.size else 1.0
    return scale if np.isfinite(scale) and scale > 0 else 1.0


def cholesky_jittered(K, scale):
    """Lower Cholesky factor L of K + eps I with the smallest eps of _JITTERS * scale that succeeds,
    and eps.

    Duplicate or nearly coincident expansion vectors make K^z singular (SLMC section 5.6); the same
    jittered matrix is then used in W, beta and the gradient, so they stay consistent. The scale is
    fixed per run (not recomputed from K), so the jitter is a constant wherever it does not jump."""
    for eps in _JITTERS:
        try:
            L = la.cholesky(K + (eps * scale) * np.eye(K.shape[0]), lower=True, check_finite=False)
        except la.LinAlgError:
            continue
        if np.all(np.isfinite(L)) and np.all(np.diag(L) > 0):
            return L, eps * scale
    raise ValueError("the kernel matrix of the expansion vectors is not positive definite even with jitter; "
                     "is the kernel positive definite for these parameters?")


# the whitened map's triangular solves run over column blocks of Psi of this many points: a fixed
# partition, so the result does not depend on the thread count (each block on one BLAS thread)
_MAP_BLOCK = 2048


def whitened_map(L, Psi, threads=1):
    """phi_z(x_i) = T psi_z(x_i) as the rows of an (N, n_z) array, T = L^-1 (eqs. 41-42 with a
    Cholesky factor K^z = L L' in place of the eigen-decomposition: T K^z T' = I all the same).
    N n_z^2 flops, the largest dense product of an SLMC step: the blocks of points in ``threads``
    threads (scipy's solves release the GIL)."""
    N = Psi.shape[1]
    out = np.empty((N, Psi.shape[0]))
    starts = range(0, N, _MAP_BLOCK)

    def block(j):
        out[j:j + _MAP_BLOCK] = la.solve_triangular(L, Psi[:, j:j + _MAP_BLOCK], lower=True, check_finite=False).T

    _over_blocks(block, starts, threads)
    return out


def _over_blocks(fn, starts, threads):
    """fn(j) for every block start j, in block order; on the process's block pool (the compact
    route's, ``_base.block_pool``) with ``threads`` > 1 (the blocks' BLAS calls release the GIL)."""
    if threads > 1 and len(starts) > 1:
        return list(block_pool(threads).map(fn, starts))
    return [fn(j) for j in starts]


def gram(Psi, threads=1):
    """Psi Psi' (n_z x n_z) over the same fixed blocks of points as whitened_map, the blocks'
    products summed in block order (the same bits for any thread count). (OpenBLAS's dsyrk, half the
    flops, was slower here: 0.22 s against 0.19 s for 604 x 15,000 on one core.)"""
    starts = range(0, Psi.shape[1], _MAP_BLOCK)

    def block(j):
        P = Psi[:, j:j + _MAP_BLOCK]
        return P @ P.T

    parts = _over_blocks(block, starts, threads)
    S = parts[0]
    for P in parts[1:]:
        S += P
    return 0.5 * (S + S.T)


def feasible_start(a, y, upper):
    """a moved to y'a = 0 within its box: the excess taken from the variables that can give it, in
    proportion to what each can give (one pass, exact unless the box cannot hold y'a = 0)."""
    a = np.clip(np.asarray(a, dtype=np.float64), 0.0, upper)
    s = float(y @ a)
    if s == 0.0:
        return a
    # s > 0: lower a_i of y_i = +1 or raise a_i of y_i = -1 (s < 0: the other way)
    room = np.where(y * np.sign(s) > 0, a, upper - a)
    total = float(room.sum())
    if total <= 0.0:
        return a
    a = a - np.sign(s) * y * room * min(1.0, abs(s) / total)
    return np.clip(a, 0.0, upper)


class InnerSVM:
    """The SVM (37)-(39) on given features Phi (N x n_z): a linear SVM with a free bias, warm-started
    from the previous call's alpha and b (its feasible set does not depend on Z).

    Solved in the primal-dual pair (w = Phi' Y alpha kept explicitly) by dual coordinate descent with
    multiplier rounds for the bias (_core.linear_dual_cd): a coordinate step costs O(n_z) where the
    engine's pair step costs a kernel row, O(N n_z), and the engine needs thousands of them per solve
    (15,000 x 604 features: 0.3-0.4 s against 2.7-8.5 s for the same dual objective at tol 1e-3).
    Coordinate descent slows down where the problem is close to hard-margin (large C: 600 x 40
    features at C = 1e3 does not reach tol = 1e-8 in 20,000 passes); past MAX_EPOCHS passes the
    engine's pair SMO (second order, linear kernel on Phi) finishes from where it stopped."""

    # passes over the (unshrunk) coordinates before the engine takes over (15,000 x 604 features:
    # 790 passes to tol = 1e-3 cold, 7,600 to 1e-6)
    MAX_EPOCHS = 10000
    # coordinate descent solves to this share of tol: its spread of projected gradients is measured
    # during a pass (each coordinate before its own step), so it overstates convergence; at tol itself
    # W(Z) is noisier than the pair SMO's at the same tol and the L-BFGS line searches end early (W
    # rising between accepted iterates on iris one-vs-rest)
    CD_TOL_SHARE = 0.1
    # ... or until the primal-dual gap is GAP_SHARE * tol of the primal (1e-6 at the default tol): W
    # then has that relative accuracy, which is what the L-BFGS over Z reads (with more free
    # variables than features the spread of projected gradients shrinks far more slowly: w8a at
    # 15,000 points x 123 features, 8,700 passes to a spread of 1e-4, 1,000 to a gap of 1e-6)
    GAP_SHARE = 1e-3

    def __init__(self, y, upper, tol, nthreads=1, token=None, max_epochs=MAX_EPOCHS, cache_size=200.0):
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.upper = np.ascontiguousarray(upper, dtype=np.float64)
        self.tol, self.nthreads, self.token = float(tol), nthreads, token
        self.max_epochs, self.cache_size = int(max_epochs), float(cache_size)
        self.alpha = np.zeros(len(self.y))
        self.b = 0.0
        self.gap_share = self.GAP_SHARE  # (loosened by SLMCObjective.follow while W still falls fast)
        self.n_iter = 0  # coordinate-descent passes (and engine steps, where it took over) over all calls
        self.engine_solves = 0
        self.last = None

    def solve(self, Phi):
        """alpha and the bias b of f = w'phi + b for the features Phi."""
        Phi = np.ascontiguousarray(Phi, dtype=np.float64)
        r = _core.linear_dual_cd(Phi=Phi, y=self.y, upper=self.upper, a0=self.alpha, b0=self.b,
                                 tol=self.CD_TOL_SHARE * self.tol,
                                 rho=0.0, max_epochs=self.max_epochs, cancel=self.token,
                                 gap_tol=self.gap_share * self.tol)
        self.alpha, self.b = np.asarray(r["alpha"]), float(r["b"])
        self.n_iter += int(r["epochs"])
        if r["status"] != 0:
            self._finish_by_pairs(Phi)
        self.last = r
        return self.alpha, self.b

    def _finish_by_pairs(self, Phi):
        a = feasible_start(self.alpha, self.y, self.upper)
        g0 = self.y * (Phi @ (Phi.T @ (self.y * a))) - 1.0  # Q a - 1 in O(N n_z) instead of kernel rows
        problem = DualProblem(y=self.y, p=np.full(len(self.y), -1.0), hi=self.upper)
        options = SolverOptions(tol=self.tol, cache_mb=self.cache_size, threads=self.nthreads)
        r = solve(Phi, _LINEAR, problem, options, a0=a, g0=g0, cancel=self.token)
        self.alpha, self.b = r.alpha, -float(r.rho)
        self.n_iter += int(r.n_iter)
        self.engine_solves += 1


class Evaluation:
    """W(Z), its gradient and the classifier at Z: f(x) = beta' psi_z(x) + b."""

    def __init__(self, W, grad, beta, b, jitter, alpha=None, lam=None):
        self.W, self.grad, self.beta, self.b, self.jitter, self.alpha, self.lam = W, grad, beta, b, jitter, alpha, lam


class _JitterUnit:
    """The jitter unit of a run, fixed by the first kernel matrix the objective factorises."""

    scale = None

    def factor(self, K):
        if self.scale is None:
            self.scale = jitter_scale(K)
        return cholesky_jittered(K, self.scale)


class SLMCObjective(_JitterUnit):
    """W(Z) of SLMC (44) and its gradient (46) on the training set (X, y in {-1, +1})."""

    def __init__(self, X, y, kernel, inner):
        self.X, self.y, self.kernel, self.inner = X, np.asarray(y, dtype=np.float64), kernel, inner
        self.X_core = core_matrix(X)
        self._last = None  # (Z, Evaluation) of the last call

    def evaluate(self, Z):
        # the same Z again (the model at the L-BFGS's last iterate): the same evaluation, not a solve
        # warm-started from its own solution, which may move within tol
        if self._last is not None and np.array_equal(self._last[0], Z):
            return self._last[1]
        ev = self._evaluate(Z)
        self._last = (np.array(Z, copy=True), ev)
        return ev

    # the inner solves' relative duality gap follows the outer progress: at most FOLLOW_SHARE of W's
    # last relative decrease (and never looser than MAX_GAP, never tighter than the inner SVM's own
    # GAP_SHARE * tol): W need not be known to 1e-6 while it still falls by 1e-2 per iteration, and
    # its error stays far below the decrease the line searches and the stopping rule compare
    FOLLOW_SHARE, MAX_GAP = 0.01, 1e-4

    def follow(self, history):
        """Set the next inner solves' accuracy from the W history of the L-BFGS so far."""
        inner = self.inner
        floor = inner.GAP_SHARE
        if len(history) < 2 or not history[-1]:
            inner.gap_share = floor
            return
        drop = (history[-2] - history[-1]) / abs(history[-1])
        target = min(self.MAX_GAP, self.FOLLOW_SHARE * max(drop, 0.0)) / inner.tol
        inner.gap_share = max(floor, target)

    def _evaluate(self, Z):
        kern = self.kernel
        Psi = kern(Z, self.X_core)
        Kz = kern(Z, core_matrix(Z))
        L, jitter = self.factor(Kz)
        Phi = whitened_map(L, Psi, kern.nthreads)
        alpha, b = self.inner.solve(Phi)                                     # (37)-(39)
        a = self.y * alpha
        v = Phi.T @ a                                                        # w in F_z
        W = float(alpha.sum() - 0.5 * v @ v)                                 # (44)
        beta = la.solve_triangular(L, v, lower=True, trans="T", check_finite=False)  # (45): (K^z)^-1 Psi Y alpha
        sv = np.flatnonzero(alpha)
        # (46): dW/dz_u = beta_u [sum_j beta_j dK(z_u, z_j) - sum_i a_i dK(z_u, x_i)]
        grad = kern.gradient(Z, Z, Kz, np.outer(beta, beta))
        if len(sv):
            grad -= kern.gradient(Z, self.X[sv], Psi[:, sv], np.outer(beta, a[sv]))
        return Evaluation(W, grad, beta, b, jitter, alpha=alpha)


class KFDObjective(_JitterUnit):
    """W(Z) of sparse KFD (57)-(62), with A the between-class and B the within-class covariance of
    the training set in feature space (scatter / N, so that mu is on the kernel's scale), B^ = B + mu I.

    For two classes A^z = d d' (d = Psi (1_+/n_+ - 1_-/n_-)) is rank one: the largest eigenvalue of
    (B^z)^-1 A^z is lam = d' (B^z)^-1 d with eigenvector beta = (B^z)^-1 d / sqrt(lam), beta' B^z beta = 1
    (61); W = -lam (62)."""

    def __init__(self, X, y, kernel, mu):
        self.X, self.kernel, self.mu = X, kernel, float(mu)
        self.X_core = core_matrix(X)
        y = np.asarray(y, dtype=np.float64)
        self.pos = y > 0
        self.n = len(y)
        n_pos = self.pos.sum()
        self.c = np.where(self.pos, 1.0 / n_pos, -1.0 / (self.n - n_pos))   # d = Psi c

    def matrices(self, Z):
        """Psi, K^z, d, the class means m_+, m_- of psi_z and B^z (n_z x n_z)."""
        Psi = self.kernel(Z, self.X_core)
        Kz = self.kernel(Z, core_matrix(Z))
        d = Psi @ self.c
        m_pos, m_neg = Psi[:, self.pos].mean(axis=1), Psi[:, ~self.pos].mean(axis=1)
        n_pos = self.pos.sum()
        S = gram(Psi, self.kernel.nthreads) - n_pos * np.outer(m_pos, m_pos) - (self.n - n_pos) * np.outer(m_neg, m_neg)
        Bz = S / self.n + self.mu * Kz
        return Psi, Kz, d, m_pos, m_neg, Bz

    def evaluate(self, Z):
        Psi, Kz, d, m_pos, m_neg, Bz = self.matrices(Z)
        L, jitter = self.factor(Bz)
        Bd = la.cho_solve((L, True), d, check_finite=False)
        lam = float(d @ Bd)                                                  # (62)
        beta = Bd / np.sqrt(lam) if lam > 0 else Bd
        # (63): dW = -beta' dA beta + lam beta' dB beta, every term beta_u sum_i w_i dK(z_u, x_i) ...
        bd = float(beta @ d)
        w = (2.0 * lam / self.n) * (Psi.T @ beta - np.where(self.pos, beta @ m_pos, beta @ m_neg)) - 2.0 * bd * self.c
        grad = self.kernel.gradient(Z, self.X, Psi, np.outer(beta, w))
        # ... plus lam mu beta' dK^z beta = 2 lam mu beta_u sum_j beta_j dK(z_u, z_j)
        grad += self.kernel.gradient(Z, Z, Kz, (2.0 * lam * self.mu) * np.outer(beta, beta))
        return Evaluation(-lam, grad, beta, None, jitter, lam=lam)


class ReducedSetObjective(_JitterUnit):
    """||w - sum_j beta_j phi(z_j)||^2 (4) for w = sum_i a_i phi(x_i) (a trained SVM's expansion),
    with beta at its optimum (K^z)^-1 Psi a (47): ||w||^2 - u' (K^z)^-1 u, u = Psi a."""

    def __init__(self, X_sv, a, kernel):
        self.X, self.a, self.kernel = X_sv, np.asarray(a, dtype=np.float64), kernel
        self.X_core = core_matrix(X_sv)
        Ks = kernel(X_sv.toarray() if hasattr(X_sv, "toarray") else X_sv, self.X_core)
        self.w_norm2 = float(self.a @ Ks @ self.a)

    def evaluate(self, Z):
        Psi = self.kernel(Z, self.X_core)
        Kz = self.kernel(Z, core_matrix(Z))
        L, jitter = self.factor(Kz)
        u = Psi @ self.a
        beta = la.cho_solve((L, True), u, check_finite=False)                # (47)
        W = self.w_norm2 - float(u @ beta)
        grad = 2.0 * (self.kernel.gradient(Z, Z, Kz, np.outer(beta, beta))
                      - self.kernel.gradient(Z, self.X, Psi, np.outer(beta, self.a)))
        return Evaluation(W, grad, beta, None, jitter)


# The expansion estimators' stopping rule looks back over this many L-BFGS iterations: converged when
# W_{k-WINDOW} - W_k < tol |W_k|. One iteration's decrease is a poor guide: W falls in plateaus and
# drops (an expansion vector crossing a region of the data), and L-BFGS steps vary in length.
WINDOW = 10


class Minimisation:
    """What an L-BFGS run over Z returns (status as the engine's: 0 converged, 1 max_iter, 2 stopped by
    a callback, 3 time limit)."""

    def __init__(self, Z, history, n_iter, n_evals, status, message):
        self.Z, self.history, self.n_iter, self.n_evals = Z, history, n_iter, n_evals
        self.status, self.converged, self.message = status, status == 0, message


def minimise(objective, Z0, max_iter, tol, progress=None, window=None):
    """Minimise objective.evaluate(Z).W over Z by scipy's L-BFGS-B from Z0.

    Converged when the stopping rule holds: with an integer ``window``, W has decreased by less than
    tol relative to |W| over the last ``window`` iterations, W_{k-window} - W_k < tol |W_k| (SLMC,
    SparseKFD; tol = 0 turns the rule off); with window=None, by less than tol relative to
    max(|W|, 1) over one iteration (scipy's ftol; the reduced-set baseline). Also converged when the
    line search finds no decrease (W is only as accurate as the inner solve); not converged when
    max_iter iterations end first. ``progress`` (the fit's ProblemProgress) receives W after every
    iteration and may stop the run (a callback's request, the time limit). The history holds W at Z0
    and at every accepted iterate, so n_iter = len(history) - 1."""
    shape = Z0.shape
    last = {}
    best = {"W": np.inf, "z": Z0.ravel().copy()}  # the lowest finite W evaluated, and where

    # (W, gradient) at the points evaluated: a point evaluated again (L-BFGS-B may ask twice) gets the
    # same values, and an iterate's W in the history is the one its line search saw (W comes from an
    # inner solve to a tolerance, warm-started from wherever the previous one ended)
    evaluated = {}

    def fun(z):
        Z = z.reshape(shape)
        if not np.all(np.isfinite(z)):  # a step past the range of doubles: no decrease there
            return np.inf, np.zeros_like(z)
        key = z.tobytes()
        if key in evaluated:
            W, g = evaluated[key]
            last["z"], last["W"] = z.copy(), W
            return W, g.copy()
        ev = objective.evaluate(Z)
        last["z"], last["W"] = z.copy(), ev.W
        if len(evaluated) >= 64:
            evaluated.clear()
        evaluated[key] = (ev.W, ev.grad.ravel().copy())
        if np.isfinite(ev.W) and ev.W < best["W"]:
            best["W"], best["z"] = ev.W, z.copy()
        return ev.W, ev.grad.ravel()

    W0, g0 = fun(Z0.ravel())
    history = [W0]
    if max_iter == 0:
        return Minimisation(Z0, history, 0, 1, STATUS_CONVERGED, "max_iter=0: the initial expansion vectors")
    if float(g0 @ g0) == 0.0:  # stationary to double precision (also when |g|^2 underflows: L-BFGS-B's
        # first step 1/|g| would then be infinite)
        return Minimisation(Z0, history, 0, 1, STATUS_CONVERGED, "the gradient vanishes at the initial vectors")
    stop = {}

    def rule_holds():
        k = len(history) - 1
        return tol > 0 and k >= window and history[k - window] - history[k] < tol * abs(history[k])

    follow = getattr(objective, "follow", None)  # an objective whose evaluation accuracy follows W

    def callback(xk):
        W = fun(xk)[0]  # (evaluated already, as a rule)
        history.append(W)
        if follow is not None:
            follow(history)
        last["x"] = xk.copy()
        if progress is not None:
            if progress(len(history) - 1, W, shape[0]):
                stop["status"] = STATUS_STOPPED
            elif progress.monitor.out_of_time():
                stop["status"] = STATUS_TIME_LIMIT
        if not stop and window is not None and rule_holds():
            stop["status"] = STATUS_CONVERGED
        if stop:
            raise StopIteration  # scipy >= 1.11 ends the run and returns the last iterate

    # with a window the rule above decides and scipy's own (ftol, one iteration's decrease) is off
    res = minimize(fun, Z0.ravel(), jac=True, method="L-BFGS-B", callback=callback,
                   options={"maxiter": int(max_iter), "ftol": float(tol) if window is None else 0.0, "gtol": 0.0,
                            "maxcor": 10})
    # scipy's status 1: iteration or evaluation limit
    status = stop.get("status", STATUS_MAX_ITER if res.status == 1 else STATUS_CONVERGED)
    z, W = (last["x"], history[-1]) if stop else (res.x, res.fun)
    if not (np.all(np.isfinite(z)) and W <= best["W"]):
        z = best["z"]  # never a non-finite iterate, nor one worse than a point already evaluated
    Z = z.reshape(shape)
    if progress is not None:
        progress.end(len(history) - 1, history[-1], shape[0], status)
    return Minimisation(Z, history, len(history) - 1, int(res.nfev) + 1, status, str(res.message))
