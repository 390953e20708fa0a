"""Row access on a Dask cluster: the row blocks of a dask array kept on the workers, the tasks that
run there, and the client's views of them. Data access only: the estimators' fits on dask arrays
(``SVC(solver='dc').fit``, ``NSSVC.fit``) use them and this module knows no estimator.

- :class:`DaskBlocks` (NSSVC's ``RowBlocks`` of a dask array): the row chunks computed once into
  futures that stay on the workers; every pass sends the workers the point (w = Q alpha, alpha on
  its support, b: O(n + s) numbers), each block runs the library's C++ pass on its rows and returns
  its own top-s candidates with their rows, and the client merges them with the same C++ rule as
  the in-memory pass (``_core.nssvm_merge_top``): a distributed fit has the in-memory iterates.
  What the client holds: one byte per sample of class codes, O(s n) for the working set.
- :class:`BlockRows` (DC-SVM's rows): the same blocks seen as the rows of one matrix; the cluster
  tree of the in-memory fit (its sample clustered in the client, every block routing its own rows
  on its worker, only the labels coming back); each cluster's problem solved on one worker from
  the rows cut from the blocks (:func:`solve_task`); the engine's storage of X applied to each
  block where it lives (:func:`engine_rows`). The client never holds X.

A lost worker: the blocks are futures of the dask array's graph, so the scheduler recomputes them
from their inputs and the pass is retried; data that exists only in a dead worker's memory
(``client.scatter``) cannot be recomputed, and the fit fails with the scheduler's error. Never a
wrong model: a pass either returns every block's part or raises.

dask and distributed are imported inside the functions that need them (the ``dask`` extra):
importing this module needs neither.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from sklearn.utils import assert_all_finite
from sklearn.utils.multiclass import check_classification_targets

from . import _core, _dc, _engine
from ._base import (MODE_ROWS, SCREEN_ROWS, _SPARSE_ENGINE_DENSITY, _column_modes, _count_unequal, _evenly_spaced,
                    _mostly_modes_on_a_sample, _sparse_copy, canonical_csr, check_kernel_range, core_array)
from ._blocks import (
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
        self.columns = [self.client.submit(_columns_task, xb, kernel, pure=False, **self._at(k))
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


def class_codes(client, y):
    """classes_ (the sorted distinct labels, found by a reduction on the workers), the class index
    of every sample, encoded on the workers and gathered block by block into one array (one byte
    per sample below 128 classes: the client never holds y itself), and the futures of those blocks
    of codes, which stay on the workers (sending the client's copy back would serialize it again)."""
    import dask.array as da

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


# ---------------------------------------------------------------------------- on the workers
def _block_counts(X):
    """(sparse, nonzeros) of a prepared block."""
    if sp.issparse(X):
        return True, int(X.nnz)
    return False, int(np.count_nonzero(X))


def _count_unequal_task(X, shift):
    return _count_unequal(X, shift)


def _to_engine_storage(X, shift):
    """A dense block as the engine stores it: CSR of X - shift (shift None: of X itself)."""
    if X.shape[0] == 0 or X.shape[1] == 0:
        return sp.csr_matrix(X.shape, dtype=np.float64)
    return _sparse_copy(X, shift, _worker_threads(), max_density=1.0)


def check_range_task(X, kernel, gamma, coef0, degree):
    check_kernel_range(kernel, gamma, coef0, degree, X)


def _take_task(X, local_idx):
    """Rows ``local_idx`` (ascending) of a block, in its storage and dtype."""
    return X[local_idx]


def _route_task(X, partition, kernel, n_levels):
    """The clusters of a block's rows at every level of the tree, as ``_dc.build_partition`` routes
    the rows of X: level by level, each row to the nearest centre among its parent's children."""
    evaluator = _dc.evaluator_for(kernel, _worker_threads())
    labels = np.zeros(X.shape[0], dtype=np.int64)
    out = []
    for level in range(1, n_levels + 1):
        labels = partition.descend(X, evaluator, labels, level)
        out.append(labels)
    return out


def solve_task(pieces, order, kernel, problem, options, a0, start, time_limit):
    """One problem solved on this worker: its rows assembled from the blocks' pieces (``order``
    puts them in the problem's order when that is not ascending), then the engine's solve from a0,
    its gradient assembled here from ``start`` (``_dc.solve_from``). Returns the SolveResult and
    this worker's address."""
    from distributed import get_worker

    rows = _stack(list(pieces))
    if order is not None:
        rows = rows[order]
    r = _dc.solve_from(_engine.solve, rows, kernel, problem, options, a0, start, time_limit=time_limit)
    try:
        address = get_worker().address
    except ValueError:  # not on a worker (a synchronous scheduler)
        address = None
    return r, address


# ---------------------------------------------------------------------------- in the client
class BlockRows:
    """Row blocks of X resident on the workers (futures, one per row chunk) seen as the rows of one
    matrix: ``shape``, ``X[idx]`` (those rows gathered into the client: the sample of the
    clustering, the support vectors), ``pieces(idx)`` (the same rows left on the workers, a future
    per block) and the cluster tree of the rows (``build_partition``, the ``build`` of
    ``_BaseSMO._divide``)."""

    def __init__(self, client, blocks, bounds, homes, shape, sparse, dtype):
        self.client = client
        self.blocks = blocks
        self.bounds = bounds
        self.homes = homes
        self.shape = shape
        self.sparse = sparse
        self.dtype = dtype
        self.ndim = 2

    def _at(self, k):
        home = self.homes[k]
        return {} if home is None else {"workers": [home], "allow_other_workers": True}

    def like(self):
        """A stand-in of no size with the type and shape of these rows (for the choices of route
        that read only those: ``_BaseSMO._solver_options``)."""
        if self.sparse:
            return sp.csr_matrix(self.shape, dtype=self.dtype)
        return np.broadcast_to(np.zeros(1, dtype=self.dtype), self.shape)

    def pieces(self, idx):
        """Futures of rows ``idx`` (ascending; None: all rows) block by block, left on the workers:
        a whole block is its own future."""
        out = []
        for k, (xb, (lo, hi)) in enumerate(zip(self.blocks, self.bounds)):
            if idx is None:
                a, z = 0, hi - lo
            else:
                a, z = np.searchsorted(idx, [lo, hi])
            if z <= a:
                continue
            if z - a == hi - lo:  # ascending distinct rows of the block: all of them
                out.append(xb)
            else:
                out.append(self.client.submit(_take_task, xb, np.ascontiguousarray(idx[a:z] - lo), pure=False,
                                              **self._at(k)))
        return out

    def __getitem__(self, idx):
        """Rows ``idx`` (any order, repeats allowed) gathered into the client."""
        idx = np.asarray(idx, dtype=np.int64)
        unique, inverse = np.unique(idx, return_inverse=True)
        parts = self.client.gather(self.pieces(unique)) if len(unique) else []
        rows = _stack(parts)
        if rows is None:
            rows = sp.csr_matrix((0, self.shape[1]), dtype=self.dtype) if self.sparse else \
                np.zeros((0, self.shape[1]), dtype=self.dtype)
        if len(unique) != len(idx) or not np.array_equal(unique, idx):
            rows = rows[inverse]
        return canonical_csr(rows) if sp.issparse(rows) else np.ascontiguousarray(rows)

    def build_partition(self, _, kernel, k, n_levels, rng, threads=1):
        """``_dc.build_partition`` of these rows: the same sample (the same draws of ``rng``) and
        tree, computed in the client; every block's rows routed down it on its worker."""
        n = self.shape[0]
        sample_rows = np.sort(rng.choice(n, size=_dc.sample_size(n, k, n_levels), replace=False))
        partition = _dc.cluster_sample(self[sample_rows], kernel, k, n_levels, rng, threads)
        partition.sample_rows = sample_rows
        shipped = self.client.scatter(partition, broadcast=True, hash=False)
        futures = [self.client.submit(_route_task, xb, shipped, kernel, n_levels, pure=False, **self._at(k))
                   for k, xb in enumerate(self.blocks)]
        parts = self.client.gather(futures)
        for level in range(n_levels):
            partition.labels.append(np.concatenate([p[level] for p in parts]) if parts else np.zeros(0, np.int64))
        del shipped
        return partition


def engine_rows(client, rows, kernel, nonzero):
    """The rows as the SMO engine stores them (``_base.engine_storage``, decided from counts over all
    of X; ``nonzero`` its count of nonzeros): a dense X of mostly zeros as CSR, and for rbf /
    laplacian one that is mostly its columns' most frequent values minus them; each block converted
    where it lives."""
    if rows.sparse or rows.shape[0] == 0 or rows.shape[1] == 0:
        return rows
    size = rows.shape[0] * rows.shape[1]
    shift = None
    if nonzero > _SPARSE_ENGINE_DENSITY * size:
        if kernel not in ("rbf", "laplacian"):
            return rows
        n = rows.shape[0]
        if not _mostly_modes_on_a_sample(rows[_evenly_spaced(n, SCREEN_ROWS)]):  # the in-memory screen's rows
            return rows
        # the rows _column_modes reads (evenly spaced), fetched: it then reads all of them in order
        shift = _column_modes(rows[_evenly_spaced(n, MODE_ROWS)])
        if not shift.any():
            return rows
        unequal = sum(client.gather([client.submit(_count_unequal_task, xb, shift, pure=False)
                                     for xb in rows.blocks]))
        if unequal > _SPARSE_ENGINE_DENSITY * size:
            return rows
    converted = [client.submit(_to_engine_storage, xb, shift, pure=False, **rows._at(k))
                 for k, xb in enumerate(rows.blocks)]
    return BlockRows(client, converted, rows.bounds, rows.homes, rows.shape, True, rows.dtype)


def resident_rows(client, X):
    """The row blocks of X (a dask array chunked along rows only, with known chunk sizes) validated
    and kept on the workers (``DaskBlocks``: NaN / inf refused there), seen as rows (BlockRows), and
    the count of X's nonzeros."""
    blocks = DaskBlocks(client, X, None, code_blocks=[])
    counts = client.gather([client.submit(_block_counts, xb, pure=False) for xb in blocks.blocks])
    sparse = {s for s, _ in counts}
    if len(sparse) > 1:
        raise ValueError("X mixes dense and sparse chunks")
    dtype = np.dtype(X.dtype) if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    rows = BlockRows(client, blocks.blocks, blocks.bounds, blocks.homes, tuple(int(v) for v in X.shape), sparse.pop(),
                     dtype)
    return blocks, rows, sum(c for _, c in counts)


def dask_client(client, what):
    """``client``, else the current distributed Client (a ValueError naming ``what`` if none runs)."""
    if client is not None:
        return client
    from distributed import get_client

    try:
        return get_client()
    except ValueError as exc:
        raise ValueError(f"{what} on a dask array needs a distributed Client (from distributed import Client; "
                         "client = Client(...))") from exc


def in_client(v):
    """y or sample_weight as an in-memory array (a dask array computed: O(n) values)."""
    import dask.array as da

    if isinstance(v, da.Array):
        return np.asarray(v.compute())
    return v
