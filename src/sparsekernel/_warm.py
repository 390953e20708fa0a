"""Warm starts: the next fit on the same data starts from the previous dual solution.

A fit leaves, per binary problem, its dual solution a, its gradient G = Qa + p, its upper bounds
hi = C_i and its linear term p. The next problem on the same data (another C, epsilon or kernel
parameter) starts from

    a0 = s a,  0 <= s <= min_{a_i > 0} hi_new_i / hi_i,

which is feasible: it keeps y'a0 = 0 and 0 <= a0 <= hi_new (projecting a into the new box would break
the equality constraint); s is the best point of that ray (warm_point). When the kernel is unchanged,
Q is too, so the gradient needs no kernel evaluation: G0 = s (G - p) + p_new. Otherwise the engine
recomputes it from a0.

The fits of a path or a search (``svm_path``, ``sklr_path``, ``PathSearchCV``) share a
:class:`PathStore`, handed to each fit explicitly (:class:`SearchRows`): the states of every data set
seen (one per CV fold) and, per data set, the engine session of the kernel being walked, whose row
cache carries over from one C to the next.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import joblib

from ._base import core_matrix, release_at_exit
from ._engine import shared_rows


def data_fingerprint(X, y, sample_weight=None):
    """A digest of a fit's training data (X's values and sparsity structure, the index dtypes of CSR
    normalised; labels; weights): which warm-start states and engine sessions apply to it.
    SHA-256 (hardware-accelerated on current x86 CPUs): 12 ms against blake2b's 24 ms for a fold
    of 8000 x 300 float64 here, a fit's whole preparation in a Pipeline's search."""
    h = hashlib.sha256()
    h.update(repr((X.shape, str(X.dtype), sp.issparse(X))).encode())
    if sp.issparse(X):
        h.update(np.ascontiguousarray(X.data).tobytes())
        h.update(np.ascontiguousarray(X.indices, dtype=np.int32).tobytes())
        h.update(np.ascontiguousarray(X.indptr, dtype=np.int64).tobytes())
    else:
        h.update(np.ascontiguousarray(X).tobytes())
    h.update(np.ascontiguousarray(y).tobytes())
    if sample_weight is not None:
        h.update(np.ascontiguousarray(sample_weight, dtype=np.float64).tobytes())
    return h.hexdigest()


class SearchRows(np.ndarray):
    """How a search hands its state to its own fits: the fit parameter ``search_rows``.

    An integer array, the fit's rows in the search's training set, that carries the search's
    :class:`PathStore` (``store``) and whether the fit reads the search's X as it is (``raw``;
    False for the last step of a Pipeline, which sees transformed data). The search passes
    ``arange(n_samples)`` and scikit-learn's search slices it per fold like any other fit parameter
    of n_samples entries (``_check_method_params``), so every fold's fit gets its own rows without
    hashing its data, and a fit that is not the search's gets nothing."""

    def __new__(cls, store, n_samples, raw=True):
        obj = np.arange(n_samples, dtype=np.int64).view(cls)
        obj.store, obj.raw = store, raw
        return obj

    def __array_finalize__(self, obj):
        self.store = getattr(obj, "store", None)
        self.raw = getattr(obj, "raw", True)

    def __reduce__(self):  # pickled (a process pool, a cluster): plain rows, no search
        return np.asarray(self).__reduce__()


@dataclass
class DualState:
    """The end point of one binary dual problem."""

    alpha: np.ndarray
    grad: np.ndarray
    hi: np.ndarray
    p: np.ndarray
    kernel: object  # the KernelSpec it was solved with
    n_iter: int = 0  # the steps the solve took


def warm_point(state, hi, p, kernel, entropic=False):
    """(a0, G0) for a new problem with bounds hi and linear term p; G0 is None when the kernel changed.

    ``entropic``: the (S-)KLR dual, whose gradient G = Qa + C_i G'(a_i / C_i) + p is not linear in a,
    so the ray below does not apply; with the same box (hi, and the lower bound with it: a walk along
    S-KLR's lam at fixed C) the previous a is feasible as it stands and, with the kernel unchanged,
    G0 = G - p_old + p. Another box (a walk along C): a cold start (None, None). The previous
    model's decision values f would give the point a_i = C_i sigma(lam - y_i f_i) made feasible
    (``klr.dual_start``), but SMO needs more steps from there than from the cold start (klr's
    ``initial_point``): over 5 folds and C = 0.1 .. 1000 (6 values), 491k against 311k steps on
    digits, 10.2k against 9.1k on breast_cancer, and the warm point's gradient costs a pass over the
    kernel rows.

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
        if np.array_equal(hi, state.hi):
            return a.copy(), (state.grad - state.p + p if kernel == state.kernel else None)
        return None, None
    support = a > 0
    if not support.any():
        return a.copy(), None if kernel != state.kernel else state.grad - state.p + p
    s_max = float(np.min(hi[support] / state.hi[support]))
    same_kernel = kernel == state.kernel
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
    """Where a fit on a search's fold reads its kernel rows: the search's SharedRows of its kernel and
    the fold's rows in it (``index``)."""

    rows: object
    index: np.ndarray


class PathStore:
    """Warm-start states, engine sessions and shared kernel rows for the fits of a path or a path
    search, handed to them explicitly (:class:`SearchRows`), and the estimator's own last solution
    when ``warm_start=True``.

    Thread-safe: a session is handed to one fit at a time (taken, then given back); the shared rows
    are read by every fit at once. ``open`` turns False when the search's cross-validated fits are
    done: its refit, which receives the same fit parameters, is then a plain fit."""

    def __init__(self, deadline=None):
        self._lock = threading.Lock()
        self.deadline = deadline  # time.perf_counter() at which the fits of the path stop (a search's budget)
        self.open = True
        self.fit_threads = None  # threads of each of the search's fits (None: the estimator's n_jobs)
        self.data_key = None  # the estimator's own store: the data its states are for
        self._states = {}
        self._sessions = {}  # problem key -> (kernel, session): the kernel being walked only
        self._whole = None  # the search's training set, as the engine reads it
        self._points = None  # the search's training set, as a fit validates it
        self._shared_mb = 0.0
        self._shared = None  # (kernel, SharedRows): the kernel being walked only
        self._fold_mb = 0.0  # a Pipeline's search: each fold's own shared rows (MB), over its transformed X
        self._fold_max = 0  # how many folds' rows are kept at once
        self._fold_shared = {}  # data key -> (kernel, SharedRows), oldest first
        self.kernel_evals = 0  # computed by the SharedRows of kernels no longer walked
        self.peak_bytes = 0  # the largest of theirs
        self.prefitted = {}  # prefit_key -> fitted state: a search's fits made on a cluster's workers
        self._steps_max = 0  # a Pipeline's search: how many fitted earlier steps are kept (FoldSteps)
        self._steps = {}  # step key -> (Xt read-only, fitted transformer), oldest first
        self._owned = {}  # id(Xt) -> (Xt, its fingerprint, {derived name: value}): arrays the store made

    def state(self, key):
        with self._lock:
            return self._states.get(key)

    def put_state(self, key, state):
        with self._lock:
            self._states[key] = state

    def take_session(self, key, kernel):
        with self._lock:
            entry = self._sessions.get(key)
            if entry is not None and entry[0] == kernel:
                del self._sessions[key]
                return entry[1]
            return None

    def put_session(self, key, kernel, session):
        with self._lock:
            # one session per problem: a new kernel replaces (and frees) the previous one's cache
            self._sessions[key] = (kernel, session)

    def keep_only(self, data_key):
        """The estimator's own store (warm_start=True) keeps the last data's states only."""
        with self._lock:
            if self.data_key != data_key:
                self._states.clear()
                self._sessions.clear()
                self.data_key = data_key

    def share_rows(self, X, shared_mb, points=None):
        """Let the fits on rows of X (the search's training set, as the engine reads it) read their
        kernel rows from one SharedRows over X per kernel setting, of ``shared_mb`` MB. ``points``:
        the training set as a fit validates it (what :meth:`rows_of` compares a fit's held-out
        points with)."""
        with self._lock:
            self._whole = core_matrix(X)
            self._shared_mb = float(shared_mb)
            self._points = points

    def rows_of(self, X, train_rows):
        """The rows of the search's training set that X is, when X is the held-out rows of the fold
        trained on ``train_rows`` (the others, in order) or its training rows themselves, compared
        value by value; else None."""
        S = self._points
        if S is None or X.shape[1:] != S.shape[1:] or sp.issparse(X) != sp.issparse(S):
            return None
        held_out = np.ones(S.shape[0], dtype=bool)
        held_out[train_rows] = False
        for rows in (np.flatnonzero(held_out), np.asarray(train_rows)):
            if len(rows) != X.shape[0]:
                continue
            part = S[rows]
            if sp.issparse(X):
                same = all(np.array_equal(getattr(X, a), getattr(part, a)) for a in ("indptr", "indices", "data"))
            else:
                same = np.array_equal(X, part)
            if same:
                return rows.astype(np.int32)
        return None

    def shared_rows_of(self, kernel):
        """The search's SharedRows of ``kernel`` while the fits walk it, else None."""
        with self._lock:
            entry = self._shared
            return entry[1] if entry is not None and entry[0] == kernel and self.open else None

    def share_fold_rows(self, mb_per_fold, max_folds):
        """Let the fits on the same data (a fold of a Pipeline's search: the last step sees the fold's
        transformed X, which only its own fits share) read their kernel rows from one SharedRows over
        that data per kernel setting, of ``mb_per_fold`` MB, for at most ``max_folds`` data sets at
        once (the oldest is freed first)."""
        with self._lock:
            self._fold_mb, self._fold_max = float(mb_per_fold), int(max_folds)

    def keep_fold_steps(self, max_entries):
        """Let a Pipeline's search keep its earlier steps fitted on each fold (:class:`FoldSteps`):
        at most ``max_entries`` (the oldest is freed first)."""
        with self._lock:
            self._steps_max = int(max_entries)

    def fold_step(self, key, fit_transform):
        """(Xt, fitted transformer) of the earlier Pipeline step named ``key`` (its fold and its and
        the previous steps' parameters): kept from an earlier fit of the search, else
        ``fit_transform()``, kept when its Xt is a numpy array. A kept Xt is a read-only view (a
        later step that transforms in place copies it, as scikit-learn's transformers copy a
        read-only input) owned by the store: its fit's fingerprint and engine storage are computed
        once (:meth:`fingerprint`, :meth:`derived`)."""
        with self._lock:
            entry = self._steps.get(key)
            if entry is not None or self._steps_max <= 0:
                return entry if entry is not None else fit_transform()
        Xt, fitted = fit_transform()
        if type(Xt) is not np.ndarray:  # sparse, a DataFrame: handed over as made, not kept
            return Xt, fitted
        Xt = Xt.view()
        Xt.flags.writeable = False
        with self._lock:
            if key in self._steps:  # another thread fitted the same step meanwhile
                return self._steps[key]
            self._steps[key] = (Xt, fitted)
            self._owned[id(Xt)] = (Xt, hashlib.sha256(key.encode()).hexdigest(), {})
            while len(self._steps) > self._steps_max:
                old = self._steps.pop(next(iter(self._steps)))
                self._owned.pop(id(old[0]), None)
            return Xt, fitted

    def _owned_entry(self, X):
        entry = self._owned.get(id(X))
        return entry if entry is not None and entry[0] is X else None

    def fingerprint(self, X, y, sample_weight=None):
        """``data_fingerprint(X, y, sample_weight)``; for an X the store made (a Pipeline's fold,
        read-only) without a pass over X: its key names it."""
        with self._lock:
            entry = self._owned_entry(X)
        if entry is None:
            return data_fingerprint(X, y, sample_weight)
        h = hashlib.sha256(entry[1].encode())
        h.update(np.ascontiguousarray(y).tobytes())
        if sample_weight is not None:
            h.update(np.ascontiguousarray(sample_weight, dtype=np.float64).tobytes())
        return h.hexdigest()

    def derived(self, X, name, make):
        """``make()``, computed once per X the store made (e.g. the engine's storage of a Pipeline's
        fold, the same for every fit of the fold), else every time."""
        with self._lock:
            entry = self._owned_entry(X)
            if entry is not None and name in entry[2]:
                return entry[2][name]
        value = make()
        if entry is not None:
            with self._lock:
                entry[2].setdefault(name, value)
        return value

    def row_source(self, kernel, rows=None, data_key=None, X=None):
        """The RowSource of a fit: on rows ``rows`` of the search's training set (the search's
        shared rows), else on its own data X named ``data_key`` (its fold's shared rows, when the
        store keeps them); None without shared rows, or for a precomputed kernel."""
        with self._lock:
            if kernel.name == "precomputed":
                return None
            if rows is not None and self._whole is not None:
                if self._shared is None or self._shared[0] != kernel:
                    self._retire(self._shared)
                    self._shared = (kernel, shared_rows(self._whole, kernel, self._shared_mb))
                    # the previous kernel's sessions hold gathered rows of a kernel no longer walked
                    self._sessions = {k: v for k, v in self._sessions.items() if v[0] == kernel}
                return RowSource(self._shared[1], np.asarray(rows, dtype=np.int32))
            if X is None or data_key is None or self._fold_max <= 0:
                return None
            entry = self._fold_shared.pop(data_key, None)
            if entry is None or entry[0] != kernel:
                self._retire(entry)
                entry = (kernel, shared_rows(X, kernel, self._fold_mb))
            self._fold_shared[data_key] = entry  # the newest last
            while len(self._fold_shared) > self._fold_max:
                self._retire(self._fold_shared.pop(next(iter(self._fold_shared))))
            return RowSource(entry[1], np.arange(X.shape[0], dtype=np.int32))

    def _retire(self, entry):
        """Count a (kernel, SharedRows) that is being freed."""
        if entry is not None:
            self.kernel_evals += entry[1].kernel_evals
            self.peak_bytes = max(self.peak_bytes, entry[1].peak_bytes)

    def shared_stats(self):
        """(kernel values computed, largest resident bytes of one store) of the search's shared rows so far."""
        with self._lock:
            live = [e[1] for e in ([self._shared] if self._shared is not None else []) + list(self._fold_shared.values())]
            evals = self.kernel_evals + sum(r.kernel_evals for r in live)
            peak = max([self.peak_bytes] + [r.peak_bytes for r in live])
            return evals, peak

    def finish_folds(self):
        """The folds are done (a search's refit follows, a plain fit): close the store, free its
        sessions and shared rows, and return ``shared_stats()``."""
        stats = self.shared_stats()
        self.clear()
        self.open = False
        self.deadline = None
        return stats

    def _release_core(self):
        """Free the engine sessions (their row caches, the objects of the C++ core this store keeps
        between fits); the warm-start states stay. Called at interpreter exit (``release_at_exit``)."""
        with self._lock:
            self._sessions.clear()

    def clear(self):
        """Free every state, session and shared row store."""
        with self._lock:
            self._states.clear()
            self._sessions.clear()
            self._shared = None
            self._whole = None
            self._points = None
            self._fold_shared = {}
            self.prefitted = {}
            self._steps = {}
            self._owned = {}


def own_store():
    """A new PathStore for an estimator's own warm starts (``warm_start=True``). It keeps its engine
    sessions (C++ row caches, with their views of X) with the estimator between fits, as warm_start
    promises, until the interpreter exits (``_base.release_at_exit``)."""
    store = PathStore()
    release_at_exit(store)
    return store


class FoldSteps:
    """A Pipeline's ``memory`` in a search (``PathSearchCV``): the earlier steps are fitted once per
    fold (and per setting of their parameters), not once per candidate.

    scikit-learn's Pipeline fits its earlier steps through ``memory.cache(...)``; this memory keys
    each step by its fold, named by the fit parameter ``search_rows`` the search routes to the first
    earlier step (its rows in the search's training set: no pass over X), and by the step's and the
    previous steps' parameters and fit parameters (``joblib.hash``, as joblib.Memory). The kept
    results live in the search's :class:`PathStore` until its folds are done; the search's refit,
    and any fit outside the search, fit every step as the Pipeline would without memory. As with
    joblib.Memory, a step with random behaviour (no random_state) is fitted once per fold."""

    location = None  # the Pipeline fits the step objects it holds (fresh clones in a search)

    def __init__(self, store):
        self.store = store

    def __deepcopy__(self, memo):  # clone() copies an estimator's parameters: the search's memory stays one
        return self

    def __reduce__(self):  # pickled (a process pool): a Pipeline without memory
        return (type(None), ())

    def cache(self, func, ignore=None, **kwargs):
        """``func`` (the Pipeline's ``_fit_transform_one``) for one Pipeline fit, the steps taken in
        order: its results kept per fold when the fit is the search's."""
        chain = []  # the key of the previous step of this fit

        def fit_transform_one(transformer, X, y, *args, params=None, **kw):
            rows = None
            if params:
                params, rows = _without_search_rows(params)
            store = self.store if self.store.open else None
            if store is None or (rows is None and not chain):
                return func(transformer, X, y, *args, params=params, **kw)
            previous = chain[-1] if chain else hashlib.sha256(np.asarray(rows, dtype=np.int64).tobytes()).hexdigest()
            key = hashlib.sha256((previous + joblib.hash((transformer, params))).encode()).hexdigest()
            chain.append(key)
            return store.fold_step(key, lambda: func(transformer, X, y, *args, params=params, **kw))

        return fit_transform_one


def _without_search_rows(params):
    """A Pipeline step's routed parameters ({method: {name: value}}) without ``search_rows``, and its
    value (None if absent)."""
    rows = None
    out = type(params)()
    for method, values in params.items():
        if isinstance(values, dict) and "search_rows" in values:
            values = dict(values)
            rows = values.pop("search_rows")
        out[method] = values
    return out, rows


class HeldOutScoring:
    """How a fit of a search on rows of the search's training set (a bare estimator) computes its
    decision values on its fold's held-out rows (the search's scoring) or on its training rows
    (``return_train_score``): from the search's kept kernel rows of its support vectors
    (``SharedRows.expansion``), which already hold K(sv, x) for every point of the training set,
    instead of computing them again. The points are compared value by value with those rows
    (``PathStore.rows_of``); anything else, or after the search's folds, is predicted as usual.
    The values are read from float32 rows (as the fit's solver read them)."""

    def __init__(self, store, kernel, train_rows, threads):
        self._store = weakref.ref(store)
        self.kernel = kernel
        self.train_rows = np.asarray(train_rows)
        self.threads = max(1, int(threads))

    def decision(self, X, support, coef, intercept):
        """intercept + K(X, support vectors) @ coef.T as in ``KernelModelMixin._decision_values``,
        or None when X is not one of the fold's own sets of rows."""
        store = self._store()
        shared = store.shared_rows_of(self.kernel) if store is not None else None
        if shared is None:
            return None
        rows = store.rows_of(X, self.train_rows)
        if rows is None:
            return None
        sv_rows = np.ascontiguousarray(self.train_rows[support], dtype=np.int32)
        out = shared.expansion(sv_rows, rows, np.ascontiguousarray(coef, dtype=np.float64), self.threads)
        return out + intercept


def search_store(search_rows):
    """The open store a fit's ``search_rows`` carries, or None (a plain fit)."""
    store = getattr(search_rows, "store", None)
    return store if store is not None and store.open else None


def prefit_key(model, X, y, sample_weight=None):
    """Which fit this is, wherever it runs: the estimator's class and parameters and its training
    data as the search hands it over (X dense or CSR)."""
    params = tuple(sorted((k, repr(v)) for k, v in model.get_params(deep=False).items()))
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((type(model).__name__, params)).encode())
    y = np.zeros(0) if y is None else np.asarray(y)  # (a one-class fit has no labels)
    h.update(data_fingerprint(X, y, sample_weight).encode())
    return h.hexdigest()


def restore_prefitted(model, X, y, sample_weight=None, search_rows=None):
    """Load into ``model`` the result of this very fit when its search made it on a cluster's worker
    (``PathSearchCV`` with joblib's dask backend); True if it did. Costs nothing outside such a
    search."""
    store = search_store(search_rows)
    if store is None or not store.prefitted or not (sp.issparse(X) or isinstance(X, np.ndarray)):
        return False
    state = store.prefitted.get(prefit_key(model, X, y, sample_weight))
    if state is None:
        return False
    model.__setstate__(dict(state))
    return True
