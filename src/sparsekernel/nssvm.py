"""NSSVC: the Newton method for the sparsity-constrained SVM of Zhou, "Sparse SVM for sufficient
data reduction" (IEEE TPAMI 2021), with linear and nonlinear kernels.

Model (8): min_a D(a) = 1/2 ||Q a||^2 + 1/2 <E(a) a, a> - <1, a> (9), Hessian H(a) = Q'Q + E(a)
(14), subject to y'a = 0 and ||a||_0 <= s; D is the dual (6) of the primal (4) whose loss l_cC (5)
weighs margin violations by C and over-satisfied margins by c < C. Algorithm 1 solves the stationary equations (36) by Newton
steps restricted to a working set T of s indices; NSSVM (Algorithm 2) grows s by sigma = 1.1, up to
the user's s when one is given (a hard cap: the support lies in T) and up to m for s='auto'.

The m-long work of an iteration is one pass in C++ (``_core.nssvm_scan``): the gradient g (21), the
hard-thresholding scores |a - eta g| with their top s (41), and the training accuracy (68). The rest
is O(max(n, s) s^2) dense algebra on T (scipy's Cholesky). A "Q-provider" gives the solver what it
needs of the data: :class:`_LinearQ` (w = Q a, never an m x m matrix; Woodbury when s > n) and
:class:`_KernelQ` (K_TT here, kernel columns of T kept by the row blocks while their index stays in T).
"""

from __future__ import annotations

import hashlib
import math
import numbers
from numbers import Integral
import time

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import RealNotInt, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.random import sample_without_replacement
from sklearn.utils.validation import check_is_fitted, validate_data
import copy

from . import _core
from ._blocks import SIGMA, InMemoryBlocks, RowBlocks, labels_of
from ._dask_rows import DaskBlocks, checked_dask_matrix, class_codes, dask_client
from ._budget import calibrate_expansion, parse_budget, prediction_cost
from ._memory import FIXED_BYTES, Budget, nssvc_working_bytes, require, x_bytes
from ._base import (
    BUDGET_CONSTRAINT,
    KERNEL_PARAM_CONSTRAINTS,
    KERNELS,
    N_JOBS_CONSTRAINT,
    POSITIVE,
    TIME_LIMIT_CONSTRAINT,
    ConstrainedParamsMixin,
    NumInterval,
    one_thread,
    STATUS_CONVERGED,
    STATUS_MAX_ITER,
    STATUS_STOPPED,
    STATUS_TIME_LIMIT,
    CallbackSupportMixin,
    Expansion,
    KernelSpec,
    FitMonitor,
    KernelModelMixin,
    warn_if_stopped_early,
    with_callbacks,
    canonical_csr,
    core_matrix,
    is_dask_array,
    n_threads,
    resolve_gamma,
)

_BLOCK_ROWS = None  # rows per block of the linear pass (None: X as one block; the tests split it)
ACC_TOL = 1e-4  # (67), on ACC as a fraction (see NSSVC's docstring)
GROW_EVERY = 10  # Algorithm 2: s grows when k is a multiple of this (or when (66) holds)
CYCLE_VISITS = 3  # at a final s, the visits of one state (T, signs) without (66) that mean a cycle
KERNEL_S_FRACTION = 0.1  # s='auto' for nonlinear kernels (see NSSVC's docstring)
# adaptive='accuracy': after Algorithm 2, a doubling of s is kept when it raises the training accuracy
# ACC (68) by at least this much (a fraction: a quarter of a point); s='auto' doubles up to
# ACCURACY_MAX_SHARE m
ACC_GAIN = 0.0025
ACCURACY_MAX_SHARE = 0.5
AUTO_MAX_FRACTION = 0.05  # s='auto' for the linear kernel: s(beta) capped at this fraction of m



def sparsity_level(beta, m, n):
    """s(beta) = ceil(beta n (log2(m / n))^2) of section 4.2.3, with log2(m / n) taken >= 1 (the rule
    is meant for m >> n) and the result clipped to [2, m]."""
    lg = max(1.0, math.log2(m / n))
    return int(min(m, max(2, math.ceil(beta * n * lg * lg))))


def default_level(beta, m, n):
    """s='auto' of the linear kernel: s(beta), at most ceil(AUTO_MAX_FRACTION m)."""
    return int(max(2, min(sparsity_level(beta, m, n), math.ceil(AUTO_MAX_FRACTION * m))))


# ---------------------------------------------------------------------------- Q-providers
def _scale_rows(A, v):
    """diag(v) A for CSR A, as float64 CSR (no sparse product)."""
    out = A.astype(np.float64, copy=True)
    out.data *= np.repeat(v, np.diff(out.indptr))
    return out


class _LinearQ:
    """Q = [y_1 x_1 ... y_m x_m] (n x m) of the linear kernel, through the row blocks of X
    (``_blocks.RowBlocks``: X in memory, never copied, or on Dask workers). The rows of the working
    set T come back with each pass, so the algebra on T never goes back to the data."""

    def __init__(self, data, y, nthreads=1):
        """``data``: the RowBlocks of a fit (their target set to this problem), or X itself."""
        if not isinstance(data, RowBlocks):
            data = InMemoryBlocks(data, (np.asarray(y) > 0).astype(np.int8), nthreads)
            data.set_target(1)
        self.blocks, self.y = data, y
        self.m, self.n = data.shape
        self.T, self.X_T = np.zeros(0, dtype=np.int64), None
        self.S, self.X_S = np.zeros(0, dtype=np.int64), None  # the support of the last pass

    def rows(self, idx):
        """The rows of sorted indices idx: from those of T (or of the last support) when idx lies
        there, else from the data."""
        for known, rows in ((self.T, self.X_T), (self.S, self.X_S)):
            if rows is None:
                continue
            if np.array_equal(idx, known):
                return rows
            if len(idx) and np.all(np.isin(idx, known, assume_unique=True)):
                return rows[np.searchsorted(known, idx)]
        self.T, self.X_T = np.array(idx, dtype=np.int64), self.blocks.rows(idx)
        return self.X_T

    def theta_solve(self, T, E, rhs):
        """Theta^{-1} rhs for Theta = H_T(a) = Q_T'Q_T + diag(E) (63), Q_T' = the rows y_i x_i of T: an
        s x s Cholesky when s <= n, else the Woodbury identity with the n x n matrix I + Q_T D^-1 Q_T'.
        CSR X stays sparse (products cost O(s nnz_row^2), not O(s n^2))."""
        yT = self.y[T].astype(np.float64)
        X_T = self.rows(T)
        QT = _scale_rows(X_T, yT) if sp.issparse(X_T) else X_T * yT[:, None]  # s x n
        dense = (lambda A: A.toarray() if sp.issparse(A) else A)
        if len(T) <= self.n:
            G = dense(QT @ QT.T)
            G[np.diag_indices_from(G)] += E
            return sla.cho_solve(sla.cho_factor(G, lower=True, check_finite=False), rhs, check_finite=False)
        Dinv = 1.0 / E
        M = dense(QT.T @ (_scale_rows(QT, Dinv) if sp.issparse(QT) else QT * Dinv[:, None]))
        M[np.diag_indices_from(M)] += 1.0
        u = Dinv[:, None] * rhs
        corr = QT @ sla.cho_solve(sla.cho_factor(M, lower=True, check_finite=False), QT.T @ u, check_finite=False)
        return u - Dinv[:, None] * np.asarray(corr)

    def weights(self, S, alpha_S):
        """w = Q a = sum_{i in S} a_i y_i x_i (72)."""
        if not len(S):
            return np.zeros(self.n)
        coef = alpha_S * self.y[S]
        w = self.rows(S).T @ coef
        return np.asarray(w, dtype=np.float64).ravel()

    def window(self, S, alpha_S, b, rng):
        """The samples nearest the boundary at (alpha; b) and the correct count (intercept refit)."""
        w = self.weights(S, alpha_S)
        probe, back = np.unique(rng.randint(0, self.m, size=min(self.m, _PROBE_ROWS)), return_inverse=True)
        f_probe = np.asarray(self.blocks.rows(probe) @ w, dtype=np.float64).ravel()[back]
        r = _window_radius(f_probe + b, self.m)
        return self.blocks.window(w, b, r)

    def scan(self, S, alpha_S, b, eta, C, c, k):
        w = self.weights(S, alpha_S)
        self.S, self.X_S = np.array(S, dtype=np.int64), (self.rows(S) if len(S) else None)  # kept: the model's
        r = self.blocks.scan(w, S, alpha_S, b, eta, 1.0 / C, 1.0 / c, k)                   # support vectors
        self.T, self.X_T = r["T"], r["X_T"]
        return r


class _KernelQ:
    """Q'Q = (y y') o K for a nonlinear (or precomputed) kernel, through the row blocks of X
    (``_blocks.RowBlocks``): every block keeps the kernel columns of the working set against its
    rows (``_blocks.KernelColumns``, O(m s) memory in all), so a pass sends it only T, the rows x_T
    and alpha on its support. The algebra on T needs K_TT alone, computed here from the rows of T
    (kept for the indices that stay in T). One instance serves the one-vs-rest problems in turn
    (the columns do not depend on the labels ``y``)."""

    def __init__(self, blocks, kernel, nthreads):
        self.blocks, self.kernel, self.nthreads = blocks, kernel, nthreads
        self.precomputed = kernel.name == "precomputed"
        self.m, self.n = blocks.shape
        self.y = None
        self.T, self.X_T = np.zeros(0, dtype=np.int64), None  # the rows of the last working set
        self.S, self.X_S = np.zeros(0, dtype=np.int64), None  # and of the last support
        self._gram_T, self._gram = None, None  # the last working set of a Newton step and its K_TT
        self.n_computed = 0  # kernel columns evaluated (reuse statistics)

    @classmethod
    def of(cls, X, y, kernel, gamma, coef0, degree, nthreads=1):
        """The Q-provider of X in memory (one block) for labels y (+-1): the tests' entry."""
        spec = KernelSpec(kernel, gamma, coef0, degree)
        blocks = InMemoryBlocks(X, (np.asarray(y) > 0).astype(np.int8), nthreads, kernel=spec)
        blocks.set_target(1)
        Q = cls(blocks, spec, nthreads)
        Q.y = y
        return Q

    rows = _LinearQ.rows  # the rows of T or S when they cover idx, else from the blocks

    def _kernel_rows(self, A_rows, B_rows, B_idx):
        """K(a, b) for the rows a of A_rows against the rows b of B_rows (global indices B_idx)."""
        if self.precomputed:
            return np.asarray(A_rows[:, B_idx], dtype=np.float64)
        return _core.kernel_matrix(core_matrix(A_rows), core_matrix(B_rows), *self.kernel.args, self.nthreads)

    def gram(self, T):
        """K_TT, kept from the previous working set for the indices that stay (only the rows of new
        indices are computed)."""
        if self._gram_T is not None and np.array_equal(self._gram_T, T):
            return self._gram
        X_T = self.rows(T)
        K = np.empty((len(T), len(T)))
        fresh = np.arange(len(T))
        if self._gram_T is not None:
            _, now, before = np.intersect1d(T, self._gram_T, assume_unique=True, return_indices=True)
            K[np.ix_(now, now)] = self._gram[np.ix_(before, before)]
            fresh = np.setdiff1d(fresh, now, assume_unique=True)
        if len(fresh):
            R = self._kernel_rows(X_T[fresh], X_T, T)  # K(x_fresh, x_T)
            K[:, fresh] = R.T
            K[fresh, :] = R
        self._gram_T, self._gram = np.array(T, copy=True), K
        return K

    def theta_solve(self, T, E, rhs):
        """Theta^{-1} rhs for Theta = (y_T y_T') o K_TT + diag(E) (63), by Cholesky."""
        yT = self.y[T].astype(np.float64)
        G = self.gram(T) * yT[:, None]
        G *= yT[None, :]
        G[np.diag_indices_from(G)] += E
        return sla.cho_solve(sla.cho_factor(G, lower=True, check_finite=False), rhs, check_finite=False)

    def _coef(self, S, alpha_S):
        return np.ascontiguousarray(alpha_S * self.y[S], dtype=np.float64)

    def window(self, S, alpha_S, b, rng):
        """The samples nearest the boundary at (alpha; b) and the correct count (intercept refit)."""
        coef, X_S = self._coef(S, alpha_S), self.rows(S)
        probe, back = np.unique(rng.randint(0, self.m, size=min(self.m, _PROBE_ROWS)), return_inverse=True)
        f_probe = self.blocks.kernel_margins_at(S, coef, X_S, probe)[back]
        self.n_computed += 2 * len(S)  # an older iterate's columns, computed for the probe and the window
        return self.blocks.kernel_window(S, coef, X_S, b, _window_radius(f_probe + b, self.m))

    def scan(self, S, alpha_S, b, eta, C, c, k):
        """The pass at (alpha, b); the blocks first take the columns of the Newton step's T."""
        T_load = self._gram_T if self._gram_T is not None else self.T
        if len(S) and not np.all(np.isin(S, T_load, assume_unique=True)):  # a point set from outside the solver
            T_load = np.union1d(T_load, S)
        X_T_load = None if self.precomputed else self.rows(T_load)
        self.S, self.X_S = np.array(S, dtype=np.int64), (self.rows(S) if len(S) else None)
        r = self.blocks.kernel_scan(T_load, X_T_load, np.asarray(S, dtype=np.int64), np.asarray(alpha_S, np.float64),
                                    self._coef(S, alpha_S), b, eta, 1.0 / C, 1.0 / c, k)
        self.n_computed += int(r["computed"])
        self.T, self.X_T = r["T"], r["X_T"]
        return r


# ---------------------------------------------------------------------------- the solver
class NewtonSolver:
    """Algorithm 1 (fixed s) and Algorithm 2 (NSSVM, adaptive s) on one binary problem.

    ``Q`` is a Q-provider, ``y`` int8 labels +-1. State: alpha on its support (``S`` sorted,
    ``a_S``; alpha is never an m-vector: memory is X, y and O(s)), the intercept ``b``, the working
    set ``T`` (sorted) and g_T, the gradient (21) on T. ``s_max`` caps Algorithm 2's growth of s
    (None: m); the support lies in T, so it never has more than ``s_max`` indices.
    """

    def __init__(self, Q, y, *, s, C, c, eta, tol, max_iter, adaptive, rng, refit_intercept=False, t0="balanced",
                 progress=None, s_max=None):
        self.Q, self.y = Q, y
        self.m = len(y)
        self.s_max = self.m if s_max is None else min(self.m, int(s_max))
        self.s, self.C, self.c, self.eta, self.tol = min(int(s), self.s_max), C, c, eta, tol
        self.max_iter, self.adaptive, self.rng = max_iter, adaptive, rng
        self.refit_intercept, self.t0 = refit_intercept, t0
        self.progress = progress  # the fit's ProblemProgress: reports, time limit, stop requests

    # -- start (section 4.2; DESIGN.md misprint: T0 balanced, not top-s of |a - eta g|)
    def initial_point(self):
        """alpha = 0, b = sgn(<y, 1>) (sgn(0) = 1), T0 = s indices drawn at random from both classes
        (DESIGN.md: the paper's top-s of |alpha0 - eta g0| picks one class only): half from each
        (t0='balanced') or in proportion to the class sizes ('stratified', at least one of each)."""
        y = self.y
        n_pos = (int(np.sum(y, dtype=np.int64)) + self.m) // 2  # labels +-1: no m-long temporary
        n_neg = self.m - n_pos
        if self.t0 == "balanced":
            want_pos = (self.s + 1) // 2
        else:
            want_pos = min(self.s - 1, max(1, int(round(self.s * n_pos / self.m))))
        want_pos = min(n_pos, max(self.s - n_neg, want_pos))  # a class smaller than its share: all of it
        want_neg = min(n_neg, self.s - want_pos)
        self.T = np.sort(balanced_sample(y, want_pos, want_neg, self.rng))
        self.S, self.a_S = np.zeros(0, dtype=np.int64), np.zeros(0)
        self.b = 1.0 if n_pos >= n_neg else -1.0
        self.g_T = -1.0 + y[self.T] * self.b  # g(z0) = H 0 - 1 + y b (21)
        self.acc = (n_pos if self.b > 0 else n_neg) / self.m

    @property
    def alpha(self):
        """alpha as a dense m-vector (for inspection; the solver keeps it on S only)."""
        a = np.zeros(self.m)
        a[self.S] = self.a_S
        return a

    @alpha.setter
    def alpha(self, a):
        self.S = np.flatnonzero(a).astype(np.int64)
        self.a_S = np.asarray(a, dtype=np.float64)[self.S]

    def alpha_on(self, idx):
        """alpha_idx for sorted indices idx."""
        pos = np.minimum(np.searchsorted(self.S, idx), max(0, len(self.S) - 1))
        hit = (self.S[pos] == idx) if len(self.S) else np.zeros(len(idx), dtype=bool)
        return np.where(hit, self.a_S[pos] if len(self.S) else 0.0, 0.0)

    def residual(self):
        """||F(z; T)|| of the stationary equations (36): g_T, alpha off T, <alpha_T, y_T>."""
        a_T = self.alpha_on(self.T)
        off = float(self.a_S @ self.a_S) - float(a_T @ a_T)
        yt = float(a_T @ self.y[self.T])
        return math.sqrt(max(0.0, float(self.g_T @ self.g_T) + max(0.0, off) + yt * yt))

    def newton_step(self):
        """Solve (52) by (63) on T and take the full step (62)."""
        T, y_T = self.T, self.y[self.T].astype(np.float64)
        a_T = self.alpha_on(T)
        E = np.where(a_T >= 0, 1.0 / self.C, 1.0 / self.c)  # E(alpha)_TT (12)
        U = self.Q.theta_solve(T, E, np.column_stack([self.g_T, y_T]))
        u, v = U[:, 0], U[:, 1]
        db = -(y_T @ u - y_T @ a_T) / (y_T @ v)  # d_{m+1}
        d_T = -(u + db * v)
        new = a_T + d_T  # and d = -alpha off T (62): the new support lies in T
        nz = new != 0.0
        self.S, self.a_S = T[nz], new[nz]
        self.b += db

    def scan(self):
        """The O(m) pass at the new point: g, ACC (68) and T = top-s of |alpha - eta g| (41)."""
        r = self.Q.scan(self.S, self.a_S, self.b, self.eta, self.C, self.c, self.s)
        self.T, self.g_T = r["T"], r["g"]
        self.acc = r["correct"] / self.m

    def _state(self):
        """The discrete state of the next Newton step: T and the sign pattern of alpha_T (which sets
        E(alpha)_TT (12)), as a 16-byte digest."""
        signs = self.alpha_on(self.T) >= 0
        return hashlib.blake2b(self.T.tobytes() + np.packbits(signs).tobytes(), digest_size=16).digest()

    def solve(self):
        """Run Algorithm 1 (adaptive=False) or 2 from the start of section 4.2; returns self.

        Once s can no longer change (Algorithm 1, or Algorithm 2 at its cap s_max), the iterations
        can cycle instead of converging: the top-s rule (41) swaps T between index sets of the same
        size, and the iterates follow (the Newton step (63) depends on T, on the signs of alpha_T
        and, through g_T, on alpha off T, so they repeat only approximately). A converging run
        meets its final state (T, signs; :meth:`_state`) twice, the second step landing on the
        solution; when a state comes back a third time (CYCLE_VISITS) and no iterate since its first
        visit satisfied (66), the loop stops (``cycled``) and returns the iterate of best training
        accuracy."""
        self.initial_point()
        history = [(self.residual(), self.acc, self.s)]
        accs = [0.0, self.acc]  # ACC(alpha^-1) = 0 (67)
        best = (-1.0, self.S, self.a_S, self.b, history[0][0])  # the best iterate after a Newton step (alpha0 = 0
        self.converged, self.cycled = False, False                # is no model), with its ||F||
        self.status = STATUS_MAX_ITER  # unless the loop ends otherwise
        seen, seen_s = {}, None  # states of the Newton steps at a final s -> [visits, the iterate the first gave]
        k = 0
        while True:
            F = history[-1][0]
            small = F < self.tol  # (66)
            flat = accs[-1] - max(accs[:-1]) < ACC_TOL  # (67), one-sided: no significant gain
            if small and (flat or not self.adaptive):
                self.converged, self.status = True, STATUS_CONVERGED
                break
            if k >= self.max_iter:
                break
            if not self.adaptive or self.s >= self.s_max:  # s is final: look for a cycle
                if seen_s != self.s:
                    seen, seen_s = {}, self.s
                visits = seen.setdefault(self._state(), [0, k + 1])
                visits[0] += 1
                if visits[0] >= CYCLE_VISITS and min(h[0] for h in history[visits[1]:]) >= self.tol:
                    self.cycled = True
                    break
            self.newton_step()
            if self.adaptive and (k % GROW_EVERY == 0 or small):  # Algorithm 2 (k = 0 included), up to the cap
                self.s = min(self.s_max, int(math.ceil(SIGMA * self.s)))
            self.scan()
            k += 1
            history.append((self.residual(), self.acc, self.s))
            accs.append(self.acc)
            if self.acc > best[0]:
                best = (self.acc, self.S, self.a_S, self.b, history[-1][0])
            if self.progress is not None:
                if self.progress(k, history[-1][0], self.s):
                    self.status = STATUS_STOPPED
                    break
                if self.progress.monitor.out_of_time():
                    self.status = STATUS_TIME_LIMIT
                    break
        self.n_iter = k
        if self.progress is not None:
            self.progress.end(k, history[-1][0], self.s, self.status)
        self.history = np.array(history)
        self.norm_F = history[-1][0]
        if self.cycled and best[0] > self.acc:  # the cycle's iterates are no better than one another
            self.acc, self.S, self.a_S, self.b, self.norm_F = best
        self.intercept_newton = self.b
        if self.refit_intercept:
            self.refit(best)
        return self

    def refit(self, best):
        """The author's code's option: the best-ACC iterate, then the intercept that maximises the
        training accuracy (a 1-D search over the margins nearest the boundary)."""
        acc, S, a_S, b = best[:4]
        if acc > self.acc:
            self.S, self.a_S, self.b = S, a_S, b
        self.intercept_newton = self.b
        win = self.Q.window(self.S, self.a_S, self.b, self.rng)
        self.b, gain = best_window_intercept(win["f"], win["y"], self.b)
        self.acc = (win["correct"] + gain) / self.m


def balanced_sample(y, n_pos, n_neg, rng):
    """n_pos random indices of y > 0 and n_neg of y < 0, without replacement, in O(n_pos + n_neg)
    expected time when both classes are common (rejection from uniform draws); a class too rare
    for that is enumerated."""
    m = len(y)
    out = []
    for want, sign in ((n_pos, 1), (n_neg, -1)):
        if want == 0:
            continue
        frac = np.count_nonzero(y[rng.randint(0, m, size=min(m, 1000))] == sign) / min(m, 1000)
        if frac >= 0.05 and want <= 0.05 * m:
            picked = np.zeros(0, dtype=np.int64)
            while len(picked) < want:
                draw = sample_without_replacement(m, min(m, int(2 * want / frac) + 64), random_state=rng)
                cand = draw[y[draw] == sign]
                picked = np.unique(np.concatenate([picked, cand]))
            keep = rng.permutation(len(picked))[:want]
            out.append(picked[keep])
        else:
            members = np.flatnonzero(y == sign)
            out.append(members[sample_without_replacement(len(members), want, random_state=rng)])
    return np.concatenate(out).astype(np.int64)


_WINDOW = 200_000  # samples near the boundary the intercept refit may move
_PROBE_ROWS = 100_000  # random rows that estimate the window's radius


def _window_radius(t_probe, m):
    """|f + b| below which about _WINDOW of the m samples lie, from a random probe of f + b."""
    return np.inf if m <= _WINDOW else float(np.quantile(np.abs(t_probe), _WINDOW / m))


def best_window_intercept(fw, yw, b):
    """(b', gain): the intercept maximising the training accuracy #{sgn(f_i + b') = y_i} (sgn(0) = -1)
    over shifts that move only the window samples (fw, yw; the others keep their sign), and the
    number of samples it corrects. Sorted by f descending, making the first j window samples
    positive gains +1 per positive and -1 per negative; cuts only between distinct margins (equal
    margins share their sign), thresholds from f itself so that f_i + b' lands where intended."""
    K = len(fw)
    if K == 0:
        return b, 0
    order = np.argsort(-fw, kind="stable")
    fw, yw = fw[order], yw[order]
    gains = np.concatenate([[0], np.cumsum(np.where(yw > 0, 1, -1))])
    cut = np.concatenate([[True], fw[:-1] > fw[1:], [True]])
    j = int(np.flatnonzero(cut)[np.argmax(gains[cut])])
    current = int(np.count_nonzero(fw + b > 0))  # the window samples positive now (a valid cut)
    gain = int(gains[j] - gains[current])
    if gain <= 0:
        return b, 0
    if j == 0:
        return -fw[0], gain  # f_0 + b' = 0: negative
    if j == K:
        return float(np.nextafter(-fw[-1], np.inf)), gain
    return -0.5 * (fw[j - 1] + fw[j]), gain


def best_accuracy_intercept(f, y, b, rng, window=_WINDOW):
    """best_window_intercept's b' for margins f given in full, with the window of about ``window``
    samples nearest the boundary (radius estimated from a random probe)."""
    m = len(f)
    if window < m:
        r = np.quantile(np.abs(f[rng.randint(0, m, size=_PROBE_ROWS)] + b), window / m)
        mask = f >= -b - r
        mask &= f <= -b + r
        near = np.flatnonzero(mask)
    else:
        near = np.arange(m)
    return best_window_intercept(f[near], y[near], b)[0]


def support_rows(solvers, support):
    """The rows of the model's support (sorted) from the rows each problem kept of its own support
    (``X_S``: those of its last pass, or those the intercept refit fetched for an older iterate): no
    trip to the data."""
    out = None
    for sv in solvers:
        if not len(sv.S):
            continue
        R = sv.X_S
        if out is None:
            out = sp.lil_matrix((len(support), R.shape[1])) if sp.issparse(R) else np.zeros((len(support), R.shape[1]))
        out[np.searchsorted(support, sv.S)] = R
    if out is None:
        return np.zeros((0, solvers[0].Q.n))
    return out.tocsr() if sp.issparse(out) else out


class _RowsOf:
    """``X[idx]`` of a training set through a function: the support vectors of a fit whose rows
    live elsewhere (row blocks on Dask workers)."""

    def __init__(self, rows, shape):
        self.rows, self.shape = rows, shape

    def __getitem__(self, idx):
        return self.rows(idx)


# ---------------------------------------------------------------------------- the estimator
class NSSVC(ConstrainedParamsMixin, CallbackSupportMixin, KernelModelMixin, ClassifierMixin, BaseEstimator):
    """Sparse SVM classifier by the Newton method of Zhou (NSSVM), linear or with kernels.

    Solves model (8): the dual (6) of the SVM (4) with the loss l_cC (5) (C on margin violations,
    c on over-satisfied margins) under the sparsity constraint ||alpha||_0 <= s, so an integer ``s``
    bounds the support vectors of each problem (the one binary problem, or each one-vs-rest
    problem), by Newton steps on the stationary equations (36). The linear kernel
    never forms an m x m matrix: an iteration is one O(mn) pass over X (C++, multithreaded) plus
    O(max(n, s) s^2) algebra on the working set T. Nonlinear kernels (an extension of the paper)
    keep the m x s kernel columns of T, reused while their index stays in T.

    Parameters
    ----------
    C : float, default=0.25
        Weight of margin violations in (5); the paper's choice (section 4.2.2).
    c : float or None, default=None
        Weight of over-satisfied margins, 0 < c < C; None means 0.01 * C (section 4.2.2; the
        author's released code silently uses C / 2 or other values instead).
    s : 'auto', int or float, default='auto'
        Sparsity level. An int is a hard cap: each problem keeps at most ``s`` support vectors
        (two classes: the model has at most ``s``; k > 2 classes: at most ``s`` per one-vs-rest
        problem, at most k s in all), and ``s_`` never exceeds it. With ``adaptive``, Algorithm 2's
        growth starts where 'auto' starts (or at ``s`` when that is smaller) and stops at ``s``;
        without, ``s`` is the fixed level. A float in (0, 1] is the cap ceil(s m), a fraction of
        the m samples. At a level that can no longer grow, the Newton iterations may cycle (the
        top-s working set swapping between index sets it had before) instead of converging: when
        a working set comes back a third time with no converged iterate since, the fit stops with a
        ConvergenceWarning (``converged_`` False) and keeps the iterate of best training accuracy (standardised breast_cancer, 426 training samples:
        the caps 15, 20, 22 and 30 cycle, 25, 40 and 50 converge).

        'auto' is the paper's rule, with no cap. The level starts at, for the linear kernel, the
        paper's s(beta) = ceil(beta n (log2(m / n))^2) (section 4.2.3) with ``beta``, at most
        ceil(m / 20) (uncapped, s(1) starts at a third of w8a's 49749 samples and grows to all of
        them); for the other kernels (s(beta) has no meaning there) ceil(m / 10), chosen on magic,
        ringnorm, banana and usps (benchmarks/results/nssvm.md). It then grows by 10 % at every
        tenth iteration and whenever the Newton loop has converged at the current level, until
        the accuracy stops improving, possibly to all m samples. The model is sparse when the start
        is small against m and the loop converges in a few iterations. For the linear kernel that
        needs m, the number of samples, much larger than n, the number of features (the rule is
        made for m >> n: s(1) / m = (n / m) (log2(m / n))^2 is 0.44 at m = 100 n, 0.1 at
        m = 1000 n), and features on comparable scales: the paper's Example 4.1 (n = 2) keeps
        5.6 % of the samples at m = 1e3, 3.7 % at 1e4 and 0.6 % at 1e5, standardised breast_cancer
        (569 x 30) 32 samples; unstandardised breast_cancer needs hundreds of iterations, so s
        grows to all 569. For a nonlinear kernel the rule keeps about a tenth of the samples
        whatever m / n (the start m / 10 and a growth step or two: 11 % of magic, of Example 4.1's
        Gaussians and of each one-vs-rest problem of digits). Pass an int to bound the model.
    beta : float, default=1.0
        beta of s(beta). The paper tunes it per data set (Table IV: 1 for Example 4.1 above 1e4
        samples, 0.2 for a5a-a9a, 0.05 for its other real sets); 1.0 with the m / 20 cap is the
        data-independent default here: it gives Table VII's levels and nearly a9a's (1628 against
        the paper's s(0.2) = 1597). What it costs against the per-set choices is measured in
        benchmarks/results/nssvm.md.
    adaptive : 'accuracy' or bool, default='accuracy'
        'accuracy' (linear kernel): Algorithm 2 as below, then Algorithm 1 (fixed s) at twice the
        level it stopped at, and twice again, while each doubling raises the training accuracy
        ACC (68) by at least a quarter of a point and converges, up to half of the samples for
        s='auto' (at most an int or float ``s``, or ``budget``); the model is the last level that
        paid, ``levels_`` lists every level solved. Algorithm 2's accuracy rule (67) stops the
        growth by 10 % steps where a doubling still pays: at the defaults in a StandardScaler
        pipeline (benchmarks/results/sparse.md, 15,000 training rows) Algorithm 2 alone keeps 6 %
        of a9a at test accuracy 0.821 (LinearSVC 0.850) and 2 % of the 1e5 x 10 nonlinear set at
        0.664 (0.687); with the levels 0.848 at 48 % and 0.683 at 8 %, and every set of
        benchmarks/bench_sparse.py within 1 point of LinearSVC. Other kernels run Algorithm 2
        (their m x s kernel columns and s x s systems make the doublings from m / 10 costly).
        True: NSSVM (Algorithm 2), the paper's: s grows by sigma = 1.1 at iterations k = 0, 10, 20, ... (0 is a
        multiple of 10) and whenever (66) ||F|| < tol holds, never past an int or float ``s``
        (the cap; m for 'auto'); the loop stops when (66) and (67) both
        hold. Two readings had to be chosen: "and" for the paper's "violates (66) and (67)", and
        (67) one-sided, ACC_k - max_{j<k} ACC_j < 1e-4 with ACC a fraction, as the text explains it
        ("the accuracy does not increase significantly"). With the printed absolute value a drop of
        ACC after a growth step never stops the loop (Example 4.1 at m = 1e5: s ran to 10400).
        With these readings Table VII's NSV is reproduced (benchmarks/results/nssvm.md, with
        adaptive=True). False: Algorithm 1 with fixed s, stopping on (66).
    eta : float or None, default=None
        Step of the eta-stationarity (32); None means 1 / m (section 4.2.1), a step for
        standardised features: on features of large scale the gradient's part of the scores
        |alpha - eta g| dominates and the working set jumps at every iteration, so a fit whose s
        cannot grow to nearly m (an int ``s``, ``adaptive=False``) does not converge (breast_cancer
        as distributed, s=20: it cycles, test accuracy 0.88; standardised 0.94; unstandardised
        with eta=1e-8 it converges in 6 iterations, 0.93).
    tol : float or None, default=None
        epsilon of (66); None means 1e-6 * max(sqrt(m), sqrt(n)) (section 4.2).
    max_iter : int, default=1000
    kernel : {'linear', 'rbf', 'poly', 'sigmoid', 'laplacian', 'precomputed'}, default='linear'
    gamma, coef0, degree : as in :class:`sklearn.svm.SVC` (kernels other than linear)
    t0 : {'balanced', 'stratified'}, default='balanced'
        How the random initial working set T0 is drawn: half from each class (DESIGN.md's fix of
        the paper's rule, which picks one class only), or in proportion to the class sizes. On
        balanced data they agree. With eta = 1/m, T rarely moves, and the model is close to the SVM
        (4) trained on T alone, whose loss sums over s instead of m points (an effective C of about
        C s / m). Which T0 is better depends on the data: on a9a (24 % positives) 'stratified' gains
        2.2 points of accuracy (1.1 with refit_intercept), on skin (21 %) it loses 12 (0.5 with
        refit_intercept) (benchmarks/results/nssvm.md).
    refit_intercept : bool, default=True
        The author's code's extra: return the iterate of best training accuracy and refit b to
        maximise training accuracy. Off: b is the Newton step's, which equals (23). On by default:
        the fit stops after a few iterations (the accuracy rule (67)), where the Newton step's b
        is still far from the best, and the refit gains accuracy on every set measured at its
        defaults (benchmarks/results/sparse.md, test accuracy, off -> on: make_classification(20000)
        0.827 -> 0.834, a9a 0.798 -> 0.821, skin 0.878 -> 0.945, the 1e5 x 10 nonlinear set
        0.456 -> 0.664).
    random_state : int, RandomState or None
        Draws the initial working set T0 (half from each class).
    n_jobs : int or None, default=None
        Threads of the O(m) passes and kernel columns (None: every thread the process may use,
        counted as scikit-learn does: OMP_NUM_THREADS, threadpoolctl limits, joblib's workers, CPU
        affinity and quotas).
    verbose : bool, default=False
        Print every Newton iteration (||F|| against tol, s, time).
    time_limit : float or None, default=None
        Seconds for the whole fit: the Newton loop stops at the budget with a ConvergenceWarning and
        keeps its last iterate (``converged_ = False``). Progress (iteration, ||F||, s) also goes to
        scikit-learn's callbacks (``set_callbacks``).
    budget : None, int or str, default=None
        The model size the fit may not exceed, as SLMC's and SparseKFD's: an int caps the support
        vectors per binary problem (as an int ``s``, together with it: the smaller holds); a
        latency such as '20us' (units us, ms, s) caps them at the largest number whose prediction,
        measured on this machine at the start of the fit with the fitted kernel and ``n_jobs``,
        costs at most that per sample (k > 2 classes: all k problems' vectors together). The linear
        kernel predicts by w whatever the support: a latency does not cap it. A latency needs the
        rows in memory (not a dask array). The fitted model reports ``prediction_cost_``.

    Attributes
    ----------
    classes_, n_features_in_
    support_ : indices of the samples with alpha_i != 0 in some problem (negative alphas included)
    support_vectors_ : X[support_] (none for 'precomputed')
    dual_coef_ : (n_problems, n_SV) alpha_i y_i; one problem for two classes, one per class (one
        versus rest) otherwise
    intercept_ : (n_problems,)
    coef_ : (n_problems, n_features), linear kernel only: w = Q alpha (72)
    n_iter_, norm_F_, s_ : per problem: Newton iterations (over every level solved), the final
        ||F(z; T)|| of (36), the final sparsity level (at most an int ``s``)
    levels_ : per problem, an array of (s, ACC) for every level of s solved, in order
        (adaptive='accuracy'; one row otherwise: the final level and accuracy)
    n_support_ : (n_problems,) int, the support vectors of each problem (its nonzero alpha_i; at
        most ``s_`` and at most an int ``s``); ``support_`` is their union
    training_accuracy_ : per problem, ACC (68) at the returned point
    intercept_newton_ : per problem, the Newton iteration's b of the returned iterate (differs from
        intercept_ only with refit_intercept)
    history_ : per problem, an array of (||F||, ACC, s) per iterate
    n_kernel_columns_ : kernel columns K(X, x_j) computed (the working sets' new indices; 0 for the
        linear kernel)
    fit_time_ : seconds of the fit
    prediction_cost_ : seconds per sample of ``predict`` measured after the fit on up to 2,048
        training rows (the median of five passes; this machine, ``n_jobs``); in-memory fits only
    round_trips_, round_trip_seconds_ : a fit on a dask array only: the passes that went to the
        workers (n_iter_ + 1 per problem) and the time the client waited in them

    Examples
    --------
    >>> from sparsekernel import NSSVC
    >>> from sparsekernel.datasets import make_nssvm_gaussians
    >>> X, y = make_nssvm_gaussians(10_000, random_state=0)  # the paper's Example 4.1
    >>> X_test, y_test = make_nssvm_gaussians(10_000, random_state=1)
    >>> clf = NSSVC(random_state=0).fit(X, y)  # linear; s grows from s(beta) (Algorithm 2)
    >>> print(f"{clf.score(X_test, y_test):.2f}")  # the Bayes classifier's accuracy is 0.97
    0.97
    >>> len(clf.support_) < 0.05 * len(X)  # fewer than 5 % of the points are support vectors
    True
    """

    _parameter_constraints: dict = {
        "C": [POSITIVE],
        "c": [None, POSITIVE],
        # the cap on the support vectors: a number, or a fraction of the samples
        "s": [StrOptions({"auto"}), NumInterval(Integral, 1, None, closed="left"),
              NumInterval(RealNotInt, 0.0, 1.0, closed="right")],
        "beta": [POSITIVE],
        "adaptive": [StrOptions({"accuracy"}), "boolean"],
        "eta": [None, POSITIVE],
        "tol": [None, POSITIVE],
        "max_iter": [NumInterval(Integral, 1, None, closed="left")],
        "kernel": [StrOptions(set(KERNELS))],
        **KERNEL_PARAM_CONSTRAINTS,
        "refit_intercept": ["boolean"],
        "t0": [StrOptions({"balanced", "stratified"})],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
        "time_limit": TIME_LIMIT_CONSTRAINT,
        "budget": BUDGET_CONSTRAINT,
    }

    def __init__(self, C=0.25, c=None, s="auto", beta=1.0, adaptive="accuracy", eta=None, tol=None, max_iter=1000,
                 kernel="linear", gamma="scale", coef0=0.0, degree=3, refit_intercept=True, t0="balanced",
                 random_state=None, n_jobs=None, verbose=False, time_limit=None, budget=None):
        self.C = C
        self.c = c
        self.s = s
        self.beta = beta
        self.adaptive = adaptive
        self.eta = eta
        self.tol = tol
        self.max_iter = max_iter
        self.kernel = kernel
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.refit_intercept = refit_intercept
        self.t0 = t0
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.time_limit = time_limit
        self.budget = budget

    def _check_params(self):
        """The parameters checked (ConstrainedParamsMixin): (c, the fit's thread count)."""
        threads = super()._check_params()
        return float(self._c()), threads

    def _c(self):
        """c of the Newton method (None: 0.01 C)."""
        return 0.01 * self.C if self.c is None else self.c

    def _check_cross_params(self):
        """The rule over several parameters: c < C."""
        if not self._c() < self.C:
            raise ValueError(f"c must be smaller than C (the Newton method's Hessian needs C > c), got c={self.c!r}, "
                             f"C={self.C!r}")

    def _fit_budget(self, X, n_splits=None):
        """The stated memory budget of a fit on X (sparsekernel._memory.fit_budget): the working set
        of its largest level s, two copies of X and 256 bytes per sample."""
        s = int(np.max(self.s_))
        return Budget(working_set=nssvc_working_bytes(self.kernel, X.shape[0], X.shape[1], s), X=2.0 * x_bytes(X),
                      per_sample=256 * X.shape[0], fixed=FIXED_BYTES)

    def _budget_cap(self, X, n_problems):
        """The cap on the support vectors per problem from ``budget`` (None without one): the number
        itself, or the largest number whose measured prediction pass fits the latency (_budget; the
        linear kernel predicts by w = Q alpha (72) whatever the support, so no latency caps it)."""
        budget = parse_budget(self.budget)
        if budget is None:
            return None
        if budget[0] == "size":
            return budget[1]
        if X is None:  # a dask fit: its rows are on the workers
            raise ValueError("a latency budget is measured by predicting on training rows in memory; for a fit on a "
                             "dask array give budget as a number of support vectors")
        return calibrate_expansion(lambda n_s: self._stand_in(X, n_s, n_problems), X, budget[1])

    def _stand_in(self, X, n_s, n_problems):
        """A copy of this estimator fitted, as far as predict needs, with n_s support vectors per
        problem (rows of X): what a model of that size costs to predict with."""
        model = copy.copy(self)
        support = np.tile(np.arange(n_s), n_problems)
        model.support_ = support.astype(np.int32)
        model.shape_fit_ = X.shape
        model._set_support_vectors(X, model.support_)
        model.dual_coef_ = np.full((n_problems, len(support)), 1.0 / n_s)
        model.intercept_ = np.zeros(n_problems)
        if self.kernel == "linear":
            model.coef_ = np.zeros((n_problems, X.shape[1]))
        return model

    def _levels(self, m, n):
        """(s0, s_max): the initial sparsity level and the cap of its growth. 'auto': the rule's
        level (s(beta) capped at m / 20 for the linear kernel, ceil(m / 10) otherwise), growing up
        to m (Algorithm 2 as published). A number: the user's cap (a float: that fraction of m); the
        growth starts at the rule's level, or at the cap when that is smaller (adaptive=False: the
        fixed level is the cap)."""
        clip = (lambda v: int(min(m, max(1, v))))
        rule = clip(default_level(self.beta, m, n) if self.kernel == "linear" else math.ceil(KERNEL_S_FRACTION * m))
        s = self.s
        if isinstance(s, str):
            return rule, m
        cap = clip(int(s) if isinstance(s, numbers.Integral) else math.ceil(s * m))
        return (min(rule, cap) if self.adaptive else cap), cap

    @with_callbacks
    def fit(self, X, y):
        """Fit on X (dense or CSR, float32 or float64; a kernel matrix for 'precomputed') and y.
        A dask array X (rows in chunks; any kernel but 'precomputed') is fitted where its blocks
        live (``sparsekernel.dask``), with the same iterates as in memory.

        Two classes give one problem (+1 = classes_[1]); more give one-versus-rest problems."""
        if is_dask_array(X):
            return self._fit_dask(X, y)
        t0 = time.perf_counter()
        c, threads = self._check_params()
        X, y = validate_data(self, X, y, accept_sparse=self._accept_sparse(), dtype=[np.float64, np.float32],
                             order="C")
        self._check_precomputed(X, fit=True)
        if sp.issparse(X):
            X = canonical_csr(X)
        self.classes_, y_enc = _encode_labels(y)
        m, n = X.shape
        self._gamma = resolve_gamma(self.gamma, X) if self.kernel not in ("linear", "precomputed") else 0.0
        blocks = InMemoryBlocks(X, y_enc, threads, block_rows=_BLOCK_ROWS, kernel=self._kernel_spec())
        solvers = self._solve(blocks, y_enc, m, n, c, X, y)
        self._store(solvers, lambda support: X[support], X.shape)
        self.fit_time_ = time.perf_counter() - t0
        self.prediction_cost_ = prediction_cost(self, X)
        return self

    def _fit_dask(self, X, y):
        """The fit on a dask array X where its blocks live (a distributed Client must be running: the
        current one): ``_dask_rows.DaskBlocks``, one round trip per Newton iteration, the iterates of
        the in-memory fit bit for bit. gamma='scale' is a blocked reduction, equal to the in-memory
        value up to the order of its sums (a number gives the in-memory fit bit for bit). Sets
        ``round_trips_`` (the passes that waited for the workers) and ``round_trip_seconds_`` (the
        time the client waited in them; the rest of ``fit_time_`` is the setup: validation, class
        codes, blocks, and the Newton steps)."""
        import dask.array as da

        t0 = time.perf_counter()
        c, _ = self._check_params()
        if self.kernel == "precomputed" or callable(self.kernel):
            raise ValueError("NSSVC on a dask array computes its kernel from the rows; kernel='precomputed' (an m x m "
                             "matrix) does not scale out: fit it in memory")
        X, (m, n) = checked_dask_matrix(X)
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: n})
        if not isinstance(y, da.Array):
            y = np.asarray(y).ravel()
            if len(y) != m:
                raise ValueError(f"X and y have different numbers of samples: {m} and {len(y)}")
            y = da.from_array(y, chunks=(X.chunks[0],))
        if y.ndim != 1 or y.shape[0] != m:
            raise ValueError(f"X and y have different numbers of samples: {m} and {y.shape[0]}")
        if m == 0 or n == 0:
            raise ValueError(f"Found array with shape {(m, n)}; NSSVC needs at least one sample and one feature")
        client = dask_client(None, "NSSVC.fit")
        self.classes_, y_enc, code_blocks = class_codes(client, y.rechunk((X.chunks[0],)))
        self.n_features_in_ = n
        blocks = DaskBlocks(client, X, y_enc, code_blocks=code_blocks)
        try:
            if self.kernel == "linear":
                self._gamma = 0.0
            elif self.gamma == "scale":  # as _base.resolve_gamma, by a blocked two-pass reduction
                var = blocks.variance()
                self._gamma = 1.0 / (n * var) if var != 0 else 1.0
            else:
                self._gamma = resolve_gamma(self.gamma, np.zeros((0, n)))
            if self.kernel != "linear":
                blocks.set_kernel(self._kernel_spec())
            binary = len(self.classes_) == 2
            if binary:  # the codes 0/1 become the labels +-1 in place: the client keeps one byte per sample
                blocks.wait()  # (once the workers hold their slices of the codes)
                y_enc *= 2
                y_enc -= 1
            solvers = self._solve(blocks, y_enc, m, n, c, labels_pm1=binary)
            self._store(solvers, lambda support: support_rows(solvers, support).astype(X.dtype), (m, n))
        finally:
            blocks.release()
        self.round_trips_ = blocks.round_trips
        self.round_trip_seconds_ = blocks.seconds
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _doubling(self):
        """Whether the levels double by training accuracy (adaptive='accuracy' with the linear kernel;
        a nonlinear kernel runs Algorithm 2: its m x s kernel columns and s x s systems make levels
        doubled from m / 10 too costly)."""
        return isinstance(self.adaptive, str) and self.kernel == "linear"

    def _solve_levels(self, make_solver, s_max, s_double):
        """adaptive='accuracy': Algorithm 2 as published (up to s_max), then, from the level it
        stopped at, Algorithm 1 (fixed s) at twice the level while the doubling raises the training
        accuracy ACC (68) by at least ACC_GAIN and converges (a level whose iterations cycle is no
        solution), up to s_double: the paper's stop rule (67), "the accuracy does not increase
        significantly", read over levels as well as over iterations. Returns the solver of the
        last level whose doubling paid. Measured (benchmarks/results/sparse.md): Algorithm 2 alone
        stops on a9a at s = 909 (6 % of 15,000 rows) with test accuracy 0.821 against LinearSVC's
        0.850, where Algorithm 1 at s = 1,500 reaches 0.848; on the 1e5 x 10 nonlinear set at 2 %
        with 0.664 against 0.687."""
        best = make_solver(None, s_max).solve()
        iters, levels = best.n_iter, [(best.s, best.acc)]
        while best.s < s_double and best.status in (STATUS_CONVERGED, STATUS_MAX_ITER):
            nxt = make_solver(min(s_double, 2 * best.s), None).solve()
            iters += nxt.n_iter
            levels.append((nxt.s, nxt.acc))
            if nxt.cycled or nxt.acc - best.acc < ACC_GAIN:
                break
            best = nxt
        best.n_iter_levels, best.levels = iters, np.array(levels)
        return best

    def _kernel_spec(self):
        """The KernelSpec of a nonlinear or precomputed kernel; None for the linear one (w = Q alpha)."""
        if self.kernel == "linear":
            return None
        return KernelSpec(self.kernel, self._gamma, self.coef0, self.degree)

    def _solve(self, data, y_enc, m, n, c, X=None, y=None, labels_pm1=False):
        """Algorithm 1/2 for every problem (one, or one per class) on ``data``, the RowBlocks of X
        (in memory or on Dask workers); y_enc the class index of every sample. Returns the solved
        NewtonSolvers (warns if one stopped early) and sets ``n_kernel_columns_``. ``labels_pm1``:
        y_enc already holds the int8 +-1 labels of the one binary problem (a distributed fit's
        client then keeps one byte per sample)."""
        if len(self.classes_) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {len(self.classes_)} class")
        s0, s_max = self._levels(m, n)
        cap = self._budget_cap(X, 1 if len(self.classes_) == 2 else len(self.classes_))
        if cap is not None:  # the budget bounds the level as an int s does
            s0, s_max = min(s0, cap), min(s_max, cap)
        # adaptive='accuracy': how far the levels double (s='auto': at most ACCURACY_MAX_SHARE m)
        s_double = min(s_max, max(s0, math.ceil(ACCURACY_MAX_SHARE * m))) if isinstance(self.s, str) else s_max
        s_mem = s0 if isinstance(self.s, str) and cap is None else s_max  # a user's level: the memory of the cap, checked up front
        require(nssvc_working_bytes(self.kernel, m, n, s_mem), f"NSSVC with s={s_mem} on {m} x {n} data",
                "lower s" + ("" if self.kernel == "linear" else " (the kernel columns of the working set are kept: "
                             "8 m s bytes)"))
        eta = 1.0 / m if self.eta is None else float(self.eta)
        tol = 1e-6 * max(math.sqrt(m), math.sqrt(n)) if self.tol is None else float(self.tol)
        rng = check_random_state(self.random_state)
        targets = [1] if len(self.classes_) == 2 else list(range(len(self.classes_)))
        solvers = []
        monitor = FitMonitor(self, len(targets), tol=tol, X=X, y=y, metric="norm_F")
        spec = self._kernel_spec()
        kernel_Q = None if spec is None else _KernelQ(data, spec, n_threads(self.n_jobs))
        for i, k in enumerate(targets):
            yk = y_enc if labels_pm1 else labels_of(y_enc, k)
            data.set_target(k)
            if kernel_Q is None:
                Q = _LinearQ(data, yk)
            else:  # the kernel columns are shared by the one-vs-rest problems (the labels are not)
                kernel_Q.y = yk
                Q = kernel_Q
            doubling = self._doubling()
            progress = monitor.problem_if_needed(i)

            def make_solver(level, grow_to, Q=Q, yk=yk, progress=progress):
                """Algorithm 2 from s0 up to grow_to (level None), or Algorithm 1 at ``level``."""
                return NewtonSolver(Q, yk, s=s0 if level is None else level, C=float(self.C), c=c, eta=eta,
                                    tol=tol, max_iter=int(self.max_iter), adaptive=level is None and bool(self.adaptive),
                                    rng=rng, refit_intercept=bool(self.refit_intercept), t0=self.t0,
                                    progress=progress, s_max=grow_to if level is None else level)

            # the algebra on T is small: a threaded BLAS only competes with the OpenMP passes (measured:
            # a 300 x 300 Cholesky after a pass took 0.3 s instead of 0.4 ms on 2 cores)
            with one_thread("blas"):
                solver = (self._solve_levels(make_solver, s_max, s_double) if doubling
                          else make_solver(None, s_max).solve())
            solvers.append(solver)
            # the rows of its support, while they are at hand (the kernel Q-provider serves the next problem)
            solver.X_S = Q.rows(solver.S) if len(solver.S) else None
        monitor.close()
        self.n_kernel_columns_ = 0 if kernel_Q is None else kernel_Q.n_computed
        cycled = sorted({sv.s for sv in solvers if sv.cycled})
        if cycled:
            message = (f"NSSVC did not converge: at s={', '.join(map(str, cycled))} the Newton iterations cycle (the "
                       "working set comes back to an earlier one, so the residual of the stationary equations never "
                       "falls below tol); the model is the iterate of best training accuracy. A larger s, "
                       "standardised features or a smaller eta may converge.")
        else:
            message = (f"NSSVC stopped at max_iter={self.max_iter} before converging (the residual of the "
                       "stationary equations below tol and, with adaptive=True, no further gain in training "
                       "accuracy); raise max_iter or tol, and on features of large or unequal scales standardise "
                       "them or lower eta (the working set then jumps from one iteration to the next).")
        warn_if_stopped_early(self, [sv.status for sv in solvers], message)
        return solvers

    def _store(self, solvers, rows, shape):
        """The fitted attributes from the solved problems; ``rows(support)`` gives the support
        vectors (from X, or from the row blocks of a distributed fit)."""
        n_prob = len(solvers)
        support = np.unique(np.concatenate([sv.S for sv in solvers])).astype(np.int64)
        coef = np.zeros((n_prob, len(support)))
        for k, sv in enumerate(solvers):
            pos = np.searchsorted(support, sv.S)
            coef[k, pos] = sv.a_S * sv.y[sv.S]
        self.support_ = support.astype(np.int32) if len(support) and support[-1] < 2**31 else support
        self.dual_coef_ = coef
        self.intercept_ = np.array([sv.b for sv in solvers])
        self.intercept_newton_ = np.array([sv.intercept_newton for sv in solvers])
        self.n_iter_ = np.array([getattr(sv, "n_iter_levels", sv.n_iter) for sv in solvers], dtype=np.int64)
        self.levels_ = [getattr(sv, "levels", np.array([(sv.s, sv.acc)])) for sv in solvers]
        self.norm_F_ = np.array([sv.norm_F for sv in solvers])
        self.s_ = np.array([sv.s for sv in solvers], dtype=np.int64)
        self.n_support_ = np.array([len(sv.S) for sv in solvers], dtype=np.int64)
        self.training_accuracy_ = np.array([sv.acc for sv in solvers])
        self.history_ = [sv.history for sv in solvers]
        self.converged_ = all(sv.converged for sv in solvers)
        self.shape_fit_ = shape
        self._set_support_vectors(_RowsOf(rows, shape), self.support_)
        if self.kernel == "linear":
            SV = self.support_vectors_.astype(np.float64)  # a float64 product whatever X's dtype
            self.coef_ = np.asarray((SV.T @ coef.T).T, dtype=np.float64)  # w = Q alpha (72)

    def _expansion(self):
        """The fitted model as one kernel expansion (``_base.Expansion``); the linear kernel's is w = Q
        alpha (72) itself: dec = <x, w> + b."""
        if self.kernel == "linear":
            return Expansion("linear", 0.0, 0.0, 0, self.coef_, None, self.intercept_)
        return Expansion(self.kernel, self._gamma, self.coef0, self.degree, self.support_vectors_, self.dual_coef_,
                         self.intercept_)

    def decision_function(self, X):
        """f(x) = sum_i alpha_i y_i K(x_i, x) + b: shape (n,) for two classes (> 0 means
        classes_[1]), (n, n_classes) one-versus-rest scores otherwise."""
        check_is_fitted(self)
        if self.kernel == "linear":
            X = self._validate_X(X)
            dec = np.asarray(X @ self.coef_.T, dtype=np.float64) + self.intercept_
        else:
            dec = self._decision_values(X, self.dual_coef_, self.intercept_)
        return dec[:, 0] if len(self.classes_) == 2 else dec

    def predict(self, X):
        """sgn(f(x)) (68) for two classes (0 goes to classes_[0]); the largest one-versus-rest score
        otherwise."""
        dec = self.decision_function(X)
        if len(self.classes_) == 2:
            return self.classes_[(dec > 0).astype(np.intp)]
        return self.classes_[np.argmax(dec, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


def _encode_labels(y):
    """classes_ and y encoded as their indices. Two numeric classes, the case at 1e7-1e8 samples,
    take O(m) passes (np.unique sorts: about 1 s at 1e7); anything else goes through scikit-learn's
    checks and np.unique."""
    y = np.asarray(y)
    if y.ndim == 1 and y.size and y.dtype.kind in "biuf":
        lo, hi = y.min(), y.max()
        if lo != hi and (y.dtype.kind != "f" or (float(lo).is_integer() and float(hi).is_integer())):
            upper = y == hi
            if np.count_nonzero(upper) + np.count_nonzero(y == lo) == y.size:
                return np.array([lo, hi], dtype=y.dtype), upper  # bool: == 1 is classes_[1]
    check_classification_targets(y)
    return np.unique(y, return_inverse=True)
