"""Warm starts: the next fit on the same data starts from the previous dual solution.

A fit leaves, per binary problem, its dual solution a, its gradient G = Qa + p, its upper bounds
hi = C_i and its linear term p. The next problem on the same data (another C, epsilon or kernel
parameter) starts from

    a0 = s a,  0 <= s <= min_{a_i > 0} hi_new_i / hi_i,

which is feasible: it keeps y'a0 = 0 and 0 <= a0 <= hi_new (projecting a into the new box would break
the equality constraint); s is the best point of that ray (warm_point). When the kernel is unchanged,
Q is too, so the gradient needs no kernel evaluation: G0 = s (G - p) + p_new. Otherwise the engine
recomputes it from a0.

Inside :func:`path_context` (used by ``svm_path`` and ``PathSearchCV``) fits also share a
:class:`PathStore`: the states of every data set seen (one per CV fold) and, per data set, the engine
session of the kernel being walked, whose row cache carries over from one C to the next.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp


def rows_digest(X):
    """A digest of the points of X (values and sparsity structure), the index dtypes of CSR
    normalised: the rows of a search's training set are recognised in every fold's copy."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((X.shape, str(X.dtype), sp.issparse(X))).encode())
    if sp.issparse(X):
        h.update(np.ascontiguousarray(X.data).tobytes())
        h.update(np.ascontiguousarray(X.indices, dtype=np.int32).tobytes())
        h.update(np.ascontiguousarray(X.indptr, dtype=np.int64).tobytes())
    else:
        h.update(np.ascontiguousarray(X).tobytes())
    return h.hexdigest()


class DataKey(NamedTuple):
    """Keys of a fit's training data: ``rows`` (X alone: which rows of a search's training set)
    and ``full`` (X, labels and weights: which warm-start states apply)."""

    rows: str
    full: str


def data_fingerprint(X, y, sample_weight=None):
    """The DataKey of a fit's training data."""
    rows = rows_digest(X)
    h = hashlib.blake2b(digest_size=16)
    h.update(rows.encode())
    h.update(np.ascontiguousarray(y).tobytes())
    if sample_weight is not None:
        h.update(np.ascontiguousarray(sample_weight, dtype=np.float64).tobytes())
    return DataKey(rows, h.hexdigest())


@dataclass
class DualState:
    """The end point of one binary dual problem."""

    alpha: np.ndarray
    grad: np.ndarray
    hi: np.ndarray
    p: np.ndarray
    kernel_key: tuple


def warm_point(state, hi, p, kernel_key, entropic=False):
    """(a0, G0) for a new problem with bounds hi and linear term p; G0 is None when the kernel changed.

    ``entropic``: the (S-)KLR dual, whose gradient G = Qa + C_i G'(a_i / C_i) + p is not linear in a,
    so the ray below does not apply; with the same box (hi, and the lower bound with it: a walk along
    S-KLR's lam at fixed C) the previous a is feasible as it stands and, with the kernel unchanged,
    G0 = G - p_old + p. Another box gives (None, None): a cold start.

    a0 = s a on the feasible ray s in [0, s_max], s_max = min_{a_i > 0} hi_i / hi_old_i. With the
    kernel unchanged, Qa = G - p_old is known and f(s a) = 1/2 s^2 a'Qa + s p'a is minimised over the
    ray in O(N): when C shrinks this gives s = C_new / C_old (s_max), and when C grows a value between
    1 (the previous point kept, optimal on the old ray) and C_new / C_old (bounded variables moved to
    the new bound). After a kernel change s = min(1, s_max).
    """
    if state is None or len(state.alpha) != len(hi):
        return None, None
    a = state.alpha
    if entropic:
        if not np.array_equal(hi, state.hi):
            return None, None
        return a.copy(), (state.grad - state.p + p if kernel_key == state.kernel_key else None)
    support = a > 0
    if not support.any():
        return a.copy(), None if kernel_key != state.kernel_key else state.grad - state.p + p
    s_max = float(np.min(hi[support] / state.hi[support]))
    same_kernel = kernel_key == state.kernel_key
    if same_kernel:
        Qa = state.grad - state.p
        A, B = float(a @ Qa), float(p @ a)
        s = min(max(-B / A, 0.0), s_max) if A > 0 else s_max
    else:
        s = min(1.0, s_max)
    a0 = np.minimum(s * a, hi)  # s a <= s_max hi_old <= hi; the minimum only absorbs round-off
    if not same_kernel:
        return a0, None
    return a0, s * Qa + p


@dataclass
class RowSource:
    """Where a fit on a search's fold reads its kernel rows: the search's SharedRows of its kernel,
    the fold's rows in it (``index``), and the budget of each of the fit's own caches (MB)."""

    rows: object
    index: np.ndarray
    local_mb: float


#: Share of a search's cache budget given to the rows shared by all its fits (the rest is split
#: between the fits' own caches of gathered rows). Measured in benchmarks/bench_path.py.
SHARED_FRACTION = 0.5


class PathStore:
    """Warm-start states, engine sessions and shared kernel rows for the fits of a path or a path
    search.

    Thread-safe: a session is handed to one fit at a time (taken, then given back); the shared rows
    are read by every fit at once."""

    def __init__(self, deadline=None):
        self._lock = threading.Lock()
        self.deadline = deadline  # time.perf_counter() at which the fits of the path stop (a search's budget)
        self._states = {}
        self._sessions = {}  # problem key -> (kernel_key, session): the kernel being walked only
        self._whole = None  # the search's training set, as the engine reads it
        self._folds = {}  # rows digest of a fold's training points -> their rows in the whole set
        self._budget_mb = 0.0
        self._n_folds = 1
        self._shared = None  # (kernel_key, SharedRows): the kernel being walked only
        self.kernel_evals = 0  # computed by the SharedRows of kernels no longer walked
        self.peak_bytes = 0  # the largest of theirs
        self.prefitted = {}  # prefit_key -> fitted state: a search's fits made on a cluster's workers

    def state(self, key):
        with self._lock:
            return self._states.get(key)

    def put_state(self, key, state):
        with self._lock:
            self._states[key] = state

    def take_session(self, key, kernel_key):
        with self._lock:
            entry = self._sessions.get(key)
            if entry is not None and entry[0] == kernel_key:
                del self._sessions[key]
                return entry[1]
            return None

    def put_session(self, key, kernel_key, session):
        with self._lock:
            # one session per problem: a new kernel replaces (and frees) the previous one's cache
            self._sessions[key] = (kernel_key, session)

    def share_rows(self, X, folds, cache_mb):
        """Let the fits on ``X[fold]`` (``folds``: index arrays) read their kernel rows from one
        SharedRows over X per kernel setting, within ``cache_mb`` MB for all of them together."""
        from ._base import core_matrix

        with self._lock:
            self._whole = core_matrix(X)
            self._budget_mb = float(cache_mb)
            self._n_folds = max(1, len(folds))
            for fold in folds:
                fold = np.asarray(fold, dtype=np.int64)
                self._folds[rows_digest(X[fold])] = fold.astype(np.int32)

    def row_source(self, rows_key, kernel_key, n_problems):
        """The RowSource of a fit whose training points have digest ``rows_key``, or None (not a
        registered fold, or a precomputed kernel)."""
        from . import _core
        from ._base import KERNELS

        with self._lock:
            index = self._folds.get(rows_key)
            if index is None or kernel_key[0] not in KERNELS or kernel_key[0] == "precomputed":
                return None
            if self._shared is None or self._shared[0] != kernel_key:
                if self._shared is not None:
                    self.kernel_evals += self._shared[1].kernel_evals
                    self.peak_bytes = max(self.peak_bytes, self._shared[1].peak_bytes)
                name, gamma, coef0, degree = kernel_key
                rows = _core.SharedRows(self._whole, KERNELS[name], float(gamma), float(coef0), int(degree),
                                        self._shared_mb())
                self._shared = (kernel_key, rows)
                # the previous kernel's sessions hold gathered rows of a kernel no longer walked
                self._sessions = {k: v for k, v in self._sessions.items() if v[0] == kernel_key}
            local = (self._budget_mb - self._shared_mb()) / (self._n_folds * max(1, n_problems))
            return RowSource(self._shared[1], index, local)

    def _shared_mb(self):
        # SHARED_FRACTION of the budget, or less when every row fits in less (N^2 float32 values)
        n = self._whole.shape[0]
        return min(SHARED_FRACTION * self._budget_mb, (n * n * 4 + 2**20) / 2**20)

    def shared_stats(self):
        """(kernel values computed, largest resident bytes) of the search's shared rows so far."""
        with self._lock:
            current = self._shared[1] if self._shared is not None else None
            evals = self.kernel_evals + (current.kernel_evals if current is not None else 0)
            peak = max(self.peak_bytes, current.peak_bytes if current is not None else 0)
            return evals, peak

    def finish_folds(self):
        """The folds are done (a search's refit follows): free their sessions and shared rows, and
        return ``shared_stats()``."""
        stats = self.shared_stats()
        self.clear()
        return stats

    def clear(self):
        """Free every state, session and shared row store."""
        with self._lock:
            self._states.clear()
            self._sessions.clear()
            self._folds.clear()
            self._shared = None
            self._whole = None
            self.prefitted = {}


_active = []
_active_lock = threading.Lock()


@contextlib.contextmanager
def path_context(store):
    """Make ``store`` the one every SVC / SVR fit in this process uses until the block ends."""
    with _active_lock:
        _active.append(store)
    try:
        yield store
    finally:
        with _active_lock:
            _active.remove(store)


def active_store():
    with _active_lock:
        return _active[-1] if _active else None


def prefit_key(model, X, y, sample_weight=None):
    """Which fit this is, wherever it runs: the estimator's class and parameters and its training
    data as the search hands it over (X dense or CSR)."""
    params = tuple(sorted((k, repr(v)) for k, v in model.get_params(deep=False).items()))
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((type(model).__name__, params)).encode())
    h.update(data_fingerprint(X, np.asarray(y), sample_weight).full.encode())
    return h.hexdigest()


def restore_prefitted(model, X, y, sample_weight=None):
    """Load into ``model`` the result of this very fit when a search made it on a cluster's worker
    (``PathSearchCV`` with joblib's dask backend); True if it did. Costs nothing outside such a
    search."""
    store = active_store()
    if store is None or not store.prefitted or not (sp.issparse(X) or isinstance(X, np.ndarray)):
        return False
    state = store.prefitted.get(prefit_key(model, X, y, sample_weight))
    if state is None:
        return False
    model.__setstate__(dict(state))
    return True
