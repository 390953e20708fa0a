"""SVC / SVR with solver='dc' (DC-SVM) on a dask array: the clusters solved where the rows live.

The fit is the in-memory divided solve (``sparsekernel._dc``) with its row work moved to the
workers of a distributed Client:

- the row blocks of X are validated (NaN / inf refused as in memory) and kept as futures on the
  workers (``DaskBlocks``); gamma='scale' is a blocked two-pass reduction over them, and the
  engine's storage of X (a dense X of mostly zeros as CSR, as ``_base.engine_storage`` decides from
  counts over all of X) is applied to each block where it lives;
- the cluster tree is that of the in-memory fit: the same sample rows (the same seeded draw, at
  most ``_dc._MAX_SAMPLE`` of them, fetched into the client) clustered in the client with the same
  random state; every block then routes its own rows down the tree on its worker, and only the
  labels (one int per row and level) come back;
- ``Divide.solve`` runs the level loop in the client, each cluster's problem as one task: the
  cluster's rows are cut from the blocks on their workers and assembled, in row order, on the
  worker that solves it; the whole problem last, its rows assembled on one worker;
- the model keeps its support vectors, fetched from the blocks (they are the model).

What the client holds: y, the sample weights and the row labels (O(n)), the sample of the
clustering, the solutions of the problems (O(n) floats) and the support vectors; never X.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from .. import _dc, _engine
from .._base import (MODE_ROWS, SCREEN_ROWS, _SPARSE_ENGINE_DENSITY, _column_modes, _evenly_spaced,
                     _mostly_modes_on_a_sample, _sparse_copy, canonical_csr, check_kernel_range)
from ._nssvc import DaskBlocks, _stack, _worker_threads, checked_dask_matrix


# ---------------------------------------------------------------------------- on the workers
def _block_counts(X):
    """(sparse, nonzeros) of a prepared block."""
    if sp.issparse(X):
        return True, int(X.nnz)
    return False, int(np.count_nonzero(X))


def _count_unequal_task(X, shift):
    from .._base import _count_unequal

    return _count_unequal(X, shift)


def _to_engine_storage(X, shift):
    """A dense block as the engine stores it: CSR of X - shift (shift None: of X itself)."""
    if X.shape[0] == 0 or X.shape[1] == 0:
        return sp.csr_matrix(X.shape, dtype=np.float64)
    return _sparse_copy(X, shift, _worker_threads(), max_density=1.0)


def _check_range_task(X, kernel, gamma, coef0, degree):
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


def _solve_task(pieces, order, kernel, problem, options, a0, start, time_limit):
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


def _engine_rows(client, rows, kernel, nonzero):
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


def _resident_rows(client, X):
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


def _client(client):
    if client is not None:
        return client
    from distributed import get_client

    try:
        return get_client()
    except ValueError as exc:
        raise ValueError("fit on a dask array needs a distributed Client (from distributed import Client; "
                         "client = Client(...))") from exc


def _in_client(v):
    """y or sample_weight as an in-memory array (a dask array computed: O(n) values)."""
    import dask.array as da

    if isinstance(v, da.Array):
        return np.asarray(v.compute())
    return v


def _problems(estimator, y, sample_weight, n):
    """The fit's dual problems, as ``_BaseSVC.fit`` / ``_BaseSVR.fit`` state them (labels, pairs,
    bounds), and what the model is stored from."""
    from sklearn.utils.multiclass import check_classification_targets

    from .. import svm
    from .._base import per_sample_bounds

    if isinstance(estimator, svm._BaseSVC):
        check_classification_targets(y)
        estimator.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(estimator.classes_) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {len(estimator.classes_)} "
                             "class")
        estimator.class_weight_ = estimator._class_weights(y_enc)
        Ci = estimator._bounds(y_enc, sample_weight, n)
        pairs = svm._pairs(len(estimator.classes_))
        estimator._check_pairs(Ci, y_enc, pairs)
        if len(np.unique(y_enc[Ci > 0])) < 2:
            raise ValueError("Invalid input - all samples with positive weights belong to the same class (weights "
                             "are sample_weight times class_weight)")
        problems = []
        for a, b in pairs:
            idx = np.flatnonzero((y_enc == a) | (y_enc == b))
            problems.append(estimator._pair_problem(np.where(y_enc[idx] == a, 1.0, -1.0),
                                                    np.ascontiguousarray(Ci[idx]), idx))
        return problems, (y_enc, pairs)
    z = np.asarray(y, dtype=np.float64)
    Ci = per_sample_bounds(float(estimator.C), np.array([0]), np.zeros(n, dtype=np.intp), None, sample_weight, n)
    return [estimator._svr_problem(z, Ci)], None


def fit_dc(estimator, X, y, sample_weight=None, client=None):
    """Fit SVC or SVR with solver='dc' on a dask array X where its row blocks live (what
    ``estimator.fit(X, y)`` calls for a dask X).

    The model equals the in-memory ``solver='dc'`` fit on X.compute(): the same cluster tree, the
    same problems solved from the same starts, on the same rows in the same order. gamma='scale' is
    a blocked reduction, equal to the in-memory X.var() up to the order of its sums (a numeric
    gamma gives the in-memory model bit for bit).

    Parameters
    ----------
    estimator : SVC or SVR
        With solver='dc' (kernel neither 'precomputed' nor callable); fitted in place and returned.
    X : dask.array.Array of shape (n_samples, n_features)
        Training rows in row chunks (dense or scipy.sparse CSR chunks; column chunks are merged).
    y : dask.array.Array or array-like of shape (n_samples,)
        Labels (SVC) or targets (SVR), brought into the client (O(n)).
    sample_weight : dask.array.Array or array-like of shape (n_samples,), default=None
    client : distributed.Client or None, default=None
        None: the current default client (a ValueError if there is none).

    Returns
    -------
    estimator
        Fitted, with ``dc_workers_``: the addresses of the workers that solved the clusters of the
        levels (the whole problem's solve, last, is on one worker as well).

    Notes
    -----
    The fit starts cold (``warm_start`` applies to in-memory fits), ``time_limit`` bounds its
    solves, and it reports no progress (``verbose``, callbacks); probability=True is refused.
    """
    from sklearn.utils.validation import _check_y, check_consistent_length

    from .. import svm

    t0 = time.perf_counter()
    threads = estimator._check_params()
    if estimator.solver != "dc":
        raise ValueError(f"fit_dc fits solver='dc' only, got solver={estimator.solver!r}")
    if isinstance(estimator, svm._BaseSVC) and (estimator.probability is True or estimator.probability is np.True_):
        raise ValueError("probability=True (Platt scaling by an in-memory cross-validation) does not fit on a dask "
                         "array; calibrate the fitted model instead")
    X, (n, d) = checked_dask_matrix(X)
    if n == 0 or d == 0:
        raise ValueError(f"Found array with shape {(n, d)}; {type(estimator).__name__} needs at least one sample "
                         "and one feature")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: d})
    y = _check_y(_in_client(y), y_numeric=isinstance(estimator, svm._BaseSVR), estimator=estimator)
    check_consistent_length(np.empty((n, 0)), y)
    sample_weight = _in_client(sample_weight)

    client = _client(client)
    blocks, rows, nonzero = _resident_rows(client, X)
    engine = rows
    try:
        # what _validate_fit_input keeps of X
        estimator.__dict__.pop("feature_names_in_", None)
        estimator.n_features_in_ = d
        estimator._sparse_fit = rows.sparse
        if estimator.gamma == "scale":  # (as _base.resolve_gamma, by a blocked two-pass reduction)
            var = blocks.variance()
            estimator._gamma = 1.0 / (d * var) if var != 0 else 1.0
        else:
            from .._base import resolve_gamma

            estimator._gamma = resolve_gamma(estimator.gamma, np.zeros((0, d)))
        if estimator._gamma == 0.0:
            raise ValueError(f"{svm._NONFINITE_MODEL} (gamma='scale' = 1 / (n_features * X.var()) is 0: X.var() "
                             "overflows float64)")
        if estimator.kernel in ("linear", "poly"):
            client.gather([client.submit(_check_range_task, xb, estimator.kernel, estimator._gamma,
                                         float(estimator.coef0), int(estimator.degree), pure=False)
                           for xb in blocks.blocks])
        estimator.shape_fit_ = (n, d)

        problems, layout = _problems(estimator, y, sample_weight, n)
        kernel = estimator._kernel_spec()
        engine = _engine_rows(client, rows, kernel.name, nonzero)
        options, workers = estimator._solver_options(engine.like(), [len(p.y) for p in problems], threads)
        divide = estimator._divide(engine, kernel, threads, workers, build=engine.build_partition)
        cluster_options = divide.cluster_options(options)
        used = set()
        limit = None if estimator.time_limit is None else float(estimator.time_limit)

        def submit(idx, problem, opts, a0, start, time_limit):
            order = None
            if idx is not None and np.any(np.diff(idx) < 0):
                order = np.argsort(np.argsort(idx, kind="stable"), kind="stable")
                idx = np.sort(idx)
            return client.submit(_solve_task, engine.pieces(idx), order, kernel, problem, opts, a0, start,
                                 time_limit, pure=False)

        def solve_one(problem, _token):
            def solve_clusters(tasks, time_limit):
                futures = [submit(t.problem.idx, t.problem, cluster_options, t.a0, t.start, time_limit) for t in tasks]
                out = client.gather(futures)
                used.update(address for _, address in out)
                return [r for r, _ in out]

            def solve_whole(a0, time_limit, start=None):
                (r, _), = client.gather([submit(problem.idx, problem, options, a0, start, time_limit)])
                return r

            remaining = 0.0 if limit is None else max(limit - (time.perf_counter() - t0), 1e-3)
            return divide.solve(problem, solve_clusters=solve_clusters, solve_whole=solve_whole,
                                time_limit=remaining)

        from .._base import run_parallel

        results = run_parallel(solve_one, problems, max(1, len(problems)))
        if layout is not None:
            y_enc, pairs = layout
            estimator._store_model(rows, y_enc, pairs, results)
            estimator._check_finite_model()
            estimator._probA, estimator._probB = np.empty(0), np.empty(0)
        else:
            (r,) = results
            estimator._store_expansion(rows, r.alpha[:n] - r.alpha[n:], r.rho, r, None)
    finally:
        futures = list(blocks.blocks) + ([] if engine is rows else list(engine.blocks))
        for f in futures:
            f.release()
    estimator.dc_workers_ = used
    estimator.fit_time_ = time.perf_counter() - t0
    estimator._warn_if_not_converged()
    return estimator
