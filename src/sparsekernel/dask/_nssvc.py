"""NSSVC over row blocks resident on Dask workers: one round trip per Newton iteration.

``DaskBlocks`` is the ``RowBlocks`` (``sparsekernel._blocks``) of a dask array: its row chunks are
computed once into futures that stay on the workers; every pass sends the workers the point
(w = Q alpha, alpha on its support, b: O(n + s) numbers), each block runs the library's C++ pass on
its rows and returns its own top-s candidates with their rows, and the client merges them with the
same C++ rule as the in-memory pass (``_core.nssvm_merge_top``). The Newton step on T is then
taken in the client. So a distributed fit has exactly the iterates of the in-memory fit.

Round trips (a batch of tasks the client waits for): the rows of the initial working set, then one
pass per Newton iteration (per one-vs-rest problem); the intercept refit adds its probe and window.

What the client holds: the labels (one byte per sample: the solver draws the balanced initial set
and reads y on T from them), O(s n) for the working set, and the model.

A lost worker: its blocks are futures of the dask array's graph, so the scheduler recomputes them
from their inputs (a generator or a file such as Zarr) and the pass is retried; data that exists
only in a dead worker's memory (``client.scatter``) cannot be recomputed, and the fit fails with the
scheduler's error. Never a wrong model: a pass either returns every block's part or raises.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from .._base import canonical_csr, core_array, resolve_gamma
from .._blocks import (
    KernelColumns,
    RowBlocks,
    block_layout,
    kernel_scan_block,
    kernel_window_block,
    labels_of,
    merge_scans,
    merge_windows,
    scan_block,
)


def checked_dask_matrix(X):
    """A 2-D numeric dask array X with known chunk sizes (computed if unknown), and its shape."""
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array X, got {X.ndim} dimensions")
    if any(np.isnan(v) for v in X.shape) or any(np.isnan(v) for v in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X must be numeric, got dtype {X.dtype}")
    return X, tuple(int(v) for v in X.shape)


# ---------------------------------------------------------------------------- on the workers
def _prepare_block(X):
    """A block as the C++ pass reads it: float32/float64 dense C-contiguous, or canonical CSR;
    NaN / inf refused as in memory (the ValueError reaches the client at the first pass)."""
    from sklearn.utils import assert_all_finite

    assert_all_finite(X.data if sp.issparse(X) else X, input_name="X")
    if sp.issparse(X):
        X = canonical_csr(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        return X
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return core_array(X)  # aligned: a block sent between workers may not be


def _worker_threads():
    try:
        from distributed import get_worker

        return max(1, int(get_worker().state.nthreads))
    except Exception:  # outside a worker (a synchronous scheduler)
        return 1


def _rows_of(X, idx):
    R = X[idx]
    return R.astype(np.float64) if sp.issparse(R) else np.asarray(R, dtype=np.float64)


def _scan_task(X, codes, lo, target, w, S, alpha_S, b, eta, inv_C, inv_c, k):
    """One block's part of a pass: its top-k candidates (global indices), scores, gradients and
    rows, and its count of correct signs."""
    yk = labels_of(codes, target)
    T, score, g, correct = scan_block(block_layout(X), yk, w, S, alpha_S, b, eta, inv_C, inv_c, k,
                                      _worker_threads(), lo)
    return T, score, g, correct, _rows_of(X, T - lo)


def _rows_task(X, local_idx):
    return _rows_of(X, local_idx)


def _window_task(X, codes, target, w, b, r):
    from .. import _core

    w = core_array(w, np.float64)  # unpickled on the worker: perhaps misaligned
    return _core.nssvm_window(*block_layout(X), w, labels_of(codes, target), b, r, _worker_threads())


def _columns_task(X, kernel):
    """A block's store of kernel columns (empty; it lives on the worker, filled by the passes)."""
    return KernelColumns(X, kernel, _worker_threads())


def _kernel_scan_task(columns, codes, lo, target, T_load, X_T_load, S, alpha_S, coef_S, b, eta, inv_C, inv_c, k):
    """One block's part of a kernel pass (``_blocks.kernel_scan_block``) and the rows of its
    candidates. ``columns`` is the block's store, updated in place where it lives; a store that was
    recreated (a lost worker) or copied computes what it lacks: the same values."""
    columns.nthreads = _worker_threads()
    T, score, g, correct, computed = kernel_scan_block(columns, labels_of(codes, target), T_load, X_T_load, S, alpha_S,
                                                       coef_S, b, eta, inv_C, inv_c, k, lo)
    return T, score, g, correct, _rows_of(columns.X, T - lo), computed


def _kernel_window_task(columns, codes, target, S, coef_S, X_S, b, r, probe=None):
    columns.nthreads = _worker_threads()
    return kernel_window_block(columns, None if probe is not None else labels_of(codes, target), S, coef_S, X_S, b, r,
                               probe)


def _block_sum(X):
    """(entries, their sum) of a block (the mean of gamma='scale')."""
    data = X.data if sp.issparse(X) else X
    return X.shape[0] * X.shape[1], float(np.sum(data, dtype=np.float64))


def _block_squared_deviation(X, mean):
    """sum (x - mean)^2 over the block's entries, implicit zeros of CSR included."""
    data = np.asarray(X.data if sp.issparse(X) else X, dtype=np.float64).ravel() - mean
    zeros = X.shape[0] * X.shape[1] - X.nnz if sp.issparse(X) else 0
    return float(data @ data) + zeros * mean * mean


# ---------------------------------------------------------------------------- in the client
def _stack(parts):
    parts = [p for p in parts if p.shape[0]]
    if not parts:
        return None
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.vstack(parts)


class DaskBlocks(RowBlocks):
    """The row chunks of a dask array X as futures on the workers of a distributed client, with the
    class codes of their rows (and, for a nonlinear kernel, each block's kernel columns of the
    working set); the ``RowBlocks`` of a distributed NSSVC fit.

    Parameters
    ----------
    client : distributed.Client
        The client whose workers compute and keep the blocks.
    X : dask.array.Array of shape (m, n)
        The training rows, chunked along rows only (dense or scipy.sparse CSR chunks), with known
        chunk sizes.
    codes : ndarray of shape (m,)
        The class index of every sample (in the client; each block gets its slice).
    kernel : tuple or None, default=None
        (code, gamma, coef0, degree) of a nonlinear kernel: each block then keeps the kernel columns
        of the working set against its rows, on its worker (``_blocks.KernelColumns``).
    code_blocks : list of Future or None, default=None
        The codes of every block where they already are, on the workers (else sent from ``codes``).
    """

    def __init__(self, client, X, codes, kernel=None, code_blocks=None):
        self.client = client
        self.shape = tuple(int(v) for v in X.shape)
        sizes = [int(v) for v in X.chunks[0]]
        self.bounds = [(int(lo), int(lo + n)) for lo, n in zip(np.cumsum([0] + sizes[:-1]), sizes)]
        blocks = X.map_blocks(_prepare_block, dtype=X.dtype, meta=X._meta).to_delayed().ravel()
        # computed once and kept on the workers, spread evenly (contiguous runs of blocks per worker):
        # a pass is as fast as its busiest worker. The placement is a preference (loose): a lost
        # worker's blocks are recomputed elsewhere
        workers = sorted(client.scheduler_info()["workers"]) or [None]
        self.homes = [workers[k * len(workers) // len(blocks)] for k in range(len(blocks))]
        self.blocks = [client.compute(b, **self._at(k)) for k, b in enumerate(blocks)]
        # the codes of every block: already on the workers, or submitted as tasks (not scattered:
        # the scheduler can recreate them if a worker is lost)
        self.codes = code_blocks if code_blocks is not None else [
            client.submit(np.ascontiguousarray, codes[lo:hi], pure=False, **self._at(k))
            for k, (lo, hi) in enumerate(self.bounds)]
        self.columns = None
        if kernel is not None:
            self.set_kernel(kernel)
        self.target = None
        self.round_trips = 0
        self.seconds = 0.0  # in the round trips (waiting for the workers)

    def wait(self):
        """Until the workers hold every block and its codes."""
        from distributed import wait

        wait(self.blocks + self.codes)

    def _at(self, k):
        """Where block k's tasks should run: on the worker that holds it."""
        home = self.homes[k]
        return {} if home is None else {"workers": [home], "allow_other_workers": True}

    def set_kernel(self, kernel):
        """Give every block a store of kernel columns for ``kernel`` (code, gamma, coef0, degree)."""
        self.columns = [self.client.submit(_columns_task, xb, tuple(kernel), pure=False, **self._at(k))
                        for k, xb in enumerate(self.blocks)]

    def variance(self):
        """The variance of all entries of X (gamma='scale'): two passes, as the in-memory rule (equal
        to it up to the order of the sums)."""
        sums = self._gather([self.client.submit(_block_sum, xb, pure=False) for xb in self.blocks])
        size = sum(n for n, _ in sums)
        mean = sum(v for _, v in sums) / size
        dev = self._gather([self.client.submit(_block_squared_deviation, xb, mean, pure=False) for xb in self.blocks])
        return sum(dev) / size

    def _gather(self, futures):
        t0 = time.perf_counter()
        out = self.client.gather(futures)
        self.seconds += time.perf_counter() - t0
        self.round_trips += 1
        return out

    def set_target(self, target):
        self.target = int(target)

    def scan(self, w, S, alpha_S, b, eta, inv_C, inv_c, k):
        S = np.ascontiguousarray(S, dtype=np.int64)
        alpha_S = np.ascontiguousarray(alpha_S, dtype=np.float64)
        futures = [self.client.submit(_scan_task, xb, cb, lo, self.target, w, S, alpha_S, b, eta, inv_C, inv_c, k,
                                      pure=False, **self._at(i))
                   for i, (xb, cb, (lo, _)) in enumerate(zip(self.blocks, self.codes, self.bounds))]
        return self._merge_candidates(self._gather(futures), k)

    def _merge_candidates(self, parts, k):
        """The global top-k of the blocks' candidates, with their rows (T lies in their union)."""
        T, g, correct = merge_scans([p[:4] for p in parts], k)
        cand = np.concatenate([p[0] for p in parts])
        rows = _stack([p[4] for p in parts])
        order = np.argsort(cand, kind="stable")
        X_T = rows[order[np.searchsorted(cand[order], T)]] if len(T) else _empty_rows(rows, self.shape[1])
        return {"T": T, "g": g, "X_T": X_T, "correct": correct}

    def rows(self, idx):
        idx = np.asarray(idx, dtype=np.int64)
        futures = []
        for xb, (lo, hi) in zip(self.blocks, self.bounds):
            a, z = np.searchsorted(idx, [lo, hi])
            if z > a:
                futures.append(self.client.submit(_rows_task, xb, idx[a:z] - lo, pure=False))
        parts = self._gather(futures) if futures else []
        out = _stack(parts)
        return out if out is not None else np.zeros((0, self.shape[1]))

    def window(self, w, b, r):
        futures = [self.client.submit(_window_task, xb, cb, self.target, w, b, r, pure=False, **self._at(i))
                   for i, (xb, cb) in enumerate(zip(self.blocks, self.codes))]
        parts = self._gather(futures)
        return {"f": np.concatenate([p["f"] for p in parts]), "y": np.concatenate([p["y"] for p in parts]),
                "correct": int(sum(int(p["correct"]) for p in parts))}

    def kernel_scan(self, T_load, X_T_load, S, alpha_S, coef_S, b, eta, inv_C, inv_c, k):
        S = np.ascontiguousarray(S, dtype=np.int64)
        futures = [self.client.submit(_kernel_scan_task, cs, cb, lo, self.target, T_load, X_T_load, S, alpha_S, coef_S,
                                      b, eta, inv_C, inv_c, k, pure=False, **self._at(i))
                   for i, (cs, cb, (lo, _)) in enumerate(zip(self.columns, self.codes, self.bounds))]
        parts = self._gather(futures)
        out = self._merge_candidates(parts, k)
        out["computed"] = max(p[5] for p in parts)  # every block computes the same columns for its rows
        return out

    def kernel_margins_at(self, S, coef_S, X_S, idx):
        idx = np.asarray(idx, dtype=np.int64)
        futures = []
        for i, (cs, cb, (lo, hi)) in enumerate(zip(self.columns, self.codes, self.bounds)):
            a, z = np.searchsorted(idx, [lo, hi])
            if z > a:
                futures.append(self.client.submit(_kernel_window_task, cs, cb, self.target, S, coef_S, X_S, 0.0, 0.0,
                                                  idx[a:z] - lo, pure=False, **self._at(i)))
        parts = self._gather(futures) if futures else []
        return np.concatenate(parts) if parts else np.zeros(0)

    def kernel_window(self, S, coef_S, X_S, b, r):
        futures = [self.client.submit(_kernel_window_task, cs, cb, self.target, S, coef_S, X_S, b, r, pure=False,
                                      **self._at(i))
                   for i, (cs, cb) in enumerate(zip(self.columns, self.codes))]
        return merge_windows(self._gather(futures))

    def release(self):
        """Drop the blocks (and their kernel columns) from the workers."""
        for f in self.blocks + self.codes + (self.columns or []):
            f.release()


def _empty_rows(like, n):
    return sp.csr_matrix((0, n)) if like is not None and sp.issparse(like) else np.zeros((0, n))


def _codes_task(y, classes):
    codes = np.searchsorted(classes, y)
    if np.any(codes >= len(classes)) or np.any(classes[np.minimum(codes, len(classes) - 1)] != y):
        raise ValueError("labels changed between two reads of y")  # a non-deterministic y graph
    return codes.astype(np.int8 if len(classes) < 128 else np.int32)


def _class_codes(client, y):
    """classes_ (the sorted distinct labels, found by a reduction on the workers), the class index
    of every sample, encoded on the workers and gathered block by block into one array (one byte
    per sample below 128 classes: the client never holds y itself), and the futures of those blocks
    of codes, which stay on the workers (sending the client's copy back would serialize it again)."""
    import dask.array as da
    from sklearn.utils.multiclass import check_classification_targets

    y = client.persist(y)  # read twice (the classes, then the codes): computed once
    classes = np.asarray(da.unique(y).compute())
    check_classification_targets(classes)
    codes = np.empty(y.shape[0], dtype=np.int8 if len(classes) < 128 else np.int32)
    futures = client.compute(list(y.map_blocks(_codes_task, classes, dtype=codes.dtype).to_delayed().ravel()))
    start = 0
    for future in futures:
        part = future.result()
        codes[start:start + len(part)] = part
        start += len(part)
        del part
    return classes, codes, futures


def fit_nssvc(model, X, y, client=None):
    """Fit NSSVC on a dask array where its blocks live (what ``model.fit(X, y)`` calls).

    Parameters
    ----------
    model : NSSVC
        The estimator (any kernel but 'precomputed'); it is fitted in place and returned. gamma='scale'
        is computed by a blocked reduction: equal to the in-memory value up to the order of its sums
        (pass a number for a fit equal to the in-memory one bit for bit).
    X : dask.array.Array of shape (m, n)
        Training rows in row chunks (dense or CSR chunks; column chunks are merged).
    y : dask.array.Array or array-like of shape (m,)
        The labels (gathered in the client: one byte per sample as class codes).
    client : distributed.Client or None, default=None
        The client to run on (None: the current default client; a ValueError if there is none).

    Returns
    -------
    model : NSSVC
        The fitted model, with ``round_trips_`` (the passes that waited for the workers) and
        ``round_trip_seconds_`` (the time the client waited in them; the rest of ``fit_time_`` is
        the setup: validation, class codes, blocks, and the Newton steps).
    """
    import dask.array as da

    from ..nssvm import support_rows

    t0 = time.perf_counter()
    c, _ = model._check_params()
    if model.kernel == "precomputed" or callable(model.kernel):
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
    if client is None:
        from distributed import get_client

        try:
            client = get_client()
        except ValueError as exc:
            raise ValueError("NSSVC.fit on a dask array needs a distributed Client (from distributed import "
                             "Client; client = Client(...))") from exc
    model.classes_, y_enc, code_blocks = _class_codes(client, y.rechunk((X.chunks[0],)))
    model.n_features_in_ = n
    blocks = DaskBlocks(client, X, y_enc, code_blocks=code_blocks)
    try:
        if model.kernel == "linear":
            model._gamma = 0.0
        elif model.gamma == "scale":  # as _base.resolve_gamma, by a blocked two-pass reduction
            var = blocks.variance()
            model._gamma = 1.0 / (n * var) if var != 0 else 1.0
        else:
            model._gamma = resolve_gamma(model.gamma, np.zeros((0, n)))
        if model.kernel != "linear":
            blocks.set_kernel(model._kernel_spec())
        binary = len(model.classes_) == 2
        if binary:  # the codes 0/1 become the labels +-1 in place: the client keeps one byte per sample
            blocks.wait()  # (once the workers hold their slices of the codes)
            y_enc *= 2
            y_enc -= 1
        solvers = model._solve(blocks, y_enc, m, n, c, labels_pm1=binary)
        model._store(solvers, lambda support: support_rows(solvers, support).astype(X.dtype), (m, n))
    finally:
        blocks.release()
    model.round_trips_ = blocks.round_trips
    model.round_trip_seconds_ = blocks.seconds
    model.fit_time_ = time.perf_counter() - t0
    return model
