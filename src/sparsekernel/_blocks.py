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

Labels: the driver keeps the +-1 labels of the current problem (one byte per sample; the solver
reads y on T and counts the classes); the blocks keep the class codes of their rows and derive
each one-vs-rest problem's labels themselves.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import _core

SCAN_DENSE, SCAN_CSR, SCAN_GIVEN = 0, 1, 2


def _aligned(a, dtype=None):
    """a as a C-contiguous array whose items are aligned (the C++ reads them as doubles / ints):
    no copy unless it is not, as arrays unpickled from a byte buffer can be (found by UBSan on
    blocks sent to Dask workers)."""
    return np.require(a, dtype=dtype, requirements=["C", "A"])


def block_layout(X):
    """X as the (kind, data, indptr, indices) arguments of the C++ passes (no copy unless X is not
    contiguous and aligned)."""
    if sp.issparse(X):
        return (SCAN_CSR, _aligned(X.data), _aligned(X.indptr, np.int64), _aligned(X.indices))
    return (SCAN_DENSE, _aligned(X), None, None)


def local_support(S, alpha_S, lo, hi):
    """The part of alpha's support (global, sorted) in rows [lo, hi), as block-local indices."""
    a, z = np.searchsorted(S, [lo, hi])
    return _aligned(S[a:z] - lo, np.int64), _aligned(alpha_S[a:z], np.float64)


def scan_block(layout, yk, w, S, alpha_S, b, eta, inv_C, inv_c, k, nthreads, lo=0):
    """The C++ pass over one block whose first row is global row ``lo``: its top-k candidates
    (global indices), their scores and gradients, and its count of correct signs."""
    S_loc, a_loc = local_support(S, alpha_S, lo, lo + len(yk))
    r = _core.nssvm_scan(*layout, _aligned(w, np.float64), _aligned(yk), S_loc, a_loc, b, eta, inv_C, inv_c,
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
    """The +-1 labels (int8) of the one-vs-rest problem of class index ``target``."""
    yk = np.full(len(codes), -1, dtype=np.int8)
    yk[codes == target] = 1
    return yk


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


class InMemoryBlocks(RowBlocks):
    """X (dense or CSR, float32 or float64) in this process, as blocks of ``block_rows`` rows (None:
    one block). Blocks of CSR X share its arrays (each pass gets its slice of indptr)."""

    def __init__(self, X, codes, nthreads, block_rows=None):
        self.X, self.codes, self.nthreads = X, np.asarray(codes), nthreads
        self.shape = X.shape
        m = X.shape[0]
        step = m if not block_rows else max(1, int(block_rows))
        self.bounds = [(lo, min(m, lo + step)) for lo in range(0, max(m, 1), step)]
        kind, data, indptr, indices = block_layout(X)
        if kind == SCAN_DENSE:
            self.layouts = [(kind, X[lo:hi], None, None) for lo, hi in self.bounds]
        else:
            self.layouts = [(kind, data, np.ascontiguousarray(indptr[lo:hi + 1]), indices) for lo, hi in self.bounds]
        self.round_trips = 0
        self.yk = None

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
