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

import numpy as np
import scipy.sparse as sp


def data_fingerprint(X, y, sample_weight=None):
    """A digest of the training data (values, structure and labels), keying warm-start states."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((X.shape, str(X.dtype), sp.issparse(X))).encode())
    if sp.issparse(X):
        for a in (X.data, X.indices, X.indptr):
            h.update(np.ascontiguousarray(a).tobytes())
    else:
        h.update(np.ascontiguousarray(X).tobytes())
    h.update(np.ascontiguousarray(y).tobytes())
    if sample_weight is not None:
        h.update(np.ascontiguousarray(sample_weight, dtype=np.float64).tobytes())
    return h.hexdigest()


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


class PathStore:
    """Warm-start states and engine sessions shared by the fits of a path or a path search.

    Thread-safe: a session is handed to one fit at a time (taken, then given back)."""

    def __init__(self, deadline=None):
        self._lock = threading.Lock()
        self.deadline = deadline  # time.perf_counter() at which the fits of the path stop (a search's budget)
        self._states = {}
        self._sessions = {}  # problem key -> (kernel_key, session): the kernel being walked only

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

    def clear(self):
        with self._lock:
            self._states.clear()
            self._sessions.clear()


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
