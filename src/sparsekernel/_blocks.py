"""Row blocks: the data of a linear NSSVC fit as a sequence of row blocks, wherever they live.

NSSVM touches all m samples only in its O(mn) pass (gradient, hard-thresholding scores, the top-s
candidates, the accuracy count; nssvm.hpp): everything else is algebra on the s rows of the working
set T. So a fit needs from its data exactly what :class:`RowBlocks` offers:

- ``scan``: the pass at a point (w, alpha on its support, b), each block scanning its own rows
  with the C++ pass and returning its own top-k; the k best of their union (``_core.nssvm_merge_top``,
  the one place the rule "larger score, then smaller row index" is applied) is the global top-k,
  with the rows of T, so that the Newton step on T needs no second trip to the data;
- ``rows``: the rows of given indices (the initial working set, the probe of the intercept refit);
- ``window``: the samples nearest the boundary (the intercept refit).

:class:`InMemoryBlocks` holds X in this process (one block by default: today's path, no copy; or
row slices, which select the same T bit for bit). ``sparsekernel.dask.DaskBlocks`` keeps the
blocks resident on Dask workers: one round trip per Newton iteration.

The kernel variant (``kernel_scan``, ``kernel_margins_at``, ``kernel_window``) needs the kernel
columns K(x_i, x_j) of the working set against every row instead of a product with w: each block
keeps the columns of its own rows for j in T (:class:`KernelColumns`, O(rows x s) memory, computed
once while j stays in T), and a pass sends it T with the rows x_T and alpha on its support. Kernel
values are a function of their pair alone (the C++ kernel tiles do not contract multiply-adds, and
the margins add their terms in the order of the support), so a block computes the bits of the
in-memory fit whatever rows it holds, and a block that lost its columns (a worker restarted)
recomputes the same ones.

Labels: the driver keeps the +-1 labels of the current problem (one byte per sample; the solver
reads y on T and counts the classes); the blocks keep the class codes of their rows and derive
each one-vs-rest problem's labels themselves.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import _core
from ._base import core_array, core_matrix
from ._memory import require

SCAN_DENSE, SCAN_CSR, SCAN_GIVEN = 0, 1, 2


def block_layout(X):
    """X as the (kind, data, indptr, indices) arguments of the C++ passes (no copy unless X is not
    contiguous and aligned)."""
    if sp.issparse(X):
        return (SCAN_CSR, core_array(X.data), core_array(X.indptr, np.int64), core_array(X.indices))
    return (SCAN_DENSE, core_array(X), None, None)


def local_support(S, alpha_S, lo, hi):
    """The part of alpha's support (global, sorted) in rows [lo, hi), as block-local indices."""
    a, z = np.searchsorted(S, [lo, hi])
    return core_array(S[a:z] - lo, np.int64), core_array(alpha_S[a:z], np.float64)


def scan_block(layout, yk, w, S, alpha_S, b, eta, inv_C, inv_c, k, nthreads, lo=0):
    """The C++ pass over one block whose first row is global row ``lo``: its top-k candidates
    (global indices), their scores and gradients, and its count of correct signs."""
    S_loc, a_loc = local_support(S, alpha_S, lo, lo + len(yk))
    r = _core.nssvm_scan(*layout, core_array(w, np.float64), core_array(yk), S_loc, a_loc, b, eta, inv_C, inv_c,
                         min(k, len(yk)), nthreads)
    return r["T"] + lo, r["score"], r["g"], int(r["correct"])


def merge_scans(parts, k):
    """The global top-k of the blocks' candidates (T sorted, g) and the total count."""
    if len(parts) == 1:
        T, _, g, correct = parts[0]
        return T, g, correct
    idx = np.concatenate([p[0] for p in parts]).astype(np.int64, copy=False)
    score = np.concatenate([p[1] for p in parts])
    g = np.concatenate([p[2] for p in parts])
    r = _core.nssvm_merge_top(idx, score, g, int(k))
    return r["T"], r["g"], sum(p[3] for p in parts)


def labels_of(codes, target):
    """The +-1 labels (int8) of the one-vs-rest problem of class index ``target`` (one m-long
    allocation: the comparison's booleans become the labels in place)."""
    yk = np.equal(codes, target).view(np.int8)
    yk *= 2
    yk -= 1
    return yk


_COLUMN_CHUNK = 256  # columns copied per step (growing the block, a precomputed kernel): small temporaries
SIGMA = 1.1  # Algorithm 2's growth factor of s (the room a growing working set of columns gets)


class KernelColumns:
    """K(x_i, x_j) for the rows x_i of one block and j in the working set T, in one column-major
    rows x capacity block; a column stays while its index stays in T (NSSVM's working sets overlap
    from one iteration to the next), so each is computed about once.

    ``kernel`` is a ``_base.KernelSpec``; for 'precomputed' the block's
    rows are rows of the kernel matrix and its columns are read, not computed."""

    def __init__(self, X, kernel, nthreads):
        self.X, self.kernel, self.nthreads = X, kernel, nthreads
        self.precomputed = kernel.name == "precomputed"
        self.Xc = None if self.precomputed else core_matrix(X)
        self.m = X.shape[0]
        self.cols = np.empty((self.m, 0), order="F")
        self.slot = {}  # sample index -> column of self.cols

    def __sizeof__(self):  # what Dask's scheduler weighs when it places the tasks that read the store
        return object.__sizeof__(self) + self.cols.nbytes + _nbytes(self.X)

    def __getstate__(self):
        """Pickled (a store Dask moves to another worker): the rows and the kernel, not the columns
        nor the core's view: the copy recomputes the columns it lacks, which have the same values."""
        return {"X": self.X, "kernel": self.kernel, "nthreads": self.nthreads}

    def __setstate__(self, state):
        self.__init__(state["X"], state["kernel"], state["nthreads"])

    def compute_into(self, out, slots, idx, rows):
        """out[:, slots[t]] = K(X_block, x_j) for the t-th j of idx (rows: their x_j), in place."""
        if self.precomputed:
            for start in range(0, len(idx), _COLUMN_CHUNK):  # a gather of them all would copy the block
                part = slice(start, start + _COLUMN_CHUNK)
                out[:, slots[part]] = self.X[:, idx[part]]
            return
        _core.kernel_columns(core_matrix(rows), self.Xc, *self.kernel.args, out, core_array(slots, np.int64), self.nthreads)

    def load(self, T, X_T):
        """Make the columns of T (sorted; X_T their rows) resident, dropping those of indices that
        left T. Returns the number of columns computed."""
        keep = {j: self.slot[j] for j in T.tolist() if j in self.slot}
        new = np.array([t for t, j in enumerate(T.tolist()) if j not in keep], dtype=np.int64)  # positions in T
        free = sorted(set(range(self.cols.shape[1])) - set(keep.values()))
        if len(new) > len(free):  # grow the block (s grew): room for sigma more
            cap = max(len(keep) + len(new), int(np.ceil(SIGMA * len(T))))
            require(8.0 * self.m * (cap + self.cols.shape[1]), f"NSSVC growing its working set to {len(T)}",
                    "lower s or pass adaptive=False (every kernel column of the working set is kept)")
            grown = np.zeros((self.m, cap), order="F")
            old = sorted(keep.values())
            for start in range(0, len(old), _COLUMN_CHUNK):  # a gather of the whole block would copy it
                part = old[start:start + _COLUMN_CHUNK]
                grown[:, start:start + len(part)] = self.cols[:, part]
            moved = {sl: t for t, sl in enumerate(old)}
            keep = {j: moved[sl] for j, sl in keep.items()}
            self.cols = grown
            free = list(range(len(old), cap))
        if len(new):
            slots = np.array(free[:len(new)], dtype=np.int64)
            self.compute_into(self.cols, slots, T[new], None if X_T is None else X_T[new])
            keep.update(zip(T[new].tolist(), slots.tolist()))
        self.slot = keep
        return len(new)

    def margins(self, S, coef, X_S):
        """f_i = sum_{j in S} coef_j K(x_i, x_j) for the block's rows (``_core.nssvm_kernel_margins``:
        every row sums in the order of S); the columns of S are computed if they are not resident."""
        if not len(S):
            return np.zeros(self.m)
        coef = core_array(coef, np.float64)
        if all(j in self.slot for j in S.tolist()):
            slots = np.array([self.slot[j] for j in S.tolist()], dtype=np.int64)
            return _core.nssvm_kernel_margins(self.cols, slots, coef, self.nthreads)
        cols = np.empty((self.m, len(S)), order="F")  # an older iterate (the intercept refit): its columns
        slots = np.arange(len(S), dtype=np.int64)
        self.compute_into(cols, slots, S, X_S)
        return _core.nssvm_kernel_margins(cols, slots, coef, self.nthreads)


def _nbytes(X):
    return X.data.nbytes + X.indptr.nbytes + X.indices.nbytes if sp.issparse(X) else np.asarray(X).nbytes


def kernel_scan_block(columns, yk, T_load, X_T_load, S, alpha_S, coef_S, b, eta, inv_C, inv_c, k, lo=0):
    """One block's part of a kernel pass: load the columns of the working set T_load (X_T_load its
    rows), the margins at alpha (on its support S within T_load; coef_S = alpha_S y_S), then the C++
    pass on them: its top-k candidates (global indices), scores, gradients, count of correct signs,
    and the number of columns it computed."""
    computed = columns.load(T_load, X_T_load)
    f = core_array(columns.margins(S, coef_S, None))
    T, score, g, correct = scan_block((SCAN_GIVEN, f, None, None), yk, np.zeros(0), S, alpha_S, b, eta, inv_C, inv_c,
                                      k, columns.nthreads, lo)
    return T, score, g, correct, computed


def kernel_window_block(columns, yk, S, coef_S, X_S, b, r, probe=None):
    """One block's part of the intercept refit at alpha (coef_S on S): the window |f_i + b| <= r, or
    (``probe``: block-local indices) the margins of those rows."""
    f = core_array(columns.margins(S, coef_S, X_S))
    if probe is not None:
        return f[probe]
    return _core.nssvm_window(SCAN_GIVEN, f, None, None, np.zeros(0), yk, b, r, columns.nthreads)


def merge_windows(parts):
    return {"f": np.concatenate([p["f"] for p in parts]), "y": np.concatenate([p["y"] for p in parts]),
            "correct": int(sum(int(p["correct"]) for p in parts))}


class RowBlocks:
    """What a linear NSSVC fit needs from its data (see the module docstring). ``shape`` is
    (m, n); ``round_trips`` counts the passes that went to the data."""

    shape = (0, 0)
    round_trips = 0

    def set_target(self, target):
        """Make class index ``target`` the +1 class of the following passes (one-vs-rest)."""
        raise NotImplementedError

    def scan(self, w, S, alpha_S, b, eta, inv_C, inv_c, k):
        """One pass at (w = Q alpha, alpha on its sorted support S, b): dict with the top-k set T
        (sorted global indices), g on T, the rows X_T and the number of correct signs."""
        raise NotImplementedError

    def rows(self, idx):
        """The rows of sorted global indices idx (float64, dense or CSR)."""
        raise NotImplementedError

    def window(self, w, b, r):
        """The margins f_i = <w, x_i> and labels of the samples with |f_i + b| <= r (in index order)
        and the count of correct signs at b."""
        raise NotImplementedError

    # the kernel variant (see the module docstring)
    def kernel_scan(self, T_load, X_T_load, S, alpha_S, coef_S, b, eta, inv_C, inv_c, k):
        """One kernel pass: the blocks hold the columns of T_load (the working set of the Newton step
        that gave alpha, S within it), then scan at (alpha, b). Dict as ``scan`` with ``computed``, the
        kernel columns the blocks computed (per block row range: counted once)."""
        raise NotImplementedError

    def kernel_margins_at(self, S, coef_S, X_S, idx):
        """f_i = sum_{j in S} coef_j K(x_i, x_j) for the sorted global indices idx."""
        raise NotImplementedError

    def kernel_window(self, S, coef_S, X_S, b, r):
        """As ``window``, with the kernel margins at (coef_S on S)."""
        raise NotImplementedError


class InMemoryBlocks(RowBlocks):
    """X (dense or CSR, float32 or float64) in this process, as blocks of ``block_rows`` rows (None:
    one block). Blocks of CSR X share its arrays (each pass gets its slice of indptr)."""

    def __init__(self, X, codes, nthreads, block_rows=None, kernel=None):
        self.X, self.codes, self.nthreads = X, np.asarray(codes), nthreads
        self.shape = X.shape
        m = X.shape[0]
        step = m if not block_rows else max(1, int(block_rows))
        self.bounds = [(lo, min(m, lo + step)) for lo in range(0, max(m, 1), step)]
        kind, data, indptr, indices = block_layout(X)
        if kind == SCAN_DENSE:
            self.layouts = [(kind, data[lo:hi], None, None) for lo, hi in self.bounds]  # data: aligned
        else:
            self.layouts = [(kind, data, np.ascontiguousarray(indptr[lo:hi + 1]), indices) for lo, hi in self.bounds]
        self.round_trips = 0
        self.yk = None
        # the kernel variant: each block's resident kernel columns (a single block is X itself)
        self.columns = None if kernel is None else [
            KernelColumns(X if (lo, hi) == (0, m) else X[lo:hi], kernel, nthreads) for lo, hi in self.bounds]

    def set_target(self, target):
        self.yk = labels_of(self.codes, target)

    def scan(self, w, S, alpha_S, b, eta, inv_C, inv_c, k):
        self.round_trips += 1
        parts = [scan_block(layout, self.yk[lo:hi], w, S, alpha_S, b, eta, inv_C, inv_c, k, self.nthreads, lo)
                 for layout, (lo, hi) in zip(self.layouts, self.bounds)]
        T, g, correct = merge_scans(parts, k)
        return {"T": T, "g": g, "X_T": self._gather(T), "correct": correct}

    def rows(self, idx):
        self.round_trips += 1
        return self._gather(idx)

    def _gather(self, idx):
        R = self.X[idx]
        return R.astype(np.float64) if sp.issparse(R) else np.asarray(R, dtype=np.float64)

    def window(self, w, b, r):
        self.round_trips += 1
        out = {"f": [], "y": [], "correct": 0}
        for layout, (lo, hi) in zip(self.layouts, self.bounds):
            part = _core.nssvm_window(*layout, w, self.yk[lo:hi], b, r, self.nthreads)
            out["f"].append(part["f"])
            out["y"].append(part["y"])
            out["correct"] += int(part["correct"])
        return {"f": np.concatenate(out["f"]), "y": np.concatenate(out["y"]), "correct": out["correct"]}

    def kernel_scan(self, T_load, X_T_load, S, alpha_S, coef_S, b, eta, inv_C, inv_c, k):
        self.round_trips += 1
        parts = [kernel_scan_block(cols, self.yk[lo:hi], T_load, X_T_load, S, alpha_S, coef_S, b, eta, inv_C, inv_c,
                                   k, lo)
                 for cols, (lo, hi) in zip(self.columns, self.bounds)]
        T, g, correct = merge_scans([p[:4] for p in parts], k)
        return {"T": T, "g": g, "X_T": self._gather(T), "correct": correct, "computed": parts[0][4]}

    def kernel_margins_at(self, S, coef_S, X_S, idx):
        self.round_trips += 1
        out = []
        for cols, (lo, hi) in zip(self.columns, self.bounds):
            a, z = np.searchsorted(idx, [lo, hi])
            if z > a:
                out.append(kernel_window_block(cols, None, S, coef_S, X_S, 0.0, 0.0, probe=idx[a:z] - lo))
        return np.concatenate(out) if out else np.zeros(0)

    def kernel_window(self, S, coef_S, X_S, b, r):
        self.round_trips += 1
        return merge_windows([kernel_window_block(cols, self.yk[lo:hi], S, coef_S, X_S, b, r)
                              for cols, (lo, hi) in zip(self.columns, self.bounds)])
